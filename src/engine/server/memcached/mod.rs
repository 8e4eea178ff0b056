//! `memcached`: a memcached server through its meta protocol (`mg`, `ms`, `md`),
//! spoken by kvmark itself on the pipes the Redis engine uses too (`server/pipe.rs`):
//! one connection per session, shared by the sessions of a pipeline group
//! (`--pipeline N`), requests encoded into the connection's buffer and replies read
//! in place (`meta.rs`).
//!
//! A store is a key prefix on the server: every key of a store named `NS` is written
//! as `NS:KEY`. Removing the store (after it closes, unless `--keep-data`) lists the
//! server's keys with `lru_crawler metadump all` and deletes those with the prefix.
//!
//! Verb mapping: `get` one `mg`, `put` one `ms`, `del` one `md` (`HD` or `NF` tells
//! whether the key existed); `mget`, `mput` and `mdel` send one request per key in
//! a single write and read the replies together (not atomic: each key's is);
//! `append` reads the value with its cas token and stores the longer value only if
//! the token still matches (an absent key is added only if still absent), retrying
//! when another writer got there first.
//!
//! memcached keeps no key order, so `range`, `scan` and `delete_range` are refused:
//! by the plan, for a workload that says it needs them, and by the session, naming
//! the engine, for one that cannot say before it runs (a Lua script).
//!
//! memcached is a cache: under memory pressure it evicts items (the `evictions`
//! statistic), which `--verify` then reports as lost writes. The private server of
//! scripts/servers gets 1 GiB.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use self::knobs::{KNOBS, settings_or_default};
use self::meta::{Condition, MAX_WIRE_KEY, Meta, Reply};
use super::net::{self, Connector, Fault, Link, LinkStats};
use super::pipe::{self, PipeRef, Stream};
use super::tls::{self, HasTls, TlsFiles};
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, OpenRequest, Pipeline,
    ReadBuf, ScanFn, ServerKind, Session, StorageKind, Store, Values, fits_cap,
};

mod knobs;
pub mod meta;

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Server(&SERVER),
    description: "a memcached server, meta protocol (mg/ms/md) on kvmark's own pipes: point verbs and batches on a key prefix; no key order, so no range, scan or delete_range",
    append: AppendMethod::CompareAndSwap,
    del_reports_existence: true,
    atomic_batches: false,
    limits: crate::engine::Limits {
        // The prefix makes every key non-empty on the wire.
        empty_keys: true,
        // memcached takes 250 bytes of key on the wire, base64 included: 187 bytes of
        // a binary key, less the store's prefix (at most 64 bytes).
        max_key_bytes: 120,
        // The default item size is 1 MiB, key and item header included.
        max_value_bytes: 1_000_000,
    },
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "memcached";
/// Where the default server address comes from.
pub const URL_ENV: &str = "KVMARK_MEMCACHED_URL";
const DEFAULT_URL: &str = "memcached://127.0.0.1:11211";

static SERVER: ServerKind = ServerKind {
    namespace: "key prefix",
    address: |o| settings_or_default(o).url,
    probe,
    remove,
    pipeline: true,
    ordered: false,
};

/// How many times an append reads and tries to store again when other writers keep
/// changing the value, before it reports the key as busy (the harness retries).
const APPEND_TRIES: usize = 100;

#[derive(Debug, Clone)]
struct Settings {
    /// The URL as given.
    url: String,
    host: String,
    port: u16,
    /// True for `memcacheds://`.
    tls_on: bool,
    timeout: Duration,
    tls: TlsFiles,
}

impl HasTls for Settings {
    fn tls_files(&mut self) -> &mut TlsFiles {
        &mut self.tls
    }
}

/// What connecting needs: the settings and the TLS configuration made from them.
struct Server {
    settings: Settings,
    tls: Option<tokio_rustls::TlsConnector>,
}

impl Server {
    fn new(options: &EngineOptions) -> EngineResult<Arc<Server>> {
        let settings = KNOBS.parse(options)?;
        let tls = settings
            .tls_connector()
            .map_err(|why| EngineError::other(format!("engine {ENGINE}: {why}")))?;
        Ok(Arc::new(Server { settings, tls }))
    }

    /// A link of its own, for the work outside sessions (statistics, removing).
    fn admin_link(self: &Arc<Self>) -> EngineResult<Link<McConnector>> {
        let connector = McConnector {
            server: self.clone(),
            group: None,
        };
        Link::open(connector, self.settings.timeout, Arc::default())
    }
}

