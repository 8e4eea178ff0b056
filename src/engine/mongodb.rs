//! `mongodb`: a MongoDB server (or one that speaks its wire protocol, such as FerretDB)
//! through the official async driver, one client per session.
//!
//! A store is a collection, named by `fresh_namespace`, in the URL's database
//! (`kvmark` when the URL names none), created when the store opens and dropped after
//! it closes unless `--keep-data`. One document per key:
//!
//! ```text
//! { _id: "<the key in lowercase hex>", n: <value length>, v: [ BinData, ... ] }
//! ```
//!
//! **Keys.** MongoDB orders BinData by length first, then subtype, then bytes, so a
//! binary `_id` does not sort bytewise: a range over it would return the wrong keys.
//! Strings compare bytewise (without a collation), and lowercase hex keeps the
//! contract's unsigned bytewise order (each byte becomes two characters that sort as
//! it does; a key that is a prefix of another stays one). Its cost: keys travel and
//! sit in the `_id` index at twice their size, plus one encode per key sent and one
//! decode per key a range returns.
//!
//! **Values.** `v` is an array of BinData pieces whose concatenation is the value; `n`
//! is its length. `put` writes one piece. `append` is one single-document update,
//! `{$push: {v: SUFFIX}, $inc: {n: LEN}}`, upserting, with `n <= CAP - LEN` in its
//! filter for the value cap: kvmark reads nothing first and sends only the suffix.
//! MongoDB applies it atomically; FerretDB 1.24 does not (it reads the document, then
//! writes it back in a separate SQLite transaction, so concurrent appends to one key
//! lose some: 54 of 160 survived in the conformance test), hence
//! [`AppendMethod::ServerUpdate`], which promises no atomicity. (The aggregation
//! operator `$concat` takes strings only, so an update pipeline cannot concatenate
//! BinData.) Its cost: every document carries the array and `n` (about 16 bytes), and
//! a read of an appended value joins its pieces in the client. When the filter matches
//! nothing because the value is full, the upsert collides with the existing `_id`
//! (duplicate key); the append then repeats the update without upsert, and nothing
//! matched means Skipped.
//!
//! Verb mapping: `put` a replace with upsert; `get` a find by `_id`; `del` a delete
//! whose count tells whether the key existed; `range`/`scan` a find on
//! `{_id: {$gte, $lt}}` sorted by `_id` with a limit; `mget` one find with `$in`;
//! `mput` one unordered `insertMany`, then, for the keys that existed (duplicate key
//! errors), one `update` command of upserting replacements in batch order (not
//! atomic: MongoDB applies the statements one by one; a batch of new keys takes one
//! round trip, one with existing keys two); `mdel` one delete with `$in`;
//! `delete_range` one delete on the `_id` range. A duplicate key from concurrent
//! upserts of one new key is reported as busy (the harness retries and counts it).
//!
//! The driver's own retries are off (`retryReads`/`retryWrites`), so every fault is
//! kvmark's to count; its timeouts follow the `timeout` knob. Sessions wait through
//! [`inflight::block_on`](super::inflight::block_on); creating and dropping
//! collections, the probe and the server statistics use clients of their own, each
//! exchange within the timeout.
//!
//! FerretDB (what the tests run against, on its SQLite backend) pushes down only a
//! filter that is one `_id` equality: `get`, `put`, `del` use the primary key there,
//! while ranges, `$in` batches and `append` (its filter also names `n`) read the whole
//! collection. Its `serverStatus` has command counters and uptime but no opcounters,
//! connections, memory or cache figures; those appear when the server has them.

use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Bson, Document, RawArrayBuf, RawBinaryRef, RawBsonRef, RawDocument, RawDocumentBuf, doc};
use mongodb::bson::{cstr, rawdoc};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{ClientOptions, WriteConcern};
use mongodb::{Client, Collection};

