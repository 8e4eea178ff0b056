//! The engines' settings: their defaults and the knobs that set them.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mysql_async::{ClientIdentity, Opts, SslOpts};

use super::{DEFAULT_URL, URL_ENV, net};
use crate::engine::server::tls::{HasTls, TlsFiles, ca_knob, cert_knob, key_knob};
use crate::engine::{KnobDef, KnobTable, OptionError};

const ROW_FORMATS: &[&str] = &["dynamic", "compact", "redundant", "compressed"];

#[derive(Debug, Clone)]
pub(super) struct Settings {
    /// The URL as given (shown masked).
    pub(super) url: String,
    /// The client's options parsed from it.
    pub(super) opts: Opts,
    pub(super) timeout: Duration,
    /// InnoDB's ROW_FORMAT (mariadb only).
    pub(super) row_format: &'static str,
    /// MyRocks: the session's writes skip the write-ahead log (myrocks only).
    pub(super) disable_wal: bool,
    /// The URL's `ssl-mode` (or `mariadbs://`/`mysqls://`: VERIFY_IDENTITY).
    pub(super) ssl: SslMode,
    /// The knobs `tls_ca`, `tls_cert` and `tls_key`.
    pub(super) tls: TlsFiles,
    /// [`Settings::connect_opts`] once made (shared by the settings' clones).
    pub(super) opts_made: Arc<OnceLock<Result<Opts, String>>>,
}

impl HasTls for Settings {
    fn tls_files(&mut self) -> &mut TlsFiles {
        &mut self.tls
    }
}

/// The MySQL client's `ssl-mode`, of the values that say for certain whether the
/// connection is encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    /// `DISABLED`, or none given: a plain connection.
    Disabled,
    /// `REQUIRED`: encrypted, the server's certificate not checked.
    Required,
    /// `VERIFY_CA`: encrypted, the certificate's chain checked.
    VerifyCa,
    /// `VERIFY_IDENTITY`: encrypted, the chain and the host name checked.
    VerifyIdentity,
}

impl Settings {
    /// [`Settings::connect_opts`], made once.
    pub(super) fn connect_opts_once(&self) -> Result<Opts, String> {
        self.opts_made.get_or_init(|| self.connect_opts()).clone()
    }

    /// The client's options with the TLS the URL asks for, the files read now (so a
    /// reconnection times the handshake, not a file read).
    pub(super) fn connect_opts(&self) -> Result<Opts, String> {
        if self.ssl == SslMode::Disabled {
            self.tls
                .refuse_without_tls("add ssl-mode=VERIFY_IDENTITY (or REQUIRED, VERIFY_CA) to the URL")?;
            return Ok(self.opts.clone());
        }
        let pem = self.tls.read_pem()?;
        let mut ssl = SslOpts::default()
            .with_danger_accept_invalid_certs(self.ssl == SslMode::Required)
            .with_danger_skip_domain_validation(self.ssl == SslMode::VerifyCa);
        if let Some(ca) = pem.ca {
            ssl = ssl.with_root_certs(vec![ca.into()]).with_disable_built_in_roots(true);
        }
        if let Some((cert, key)) = pem.identity {
            ssl = ssl.with_client_identity(Some(ClientIdentity::new(cert.into(), key.into())));
        }
        crate::engine::server::tls::install_provider();
        Ok(mysql_async::OptsBuilder::from_opts(self.opts.clone())
            .ssl_opts(ssl)
            .into())
    }
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

/// The client's options for a `mariadb://` (or `mysql://`) URL and the TLS it asks
/// for: its `ssl-mode` parameter, or `mariadbs://` (`mysqls://`) for VERIFY_IDENTITY.
fn parse_url(url: &str) -> Result<(Opts, SslMode), String> {
    let (rest, mut ssl) = if let Some(rest) = url
        .strip_prefix("mariadbs://")
        .or_else(|| url.strip_prefix("mysqls://"))
    {
        (rest, Some(SslMode::VerifyIdentity))
    } else {
        let rest = url
            .strip_prefix("mariadb://")
            .or_else(|| url.strip_prefix("mysql://"))
            .ok_or("the URL must start with mariadb:// (or mysql://; mariadbs:// for TLS)")?;
        (rest, None)
    };
    // ssl-mode (the MySQL client's name, also ssl_mode) is kvmark's to read.
    let mut kept = Vec::new();
    let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("ssl-mode" | "ssl_mode" | "sslmode", mode)) => {
                let mode = match mode.to_ascii_uppercase().as_str() {
                    "DISABLED" => SslMode::Disabled,
                    "REQUIRED" => SslMode::Required,
                    "VERIFY_CA" => SslMode::VerifyCa,
                    "VERIFY_IDENTITY" => SslMode::VerifyIdentity,
                    "PREFERRED" => {
                        return Err(
                            "ssl-mode=PREFERRED lets the server decide whether the connection is encrypted, \
                                    so two runs could measure different things: say DISABLED, or REQUIRED, VERIFY_CA \
                                    or VERIFY_IDENTITY"
                                .into(),
                        );
                    }
                    _ => {
                        return Err(format!(
                            "ssl-mode={mode} is not one of DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
                        ));
                    }
                };
                if ssl.is_some_and(|s| s != mode) {
                    return Err("a mariadbs:// URL is VERIFY_IDENTITY; its ssl-mode says otherwise".into());
                }
                ssl = Some(mode);
            }
            _ => kept.push(pair),
        }
    }
    let url = match kept.is_empty() {
        true => format!("mysql://{base}"),
        false => format!("mysql://{base}?{}", kept.join("&")),
    };
    let opts = Opts::from_url(&url).map_err(|e| e.to_string())?;
    if opts.ssl_opts().is_some() {
        return Err("say TLS with ssl-mode=REQUIRED, VERIFY_CA or VERIFY_IDENTITY (and the CA as tls_ca=FILE)".into());
    }
    Ok((opts, ssl.unwrap_or(SslMode::Disabled)))
}

