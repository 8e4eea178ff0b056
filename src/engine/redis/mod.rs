//! `redis`: a Redis server (or a server speaking its protocol) through the `redis`
//! crate, one connection per session.
//!
//! A store is a key prefix on the server: every key of a store named `NS` (a name
//! from `fresh_namespace`) is written as `NS:KEY`. Removing the store (after it
//! closes, unless `--keep-data`) deletes every key matching `NS:*` by SCAN and UNLINK,
//! and the index below.
//!
//! Verb mapping: `get` GET, `put` SET, `del` DEL (whose count tells whether the key
//! existed), `mget` MGET, `mput` MSET (atomic), `mdel` one DEL, `append` a server-side
//! script that checks the value cap and APPENDs in one atomic step.
//!
//! Redis keeps no key order, so `range`, `scan` and `delete_range` need the opt-in
//! `index=zset`: a sorted set `NS` (score 0, members the keys, which ZRANGEBYLEX orders
//! bytewise as the contract does), kept in step with every write atomically (MULTI/EXEC
//! or inside the script). A range is one script: ZRANGEBYLEX with LIMIT, then the
//! values. Without the index these verbs fail at once, naming the option.
//!
//! Sessions wait through [`inflight::block_on`](super::inflight::block_on), so many
//! connections of one worker thread (`--connections`) keep requests in flight
//! together. On a single server a session's connection is a pipe of kvmark's own
//! (`pipe.rs`): shared by the sessions of a pipeline group (`--pipeline N`), with the
//! hot verbs encoded and decoded in place (`lean.rs`, `resp.rs`) and the others through
//! the crate's command and value types. Opening, removing, probing and statistics use
//! the crate's blocking connection.
//!
//! `redis-cluster` is the same engine against a Redis Cluster: `url` lists seed nodes
//! (comma-separated) and each session holds the crate's cluster connection, which
//! routes every command to the primary serving its key's slot and follows MOVED and
//! ASK redirections. A store's keys and its index must share a slot, or the MULTI/EXEC
//! writes and the scripts above could not touch both: so the namespace is a hash tag,
//! keys `{NS}:KEY` and the index `{NS}`, and every verb keeps its meaning (atomic
//! batches, ordered ranges). The cost: one store lives on one primary; the cluster
//! spreads stores, not the keys of one store, so a store's throughput is what one
//! primary serves (the other way, an index per primary merged at read time, would
//! spread a store but make every range a fan-out to all primaries and give up atomic
//! batches). Removing a store and the timeline's INFO go to the primary that owns the
//! store's slot, found with CLUSTER KEYSLOT and CLUSTER SLOTS.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Client, Cmd, ConnectionAddr, RedisError, RedisFuture, Script, Value};

use self::pipe::{Group, PipeRef};
use super::net::{self, Connector, Fault, Link, LinkStats};
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, KnobDef, KnobTable,
    OpenRequest, OptionError, Pipeline, ReadBuf, Rows, ScanFn, ServerKind, Session, StorageKind, Store, Values,
};

mod lean;
mod pipe;
mod resp;

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Server(&SERVER),
    description: "a Redis server (redis crate): GET/SET/DEL/MGET/MSET on a key prefix; ranges with index=zset",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    // Redis strings (keys and values) hold at most 512 MB.
    limits: crate::engine::Limits {
        empty_keys: true,
        max_key_bytes: 512 << 20,
        max_value_bytes: 512 << 20,
    },
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "redis";
/// Where the default server address comes from.
pub const URL_ENV: &str = "KVMARK_REDIS_URL";
const DEFAULT_URL: &str = "redis://127.0.0.1:6379";
const INDEXES: &[&str] = &["none", "zset"];

/// Registry entry of Redis Cluster: the same engine, its sessions on the crate's
/// cluster connection.
pub static CLUSTER_INFO: EngineInfo = EngineInfo {
    name: CLUSTER_ENGINE,
    storage: StorageKind::Server(&CLUSTER_SERVER),
    description: "a Redis Cluster (redis crate, cluster client): keys route by slot; a store is one hash-tag slot, so ranges (index=zset) and batches stay ordered and atomic",
    knobs: &CLUSTER_KNOBS,
    open: open_cluster,
    ..INFO
};

