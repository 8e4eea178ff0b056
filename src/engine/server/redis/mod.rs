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
//! the crate's command and value types (`session.rs`). Opening, removing, probing and
//! statistics use the crate's blocking connection (`admin.rs`); the options are in
//! `knobs.rs`.
//!
//! `redis-cluster` is the same engine against a Redis Cluster: `url` lists seed nodes
//! (comma-separated) and each session routes every request to the primary serving
//! its key's slot, on pipes of its own (`cluster.rs`: the slot map, MOVED and ASK
//! followed and counted). Where a store's keys live is its `layout`:
//! - `spread` (the default without the index): keys `NS:KEY` hash over every slot, so
//!   a store is served by every primary, as memtier's and redis-benchmark's cluster
//!   modes load it. A batch is split by slot (one command per key, each primary's
//!   part in flight together), so it is not atomic; ranges cannot be kept in order
//!   across primaries, so the ordered verbs are refused.
//! - `slot` (the default with `index=zset`): the namespace is a hash tag, keys
//!   `{NS}:KEY` and the index `{NS}` in one slot, so the MULTI/EXEC writes and the
//!   scripts touch both and every verb keeps its meaning (atomic batches, ordered
//!   ranges); the store is served by one primary.
//!
//! Removing a store scans every primary; the timeline's INFO fields are summed over
//! the primaries.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Client, Cmd, ConnectionInfo, IntoConnectionInfo, RedisError, RedisFuture, Script, Value};

use self::admin::{admin_connection, admin_err, names, primary_connections, probe, remove};
use self::cluster::{ClusterGroup, Nodes, Redirects, key_slot};
use self::knobs::{CLUSTER_KNOBS, KNOBS, settings_or_default, start_cluster, start_single};
use self::pipe::{Group, PipeRef};
use super::net::{self, Connector, Fault, Link, LinkStats};
use super::tls::{self, HasTls, TlsFiles};
use crate::engine::{
    AppendMethod, EngineError, EngineInfo, EngineResult, KnobTable, OpenRequest, Pipeline, ServerKind, Session,
    StorageKind, Store,
};

mod admin;
mod cluster;
mod knobs;
mod lean;
mod pipe;
// Public for benches/resp_codec.rs, which measures it against the redis-protocol crate.
pub mod resp;
mod session;

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

/// Registry entry of Redis Cluster: the same engine, its sessions routing each
/// request to its slot's primary.
pub static CLUSTER_INFO: EngineInfo = EngineInfo {
    name: CLUSTER_ENGINE,
    storage: StorageKind::Server(&CLUSTER_SERVER),
    description: "a Redis Cluster: keys route by slot, MOVED and ASK followed and counted; layout=spread (default) puts a store's keys in every slot, layout=slot (the default with index=zset) in one hash-tag slot, where ranges work and batches are atomic",
    // Under the default layout a batch is split by slot.
    atomic_batches: false,
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
    ordered: true,
};

static CLUSTER_SERVER: ServerKind = ServerKind {
    namespace: "key prefix over every slot (layout=spread) or a hash tag (layout=slot)",
    address: |o| net::mask_password(&settings_or_default(&CLUSTER_KNOBS, o, start_cluster).url).into_owned(),
    probe: |o| probe(&CLUSTER_KNOBS, o),
    remove: |o, name| remove(&CLUSTER_KNOBS, o, name),
    pipeline: true,
    ordered: true,
};

/// Where a cluster store's keys live (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Spread, or one slot with the index.
    Auto,
    Spread,
    Slot,
}

#[derive(Debug, Clone)]
struct Settings {
    /// The server's URL; for a cluster, its seed nodes' URLs, comma-separated.
    url: String,
    index: bool,
    timeout: Duration,
    cluster: bool,
    layout: Layout,
    /// The TLS knobs (used with `rediss://` URLs).
    tls: TlsFiles,
}

impl HasTls for Settings {
    fn tls_files(&mut self) -> &mut TlsFiles {
        &mut self.tls
    }
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
    /// `NS:` (`{NS}:` in a cluster's slot layout), put before every key.
    prefix: Vec<u8>,
    /// `NS` (`{NS}`): the sorted set of keys (with `index=zset`).
    index: Vec<u8>,
    /// The slot of the index (and, in the slot layout, of every key).
    index_slot: u16,
    cap: Option<u64>,
    append: Script,
    range: Script,
    delete_range: Script,
    links: Arc<LinkStats>,
    redirects: Arc<Redirects>,
    /// The TLS handshakes' configuration, for `rediss://` URLs.
    tls: Option<tokio_rustls::TlsConnector>,
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    open_with(&KNOBS, req)
}

