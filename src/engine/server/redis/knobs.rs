//! The engine's settings: their defaults and the knobs that set them.

use std::time::Duration;

use redis::Client;

use super::tls::{self, ca_knob, cert_knob, key_knob};
use super::{
    CLUSTER_ENGINE, CLUSTER_URL_ENV, DEFAULT_CLUSTER_URL, DEFAULT_URL, ENGINE, Layout, Settings, URL_ENV, net,
};
use crate::engine::{EngineError, EngineOptions, EngineResult, KnobDef, KnobTable, KnobValue, OptionError};

const INDEXES: &[&str] = &["none", "zset"];
const LAYOUTS: &[&str] = &["auto", "spread", "slot"];

impl Settings {
    pub(super) fn engine(&self) -> &'static str {
        if self.cluster { CLUSTER_ENGINE } else { ENGINE }
    }

    /// True when a cluster store's keys hash over every slot.
    pub(super) fn spread(&self) -> bool {
        self.cluster
            && match self.layout {
                Layout::Auto => !self.index,
                Layout::Spread => true,
                Layout::Slot => false,
            }
    }

    /// True when the URLs ask for TLS (`rediss://`).
    pub(super) fn uses_tls(&self) -> bool {
        self.urls().next().is_some_and(|u| u.starts_with("rediss://"))
    }

    /// The TLS handshakes' configuration for `rediss://` URLs (None for `redis://`).
    pub(super) fn tls_connector(&self) -> Result<Option<tokio_rustls::TlsConnector>, String> {
        if !self.uses_tls() {
            self.tls.refuse_without_tls("use rediss://HOST:PORT for TLS")?;
            return Ok(None);
        }
        let config = tls::client_config(&self.tls, tls::Verify::Full)?;
        Ok(Some(tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))))
    }

    /// Refuses settings that cannot work together.
    pub(super) fn check(&self) -> EngineResult<()> {
        if self.urls().any(|u| u.starts_with("rediss://") != self.uses_tls()) {
            return Err(EngineError::other(format!(
                "engine {}: the seed nodes mix rediss:// and redis://; a cluster is reached one way",
                self.engine()
            )));
        }
        if self.spread() && self.index {
            return Err(EngineError::other(format!(
                "engine {CLUSTER_ENGINE}: layout=spread cannot keep index=zset (a sorted set lives in one slot, \
                 and MULTI/EXEC cannot span slots): use layout=slot, or drop the index"
            )));
        }
        Ok(())
    }

    /// The URLs of `url`: one, or a cluster's seed nodes.
    pub(super) fn urls(&self) -> impl Iterator<Item = &str> {
        self.url.split(',').map(str::trim)
    }
}

pub(super) fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

pub(super) fn default_cluster_url() -> String {
    net::env_or(CLUSTER_URL_ENV, DEFAULT_CLUSTER_URL)
}

/// The settings `o` ask for, or the defaults when they are refused (for messages).
pub(super) fn settings_or_default(knobs: &KnobTable<Settings>, o: &EngineOptions, start: fn() -> Settings) -> Settings {
    knobs.parse(o).unwrap_or_else(|_| start())
}

pub(super) fn start_single() -> Settings {
    Settings {
        url: default_url(),
        index: false,
        timeout: Duration::from_secs(5),
        cluster: false,
        layout: Layout::Auto,
        tls: Default::default(),
    }
}

pub(super) fn start_cluster() -> Settings {
    Settings {
        url: default_cluster_url(),
        cluster: true,
        ..start_single()
    }
}

pub(super) const INDEX_KNOB: KnobDef<Settings> = KnobDef {
    name: "index",
    help: "none, or zset: a sorted set of the keys, kept in step with every write, that range, scan and delete_range need",
    default: || "none".to_string(),
    set: |s, v| v.choice(INDEXES).map(|c| s.index = c == "zset"),
};

pub(super) const TIMEOUT_KNOB: KnobDef<Settings> = KnobDef {
    name: "timeout",
    help: "longest wait for one operation's reply (connecting included); past it the operation fails and the session reconnects",
    default: || net::DEFAULT_TIMEOUT.to_string(),
    set: |s, v| net::parse_timeout(v).map(|t| s.timeout = t),
};

/// Checks each URL of `v` (one, or several when `list`) and keeps them.
pub(super) fn set_url(s: &mut Settings, v: &KnobValue<'_>, list: bool) -> Result<(), OptionError> {
    let engine = s.engine();
    for url in v.text.split(',').map(str::trim) {
        let refuse = |why: String| OptionError::bad_value(engine, v.key, &net::mask_password(v.text), why);
        if !list && v.text.contains(',') {
            return Err(refuse(
                "one URL expected; a cluster's seed nodes go to the redis-cluster engine".into(),
            ));
        }
        if let Err(e) = Client::open(url) {
            return Err(refuse(format!(
                "not a Redis URL ({e}); expected redis://HOST:PORT, or rediss://HOST:PORT for TLS"
            )));
        }
        if url.starts_with("rediss://") && url.ends_with("#insecure") {
            return Err(refuse(
                "kvmark checks the server's certificate: drop #insecure and give the server's CA as tls_ca=FILE".into(),
            ));
        }
    }
    s.url = v.text.to_string();
    Ok(())
}

/// Refuses TLS files that do not read or do not fit the URL's scheme.
fn check_tls(s: &Settings) -> Result<(), (&'static str, String)> {
    s.tls_connector().map(drop).map_err(|why| ("url", why))
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    ENGINE,
    start_single,
    &[
        KnobDef {
            name: "url",
            help: "the server, redis://[:PASSWORD@]HOST:PORT[/DB], rediss:// for TLS (default: $KVMARK_REDIS_URL, else redis://127.0.0.1:6379; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_url()).into_owned(),
            set: |s, v| set_url(s, v, false),
        },
        INDEX_KNOB,
        TIMEOUT_KNOB,
        ca_knob(),
        cert_knob(),
        key_knob(),
    ],
)
.with_contract(&[("index", "zset")])
.with_check(check_tls);

pub(super) static CLUSTER_KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    CLUSTER_ENGINE,
    start_cluster,
    &[
        KnobDef {
            name: "url",
            help: "seed nodes of the cluster, comma-separated redis://[:PASSWORD@]HOST:PORT, rediss:// for TLS (default: $KVMARK_REDIS_CLUSTER_URL, else redis://127.0.0.1:7000; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_cluster_url()).into_owned(),
            set: |s, v| set_url(s, v, true),
        },
        INDEX_KNOB,
        TIMEOUT_KNOB,
        KnobDef {
            name: "layout",
            help: "auto, spread or slot: spread puts a store's keys in every slot (every primary serves it; batches split by slot, no ranges), slot puts them in one hash-tag slot (one primary; ranges with index=zset, atomic batches); auto is spread, or slot with index=zset",
            default: || "auto".to_string(),
            set: |s, v| {
                v.choice(LAYOUTS).map(|c| {
                    s.layout = match c {
                        "spread" => Layout::Spread,
                        "slot" => Layout::Slot,
                        _ => Layout::Auto,
                    }
                })
            },
        },
        ca_knob(),
        cert_knob(),
        key_knob(),
    ],
)
.with_contract(&[("index", "zset")])
.with_check(check_tls);