use super::inflight::block_on;
use super::net::{self, Connector, Fault, Link, LinkStats};
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, KnobDef, KnobTable,
    OpenRequest, OptionError, ReadBuf, Rows, ScanFn, ServerKind, Session, StorageKind, Store, Values,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Server(&SERVER),
    description: "a MongoDB server or one speaking its protocol (official driver): a document per key, hex _id",
    append: AppendMethod::ServerUpdate,
    del_reports_existence: true,
    atomic_batches: false,
    // A document holds at most 16 MiB: the value, its key twice over in hex, and the
    // fields around them. Keys stay within what older servers index (1024 bytes of
    // index key) once written in hex.
    limits: crate::engine::Limits {
        empty_keys: true,
        max_key_bytes: 500,
        max_value_bytes: (16 << 20) - 8192,
    },
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "mongodb";
/// Where the default server address comes from.
pub const URL_ENV: &str = "KVMARK_MONGODB_URL";
const DEFAULT_URL: &str = "mongodb://127.0.0.1:27017";
/// The database when the URL names none.
const DEFAULT_DATABASE: &str = "kvmark";
/// The server's duplicate key error.
const DUPLICATE_KEY: i32 = 11000;
/// The collection exists already.
const NAMESPACE_EXISTS: i32 = 48;
/// "ns not found", from servers before 7.0 when a dropped collection did not exist.
const NAMESPACE_NOT_FOUND: i32 = 26;
/// What one `update` command of `mput` carries at most, below the 16 MiB command limit
/// (a larger batch is sent as several commands).
const MPUT_COMMAND_BYTES: usize = 8 << 20;

static SERVER: ServerKind = ServerKind {
    namespace: "collection",
    address: |o| net::mask_password(&KNOBS.parse(o).unwrap_or_else(|_| start()).url).into_owned(),
    probe: |o| {
        let s = KNOBS.parse(o).map_err(|e| e.message)?;
        admin(&s, "probe", async |_| Ok(())).map_err(|e| e.message)
    },
    remove,
    pipeline: false,
};

