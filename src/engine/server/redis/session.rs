//! A session's verbs: the lean ones in `lean.rs`, the rest here through the crate's
//! commands, pipelines and scripts.

use redis::{Cmd, Value};

use super::{RedisSession, engine_name, key_slot};
use crate::engine::{Appended, EngineError, EngineResult, Existed, ReadBuf, Rows, ScanFn, Session, Values};

/// A reply that is not what the command returns.
fn unexpected(engine: &str, op: &str, v: &Value) -> EngineError {
    EngineError::other(format!("engine {engine}: {op}: unexpected reply {v:?}"))
}

impl<const CLUSTER: bool> RedisSession<CLUSTER> {
    const NAME: &str = engine_name(CLUSTER);

    /// True when the writes take their lean form (`lean.rs`): without the index,
    /// which they would have to keep in step (reads always do).
    pub(super) fn lean(&self) -> bool {
        !self.shared.settings.index
    }

    /// True when a cluster store's keys are spread over every slot, so a batch is
    /// split by slot.
    pub(super) fn spread(&self) -> bool {
        CLUSTER && self.shared.settings.spread()
    }

    /// The slot of `prefix + key` in a cluster (0 on a single server, which ignores it).
    pub(super) fn slot(&self, key: &[u8]) -> u16 {
        if CLUSTER { key_slot(&self.shared.prefix, key) } else { 0 }
    }

    /// `prefix + key` in the scratch buffer.
    pub(super) fn prefixed(&mut self, key: &[u8]) -> &[u8] {
        self.key.clear();
        self.key.extend_from_slice(&self.shared.prefix);
        self.key.extend_from_slice(key);
        &self.key
    }

    /// Sends `pipe` (MULTI/EXEC when it is atomic) to the index's slot: the writes
    /// that keep the index in step.
    pub(super) fn send_pipe(&mut self, op: &str, pipe: &redis::Pipeline) -> EngineResult<Value> {
        let slot = self.shared.index_slot;
        self.link.run(op, async |_, c| {
            c.route(slot);
            pipe.query_async::<Value>(c).await
        })
    }

    /// Runs `inv` on `slot`.
    pub(super) fn invoke(&mut self, op: &str, slot: u16, inv: &redis::ScriptInvocation<'_>) -> EngineResult<Value> {
        self.link.run(op, async |_, c| {
            c.route(slot);
            inv.invoke_async::<Value>(c).await
        })
    }

    /// Fails at once unless the store keeps the ordered index.
    pub(super) fn need_index(&self, op: &str) -> EngineResult<()> {
        let name = Self::NAME;
        match (self.shared.settings.index, CLUSTER) {
            (true, _) => Ok(()),
            (false, false) => Err(EngineError::other(format!(
                "engine {name}: {op} needs the ordered key index, which Redis does not keep by itself: \
                 set index=zset (--engine-opt {name}.index=zset)"
            ))),
            (false, true) => Err(EngineError::other(format!(
                "engine {name}: {op} needs the ordered key index, which Redis does not keep by itself and \
                 which cannot span the primaries of layout=spread: set index=zset (--engine-opt \
                 {name}.index=zset), which puts the store in one slot (layout=slot)"
            ))),
        }
    }

    /// ZRANGEBYLEX bounds for `lo <= key < hi`.
    pub(super) fn bounds(lo: &[u8], hi: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut l = Vec::with_capacity(lo.len() + 1);
        l.push(b'[');
        l.extend_from_slice(lo);
        let mut h = Vec::with_capacity(hi.len() + 1);
        h.push(b'(');
        h.extend_from_slice(hi);
        (l, h)
    }

    /// Rows `lo <= key < hi`, at most `limit` (0: all), as the script returns them.
    pub(super) fn rows(&mut self, op: &str, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<Vec<Value>> {
        self.need_index(op)?;
        if lo >= hi {
            return Ok(Vec::new());
        }
        let (l, h) = Self::bounds(lo, hi);
        let limit: i64 = if limit == 0 { -1 } else { limit as i64 };
        let shared = self.shared.clone();
        let mut inv = shared.range.prepare_invoke();
        inv.key(&shared.index[..])
            .arg(l)
            .arg(h)
            .arg(limit)
            .arg(&shared.prefix[..]);
        match self.invoke(op, shared.index_slot, &inv)? {
            Value::Array(items) if items.len() % 2 == 0 => Ok(items),
            other => Err(unexpected(Self::NAME, op, &other)),
        }
    }
}

/// The bytes of a bulk string reply.
fn bulk<'v>(engine: &str, op: &str, v: &'v Value) -> EngineResult<&'v [u8]> {
    match v {
        Value::BulkString(b) => Ok(b),
        other => Err(unexpected(engine, op, other)),
    }
}

