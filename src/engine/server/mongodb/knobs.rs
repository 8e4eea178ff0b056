//! The engine's settings: their defaults and the knobs that set them.

use std::future::IntoFuture;
use std::time::Duration;

use futures_util::FutureExt;
use mongodb::options::ClientOptions;

use super::{DEFAULT_URL, ENGINE, MongoError, URL_ENV, net};
use crate::engine::{KnobDef, KnobTable, OptionError};

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) url: String,
    pub(super) journal: bool,
    pub(super) timeout: Duration,
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

pub(super) fn start() -> Settings {
    Settings {
        url: default_url(),
        journal: false,
        timeout: Duration::from_secs(5),
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

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "url",
            help: "the server, mongodb://[USER:PASSWORD@]HOST:PORT[/DATABASE][?OPTIONS]; collections go in DATABASE (default kvmark) (default: $KVMARK_MONGODB_URL, else mongodb://127.0.0.1:27017; passwords are masked wherever it is shown)",
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
    ],
);

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