const CLUSTER_ENGINE: &str = "redis-cluster";
/// Where the default seed nodes of Redis Cluster come from.
pub const CLUSTER_URL_ENV: &str = "KVMARK_REDIS_CLUSTER_URL";
const DEFAULT_CLUSTER_URL: &str = "redis://127.0.0.1:7000";

static SERVER: ServerKind = ServerKind {
    namespace: "key prefix",
    address: |o| net::mask_password(&settings_or_default(&KNOBS, o, start_single).url).into_owned(),
    probe: |o| probe(&KNOBS, o),
    remove: |o, name| remove(&KNOBS, o, name),
    pipeline: true,
};

static CLUSTER_SERVER: ServerKind = ServerKind {
    namespace: "hash-tag key prefix (one slot)",
    address: |o| net::mask_password(&settings_or_default(&CLUSTER_KNOBS, o, start_cluster).url).into_owned(),
    probe: |o| probe(&CLUSTER_KNOBS, o),
    remove: |o, name| remove(&CLUSTER_KNOBS, o, name),
    pipeline: false,
};

#[derive(Debug, Clone)]
struct Settings {
    /// The server's URL; for a cluster, its seed nodes' URLs, comma-separated.
    url: String,
    index: bool,
    timeout: Duration,
    cluster: bool,
}

impl Settings {
    fn engine(&self) -> &'static str {
        if self.cluster { CLUSTER_ENGINE } else { ENGINE }
    }

    /// The URLs of `url`: one, or a cluster's seed nodes.
    fn urls(&self) -> impl Iterator<Item = &str> {
        self.url.split(',').map(str::trim)
    }
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

fn default_cluster_url() -> String {
    net::env_or(CLUSTER_URL_ENV, DEFAULT_CLUSTER_URL)
}

/// The settings `o` ask for, or the defaults when they are refused (for messages).
fn settings_or_default(knobs: &KnobTable<Settings>, o: &EngineOptions, start: fn() -> Settings) -> Settings {
    knobs.parse(o).unwrap_or_else(|_| start())
}

fn start_single() -> Settings {
    Settings {
        url: default_url(),
        index: false,
        timeout: Duration::from_secs(5),
        cluster: false,
    }
}

fn start_cluster() -> Settings {
    Settings {
        url: default_cluster_url(),
        cluster: true,
        ..start_single()
    }
}

fn probe(knobs: &KnobTable<Settings>, o: &EngineOptions) -> Result<(), String> {
    let s = knobs.parse(o).map_err(|e| e.message)?;
    let mut conn = admin_connection(&s, None)?;
    redis::cmd("PING")
        .query::<String>(&mut conn)
        .map(drop)
        .map_err(|e| said(e, s.timeout))
}

const INDEX_KNOB: KnobDef<Settings> = KnobDef {
    name: "index",
    help: "none, or zset: a sorted set of the keys, kept in step with every write, that range, scan and delete_range need",
    default: || "none".to_string(),
    set: |s, v| v.choice(INDEXES).map(|c| s.index = c == "zset"),
};

const TIMEOUT_KNOB: KnobDef<Settings> = KnobDef {
    name: "timeout",
    help: "longest wait for one operation's reply (connecting included); past it the operation fails and the session reconnects",
    default: || net::DEFAULT_TIMEOUT.to_string(),
    set: |s, v| net::parse_timeout(v).map(|t| s.timeout = t),
};

