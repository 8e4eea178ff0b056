//! The session: every verb of the contract as one request, or one transaction, on the
//! session's member.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, Txn, TxnOp, TxnOpResponse};

use super::net::Link;
use super::{ENGINE, MemberConnector, Shared};
use crate::engine::{Appended, EngineError, EngineResult, Existed, ReadBuf, Rows, ScanFn, Session, Values};

pub(super) struct EtcdSession {
    pub(super) link: Link<MemberConnector>,
    pub(super) shared: Arc<Shared>,
    /// Scratch for one prefixed key, and for a range's prefixed end.
    pub(super) key: Vec<u8>,
    pub(super) end: Vec<u8>,
}

/// A reply that is not what the request returns.
fn unexpected(op: &str, what: &str) -> EngineError {
    EngineError::other(format!("engine {ENGINE}: {op}: unexpected reply ({what})"))
}

impl EtcdSession {
    /// `prefix + key`, owned (the client's requests take their keys by value).
    fn prefixed(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.shared.prefix.len() + key.len());
        k.extend_from_slice(&self.shared.prefix);
        k.extend_from_slice(key);
        k
    }

    /// Sets `self.key` and `self.end` to the prefixed bounds of `[lo, hi)`.
    fn bounds(&mut self, lo: &[u8], hi: &[u8]) {
        for (buf, k) in [(&mut self.key, lo), (&mut self.end, hi)] {
            buf.clear();
            buf.extend_from_slice(&self.shared.prefix);
            buf.extend_from_slice(k);
        }
    }

    /// The key without the store's prefix.
    fn strip<'k>(&self, op: &str, key: &'k [u8]) -> EngineResult<&'k [u8]> {
        key.strip_prefix(&self.shared.prefix[..])
            .ok_or_else(|| unexpected(op, "a key outside the store's prefix"))
    }

    /// Rows `lo <= key < hi`, at most `limit` (0: all), in key order.
    fn rows(&mut self, op: &str, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<etcd_client::GetResponse> {
        self.bounds(lo, hi);
        let options = GetOptions::new()
            .with_range(self.end.as_slice())
            .with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        let key = self.key.as_slice();
        self.link.run(op, async |_, c| c.kv.get(key, Some(options)).await)
    }
}

/// Keys in order with the last of each repeated key kept: positions into the batch.
fn last_of_each<T>(items: &[T], key: impl Fn(&T) -> &[u8]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| key(&items[a]).cmp(key(&items[b])).then(a.cmp(&b)));
    let mut kept = Vec::with_capacity(order.len());
    for (i, &p) in order.iter().enumerate() {
        if order
            .get(i + 1)
            .is_some_and(|&next| key(&items[next]) == key(&items[p]))
        {
            continue;
        }
        kept.push(p);
    }
    kept
}

