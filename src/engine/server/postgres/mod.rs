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
//!
//! The settings and their knobs are in `knobs.rs`, that work outside sessions in
//! `admin.rs`, the verbs in `session.rs`; this file opens stores and connections.

use std::sync::{Arc, Mutex};

use futures_util::future::Either;
use tokio_postgres::error::SqlState;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, Config, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use self::admin::{AdminConnector, SQL_WAL, admin, remove, server_stats, table};
use self::knobs::{KNOBS, Settings, start};
use self::session::PgSession;
use super::inflight::{RuntimeId, runtime_id};
use super::net::{self, Connector, Driver, Fault, Link, LinkStats};
use crate::engine::{
    AppendMethod, EngineInfo, EngineResult, OpenRequest, Pipeline, ServerKind, Session, StorageKind, Store,
};

mod admin;
mod knobs;
mod session;

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

static SERVER: ServerKind = ServerKind {
    namespace: "table",
    address: |o| net::mask_password(&KNOBS.parse(o).unwrap_or_else(|_| start()).url).into_owned(),
    probe: |o| {
        let s = KNOBS.parse(o).map_err(|e| e.message)?;
        admin(&s, "probe", async |c| c.simple_query("SELECT 1").await.map(drop)).map_err(|e| e.message)
    },
    remove,
    pipeline: true,
    ordered: true,
};

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
    let mut config: Config = s.conn.parse().map_err(PgError)?;
    if s.ssl == knobs::SslMode::Disable {
        config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        let (client, connection) = config.connect(NoTls).await.map_err(PgError)?;
        return Ok((client, Either::Left(async move { connection.await.map_err(PgError) })));
    }
    config.ssl_mode(tokio_postgres::config::SslMode::Require);
    let tls = PgTls(s.tls_connector());
    let (client, connection) = config.connect(tls).await.map_err(PgError)?;
    Ok((client, Either::Right(async move { connection.await.map_err(PgError) })))
}

/// tokio-postgres's TLS connector for the settings' configuration, or the reason
/// there is none, which connecting then fails with (the knob check has refused
/// it already unless a file changed since).
struct PgTls(Result<MakeRustlsConnect, String>);

impl<S> MakeTlsConnect<S> for PgTls
where
    MakeRustlsConnect: MakeTlsConnect<S, Error = std::convert::Infallible>,
{
    type Stream = <MakeRustlsConnect as MakeTlsConnect<S>>::Stream;
    type TlsConnect = <MakeRustlsConnect as MakeTlsConnect<S>>::TlsConnect;
    type Error = std::io::Error;

    fn make_tls_connect(&mut self, host: &str) -> Result<Self::TlsConnect, std::io::Error> {
        match &mut self.0 {
            Ok(make) => match MakeTlsConnect::<S>::make_tls_connect(make, host) {
                Ok(connect) => Ok(connect),
                Err(never) => match never {},
            },
            Err(why) => Err(std::io::Error::other(why.clone())),
        }
    }
}

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
        crate::engine::unshare(ENGINE, self.shared).map(drop)
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

fn version() -> String {
    format!(
        "{} (client; the server's version is in SHOW server_version)",
        crate::engine::versions::crate_version("tokio-postgres")
    )
}
