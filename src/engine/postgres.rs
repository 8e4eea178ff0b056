//! `postgres`: a PostgreSQL server through `tokio-postgres`, one connection per session
//! with its statements prepared once.
//!
//! A store is a table on the server, named by `fresh_namespace`, created when the store
//! opens and dropped after it closes unless `--keep-data`:
//!
//! ```sql
//! CREATE [UNLOGGED] TABLE NS (k bytea PRIMARY KEY, v bytea NOT NULL) WITH (fillfactor = F);
//! ```
//!
//! bytea compares bytewise as unsigned bytes, the contract's key order, so ranges are
//! index scans of the primary key.
//!
//! Verb mapping: `put` an INSERT ... ON CONFLICT DO UPDATE; `get` a primary-key SELECT;
//! `del` a DELETE whose row count tells whether the key existed; `range`/`scan` one
//! SELECT with ORDER BY k and LIMIT; `mget` one SELECT with `k = ANY($1)`; `mput` one
//! upsert from `unnest` (keys sorted, the last value of a repeated key kept, so
//! concurrent batches take row locks in one order); `mdel` one DELETE with `ANY`;
//! `append` one upsert that concatenates `v || $2` with the value cap in its WHERE
//! (atomic; nothing written means Skipped); `delete_range` one DELETE. A deadlock or a
//! serialization failure is reported as busy (the harness retries and counts it).
//!
//! Sessions wait through [`inflight::block_on`](super::inflight::block_on), and drive
//! their connection's I/O themselves while they wait ([`net::Driver`]) instead of
//! spawning it as a task, which spares each request a hop through that task. The
//! sessions of a pipeline group (`--pipeline N`) share one connection and its prepared
//! statements: its I/O runs as a task of the thread's runtime, and tokio-postgres
//! writes the requests queued while it was busy together (Bind/Execute/Sync of each,
//! in one write) and hands the replies back in order: the extended protocol's
//! pipelining. Every verb is one statement, so requests of different sessions may
//! interleave on the connection. Creating
//! and dropping tables, the probe and the server statistics use the same async client
//! on connections of their own, each exchange within the timeout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::inflight::{RuntimeId, block_on, runtime_id};

use super::net::{self, Connector, Driver, Fault, Link, LinkStats};
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, KnobDef, KnobTable,
    OpenRequest, OptionError, Pipeline, ReadBuf, Rows, ScanFn, ServerKind, Session, StorageKind, Store, Values,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Server(&SERVER),
    description: "a PostgreSQL server (tokio-postgres): a bytea-keyed table, prepared statements per session (per pipeline group with --pipeline, whose sessions share one connection)",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    // A B-tree index entry holds at most 2704 bytes, its header included.
    limits: crate::engine::Limits {
        empty_keys: true,
        max_key_bytes: 2692,
        max_value_bytes: (1 << 30) - 1,
    },
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "postgres";
/// Where the default server address comes from.
pub const URL_ENV: &str = "KVMARK_POSTGRES_URL";
const DEFAULT_URL: &str = "postgres://kvmark@127.0.0.1:5432/kvmark";
const SYNCHRONOUS_COMMIT: &[&str] = &["on", "off", "local", "remote_write", "remote_apply"];

static SERVER: ServerKind = ServerKind {
    namespace: "table",
    address: |o| net::mask_password(&KNOBS.parse(o).unwrap_or_else(|_| start()).url).into_owned(),
    probe: |o| {
        let s = KNOBS.parse(o).map_err(|e| e.message)?;
        admin(&s, "probe", async |c| c.simple_query("SELECT 1").await.map(drop)).map_err(|e| e.message)
    },
    remove,
    pipeline: true,
};

#[derive(Debug, Clone)]
struct Settings {
    url: String,
    unlogged: bool,
    synchronous_commit: &'static str,
    fillfactor: u32,
    timeout: Duration,
}

fn default_url() -> String {
    net::env_or(URL_ENV, DEFAULT_URL)
}