fn open_cluster(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    open_with(&CLUSTER_KNOBS, req)
}

fn open_with(knobs: &KnobTable<Settings>, req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let settings = knobs.parse(req.options)?;
    settings.check()?;
    let tls = settings
        .tls_connector()
        .map_err(|why| EngineError::other(format!("engine {}: {why}", settings.engine())))?;
    let name = req.namespace(settings.engine())?;
    let client = match settings.cluster {
        true => settings
            .urls()
            .map(|u| u.into_connection_info())
            .collect::<Result<Vec<_>, _>>()
            .map(Clients::Cluster),
        false => admin::client(&settings, settings.url.as_str()).map(|c| Clients::Single(Box::new(c))),
    }
    .map_err(|e| admin_err(&settings, "url", e))?;
    let (prefix, index) = names(&settings, name);
    // The namespace needs no creating: connecting checks the server answers.
    let cannot = |e| {
        admin_err(
            &settings,
            &format!("cannot connect to {}", net::mask_password(&settings.url)),
            e,
        )
    };
    let admin = match settings.cluster {
        true => primary_connections(&settings),
        false => admin_connection(&settings, None).map(|c| vec![c]),
    }
    .map_err(cannot)?;
    Ok(Box::new(RedisStore {
        shared: Arc::new(Shared {
            index_slot: key_slot(&index, b""),
            settings,
            client,
            prefix,
            index,
            cap: req.max_value_bytes,
            append: Script::new(APPEND_LUA),
            range: Script::new(RANGE_LUA),
            delete_range: Script::new(DELETE_RANGE_LUA),
            links: Arc::default(),
            redirects: Arc::default(),
            tls,
        }),
        admin: Mutex::new(admin),
    }))
}

/// What sessions connect to.
enum Clients {
    Single(Box<Client>),
    /// The cluster's seed nodes.
    Cluster(Vec<ConnectionInfo>),
}

struct RedisStore {
    shared: Arc<Shared>,
    /// The sampler's connections for INFO (a cluster's primaries); empty after one
    /// failed, until they are opened again.
    admin: Mutex<Vec<redis::Connection>>,
}

/// The INFO fields reported in the timeline (summed over a cluster's primaries).
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
            true => self.session_of::<true>(Groups::None),
            false => self.session_of::<false>(Groups::None),
        }
    }

    fn pipelined_session(&self, group: &Pipeline) -> EngineResult<Box<dyn Session>> {
        match self.shared.settings.cluster {
            true => self.session_of::<true>(Groups::Cluster(group.shared(ClusterGroup::default))),
            false => self.session_of::<false>(Groups::Single(group.shared(Group::default))),
        }
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut admin) = self.admin.lock() {
            let s = &self.shared.settings;
            if admin.is_empty() {
                *admin = match s.cluster {
                    true => primary_connections(s).unwrap_or_default(),
                    false => admin_connection(s, None).map(|c| vec![c]).unwrap_or_default(),
                };
            }
            let mut sums = [0.0; INFO_FIELDS.len()];
            let infos: redis::RedisResult<Vec<String>> = admin
                .iter_mut()
                .map(|c| redis::cmd("INFO").query::<String>(c))
                .collect();
            match infos {
                Ok(infos) if !infos.is_empty() => {
                    for line in infos.iter().flat_map(|info| info.lines()) {
                        if let Some((k, v)) = line.split_once(':')
                            && let Some(i) = INFO_FIELDS.iter().position(|f| *f == k)
                            && let Ok(v) = v.trim().parse::<f64>()
                        {
                            sums[i] += v;
                        }
                    }
                    out.extend(INFO_FIELDS.iter().zip(sums).map(|(k, v)| (k.to_string(), v)));
                }
                Ok(_) => {}
                Err(_) => admin.clear(),
            }
        }
        self.shared.links.report(&mut out);
        if self.shared.settings.cluster {
            self.shared.redirects.report(&mut out);
        }
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        crate::engine::unshare(self.shared.settings.engine(), self.shared).map(drop)
    }
}