/// What every session of one store shares.
struct Shared {
    server: Arc<Server>,
    /// `NS:`, put before every key.
    prefix: Vec<u8>,
    cap: Option<u64>,
    links: Arc<LinkStats>,
}

impl Shared {
    /// True when the sessions speak TLS (`memcacheds://`).
    fn tls(&self) -> bool {
        self.server.tls.is_some()
    }
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let server = Server::new(req.options)?;
    let name = req.namespace(ENGINE)?;
    // The namespace needs no creating: connecting checks the server answers.
    let admin = server.admin_link()?;
    Ok(Box::new(McStore {
        shared: Arc::new(Shared {
            server,
            prefix: format!("{name}:").into_bytes(),
            cap: req.max_value_bytes,
            links: Arc::default(),
        }),
        admin: Mutex::new(Some(admin)),
    }))
}

struct McStore {
    shared: Arc<Shared>,
    /// The sampler's link for `stats`; None after it failed, until opened again.
    admin: Mutex<Option<Link<McConnector>>>,
}

/// The `stats` fields reported in the timeline.
const STATS_FIELDS: &[&str] = &[
    "curr_items",
    "bytes",
    "evictions",
    "get_hits",
    "get_misses",
    "cmd_get",
    "cmd_set",
    "curr_connections",
    "limit_maxbytes",
];

impl Store for McStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        self.session_in(None)
    }

    fn pipelined_session(&self, group: &Pipeline) -> EngineResult<Box<dyn Session>> {
        self.session_in(Some(group.shared(pipe::Group::<Meta>::default)))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut admin) = self.admin.lock() {
            if admin.is_none() {
                *admin = self.shared.server.admin_link().ok();
            }
            if let Some(link) = admin.as_mut() {
                match listing(link, "stats", b"stats\r\n") {
                    Ok(stats) => {
                        let mut values = [0.0; STATS_FIELDS.len()];
                        for (name, v) in meta::stat_fields(&stats) {
                            if let Some(i) = STATS_FIELDS.iter().position(|f| *f == name) {
                                values[i] = v;
                            }
                        }
                        out.extend(STATS_FIELDS.iter().zip(values).map(|(k, v)| (k.to_string(), v)));
                    }
                    Err(_) => *admin = None,
                }
            }
        }
        self.shared.links.report(&mut out);
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let McStore { shared, admin } = *self;
        drop(admin);
        crate::engine::unshare(ENGINE, shared).map(drop)
    }
}

impl McStore {
    fn session_in(&self, group: Option<Arc<pipe::Group<Meta>>>) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        let connector = McConnector {
            server: s.server.clone(),
            group,
        };
        Ok(Box::new(McSession {
            link: Link::open(connector, s.server.settings.timeout, s.links.clone())?,
            shared: s.clone(),
            scratch: Vec::new(),
            held: Vec::new(),
        }))
    }
}

/// Sends one request (`request`, whole) and returns its reply frame, copied: the
/// work outside sessions (`stats`, a metadump, a batch of deletes).
fn exchange(link: &mut Link<McConnector>, op: &str, frames: usize, request: &[u8]) -> EngineResult<Vec<u8>> {
    link.run(op, async |_, conn| {
        conn.send(frames, |w| w.extend_from_slice(request))?;
        conn.reply().await?;
        Ok(conn.frames()?.to_vec())
    })
}

/// A listing (`stats`, a metadump): Err unless the reply is one.
fn listing(link: &mut Link<McConnector>, op: &str, request: &[u8]) -> EngineResult<Vec<u8>> {
    let got = exchange(link, op, 1, request)?;
    if got.starts_with(b"STAT ") || got.starts_with(b"key=") || got == b"END\r\n" {
        return Ok(got);
    }
    Err(EngineError::other(format!(
        "engine {ENGINE}: {op}: the server answered {:?}",
        String::from_utf8_lossy(&got[..got.len().min(120)]).trim_end()
    )))
}

/// What can go wrong on a connection.
#[derive(Debug)]
enum McError {
    /// The connection failed or ended.
    Io(io::Error),
    /// The server refused the request (`SERVER_ERROR`: out of memory, too large); the
    /// connection carries on.
    Refused(String),
    /// A reply the request cannot have (`CLIENT_ERROR`, `ERROR`, a wrong kind): the
    /// connection may be out of step with its requests, so it is dropped.
    Unexpected(String),
    /// Other writers kept changing the key (an append's cas kept failing).
    Busy(String),
}

