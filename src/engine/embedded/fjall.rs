//! `fjall`: fjall, a pure-Rust LSM tree, opened as its optimistic-transaction database
//! with one keyspace (`kv`).
//!
//! The transactional database is used so that `append` can be a real read-modify-write
//! transaction: fjall's plain database has neither transactions nor a merge operator,
//! and a transaction only detects conflicts with writes that are transactions too, so
//! every write goes through one (a blind write never conflicts).
//!
//! Verb mapping: `put`/`del` one write transaction with one insert or remove;
//! `mput`/`mdel` one write transaction (one journal batch); `get` a read of the latest
//! snapshot; `mget` one snapshot; `range`/`scan` a snapshot range `lo..hi`, bounded by
//! fjall; `append` get + insert in one transaction, whose commit reports a conflict if
//! another writer got to the key first (reported as busy, so the harness retries it);
//! `delete_range` a transaction that removes every key of the range it read, which
//! conflicts, and so retries, if another writer touches the range meanwhile.

use std::sync::Arc;

use fjall::{
    Conflict, KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace, OptimisticWriteTx, PersistMode,
    Readable,
};

use crate::engine::Limits;
use crate::engine::options::format_size;
use crate::engine::versions::crate_version;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, KnobDef, KnobTable, OpenRequest, ReadBuf,
    ScanFn, Session, StorageKind, Store, Values, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "fjall pure-Rust LSM tree, through its optimistic-transaction database",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: false,
    atomic_batches: true,
    limits: LIMITS,
    version,
    knobs: &KNOBS,
    open,
};

/// fjall's keys are 1 to 65,535 bytes and its values under 4 GiB; it panics past them.
const LIMITS: Limits = Limits {
    empty_keys: false,
    max_key_bytes: u16::MAX as usize,
    max_value_bytes: u32::MAX as usize,
};

const ENGINE: &str = "fjall";
const KEYSPACE: &str = "kv";
const PERSIST: &[&str] = &["buffer", "none", "sync_data", "sync_all"];

// fjall's defaults (Config::new and KeyspaceCreateOptions::default); the crate has no
// getters for them.
const DEFAULT_CACHE: u64 = 32 << 20;
const DEFAULT_MEMTABLE: u64 = 64 << 20;
const DEFAULT_JOURNALING: u64 = 512 << 20;
/// fjall refuses (with a panic) a journal limit below this.
const MIN_JOURNALING: u64 = 64 << 20;

/// fjall's worker count: the available cores, at most four.
fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from).min(4)
}

#[derive(Debug, Clone, Copy, Default)]
struct Settings {
    cache_size: Option<u64>,
    max_memtable_size: Option<u64>,
    max_journaling_size: Option<u64>,
    worker_threads: Option<usize>,
    /// None: fjall's default (flush each commit to the OS, no fsync).
    persist: Option<Option<PersistMode>>,
    compression_off: bool,
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    Settings::default,
    &[
        KnobDef {
            name: "cache_size",
            help: "block cache",
            default: || format_size(DEFAULT_CACHE),
            set: |s, v| v.size().map(|n| s.cache_size = Some(n)),
        },
        KnobDef {
            name: "max_memtable_size",
            help: "memtable size before it is sealed and flushed",
            default: || format_size(DEFAULT_MEMTABLE),
            set: |s, v| v.size().map(|n| s.max_memtable_size = Some(n)),
        },
        KnobDef {
            name: "max_journaling_size",
            help: "journal size that forces memtable flushes (at least 64M)",
            default: || format_size(DEFAULT_JOURNALING),
            set: |s, v| {
                let n = v.size()?;
                if n < MIN_JOURNALING {
                    return Err(v.refuse("fjall needs at least 64M"));
                }
                s.max_journaling_size = Some(n);
                Ok(())
            },
        },
        KnobDef {
            name: "worker_threads",
            help: "flush and compaction threads (fjall: the core count, at most 4)",
            default: || default_workers().to_string(),
            set: |s, v| match v.num::<usize>()? {
                0 => Err(v.refuse("give at least 1")),
                n => {
                    s.worker_threads = Some(n);
                    Ok(())
                }
            },
        },
        KnobDef {
            name: "persist",
            help: "per commit: buffer (to the OS), none (stay in the journal buffer), sync_data, sync_all",
            default: || "buffer".to_string(),
            set: |s, v| {
                s.persist = Some(match v.choice(PERSIST)? {
                    "none" => None,
                    "sync_data" => Some(PersistMode::SyncData),
                    "sync_all" => Some(PersistMode::SyncAll),
                    _ => Some(PersistMode::Buffer),
                });
                Ok(())
            },
        },
        KnobDef {
            name: "compression",
            help: "lz4 (fjall's default: LZ4 on the deeper levels) or none",
            default: || "lz4".to_string(),
            set: |s, v| v.choice(&["lz4", "none"]).map(|c| s.compression_off = c == "none"),
        },
    ],
);

