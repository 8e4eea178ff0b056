//! The session: every verb of the contract as one prepared statement on the session's
//! connection.

use super::net::Link;
use super::{ENGINE, PgConnector, PgError};
use crate::engine::{Appended, EngineError, EngineResult, Existed, ReadBuf, Rows, ScanFn, Session, Values};

pub(super) struct PgSession {
    pub(super) link: Link<PgConnector>,
    /// The value cap of `append` (i64::MAX: none).
    pub(super) cap: i64,
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
    fn reconnect(&mut self) -> EngineResult<()> {
        self.link.reconnect()
    }

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
