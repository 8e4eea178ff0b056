//! The single-key and batch verbs of a single server on the measured path (the
//! writes only without the index, which they would have to keep in step): each
//! request is encoded straight into the connection's write buffer and its reply read
//! in place (see `resp` and `pipe`), with no `Cmd` or `Value`. The other verbs, the
//! writes with `index=zset`, and everything on a cluster go through the crate's types
//! in `mod.rs`.

use redis::{ErrorKind, RedisError};

use super::resp::{self, Item};
use super::{Conn, RedisSession};
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

/// The pipe of a single server's connection.
fn piped(conn: &mut Conn) -> Result<&super::PipeRef, RedisError> {
    match conn {
        Conn::Piped(p, _) => Ok(p),
        Conn::Cluster(_) => Err(RedisError::from((
            ErrorKind::Client,
            "a cluster connection on the lean path",
        ))),
    }
}

/// The one item of a reply frame.
fn only<'f>(frame: &'f [u8], op: &str) -> Result<Item<'f>, RedisError> {
    match resp::item(frame) {
        Ok(Some((item, len))) if len == frame.len() => Ok(item),
        _ => Err(refused(frame, op)),
    }
}

impl<const CLUSTER: bool> RedisSession<CLUSTER> {
    /// GET
    pub(super) fn lean_get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let prefix = &self.shared.prefix[..];
        self.link.run("get", async |_, conn| {
            let p = piped(conn)?;
            p.send(1, |w| {
                w.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
                resp::bulk(w, &[prefix, key]);
            })?;
            p.reply().await?;
            let frame = p.frames()?;
            match only(frame, "get")? {
                Item::Bulk(Some(v)) => {
                    out.set(v);
                    Ok(true)
                }
                Item::Bulk(None) => Ok(false),
                _ => Err(refused(frame, "get")),
            }
        })
    }

    /// SET
    pub(super) fn lean_put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        self.link.run("put", async |_, conn| {
            let p = piped(conn)?;
            p.send(1, |w| {
                w.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
                resp::bulk(w, &[prefix, key]);
                resp::bulk(w, &[val]);
            })?;
            p.reply().await?;
            ok(p.frames()?, "put")
        })
    }

    /// DEL of one key: its count tells whether the key existed.
    pub(super) fn lean_del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.lean_mdel(&[key])
            .map(|n| if n > 0 { Existed::Yes } else { Existed::No })
    }

    /// MGET
    pub(super) fn lean_mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        self.link.run("mget", async |_, conn| {
            let p = piped(conn)?;
            p.send(1, |w| {
                resp::array(w, 1 + keys.len());
                resp::bulk(w, &[b"MGET"]);
                for key in keys {
                    resp::bulk(w, &[prefix, key]);
                }
            })?;
            p.reply().await?;
            let frame = p.frames()?;
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

    /// MSET (atomic)
    pub(super) fn lean_mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let prefix = &self.shared.prefix[..];
        self.link.run("mput", async |_, conn| {
            let p = piped(conn)?;
            p.send(1, |w| {
                resp::array(w, 1 + 2 * pairs.len());
                resp::bulk(w, &[b"MSET"]);
                for (key, val) in pairs {
                    resp::bulk(w, &[prefix, key]);
                    resp::bulk(w, &[val]);
                }
            })?;
            p.reply().await?;
            ok(p.frames()?, "mput")
        })
    }

    /// DEL of several keys: how many existed.
    pub(super) fn lean_mdel(&mut self, keys: &[&[u8]]) -> EngineResult<usize> {
        let prefix = &self.shared.prefix[..];
        let op = if keys.len() == 1 { "del" } else { "mdel" };
        self.link.run(op, async |_, conn| {
            let p = piped(conn)?;
            p.send(1, |w| {
                resp::array(w, 1 + keys.len());
                resp::bulk(w, &[b"DEL"]);
                for key in keys {
                    resp::bulk(w, &[prefix, key]);
                }
            })?;
            p.reply().await?;
            let frame = p.frames()?;
            match only(frame, op)? {
                Item::Int(n) => Ok(n.max(0) as usize),
                _ => Err(refused(frame, op)),
            }
        })
    }
}

/// A `+OK` reply.
fn ok(frame: &[u8], op: &str) -> Result<(), RedisError> {
    match frame {
        b"+OK\r\n" => Ok(()),
        _ => Err(refused(frame, op)),
    }
}
