//! `mariadb` and `myrocks`: a MariaDB server through `mysql_async`, one connection per
//! session with its statements prepared once; `mariadb` keeps its tables in InnoDB,
//! `myrocks` in MyRocks (the RocksDB storage engine inside MariaDB).
//!
//! Two engine names rather than a `storage` knob: one command compares them
//! (`--backend mariadb,myrocks`), each keeps its own config section, knobs, key limit
//! and server statistics, and the conformance suite, reports and plots tell them apart
//! by name, as the YCSB-IVS study does.
//!
//! A store is a table in the URL's database, named by `fresh_namespace`, created when
//! the store opens and dropped after it closes unless `--keep-data`:
//!
//! ```sql
//! CREATE TABLE NS (k VARBINARY(N) PRIMARY KEY, v LONGBLOB NOT NULL) ENGINE = InnoDB | ROCKSDB
//! ```
//!
//! VARBINARY compares as unsigned bytes, shorter first on a common prefix, the
//! contract's key order, in both storage engines (MyRocks encodes binary keys
//! memcmp-comparably), so ranges are scans of the primary key. N is the longest key
//! each storage engine indexes: 3072 bytes for InnoDB, 767 for MyRocks (its limit
//! unless the server sets `rocksdb_large_prefix`).
//!
//! Verb mapping: `put` an INSERT ... ON DUPLICATE KEY UPDATE; `get` a primary-key
//! SELECT; `del` a DELETE whose row count tells whether the key existed; `range`/`scan`
//! one SELECT with ORDER BY k and LIMIT; `mget` one SELECT with `k IN (...)`; `mput`
//! one multi-row upsert (rows in key order, so concurrent batches lock rows in one
//! order; a repeated key's later row wins, as key by key); `mdel` one DELETE with
//! `IN`; `append` one upsert that concatenates `CONCAT(v, suffix)` under the value cap
//! (atomic; the affected-row count says whether it wrote); `delete_range` one DELETE.
//! Batches past [`CHUNK`] keys run as several such statements in one transaction. A
//! deadlock or a lock wait timeout is reported as busy (the harness retries and
//! counts it). Sessions run at READ COMMITTED, so a MyRocks upsert never fails on a
//! snapshot taken before a concurrent commit.
//!
//! The client copies every parameter into an owned value and boxes every request's
//! future: its API has no borrowed parameters. Connections stay on TCP (the client
//! would otherwise move to the server's Unix socket), as the other server engines do.
//!
//! Sessions wait through [`inflight::block_on`](super::inflight::block_on). Creating
//! and dropping tables, the probe and the server statistics use connections of their
//! own, each exchange within the timeout.
//!
//! What tells the two engines apart is in `flavor.rs`, the settings and their knobs in
//! `knobs.rs`, that work outside sessions in `admin.rs`, the verbs in `session.rs`;
//! this file opens stores and connections.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, OptsBuilder, Statement};

use self::admin::{admin, remove, server_stats, table};
use self::flavor::{InnoDb, Kind, MyRocks};
use self::knobs::Settings;
use self::session::MySession;
use super::net::{self, Connector, Fault, Link, LinkStats};
use crate::engine::{
    AppendMethod, EngineError, EngineInfo, EngineResult, Limits, OpenRequest, Session, StorageKind, Store,
};

mod admin;
mod flavor;
mod knobs;
mod session;

/// Registry entry: MariaDB with InnoDB.
pub static INFO: EngineInfo = info::<InnoDb>();

/// Registry entry: MariaDB with MyRocks.
pub static MYROCKS_INFO: EngineInfo = info::<MyRocks>();

/// The registry entry of one of the two engines.
const fn info<K: Kind>() -> EngineInfo {
    let f = K::FLAVOR;
    EngineInfo {
        name: f.engine,
        storage: StorageKind::Server(f.server),
        description: f.description,
        append: AppendMethod::ReadModifyWrite,
        del_reports_existence: true,
        atomic_batches: true,
        limits: Limits {
            empty_keys: true,
            max_key_bytes: f.max_key_bytes,
            max_value_bytes: MAX_VALUE_BYTES,
        },
        version,
        knobs: f.knobs,
        open: open::<K>,
    }
}

/// A request, value and key together, must fit the server's `max_allowed_packet`,
/// at most 1 GiB (scripts/servers sets it so); the rest is room for the key and the
/// statement.
const MAX_VALUE_BYTES: usize = (1 << 30) - (1 << 16);

/// The most keys one statement of a batch carries: larger batches run as several
/// statements in one transaction (a statement takes at most 65,535 parameters), and
/// the statements a session prepares for batches stay few.
pub const CHUNK: usize = 512;