impl Session for EtcdSession {
    fn reconnect(&mut self) -> EngineResult<()> {
        self.link.reconnect()
    }

    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let k = self.prefixed(key);
        self.link
            .run("put", async |_, c| c.kv.put(k, val, None).await.map(drop))
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let k = self.prefixed(key);
        let resp = self.link.run("get", async |_, c| c.kv.get(k, None).await)?;
        match resp.kvs().first() {
            Some(kv) => {
                out.set(kv.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let k = self.prefixed(key);
        let resp = self.link.run("del", async |_, c| c.kv.delete(k, None).await)?;
        Ok(if resp.deleted() > 0 { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let resp = self.rows("scan", lo, hi, limit)?;
        let mut n = 0;
        for kv in resp.kvs() {
            n += 1;
            if f(self.strip("scan", kv.key())?, kv.value()) {
                break;
            }
        }
        Ok(n)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        if lo >= hi {
            return Ok(());
        }
        let resp = self.rows("range", lo, hi, limit)?;
        for kv in resp.kvs() {
            out.push(self.strip("range", kv.key())?, kv.value());
        }
        Ok(())
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        let ops: Vec<TxnOp> = keys.iter().map(|k| TxnOp::get(self.prefixed(k), None)).collect();
        let txn = Txn::new().and_then(ops);
        let resp = self.link.run("mget", async |_, c| c.kv.txn(txn).await)?;
        let replies = resp.op_responses();
        if replies.len() != keys.len() {
            return Err(unexpected("mget", "a reply per key"));
        }
        for reply in &replies {
            match reply {
                TxnOpResponse::Get(r) => match r.kvs().first() {
                    Some(kv) => out.push_hit(kv.value()),
                    None => out.push_miss(),
                },
                _ => return Err(unexpected("mget", "a Range reply")),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        let ops: Vec<TxnOp> = last_of_each(pairs, |p| p.0)
            .into_iter()
            .map(|i| TxnOp::put(self.prefixed(pairs[i].0), pairs[i].1, None))
            .collect();
        let txn = Txn::new().and_then(ops);
        self.link.run("mput", async |_, c| c.kv.txn(txn).await.map(drop))
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        let ops: Vec<TxnOp> = last_of_each(keys, |k| k)
            .into_iter()
            .map(|i| TxnOp::delete(self.prefixed(keys[i]), None))
            .collect();
        let txn = Txn::new().and_then(ops);
        let resp = self.link.run("mdel", async |_, c| c.kv.txn(txn).await)?;
        let mut n = 0;
        for reply in resp.op_responses() {
            match reply {
                TxnOpResponse::Delete(r) => n += r.deleted().max(0) as usize,
                _ => return Err(unexpected("mdel", "a DeleteRange reply")),
            }
        }
        Ok(Some(n))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let k = self.prefixed(key);
        let cap = self.shared.cap;
        let retries = &self.shared.counters.append_retries;
        self.link.run("append", async |_, c| {
            // The current value and its revision (0: absent).
            let resp = c.kv.get(k.as_slice(), None).await?;
            let mut current = resp.kvs().first().map(|kv| (kv.value().to_vec(), kv.mod_revision()));
            loop {
                let (value, compare) = match &current {
                    Some((v, rev)) => (
                        v.as_slice(),
                        Compare::mod_revision(k.as_slice(), CompareOp::Equal, *rev),
                    ),
                    None => (&[][..], Compare::create_revision(k.as_slice(), CompareOp::Equal, 0)),
                };
                if value.len() + suffix.len() > cap {
                    return Ok(Appended::Skipped);
                }
                let mut grown = Vec::with_capacity(value.len() + suffix.len());
                grown.extend_from_slice(value);
                grown.extend_from_slice(suffix);
                let txn = Txn::new()
                    .when([compare])
                    .and_then([TxnOp::put(k.as_slice(), grown, None)])
                    .or_else([TxnOp::get(k.as_slice(), None)]);
                let resp = c.kv.txn(txn).await?;
                if resp.succeeded() {
                    return Ok(Appended::Yes);
                }
                // Another writer got there first: its value is in the else branch's reply.
                retries.fetch_add(1, Ordering::Relaxed);
                current = match resp.op_responses().first() {
                    Some(TxnOpResponse::Get(r)) => r.kvs().first().map(|kv| (kv.value().to_vec(), kv.mod_revision())),
                    _ => None,
                };
            }
        })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        self.bounds(lo, hi);
        let options = DeleteOptions::new().with_range(self.end.as_slice());
        let key = self.key.as_slice();
        self.link.run("delete_range", async |_, c| {
            c.kv.delete(key, Some(options)).await.map(drop)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_keep_the_last_value_of_a_repeated_key() {
        let pairs: [(&[u8], &[u8]); 4] = [(b"b", b"1"), (b"a", b"2"), (b"b", b"3"), (b"c", b"4")];
        let kept: Vec<(&[u8], &[u8])> = last_of_each(&pairs, |p| p.0).into_iter().map(|i| pairs[i]).collect();
        assert_eq!(kept, [(&b"a"[..], &b"2"[..]), (b"b", b"3"), (b"c", b"4")]);
    }
}
