//! The engine's settings: their defaults and the knobs that set them.

use std::time::Duration;

use tokio_postgres::Config;

use super::{DEFAULT_URL, ENGINE, URL_ENV, net};
use crate::engine::{KnobDef, KnobTable, OptionError};

const SYNCHRONOUS_COMMIT: &[&str] = &["on", "off", "local", "remote_write", "remote_apply"];

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) url: String,
    pub(super) unlogged: bool,
    pub(super) synchronous_commit: &'static str,
    pub(super) fillfactor: u32,
    pub(super) timeout: Duration,
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

pub(super) fn start() -> Settings {
    Settings {
        url: default_url(),
        unlogged: false,
        synchronous_commit: "on",
        fillfactor: 100,
        timeout: Duration::from_secs(5),
    }
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "url",
            help: "the server, postgres://USER[:PASSWORD]@HOST:PORT/DB (default: $KVMARK_POSTGRES_URL, else postgres://kvmark@127.0.0.1:5432/kvmark; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_url()).into_owned(),
            set: |s, v| match v.text.parse::<Config>() {
                Ok(_) if v.text.contains("://") || v.text.contains('=') => {
                    s.url = v.text.to_string();
                    Ok(())
                }
                parsed => Err(OptionError::bad_value(
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
    ],
);