/// The most batch statements (one per batch size) a session keeps prepared per verb;
/// past it they are closed and prepared again as needed.
const MAX_BATCH_STATEMENTS: usize = 32;

/// Where the default server address comes from (both engines use one server).
pub const URL_ENV: &str = "KVMARK_MARIADB_URL";
const DEFAULT_URL: &str = "mariadb://kvmark@127.0.0.1:3306/kvmark";

/// A client library error, shown with the server's code and SQLSTATE.
#[derive(Debug)]
struct MyError(mysql_async::Error);

impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            mysql_async::Error::Server(e) => write!(f, "ERROR {} ({}): {}", e.code, e.state, e.message),
            other => write!(f, "{other}"),
        }
    }
}

impl From<mysql_async::Error> for MyError {
    fn from(e: mysql_async::Error) -> Self {
        MyError(e)
    }
}

/// Server error codes that mean "try again": a deadlock (1213, also MyRocks' snapshot
/// conflicts) and a lock wait timeout (1205).
const BUSY_CODES: &[u16] = &[1205, 1213];
/// Server error codes that end the connection: a shutdown (1053), a killed
/// connection (1927), too many connections (1040).
const BROKEN_CODES: &[u16] = &[1040, 1053, 1927];

/// What an error says about its connection.
fn fault(e: &MyError) -> Fault {
    match &e.0 {
        mysql_async::Error::Server(s) if BUSY_CODES.contains(&s.code) => Fault::Busy,
        mysql_async::Error::Server(s) if BROKEN_CODES.contains(&s.code) => Fault::Broken,
        mysql_async::Error::Server(_) => Fault::Refused,
        // I/O, protocol and driver errors leave the connection in no known state.
        _ => Fault::Broken,
    }
}