fn start() -> Settings {
    Settings {
        url: default_url(),
        unlogged: false,
        synchronous_commit: "on",
        fillfactor: 100,
        timeout: Duration::from_secs(5),
    }
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    start,
    &[
        KnobDef {
            name: "url",
            help: "the server, postgres://USER[:PASSWORD]@HOST:PORT/DB (default: $KVMARK_POSTGRES_URL, else postgres://kvmark@127.0.0.1:5432/kvmark; passwords are masked wherever it is shown)",
            default: || net::mask_password(&default_url()).into_owned(),
            set: |s, v| match v.text.parse::<Config>() {
                Ok(_) if v.text.contains("://") || v.text.contains('=') => {
                    s.url = v.text.to_string();
                    Ok(())
                }
                parsed => Err(OptionError::bad_value(
                    ENGINE,
                    v.key,
                    &net::mask_password(v.text),
                    format_args!(
                        "not a PostgreSQL connection URL{}; expected postgres://USER@HOST:PORT/DB",
                        parsed.err().map(|e| format!(" ({e})")).unwrap_or_default()
                    ),
                )),
            },
        },
        KnobDef {
            name: "unlogged",
            help: "create the table UNLOGGED: no write-ahead log, emptied after a crash",
            default: || "false".to_string(),
            set: |s, v| v.bool().map(|b| s.unlogged = b),
        },
        KnobDef {
            name: "synchronous_commit",
            help: "on, off, local, remote_write or remote_apply: whether a commit waits for its WAL flush (set per session)",
            default: || "on".to_string(),
            set: |s, v| v.choice(SYNCHRONOUS_COMMIT).map(|c| s.synchronous_commit = c),
        },
        KnobDef {
            name: "fillfactor",
            help: "percent of each heap page filled by inserts (10 to 100), the rest left for updates",
            default: || "100".to_string(),
            set: |s, v| {
                let n: u32 = v.num()?;
                if !(10..=100).contains(&n) {
                    return Err(v.refuse("expected a percentage from 10 to 100"));
                }
                s.fillfactor = n;
                Ok(())
            },
        },
        KnobDef {
            name: "timeout",
            help: "longest wait for one operation's reply (connecting included); past it the operation fails and the session reconnects",
            default: || net::DEFAULT_TIMEOUT.to_string(),
            set: |s, v| net::parse_timeout(v).map(|t| s.timeout = t),
        },
    ],
);

/// A client library error, shown with the server's message and SQLSTATE.
#[derive(Debug)]
struct PgError(tokio_postgres::Error);

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(db) => write!(f, "{}: {} (SQLSTATE {})", db.severity(), db.message(), db.code().code()),
            None => {
                write!(f, "{}", self.0)?;
                if let Some(source) = std::error::Error::source(&self.0) {
                    write!(f, ": {source}")?;
                }
                Ok(())
            }
        }
    }
}

/// Opens a connection whose socket the running runtime serves (until the client is
/// dropped).
async fn connect(s: &Settings) -> Result<Client, PgError> {
    let (client, connection) = connect_driven(s).await?;
    // Outside sessions a lost connection fails the work in hand, which is reported.
    tokio::spawn(async move { drop(connection.await) });
    Ok(client)
}

/// Opens a connection and returns its client and its I/O, which the caller drives (or
/// spawns). The I/O future ends with the connection's error: the server's reason for
/// closing it, which the requests it fails do not carry (they say "connection closed").
async fn connect_driven(
    s: &Settings,
) -> Result<(Client, impl Future<Output = Result<(), PgError>> + Send + 'static), PgError> {
    let config: Config = s.url.parse().map_err(PgError)?;
    let (client, connection) = config.connect(NoTls).await.map_err(PgError)?;
    Ok((client, async move { connection.await.map_err(PgError) }))
}

/// Runs `f` on a connection of its own, for work outside sessions (creating and
/// dropping tables, the probe), all of it within the timeout. This is the async client
/// through [`block_on`] rather than the blocking `postgres` client, whose timeout covers
/// only the TCP connect: a server that accepts and never answers would hang it.
fn admin<T>(
    s: &Settings,
    what: &str,
    f: impl AsyncFnOnce(&Client) -> Result<T, tokio_postgres::Error>,
) -> EngineResult<T> {
    let url = net::mask_password(&s.url);
    let fail = |why: &dyn std::fmt::Display| EngineError::other(format!("engine {ENGINE}: {what} at {url}: {why}"));
    block_on(async {
        let work = async {
            let client = connect(s).await?;
            let out = f(&client).await.map_err(PgError);
            drop(client);
            // Lets the connection's task see the client gone and close its socket.
            tokio::task::yield_now().await;
            out
        };
        match tokio::time::timeout(s.timeout, work).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(fail(&e)),
            Err(_) => Err(fail(&format_args!("no reply within the timeout of {:?}", s.timeout))),
        }
    })
}

