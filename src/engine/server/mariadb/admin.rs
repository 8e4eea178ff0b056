//! The work outside sessions, each on a connection of its own: creating and dropping
//! tables, the probe, and the server statistics the sampler reads.

use mysql_async::Conn;
use mysql_async::prelude::Queryable;

use super::flavor::Flavor;
use super::knobs::{Settings, start};
use super::{MyError, connect, net};
use crate::engine::inflight::block_on;
use crate::engine::{EngineError, EngineOptions, EngineResult};

/// Runs `f` on a connection of its own, for work outside sessions (creating and
/// dropping tables, the probe), all of it within the timeout.
pub(super) fn admin<T>(
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

pub(super) fn address(flavor: &Flavor, o: &EngineOptions) -> String {
    net::mask_password(&flavor.knobs.parse(o).unwrap_or_else(|_| start()).url).into_owned()
}

pub(super) fn probe(flavor: &Flavor, o: &EngineOptions) -> Result<(), String> {
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
pub(super) fn table(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

pub(super) fn remove(flavor: &Flavor, o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = flavor.knobs.parse(o)?;
    let drop_table = format!("DROP TABLE IF EXISTS {}", table(name));
    admin(flavor, &s, &format!("dropping table {name}"), async |c| {
        c.query_drop(drop_table).await
    })
}

/// The flavor's server status variables, lower-cased, as `Store::stats` reports them.
pub(super) async fn server_stats(flavor: &Flavor, c: &mut Conn) -> Result<Vec<(String, f64)>, MyError> {
    let names: Vec<String> = flavor.status.iter().map(|n| format!("'{n}'")).collect();
    let sql = format!("SHOW GLOBAL STATUS WHERE Variable_name IN ({})", names.join(", "));
    let rows: Vec<(String, String)> = c.query(sql).await?;
    Ok(rows
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_ascii_lowercase(), value.trim().parse().ok()?)))
        .collect())
}
