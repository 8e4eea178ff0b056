//! `etcd`: an etcd cluster (v3 API over gRPC) through the `etcd-client` crate, one
//! connection per session.
//!
//! A store is a key prefix: every key of a store named `NS` is written as `NS/KEY`.
//! etcd keeps keys in bytewise order, so `range`, `scan` and `delete_range` are native
//! Range and DeleteRange requests over `[NS/lo, NS/hi)`. Removing the store (after it
//! closes, unless `--keep-data`) is one DeleteRange over `[NS/, NS0)`.
//!
//! Verb mapping: `get` Range of one key; `put` Put; `del` DeleteRange of one key, whose
//! count tells whether the key existed; `mget` one read-only transaction of Ranges (one
//! revision); `mput` and `mdel` one transaction of Puts or DeleteRanges (a repeated key
//! is written once, its last value kept: etcd refuses a transaction that puts one key
//! twice); `append` a compare-and-swap transaction: it reads the value and its
//! `mod_revision`, then puts the longer value only if the revision is unchanged (or,
//! for a new key, if its `create_revision` is still 0); when another writer got there
//! first, the transaction's else branch returns the new value, and it tries again. The
//! retries are counted (`append_retries` in the timeline) and all of them run within
//! the timeout. Every request copies its key and value into the client's protobuf
//! message, which the crate's API takes by value.
//!
//! Sessions spread over the members: each starts at the next endpoint of the
//! `endpoints` list and keeps one gRPC connection to that member. When the member
//! fails (a refused connection, a dropped stream, no reply within the timeout) the
//! session reconnects to the next member, so a run goes on against the remaining
//! quorum. While the cluster elects a leader, requests fail with "leader changed" or
//! "no leader": those are busy errors, which the harness retries and counts
//! (`leader_errors` in the timeline); a stopped member's failures are `member_errors`.
//! The timeline also shows each member's view from the maintenance Status call: how
//! many answer, which one leads, the Raft term and index, and the database size.
//!
//! The settings and their knobs are in `knobs.rs`, the work outside sessions (the
//! probe, removing a prefix, the members' status) in `admin.rs`, the verbs in
//! `session.rs`; this file opens stores and connects sessions to members.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use etcd_client::{Client, ConnectOptions, KvClient};

use self::admin::{MembersConnector, admin, members_status, prefix_of, remove, report_members};
use self::knobs::{KNOBS, Settings, start};
use self::session::EtcdSession;
use super::net::{self, Connector, Fault, Link, LinkStats};
use crate::engine::{AppendMethod, EngineInfo, EngineResult, OpenRequest, ServerKind, Session, StorageKind, Store};

mod admin;
mod knobs;
mod session;

/// etcd refuses a request larger than this (its `--max-request-bytes`, 1.5 MiB).
const MAX_REQUEST_BYTES: usize = 1_572_864;
/// The part of a request kvmark gives to the key; the value gets the rest, less the
/// namespace prefix and the message's framing.
const MAX_KEY_BYTES: usize = 64 << 10;
const MAX_VALUE_BYTES: usize = MAX_REQUEST_BYTES - MAX_KEY_BYTES - 1024;

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Server(&SERVER),
    description: "an etcd cluster (etcd-client, gRPC): a key prefix, native ranges, batches as transactions",
    append: AppendMethod::CompareAndSwap,
    del_reports_existence: true,
    atomic_batches: true,
    // A request may carry at most 1.5 MiB (the server's --max-request-bytes): keys get
    // 64 KiB of it, values the rest.
    limits: crate::engine::Limits {
        empty_keys: true,
        max_key_bytes: MAX_KEY_BYTES,
        max_value_bytes: MAX_VALUE_BYTES,
    },
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "etcd";
/// Where the default endpoints come from.
pub const URL_ENV: &str = "KVMARK_ETCD_URL";
const DEFAULT_ENDPOINTS: &str = "http://127.0.0.1:2379";