/// The table's name, quoted.
fn table(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn remove(o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = KNOBS.parse(o)?;
    let drop_table = format!("DROP TABLE IF EXISTS {}", table(name));
    admin(&s, &format!("dropping table {name}"), async |c| {
        c.batch_execute(&drop_table).await
    })
}

/// The WAL position in bytes, read with a statement all versions since 10 know.
const SQL_WAL: &str = "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8";

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let name = req.namespace(ENGINE)?;
    let settings = KNOBS.parse(req.options)?;
    let create = format!(
        "CREATE {}TABLE IF NOT EXISTS {} (k bytea PRIMARY KEY, v bytea NOT NULL) WITH (fillfactor = {})",
        if settings.unlogged { "UNLOGGED " } else { "" },
        table(name),
        settings.fillfactor
    );
    let wal_at_open = admin(&settings, &format!("creating table {name}"), async |c| {
        c.batch_execute(&create).await?;
        Ok(c.query_one(SQL_WAL, &[]).await.ok().and_then(|r| r.try_get(0).ok()))
    })?;
    let stats = Link::open(
        AdminConnector {
            settings: settings.clone(),
        },
        settings.timeout,
        Arc::default(),
    )
    .ok();
    Ok(Box::new(PgStore {
        shared: Arc::new(Shared {
            settings,
            table: table(name),
            cap: req.max_value_bytes,
            links: Arc::default(),
        }),
        stats: Mutex::new(stats),
        wal_at_open,
    }))
}

struct Shared {
    settings: Settings,
    /// The quoted table name.
    table: String,
    cap: Option<u64>,
    links: Arc<LinkStats>,
}

struct PgStore {
    shared: Arc<Shared>,
    /// The sampler's connection (reconnecting on the sampler's thread, with backoff
    /// while the server is away); None if it could not connect at open.
    stats: Mutex<Option<Link<AdminConnector>>>,
    /// The WAL position when the store opened, for the WAL bytes written since.
    wal_at_open: Option<f64>,
}

/// pg_stat_database columns reported in the timeline, for this database.
const SQL_DATABASE: &str = "SELECT xact_commit::float8, xact_rollback::float8, tup_returned::float8, \
     tup_fetched::float8, tup_inserted::float8, tup_updated::float8, tup_deleted::float8, blks_hit::float8, \
     blks_read::float8 FROM pg_stat_database WHERE datname = current_database()";
const DATABASE_STATS: &[&str] = &[
    "xact_commit",
    "xact_rollback",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "blks_hit",
    "blks_read",
];
/// Checkpoints: pg_stat_bgwriter up to PostgreSQL 16, pg_stat_checkpointer from 17.
const SQL_CHECKPOINTS: &[&str] = &[
    "SELECT checkpoints_timed::float8, checkpoints_req::float8 FROM pg_stat_bgwriter",
    "SELECT num_timed::float8, num_requested::float8 FROM pg_stat_checkpointer",
];

/// The server's statistics, as `Store::stats` reports them.
async fn server_stats(c: &Client, wal_at_open: Option<f64>) -> Result<Vec<(String, f64)>, tokio_postgres::Error> {
    let mut out = Vec::new();
    let row = c.query_one(SQL_DATABASE, &[]).await?;
    for (i, name) in DATABASE_STATS.iter().enumerate() {
        out.push((name.to_string(), row.try_get::<_, Option<f64>>(i)?.unwrap_or(0.0)));
    }
    for sql in SQL_CHECKPOINTS {
        if let Ok(row) = c.query_one(*sql, &[]).await {
            out.push(("checkpoints_timed".to_string(), row.try_get(0)?));
            out.push(("checkpoints_req".to_string(), row.try_get(1)?));
            break;
        }
    }
    if let Some(at_open) = wal_at_open {
        let now: f64 = c.query_one(SQL_WAL, &[]).await?.try_get(0)?;
        out.push(("wal_bytes".to_string(), now - at_open));
    }
    Ok(out)
}

