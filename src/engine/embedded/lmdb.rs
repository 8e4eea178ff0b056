//! `lmdb`: LMDB, a memory-mapped copy-on-write B+tree (the `heed` crate and the LMDB
//! source it bundles).
//!
//! Verb mapping: every read is one read-only transaction (`get`, `mget`, `range`,
//! `scan`: a cursor that stops at the first key `>= hi`); every write one write
//! transaction (`put`, `del`, `mput`, `mdel`, `append` as get + put, `delete_range`
//! as a cursor deleting every key in the range). LMDB admits one writer at a time:
//! concurrent write transactions queue on LMDB's own lock, which is the engine's
//! concurrency model, not one kvmark adds. `del` reports existence (LMDB's delete
//! returns not-found for free).
//!
//! Knobs: map size, sync flags, write map, read-ahead, reader slots.

use std::ops::Bound;
use std::sync::Arc;

use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions, WithTls};

use crate::engine::Limits;
use crate::engine::options::format_size;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, KnobDef, KnobTable, OpenRequest, ReadBuf,
    ScanFn, Session, StorageKind, Store, Values, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "LMDB memory-mapped B+tree (bundled C library via heed); one writer at a time",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    limits: LIMITS,
    version,
    knobs: &KNOBS,
    open,
};

/// LMDB's keys are 1 to 511 bytes (its default MDB_MAXKEYSIZE, which heed keeps) and
/// its values under 4 GiB; it fails calls past them with MDB_BAD_VALSIZE.
const LIMITS: Limits = Limits {
    empty_keys: false,
    max_key_bytes: 511,
    max_value_bytes: u32::MAX as usize,
};

const ENGINE: &str = "lmdb";
const SYNCS: &[&str] = &["full", "nometasync", "nosync"];

/// kvmark's map size: LMDB's own default (10 MiB) is far too small to benchmark, and a
/// store cannot grow past its map. The map is address space, not memory or disk.
const DEFAULT_MAP_SIZE: u64 = 64 << 30;
/// LMDB's default number of reader slots (one per concurrent reading thread).
const DEFAULT_MAX_READERS: u32 = 126;

type Db = Database<'static, Bytes, Bytes>;

struct Settings {
    map_size: usize,
    flags: EnvFlags,
    max_readers: u32,
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    || Settings {
        map_size: DEFAULT_MAP_SIZE as usize,
        flags: EnvFlags::empty(),
        max_readers: DEFAULT_MAX_READERS,
    },
    &[
        KnobDef {
            name: "map_size",
            help: "largest the store may grow (address space; kvmark's default, LMDB's own is 10M)",
            default: || format_size(DEFAULT_MAP_SIZE),
            set: |s, v| v.size_usize().map(|n| s.map_size = n),
        },
        KnobDef {
            name: "sync",
            help: "commit durability: full (fsync data and meta), nometasync or nosync",
            default: || "full".to_string(),
            set: |s, v| {
                let flag = match v.choice(SYNCS)? {
                    "nosync" => EnvFlags::NO_SYNC,
                    "nometasync" => EnvFlags::NO_META_SYNC,
                    _ => EnvFlags::empty(),
                };
                s.flags.remove(EnvFlags::NO_SYNC | EnvFlags::NO_META_SYNC);
                s.flags.insert(flag);
                Ok(())
            },
        },
        KnobDef {
            name: "write_map",
            help: "write through a writable memory map (MDB_WRITEMAP)",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.flags.set(EnvFlags::WRITE_MAP, b)),
        },
        KnobDef {
            name: "no_read_ahead",
            help: "turn off OS read-ahead (MDB_NORDAHEAD), for random reads of stores larger than RAM",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.flags.set(EnvFlags::NO_READ_AHEAD, b)),
        },
        KnobDef {
            name: "max_readers",
            help: "reader slots: concurrent reading threads",
            default: || DEFAULT_MAX_READERS.to_string(),
            set: |s, v| v.num().map(|n| s.max_readers = n),
        },
    ],
);

