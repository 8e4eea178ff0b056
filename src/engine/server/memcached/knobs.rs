//! The engine's settings: their defaults and the knobs that set them.

use std::time::Duration;

use super::tls::{self, ca_knob, cert_knob, key_knob};
use super::{DEFAULT_URL, ENGINE, Settings, URL_ENV, net};
use crate::engine::{KnobDef, KnobTable, KnobValue, OptionError};

/// The scheme of a plain connection, and of one over TLS.
const PLAIN: &str = "memcached://";
const TLS: &str = "memcacheds://";

impl Settings {
    /// The TLS handshakes' configuration for a `memcacheds://` URL (None for
    /// `memcached://`).
    pub(super) fn tls_connector(&self) -> Result<Option<tokio_rustls::TlsConnector>, String> {
        if !self.tls_on {
            self.tls.refuse_without_tls("use memcacheds://HOST:PORT for TLS")?;
            return Ok(None);
        }
        let config = tls::client_config(&self.tls, tls::Verify::Full)?;
        Ok(Some(tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))))
    }
}

pub(super) fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

/// The settings `o` ask for, or the defaults when they are refused (for messages).
pub(super) fn settings_or_default(o: &crate::engine::EngineOptions) -> Settings {
    KNOBS.parse(o).unwrap_or_else(|_| start())
}

/// The host, port and TLS of `url` (`memcached://HOST:PORT` or `memcacheds://`).
pub(super) fn parse_url(url: &str) -> Result<(String, u16, bool), String> {
    let (rest, tls_on) = match (url.strip_prefix(PLAIN), url.strip_prefix(TLS)) {
        (Some(rest), _) => (rest, false),
        (_, Some(rest)) => (rest, true),
        _ => return Err(format!("expected {PLAIN}HOST:PORT, or {TLS}HOST:PORT for TLS")),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#', '@']) {
        return Err(format!(
            "only {PLAIN}HOST:PORT: memcached takes no path, user or parameters in kvmark's URL"
        ));
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) => (host, port),
        None => (rest, "11211"),
    };
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if host.is_empty() {
        return Err("no host".into());
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("port '{port}' is not a number from 1 to 65535"))?;
    Ok((host.to_string(), port, tls_on))
}

fn start() -> Settings {
    let url = default_url();
    let (host, port, tls_on) = parse_url(&url).unwrap_or_else(|_| ("127.0.0.1".into(), 11211, false));
    Settings {
        url,
        host,
        port,
        tls_on,
        timeout: Duration::from_secs(5),
        tls: Default::default(),
    }
}

fn set_url(s: &mut Settings, v: &KnobValue<'_>) -> Result<(), OptionError> {
    let (host, port, tls_on) = parse_url(v.text).map_err(|why| v.refuse(why))?;
    s.url = v.text.to_string();
    s.host = host;
    s.port = port;
    s.tls_on = tls_on;
    Ok(())
}

/// Refuses TLS files that do not read or do not fit the URL's scheme.
fn check_tls(s: &Settings) -> Result<(), (&'static str, String)> {
    s.tls_connector().map(drop).map_err(|why| ("url", why))
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "url",
            help: "the server, memcached://HOST:PORT, memcacheds:// for TLS (default: $KVMARK_MEMCACHED_URL, else memcached://127.0.0.1:11211)",
            default: default_url,
            set: set_url,
        },
        KnobDef {
            name: "timeout",
            help: "longest wait for one operation's reply (connecting included); past it the operation fails and the session reconnects",
            default: || net::DEFAULT_TIMEOUT.to_string(),
            set: |s, v| net::parse_timeout(v).map(|t| s.timeout = t),
        },
        ca_knob(),
        cert_knob(),
        key_knob(),
    ],
)
.with_check(check_tls);

#[cfg(test)]
mod tests {
    use super::parse_url;

    #[test]
    fn urls_name_host_port_and_tls() {
        assert_eq!(
            parse_url("memcached://127.0.0.1:11311"),
            Ok(("127.0.0.1".into(), 11311, false))
        );
        assert_eq!(parse_url("memcacheds://localhost:9"), Ok(("localhost".into(), 9, true)));
        assert_eq!(parse_url("memcached://[::1]:5/"), Ok(("::1".into(), 5, false)));
        assert_eq!(parse_url("memcached://h"), Ok(("h".into(), 11211, false)));
        for bad in [
            "redis://h:1",
            "memcached://:1",
            "memcached://h:0",
            "memcached://h:x",
            "memcached://h:1/db",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
