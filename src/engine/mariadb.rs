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

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Params, Row, Statement, Value};

use super::inflight::block_on;
use super::net::{self, Connector, Fault, Link, LinkStats};
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, KnobDef, KnobTable, Limits,
    OpenRequest, OptionError, ReadBuf, Rows, ScanFn, ServerKind, Session, StorageKind, Store, Values,
};

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
const ROW_FORMATS: &[&str] = &["dynamic", "compact", "redundant", "compressed"];

/// What tells the two engines apart.
struct Flavor {
    engine: &'static str,
    /// One line for `kvmark engines`.
    description: &'static str,
    server: &'static ServerKind,
    /// The storage engine in CREATE TABLE.
    storage_engine: &'static str,
    /// The longest key the storage engine indexes (and the VARBINARY's length).
    max_key_bytes: usize,
    knobs: &'static KnobTable<Settings>,
    /// SHOW GLOBAL STATUS variables reported in the timeline, lower-cased there.
    status: &'static [&'static str],
}

const INNODB: Flavor = Flavor {
    engine: "mariadb",
    description: "a MariaDB server (mysql_async), tables in InnoDB: a VARBINARY-keyed table, prepared statements per session",
    server: &INNODB_SERVER,
    storage_engine: "InnoDB",
    max_key_bytes: 3072,
    knobs: &INNODB_KNOBS,
    status: &[
        "Innodb_buffer_pool_read_requests",
        "Innodb_buffer_pool_reads",
        "Innodb_buffer_pool_pages_data",
        "Innodb_buffer_pool_pages_dirty",
        "Innodb_buffer_pool_pages_flushed",
        "Innodb_buffer_pool_wait_free",
        "Innodb_log_write_requests",
        "Innodb_log_writes",
        "Innodb_log_waits",
        "Innodb_os_log_written",
        "Innodb_checkpoint_age",
        "Innodb_data_fsyncs",
        "Innodb_data_reads",
        "Innodb_row_lock_waits",
        "Innodb_deadlocks",
        "Innodb_history_list_length",
        // Rows, as the server's handler interface counts them (MariaDB has no
        // Innodb_rows_* counters).
        "Handler_read_key",
        "Handler_read_next",
        "Handler_write",
        "Handler_update",
        "Handler_delete",
        "Handler_commit",
        "Handler_rollback",
        "Threads_connected",
        "Threads_running",
        "Questions",
    ],
};

const MYROCKS: Flavor = Flavor {
    engine: "myrocks",
    description: "a MariaDB server (mysql_async), tables in MyRocks (RocksDB inside MariaDB): a VARBINARY-keyed table, prepared statements per session",
    server: &MYROCKS_SERVER,
    storage_engine: "ROCKSDB",
    max_key_bytes: 767,
    knobs: &MYROCKS_KNOBS,
    status: &[
        "Rocksdb_rows_read",
        "Rocksdb_rows_inserted",
        "Rocksdb_rows_updated",
        "Rocksdb_rows_deleted",
        "Rocksdb_block_cache_hit",
        "Rocksdb_block_cache_miss",
        "Rocksdb_bytes_read",
        "Rocksdb_bytes_written",
        "Rocksdb_wal_bytes",
        "Rocksdb_wal_synced",
        "Rocksdb_flush_write_bytes",
        "Rocksdb_compact_read_bytes",
        "Rocksdb_compact_write_bytes",
        "Rocksdb_memtable_total",
        "Rocksdb_memtable_unflushed",
        "Rocksdb_stall_micros",
        "Rocksdb_stall_total_slowdowns",
        "Rocksdb_stall_total_stops",
        "Rocksdb_row_lock_deadlocks",
        "Rocksdb_row_lock_wait_timeouts",
        "Rocksdb_snapshot_conflict_errors",
        "Handler_commit",
        "Handler_rollback",
        "Threads_connected",
        "Threads_running",
        "Questions",
    ],
};

/// One of the two engines, as a type: a session's connector names its engine in
/// messages through an associated constant.
trait Kind: Send + Sync + 'static {
    const FLAVOR: &'static Flavor;
}

/// MariaDB with InnoDB.
struct InnoDb;
impl Kind for InnoDb {
    const FLAVOR: &'static Flavor = &INNODB;
}

/// MariaDB with MyRocks.
struct MyRocks;
impl Kind for MyRocks {
    const FLAVOR: &'static Flavor = &MYROCKS;
}

