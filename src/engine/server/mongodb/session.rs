//! The session: every verb of the contract as one driver request (two for `mput` with
//! keys that exist, and for an `append` that collides).

use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, RawArrayBuf, RawBsonRef, RawDocument, RawDocumentBuf, cstr, doc, rawdoc};
use mongodb::error::ErrorKind;

use super::document::{document, hex, hex_into, key_of, keys_filter, range_filter, value};
use super::net::Link;
use super::{ClientConnector, DUPLICATE_KEY, ENGINE, MPUT_COMMAND_BYTES, MongoError, code};
use crate::engine::{Appended, EngineError, EngineResult, Existed, ReadBuf, Rows, ScanFn, Session, Values};

pub(super) struct MongoSession {
    pub(super) link: Link<ClientConnector>,
    /// The value cap of `append`.
    pub(super) cap: Option<u64>,
    /// Scratch for one key in hex.
    pub(super) hex: String,
    /// Scratch for a value of several pieces.
    pub(super) joined: Vec<u8>,
}

fn count(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

impl MongoSession {
    /// Walks the rows of [lo, hi) in key order, at most `limit` (0: all), handing each
    /// to `f` until it says stop; returns how many it was handed.
    fn walk(
        &mut self,
        op: &str,
        lo: &[u8],
        hi: &[u8],
        limit: usize,
        f: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let MongoSession { link, joined, .. } = self;
        let filter = range_filter(lo, hi);
        let mut key = Vec::new();
        link.run(op, async |_, c| {
            let mut find = c.coll.find(filter).sort(doc! {"_id": 1});
            if limit > 0 {
                find = find.limit(i64::try_from(limit).unwrap_or(i64::MAX));
            }
            let mut cursor = find.await?;
            let mut n = 0;
            while cursor.advance().await? {
                let doc = cursor.current();
                n += 1;
                let stop = match (key_of(op, doc, &mut key), value(op, doc, joined)) {
                    (Ok(k), Ok(v)) => f(k, v),
                    (Err(e), _) | (_, Err(e)) => return Ok(Err(e)),
                };
                if stop {
                    break;
                }
            }
            Ok(Ok(n))
        })?
    }
}

impl Session for MongoSession {
    fn reconnect(&mut self) -> EngineResult<()> {
        self.link.reconnect()
    }

    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        hex_into(key, &mut self.hex);
        let doc = document(&self.hex, val);
        let filter = doc! {"_id": self.hex.as_str()};
        self.link.run("put", async |_, c| {
            c.coll
                .replace_one(filter, doc)
                .upsert(true)
                .await
                .map(drop)
                .map_err(MongoError)
        })
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        hex_into(key, &mut self.hex);
        let filter = doc! {"_id": self.hex.as_str()};
        let found = self
            .link
            .run("get", async |_, c| c.coll.find_one(filter).await.map_err(MongoError))?;
        match found {
            Some(doc) => {
                out.set(value("get", &doc, &mut self.joined)?);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        hex_into(key, &mut self.hex);
        let filter = doc! {"_id": self.hex.as_str()};
        let r = self
            .link
            .run("del", async |_, c| c.coll.delete_one(filter).await.map_err(MongoError))?;
        Ok(if r.deleted_count > 0 { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        self.walk("scan", lo, hi, limit, f)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        self.walk("range", lo, hi, limit, &mut |k, v| {
            out.push(k, v);
            false
        })
        .map(drop)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        if keys.is_empty() {
            return Ok(());
        }
        let filter = keys_filter(keys);
        let docs = self.link.run("mget", async |_, c| {
            let mut cursor = c.coll.find(filter).await?;
            let mut docs = Vec::with_capacity(keys.len());
            while cursor.advance().await? {
                docs.push(cursor.current().to_owned());
            }
            Ok(docs)
        })?;
        // The documents come in no particular order: match them to the keys by _id.
        let mut found: Vec<(&str, &RawDocument)> = Vec::with_capacity(docs.len());
        for d in &docs {
            let id = d.get_str("_id").map_err(|e| {
                EngineError::other(format!("engine {ENGINE}: mget: a document without a hex _id ({e})"))
            })?;
            found.push((id, d));
        }
        found.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for key in keys {
            hex_into(key, &mut self.hex);
            match found.binary_search_by(|(id, _)| (*id).cmp(self.hex.as_str())) {
                Ok(i) => out.push_hit(value("mget", found[i].1, &mut self.joined)?),
                Err(_) => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        // New keys in one unordered insertMany (the driver splits it into commands
        // under the size limit); the keys that exist already come back as duplicate
        // key errors and are replaced in one `update` command, in batch order, so the
        // last value of a repeated key wins as it would key by key.
        let docs: Vec<RawDocumentBuf> = pairs.iter().map(|(k, v)| document(&hex(k), v)).collect();
        let existing = self.link.run("mput", async |_, c| {
            match c.coll.insert_many(&docs).ordered(false).await {
                Ok(_) => Ok(Vec::new()),
                Err(e) => match &*e.kind {
                    ErrorKind::InsertMany(m)
                        if m.write_concern_error.is_none()
                            && m.write_errors
                                .as_ref()
                                .is_some_and(|w| w.iter().all(|w| w.code == DUPLICATE_KEY)) =>
                    {
                        let mut at: Vec<usize> = m.write_errors.iter().flatten().map(|w| w.index).collect();
                        at.sort_unstable();
                        Ok(at)
                    }
                    _ => Err(MongoError(e)),
                },
            }
        })?;
        let mut rest = &existing[..];
        while !rest.is_empty() {
            let mut updates = RawArrayBuf::new();
            let mut bytes = 0;
            let mut taken = 0;
            for &i in rest {
                let (k, v) = pairs[i];
                if taken > 0 && bytes + k.len() * 4 + v.len() > MPUT_COMMAND_BYTES {
                    break;
                }
                let id = docs[i].get_str("_id").unwrap_or_default();
                updates.push(rawdoc! {"q": {"_id": id}, "u": RawBsonRef::Document(&docs[i]), "upsert": true});
                bytes += k.len() * 4 + v.len() + 64;
                taken += 1;
            }
            rest = &rest[taken..];
            let reply = self.link.run("mput", async |connector, c| {
                let mut command = rawdoc! {"update": c.coll.name(), "updates": updates, "ordered": true};
                if connector.shared.settings.journal {
                    command.append(cstr!("writeConcern"), rawdoc! {"j": true});
                }
                c.db.run_raw_command(command).await.map_err(MongoError)
            })?;
            // The command succeeds with per-statement errors in writeErrors.
            if let Ok(errors) = reply.get_array("writeErrors")
                && let Some(first) = errors.first()
            {
                let doc = first.as_document();
                let code = doc.and_then(|d| d.get_i32("code").ok());
                let message = doc.and_then(|d| d.get_str("errmsg").ok()).unwrap_or("no message");
                let text = format!(
                    "engine {ENGINE}: mput: {message} (code {})",
                    code.map_or("?".to_string(), |c| c.to_string())
                );
                return Err(if code == Some(DUPLICATE_KEY) {
                    EngineError::busy(text)
                } else {
                    EngineError::other(text)
                });
            }
        }
        Ok(())
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if keys.is_empty() {
            return Ok(Some(0));
        }
        let filter = keys_filter(keys);
        let r = self.link.run("mdel", async |_, c| {
            c.coll.delete_many(filter).await.map_err(MongoError)
        })?;
        Ok(Some(count(r.deleted_count)))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let len = suffix.len() as u64;
        let room = match self.cap {
            Some(cap) if len > cap => return Ok(Appended::Skipped),
            Some(cap) => Some(i64::try_from(cap - len).unwrap_or(i64::MAX)),
            None => None,
        };
        hex_into(key, &mut self.hex);
        let id = self.hex.as_str();
        // Built twice only when the first try collides (see the engine's documentation, in mod.rs).
        let make = || {
            let mut filter = doc! {"_id": id};
            if let Some(room) = room {
                filter.insert("n", doc! {"$lte": room});
            }
            let piece = Binary {
                subtype: BinarySubtype::Generic,
                bytes: suffix.to_vec(),
            };
            (filter, doc! {"$push": {"v": piece}, "$inc": {"n": len as i64}})
        };
        self.link.run("append", async |_, c| {
            let (filter, update) = make();
            match c.coll.update_one(filter, update).upsert(true).await {
                Ok(_) => Ok(Appended::Yes),
                // The key exists and its value is full (the filter did not match, so
                // the upsert tried to insert it), or a concurrent append created it:
                // the update alone tells which.
                Err(e) if code(&e) == Some(DUPLICATE_KEY) => {
                    let (filter, update) = make();
                    let r = c.coll.update_one(filter, update).await.map_err(MongoError)?;
                    Ok(if r.matched_count > 0 {
                        Appended::Yes
                    } else {
                        Appended::Skipped
                    })
                }
                Err(e) => Err(MongoError(e)),
            }
        })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let filter = range_filter(lo, hi);
        self.link.run("delete_range", async |_, c| {
            c.coll.delete_many(filter).await.map(drop).map_err(MongoError)
        })
    }
}