/// The sampler's connection.
struct AdminConnector {
    settings: Settings,
}

impl Connector for AdminConnector {
    type Conn = Client;
    type Error = PgError;
    const ENGINE: &'static str = ENGINE;

    fn address(&self) -> String {
        net::mask_password(&self.settings.url).into_owned()
    }

    async fn connect(&self) -> Result<Client, PgError> {
        connect(&self.settings).await
    }

    fn fault(&self, conn: &Client, e: &PgError) -> Fault {
        match conn.is_closed() || e.0.code().is_none() {
            true => Fault::Broken,
            false => Fault::Refused,
        }
    }
}

impl Store for PgStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        let connector = PgConnector {
            shared: s.clone(),
            group: None,
        };
        Ok(Box::new(PgSession {
            link: Link::open(connector, s.settings.timeout, s.links.clone())?,
            cap: s.cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX)),
        }))
    }

    fn pipelined_session(&self, group: &Pipeline) -> EngineResult<Box<dyn Session>> {
        let s = &self.shared;
        let connector = PgConnector {
            shared: s.clone(),
            group: Some(group.shared(PgGroup::default)),
        };
        Ok(Box::new(PgSession {
            link: Link::open(connector, s.settings.timeout, s.links.clone())?,
            cap: s.cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX)),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(mut link) = self.stats.lock()
            && let Some(link) = link.as_mut()
        {
            let wal_at_open = self.wal_at_open;
            if let Ok(server) = link.run("stats", async |_, c| {
                server_stats(c, wal_at_open).await.map_err(PgError)
            }) {
                out.extend(server);
            }
        }
        self.shared.links.report(&mut out);
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        super::unshare(ENGINE, self.shared).map(drop)
    }
}

/// One session's connection with its prepared statements: its own, or its pipeline
/// group's.
struct PgConn {
    client: Arc<Client>,
    /// The connection's I/O, driven by the session's requests (or a task of its own
    /// for a group's connection).
    io: Driver,
    st: Arc<Statements>,
}

/// The connection the sessions of one pipeline group share (see the module's
/// documentation), with the runtime whose task drives its I/O.
#[derive(Default)]
struct PgGroup {
    conn: Mutex<Option<(PgConn, RuntimeId)>>,
}

impl PgGroup {
    /// A handle on the group's connection if it is open on the running runtime.
    fn current(&self, here: RuntimeId) -> Option<PgConn> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        conn.as_ref()
            .filter(|(c, rt)| *rt == here && !c.client.is_closed())
            .and_then(|(c, _)| c.share())
    }

    /// Keeps `made` as the group's connection, unless another session of the group
    /// made one meanwhile: then that one is used and `made` is closed.
    fn offer(&self, made: PgConn, here: RuntimeId) -> PgConn {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(theirs) = conn
            .as_ref()
            .filter(|(c, rt)| *rt == here && !c.client.is_closed())
            .and_then(|(c, _)| c.share())
        {
            return theirs;
        }
        let mine = made.share().expect("a group's connection runs as a task");
        *conn = Some((made, here));
        mine
    }
}

impl PgConn {
    /// Another handle on a group's connection.
    fn share(&self) -> Option<PgConn> {
        Some(PgConn {
            client: Arc::clone(&self.client),
            io: self.io.share()?,
            st: Arc::clone(&self.st),
        })
    }
}

/// The statements a session prepares on its connection.
struct Statements {
    put: Statement,
    get: Statement,
    del: Statement,
    range: Statement,
    mget: Statement,
    mput: Statement,
    mdel: Statement,
    append: Statement,
    delete_range: Statement,
}

struct PgConnector {
    shared: Arc<Shared>,
    /// The pipeline group whose connection the session shares, if any.
    group: Option<Arc<PgGroup>>,
}