impl std::fmt::Display for McError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McError::Io(e) => e.fmt(f),
            McError::Refused(why) | McError::Unexpected(why) | McError::Busy(why) => f.write_str(why),
        }
    }
}

impl From<io::Error> for McError {
    fn from(e: io::Error) -> Self {
        McError::Io(e)
    }
}

/// The error for reply `got` to operation `op`.
fn unexpected(op: &str, got: &Reply<'_>) -> McError {
    match got {
        Reply::Other(line) if line.starts_with(b"SERVER_ERROR") => {
            McError::Refused(format!("{op}: {}", String::from_utf8_lossy(line)))
        }
        Reply::Other(line) => {
            McError::Unexpected(format!("{op}: unexpected reply {:?}", String::from_utf8_lossy(line)))
        }
        other => McError::Unexpected(format!("{op}: unexpected reply {other:?}")),
    }
}

/// Connects a session (or the work outside sessions) to the server.
struct McConnector {
    server: Arc<Server>,
    /// The pipeline group whose connection the session shares, if any.
    group: Option<Arc<pipe::Group<Meta>>>,
}

impl Connector for McConnector {
    type Conn = PipeRef<Meta>;
    type Error = McError;
    const ENGINE: &'static str = ENGINE;

    fn address(&self) -> String {
        self.server.settings.url.clone()
    }

    async fn connect(&self) -> Result<PipeRef<Meta>, McError> {
        let (me, make) = PipeRef::claim(self.group.as_deref())?;
        if make {
            let setup = me.setting_up();
            let s = &self.server.settings;
            let stream = match &self.server.tls {
                None => Stream::tcp(&s.host, s.port, true).await?,
                Some(connector) => {
                    let name = tls::server_name(&s.host).map_err(McError::Refused)?;
                    Stream::tls(connector, name, &s.host, s.port, true).await?
                }
            };
            me.attach(stream)?;
            // memcached needs no set-up: no authentication on the meta protocol's
            // text port, one keyspace.
            setup.finish()?;
        } else {
            me.joined().await?;
        }
        Ok(me)
    }

    fn fault(&self, _: &PipeRef<Meta>, e: &McError) -> Fault {
        match e {
            McError::Refused(_) => Fault::Refused,
            McError::Busy(_) => Fault::Busy,
            McError::Io(_) | McError::Unexpected(_) => Fault::Broken,
        }
    }
}

struct McSession {
    link: Link<McConnector>,
    shared: Arc<Shared>,
    /// Scratch for a key's base64 form.
    scratch: Vec<u8>,
    /// An append's value as it grows.
    held: Vec<u8>,
}

impl McSession {
    /// Refuses a key the server would not take, before anything is sent (a longer key
    /// would make the server read the request's value as a command).
    fn check_key(&self, op: &str, key: &[u8]) -> EngineResult<()> {
        let wire = meta::wire_key_len(&self.shared.prefix, key);
        if wire <= MAX_WIRE_KEY {
            return Ok(());
        }
        Err(EngineError::other(format!(
            "engine {ENGINE}: {op}: a key of {} bytes is {wire} bytes on the wire with the store's prefix \
             (base64 when not printable); memcached takes at most {MAX_WIRE_KEY}",
            key.len()
        )))
    }

    /// Refuses an ordered verb: memcached keeps no key order.
    fn unordered<T>(op: &str) -> EngineResult<T> {
        Err(EngineError::other(format!(
            "engine {ENGINE}: {op}: memcached keeps no key order, so range, scan and delete_range \
             are not available on it; use an ordered engine for this workload"
        )))
    }
}