static SERVER: ServerKind = ServerKind {
    namespace: "key prefix",
    address: |o| net::mask_password(&KNOBS.parse(o).unwrap_or_else(|_| start()).endpoints.join(",")).into_owned(),
    probe: |o| {
        let s = KNOBS.parse(o).map_err(|e| e.message)?;
        admin(&s, "probe", async |c| c.status().await.map(drop)).map_err(|e| e.message)
    },
    remove,
    pipeline: false,
    ordered: true,
};

/// Connection options: kvmark bounds every request itself (the timeout knob), so only
/// the TCP connect gets a bound of its own; TLS for `https://` endpoints.
fn connect_options(s: &Settings) -> Result<ConnectOptions, etcd_client::Error> {
    let options = ConnectOptions::new().with_connect_timeout(s.timeout);
    match s.tls_options_once().map_err(etcd_client::Error::InvalidArgs)? {
        Some(tls) => Ok(options.with_tls(tls)),
        None => Ok(options),
    }
}

/// A client for the members `endpoints`, whose requests the running runtime serves.
async fn connect(s: &Settings, endpoints: &[String]) -> Result<Client, etcd_client::Error> {
    Client::connect(endpoints, Some(connect_options(s)?)).await
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let name = req.namespace(ENGINE)?;
    let settings = KNOBS.parse(req.options)?;
    // The prefix needs no creating: asking a member for its status checks the cluster
    // answers.
    admin(&settings, "connecting", async |c| c.status().await.map(drop))?;
    let cap = req.max_value_bytes.map_or(MAX_VALUE_BYTES, |c| {
        usize::try_from(c).unwrap_or(usize::MAX).min(MAX_VALUE_BYTES)
    });
    let counters = Arc::new(Counters::default());
    let stats = Link::open(
        MembersConnector {
            settings: settings.clone(),
        },
        settings.timeout,
        Arc::default(),
    )
    .ok();
    Ok(Box::new(EtcdStore {
        shared: Arc::new(Shared {
            settings,
            prefix: prefix_of(name),
            cap,
            next_member: AtomicUsize::new(0),
            links: Arc::default(),
            counters,
        }),
        stats: Mutex::new(stats),
    }))
}

/// What the sessions of one store count, for the timeline.
#[derive(Debug, Default)]
struct Counters {
    /// Appends whose compare-and-swap lost to another writer and ran again.
    append_retries: AtomicU64,
    /// Requests refused while the cluster had no leader or changed it (retried).
    leader_errors: AtomicU64,
    /// Requests that failed because their member was unreachable (the session moves on).
    member_errors: AtomicU64,
}

struct Shared {
    settings: Settings,
    /// `NS/`.
    prefix: Vec<u8>,
    /// The longest value an append may make: the store's cap within etcd's own limit.
    cap: usize,
    /// The member the next session starts on.
    next_member: AtomicUsize,
    links: Arc<LinkStats>,
    counters: Arc<Counters>,
}

struct EtcdStore {
    shared: Arc<Shared>,
    /// The sampler's clients, one per member; None if they could not be made at open.
    stats: Mutex<Option<Link<MembersConnector>>>,
}

impl Store for EtcdStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        let first = s.next_member.fetch_add(1, Ordering::Relaxed) % s.settings.endpoints.len();
        let connector = MemberConnector {
            shared: s.clone(),
            at: Cell::new(first),
        };
        Ok(Box::new(EtcdSession {
            link: Link::open(connector, s.settings.timeout, s.links.clone())?,
            shared: s.clone(),
            key: Vec::new(),
            end: Vec::new(),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut link) = self.stats.lock()
            && let Some(link) = link.as_mut()
            && let Ok(members) = link.run("stats", async |_, clients| {
                Ok::<_, etcd_client::Error>(members_status(clients).await)
            })
        {
            report_members(&members, &mut out);
        }
        let c = &self.shared.counters;
        for (name, n) in [
            ("append_retries", &c.append_retries),
            ("leader_errors", &c.leader_errors),
            ("member_errors", &c.member_errors),
        ] {
            out.push((name.to_string(), n.load(Ordering::Relaxed) as f64));
        }
        self.shared.links.report(&mut out);
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        crate::engine::unshare(ENGINE, self.shared).map(drop)
    }
}

