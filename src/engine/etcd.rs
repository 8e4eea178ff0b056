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

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, Txn, TxnOp, TxnOpResponse,
};

use super::inflight::block_on;
use super::net::{self, Connector, Fault, Link, LinkStats};
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, KnobDef, KnobTable,
    OpenRequest, ReadBuf, Rows, ScanFn, ServerKind, Session, StorageKind, Store, Values,
};

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
};

#[derive(Debug, Clone)]
struct Settings {
    endpoints: Vec<String>,
    timeout: Duration,
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

fn start() -> Settings {
    Settings {
        endpoints: parse_endpoints(&default_endpoints()).unwrap_or_else(|_| vec![DEFAULT_ENDPOINTS.to_string()]),
        timeout: Duration::from_secs(5),
    }
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
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

/// Connection options: kvmark bounds every request itself (the timeout knob), so only
/// the TCP connect gets a bound of its own.
fn connect_options(s: &Settings) -> ConnectOptions {
    ConnectOptions::new().with_connect_timeout(s.timeout)
}

/// A client for the members `endpoints`, whose requests the running runtime serves.
async fn connect(s: &Settings, endpoints: &[String]) -> Result<Client, etcd_client::Error> {
    Client::connect(endpoints, Some(connect_options(s))).await
}

/// Runs `f` on a client of its own over every member, for work outside sessions
/// (removing a prefix, the probe), all of it within the timeout.
fn admin<T>(
    s: &Settings,
    what: &str,
    f: impl AsyncFnOnce(&mut Client) -> Result<T, etcd_client::Error>,
) -> EngineResult<T> {
    let fail = |why: &dyn std::fmt::Display| {
        EngineError::other(format!("engine {ENGINE}: {what} at {}: {why}", s.endpoints.join(",")))
    };
    block_on(async {
        let work = async {
            let mut client = connect(s, &s.endpoints).await?;
            f(&mut client).await
        };
        match tokio::time::timeout(s.timeout, work).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(fail(&e)),
            Err(_) => Err(fail(&format_args!("no reply within the timeout of {:?}", s.timeout))),
        }
    })
}

/// `NS/`: every key of namespace `name` starts with it.
fn prefix_of(name: &str) -> Vec<u8> {
    format!("{name}/").into_bytes()
}

/// The end of the range holding every key that starts with `prefix` (`NS0` for `NS/`).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// Keys deleted per request when a store is removed: one DeleteRange of a whole large
/// store (100k keys of 1 KB) takes etcd longer than the timeout, so it goes in parts.
const REMOVE_CHUNK: i64 = 5000;

fn remove(o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = KNOBS.parse(o)?;
    let prefix = prefix_of(name);
    let end = prefix_end(&prefix);
    let what = format!("removing key prefix {name}/");
    loop {
        // The next part ends just past the last of the next REMOVE_CHUNK keys.
        let keys = GetOptions::new()
            .with_range(end.as_slice())
            .with_keys_only()
            .with_limit(REMOVE_CHUNK);
        let upto = admin(&s, &what, async |c| {
            let resp = c.get(prefix.as_slice(), Some(keys)).await?;
            Ok(resp.kvs().last().map(|kv| [kv.key(), &[0][..]].concat()))
        })?;
        let Some(upto) = upto else { return Ok(()) };
        admin(&s, &what, async |c| {
            c.delete(prefix.as_slice(), Some(DeleteOptions::new().with_range(upto)))
                .await
                .map(drop)
        })?;
    }
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

/// One member's answer to Status, as the timeline reports it.
struct MemberStatus {
    member_id: u64,
    leader: u64,
    raft_term: u64,
    raft_index: u64,
    db_size: i64,
    db_size_in_use: i64,
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
        super::unshare(ENGINE, self.shared).map(drop)
    }
}

/// Every member's Status, asked at once; None for a member that did not answer.
async fn members_status(clients: &mut [Client]) -> Vec<Option<MemberStatus>> {
    let asks = clients.iter_mut().map(|c| async move {
        let st = c.status().await.ok()?;
        Some(MemberStatus {
            member_id: st.header().map_or(0, |h| h.member_id()),
            leader: st.leader(),
            raft_term: st.raft_term(),
            raft_index: st.raft_index(),
            db_size: st.db_size(),
            db_size_in_use: st.raft_used_db_size(),
        })
    });
    futures_util::future::join_all(asks).await
}

/// The members' view as timeline statistics: how many answer, which one leads
/// (its position in `endpoints`, from 1; 0 while none does), the highest Raft term
/// and index, and the leader's database size.
fn report_members(members: &[Option<MemberStatus>], out: &mut Vec<(String, f64)>) {
    let up: Vec<&MemberStatus> = members.iter().flatten().collect();
    out.push(("members_up".to_string(), up.len() as f64));
    let newest = up.iter().max_by_key(|m| m.raft_term);
    let leader_id = newest.map_or(0, |m| m.leader);
    let leader = members
        .iter()
        .position(|m| m.as_ref().is_some_and(|m| m.member_id == leader_id && leader_id != 0));
    out.push(("leader".to_string(), leader.map_or(0.0, |i| (i + 1) as f64)));
    out.push(("raft_term".to_string(), newest.map_or(0.0, |m| m.raft_term as f64)));
    let index = up.iter().map(|m| m.raft_index).max().unwrap_or(0);
    out.push(("raft_index".to_string(), index as f64));
    if let Some(m) = leader.and_then(|i| members[i].as_ref()).or(newest.copied()) {
        out.push(("db_size".to_string(), m.db_size as f64));
        out.push(("db_size_in_use".to_string(), m.db_size_in_use as f64));
    }
}

/// The sampler's clients, one per member, so each member's own Status is asked.
struct MembersConnector {
    settings: Settings,
}

impl Connector for MembersConnector {
    type Conn = Vec<Client>;
    type Error = etcd_client::Error;
    const ENGINE: &'static str = ENGINE;

