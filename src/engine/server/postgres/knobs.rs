//! The engine's settings: their defaults and the knobs that set them.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{DEFAULT_URL, ENGINE, URL_ENV, net};
use crate::engine::server::tls::{self, HasTls, TlsFiles, Verify, ca_knob, cert_knob, key_knob};
use crate::engine::{KnobDef, KnobTable, OptionError};

const SYNCHRONOUS_COMMIT: &[&str] = &["on", "off", "local", "remote_write", "remote_apply"];

#[derive(Debug, Clone)]
pub(super) struct Settings {
    /// The URL as given (shown masked).
    pub(super) url: String,
    /// The URL without the TLS parameters, which tokio-postgres does not know.
    pub(super) conn: String,
    /// The URL's `sslmode`.
    pub(super) ssl: SslMode,
    /// The URL's `sslrootcert`, `sslcert` and `sslkey`.
    pub(super) url_tls: TlsFiles,
    /// The knobs `tls_ca`, `tls_cert` and `tls_key`.
    pub(super) tls: TlsFiles,
    pub(super) unlogged: bool,
    pub(super) synchronous_commit: &'static str,
    pub(super) fillfactor: u32,
    pub(super) timeout: Duration,
    /// tokio-postgres's TLS connector once made (shared by the settings' clones), so
    /// connecting again reads no file: a reconnection times the handshake alone.
    pub(super) tls_made: Arc<OnceLock<Result<Connector, String>>>,
}

impl HasTls for Settings {
    fn tls_files(&mut self) -> &mut TlsFiles {
        &mut self.tls
    }
}

/// libpq's `sslmode`, of the values that say for certain whether the connection is
/// encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    /// `disable`, or no `sslmode`: a plain connection.
    Disable,
    /// `require`: encrypted; the certificate checked only when a root certificate is
    /// given (libpq's rule).
    Require,
    /// `verify-ca`: encrypted, the certificate's chain checked.
    VerifyCa,
    /// `verify-full`: encrypted, the chain and the host name checked.
    VerifyFull,
}

impl Settings {
    /// The TLS files, the URL's and the knobs' together.
    fn tls_files_given(&self) -> Result<TlsFiles, String> {
        let pick = |url: &Option<std::path::PathBuf>, knob: &Option<std::path::PathBuf>, names: &str| match (url, knob)
        {
            (Some(a), Some(b)) if a != b => Err(format!(
                "{names} name different files ({} and {}): give one",
                a.display(),
                b.display()
            )),
            (Some(a), _) => Ok(Some(a.clone())),
            (None, b) => Ok(b.clone()),
        };
        Ok(TlsFiles {
            ca: pick(&self.url_tls.ca, &self.tls.ca, "the URL's sslrootcert and tls_ca")?,
            cert: pick(&self.url_tls.cert, &self.tls.cert, "the URL's sslcert and tls_cert")?,
            key: pick(&self.url_tls.key, &self.tls.key, "the URL's sslkey and tls_key")?,
        })
    }

    /// The rustls configuration the URL's sslmode asks for (None: a plain connection).
    pub(super) fn tls_config(&self) -> Result<Option<rustls::ClientConfig>, String> {
        let files = self.tls_files_given()?;
        let verify = match self.ssl {
            SslMode::Disable => {
                files.refuse_without_tls("add sslmode=verify-full (or require, verify-ca) to the URL")?;
                return Ok(None);
            }
            SslMode::Require if files.ca.is_some() => Verify::Chain,
            SslMode::Require => Verify::Nothing,
            SslMode::VerifyCa => Verify::Chain,
            SslMode::VerifyFull => Verify::Full,
        };
        tls::client_config(&files, verify).map(Some)
    }

    /// The connector of [`Settings::tls_config`] for a connection that asks for TLS,
    /// made once (a clone shares its configuration).
    pub(super) fn tls_connector(&self) -> Result<MakeRustlsConnect, String> {
        self.tls_made
            .get_or_init(|| {
                self.tls_config()
                    .and_then(|c| c.ok_or_else(|| "the URL asks for no TLS".to_string()))
                    .map(|c| Connector(MakeRustlsConnect::new(c)))
            })
            .clone()
            .map(|c| c.0)
    }
}

/// tokio-postgres-rustls's connector, which does not implement Debug (the settings do).
#[derive(Clone)]
pub(super) struct Connector(MakeRustlsConnect);

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MakeRustlsConnect")
    }
}