/// Checks each URL of `v` (one, or several when `list`) and keeps them.
fn set_url(s: &mut Settings, v: &super::KnobValue<'_>, list: bool) -> Result<(), OptionError> {
    let engine = s.engine();
    for url in v.text.split(',').map(str::trim) {
        let refuse = |why: String| OptionError::bad_value(engine, v.key, &net::mask_password(v.text), why);
        if !list && v.text.contains(',') {
            return Err(refuse(
                "one URL expected; a cluster's seed nodes go to the redis-cluster engine".into(),
            ));
        }
        if let Err(e) = Client::open(url) {
            return Err(refuse(format!("not a Redis URL ({e}); expected redis://HOST:PORT")));
        }
    }
    s.url = v.text.to_string();
    Ok(())
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    start_single,
    &[
        KnobDef {
            name: "url",
            help: "the server, redis://[:PASSWORD@]HOST:PORT[/DB] (default: $KVMARK_REDIS_URL, else redis://127.0.0.1:6379; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_url()).into_owned(),
            set: |s, v| set_url(s, v, false),
        },
        INDEX_KNOB,
        TIMEOUT_KNOB,
    ],
)
.with_contract(&[("index", "zset")]);

static CLUSTER_KNOBS: KnobTable<Settings> = KnobTable::new(
    CLUSTER_ENGINE,
    start_cluster,
    &[
        KnobDef {
            name: "url",
            help: "seed nodes of the cluster, comma-separated redis://[:PASSWORD@]HOST:PORT (default: $KVMARK_REDIS_CLUSTER_URL, else redis://127.0.0.1:7000; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_cluster_url()).into_owned(),
            set: |s, v| set_url(s, v, true),
        },
        INDEX_KNOB,
        TIMEOUT_KNOB,
    ],
)
.with_contract(&[("index", "zset")]);

/// A blocking connection to `url`, every exchange bounded by the timeout.
fn connect_blocking(url: &str, timeout: Duration) -> redis::RedisResult<redis::Connection> {
    let conn = Client::open(url)?.get_connection_with_timeout(timeout)?;
    conn.set_read_timeout(Some(timeout))?;
    conn.set_write_timeout(Some(timeout))?;
    Ok(conn)
}

/// A blocking connection for work outside sessions, every exchange bounded by the
/// timeout. In a cluster: to the primary that owns `key`'s slot (a store's hash tag),
/// or to the first seed node that answers when there is no key.
fn admin_connection(s: &Settings, key: Option<&[u8]>) -> Result<redis::Connection, String> {
    let mut why = String::new();
    for url in s.urls() {
        let attempt = connect_blocking(url, s.timeout).and_then(|mut conn| match (s.cluster, key) {
            (true, Some(key)) => owner_of(url, &mut conn, key, s.timeout),
            _ => Ok(conn),
        });
        match attempt {
            Ok(conn) => return Ok(conn),
            Err(e) => why = format!("{}: {}", net::mask_password(url), said(e, s.timeout)),
        }
    }
    Err(why)
}

/// A connection to the primary that serves `key`'s slot, asked of the node behind
/// `conn` (reached at `url`, whose credentials the new connection reuses).
fn owner_of(
    url: &str,
    conn: &mut redis::Connection,
    key: &[u8],
    timeout: Duration,
) -> redis::RedisResult<redis::Connection> {
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(conn)?;
    let slots: Vec<Value> = redis::cmd("CLUSTER").arg("SLOTS").query(conn)?;
    // Each entry: start, end, then the primary as [host, port, id, ...], then replicas.
    for entry in &slots {
        if let Value::Array(parts) = entry
            && let [Value::Int(start), Value::Int(end), Value::Array(primary), ..] = parts.as_slice()
            && (*start..=*end).contains(&slot)
            && let [Value::BulkString(host), Value::Int(port), ..] = primary.as_slice()
        {
            let addr = ConnectionAddr::Tcp(String::from_utf8_lossy(host).into_owned(), *port as u16);
            let info = Client::open(url)?.get_connection_info().clone().set_addr(addr);
            let owner = Client::open(info)?.get_connection_with_timeout(timeout)?;
            owner.set_read_timeout(Some(timeout))?;
            owner.set_write_timeout(Some(timeout))?;
            return Ok(owner);
        }
    }
    Err(RedisError::from((
        redis::ErrorKind::Client,
        "no primary serves the slot",
        format!("slot {slot} of {}", String::from_utf8_lossy(key)),
    )))
}