#[derive(Debug, Clone)]
struct Settings {
    url: String,
    journal: bool,
    timeout: Duration,
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

fn start() -> Settings {
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

static KNOBS: KnobTable<Settings> = KnobTable::new(
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

/// A driver error, shown with the server's code where there is one.
#[derive(Debug)]
struct MongoError(mongodb::error::Error);

impl std::fmt::Display for MongoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match code(&self.0) {
            Some(c) => write!(f, "{} (code {c})", self.0.kind),
            None => write!(f, "{}", self.0.kind),
        }
    }
}

impl From<mongodb::error::Error> for MongoError {
    fn from(e: mongodb::error::Error) -> Self {
        MongoError(e)
    }
}

/// The server's error code, if the server refused the operation.
fn code(e: &mongodb::error::Error) -> Option<i32> {
    match &*e.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

/// A connected client, checked with a ping, with the driver's retries off and its
/// waits bounded by the timeout (the caller bounds the whole by the timeout too).
async fn connect(s: &Settings) -> Result<Client, MongoError> {
    let mut o = ClientOptions::parse(&s.url).await?;
    o.connect_timeout = Some(s.timeout);
    o.server_selection_timeout = Some(s.timeout);
    // kvmark counts every fault; a driver retry would hide one inside a sample.
    o.retry_reads = Some(false);
    o.retry_writes = Some(false);
    o.app_name.get_or_insert_with(|| "kvmark".to_string());
    if s.journal {
        o.write_concern = Some(WriteConcern::builder().journal(true).build());
    }
    let client = Client::with_options(o)?;
    client.database("admin").run_command(doc! {"ping": 1}).await?;
    Ok(client)
}

/// The database collections go in: the URL's, else `kvmark`.
fn database(client: &Client) -> mongodb::Database {
    client
        .default_database()
        .unwrap_or_else(|| client.database(DEFAULT_DATABASE))
}

/// Runs `f` on a client of its own, for work outside sessions (creating and dropping
/// collections, the probe), all of it within the timeout.
fn admin<T>(
    s: &Settings,
    what: &str,
    f: impl AsyncFnOnce(&Client) -> Result<T, mongodb::error::Error>,
) -> EngineResult<T> {
    let url = net::mask_password(&s.url);
    let fail = |why: &dyn std::fmt::Display| EngineError::other(format!("engine {ENGINE}: {what} at {url}: {why}"));
    block_on(async {
        let work = async {
            let client = connect(s).await?;
            let out = f(&client).await.map_err(MongoError);
            // Ends the client's background tasks now, not when this thread's runtime
            // next runs.
            client.shutdown().immediate(true).await;
            out
        };
        match tokio::time::timeout(s.timeout, work).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(fail(&e)),
            Err(_) => Err(fail(&format_args!("no reply within the timeout of {:?}", s.timeout))),
        }
    })
}

fn remove(o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = KNOBS.parse(o)?;
    admin(&s, &format!("dropping collection {name}"), async |c| {
        match database(c).collection::<Document>(name).drop().await {
            Err(e) if code(&e) == Some(NAMESPACE_NOT_FOUND) => Ok(()),
            other => other,
        }
    })
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let name = req.namespace(ENGINE)?;
    let settings = KNOBS.parse(req.options)?;
    // A store opened again (its namespace kept) finds its collection there.
    admin(
        &settings,
        &format!("creating collection {name}"),
        async |c| match database(c).create_collection(name).await {
            Err(e) if code(&e) == Some(NAMESPACE_EXISTS) => Ok(()),
            other => other,
        },
    )?;
    let shared = Arc::new(Shared {
        settings,
        collection: name.to_string(),
        cap: req.max_value_bytes,
        links: Arc::default(),
    });
    let stats = Link::open(
        ClientConnector { shared: shared.clone() },
        shared.settings.timeout,
        Arc::default(),
    )
    .ok();
    Ok(Box::new(MongoStore {
        shared,
        stats: Mutex::new(stats),
    }))
}

struct Shared {
    settings: Settings,
    collection: String,
    cap: Option<u64>,
    links: Arc<LinkStats>,
}

struct MongoStore {
    shared: Arc<Shared>,
    /// The sampler's client (reconnecting on the sampler's thread, with backoff while
    /// the server is away); None if it could not connect at open.
    stats: Mutex<Option<Link<ClientConnector>>>,
}

/// `serverStatus` counters reported in the timeline when the server has them:
/// (path, timeline name). FerretDB has only the command counters and the uptime.
const SERVER_STATS: &[(&[&str], &str)] = &[
    (&["uptime"], "uptime"),
    (&["metrics", "commands", "find", "total"], "cmd.find"),
    (&["metrics", "commands", "insert", "total"], "cmd.insert"),
    (&["metrics", "commands", "update", "total"], "cmd.update"),
    (&["metrics", "commands", "delete", "total"], "cmd.delete"),
    (&["metrics", "commands", "getMore", "total"], "cmd.getMore"),
    (&["opcounters", "insert"], "opcounters.insert"),
    (&["opcounters", "query"], "opcounters.query"),
    (&["opcounters", "update"], "opcounters.update"),
    (&["opcounters", "delete"], "opcounters.delete"),
    (&["opcounters", "getmore"], "opcounters.getmore"),
    (&["connections", "current"], "connections"),
    (&["mem", "resident"], "mem_resident_mb"),
    (
        &["wiredTiger", "cache", "bytes currently in the cache"],
        "wt.cache_bytes",
    ),
    (&["wiredTiger", "cache", "pages read into cache"], "wt.pages_read"),
    (&["wiredTiger", "cache", "pages written from cache"], "wt.pages_written"),
];

/// A number at `path` in `doc`, whatever numeric type the server chose.
fn number_at(doc: &Document, path: &[&str]) -> Option<f64> {
    let (last, parents) = path.split_last()?;
    let mut d = doc;
    for p in parents {
        d = d.get_document(p).ok()?;
    }
    match d.get(last)? {
        Bson::Double(x) => Some(*x),
        Bson::Int32(x) => Some(f64::from(*x)),
        Bson::Int64(x) => Some(*x as f64),
        _ => None,
    }
}

/// The server's statistics and the collection's, as `Store::stats` reports them.
async fn server_stats(c: &Client, collection: &str) -> Result<Vec<(String, f64)>, mongodb::error::Error> {
    let mut out = Vec::new();
    let status = c.database("admin").run_raw_command(rawdoc! {"serverStatus": 1}).await?;
    for (path, name) in SERVER_STATS {
        if let Some(x) = number_at(&status, path) {
            out.push((name.to_string(), x));
        }
    }
    let coll = database(c).run_raw_command(rawdoc! {"collStats": collection}).await?;
    for (field, name) in [
        ("count", "documents"),
        ("size", "data_bytes"),
        ("storageSize", "storage_bytes"),
        ("totalIndexSize", "index_bytes"),
    ] {
        if let Some(x) = number_at(&coll, &[field]) {
            out.push((name.to_string(), x));
        }
    }
    Ok(out)
}

impl Store for MongoStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        Ok(Box::new(MongoSession {
            link: Link::open(
                ClientConnector { shared: s.clone() },
                s.settings.timeout,
                s.links.clone(),
            )?,
            cap: s.cap,
            hex: String::new(),
            joined: Vec::new(),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut link) = self.stats.lock()
            && let Some(link) = link.as_mut()
        {
            let collection = &self.shared.collection;
            if let Ok(server) = link.run("stats", async |_, c| {
                server_stats(&c.client, collection).await.map_err(MongoError)
            }) {
                out.extend(server);
            }
        }
        self.shared.links.report(&mut out);
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        drop(self.stats);
        super::unshare(ENGINE, self.shared).map(drop)
    }
}

/// One session's client and its handle on the store's collection.
struct Conn {
    client: Client,
    coll: Collection<RawDocumentBuf>,
    db: mongodb::Database,
}

struct ClientConnector {
    shared: Arc<Shared>,
}

impl Connector for ClientConnector {
    type Conn = Conn;
    type Error = MongoError;
    const ENGINE: &'static str = ENGINE;