/// Opens a connection with the session settings every connection gets.
async fn connect(s: &Settings) -> Result<Conn, MyError> {
    let mut init = vec!["SET NAMES binary".to_string()];
    init.push("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string());
    if s.disable_wal {
        init.push("SET SESSION rocksdb_write_disable_wal = ON".to_string());
    }
    let made = s
        .connect_opts_once()
        .map_err(|why| MyError(mysql_async::Error::Other(why.into())))?;
    let opts = OptsBuilder::from_opts(made)
        // Statements are prepared once per connection and kept by the session; the
        // client's own cache would close them when it evicts one.
        .stmt_cache_size(0)
        .prefer_socket(false)
        .init(init);
    Ok(Conn::new(opts).await?)
}

fn open<K: Kind>(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let flavor = K::FLAVOR;
    let name = req.namespace(flavor.engine)?;
    let settings = flavor.knobs.parse(req.options)?;
    let row_format = match flavor.storage_engine {
        "InnoDB" => format!(" ROW_FORMAT = {}", settings.row_format.to_uppercase()),
        _ => String::new(),
    };
    let create = format!(
        "CREATE TABLE IF NOT EXISTS {} (k VARBINARY({}) NOT NULL PRIMARY KEY, v LONGBLOB NOT NULL) ENGINE = {}{row_format}",
        table(name),
        flavor.max_key_bytes,
        flavor.storage_engine
    );
    let check = format!(
        "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{}'",
        name.replace('\'', "''")
    );
    let made = admin(flavor, &settings, &format!("creating table {name}"), async |c| {
        c.query_drop(create).await?;
        c.query_first::<String, _>(check).await
    })?;
    // MariaDB falls back to its default engine, with a warning, when the asked one is
    // missing (NO_ENGINE_SUBSTITUTION off): refuse rather than measure the wrong one.
    if !made
        .as_deref()
        .is_some_and(|e| e.eq_ignore_ascii_case(flavor.storage_engine))
    {
        let _ = remove(flavor, req.options, name);
        return Err(EngineError::other(format!(
            "engine {}: table {name} was made with storage engine {} instead of {}",
            flavor.engine,
            made.as_deref().unwrap_or("(none)"),
            flavor.storage_engine
        )));
    }
    let shared = Arc::new(Shared {
        settings,
        table: table(name),
        cap: req.max_value_bytes,
        links: Arc::default(),
    });
    // The sampler's link is a session's connection of its own, its failures counted
    // apart from the sessions'.
    let stats = Link::open(
        MyConnector::<K> {
            shared: shared.clone(),
            kind: PhantomData,
        },
        shared.settings.timeout,
        Arc::default(),
    )
    .ok();
    Ok(Box::new(MyStore::<K> {
        shared,
        stats: Mutex::new(stats),
    }))
}

struct Shared {
    settings: Settings,
    /// The quoted table name.
    table: String,
    cap: Option<u64>,
    links: Arc<LinkStats>,
}

struct MyStore<K: Kind> {
    shared: Arc<Shared>,
    /// The sampler's connection (reconnecting on the sampler's thread, with backoff
    /// while the server is away); None if it could not connect at open.
    stats: Mutex<Option<Link<MyConnector<K>>>>,
}

impl<K: Kind> Store for MyStore<K> {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        let connector = MyConnector::<K> {
            shared: s.clone(),
            kind: PhantomData,
        };
        Ok(Box::new(MySession {
            link: Link::open(connector, s.settings.timeout, s.links.clone())?,
            cap: s.cap.unwrap_or(u64::MAX),
            order: Vec::new(),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut link) = self.stats.lock()
            && let Some(link) = link.as_mut()
            && let Ok(server) = link.run("stats", async |_, c| server_stats(K::FLAVOR, &mut c.conn).await)
        {
            out.extend(server);
        }
        self.shared.links.report(&mut out);
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        // The sampler's link holds the shared state too.
        let MyStore { shared, stats } = *self;
        drop(stats);
        crate::engine::unshare(K::FLAVOR.engine, shared).map(drop)
    }
}

/// The batch verbs, whose statements depend on the number of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Batch {
    Mget,
    Mput,
    Mdel,
}

/// One session's connection with its prepared statements.
struct MyConn {
    conn: Conn,
    put: Statement,
    get: Statement,
    del: Statement,
    range: Statement,
    append: Statement,
    delete_range: Statement,
    /// Batch statements by verb and number of keys, prepared when first used.
    batches: HashMap<(Batch, usize), Statement>,
}

impl MyConn {
    /// The statement of `verb` for `n` keys (1 to [`CHUNK`]) on `table`.
    async fn batch(&mut self, table: &str, verb: Batch, n: usize) -> Result<Statement, MyError> {
        if let Some(stmt) = self.batches.get(&(verb, n)) {
            return Ok(stmt.clone());
        }
        if self.batches.len() >= MAX_BATCH_STATEMENTS * 3 {
            for (_, stmt) in self.batches.drain() {
                self.conn.close(stmt).await?;
            }
        }
        let list = |item: &str| vec![item; n].join(", ");
        let sql = match verb {
            Batch::Mget => format!("SELECT k, v FROM {table} WHERE k IN ({})", list("?")),
            Batch::Mput => format!(
                "INSERT INTO {table} (k, v) VALUES {} ON DUPLICATE KEY UPDATE v = VALUES(v)",
                list("(?, ?)")
            ),
            Batch::Mdel => format!("DELETE FROM {table} WHERE k IN ({})", list("?")),
        };
        let stmt = self.conn.prep(sql).await?;
        self.batches.insert((verb, n), stmt.clone());
        Ok(stmt)
    }
}

struct MyConnector<K: Kind> {
    shared: Arc<Shared>,
    kind: PhantomData<K>,
}

impl<K: Kind> Connector for MyConnector<K> {
    type Conn = MyConn;
    type Error = MyError;
    const ENGINE: &'static str = K::FLAVOR.engine;

    fn address(&self) -> String {
        net::mask_password(&self.shared.settings.url).into_owned()
    }

    async fn connect(&self) -> Result<MyConn, MyError> {
        let mut conn = connect(&self.shared.settings).await?;
        let t = &self.shared.table;
        Ok(MyConn {
            put: conn
                .prep(format!(
                    "INSERT INTO {t} (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)"
                ))
                .await?,
            get: conn.prep(format!("SELECT v FROM {t} WHERE k = ?")).await?,
            del: conn.prep(format!("DELETE FROM {t} WHERE k = ?")).await?,
            range: conn
                .prep(format!(
                    "SELECT k, v FROM {t} WHERE k >= ? AND k < ? ORDER BY k LIMIT ?"
                ))
                .await?,
            // The third parameter is the value cap: a key whose value would pass it is
            // set to itself, which counts as no affected row.
            append: conn
                .prep(format!(
                    "INSERT INTO {t} (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE \
                     v = IF(LENGTH(v) + LENGTH(VALUES(v)) <= ?, CONCAT(v, VALUES(v)), v)"
                ))
                .await?,
            delete_range: conn.prep(format!("DELETE FROM {t} WHERE k >= ? AND k < ?")).await?,
            batches: HashMap::new(),
            conn,
        })
    }

    fn fault(&self, _: &MyConn, e: &MyError) -> Fault {
        fault(e)
    }
}

fn version() -> String {
    format!(
        "{} (client; the server's version is in SELECT VERSION())",
        crate::engine::versions::crate_version("mysql_async")
    )
}