impl<const CLUSTER: bool> Session for RedisSession<CLUSTER> {
    fn reconnect(&mut self) -> EngineResult<()> {
        self.link.reconnect()
    }

    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        if self.lean() {
            return self.lean_put(key, val);
        }
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("SET")
            .arg(self.prefixed(key))
            .arg(val)
            .ignore()
            .cmd("ZADD")
            .arg(&self.shared.index[..])
            .arg(0)
            .arg(key)
            .ignore();
        self.send_pipe("put", &pipe).map(drop)
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        self.lean_get(key, out)
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        if self.lean() {
            return self.lean_del(key);
        }
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("DEL")
            .arg(self.prefixed(key))
            .cmd("ZREM")
            .arg(&self.shared.index[..])
            .arg(key)
            .ignore();
        match self.send_pipe("del", &pipe)? {
            Value::Array(v) if matches!(v.as_slice(), [Value::Int(n)] if *n > 0) => Ok(Existed::Yes),
            Value::Array(v) if matches!(v.as_slice(), [Value::Int(_)]) => Ok(Existed::No),
            other => Err(unexpected(Self::NAME, "del", &other)),
        }
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        let items = self.rows("scan", lo, hi, limit)?;
        let mut n = 0;
        for pair in items.chunks_exact(2) {
            n += 1;
            if f(bulk(Self::NAME, "scan", &pair[0])?, bulk(Self::NAME, "scan", &pair[1])?) {
                break;
            }
        }
        Ok(n)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        let items = self.rows("range", lo, hi, limit)?;
        for pair in items.chunks_exact(2) {
            out.push(
                bulk(Self::NAME, "range", &pair[0])?,
                bulk(Self::NAME, "range", &pair[1])?,
            );
        }
        Ok(())
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        match self.spread() {
            true => self.spread_mget(keys, out),
            false => self.lean_mget(keys, out),
        }
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        if self.spread() {
            return self.spread_mput(pairs);
        }
        if self.lean() {
            return self.lean_mput(pairs);
        }
        let mut mset = Cmd::new();
        mset.arg("MSET");
        for (k, v) in pairs {
            mset.arg(self.prefixed(k)).arg(*v);
        }
        let mut zadd = Cmd::new();
        zadd.arg("ZADD").arg(&self.shared.index[..]);
        for (k, _) in pairs {
            zadd.arg(0).arg(*k);
        }
        let mut pipe = redis::pipe();
        pipe.atomic().add_command(mset).ignore().add_command(zadd).ignore();
        self.send_pipe("mput", &pipe).map(drop)
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        if self.spread() {
            return self.spread_mdel(keys).map(Some);
        }
        if self.lean() {
            return self.lean_mdel(keys).map(Some);
        }
        let mut del = Cmd::new();
        del.arg("DEL");
        for k in keys {
            del.arg(self.prefixed(k));
        }
        let mut zrem = Cmd::new();
        zrem.arg("ZREM").arg(&self.shared.index[..]);
        for k in keys {
            zrem.arg(*k);
        }
        let mut pipe = redis::pipe();
        pipe.atomic().add_command(del).add_command(zrem).ignore();
        match self.send_pipe("mdel", &pipe)? {
            Value::Array(v) => match v.as_slice() {
                [Value::Int(n)] => Ok(Some((*n).max(0) as usize)),
                _ => Err(unexpected(Self::NAME, "mdel", &Value::Array(v))),
            },
            other => Err(unexpected(Self::NAME, "mdel", &other)),
        }
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let cap: i64 = self.shared.cap.map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX));
        let shared = self.shared.clone();
        let slot = self.slot(key);
        let mut inv = shared.append.prepare_invoke();
        inv.key(self.prefixed(key));
        if shared.settings.index {
            inv.key(&shared.index[..]);
        }
        inv.arg(suffix).arg(cap).arg(key);
        match self.invoke("append", slot, &inv)? {
            Value::Int(1) => Ok(Appended::Yes),
            Value::Int(0) => Ok(Appended::Skipped),
            other => Err(unexpected(Self::NAME, "append", &other)),
        }
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        self.need_index("delete_range")?;
        if lo >= hi {
            return Ok(());
        }
        let (l, h) = Self::bounds(lo, hi);
        let shared = self.shared.clone();
        let mut inv = shared.delete_range.prepare_invoke();
        inv.key(&shared.index[..]).arg(l).arg(h).arg(&shared.prefix[..]);
        self.invoke("delete_range", shared.index_slot, &inv).map(drop)
    }
}