fn err(e: fjall::Error) -> EngineError {
    EngineError::other(format!("fjall: {e}"))
}

fn conflict(_: Conflict) -> EngineError {
    EngineError::busy("fjall: transaction conflict")
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    let mut builder = OptimisticTxDatabase::builder(dir);
    if let Some(n) = s.cache_size {
        builder = builder.cache_size(n);
    }
    if let Some(n) = s.max_journaling_size {
        builder = builder.max_journaling_size(n);
    }
    if let Some(n) = s.worker_threads {
        builder = builder.worker_threads(n);
    }
    let db = builder.open().map_err(err)?;
    let ks = db
        .keyspace(KEYSPACE, || {
            let mut o = KeyspaceCreateOptions::default();
            if let Some(n) = s.max_memtable_size {
                o = o.max_memtable_size(n);
            }
            if s.compression_off {
                o = o
                    .data_block_compression_policy(fjall::config::CompressionPolicy::all(fjall::CompressionType::None));
            }
            o
        })
        .map_err(err)?;
    Ok(Box::new(FjallStore {
        shared: Arc::new(Shared {
            db,
            ks,
            persist: s.persist,
            cap: req.max_value_bytes,
        }),
    }))
}

struct Shared {
    db: OptimisticTxDatabase,
    ks: OptimisticTxKeyspace,
    persist: Option<Option<PersistMode>>,
    /// The value cap of `append`.
    cap: Option<u64>,
}

impl Shared {
    fn write_tx(&self) -> EngineResult<OptimisticWriteTx> {
        let tx = self.db.write_tx().map_err(err)?;
        Ok(match self.persist {
            Some(mode) => tx.durability(mode),
            None => tx,
        })
    }
}

/// Commits, turning a conflict into busy.
fn commit(tx: OptimisticWriteTx) -> EngineResult<()> {
    tx.commit().map_err(err)?.map_err(conflict)
}

struct FjallStore {
    shared: Arc<Shared>,
}