impl PgConnector {
    /// Sets the session's settings on a new connection (whose I/O the caller drives)
    /// and prepares its statements.
    async fn prepare(&self, client: &Client) -> Result<Statements, PgError> {
        let s = &self.shared.settings;
        client
            .batch_execute(&format!("SET synchronous_commit = {}", s.synchronous_commit))
            .await
            .map_err(PgError)?;
        let t = &self.shared.table;
        let prepare = async |sql: String, types: &[Type]| client.prepare_typed(&sql, types).await.map_err(PgError);
        let b = Type::BYTEA;
        Ok(Statements {
            put: prepare(
                format!("INSERT INTO {t} (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"),
                &[],
            )
            .await?,
            get: prepare(format!("SELECT v FROM {t} WHERE k = $1"), &[]).await?,
            del: prepare(format!("DELETE FROM {t} WHERE k = $1"), &[]).await?,
            range: prepare(
                format!("SELECT k, v FROM {t} WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3"),
                &[b.clone(), b.clone(), Type::INT8],
            )
            .await?,
            mget: prepare(format!("SELECT k, v FROM {t} WHERE k = ANY($1)"), &[Type::BYTEA_ARRAY]).await?,
            mput: prepare(
                format!(
                    "INSERT INTO {t} (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) \
                     ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v"
                ),
                &[],
            )
            .await?,
            mdel: prepare(format!("DELETE FROM {t} WHERE k = ANY($1)"), &[Type::BYTEA_ARRAY]).await?,
            // $3 is the value cap: a key whose value would pass it is left alone, and
            // a suffix longer than the cap inserts nothing.
            append: prepare(
                format!(
                    "INSERT INTO {t} AS cur (k, v) SELECT $1, $2 WHERE octet_length($2) <= $3 \
                     ON CONFLICT (k) DO UPDATE SET v = cur.v || EXCLUDED.v \
                     WHERE octet_length(cur.v)::int8 + octet_length(EXCLUDED.v) <= $3"
                ),
                &[b.clone(), b.clone(), Type::INT8],
            )
            .await?,
            delete_range: prepare(format!("DELETE FROM {t} WHERE k >= $1 AND k < $2"), &[]).await?,
        })
    }
}

impl Connector for PgConnector {
    type Conn = PgConn;
    type Error = PgError;
    const ENGINE: &'static str = ENGINE;

    fn address(&self) -> String {
        net::mask_password(&self.shared.settings.url).into_owned()
    }

    async fn connect(&self) -> Result<PgConn, PgError> {
        let s = &self.shared.settings;
        let Some(group) = &self.group else {
            let (client, io) = connect_driven(s).await?;
            let mut io = Driver::keeping_error(io);
            let st = io.drive(self.prepare(&client)).await?;
            return Ok(PgConn {
                client: Arc::new(client),
                io,
                st: Arc::new(st),
            });
        };
        let here = runtime_id();
        if let Some(conn) = group.current(here) {
            return Ok(conn);
        }
        let (client, io) = connect_driven(s).await?;
        let io = Driver::spawned(io);
        let st = self.prepare(&client).await?;
        let made = PgConn {
            client: Arc::new(client),
            io,
            st: Arc::new(st),
        };
        Ok(group.offer(made, here))
    }

    fn ended(&self, conn: &PgConn) -> Option<String> {
        conn.io.ended().map(str::to_string)
    }

    fn fault(&self, conn: &PgConn, e: &PgError) -> Fault {
        let code = e.0.code();
        if conn.client.is_closed() || e.0.is_closed() {
            Fault::Broken
        } else if code == Some(&SqlState::T_R_DEADLOCK_DETECTED) || code == Some(&SqlState::T_R_SERIALIZATION_FAILURE) {
            Fault::Busy
        } else {
            match code.map(|c| c.code()) {
                // Connection exceptions (08) and operator intervention (57: a shutdown,
                // a terminated backend), or no SQLSTATE at all (the client's own I/O).
                Some(c) if c.starts_with("08") || c.starts_with("57") => Fault::Broken,
                None => Fault::Broken,
                Some(_) => Fault::Refused,
            }
        }
    }
}

struct PgSession {
    link: Link<PgConnector>,
    /// The value cap of `append` (i64::MAX: none).
    cap: i64,
}

/// A LIMIT parameter: NULL means no limit.
fn limit_param(limit: usize) -> Option<i64> {
    (limit > 0).then(|| i64::try_from(limit).unwrap_or(i64::MAX))
}

