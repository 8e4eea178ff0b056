//! The work outside sessions, each on a connection of its own: creating and dropping
//! tables, the probe, and the sampler's connection with the server statistics it reads.

use tokio_postgres::Client;

use super::net::{self, Connector, Fault};
use super::{ENGINE, KNOBS, PgError, Settings, connect};
use crate::engine::inflight::block_on;
use crate::engine::{EngineError, EngineOptions, EngineResult};

/// Runs `f` on a connection of its own, for work outside sessions (creating and
/// dropping tables, the probe), all of it within the timeout. This is the async client
/// through [`block_on`] rather than the blocking `postgres` client, whose timeout covers
/// only the TCP connect: a server that accepts and never answers would hang it.
pub(super) fn admin<T>(
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
pub(super) fn table(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

pub(super) fn remove(o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = KNOBS.parse(o)?;
    let drop_table = format!("DROP TABLE IF EXISTS {}", table(name));
    admin(&s, &format!("dropping table {name}"), async |c| {
        c.batch_execute(&drop_table).await
    })
}

/// The WAL position in bytes, read with a statement all versions since 10 know.
pub(super) const SQL_WAL: &str = "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8";

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
pub(super) async fn server_stats(
    c: &Client,
    wal_at_open: Option<f64>,
) -> Result<Vec<(String, f64)>, tokio_postgres::Error> {
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
pub(super) struct AdminConnector {
    pub(super) settings: Settings,
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