fn err(e: heed::Error) -> EngineError {
    EngineError::other(format!("lmdb: {e}"))
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    // With WRITE_MAP, LMDB writes through a map of a sparse file: a page the full disk
    // cannot back kills the process with SIGBUS instead of failing a write. So the
    // whole map must fit in the free space.
    if s.flags.contains(EnvFlags::WRITE_MAP)
        && let Some((free, _)) = crate::engine::storage::disk_space(dir)
        && free < s.map_size as u64
    {
        return Err(EngineError::other(format!(
            "lmdb: write_map needs room for the whole map (map_size={} bytes) on the disk of {}, \
             which has {free} bytes free: a write the disk cannot hold would kill the process \
             (SIGBUS); lower lmdb.map_size or leave write_map off",
            s.map_size,
            dir.display()
        )));
    }
    let mut builder = EnvOpenOptions::new();
    builder.map_size(s.map_size).max_readers(s.max_readers).max_dbs(1);
    // SAFETY: the flags trade durability for speed (NO_SYNC, NO_META_SYNC) or map the
    // file writable (WRITE_MAP); the user chose them, and kvmark never writes the
    // files behind LMDB's back.
    unsafe {
        builder.flags(s.flags);
    }
    // SAFETY: the directory is this store's own; no other handle maps it.
    let env = unsafe { builder.open(dir) }.map_err(err)?;
    let wtxn = env.write_txn().map_err(err)?;
    let db: Db = env
        .create_databases_and_commit(wtxn, |opener, wtxn| {
            opener
                .create_database::<Bytes, Bytes>(wtxn, None)
                .map(CommitOrAbort::<_, ()>::Commit)
        })
        .map_err(err)?
        .commit()
        .ok_or_else(|| EngineError::other("lmdb: creating the database was aborted"))?;
    Ok(Box::new(LmdbStore {
        shared: Arc::new(Shared {
            env,
            db,
            cap: req.max_value_bytes,
        }),
    }))
}

struct Shared {
    env: Env<WithTls>,
    db: Db,
    /// The value cap of `append`.
    cap: Option<u64>,
}

struct LmdbStore {
    shared: Arc<Shared>,
}

impl Store for LmdbStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(LmdbSession {
            shared: Arc::clone(&self.shared),
            scratch: Vec::new(),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let Shared { env, db, .. } = &*self.shared;
        let info = env.info();
        let mut out = vec![
            ("map_size".to_string(), info.map_size as f64),
            ("last_page_number".to_string(), info.last_page_number as f64),
            ("last_txn_id".to_string(), info.last_txn_id as f64),
            ("max_readers".to_string(), f64::from(info.maximum_number_of_readers)),
            ("readers".to_string(), f64::from(info.number_of_readers)),
        ];
        if let Ok(size) = env.real_disk_size() {
            out.push(("file_bytes".to_string(), size as f64));
        }
        if let Ok(rtxn) = env.read_txn()
            && let Ok(st) = db.stat(&rtxn)
        {
            out.extend([
                ("page_size".to_string(), f64::from(st.page_size)),
                ("depth".to_string(), f64::from(st.depth)),
                ("branch_pages".to_string(), st.branch_pages as f64),
                ("leaf_pages".to_string(), st.leaf_pages as f64),
                ("overflow_pages".to_string(), st.overflow_pages as f64),
                ("entries".to_string(), st.entries as f64),
            ]);
        }
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let shared = unshare(ENGINE, self.shared)?;
        // Under nosync/nometasync the last commits may only be in the page cache: make
        // them durable, as closing promises.
        shared.env.force_sync().map_err(err)?;
        // Wait until LMDB has really closed the environment, so the directory can be
        // reopened or removed at once.
        shared.env.prepare_for_closing().wait();
        Ok(())
    }
}

struct LmdbSession {
    shared: Arc<Shared>,
    /// Reused by `append` to build the grown value.
    scratch: Vec<u8>,
}