static INNODB_SERVER: ServerKind = ServerKind {
    namespace: "table",
    address: |o| address(&INNODB, o),
    probe: |o| probe(&INNODB, o),
    remove: |o, name| remove(&INNODB, o, name),
    pipeline: false,
};

static MYROCKS_SERVER: ServerKind = ServerKind {
    namespace: "table",
    address: |o| address(&MYROCKS, o),
    probe: |o| probe(&MYROCKS, o),
    remove: |o, name| remove(&MYROCKS, o, name),
    pipeline: false,
};

#[derive(Debug, Clone)]
struct Settings {
    /// The URL as given (shown masked).
    url: String,
    /// The client's options parsed from it.
    opts: Opts,
    timeout: Duration,
    /// InnoDB's ROW_FORMAT (mariadb only).
    row_format: &'static str,
    /// MyRocks: the session's writes skip the write-ahead log (myrocks only).
    disable_wal: bool,
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

/// The client's options for a `mariadb://` (or `mysql://`) URL.
fn parse_url(url: &str) -> Result<Opts, String> {
    let rest = url
        .strip_prefix("mariadb://")
        .or_else(|| url.strip_prefix("mysql://"))
        .ok_or("the URL must start with mariadb:// (or mysql://)")?;
    Opts::from_url(&format!("mysql://{rest}")).map_err(|e| e.to_string())
}

fn start() -> Settings {
    let url = default_url();
    Settings {
        // A bad URL in the environment is refused when the knob table checks the
        // default; until then the fixed default stands in.
        opts: parse_url(&url)
            .or_else(|_| parse_url(DEFAULT_URL))
            .expect("the default URL parses"),
        url,
        timeout: Duration::from_secs(5),
        row_format: "dynamic",
        disable_wal: false,
    }
}

const URL_KNOB: KnobDef<Settings> = KnobDef {
    name: "url",
    help: "the server, mariadb://USER[:PASSWORD]@HOST:PORT/DB; tables are made in DB (default: $KVMARK_MARIADB_URL, else mariadb://kvmark@127.0.0.1:3306/kvmark; passwords are masked wherever it is shown)",
    default: || net::mask_password(&default_url()).into_owned(),
    set: |s, v| match parse_url(v.text) {
        Ok(opts) => {
            s.url = v.text.to_string();
            s.opts = opts;
            Ok(())
        }
        Err(why) => Err(OptionError::bad_value(
            v.engine,
            v.key,
            &net::mask_password(v.text),
            format_args!("not a MariaDB URL ({why}); expected mariadb://USER@HOST:PORT/DB"),
        )),
    },
};

const TIMEOUT_KNOB: KnobDef<Settings> = KnobDef {
    name: "timeout",
    help: "longest wait for one operation's reply (connecting included); past it the operation fails and the session reconnects",
    default: || net::DEFAULT_TIMEOUT.to_string(),
    set: |s, v| net::parse_timeout(v).map(|t| s.timeout = t),
};

static INNODB_KNOBS: KnobTable<Settings> = KnobTable::new(
    "mariadb",
    start,
    &[
        URL_KNOB,
        KnobDef {
            name: "row_format",
            help: "the table's InnoDB ROW_FORMAT: dynamic, compact, redundant or compressed (durability is the server's innodb_flush_log_at_trx_commit)",
            default: || "dynamic".to_string(),
            set: |s, v| v.choice(ROW_FORMATS).map(|f| s.row_format = f),
        },
        TIMEOUT_KNOB,
    ],
);

static MYROCKS_KNOBS: KnobTable<Settings> = KnobTable::new(
    "myrocks",
    start,
    &[
        URL_KNOB,
        KnobDef {
            name: "disable_wal",
            help: "the sessions' writes skip RocksDB's write-ahead log (rocksdb_write_disable_wal): lost in a crash (otherwise durability is the server's rocksdb_flush_log_at_trx_commit)",
            default: || "false".to_string(),
            set: |s, v| v.bool().map(|b| s.disable_wal = b),
        },
        TIMEOUT_KNOB,
    ],
);

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
    let opts = OptsBuilder::from_opts(s.opts.clone())
        // Statements are prepared once per connection and kept by the session; the
        // client's own cache would close them when it evicts one.
        .stmt_cache_size(0)
        .prefer_socket(false)
        .init(init);
    Ok(Conn::new(opts).await?)
}