/// The libpq TLS parameters of a connection URL (`postgres://...?sslmode=...`) or
/// string (`host=... sslmode=...`), taken out: the rest, the mode and the files.
pub(super) fn split_tls(url: &str) -> Result<(String, SslMode, TlsFiles), String> {
    let mut mode = None;
    let mut files = TlsFiles::default();
    let mut take = |key: &str, value: &str| -> Result<bool, String> {
        let path = || match value {
            // libpq's sslrootcert=system: the system's roots.
            "system" | "" => None,
            v => Some(std::path::PathBuf::from(v)),
        };
        match key {
            "sslmode" => mode = Some(value.to_string()),
            "sslrootcert" => files.ca = path(),
            "sslcert" => files.cert = path(),
            "sslkey" => files.key = path(),
            _ => return Ok(false),
        }
        Ok(true)
    };
    let rest = if url.contains("://") {
        match url.split_once('?') {
            None => url.to_string(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(k, v)? {
                        kept.push(pair);
                    }
                }
                match kept.is_empty() {
                    true => base.to_string(),
                    false => format!("{base}?{}", kept.join("&")),
                }
            }
        }
    } else {
        let mut kept = Vec::new();
        for word in url.split_whitespace() {
            let (k, v) = word.split_once('=').unwrap_or((word, ""));
            if !take(k, v)? {
                kept.push(word);
            }
        }
        kept.join(" ")
    };
    let mode = match mode.as_deref() {
        None | Some("disable") => SslMode::Disable,
        Some("require") => SslMode::Require,
        Some("verify-ca") => SslMode::VerifyCa,
        Some("verify-full") => SslMode::VerifyFull,
        Some(m @ ("allow" | "prefer")) => {
            return Err(format!(
                "sslmode={m} lets the server decide whether the connection is encrypted, so two runs could \
                 measure different things: say sslmode=disable, or require, verify-ca or verify-full"
            ));
        }
        Some(other) => {
            return Err(format!(
                "sslmode={other} is not one of disable, require, verify-ca, verify-full"
            ));
        }
    };
    Ok((rest, mode, files))
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

pub(super) fn start() -> Settings {
    let url = default_url();
    // A bad URL in the environment is refused when the knob table checks the default;
    // until then it stands as a plain connection.
    let (conn, ssl, url_tls) = split_tls(&url).unwrap_or_else(|_| (url.clone(), SslMode::Disable, TlsFiles::default()));
    Settings {
        url,
        conn,
        ssl,
        url_tls,
        tls: TlsFiles::default(),
        tls_made: Arc::default(),
        unlogged: false,
        synchronous_commit: "on",
        fillfactor: 100,
        timeout: Duration::from_secs(5),
    }
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "url",
            help: "the server, postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=verify-full&sslrootcert=CA.pem] (default: $KVMARK_POSTGRES_URL, else postgres://kvmark@127.0.0.1:5432/kvmark; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_url()).into_owned(),
            set: |s, v| match split_tls(v.text).map(|(conn, ssl, files)| (conn.parse::<Config>(), conn, ssl, files)) {
                Err(why) => Err(OptionError::bad_value(ENGINE, v.key, &net::mask_password(v.text), why)),
                Ok((Ok(_), conn, ssl, files)) if v.text.contains("://") || v.text.contains('=') => {
                    s.url = v.text.to_string();
                    s.conn = conn;
                    s.ssl = ssl;
                    s.url_tls = files;
                    Ok(())
                }
                Ok((parsed, ..)) => Err(OptionError::bad_value(
                    ENGINE,
                    v.key,
                    &net::mask_password(v.text),
                    format_args!(
                        "not a PostgreSQL connection URL{}; expected postgres://USER@HOST:PORT/DB",
                        parsed.err().map(|e| format!(" ({e})")).unwrap_or_default()
                    ),
                )),
            },
        },
        KnobDef {
            name: "unlogged",
            help: "create the table UNLOGGED: no write-ahead log, emptied after a crash",
            default: || "false".to_string(),
            set: |s, v| v.bool().map(|b| s.unlogged = b),
        },
        KnobDef {
            name: "synchronous_commit",
            help: "on, off, local, remote_write or remote_apply: whether a commit waits for its WAL flush (set per session)",
            default: || "on".to_string(),
            set: |s, v| v.choice(SYNCHRONOUS_COMMIT).map(|c| s.synchronous_commit = c),
        },
        KnobDef {
            name: "fillfactor",
            help: "percent of each heap page filled by inserts (10 to 100), the rest left for updates",
            default: || "100".to_string(),
            set: |s, v| {
                let n: u32 = v.num()?;
                if !(10..=100).contains(&n) {
                    return Err(v.refuse("expected a percentage from 10 to 100"));
                }
                s.fillfactor = n;
                Ok(())
            },
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
// The URL's sslmode and the TLS files are checked together: a file that does not
// read, a certificate without its key, files for a plain connection.
.with_check(|s| s.tls_config().map(drop).map_err(|why| ("url", why)));
