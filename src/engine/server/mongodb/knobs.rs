//! The engine's settings: their defaults and the knobs that set them.

use std::future::IntoFuture;
use std::time::Duration;

use futures_util::FutureExt;
use mongodb::options::ClientOptions;

use mongodb::options::Tls;

use super::{DEFAULT_URL, ENGINE, MongoError, URL_ENV, net};
use crate::engine::server::tls::{HasTls, TlsFiles, ca_knob, cert_knob, key_knob};
use crate::engine::{KnobDef, KnobTable, OptionError};

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) url: String,
    pub(super) journal: bool,
    pub(super) timeout: Duration,
    /// The knobs `tls_ca`, `tls_cert` and `tls_key` (for a URL with `tls=true`).
    pub(super) tls: TlsFiles,
}

impl HasTls for Settings {
    fn tls_files(&mut self) -> &mut TlsFiles {
        &mut self.tls
    }
}

impl Settings {
    /// Puts the TLS knobs into the driver's options `o`, parsed from the URL, whose
    /// `tls=true` (or `ssl=true`) asks for TLS.
    pub(super) fn apply_tls(&self, o: &mut ClientOptions) -> Result<(), String> {
        let Some(Tls::Enabled(t)) = &mut o.tls else {
            return self.tls.refuse_without_tls("add tls=true to the URL");
        };
        crate::engine::server::tls::install_provider();
        if let Some(ca) = &self.tls.ca {
            match &t.ca_file_path {
                Some(url_ca) if url_ca != ca => {
                    return Err(format!(
                        "the URL's tlsCAFile and tls_ca name different files ({} and {}): give one",
                        url_ca.display(),
                        ca.display()
                    ));
                }
                _ => t.ca_file_path = Some(ca.clone()),
            }
        }
        // The driver reads a client's certificate and key from one PEM file.
        match (&self.tls.cert, &self.tls.key) {
            (None, None) => {}
            (Some(cert), None) => t.cert_key_file_path = Some(cert.clone()),
            (Some(cert), Some(key)) if key == cert => t.cert_key_file_path = Some(cert.clone()),
            (None, Some(_)) => return Err("tls_key is given without tls_cert: give both".into()),
            (Some(_), Some(_)) => {
                return Err(
                    "the MongoDB driver reads the client's certificate and its key from one PEM file: \
                            give that file as tls_cert (cat CERT KEY > BOTH.pem) and leave tls_key out"
                        .into(),
                );
            }
        }
        Ok(())
    }
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

pub(super) fn start() -> Settings {
    Settings {
        url: default_url(),
        journal: false,
        timeout: Duration::from_secs(5),
        tls: TlsFiles::default(),
    }
}

/// Parses a connection string without network work: a `mongodb://` URL needs none
/// (`mongodb+srv://` would need DNS lookups, which this build leaves out).
fn parse_url(url: &str) -> Result<ClientOptions, String> {
    if url.starts_with("mongodb+srv://") {
        return Err("mongodb+srv:// needs DNS SRV lookups, which this build leaves out; \
                    name the hosts: mongodb://HOST:PORT"
            .to_string());
    }
    if !url.starts_with("mongodb://") {
        return Err("expected mongodb://[USER:PASSWORD@]HOST:PORT[/DATABASE][?OPTIONS]".to_string());
    }
    match ClientOptions::parse(url).into_future().now_or_never() {
        Some(parsed) => parsed.map_err(|e| format!("{}", MongoError(e))),
        None => Err("parsing it needed network lookups".to_string()),
    }
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "url",
            help: "the server, mongodb://[USER:PASSWORD@]HOST:PORT[/DATABASE][?OPTIONS], tls=true among the OPTIONS for TLS; collections go in DATABASE (default kvmark) (default: $KVMARK_MONGODB_URL, else mongodb://127.0.0.1:27017; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_url()).into_owned(),
            set: |s, v| match parse_url(v.text) {
                Ok(_) => {
                    s.url = v.text.to_string();
                    Ok(())
                }
                Err(why) => Err(OptionError::bad_value(
                    ENGINE,
                    v.key,
                    &net::mask_password(v.text),
                    format_args!("not a MongoDB connection string: {why}"),
                )),
            },
        },
        KnobDef {
            name: "journal",
            help: "true: every write waits for the server's journal (write concern j: true); false: the server's default write concern",
            default: || "false".to_string(),
            set: |s, v| v.bool().map(|b| s.journal = b),
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
// The URL's tls option and the TLS files are checked together.
.with_check(|s| {
    let mut o = parse_url(&s.url).map_err(|why| ("url", why))?;
    s.apply_tls(&mut o).map_err(|why| ("url", why))
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_without_the_network() {
        assert!(parse_url("mongodb://127.0.0.1:27017/db?appName=x").is_ok());
        assert!(
            parse_url("mongodb+srv://cluster.example/db")
                .unwrap_err()
                .contains("SRV")
        );
        assert!(
            parse_url("redis://127.0.0.1")
                .unwrap_err()
                .contains("expected mongodb://")
        );
        assert!(parse_url("mongodb://").is_err());
    }
}