impl Store for FjallStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(FjallSession {
            shared: Arc::clone(&self.shared),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let Shared { db, ks, .. } = &*self.shared;
        let keyspace: &fjall::Keyspace = ks.as_ref();
        // The database-wide figures live on the plain database inside the
        // transactional one; they are only read here, never written through it.
        let inner = db.inner();
        let mut out = vec![
            ("write_buffer_bytes".to_string(), db.write_buffer_size() as f64),
            ("journal_count".to_string(), db.journal_count() as f64),
            ("outstanding_flushes".to_string(), inner.outstanding_flushes() as f64),
            ("active_compactions".to_string(), inner.active_compactions() as f64),
            (
                "compactions_completed".to_string(),
                inner.compactions_completed() as f64,
            ),
            (
                "time_compacting_us".to_string(),
                inner.time_compacting().as_micros() as f64,
            ),
            ("cache_bytes".to_string(), inner.cache_size() as f64),
            ("cache_capacity".to_string(), inner.cache_capacity() as f64),
            ("sealed_memtables".to_string(), keyspace.sealed_memtable_count() as f64),
            ("l0_tables".to_string(), keyspace.l0_table_count() as f64),
            ("tables".to_string(), keyspace.table_count() as f64),
            ("blob_files".to_string(), keyspace.blob_file_count() as f64),
            (
                "fragmented_blob_bytes".to_string(),
                keyspace.fragmented_blob_bytes() as f64,
            ),
            ("keyspace_disk_bytes".to_string(), keyspace.disk_space() as f64),
            ("approximate_keys".to_string(), keyspace.approximate_len() as f64),
        ];
        if let Ok(n) = db.disk_space() {
            out.push(("disk_bytes".to_string(), n as f64));
        }
        if let Ok(n) = inner.journal_disk_space() {
            out.push(("journal_disk_bytes".to_string(), n as f64));
        }
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let shared = unshare(ENGINE, self.shared)?;
        // Commits may still sit in the journal's buffer: write them out, as closing
        // promises.
        shared.db.persist(PersistMode::SyncAll).map_err(err)?;
        drop(shared);
        Ok(())
    }
}

struct FjallSession {
    shared: Arc<Shared>,
}

impl Session for FjallSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let mut tx = self.shared.write_tx()?;
        tx.insert(&self.shared.ks, key, val);
        commit(tx)
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        match self.shared.ks.get(key).map_err(err)? {
            Some(v) => {
                out.set(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let mut tx = self.shared.write_tx()?;
        tx.remove(&self.shared.ks, key);
        commit(tx)?;
        Ok(Existed::Unknown)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let snap = self.shared.db.read_tx();
        let mut rows = 0usize;
        for guard in snap.range(&self.shared.ks, lo..hi) {
            let (k, v) = guard.into_inner().map_err(err)?;
            rows += 1;
            if f(&k, &v) || rows == limit {
                break;
            }
        }
        Ok(rows)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        let snap = self.shared.db.read_tx();
        for key in keys {
            match snap.get(&self.shared.ks, key).map_err(err)? {
                Some(v) => out.push_hit(&v),
                None => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let mut tx = self.shared.write_tx()?;
        for (k, v) in pairs {
            tx.insert(&self.shared.ks, *k, *v);
        }
        commit(tx)
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let mut tx = self.shared.write_tx()?;
        for k in keys {
            tx.remove(&self.shared.ks, *k);
        }
        commit(tx)?;
        Ok(None)
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let mut tx = self.shared.write_tx()?;
        let current = tx.get(&self.shared.ks, key).map_err(err)?;
        if !fits_cap(self.shared.cap, current.as_ref().map_or(0, |v| v.len()), suffix.len()) {
            // Dropping the transaction rolls it back.
            return Ok(Appended::Skipped);
        }
        let mut value = Vec::with_capacity(current.as_ref().map_or(0, |v| v.len()) + suffix.len());
        if let Some(v) = &current {
            value.extend_from_slice(v);
        }
        value.extend_from_slice(suffix);
        tx.insert(&self.shared.ks, key, value);
        commit(tx)?;
        Ok(Appended::Yes)
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let mut tx = self.shared.write_tx()?;
        let keys = tx
            .range(&self.shared.ks, lo..hi)
            .map(|g| g.key().map_err(err))
            .collect::<EngineResult<Vec<_>>>()?;
        for k in keys {
            tx.remove(&self.shared.ks, k);
        }
        commit(tx)
    }
}

fn version() -> String {
    crate_version("fjall")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, KnobSet};

    #[test]
    fn values_that_would_make_fjall_panic_are_refused() {
        for (k, v) in [
            ("max_journaling_size", "1M"),
            ("worker_threads", "0"),
            ("persist", "always"),
        ] {
            let mut o = EngineOptions::new();
            o.set(k, v);
            let e = KNOBS.validate(&o).unwrap_err();
            assert!(e.message.contains("fjall") && e.message.contains(k), "{}", e.message);
        }
        assert!(version().starts_with("fjall "), "{}", version());
    }
}