/// A blocking call's error in words: a read that timed out says so.
fn said(e: RedisError, timeout: Duration) -> String {
    match e.is_timeout() {
        true => format!("no reply within the timeout of {timeout:?}"),
        false => e.to_string(),
    }
}

/// "engine NAME: WHAT: ERROR".
fn admin_err(s: &Settings, what: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::other(format!("engine {}: {what}: {e}", s.engine()))
}

/// A store's key prefix and index: `NS:` and `NS`; in a cluster the hash tag `{NS}:`
/// and `{NS}`, so the keys and the index share one slot.
fn names(s: &Settings, name: &str) -> (Vec<u8>, Vec<u8>) {
    let index = match s.cluster {
        true => format!("{{{name}}}"),
        false => name.to_string(),
    };
    (format!("{index}:").into_bytes(), index.into_bytes())
}

/// Deletes every key of namespace `name` and its index.
fn remove(knobs: &KnobTable<Settings>, o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = knobs.parse(o)?;
    let (prefix, index) = names(&s, name);
    let what = format!("removing key prefix {name}: at {}", net::mask_password(&s.url));
    let mut conn = admin_connection(&s, Some(&index)).map_err(|e| admin_err(&s, &what, e))?;
    // SCAN's glob treats braces as plain characters.
    let mut pattern = prefix;
    pattern.push(b'*');
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query(&mut conn)
            .map_err(|e| admin_err(&s, &what, said(e, s.timeout)))?;
        if !keys.is_empty() {
            redis::cmd("UNLINK")
                .arg(&keys)
                .exec(&mut conn)
                .map_err(|e| admin_err(&s, &what, said(e, s.timeout)))?;
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
    redis::cmd("UNLINK")
        .arg(index)
        .exec(&mut conn)
        .map_err(|e| admin_err(&s, &what, said(e, s.timeout)))
}

/// Appends under the cap and keeps the index: KEYS[1] the key, KEYS[2] the index (when
/// there is one); ARGV[1] the suffix, ARGV[2] the cap (-1: none), ARGV[3] the member.
const APPEND_LUA: &str = r"
local cap = tonumber(ARGV[2])
if cap >= 0 and redis.call('STRLEN', KEYS[1]) + string.len(ARGV[1]) > cap then return 0 end
redis.call('APPEND', KEYS[1], ARGV[1])
if KEYS[2] then redis.call('ZADD', KEYS[2], 0, ARGV[3]) end
return 1";

/// Rows of a range: KEYS[1] the index; ARGV[1] '[lo', ARGV[2] '(hi', ARGV[3] the limit
/// (-1: none), ARGV[4] the prefix. Returns key, value, key, value...
const RANGE_LUA: &str = r"
local ks = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, ARGV[3])
local out = {}
for _, k in ipairs(ks) do
  local v = redis.call('GET', ARGV[4] .. k)
  if v then out[#out + 1] = k; out[#out + 1] = v end
end
return out";

/// Deletes a range: KEYS[1] the index; ARGV[1] '[lo', ARGV[2] '(hi', ARGV[3] the prefix.
const DELETE_RANGE_LUA: &str = r"
local ks = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2])
for i = 1, #ks, 1000 do
  local batch = {}
  for j = i, math.min(i + 999, #ks) do batch[#batch + 1] = ARGV[3] .. ks[j] end
  redis.call('DEL', unpack(batch))
end
redis.call('ZREMRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2])
return #ks";

/// What every session of one store shares.
struct Shared {
    settings: Settings,
    client: Clients,
    /// `NS:` (`{NS}:` in a cluster), put before every key.
    prefix: Vec<u8>,
    /// `NS` (`{NS}`): the sorted set of keys (with `index=zset`).
    index: Vec<u8>,
    cap: Option<u64>,
    append: Script,
    range: Script,
    delete_range: Script,
    links: Arc<LinkStats>,
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    open_with(&KNOBS, req)
}

fn open_cluster(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    open_with(&CLUSTER_KNOBS, req)
}

fn open_with(knobs: &KnobTable<Settings>, req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let settings = knobs.parse(req.options)?;
    let name = req.namespace(settings.engine())?;
    let client = match settings.cluster {
        true => ClusterClient::builder(settings.urls())
            // kvmark bounds each operation itself (the timeout knob).
            .connection_timeout(settings.timeout)
            .response_timeout(settings.timeout)
            .build()
            .map(|c| Clients::Cluster(Box::new(c))),
        false => Client::open(settings.url.as_str()).map(Clients::Single),
    }
    .map_err(|e| admin_err(&settings, "url", e))?;
    let (prefix, index) = names(&settings, name);
    // The namespace needs no creating: connecting checks the server answers.
    let admin = admin_connection(&settings, Some(&index)).map_err(|e| {
        admin_err(
            &settings,
            &format!("cannot connect to {}", net::mask_password(&settings.url)),
            e,
        )
    })?;
    Ok(Box::new(RedisStore {
        shared: Arc::new(Shared {
            settings,
            client,
            prefix,
            index,
            cap: req.max_value_bytes,
            append: Script::new(APPEND_LUA),
            range: Script::new(RANGE_LUA),
            delete_range: Script::new(DELETE_RANGE_LUA),
            links: Arc::default(),
        }),
        admin: Mutex::new(Some(admin)),
    }))
}

/// The client sessions connect through.
enum Clients {
    Single(Client),
    /// Boxed: the cluster client is twice the size of the other.
    Cluster(Box<ClusterClient>),
}

struct RedisStore {
    shared: Arc<Shared>,
    /// The sampler's connection for INFO; None after it failed, until it reconnects.
    admin: Mutex<Option<redis::Connection>>,
}

/// The INFO fields reported in the timeline.
const INFO_FIELDS: &[&str] = &[
    "instantaneous_ops_per_sec",
    "total_commands_processed",
    "used_memory",
    "keyspace_hits",
    "keyspace_misses",
    "evicted_keys",
    "connected_clients",
];

impl Store for RedisStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        match self.shared.settings.cluster {
            true => self.session_of::<true>(None),
            false => self.session_of::<false>(None),
        }
    }

    fn pipelined_session(&self, group: &Pipeline) -> EngineResult<Box<dyn Session>> {
        match self.shared.settings.cluster {
            true => Err(EngineError::other(format!(
                "engine {CLUSTER_ENGINE}: cannot pipeline requests yet; run it with --pipeline 1"
            ))),
            false => self.session_of::<false>(Some(group.shared(Group::default))),
        }
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut admin) = self.admin.lock() {
            if admin.is_none() {
                *admin = admin_connection(&self.shared.settings, Some(&self.shared.index)).ok();
            }
            let info = admin
                .as_mut()
                .map(|c| redis::cmd("INFO").query::<String>(c))
                .transpose();
            match info {
                Ok(Some(info)) => {
                    for line in info.lines() {
                        if let Some((k, v)) = line.split_once(':')
                            && INFO_FIELDS.contains(&k)
                            && let Ok(v) = v.trim().parse::<f64>()
                        {
                            out.push((k.to_string(), v));
                        }
                    }
                }
                Ok(None) => {}
                Err(_) => *admin = None,
            }
        }
        self.shared.links.report(&mut out);
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        super::unshare(self.shared.settings.engine(), self.shared).map(drop)
    }
}

