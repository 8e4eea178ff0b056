//! The single-key and batch verbs on the measured path (the writes only without the
//! index, which they would have to keep in step): each request is encoded straight
//! into the connection's write buffer and its reply read in place (see `resp` and
//! `pipe`), with no `Cmd` or `Value`. On a cluster each goes to its slot's primary
//! (`cluster`); with `layout=spread` a batch is split by slot. The other verbs and the
//! writes with `index=zset` go through the crate's types in `mod.rs`.

use redis::{ErrorKind, RedisError};

use super::resp::{self, Item};
use super::{Conn, RedisSession, key_slot};
use crate::engine::{EngineResult, Existed, ReadBuf, Values};

/// What a reply that is not the expected one means: the server's refusal (`-ERR`,
/// classified by the crate as every other server error is), or a reply of the wrong
/// shape.
fn refused(frame: &[u8], op: &str) -> RedisError {
    if frame.first() == Some(&b'-')
        && let Err(e) = redis::parse_redis_value(frame).and_then(|v| v.extract_error())
    {
        return e;
    }
    let shown = &frame[..frame.len().min(64)];
    RedisError::from((
        ErrorKind::UnexpectedReturnType,
        "unexpected reply",
        format!("{op}: {:?}", String::from_utf8_lossy(shown)),
    ))
}

/// The one item of a reply frame.
fn only<'f>(frame: &'f [u8], op: &str) -> Result<Item<'f>, RedisError> {
    match resp::item(frame) {
        Ok(Some((item, len))) if len == frame.len() => Ok(item),
        _ => Err(refused(frame, op)),
    }
}

/// The value of a GET's reply frame: Some for a hit, None for a miss.
fn got<'f>(frame: &'f [u8], op: &str) -> Result<Option<&'f [u8]>, RedisError> {
    match only(frame, op)? {
        Item::Bulk(v) => Ok(v),
        _ => Err(refused(frame, op)),
    }
}

/// The count of a DEL's reply frame.
fn count(frame: &[u8], op: &str) -> Result<usize, RedisError> {
    match only(frame, op)? {
        Item::Int(n) => Ok(n.max(0) as usize),
        _ => Err(refused(frame, op)),
    }
}

/// A `+OK` reply.
fn ok(frame: &[u8], op: &str) -> Result<(), RedisError> {
    match frame {
        b"+OK\r\n" => Ok(()),
        _ => Err(refused(frame, op)),
    }
}

/// The cluster's primaries of a spread store's connection.
fn nodes(conn: &mut Conn) -> Result<&mut super::Nodes, RedisError> {
    match conn {
        Conn::Cluster(nodes, _) => Ok(nodes),
        Conn::Piped(..) => Err(RedisError::from((
            ErrorKind::Client,
            "a single server on the cluster path",
        ))),
    }
}