/// Runs `f` on a connection of its own, for work outside sessions (creating and
/// dropping tables, the probe), all of it within the timeout.
fn admin<T>(
    flavor: &Flavor,
    s: &Settings,
    what: &str,
    f: impl AsyncFnOnce(&mut Conn) -> Result<T, mysql_async::Error>,
) -> EngineResult<T> {
    let url = net::mask_password(&s.url);
    let fail =
        |why: &dyn std::fmt::Display| EngineError::other(format!("engine {}: {what} at {url}: {why}", flavor.engine));
    block_on(async {
        let work = async {
            let mut conn = connect(s).await?;
            let out = f(&mut conn).await.map_err(MyError);
            let _ = conn.disconnect().await;
            out
        };
        match tokio::time::timeout(s.timeout, work).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(fail(&e)),
            Err(_) => Err(fail(&format_args!("no reply within the timeout of {:?}", s.timeout))),
        }
    })
}

fn address(flavor: &Flavor, o: &EngineOptions) -> String {
    net::mask_password(&flavor.knobs.parse(o).unwrap_or_else(|_| start()).url).into_owned()
}

fn probe(flavor: &Flavor, o: &EngineOptions) -> Result<(), String> {
    let s = flavor.knobs.parse(o).map_err(|e| e.message)?;
    // The server must answer and have the storage engine.
    let sql = format!(
        "SELECT COUNT(*) FROM information_schema.ENGINES WHERE ENGINE = '{}' AND SUPPORT IN ('YES', 'DEFAULT')",
        flavor.storage_engine
    );
    let found = admin(flavor, &s, "probe", async |c| c.query_first::<u64, _>(sql).await).map_err(|e| e.message)?;
    match found {
        Some(n) if n > 0 => Ok(()),
        _ => Err(format!(
            "the server has no {} storage engine (MyRocks: the mariadb-plugin-rocksdb package and plugin-load-add=ha_rocksdb.so)",
            flavor.storage_engine
        )),
    }
}

/// The table's name, quoted.
fn table(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

fn remove(flavor: &Flavor, o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = flavor.knobs.parse(o)?;
    let drop_table = format!("DROP TABLE IF EXISTS {}", table(name));
    admin(flavor, &s, &format!("dropping table {name}"), async |c| {
        c.query_drop(drop_table).await
    })
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

/// The flavor's server status variables, lower-cased, as `Store::stats` reports them.
async fn server_stats(flavor: &Flavor, c: &mut Conn) -> Result<Vec<(String, f64)>, MyError> {
    let names: Vec<String> = flavor.status.iter().map(|n| format!("'{n}'")).collect();
    let sql = format!("SHOW GLOBAL STATUS WHERE Variable_name IN ({})", names.join(", "));
    let rows: Vec<(String, String)> = c.query(sql).await?;
    Ok(rows
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_ascii_lowercase(), value.trim().parse().ok()?)))
        .collect())
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
        super::unshare(K::FLAVOR.engine, shared).map(drop)
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

struct MySession<K: Kind> {
    link: Link<MyConnector<K>>,
    /// The value cap of `append` (u64::MAX: none).
    cap: u64,
    /// Scratch: the order of a batch's pairs by key.
    order: Vec<usize>,
}

/// A parameter holding bytes (the client takes owned values).
fn bytes(b: &[u8]) -> Value {
    Value::Bytes(b.to_vec())
}

/// Column `i` of `row` as bytes.
fn column(row: &Row, i: usize) -> &[u8] {
    match row.as_ref(i) {
        Some(Value::Bytes(b)) => b,
        _ => &[],
    }
}

/// A LIMIT parameter: the largest one means no limit.
fn limit_param(limit: usize) -> Value {
    Value::UInt(if limit == 0 { u64::MAX } else { limit as u64 })
}

