//! The engine's settings: their defaults and the knobs that set them.

use std::time::Duration;

use super::{DEFAULT_ENDPOINTS, ENGINE, URL_ENV, net};
use crate::engine::{KnobDef, KnobTable};

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) endpoints: Vec<String>,
    pub(super) timeout: Duration,
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
        let host_port = e.strip_prefix("http://").and_then(|rest| rest.rsplit_once(':'));
        match host_port {
            Some((host, port)) if !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok() => {}
            _ => return Err(format!("{e}: expected http://HOST:PORT")),
        }
    }
    Ok(list)
}

pub(super) fn start() -> Settings {
    Settings {
        endpoints: parse_endpoints(&default_endpoints()).unwrap_or_else(|_| vec![DEFAULT_ENDPOINTS.to_string()]),
        timeout: Duration::from_secs(5),
    }
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "endpoints",
            help: "the cluster's members, comma-separated http://HOST:PORT (default: $KVMARK_ETCD_URL, else http://127.0.0.1:2379); sessions spread over them and move to the next when one fails",
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
    ],
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_comma_separated_http_addresses() {
        assert_eq!(
            parse_endpoints("http://127.0.0.1:1, http://127.0.0.1:2").unwrap(),
            ["http://127.0.0.1:1", "http://127.0.0.1:2"]
        );
        for bad in ["", "127.0.0.1:1", "http://a:1,", "https://a:1", "http://a:1/x"] {
            assert!(parse_endpoints(bad).is_err(), "{bad}");
        }
    }
}