    fn address(&self) -> String {
        net::mask_password(&self.shared.settings.url).into_owned()
    }

    async fn connect(&self) -> Result<Conn, MongoError> {
        let client = connect(&self.shared.settings).await?;
        let db = database(&client);
        Ok(Conn {
            coll: db.collection(&self.shared.collection),
            db,
            client,
        })
    }

    fn fault(&self, _: &Conn, e: &MongoError) -> Fault {
        match &*e.0.kind {
            ErrorKind::Io(_)
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::ServerSelection { .. }
            | ErrorKind::Shutdown
            | ErrorKind::InvalidResponse { .. } => Fault::Broken,
            _ if code(&e.0) == Some(DUPLICATE_KEY) => Fault::Busy,
            // WriteConflict, LockTimeout and the like: the server says try again.
            _ if e.0.contains_label("TransientTransactionError") || code(&e.0) == Some(112) => Fault::Busy,
            _ => Fault::Refused,
        }
    }
}

struct MongoSession {
    link: Link<ClientConnector>,
    /// The value cap of `append`.
    cap: Option<u64>,
    /// Scratch for one key in hex.
    hex: String,
    /// Scratch for a value of several pieces.
    joined: Vec<u8>,
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `key` in lowercase hex, into `out`.
fn hex_into(key: &[u8], out: &mut String) {
    out.clear();
    out.reserve(key.len() * 2);
    for &b in key {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
}

/// `key` in lowercase hex.
fn hex(key: &[u8]) -> String {
    let mut s = String::new();
    hex_into(key, &mut s);
    s
}

/// The key a hex `_id` stands for, into `out`; None if it is not one kvmark wrote.
fn unhex_into(id: &str, out: &mut Vec<u8>) -> Option<()> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let id = id.as_bytes();
    if !id.len().is_multiple_of(2) {
        return None;
    }
    out.clear();
    for pair in id.chunks_exact(2) {
        out.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Some(())
}

fn bin(bytes: &[u8]) -> RawBinaryRef<'_> {
    RawBinaryRef {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// The document `put` writes for `key` (in hex) and `val`.
fn document(hex: &str, val: &[u8]) -> RawDocumentBuf {
    let mut pieces = RawArrayBuf::new();
    pieces.push(bin(val));
    rawdoc! {"_id": hex, "n": val.len() as i64, "v": pieces}
}

/// A document's value: its one piece as it is, or its pieces joined in `joined`.
fn value<'d>(op: &str, doc: &'d RawDocument, joined: &'d mut Vec<u8>) -> EngineResult<&'d [u8]> {
    let bad = |why: &dyn std::fmt::Display| {
        EngineError::other(format!(
            "engine {ENGINE}: {op}: a document kvmark did not write ({why})"
        ))
    };
    let pieces = doc.get_array("v").map_err(|e| bad(&e))?;
    let mut it = pieces.into_iter();
    let first = match it.next() {
        None => return Ok(&[]),
        Some(p) => p
            .map_err(|e| bad(&e))?
            .as_binary()
            .ok_or_else(|| bad(&"v holds a non-binary piece"))?,
    };
    let Some(second) = it.next() else {
        return Ok(first.bytes);
    };
    joined.clear();
    joined.extend_from_slice(first.bytes);
    for p in std::iter::once(second).chain(it) {
        let p = p
            .map_err(|e| bad(&e))?
            .as_binary()
            .ok_or_else(|| bad(&"v holds a non-binary piece"))?;
        joined.extend_from_slice(p.bytes);
    }
    Ok(joined)
}

/// A document's `_id` as a key, into `key`.
fn key_of<'k>(op: &str, doc: &RawDocument, key: &'k mut Vec<u8>) -> EngineResult<&'k [u8]> {
    let id = doc.get_str("_id").ok();
    match id.and_then(|id| unhex_into(id, key)) {
        Some(()) => Ok(key),
        None => Err(EngineError::other(format!(
            "engine {ENGINE}: {op}: a document whose _id is not a hex key kvmark wrote ({:?})",
            doc.get("_id").ok().flatten()
        ))),
    }
}

/// The filter of the half-open key range [lo, hi).
fn range_filter(lo: &[u8], hi: &[u8]) -> Document {
    doc! {"_id": {"$gte": hex(lo), "$lt": hex(hi)}}
}

/// The filter of a set of keys.
fn keys_filter(keys: &[&[u8]]) -> Document {
    let ids: Vec<Bson> = keys.iter().map(|k| Bson::String(hex(k))).collect();
    doc! {"_id": {"$in": ids}}
}

fn count(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl MongoSession {
    /// Walks the rows of [lo, hi) in key order, at most `limit` (0: all), handing each
    /// to `f` until it says stop; returns how many it was handed.
    fn walk(
        &mut self,
        op: &str,
        lo: &[u8],
        hi: &[u8],
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let MongoSession { link, joined, .. } = self;
        let filter = range_filter(lo, hi);
        let mut key = Vec::new();
        link.run(op, async |_, c| {
            let mut find = c.coll.find(filter).sort(doc! {"_id": 1});
            if limit > 0 {
                find = find.limit(i64::try_from(limit).unwrap_or(i64::MAX));
            }
            let mut cursor = find.await?;
            let mut n = 0;
            while cursor.advance().await? {
                let doc = cursor.current();
                n += 1;
                let stop = match (key_of(op, doc, &mut key), value(op, doc, joined)) {
                    (Ok(k), Ok(v)) => f(k, v),
                    (Err(e), _) | (_, Err(e)) => return Ok(Err(e)),
                };
                if stop {
                    break;
                }
            }
            Ok(Ok(n))
        })?
    }
}

impl Session for MongoSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        hex_into(key, &mut self.hex);
        let doc = document(&self.hex, val);
        let filter = doc! {"_id": self.hex.as_str()};
        self.link.run("put", async |_, c| {
            c.coll
                .replace_one(filter, doc)
                .upsert(true)
                .await
                .map(drop)
                .map_err(MongoError)
        })
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        hex_into(key, &mut self.hex);
        let filter = doc! {"_id": self.hex.as_str()};
        let found = self
            .link
            .run("get", async |_, c| c.coll.find_one(filter).await.map_err(MongoError))?;
        match found {
            Some(doc) => {
                out.set(value("get", &doc, &mut self.joined)?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        hex_into(key, &mut self.hex);
        let filter = doc! {"_id": self.hex.as_str()};
        let r = self
            .link
            .run("del", async |_, c| c.coll.delete_one(filter).await.map_err(MongoError))?;
        Ok(if r.deleted_count > 0 { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        self.walk("scan", lo, hi, limit, f)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        self.walk("range", lo, hi, limit, &mut |k, v| {
            out.push(k, v);
            false
        })
        .map(drop)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        let filter = keys_filter(keys);
        let docs = self.link.run("mget", async |_, c| {
            let mut cursor = c.coll.find(filter).await?;
            let mut docs = Vec::with_capacity(keys.len());
            while cursor.advance().await? {
                docs.push(cursor.current().to_owned());
            }
            Ok(docs)
        })?;
        // The documents come in no particular order: match them to the keys by _id.
        let mut found: Vec<(&str, &RawDocument)> = Vec::with_capacity(docs.len());
        for d in &docs {
            let id = d.get_str("_id").map_err(|e| {
                EngineError::other(format!("engine {ENGINE}: mget: a document without a hex _id ({e})"))
            })?;
            found.push((id, d));
        }
        found.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for key in keys {
            hex_into(key, &mut self.hex);
            match found.binary_search_by(|(id, _)| (*id).cmp(self.hex.as_str())) {
                Ok(i) => out.push_hit(value("mget", found[i].1, &mut self.joined)?),
                Err(_) => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        // New keys in one unordered insertMany (the driver splits it into commands
        // under the size limit); the keys that exist already come back as duplicate
        // key errors and are replaced in one `update` command, in batch order, so the
        // last value of a repeated key wins as it would key by key.
        let docs: Vec<RawDocumentBuf> = pairs.iter().map(|(k, v)| document(&hex(k), v)).collect();
        let existing = self.link.run("mput", async |_, c| {
            match c.coll.insert_many(&docs).ordered(false).await {
                Ok(_) => Ok(Vec::new()),
                Err(e) => match &*e.kind {
                    ErrorKind::InsertMany(m)
                        if m.write_concern_error.is_none()
                            && m.write_errors
                                .as_ref()
                                .is_some_and(|w| w.iter().all(|w| w.code == DUPLICATE_KEY)) =>
                    {
                        let mut at: Vec<usize> = m.write_errors.iter().flatten().map(|w| w.index).collect();
                        at.sort_unstable();
                        Ok(at)
                    }
                    _ => Err(MongoError(e)),
                },
            }
        })?;
        let mut rest = &existing[..];
        while !rest.is_empty() {
            let mut updates = RawArrayBuf::new();
            let mut bytes = 0;
            let mut taken = 0;
            for &i in rest {
                let (k, v) = pairs[i];
                if taken > 0 && bytes + k.len() * 4 + v.len() > MPUT_COMMAND_BYTES {
                    break;
                }
                let id = docs[i].get_str("_id").unwrap_or_default();
                updates.push(rawdoc! {"q": {"_id": id}, "u": RawBsonRef::Document(&docs[i]), "upsert": true});
                bytes += k.len() * 4 + v.len() + 64;
                taken += 1;
            }
            rest = &rest[taken..];
            let reply = self.link.run("mput", async |connector, c| {
                let mut command = rawdoc! {"update": c.coll.name(), "updates": updates, "ordered": true};
                if connector.shared.settings.journal {
                    command.append(cstr!("writeConcern"), rawdoc! {"j": true});
                }
                c.db.run_raw_command(command).await.map_err(MongoError)
            })?;
            // The command succeeds with per-statement errors in writeErrors.
            if let Ok(errors) = reply.get_array("writeErrors")
                && let Some(first) = errors.first()
            {
                let doc = first.as_document();
                let code = doc.and_then(|d| d.get_i32("code").ok());
                let message = doc.and_then(|d| d.get_str("errmsg").ok()).unwrap_or("no message");
                let text = format!(
                    "engine {ENGINE}: mput: {message} (code {})",
                    code.map_or("?".to_string(), |c| c.to_string())
                );
                return Err(if code == Some(DUPLICATE_KEY) {
                    EngineError::busy(text)
                } else {
                    EngineError::other(text)
                });
            }
        }
        Ok(())
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        let filter = keys_filter(keys);
        let r = self.link.run("mdel", async |_, c| {
            c.coll.delete_many(filter).await.map_err(MongoError)
        })?;
        Ok(Some(count(r.deleted_count)))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let len = suffix.len() as u64;
        let room = match self.cap {
            Some(cap) if len > cap => return Ok(Appended::Skipped),
            Some(cap) => Some(i64::try_from(cap - len).unwrap_or(i64::MAX)),
            None => None,
        };
        hex_into(key, &mut self.hex);
        let id = self.hex.as_str();
        // Built twice only when the first try collides (see the module's comment).
        let make = || {
            let mut filter = doc! {"_id": id};
            if let Some(room) = room {
                filter.insert("n", doc! {"$lte": room});
            }
            let piece = Binary {
                subtype: BinarySubtype::Generic,
                bytes: suffix.to_vec(),
            };
            (filter, doc! {"$push": {"v": piece}, "$inc": {"n": len as i64}})
        };
        self.link.run("append", async |_, c| {
            let (filter, update) = make();
            match c.coll.update_one(filter, update).upsert(true).await {
                Ok(_) => Ok(Appended::Yes),
                // The key exists and its value is full (the filter did not match, so
                // the upsert tried to insert it), or a concurrent append created it:
                // the update alone tells which.
                Err(e) if code(&e) == Some(DUPLICATE_KEY) => {
                    let (filter, update) = make();
                    let r = c.coll.update_one(filter, update).await.map_err(MongoError)?;
                    Ok(if r.matched_count > 0 {
                        Appended::Yes
                    } else {
                        Appended::Skipped
                    })
                }
                Err(e) => Err(MongoError(e)),
            }
        })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let filter = range_filter(lo, hi);
        self.link.run("delete_range", async |_, c| {
            c.coll.delete_many(filter).await.map(drop).map_err(MongoError)
        })
    }
}

fn version() -> String {
    format!(
        "{} (driver; the server's version is in buildInfo)",
        super::versions::crate_version("mongodb")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_sort_as_their_keys_do_and_decode_back() {
        let keys: [&[u8]; 7] = [b"", b"\x00", b"\x00\x00", b"\x01", b"a", b"ab", b"\xff"];
        for w in keys.windows(2) {
            assert!(hex(w[0]) < hex(w[1]), "{:?} < {:?}", w[0], w[1]);
        }
        let mut back = Vec::new();
        for k in keys {
            unhex_into(&hex(k), &mut back).unwrap();
            assert_eq!(back, k);
        }
        assert_eq!(hex(b"\x0a\xf0"), "0af0");
        assert!(unhex_into("0g", &mut back).is_none());
        assert!(unhex_into("abc", &mut back).is_none());
        assert!(unhex_into("AB", &mut back).is_none());
    }

    #[test]
    fn values_of_several_pieces_are_joined() {
        let mut pieces = RawArrayBuf::new();
        pieces.push(bin(b"ab"));
        pieces.push(bin(b""));
        pieces.push(bin(b"cd"));
        let doc = rawdoc! {"_id": "00", "n": 4_i64, "v": pieces};
        let mut joined = Vec::new();
        assert_eq!(value("get", &doc, &mut joined).unwrap(), b"abcd");
        let one = document("00", b"xyz");
        assert_eq!(value("get", &one, &mut joined).unwrap(), b"xyz");
        let bad = rawdoc! {"_id": "00", "v": "text"};
        assert!(
            value("get", &bad, &mut joined)
                .unwrap_err()
                .message
                .contains("did not write")
        );
    }

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