/// `[lo, hi)` as bounds. LMDB refuses an empty key, even as a bound, and never stores
/// one, so an empty `lo` is no bound at all.
fn range_of<'k>(lo: &'k [u8], hi: &'k [u8]) -> (Bound<&'k [u8]>, Bound<&'k [u8]>) {
    let start = if lo.is_empty() {
        Bound::Unbounded
    } else {
        Bound::Included(lo)
    };
    (start, Bound::Excluded(hi))
}

impl Session for LmdbSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let Shared { env, db, .. } = &*self.shared;
        let mut wtxn = env.write_txn().map_err(err)?;
        db.put(&mut wtxn, key, val).map_err(err)?;
        wtxn.commit().map_err(err)
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let Shared { env, db, .. } = &*self.shared;
        let rtxn = env.read_txn().map_err(err)?;
        match db.get(&rtxn, key).map_err(err)? {
            Some(v) => {
                out.set(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let Shared { env, db, .. } = &*self.shared;
        let mut wtxn = env.write_txn().map_err(err)?;
        let existed = db.delete(&mut wtxn, key).map_err(err)?;
        wtxn.commit().map_err(err)?;
        Ok(if existed { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let Shared { env, db, .. } = &*self.shared;
        let rtxn = env.read_txn().map_err(err)?;
        let mut rows = 0usize;
        for item in db.range(&rtxn, &range_of(lo, hi)).map_err(err)? {
            let (k, v) = item.map_err(err)?;
            rows += 1;
            if f(k, v) || rows == limit {
                break;
            }
        }
        Ok(rows)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        let Shared { env, db, .. } = &*self.shared;
        let rtxn = env.read_txn().map_err(err)?;
        for key in keys {
            match db.get(&rtxn, key).map_err(err)? {
                Some(v) => out.push_hit(v),
                None => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let Shared { env, db, .. } = &*self.shared;
        let mut wtxn = env.write_txn().map_err(err)?;
        for (k, v) in pairs {
            db.put(&mut wtxn, k, v).map_err(err)?;
        }
        wtxn.commit().map_err(err)
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let Shared { env, db, .. } = &*self.shared;
        let mut wtxn = env.write_txn().map_err(err)?;
        let mut existed = 0usize;
        for k in keys {
            existed += usize::from(db.delete(&mut wtxn, k).map_err(err)?);
        }
        wtxn.commit().map_err(err)?;
        Ok(Some(existed))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let Shared { env, db, cap } = &*self.shared;
        let mut wtxn = env.write_txn().map_err(err)?;
        self.scratch.clear();
        if let Some(v) = db.get(&wtxn, key).map_err(err)? {
            self.scratch.extend_from_slice(v);
        }
        if !fits_cap(*cap, self.scratch.len(), suffix.len()) {
            wtxn.abort();
            return Ok(Appended::Skipped);
        }
        self.scratch.extend_from_slice(suffix);
        db.put(&mut wtxn, key, &self.scratch).map_err(err)?;
        wtxn.commit().map_err(err)?;
        Ok(Appended::Yes)
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let Shared { env, db, .. } = &*self.shared;
        let mut wtxn = env.write_txn().map_err(err)?;
        db.delete_range(&mut wtxn, &range_of(lo, hi)).map_err(err)?;
        wtxn.commit().map_err(err)
    }
}

fn version() -> String {
    let v = heed::lmdb_version();
    format!("LMDB {}.{}.{}", v.major, v.minor, v.patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, KnobSet};

    #[test]
    fn knobs_parse_and_refuse() {
        let mut o = EngineOptions::new();
        o.set("map_size", "1G");
        o.set("sync", "nosync");
        let s = KNOBS.parse(&o).unwrap();
        assert_eq!(s.map_size, 1 << 30);
        assert!(s.flags.contains(EnvFlags::NO_SYNC));
        let mut o = EngineOptions::new();
        o.set("mapsize", "1G");
        let e = KNOBS.validate(&o).unwrap_err();
        assert!(
            e.message.contains("lmdb") && e.message.contains("mapsize"),
            "{}",
            e.message
        );
        assert!(version().starts_with("LMDB "), "{}", version());
    }
}