impl Session for McSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.check_key("put", key)?;
        let (prefix, scratch, tls) = (&self.shared.prefix[..], &mut self.scratch, self.shared.tls());
        self.link.run("put", async |_, conn| {
            send_sets(conn, tls, 1, |w, _| {
                meta::ms(w, prefix, key, val, Condition::Always, scratch)
            })?;
            conn.reply().await?;
            match meta::reply(conn.frames()?) {
                Reply::Done => Ok(()),
                other => Err(unexpected("put", &other)),
            }
        })
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        self.check_key("get", key)?;
        let (prefix, scratch) = (&self.shared.prefix[..], &mut self.scratch);
        self.link.run("get", async |_, conn| {
            conn.send(1, |w| meta::mg(w, prefix, key, false, scratch))?;
            conn.reply().await?;
            match meta::reply(conn.frames()?) {
                Reply::Value(v, _) => {
                    out.set(v);
                    Ok(true)
                }
                Reply::Miss => Ok(false),
                other => Err(unexpected("get", &other)),
            }
        })
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.mdel(&[key]).map(|n| match n {
            Some(0) => Existed::No,
            _ => Existed::Yes,
        })
    }

    fn scan(&mut self, _: &[u8], _: &[u8], _: usize, _: &mut ScanFn<'_>) -> EngineResult<usize> {
        Self::unordered("scan")
    }

    fn range(&mut self, _: &[u8], _: &[u8], _: usize, _: &mut crate::engine::Rows) -> EngineResult<()> {
        Self::unordered("range")
    }

    fn delete_range(&mut self, _: &[u8], _: &[u8]) -> EngineResult<()> {
        Self::unordered("delete_range")
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        for key in keys {
            self.check_key("mget", key)?;
        }
        let (prefix, scratch) = (&self.shared.prefix[..], &mut self.scratch);
        self.link.run("mget", async |_, conn| {
            conn.send(keys.len(), |w| {
                for key in keys {
                    meta::mg(w, prefix, key, false, scratch);
                }
            })?;
            conn.reply().await?;
            let mut frames = conn.frames()?;
            for _ in keys {
                let len = match meta::frame_len(frames) {
                    Ok(Some(len)) => len,
                    _ => return Err(McError::Unexpected("mget: a reply cut short".into())),
                };
                match meta::reply(&frames[..len]) {
                    Reply::Value(v, _) => out.push_hit(v),
                    Reply::Miss => out.push_miss(),
                    other => return Err(unexpected("mget", &other)),
                }
                frames = &frames[len..];
            }
            Ok(())
        })
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        for (key, _) in pairs {
            self.check_key("mput", key)?;
        }
        let (prefix, scratch, tls) = (&self.shared.prefix[..], &mut self.scratch, self.shared.tls());
        self.link.run("mput", async |_, conn| {
            send_sets(conn, tls, pairs.len(), |w, i| {
                let (key, val) = pairs[i];
                meta::ms(w, prefix, key, val, Condition::Always, scratch)
            })?;
            conn.reply().await?;
            each_reply(conn.frames()?, pairs.len(), "mput", |r| match r {
                Reply::Done => Ok(()),
                other => Err(unexpected("mput", &other)),
            })
        })
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        let op = if keys.len() == 1 { "del" } else { "mdel" };
        for key in keys {
            self.check_key(op, key)?;
        }
        let (prefix, scratch) = (&self.shared.prefix[..], &mut self.scratch);
        self.link.run(op, async |_, conn| {
            conn.send(keys.len(), |w| {
                for key in keys {
                    meta::md(w, prefix, key, scratch);
                }
            })?;
            conn.reply().await?;
            let mut existed = 0;
            each_reply(conn.frames()?, keys.len(), op, |r| match r {
                Reply::Done => {
                    existed += 1;
                    Ok(())
                }
                Reply::NotFound => Ok(()),
                other => Err(unexpected(op, &other)),
            })?;
            Ok(Some(existed))
        })
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let cap = self.shared.cap;
        if !fits_cap(cap, 0, suffix.len()) {
            return Ok(Appended::Skipped);
        }
        self.check_key("append", key)?;
        let (prefix, scratch, held) = (&self.shared.prefix[..], &mut self.scratch, &mut self.held);
        let tls = self.shared.tls();
        self.link.run("append", async |_, conn| {
            for _ in 0..APPEND_TRIES {
                conn.send(1, |w| meta::mg(w, prefix, key, true, scratch))?;
                conn.reply().await?;
                held.clear();
                let when = match meta::reply(conn.frames()?) {
                    Reply::Value(v, Some(token)) => {
                        held.extend_from_slice(v);
                        Condition::IfCas(token)
                    }
                    Reply::Miss => Condition::IfAbsent,
                    other => return Err(unexpected("append", &other)),
                };
                if !fits_cap(cap, held.len(), suffix.len()) {
                    return Ok(Appended::Skipped);
                }
                held.extend_from_slice(suffix);
                send_sets(conn, tls, 1, |w, _| meta::ms(w, prefix, key, &held[..], when, scratch))?;
                conn.reply().await?;
                match meta::reply(conn.frames()?) {
                    Reply::Done => return Ok(Appended::Yes),
                    // Another writer changed, removed or added the key in between.
                    Reply::Exists | Reply::NotFound | Reply::NotStored => continue,
                    other => return Err(unexpected("append", &other)),
                }
            }
            Err(McError::Busy(format!(
                "append: the value changed under each of {APPEND_TRIES} tries"
            )))
        })
    }

    fn reconnect(&mut self) -> EngineResult<()> {
        self.link.reconnect()
    }
}