    fn address(&self) -> String {
        self.settings.endpoints.join(",")
    }

    async fn connect(&self) -> Result<Vec<Client>, etcd_client::Error> {
        let mut clients = Vec::with_capacity(self.settings.endpoints.len());
        for e in &self.settings.endpoints {
            clients.push(connect(&self.settings, std::slice::from_ref(e)).await?);
        }
        Ok(clients)
    }

    fn fault(&self, _: &Vec<Client>, _: &etcd_client::Error) -> Fault {
        Fault::Broken
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

struct EtcdSession {
    link: Link<MemberConnector>,
    shared: Arc<Shared>,
    /// Scratch for one prefixed key, and for a range's prefixed end.
    key: Vec<u8>,
    end: Vec<u8>,
}

/// A reply that is not what the request returns.
fn unexpected(op: &str, what: &str) -> EngineError {
    EngineError::other(format!("engine {ENGINE}: {op}: unexpected reply ({what})"))
}

impl EtcdSession {
    /// `prefix + key`, owned (the client's requests take their keys by value).
    fn prefixed(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.shared.prefix.len() + key.len());
        k.extend_from_slice(&self.shared.prefix);
        k.extend_from_slice(key);
        k
    }

    /// Sets `self.key` and `self.end` to the prefixed bounds of `[lo, hi)`.
    fn bounds(&mut self, lo: &[u8], hi: &[u8]) {
        for (buf, k) in [(&mut self.key, lo), (&mut self.end, hi)] {
            buf.clear();
            buf.extend_from_slice(&self.shared.prefix);
            buf.extend_from_slice(k);
        }
    }

    /// The key without the store's prefix.
    fn strip<'k>(&self, op: &str, key: &'k [u8]) -> EngineResult<&'k [u8]> {
        key.strip_prefix(&self.shared.prefix[..])
            .ok_or_else(|| unexpected(op, "a key outside the store's prefix"))
    }

    /// Rows `lo <= key < hi`, at most `limit` (0: all), in key order.
    fn rows(&mut self, op: &str, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<etcd_client::GetResponse> {
        self.bounds(lo, hi);
        let options = GetOptions::new()
            .with_range(self.end.as_slice())
            .with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        let key = self.key.as_slice();
        self.link.run(op, async |_, c| c.kv.get(key, Some(options)).await)
    }
}

/// Keys in order with the last of each repeated key kept: positions into the batch.
fn last_of_each<T>(items: &[T], key: impl Fn(&T) -> &[u8]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| key(&items[a]).cmp(key(&items[b])).then(a.cmp(&b)));
    let mut kept = Vec::with_capacity(order.len());
    for (i, &p) in order.iter().enumerate() {
        if order
            .get(i + 1)
            .is_some_and(|&next| key(&items[next]) == key(&items[p]))
        {
            continue;
        }
        kept.push(p);
    }
    kept
}

