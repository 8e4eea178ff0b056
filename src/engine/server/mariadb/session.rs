//! The session: every verb of the contract as prepared statements on the session's
//! connection, batches past [`CHUNK`] keys split into several in one transaction.

use mysql_async::prelude::Queryable;
use mysql_async::{Params, Row, Value};

use super::flavor::Kind;
use super::net::Link;
use super::{Batch, CHUNK, MyConnector, MyError};
use crate::engine::{Appended, EngineResult, Existed, ReadBuf, Rows, ScanFn, Session, Values};

pub(super) struct MySession<K: Kind> {
    pub(super) link: Link<MyConnector<K>>,
    /// The value cap of `append` (u64::MAX: none).
    pub(super) cap: u64,
    /// Scratch: the order of a batch's pairs by key.
    pub(super) order: Vec<usize>,
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
    fn reconnect(&mut self) -> EngineResult<()> {
        self.link.reconnect()
    }

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
