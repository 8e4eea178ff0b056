//! `tidesdb`: TidesDB, a transactional LSM tree (the `tidesdb` crate and the TidesDB C
//! library it bundles and builds).
//!
//! Every verb is one TidesDB transaction on one column family (`kvmark`). A session
//! keeps one transaction handle and resets it for each verb instead of allocating a
//! new one. Writes commit; reads end with a rollback so no idle transaction stays
//! registered between verbs. Verb mapping: `put`/`del` one put or delete and a commit;
//! `mput`/`mdel` every key in one transaction; `get`/`mget` transactional reads;
//! `range`/`scan` a range iterator (told `[lo, hi]` so it opens only the sstables
//! that overlap) read key first, so no value past `hi` is fetched; `delete_range`
//! TidesDB's native range delete (one entry, bounds up to 256 bytes; longer bounds
//! fall back to deleting each key in one transaction); `append` a get and a put in one
//! snapshot-isolation transaction, whose commit fails on a concurrent write of the key.
//!
//! TidesDB's transient "locked" code (contention: nothing was written, ask again) and a
//! commit conflict are reported as busy, so the harness retries the verb inside the
//! timed region and counts the retries.
//!
//! Knobs are a closed set mapped field by field onto TidesDB's database and column
//! family configurations; defaults are read from the linked library.

mod knobs;
mod stats;

use std::sync::Arc;

use tidesdb::{ColumnFamily, ErrorCode, IsolationLevel, TidesDB, Transaction};

use self::knobs::KNOBS;
use self::stats::stats;
use crate::engine::Limits;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, OpenRequest, ReadBuf, ScanFn, Session,
    StorageKind, Store, Values, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "TidesDB transactional LSM tree (bundled C library); a closed set of knobs",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: false,
    atomic_batches: true,
    limits: Limits::NONE,
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "tidesdb";
/// The one column family kvmark uses.
const CF_NAME: &str = "kvmark";
/// TidesDB's limit on each bound of a native range delete.
const MAX_RANGE_BOUND: usize = 256;

/// A TidesDB error: "locked" (transient contention) and a commit conflict are busy.
fn err(e: tidesdb::Error) -> EngineError {
    match e.code() {
        Some(ErrorCode::Locked | ErrorCode::Conflict) => EngineError::busy(e.to_string()),
        _ => EngineError::other(e.to_string()),
    }
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    let mut config = s.db;
    config.db_path = dir.to_string_lossy().into_owned();
    let db = Arc::new(TidesDB::open(config).map_err(err)?);
    let cf = match db.get_column_family(CF_NAME) {
        Ok(cf) => cf,
        Err(e) if e.is_not_found() => {
            db.create_column_family(CF_NAME, s.cf).map_err(err)?;
            db.get_column_family(CF_NAME).map_err(err)?
        }
        Err(e) => return Err(err(e)),
    };
    // SAFETY: the handle borrows the database, which lives in an Arc (a stable address)
    // held next to it; the store and its sessions drop the handle before the Arc.
    let cf = unsafe { std::mem::transmute::<ColumnFamily<'_>, ColumnFamily<'static>>(cf) };
    let append_isolation = match s.isolation {
        IsolationLevel::Serializable => IsolationLevel::Serializable,
        // Snapshot isolation makes the commit fail if another writer got to the key
        // first, which is what an atomic read-modify-write needs.
        _ => IsolationLevel::Snapshot,
    };
    Ok(Box::new(TidesStore {
        cf,
        db,
        isolation: s.isolation,
        append_isolation,
        cap: req.max_value_bytes,
    }))
}

struct TidesStore {
    // Declared before `db`: fields drop in order and the handle borrows the database.
    cf: ColumnFamily<'static>,
    db: Arc<TidesDB>,
    isolation: IsolationLevel,
    append_isolation: IsolationLevel,
    cap: Option<u64>,
}

impl Store for TidesStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(TidesSession {
            txn: None,
            cf: self.cf.clone(),
            db: Arc::clone(&self.db),
            isolation: self.isolation,
            append_isolation: self.append_isolation,
            cap: self.cap,
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        stats(&self.db, &self.cf)
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let TidesStore { cf, db, .. } = *self;
        drop(cf);
        let db = unshare(ENGINE, db)?;
        drop(db);
        Ok(())
    }
}

/// One worker's handle: one transaction, reset for every verb.
struct TidesSession {
    // Declared before `cf` and `db`: fields drop in order and both borrow the database.
    txn: Option<Transaction<'static>>,
    cf: ColumnFamily<'static>,
    db: Arc<TidesDB>,
    isolation: IsolationLevel,
    append_isolation: IsolationLevel,
    /// The value cap of `append`.
    cap: Option<u64>,
}

/// The session's transaction, begun afresh at `isolation`.
fn begin<'t>(
    slot: &'t mut Option<Transaction<'static>>,
    db: &Arc<TidesDB>,
    isolation: IsolationLevel,
) -> EngineResult<&'t mut Transaction<'static>> {
    if let Some(txn) = slot {
        txn.reset(isolation).map_err(err)?;
        return Ok(txn);
    }
    let txn = db.begin_transaction_with_isolation(isolation).map_err(err)?;
    // SAFETY: as for the column family handle: the transaction borrows the database in
    // the session's Arc, and the session drops `txn` before that Arc.
    let txn = unsafe { std::mem::transmute::<Transaction<'_>, Transaction<'static>>(txn) };
    Ok(slot.insert(txn))
}