impl Session for EtcdSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let k = self.prefixed(key);
        self.link
            .run("put", async |_, c| c.kv.put(k, val, None).await.map(drop))
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let k = self.prefixed(key);
        let resp = self.link.run("get", async |_, c| c.kv.get(k, None).await)?;
        match resp.kvs().first() {
            Some(kv) => {
                out.set(kv.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let k = self.prefixed(key);
        let resp = self.link.run("del", async |_, c| c.kv.delete(k, None).await)?;
        Ok(if resp.deleted() > 0 { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let resp = self.rows("scan", lo, hi, limit)?;
        let mut n = 0;
        for kv in resp.kvs() {
            n += 1;
            if f(self.strip("scan", kv.key())?, kv.value()) {
                break;
            }
        }
        Ok(n)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        if lo >= hi {
            return Ok(());
        }
        let resp = self.rows("range", lo, hi, limit)?;
        for kv in resp.kvs() {
            out.push(self.strip("range", kv.key())?, kv.value());
        }
        Ok(())
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        let ops: Vec<TxnOp> = keys.iter().map(|k| TxnOp::get(self.prefixed(k), None)).collect();
        let txn = Txn::new().and_then(ops);
        let resp = self.link.run("mget", async |_, c| c.kv.txn(txn).await)?;
        let replies = resp.op_responses();
        if replies.len() != keys.len() {
            return Err(unexpected("mget", "a reply per key"));
        }
        for reply in &replies {
            match reply {
                TxnOpResponse::Get(r) => match r.kvs().first() {
                    Some(kv) => out.push_hit(kv.value()),
                    None => out.push_miss(),
                },
                _ => return Err(unexpected("mget", "a Range reply")),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let ops: Vec<TxnOp> = last_of_each(pairs, |p| p.0)
            .into_iter()
            .map(|i| TxnOp::put(self.prefixed(pairs[i].0), pairs[i].1, None))
            .collect();
        let txn = Txn::new().and_then(ops);
        self.link.run("mput", async |_, c| c.kv.txn(txn).await.map(drop))
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        let ops: Vec<TxnOp> = last_of_each(keys, |k| k)
            .into_iter()
            .map(|i| TxnOp::delete(self.prefixed(keys[i]), None))
            .collect();
        let txn = Txn::new().and_then(ops);
        let resp = self.link.run("mdel", async |_, c| c.kv.txn(txn).await)?;
        let mut n = 0;
        for reply in resp.op_responses() {
            match reply {
                TxnOpResponse::Delete(r) => n += r.deleted().max(0) as usize,
                _ => return Err(unexpected("mdel", "a DeleteRange reply")),
            }
        }
        Ok(Some(n))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let k = self.prefixed(key);
        let cap = self.shared.cap;
        let retries = &self.shared.counters.append_retries;
        self.link.run("append", async |_, c| {
            // The current value and its revision (0: absent).
            let resp = c.kv.get(k.as_slice(), None).await?;
            let mut current = resp.kvs().first().map(|kv| (kv.value().to_vec(), kv.mod_revision()));
            loop {
                let (value, compare) = match &current {
                    Some((v, rev)) => (
                        v.as_slice(),
                        Compare::mod_revision(k.as_slice(), CompareOp::Equal, *rev),
                    ),
                    None => (&[][..], Compare::create_revision(k.as_slice(), CompareOp::Equal, 0)),
                };
                if value.len() + suffix.len() > cap {
                    return Ok(Appended::Skipped);
                }
                let mut grown = Vec::with_capacity(value.len() + suffix.len());
                grown.extend_from_slice(value);
                grown.extend_from_slice(suffix);
                let txn = Txn::new()
                    .when([compare])
                    .and_then([TxnOp::put(k.as_slice(), grown, None)])
                    .or_else([TxnOp::get(k.as_slice(), None)]);
                let resp = c.kv.txn(txn).await?;
                if resp.succeeded() {
                    return Ok(Appended::Yes);
                }
                // Another writer got there first: its value is in the else branch's reply.
                retries.fetch_add(1, Ordering::Relaxed);
                current = match resp.op_responses().first() {
                    Some(TxnOpResponse::Get(r)) => r.kvs().first().map(|kv| (kv.value().to_vec(), kv.mod_revision())),
                    _ => None,
                };
            }
        })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        self.bounds(lo, hi);
        let options = DeleteOptions::new().with_range(self.end.as_slice());
        let key = self.key.as_slice();
        self.link.run("delete_range", async |_, c| {
            c.kv.delete(key, Some(options)).await.map(drop)
        })
    }
}

fn version() -> String {
    format!(
        "{} (client; the server's version is in its Status)",
        super::versions::crate_version("etcd-client")
    )
}

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

    #[test]
    fn a_prefix_ends_where_its_keys_do() {
        assert_eq!(prefix_of("ns"), b"ns/");
        assert_eq!(prefix_end(b"ns/"), b"ns0");
    }

    #[test]
    fn batches_keep_the_last_value_of_a_repeated_key() {
        let pairs: [(&[u8], &[u8]); 4] = [(b"b", b"1"), (b"a", b"2"), (b"b", b"3"), (b"c", b"4")];
        let kept: Vec<(&[u8], &[u8])> = last_of_each(&pairs, |p| p.0).into_iter().map(|i| pairs[i]).collect();
        assert_eq!(kept, [(&b"a"[..], &b"2"[..]), (b"b", b"3"), (b"c", b"4")]);
    }

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
