//! The engines' settings: their defaults and the knobs that set them.

use std::time::Duration;

use mysql_async::Opts;

use super::{DEFAULT_URL, URL_ENV, net};
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
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

/// The client's options for a `mariadb://` (or `mysql://`) URL.
fn parse_url(url: &str) -> Result<Opts, String> {
    let rest = url
        .strip_prefix("mariadb://")
        .or_else(|| url.strip_prefix("mysql://"))
        .ok_or("the URL must start with mariadb:// (or mysql://)")?;
    Opts::from_url(&format!("mysql://{rest}")).map_err(|e| e.to_string())
}

pub(super) fn start() -> Settings {
    let url = default_url();
    Settings {
        // A bad URL in the environment is refused when the knob table checks the
        // default; until then the fixed default stands in.
        opts: parse_url(&url)
            .or_else(|_| parse_url(DEFAULT_URL))
            .expect("the default URL parses"),
        url,
        timeout: Duration::from_secs(5),
        row_format: "dynamic",
        disable_wal: false,
    }
}

const URL_KNOB: KnobDef<Settings> = KnobDef {
    name: "url",
    help: "the server, mariadb://USER[:PASSWORD]@HOST:PORT/DB; tables are made in DB (default: $KVMARK_MARIADB_URL, else mariadb://kvmark@127.0.0.1:3306/kvmark; passwords are masked wherever it is shown)",
    default: || net::mask_password(&default_url()).into_owned(),
    set: |s, v| match parse_url(v.text) {
        Ok(opts) => {
            s.url = v.text.to_string();
            s.opts = opts;
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

pub(super) static INNODB_KNOBS: KnobTable<Settings> = KnobTable::new(
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
    ],
);

pub(super) static MYROCKS_KNOBS: KnobTable<Settings> = KnobTable::new(
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
    ],
);