impl TidesSession {
    /// Runs `body` in a fresh transaction, then commits (writes) or rolls back (reads
    /// and failures).
    fn with_txn<T>(
        &mut self,
        isolation: IsolationLevel,
        write: bool,
        body: impl FnOnce(&Transaction<'static>, &ColumnFamily<'static>) -> EngineResult<T>,
    ) -> EngineResult<T> {
        let txn = begin(&mut self.txn, &self.db, isolation)?;
        match body(txn, &self.cf) {
            Ok(v) if write => txn.commit().map_err(err).map(|()| v),
            Ok(v) => txn.rollback().map_err(err).map(|()| v),
            Err(e) => {
                // The body's error is the one to report; a failed rollback here only
                // means the transaction is already finished.
                let _ = txn.rollback();
                Err(e)
            }
        }
    }
}

/// TidesDB refuses an empty bound but never stores an empty key, so an empty lower
/// bound means the same as the smallest non-empty key, which it accepts.
fn lowest(lo: &[u8]) -> &[u8] {
    if lo.is_empty() { &[0u8] } else { lo }
}

/// A transactional read into `out`: Ok(false) when the key is absent.
fn read_into(txn: &Transaction<'_>, cf: &ColumnFamily<'_>, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
    match txn.get(cf, key) {
        // The binding hands back an owned copy of the library's buffer; take it as the
        // caller's buffer instead of copying it once more.
        Ok(v) => {
            out.adopt(v);
            Ok(true)
        }
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(err(e)),
    }
}

impl Session for TidesSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.with_txn(self.isolation, true, |txn, cf| txn.put(cf, key, val).map_err(err))
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        self.with_txn(self.isolation, false, |txn, cf| read_into(txn, cf, key, out))
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.with_txn(self.isolation, true, |txn, cf| txn.delete(cf, key).map_err(err))?;
        Ok(Existed::Unknown)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        let lo = lowest(lo);
        if lo >= hi {
            return Ok(0);
        }
        self.with_txn(self.isolation, false, |txn, cf| {
            let mut it = txn.new_range_iterator(cf, lo, hi).map_err(err)?;
            it.seek(lo).map_err(err)?;
            let mut rows = 0usize;
            while it.is_valid() {
                // The key first: the value past `hi` is never fetched.
                let k = it.key().map_err(err)?;
                if k.as_slice() >= hi {
                    break;
                }
                let v = it.value().map_err(err)?;
                rows += 1;
                if f(&k, &v) || rows == limit {
                    break;
                }
                it.next().map_err(err)?;
            }
            Ok(rows)
        })
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        self.with_txn(self.isolation, false, |txn, cf| {
            for key in keys {
                match txn.get(cf, key) {
                    Ok(v) => out.push_hit(&v),
                    Err(e) if e.is_not_found() => out.push_miss(),
                    Err(e) => return Err(err(e)),
                }
            }
            Ok(())
        })
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        self.with_txn(self.isolation, true, |txn, cf| {
            for (k, v) in pairs {
                txn.put(cf, k, v).map_err(err)?;
            }
            Ok(())
        })
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        self.with_txn(self.isolation, true, |txn, cf| {
            for k in keys {
                txn.delete(cf, k).map_err(err)?;
            }
            Ok(())
        })?;
        Ok(None)
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let cap = self.cap;
        self.with_txn(self.append_isolation, true, |txn, cf| {
            let mut value = match txn.get(cf, key) {
                Ok(v) => v,
                Err(e) if e.is_not_found() => Vec::new(),
                Err(e) => return Err(err(e)),
            };
            if !fits_cap(cap, value.len(), suffix.len()) {
                // Nothing written: committing the empty transaction changes nothing.
                return Ok(Appended::Skipped);
            }
            value.extend_from_slice(suffix);
            txn.put(cf, key, &value).map_err(err)?;
            Ok(Appended::Yes)
        })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        let lo = lowest(lo);
        if lo >= hi {
            return Ok(());
        }
        if lo.len() <= MAX_RANGE_BOUND && hi.len() <= MAX_RANGE_BOUND {
            return self.with_txn(self.isolation, true, |txn, cf| {
                txn.delete_range(cf, lo, Some(hi)).map_err(err)
            });
        }
        self.with_txn(self.isolation, true, |txn, cf| {
            let mut keys = Vec::new();
            {
                let mut it = txn.new_range_iterator(cf, lo, hi).map_err(err)?;
                it.seek(lo).map_err(err)?;
                while it.is_valid() {
                    let k = it.key().map_err(err)?;
                    if k.as_slice() >= hi {
                        break;
                    }
                    keys.push(k);
                    it.next().map_err(err)?;
                }
            }
            for k in &keys {
                txn.delete(cf, k).map_err(err)?;
            }
            Ok(())
        })
    }
}

fn version() -> String {
    // The tidesdb crate's build script links every codec it enables from the system
    // (pkg-config, else by name); it has no copies of its own to compile.
    format!(
        "TidesDB {} (codecs: lz4, zstd and snappy from the system)",
        tidesdb::TIDESDB_LINKED_VERSION
    )
}