pub(super) fn start() -> Settings {
    let url = default_url();
    // A bad URL in the environment is refused when the knob table checks the default;
    // until then the fixed default stands in.
    let (opts, ssl) = parse_url(&url)
        .or_else(|_| parse_url(DEFAULT_URL))
        .expect("the default URL parses");
    Settings {
        opts,
        ssl,
        tls: TlsFiles::default(),
        opts_made: Arc::default(),
        url,
        timeout: Duration::from_secs(5),
        row_format: "dynamic",
        disable_wal: false,
    }
}

const URL_KNOB: KnobDef<Settings> = KnobDef {
    name: "url",
    help: "the server, mariadb://USER[:PASSWORD]@HOST:PORT/DB[?ssl-mode=VERIFY_IDENTITY]; tables are made in DB (default: $KVMARK_MARIADB_URL, else mariadb://kvmark@127.0.0.1:3306/kvmark; passwords are masked wherever it is shown)",
    default: || net::mask_password(&default_url()).into_owned(),
    set: |s, v| match parse_url(v.text) {
        Ok((opts, ssl)) => {
            s.url = v.text.to_string();
            s.opts = opts;
            s.ssl = ssl;
            Ok(())
        }
        Err(why) => Err(OptionError::bad_value(
            v.engine,
            v.key,
            &net::mask_password(v.text),
            format_args!("not a MariaDB URL ({why}); expected mariadb://USER@HOST:PORT/DB"),
        )),
    },
};

const TIMEOUT_KNOB: KnobDef<Settings> = KnobDef {
    name: "timeout",
    help: "longest wait for one operation's reply (connecting included); past it the operation fails and the session reconnects",
    default: || net::DEFAULT_TIMEOUT.to_string(),
    set: |s, v| net::parse_timeout(v).map(|t| s.timeout = t),
};

pub(super) static INNODB_KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    "mariadb",
    start,
    &[
        URL_KNOB,
        KnobDef {
            name: "row_format",
            help: "the table's InnoDB ROW_FORMAT: dynamic, compact, redundant or compressed (durability is the server's innodb_flush_log_at_trx_commit)",
            default: || "dynamic".to_string(),
            set: |s, v| v.choice(ROW_FORMATS).map(|f| s.row_format = f),
        },
        TIMEOUT_KNOB,
        ca_knob(),
        cert_knob(),
        key_knob(),
    ],
)
// The URL's ssl-mode and the TLS files are checked together.
.with_check(check_tls);

pub(super) static MYROCKS_KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    "myrocks",
    start,
    &[
        URL_KNOB,
        KnobDef {
            name: "disable_wal",
            help: "the sessions' writes skip RocksDB's write-ahead log (rocksdb_write_disable_wal): lost in a crash (otherwise durability is the server's rocksdb_flush_log_at_trx_commit)",
            default: || "false".to_string(),
            set: |s, v| v.bool().map(|b| s.disable_wal = b),
        },
        TIMEOUT_KNOB,
        ca_knob(),
        cert_knob(),
        key_knob(),
    ],
)
// The URL's ssl-mode and the TLS files are checked together.
.with_check(check_tls);

/// Refuses TLS files that do not read or do not fit the URL's ssl-mode.
fn check_tls(s: &Settings) -> Result<(), (&'static str, String)> {
    s.connect_opts().map(drop).map_err(|why| ("url", why))
}