impl<K: Kind> MySession<K> {
    /// Runs `f` on every row of `lo <= k < hi` in key order, at most `limit`.
    fn rows(&mut self, op: &str, lo: &[u8], hi: &[u8], limit: usize, mut f: impl FnMut(Row)) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let params = Params::Positional(vec![bytes(lo), bytes(hi), limit_param(limit)]);
        self.link.run(op, async |_, c| {
            let mut result = c.conn.exec_iter(&c.range, params).await?;
            result.for_each(&mut f).await?;
            result.drop_result().await?;
            Ok(())
        })
    }

    /// Runs one batch verb over `items` (keys, or pair indexes for mput): one
    /// statement when they fit [`CHUNK`], else one statement per chunk inside a
    /// transaction. Returns the affected rows (summed) and passes every returned row
    /// to `f`.
    fn batch<T>(
        &mut self,
        op: &str,
        verb: Batch,
        items: &[T],
        param: impl Fn(&T, &mut Vec<Value>),
        mut f: impl FnMut(Row),
    ) -> EngineResult<u64> {
        self.link.run(op, async |connector, c| {
            let table = &connector.shared.table;
            let chunks = items.len().div_ceil(CHUNK);
            if chunks > 1 {
                c.conn.query_drop("START TRANSACTION").await?;
            }
            let out = async {
                let mut affected = 0;
                for chunk in items.chunks(CHUNK) {
                    let stmt = c.batch(table, verb, chunk.len()).await?;
                    let mut params = Vec::with_capacity(chunk.len() * 2);
                    for item in chunk {
                        param(item, &mut params);
                    }
                    let mut result = c.conn.exec_iter(&stmt, Params::Positional(params)).await?;
                    result.for_each(&mut f).await?;
                    affected += result.affected_rows();
                    result.drop_result().await?;
                }
                if chunks > 1 {
                    c.conn.query_drop("COMMIT").await?;
                }
                Ok::<u64, MyError>(affected)
            }
            .await;
            if out.is_err() && chunks > 1 {
                // A failed statement leaves the transaction open: end it here.
                let _ = c.conn.query_drop("ROLLBACK").await;
            }
            out
        })
    }
}

impl<K: Kind> Session for MySession<K> {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let params = Params::Positional(vec![bytes(key), bytes(val)]);
        self.link
            .run("put", async |_, c| Ok(c.conn.exec_drop(&c.put, params).await?))
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let params = Params::Positional(vec![bytes(key)]);
        let row: Option<Row> = self
            .link
            .run("get", async |_, c| Ok(c.conn.exec_first(&c.get, params).await?))?;
        match row {
            Some(row) => {
                out.set(column(&row, 0));
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let params = Params::Positional(vec![bytes(key)]);
        let n = self.link.run("del", async |_, c| {
            c.conn.exec_drop(&c.del, params).await?;
            Ok(c.conn.affected_rows())
        })?;
        Ok(if n > 0 { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        let mut n = 0;
        let mut stopped = false;
        self.rows("scan", lo, hi, limit, |row| {
            if !stopped {
                n += 1;
                stopped = f(column(&row, 0), column(&row, 1));
            }
        })?;
        Ok(n)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        self.rows("range", lo, hi, limit, |row| out.push(column(&row, 0), column(&row, 1)))
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        // The rows come in no particular order: match them to the keys by key.
        let mut found: Vec<Row> = Vec::with_capacity(keys.len());
        self.batch(
            "mget",
            Batch::Mget,
            keys,
            |k, p| p.push(bytes(k)),
            |row| found.push(row),
        )?;
        found.sort_unstable_by(|a, b| column(a, 0).cmp(column(b, 0)));
        for key in keys {
            match found.binary_search_by(|row| column(row, 0).cmp(key)) {
                Ok(i) => out.push_hit(column(&found[i], 1)),
                Err(_) => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        // Rows in key order (a stable sort: a repeated key's later value still comes
        // last and wins), so concurrent batches take row locks in one order.
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(0..pairs.len());
        order.sort_by(|&a, &b| pairs[a].0.cmp(pairs[b].0));
        let out = self.batch(
            "mput",
            Batch::Mput,
            &order,
            |&i, p| {
                p.push(bytes(pairs[i].0));
                p.push(bytes(pairs[i].1));
            },
            drop,
        );
        self.order = order;
        out.map(drop)
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        let n = self.batch("mdel", Batch::Mdel, keys, |k, p| p.push(bytes(k)), drop)?;
        Ok(Some(n as usize))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        // A suffix longer than the cap fits no value.
        if suffix.len() as u64 > self.cap {
            return Ok(Appended::Skipped);
        }
        let params = Params::Positional(vec![bytes(key), bytes(suffix), Value::UInt(self.cap)]);
        let n = self.link.run("append", async |_, c| {
            c.conn.exec_drop(&c.append, params).await?;
            Ok(c.conn.affected_rows())
        })?;
        // 1: inserted, 2: grown, 0: left as it was, which for an empty suffix is what
        // appending nothing does (MariaDB counts only rows whose value changed).
        Ok(if n > 0 || suffix.is_empty() {
            Appended::Yes
        } else {
            Appended::Skipped
        })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let params = Params::Positional(vec![bytes(lo), bytes(hi)]);
        self.link.run("delete_range", async |_, c| {
            Ok(c.conn.exec_drop(&c.delete_range, params).await?)
        })
    }
}

fn version() -> String {
    format!(
        "{} (client; the server's version is in SELECT VERSION())",
        super::versions::crate_version("mysql_async")
    )
}