impl<const CLUSTER: bool> RedisSession<CLUSTER> {
    /// GET
    pub(super) fn lean_get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let prefix = &self.shared.prefix[..];
        let slot = self.slot(key);
        self.link.run("get", async |_, conn| {
            let frame = conn
                .exchange(slot, 1, |w| {
                    w.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
                    resp::bulk(w, &[prefix, key]);
                })
                .await?;
            Ok(got(frame, "get")?.map(|v| out.set(v)).is_some())
        })
    }

    /// SET
    pub(super) fn lean_put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        let slot = self.slot(key);
        self.link.run("put", async |_, conn| {
            let frame = conn
                .exchange(slot, 1, |w| {
                    w.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
                    resp::bulk(w, &[prefix, key]);
                    resp::bulk(w, &[val]);
                })
                .await?;
            ok(frame, "put")
        })
    }

    /// DEL of one key: its count tells whether the key existed.
    pub(super) fn lean_del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.lean_mdel(&[key])
            .map(|n| if n > 0 { Existed::Yes } else { Existed::No })
    }

    /// MGET (on a cluster, of keys in one slot)
    pub(super) fn lean_mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        let slot = self.slot(keys[0]);
        self.link.run("mget", async |_, conn| {
            let frame = conn
                .exchange(slot, 1, |w| {
                    resp::array(w, 1 + keys.len());
                    resp::bulk(w, &[b"MGET"]);
                    for key in keys {
                        resp::bulk(w, &[prefix, key]);
                    }
                })
                .await?;
            match resp::item(frame) {
                Ok(Some((Item::Array(Some(n)), mut at))) if n == keys.len() => {
                    for _ in 0..n {
                        match resp::item(&frame[at..]) {
                            Ok(Some((Item::Bulk(Some(v)), len))) => {
                                out.push_hit(v);
                                at += len;
                            }
                            Ok(Some((Item::Bulk(None), len))) => {
                                out.push_miss();
                                at += len;
                            }
                            _ => return Err(refused(frame, "mget")),
                        }
                    }
                    Ok(())
                }
                _ => Err(refused(frame, "mget")),
            }
        })
    }

    /// MSET (atomic; on a cluster, of keys in one slot)
    pub(super) fn lean_mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        let slot = self.slot(pairs[0].0);
        self.link.run("mput", async |_, conn| {
            let frame = conn
                .exchange(slot, 1, |w| {
                    resp::array(w, 1 + 2 * pairs.len());
                    resp::bulk(w, &[b"MSET"]);
                    for (key, val) in pairs {
                        resp::bulk(w, &[prefix, key]);
                        resp::bulk(w, &[val]);
                    }
                })
                .await?;
            ok(frame, "mput")
        })
    }

    /// DEL of several keys (on a cluster, in one slot): how many existed.
    pub(super) fn lean_mdel(&mut self, keys: &[&[u8]]) -> EngineResult<usize> {
        let prefix = &self.shared.prefix[..];
        let op = if keys.len() == 1 { "del" } else { "mdel" };
        let slot = self.slot(keys[0]);
        self.link.run(op, async |_, conn| {
            let frame = conn
                .exchange(slot, 1, |w| {
                    resp::array(w, 1 + keys.len());
                    resp::bulk(w, &[b"DEL"]);
                    for key in keys {
                        resp::bulk(w, &[prefix, key]);
                    }
                })
                .await?;
            count(frame, op)
        })
    }

    /// A spread store's MGET: a GET per key, split by slot over the primaries.
    pub(super) fn spread_mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        let (held, spans) = (&mut self.held, &mut self.spans);
        held.clear();
        spans.clear();
        spans.resize(keys.len(), None);
        self.link.run("mget", async |_, conn| {
            nodes(conn)?
                .batch(
                    keys.len(),
                    |i| key_slot(prefix, keys[i]),
                    |w, i| {
                        w.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
                        resp::bulk(w, &[prefix, keys[i]]);
                    },
                    |i, frame| {
                        if let Some(v) = got(frame, "mget")? {
                            spans[i] = Some((held.len(), v.len()));
                            held.extend_from_slice(v);
                        }
                        Ok(())
                    },
                )
                .await
        })?;
        for span in &self.spans {
            match span {
                Some((at, len)) => out.push_hit(&self.held[*at..at + len]),
                None => out.push_miss(),
            }
        }
        Ok(())
    }

    /// A spread store's MSET: a SET per key, split by slot over the primaries (not
    /// atomic: each key's SET is).
    pub(super) fn spread_mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        self.link.run("mput", async |_, conn| {
            nodes(conn)?
                .batch(
                    pairs.len(),
                    |i| key_slot(prefix, pairs[i].0),
                    |w, i| {
                        w.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
                        resp::bulk(w, &[prefix, pairs[i].0]);
                        resp::bulk(w, &[pairs[i].1]);
                    },
                    |_, frame| ok(frame, "mput"),
                )
                .await
        })
    }

    /// A spread store's multi-key DEL: a DEL per key, split by slot; how many existed.
    pub(super) fn spread_mdel(&mut self, keys: &[&[u8]]) -> EngineResult<usize> {
        let prefix = &self.shared.prefix[..];
        self.link.run("mdel", async |_, conn| {
            let mut existed = 0;
            nodes(conn)?
                .batch(
                    keys.len(),
                    |i| key_slot(prefix, keys[i]),
                    |w, i| {
                        w.extend_from_slice(b"*2\r\n$3\r\nDEL\r\n");
                        resp::bulk(w, &[prefix, keys[i]]);
                    },
                    |_, frame| {
                        existed += count(frame, "mdel")?;
                        Ok(())
                    },
                )
                .await?;
            Ok(existed)
        })
    }
}