/// Sends `count` sets (`ms`), the i-th written by `encode(w, i)`: over TLS each ends a
/// record of its own (see [`PipeRef::send_sealed`]), else all go in one write.
fn send_sets(
    conn: &PipeRef<Meta>,
    tls: bool,
    count: usize,
    mut encode: impl FnMut(&mut Vec<u8>, usize),
) -> io::Result<()> {
    match tls {
        true => conn.send_sealed(count, count, encode),
        false => conn.send(count, |w| (0..count).for_each(|i| encode(w, i))),
    }
}

/// Checks each of the `count` reply frames of a batch with `check`.
fn each_reply(
    mut frames: &[u8],
    count: usize,
    op: &str,
    mut check: impl FnMut(Reply<'_>) -> Result<(), McError>,
) -> Result<(), McError> {
    for _ in 0..count {
        let len = match meta::frame_len(frames) {
            Ok(Some(len)) => len,
            _ => return Err(McError::Unexpected(format!("{op}: a reply cut short"))),
        };
        check(meta::reply(&frames[..len]))?;
        frames = &frames[len..];
    }
    Ok(())
}

/// How many deletes go in one request when a store is removed.
const REMOVE_BATCH: usize = 1000;

/// Deletes every key of namespace `name`, as a metadump lists them. The crawler
/// serves one listing at a time; a busy one is asked again for up to a few seconds.
fn remove(o: &EngineOptions, name: &str) -> EngineResult<()> {
    let server = Server::new(o)?;
    let what = format!("removing key prefix {name} at {}", server.settings.url);
    let fail = |e: EngineError| EngineError::other(format!("{what}: {e}"));
    let mut link = server.admin_link().map_err(fail)?;
    let prefix = format!("{name}:").into_bytes();
    let mut tries = 0;
    let dump = loop {
        match listing(&mut link, "metadump", b"lru_crawler metadump all\r\n") {
            Ok(dump) => break dump,
            Err(e) if e.message.contains("BUSY") && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => {
                return Err(fail(EngineError::other(format!(
                    "{e} (the keys are listed with lru_crawler metadump, which a server started with -X refuses)"
                ))));
            }
        }
    };
    let keys = meta::dumped_keys(&dump, &prefix);
    let mut scratch = Vec::new();
    for chunk in keys.chunks(REMOVE_BATCH) {
        let mut request = Vec::new();
        for key in chunk {
            // The dumped keys carry the prefix already.
            meta::md(&mut request, b"", key, &mut scratch);
        }
        let replies = exchange(&mut link, "remove", chunk.len(), &request).map_err(fail)?;
        each_reply(&replies, chunk.len(), "remove", |r| match r {
            Reply::Done | Reply::NotFound => Ok(()),
            other => Err(unexpected("remove", &other)),
        })
        .map_err(|e| fail(EngineError::other(e.to_string())))?;
    }
    Ok(())
}

fn probe(o: &EngineOptions) -> Result<(), String> {
    let server = Server::new(o).map_err(|e| e.message)?;
    let mut link = server.admin_link().map_err(|e| e.message)?;
    match exchange(&mut link, "probe", 1, b"mn\r\n").map_err(|e| e.message)? {
        reply if reply == b"MN\r\n" => Ok(()),
        other => Err(format!(
            "{} answered mn with {:?}: not a memcached with the meta protocol (1.6 or later)",
            net::mask_password(&server.settings.url),
            String::from_utf8_lossy(&other)
        )),
    }
}

fn version() -> String {
    "meta protocol, kvmark's own client (the server's version is in its stats)".to_string()
}