/// A session's connection: one member's.
struct MemberConn {
    kv: KvClient,
    /// Keeps the channel the kv client uses.
    _client: Client,
}

/// Connects a session to one member, moving to the next one after a failure.
struct MemberConnector {
    shared: Arc<Shared>,
    /// The member this session talks to, by position in `endpoints`.
    at: Cell<usize>,
}

impl MemberConnector {
    fn endpoint(&self) -> &String {
        &self.shared.settings.endpoints[self.at.get()]
    }

    fn move_on(&self) {
        self.at.set((self.at.get() + 1) % self.shared.settings.endpoints.len());
    }
}

impl Connector for MemberConnector {
    type Conn = MemberConn;
    type Error = etcd_client::Error;
    const ENGINE: &'static str = ENGINE;

    fn address(&self) -> String {
        self.endpoint().clone()
    }

    async fn connect(&self) -> Result<MemberConn, etcd_client::Error> {
        let attempt = async {
            let mut client = connect(&self.shared.settings, std::slice::from_ref(self.endpoint())).await?;
            // The client connects lazily: ask the member something, so a member that is
            // down fails the attempt (and the next one tries another member).
            client.status().await?;
            // Ranges may return more than gRPC's default 4 MB.
            let kv = client.kv_client().max_decoding_message_size(usize::MAX);
            Ok(MemberConn { kv, _client: client })
        };
        let out = attempt.await;
        if out.is_err() {
            self.move_on();
        }
        out
    }

    fn fault(&self, _: &MemberConn, e: &etcd_client::Error) -> Fault {
        let fault = classify(e);
        let counters = &self.shared.counters;
        match fault {
            Fault::Busy => counters.leader_errors.fetch_add(1, Ordering::Relaxed),
            Fault::Broken => {
                self.move_on();
                counters.member_errors.fetch_add(1, Ordering::Relaxed)
            }
            Fault::Refused => 0,
        };
        fault
    }
}

/// What an error says: a leader election under way is busy (retried), a member that
/// cannot be reached is broken (the session moves to another member), and what the
/// server refuses (a request too large, too many operations in a transaction) is
/// refused.
fn classify(e: &etcd_client::Error) -> Fault {
    use etcd_client::Error as E;
    use tonic::Code;
    match e {
        E::GRpcStatus(st) => {
            let msg = st.message();
            let election = ["leader changed", "no leader", "not leader", "too many requests"];
            if msg.starts_with("etcdserver:") && election.iter().any(|m| msg.contains(m)) {
                Fault::Busy
            } else if matches!(
                st.code(),
                Code::Unavailable | Code::Unknown | Code::Cancelled | Code::Internal | Code::DeadlineExceeded
            ) {
                Fault::Broken
            } else {
                Fault::Refused
            }
        }
        E::TransportError(_) | E::IoError(_) | E::Internal(_) => Fault::Broken,
        _ => Fault::Refused,
    }
}

fn version() -> String {
    format!(
        "{} (client; the server's version is in its Status)",
        crate::engine::versions::crate_version("etcd-client")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_election_is_busy_and_a_lost_member_is_broken() {
        let status = |code, msg: &str| etcd_client::Error::GRpcStatus(tonic::Status::new(code, msg));
        use tonic::Code;
        assert_eq!(
            classify(&status(Code::Unavailable, "etcdserver: leader changed")),
            Fault::Busy
        );
        assert_eq!(
            classify(&status(Code::Unavailable, "etcdserver: no leader")),
            Fault::Busy
        );
        assert_eq!(classify(&status(Code::Unavailable, "tcp connect error")), Fault::Broken);
        assert_eq!(
            classify(&status(Code::InvalidArgument, "etcdserver: request is too large")),
            Fault::Refused
        );
    }
}