impl RedisStore {
    fn session_of<const CLUSTER: bool>(&self, group: Option<Arc<Group>>) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        let connector = RedisConnector::<CLUSTER> {
            shared: s.clone(),
            group,
        };
        Ok(Box::new(RedisSession {
            link: Link::open(connector, s.settings.timeout, s.links.clone())?,
            shared: s.clone(),
            cmd: Cmd::new(),
            key: Vec::new(),
        }))
    }
}

/// The engine's name, by mode.
const fn engine_name(cluster: bool) -> &'static str {
    if cluster { CLUSTER_ENGINE } else { ENGINE }
}

/// One session's connection: to the server (a pipe, shared by a pipeline group), or
/// to the cluster (the crate's cluster connection routes each command by its key's
/// slot).
enum Conn {
    /// The pipe and the database the URL selects.
    Piped(PipeRef, i64),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Sends one command and waits for its reply (unboxed: the path of every verb).
    async fn command(&mut self, cmd: &Cmd) -> Result<Value, RedisError> {
        match self {
            Conn::Piped(p, _) => p.command(cmd).await,
            Conn::Cluster(c) => c.req_packed_command(cmd).await,
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.command(cmd))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Piped(p, _) => Box::pin(p.commands(pipeline, offset, count)),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Piped(_, db) => *db,
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Connects a session, to the server or to the cluster (`CLUSTER`, which also names
/// the engine in messages).
struct RedisConnector<const CLUSTER: bool> {
    shared: Arc<Shared>,
    /// The pipeline group whose connection the session shares, if any.
    group: Option<Arc<Group>>,
}

impl<const CLUSTER: bool> Connector for RedisConnector<CLUSTER> {
    type Conn = Conn;
    type Error = RedisError;
    const ENGINE: &'static str = engine_name(CLUSTER);

    fn address(&self) -> String {
        net::mask_password(&self.shared.settings.url).into_owned()
    }

    async fn connect(&self) -> Result<Conn, RedisError> {
        match &self.shared.client {
            Clients::Single(client) => {
                let info = client.get_connection_info();
                let pipe = PipeRef::connect(self.group.as_deref(), info).await?;
                Ok(Conn::Piped(pipe, info.redis_settings().db()))
            }
            Clients::Cluster(client) => Ok(Conn::Cluster(client.get_async_connection().await?)),
        }
    }

    fn fault(&self, _: &Conn, e: &RedisError) -> Fault {
        if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() {
            Fault::Broken
        } else if matches!(
            e.kind(),
            redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading | redis::ServerErrorKind::TryAgain)
        ) {
            Fault::Busy
        } else {
            Fault::Refused
        }
    }
}

struct RedisSession<const CLUSTER: bool> {
    link: Link<RedisConnector<CLUSTER>>,
    shared: Arc<Shared>,
    /// Reused for the single-key commands.
    cmd: Cmd,
    /// Scratch for one prefixed key.
    key: Vec<u8>,
}

/// A reply that is not what the command returns.
fn unexpected(engine: &str, op: &str, v: &Value) -> EngineError {
    EngineError::other(format!("engine {engine}: {op}: unexpected reply {v:?}"))
}

impl<const CLUSTER: bool> RedisSession<CLUSTER> {
    const NAME: &str = engine_name(CLUSTER);

    /// True when the writes with a lean form take it: a single server without the
    /// index (see `lean.rs`; reads take it on any single server).
    fn lean(&self) -> bool {
        !CLUSTER && !self.shared.settings.index
    }

    /// `prefix + key` in the scratch buffer.
    fn prefixed(&mut self, key: &[u8]) -> &[u8] {
        self.key.clear();
        self.key.extend_from_slice(&self.shared.prefix);
        self.key.extend_from_slice(key);
        &self.key
    }

    /// Sends the command in `self.cmd`.
    fn send(&mut self, op: &str) -> EngineResult<Value> {
        let cmd = &self.cmd;
        self.link.run(op, async |_, c| c.command(cmd).await)
    }

    /// Sends `pipe` (MULTI/EXEC when it is atomic).
    fn send_pipe(&mut self, op: &str, pipe: &redis::Pipeline) -> EngineResult<Value> {
        self.link.run(op, async |_, c| pipe.query_async::<Value>(c).await)
    }

    /// Runs `inv`.
    fn invoke(&mut self, op: &str, inv: &redis::ScriptInvocation<'_>) -> EngineResult<Value> {
        self.link.run(op, async |_, c| inv.invoke_async::<Value>(c).await)
    }

    /// Fails at once unless the store keeps the ordered index.
    fn need_index(&self, op: &str) -> EngineResult<()> {
        match self.shared.settings.index {
            true => Ok(()),
            false => Err(EngineError::other(format!(
                "engine {}: {op} needs the ordered key index, which Redis does not keep by itself: \
                 set index=zset (--engine-opt {}.index=zset)",
                Self::NAME,
                Self::NAME
            ))),
        }
    }

    /// ZRANGEBYLEX bounds for `lo <= key < hi`.
    fn bounds(lo: &[u8], hi: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut l = Vec::with_capacity(lo.len() + 1);
        l.push(b'[');
        l.extend_from_slice(lo);
        let mut h = Vec::with_capacity(hi.len() + 1);
        h.push(b'(');
        h.extend_from_slice(hi);
        (l, h)
    }

    /// Rows `lo <= key < hi`, at most `limit` (0: all), as the script returns them.
    fn rows(&mut self, op: &str, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<Vec<Value>> {
        self.need_index(op)?;
        if lo >= hi {
            return Ok(Vec::new());
        }
        let (l, h) = Self::bounds(lo, hi);
        let limit: i64 = if limit == 0 { -1 } else { limit as i64 };
        let shared = self.shared.clone();
        let mut inv = shared.range.prepare_invoke();
        inv.key(&shared.index[..])
            .arg(l)
            .arg(h)
            .arg(limit)
            .arg(&shared.prefix[..]);
        match self.invoke(op, &inv)? {
            Value::Array(items) if items.len() % 2 == 0 => Ok(items),
            other => Err(unexpected(Self::NAME, op, &other)),
        }
    }
}

/// The bytes of a bulk string reply.
fn bulk<'v>(engine: &str, op: &str, v: &'v Value) -> EngineResult<&'v [u8]> {
    match v {
        Value::BulkString(b) => Ok(b),
        other => Err(unexpected(engine, op, other)),
    }
}

impl<const CLUSTER: bool> Session for RedisSession<CLUSTER> {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        if self.lean() {
            return self.lean_put(key, val);
        }
        if self.shared.settings.index {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("SET")
                .arg(self.prefixed(key))
                .arg(val)
                .ignore()
                .cmd("ZADD")
                .arg(&self.shared.index[..])
                .arg(0)
                .arg(key)
                .ignore();
            return self.send_pipe("put", &pipe).map(drop);
        }
        self.cmd.clear();
        self.cmd.arg("SET");
        self.key.clear();
        self.key.extend_from_slice(&self.shared.prefix);
        self.key.extend_from_slice(key);
        self.cmd.arg(&self.key[..]).arg(val);
        match self.send("put")? {
            Value::Okay => Ok(()),
            other => Err(unexpected(Self::NAME, "put", &other)),
        }
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        if !CLUSTER {
            return self.lean_get(key, out);
        }
        self.cmd.clear();
        self.cmd.arg("GET");
        self.key.clear();
        self.key.extend_from_slice(&self.shared.prefix);
        self.key.extend_from_slice(key);
        self.cmd.arg(&self.key[..]);
        match self.send("get")? {
            Value::BulkString(v) => {
                out.set(&v);
                Ok(true)
            }
            Value::Nil => Ok(false),
            other => Err(unexpected(Self::NAME, "get", &other)),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        if self.lean() {
            return self.lean_del(key);
        }
        let reply = if self.shared.settings.index {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("DEL")
                .arg(self.prefixed(key))
                .cmd("ZREM")
                .arg(&self.shared.index[..])
                .arg(key)
                .ignore();
            match self.send_pipe("del", &pipe)? {
                Value::Array(mut v) if v.len() == 1 => v.pop().unwrap_or(Value::Nil),
                other => return Err(unexpected(Self::NAME, "del", &other)),
            }
        } else {
            self.cmd.clear();
            self.cmd.arg("DEL");
            self.key.clear();
            self.key.extend_from_slice(&self.shared.prefix);
            self.key.extend_from_slice(key);
            self.cmd.arg(&self.key[..]);
            self.send("del")?
        };
        match reply {
            Value::Int(n) => Ok(if n > 0 { Existed::Yes } else { Existed::No }),
            other => Err(unexpected(Self::NAME, "del", &other)),
        }
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        let items = self.rows("scan", lo, hi, limit)?;
        let mut n = 0;
        for pair in items.chunks_exact(2) {
            n += 1;
            if f(bulk(Self::NAME, "scan", &pair[0])?, bulk(Self::NAME, "scan", &pair[1])?) {
                break;
            }
        }
        Ok(n)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        let items = self.rows("range", lo, hi, limit)?;
        for pair in items.chunks_exact(2) {
            out.push(
                bulk(Self::NAME, "range", &pair[0])?,
                bulk(Self::NAME, "range", &pair[1])?,
            );
        }
        Ok(())
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        if !CLUSTER {
            return self.lean_mget(keys, out);
        }
        self.cmd.clear();
        self.cmd.arg("MGET");
        for key in keys {
            self.key.clear();
            self.key.extend_from_slice(&self.shared.prefix);
            self.key.extend_from_slice(key);
            self.cmd.arg(&self.key[..]);
        }
        match self.send("mget")? {
            Value::Array(values) if values.len() == keys.len() => {
                for v in &values {
                    match v {
                        Value::BulkString(b) => out.push_hit(b),
                        Value::Nil => out.push_miss(),
                        other => return Err(unexpected(Self::NAME, "mget", other)),
                    }
                }
                Ok(())
            }
            other => Err(unexpected(Self::NAME, "mget", &other)),
        }
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        if self.lean() {
            return self.lean_mput(pairs);
        }
        let mut mset = Cmd::new();
        mset.arg("MSET");
        for (k, v) in pairs {
            mset.arg(self.prefixed(k)).arg(*v);
        }
        if !self.shared.settings.index {
            self.cmd = mset;
            return self.send("mput").map(drop);
        }
        let mut zadd = Cmd::new();
        zadd.arg("ZADD").arg(&self.shared.index[..]);
        for (k, _) in pairs {
            zadd.arg(0).arg(*k);
        }
        let mut pipe = redis::pipe();
        pipe.atomic().add_command(mset).ignore().add_command(zadd).ignore();
        self.send_pipe("mput", &pipe).map(drop)
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        if self.lean() {
            return self.lean_mdel(keys).map(Some);
        }
        let mut del = Cmd::new();
        del.arg("DEL");
        for k in keys {
            del.arg(self.prefixed(k));
        }
        let reply = if self.shared.settings.index {
            let mut zrem = Cmd::new();
            zrem.arg("ZREM").arg(&self.shared.index[..]);
            for k in keys {
                zrem.arg(*k);
            }
            let mut pipe = redis::pipe();
            pipe.atomic().add_command(del).add_command(zrem).ignore();
            match self.send_pipe("mdel", &pipe)? {
                Value::Array(mut v) if v.len() == 1 => v.pop().unwrap_or(Value::Nil),
                other => return Err(unexpected(Self::NAME, "mdel", &other)),
            }
        } else {
            self.cmd = del;
            self.send("mdel")?
        };
        match reply {
            Value::Int(n) => Ok(Some(n.max(0) as usize)),
            other => Err(unexpected(Self::NAME, "mdel", &other)),
        }
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let cap: i64 = self.shared.cap.map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX));
        let shared = self.shared.clone();
        let mut inv = shared.append.prepare_invoke();
        inv.key(self.prefixed(key));
        if shared.settings.index {
            inv.key(&shared.index[..]);
        }
        inv.arg(suffix).arg(cap).arg(key);
        match self.invoke("append", &inv)? {
            Value::Int(1) => Ok(Appended::Yes),
            Value::Int(0) => Ok(Appended::Skipped),
            other => Err(unexpected(Self::NAME, "append", &other)),
        }
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        self.need_index("delete_range")?;
        if lo >= hi {
            return Ok(());
        }
        let (l, h) = Self::bounds(lo, hi);
        let shared = self.shared.clone();
        let mut inv = shared.delete_range.prepare_invoke();
        inv.key(&shared.index[..]).arg(l).arg(h).arg(&shared.prefix[..]);
        self.invoke("delete_range", &inv).map(drop)
    }
}

fn version() -> String {
    format!(
        "{} (client; the server's version is in its INFO)",
        super::versions::crate_version("redis")
    )
}
