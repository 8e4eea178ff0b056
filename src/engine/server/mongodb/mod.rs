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
//!
//! The settings and their knobs are in `knobs.rs`, the documents and filters in
//! `document.rs`, the work outside sessions in `admin.rs`, the verbs in `session.rs`;
//! this file opens stores and clients.

use std::sync::{Arc, Mutex};

use mongodb::bson::{RawDocumentBuf, doc};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{ClientOptions, WriteConcern};
use mongodb::{Client, Collection};

use self::admin::{admin, remove, server_stats};
use self::knobs::{KNOBS, Settings, start};
use self::session::MongoSession;
use super::net::{self, Connector, Fault, Link, LinkStats};
use crate::engine::{AppendMethod, EngineInfo, EngineResult, OpenRequest, ServerKind, Session, StorageKind, Store};

mod admin;
mod document;
mod knobs;
mod session;

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
    ordered: true,
};

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
    s.apply_tls(&mut o)
        .map_err(|why| MongoError(std::io::Error::other(why).into()))?;
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
        crate::engine::unshare(ENGINE, self.shared).map(drop)
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

fn version() -> String {
    format!(
        "{} (driver; the server's version is in buildInfo)",
        crate::engine::versions::crate_version("mongodb")
    )
}