/// The pipeline group a session's connections belong to.
enum Groups {
    None,
    Single(Arc<Group>),
    Cluster(Arc<ClusterGroup>),
}

impl RedisStore {
    fn session_of<const CLUSTER: bool>(&self, groups: Groups) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        let connector = RedisConnector::<CLUSTER> {
            shared: s.clone(),
            groups,
        };
        Ok(Box::new(RedisSession {
            link: Link::open(connector, s.settings.timeout, s.links.clone())?,
            shared: s.clone(),
            key: Vec::new(),
            held: Vec::new(),
            spans: Vec::new(),
        }))
    }
}

/// The engine's name, by mode.
const fn engine_name(cluster: bool) -> &'static str {
    if cluster { CLUSTER_ENGINE } else { ENGINE }
}

/// One session's connection: to the server (a pipe, shared by a pipeline group), or
/// to the cluster's primaries (a pipe to each, routed by slot).
enum Conn {
    /// The pipe and the database the URL selects.
    Piped(PipeRef, i64),
    /// The primaries, and the slot the crate's commands go to (set before each).
    Cluster(Box<Nodes>, u16),
}

impl Conn {
    /// Sends one command and waits for its reply (unboxed: the path of every verb).
    async fn command(&mut self, cmd: &Cmd) -> Result<Value, RedisError> {
        match self {
            Conn::Piped(p, _) => p.command(false, cmd).await,
            Conn::Cluster(nodes, slot) => nodes.command(*slot, cmd).await,
        }
    }

    /// Routes the crate's commands that follow to `slot` (a cluster; a single server
    /// has one place for all).
    fn route(&mut self, to: u16) {
        if let Conn::Cluster(_, slot) = self {
            *slot = to;
        }
    }

    /// Sends one request on `slot` (`frames` replies, written by `encode`) and
    /// returns its reply frames; a cluster's redirections are followed.
    async fn exchange(&mut self, slot: u16, frames: usize, encode: impl Fn(&mut Vec<u8>)) -> Result<&[u8], RedisError> {
        match self {
            Conn::Piped(p, _) => {
                p.send(frames, encode)?;
                p.reply().await?;
                p.frames()
            }
            Conn::Cluster(nodes, _) => nodes.exchange(slot, frames, encode).await,
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
            Conn::Piped(p, _) => Box::pin(p.commands(false, pipeline, offset, count)),
            Conn::Cluster(nodes, slot) => Box::pin(nodes.commands(*slot, pipeline, offset, count)),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Piped(_, db) => *db,
            Conn::Cluster(..) => 0,
        }
    }
}

/// Connects a session, to the server or to the cluster (`CLUSTER`, which also names
/// the engine in messages).
struct RedisConnector<const CLUSTER: bool> {
    shared: Arc<Shared>,
    /// The pipeline group whose connections the session shares, if any.
    groups: Groups,
}

impl<const CLUSTER: bool> Connector for RedisConnector<CLUSTER> {
    type Conn = Conn;
    type Error = RedisError;
    const ENGINE: &'static str = engine_name(CLUSTER);

    fn address(&self) -> String {
        net::mask_password(&self.shared.settings.url).into_owned()
    }

    async fn connect(&self) -> Result<Conn, RedisError> {
        match (&self.shared.client, &self.groups) {
            (Clients::Single(client), groups) => {
                let info = client.get_connection_info();
                let group = match groups {
                    Groups::Single(g) => Some(&**g),
                    _ => None,
                };
                let pipe = PipeRef::connect(group, info, self.shared.tls.as_ref()).await?;
                Ok(Conn::Piped(pipe, info.redis_settings().db()))
            }
            (Clients::Cluster(seeds), groups) => {
                let group = match groups {
                    Groups::Cluster(g) => Some(g.clone()),
                    _ => None,
                };
                let nodes =
                    Nodes::connect(seeds, group, self.shared.redirects.clone(), self.shared.tls.clone()).await?;
                Ok(Conn::Cluster(Box::new(nodes), self.shared.index_slot))
            }
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
    /// Scratch for one prefixed key.
    key: Vec<u8>,
    /// A spread batch's values as they come from the primaries, and where each key's
    /// is (None: a miss), before they go out in the batch's order.
    held: Vec<u8>,
    spans: Vec<Option<(usize, usize)>>,
}

fn version() -> String {
    format!(
        "{} (client; the server's version is in its INFO)",
        crate::engine::versions::crate_version("redis")
    )
}
