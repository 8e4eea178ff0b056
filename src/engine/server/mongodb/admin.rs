//! The work outside sessions, each on a client of its own: creating and dropping
//! collections, the probe, and the server statistics the sampler reads.

use mongodb::Client;
use mongodb::bson::{Bson, Document, rawdoc};

use super::knobs::{KNOBS, Settings};
use super::{ENGINE, MongoError, NAMESPACE_NOT_FOUND, code, connect, database, net};
use crate::engine::inflight::block_on;
use crate::engine::{EngineError, EngineOptions, EngineResult};

/// Runs `f` on a client of its own, for work outside sessions (creating and dropping
/// collections, the probe), all of it within the timeout.
pub(super) fn admin<T>(
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
        // The driver gives up after `s.timeout` itself (connect and server selection),
        // naming why (a refused certificate, a refused connection); this guard only
        // catches a hang, so it waits twice as long: at the same length, on a busy
        // machine it fired first and hid the driver's reason.
        let guard = s.timeout * 2;
        match tokio::time::timeout(guard, work).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(fail(&e)),
            Err(_) => Err(fail(&format_args!("no reply within {guard:?} (twice the timeout)"))),
        }
    })
}

pub(super) fn remove(o: &EngineOptions, name: &str) -> EngineResult<()> {
    let s = KNOBS.parse(o)?;
    admin(&s, &format!("dropping collection {name}"), async |c| {
        match database(c).collection::<Document>(name).drop().await {
            Err(e) if code(&e) == Some(NAMESPACE_NOT_FOUND) => Ok(()),
            other => other,
        }
    })
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
pub(super) async fn server_stats(c: &Client, collection: &str) -> Result<Vec<(String, f64)>, mongodb::error::Error> {
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
