//! The engine's settings: their defaults and the knobs that set them.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use etcd_client::{Certificate, Identity, TlsOptions};

use super::{DEFAULT_ENDPOINTS, ENGINE, URL_ENV, net};
use crate::engine::server::tls::{HasTls, TlsFiles, ca_knob, cert_knob, key_knob};
use crate::engine::{KnobDef, KnobTable};

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) endpoints: Vec<String>,
    pub(super) timeout: Duration,
    /// The knobs `tls_ca`, `tls_cert` and `tls_key` (for `https://` endpoints).
    pub(super) tls: TlsFiles,
    /// [`Settings::tls_options`] once made (shared by the settings' clones).
    pub(super) tls_made: Arc<OnceLock<Result<Option<TlsOptions>, String>>>,
}

impl HasTls for Settings {
    fn tls_files(&mut self) -> &mut TlsFiles {
        &mut self.tls
    }
}

impl Settings {
    /// The TLS options of `https://` endpoints (None for `http://`), the files read
    /// now, so a reconnection times the handshake, not a file read.
    pub(super) fn tls_options(&self) -> Result<Option<TlsOptions>, String> {
        if !self.endpoints.iter().any(|e| e.starts_with("https://")) {
            self.tls.refuse_without_tls("use https:// endpoints for TLS")?;
            return Ok(None);
        }
        let pem = self.tls.read_pem()?;
        crate::engine::server::tls::install_provider();
        let mut tls = match pem.ca {
            Some(ca) => TlsOptions::new().ca_certificate(Certificate::from_pem(ca)),
            None => TlsOptions::new().with_native_roots(),
        };
        if let Some((cert, key)) = pem.identity {
            tls = tls.identity(Identity::from_pem(cert, key));
        }
        Ok(Some(tls))
    }

    /// [`Settings::tls_options`], made once.
    pub(super) fn tls_options_once(&self) -> Result<Option<TlsOptions>, String> {
        self.tls_made.get_or_init(|| self.tls_options()).clone()
    }
}

fn default_endpoints() -> String {
    net::env_or(URL_ENV, DEFAULT_ENDPOINTS)
}

/// The endpoints of a comma-separated list, or why it is not one.
fn parse_endpoints(text: &str) -> Result<Vec<String>, String> {
    let list: Vec<String> = text.split(',').map(|e| e.trim().to_string()).collect();
    for e in &list {
        if e.is_empty() {
            return Err("an empty endpoint in the list".to_string());
        }
        let host_port = e
            .strip_prefix("http://")
            .or_else(|| e.strip_prefix("https://"))
            .and_then(|rest| rest.rsplit_once(':'));
        match host_port {
            Some((host, port)) if !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok() => {}
            _ => return Err(format!("{e}: expected http://HOST:PORT, or https://HOST:PORT for TLS")),
        }
    }
    if list.iter().any(|e| e.starts_with("https://")) && list.iter().any(|e| e.starts_with("http://")) {
        return Err("the endpoints mix https:// and http://; a cluster is reached one way".into());
    }
    Ok(list)
}

pub(super) fn start() -> Settings {
    Settings {
        endpoints: parse_endpoints(&default_endpoints()).unwrap_or_else(|_| vec![DEFAULT_ENDPOINTS.to_string()]),
        timeout: Duration::from_secs(5),
        tls: TlsFiles::default(),
        tls_made: Arc::default(),
    }
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "endpoints",
            help: "the cluster's members, comma-separated http://HOST:PORT, https:// for TLS (default: $KVMARK_ETCD_URL, else http://127.0.0.1:2379); sessions spread over them and move to the next when one fails",
            default: default_endpoints,
            set: |s, v| {
                s.endpoints = parse_endpoints(v.text).map_err(|why| v.refuse(why))?;
                Ok(())
            },
        },
        KnobDef {
            name: "timeout",
            help: "longest wait for one operation's reply (connecting and append's retries included); past it the operation fails and the session reconnects to the next member",
            default: || net::DEFAULT_TIMEOUT.to_string(),
            set: |s, v| net::parse_timeout(v).map(|t| s.timeout = t),
        },
        ca_knob(),
        cert_knob(),
        key_knob(),
    ],
)
// The endpoints' scheme and the TLS files are checked together.
.with_check(|s| s.tls_options().map(drop).map_err(|why| ("endpoints", why)));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_comma_separated_http_or_https_addresses() {
        assert_eq!(
            parse_endpoints("http://127.0.0.1:1, http://127.0.0.1:2").unwrap(),
            ["http://127.0.0.1:1", "http://127.0.0.1:2"]
        );
        assert!(parse_endpoints("https://127.0.0.1:1,https://[::1]:2").is_ok());
        for bad in [
            "",
            "127.0.0.1:1",
            "http://a:1,",
            "ftp://a:1",
            "http://a:1/x",
            "http://a:1,https://a:2",
        ] {
            assert!(parse_endpoints(bad).is_err(), "{bad}");
        }
    }
}