impl PgSession {
    fn rows(&mut self, op: &str, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<Vec<tokio_postgres::Row>> {
        if lo >= hi {
            return Ok(Vec::new());
        }
        let limit = limit_param(limit);
        self.link.run(op, async |_, c| {
            c.io.drive(c.client.query(&c.st.range, &[&lo, &hi, &limit]))
                .await
                .map_err(PgError)
        })
    }
}

/// Column `i` of `row` as bytes.
fn bytes<'r>(op: &str, row: &'r tokio_postgres::Row, i: usize) -> EngineResult<&'r [u8]> {
    row.try_get(i)
        .map_err(|e| EngineError::other(format!("engine {ENGINE}: {op}: {}", PgError(e))))
}

impl Session for PgSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.link.run("put", async |_, c| {
            c.io.drive(c.client.execute(&c.st.put, &[&key, &val]))
                .await
                .map(drop)
                .map_err(PgError)
        })
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let row = self.link.run("get", async |_, c| {
            c.io.drive(c.client.query_opt(&c.st.get, &[&key]))
                .await
                .map_err(PgError)
        })?;
        match row {
            Some(row) => {
                out.set(bytes("get", &row, 0)?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let n = self.link.run("del", async |_, c| {
            c.io.drive(c.client.execute(&c.st.del, &[&key])).await.map_err(PgError)
        })?;
        Ok(if n > 0 { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        let rows = self.rows("scan", lo, hi, limit)?;
        let mut n = 0;
        for row in &rows {
            n += 1;
            if f(bytes("scan", row, 0)?, bytes("scan", row, 1)?) {
                break;
            }
        }
        Ok(n)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        for row in &self.rows("range", lo, hi, limit)? {
            out.push(bytes("range", row, 0)?, bytes("range", row, 1)?);
        }
        Ok(())
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        let rows = self.link.run("mget", async |_, c| {
            c.io.drive(c.client.query(&c.st.mget, &[&keys])).await.map_err(PgError)
        })?;
        // The rows come in no particular order: match them to the keys by key.
        let mut found: Vec<(&[u8], &[u8])> = Vec::with_capacity(rows.len());
        for row in &rows {
            found.push((bytes("mget", row, 0)?, bytes("mget", row, 1)?));
        }
        found.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for key in keys {
            match found.binary_search_by(|(k, _)| k.cmp(key)) {
                Ok(i) => out.push_hit(found[i].1),
                Err(_) => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        // One row per key (an upsert may not touch a row twice), the last value of a
        // repeated key winning as it would key by key, in key order.
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        order.sort_by(|&a, &b| pairs[a].0.cmp(pairs[b].0).then(a.cmp(&b)));
        let mut ks: Vec<&[u8]> = Vec::with_capacity(pairs.len());
        let mut vs: Vec<&[u8]> = Vec::with_capacity(pairs.len());
        for (i, &p) in order.iter().enumerate() {
            if order.get(i + 1).is_some_and(|&next| pairs[next].0 == pairs[p].0) {
                continue;
            }
            ks.push(pairs[p].0);
            vs.push(pairs[p].1);
        }
        self.link.run("mput", async |_, c| {
            c.io.drive(c.client.execute(&c.st.mput, &[&ks, &vs]))
                .await
                .map(drop)
                .map_err(PgError)
        })
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        let n = self.link.run("mdel", async |_, c| {
            c.io.drive(c.client.execute(&c.st.mdel, &[&keys]))
                .await
                .map_err(PgError)
        })?;
        Ok(Some(n as usize))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let cap = self.cap;
        let n = self.link.run("append", async |_, c| {
            c.io.drive(c.client.execute(&c.st.append, &[&key, &suffix, &cap]))
                .await
                .map_err(PgError)
        })?;
        Ok(if n == 0 { Appended::Skipped } else { Appended::Yes })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        self.link.run("delete_range", async |_, c| {
            c.io.drive(c.client.execute(&c.st.delete_range, &[&lo, &hi]))
                .await
                .map(drop)
                .map_err(PgError)
        })
    }
}

fn version() -> String {
    format!(
        "{} (client; the server's version is in SHOW server_version)",
        super::versions::crate_version("tokio-postgres")
    )
}
