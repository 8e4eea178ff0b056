//! `redb`: redb, a pure-Rust copy-on-write B-tree in one file (`kv.redb` in the store
//! directory), one table of byte-string keys and values.
//!
//! Verb mapping: every read one read transaction (`get`, `mget`, and `range`/`scan`
//! as a bounded range of the table); every write one write transaction (`put`,
//! `del`, `mput`, `mdel`, `append` as get + insert, `delete_range` as a `retain_in`
//! over the range that keeps nothing). redb admits one write transaction at a time:
//! writers queue inside redb, which is its concurrency model. `del` reports existence
//! (redb's remove returns the old value, found on the way anyway).
//!
//! Knobs: cache size, commit durability, two-phase commit, quick repair.

use std::sync::Arc;

use redb::{Builder, Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

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
    description: "redb pure-Rust copy-on-write B-tree; one writer at a time",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    limits: Limits::NONE,
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "redb";
const FILE: &str = "kv.redb";
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");
/// redb's default cache size (`Builder::new`).
const DEFAULT_CACHE: u64 = 1 << 30;

#[derive(Debug, Clone, Copy)]
struct Settings {
    cache_size: usize,
    durable: bool,
    two_phase: bool,
    quick_repair: bool,
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    || Settings {
        cache_size: DEFAULT_CACHE as usize,
        durable: true,
        two_phase: false,
        quick_repair: false,
    },
    &[
        KnobDef {
            name: "cache_size",
            help: "page cache",
            default: || format_size(DEFAULT_CACHE),
            set: |s, v| v.size_usize().map(|n| s.cache_size = n),
        },
        KnobDef {
            name: "durability",
            help: "immediate (fsync every commit) or none (persisted by the next durable commit)",
            default: || "immediate".to_string(),
            set: |s, v| v.choice(&["immediate", "none"]).map(|c| s.durable = c == "immediate"),
        },
        KnobDef {
            name: "two_phase_commit",
            help: "fsync twice per commit, safe against a crafted crash",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.two_phase = b),
        },
        KnobDef {
            name: "quick_repair",
            help: "keep allocator state per commit so recovery is fast",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.quick_repair = b),
        },
    ],
);

fn err(e: impl Into<redb::Error>) -> EngineError {
    EngineError::other(format!("redb: {}", e.into()))
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    let db = Builder::new()
        .set_cache_size(s.cache_size)
        .create(dir.join(FILE))
        .map_err(err)?;
    let shared = Arc::new(Shared {
        db,
        settings: s,
        cap: req.max_value_bytes,
    });
    // Create the table once, so read transactions always find it.
    let wtxn = shared.write()?;
    wtxn.open_table(TABLE).map_err(err)?;
    wtxn.commit().map_err(err)?;
    Ok(Box::new(RedbStore { shared }))
}

struct Shared {
    db: Database,
    settings: Settings,
    /// The value cap of `append`.
    cap: Option<u64>,
}

impl Shared {
    /// A write transaction with the configured commit settings.
    fn write(&self) -> EngineResult<redb::WriteTransaction> {
        let mut wtxn = self.db.begin_write().map_err(err)?;
        if !self.settings.durable {
            wtxn.set_durability(Durability::None).map_err(err)?;
        }
        if self.settings.two_phase {
            wtxn.set_two_phase_commit(true);
        }
        if self.settings.quick_repair {
            wtxn.set_quick_repair(true);
        }
        Ok(wtxn)
    }
}

struct RedbStore {
    shared: Arc<Shared>,
}

impl Store for RedbStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(RedbSession {
            shared: Arc::clone(&self.shared),
            scratch: Vec::new(),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        // A read transaction: unlike the database-wide stats, which need the write
        // transaction, it never makes the workload's writers wait.
        let Ok(rtxn) = self.shared.db.begin_read() else {
            return Vec::new();
        };
        let Ok(table) = rtxn.open_table(TABLE) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Ok(n) = table.len() {
            out.push(("entries".to_string(), n as f64));
        }
        if let Ok(st) = table.stats() {
            out.extend([
                ("tree_height".to_string(), f64::from(st.tree_height())),
                ("leaf_pages".to_string(), st.leaf_pages() as f64),
                ("branch_pages".to_string(), st.branch_pages() as f64),
                ("stored_bytes".to_string(), st.stored_bytes() as f64),
                ("metadata_bytes".to_string(), st.metadata_bytes() as f64),
                ("fragmented_bytes".to_string(), st.fragmented_bytes() as f64),
            ]);
        }
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let shared = unshare(ENGINE, self.shared)?;
        if !shared.settings.durable {
            // Non-durable commits persist only with a later durable one: make one, as
            // closing promises.
            let mut wtxn = shared.db.begin_write().map_err(err)?;
            wtxn.set_durability(Durability::Immediate).map_err(err)?;
            wtxn.commit().map_err(err)?;
        }
        drop(shared);
        Ok(())
    }
}

struct RedbSession {
    shared: Arc<Shared>,
    /// Reused by `append` to build the grown value.
    scratch: Vec<u8>,
}

impl Session for RedbSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let wtxn = self.shared.write()?;
        wtxn.open_table(TABLE).map_err(err)?.insert(key, val).map_err(err)?;
        wtxn.commit().map_err(err)
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let rtxn = self.shared.db.begin_read().map_err(err)?;
        let table = rtxn.open_table(TABLE).map_err(err)?;
        match table.get(key).map_err(err)? {
            Some(v) => {
                out.set(v.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let wtxn = self.shared.write()?;
        let existed = wtxn.open_table(TABLE).map_err(err)?.remove(key).map_err(err)?.is_some();
        wtxn.commit().map_err(err)?;
        Ok(if existed { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let rtxn = self.shared.db.begin_read().map_err(err)?;
        let table = rtxn.open_table(TABLE).map_err(err)?;
        let mut rows = 0usize;
        for item in table.range::<&[u8]>(lo..hi).map_err(err)? {
            let (k, v) = item.map_err(err)?;
            rows += 1;
            if f(k.value(), v.value()) || rows == limit {
                break;
            }
        }
        Ok(rows)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        let rtxn = self.shared.db.begin_read().map_err(err)?;
        let table = rtxn.open_table(TABLE).map_err(err)?;
        for key in keys {
            match table.get(*key).map_err(err)? {
                Some(v) => out.push_hit(v.value()),
                None => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let wtxn = self.shared.write()?;
        {
            let mut table = wtxn.open_table(TABLE).map_err(err)?;
            for (k, v) in pairs {
                table.insert(*k, *v).map_err(err)?;
            }
        }
        wtxn.commit().map_err(err)
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let wtxn = self.shared.write()?;
        let mut existed = 0usize;
        {
            let mut table = wtxn.open_table(TABLE).map_err(err)?;
            for k in keys {
                existed += usize::from(table.remove(*k).map_err(err)?.is_some());
            }
        }
        wtxn.commit().map_err(err)?;
        Ok(Some(existed))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let wtxn = self.shared.write()?;
        {
            let mut table = wtxn.open_table(TABLE).map_err(err)?;
            self.scratch.clear();
            if let Some(v) = table.get(key).map_err(err)? {
                self.scratch.extend_from_slice(v.value());
            }
            if !fits_cap(self.shared.cap, self.scratch.len(), suffix.len()) {
                drop(table);
                wtxn.abort().map_err(err)?;
                return Ok(Appended::Skipped);
            }
            self.scratch.extend_from_slice(suffix);
            table.insert(key, self.scratch.as_slice()).map_err(err)?;
        }
        wtxn.commit().map_err(err)?;
        Ok(Appended::Yes)
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let wtxn = self.shared.write()?;
        wtxn.open_table(TABLE)
            .map_err(err)?
            .retain_in::<&[u8], _>(lo..hi, |_, _| false)
            .map_err(err)?;
        wtxn.commit().map_err(err)
    }
}

fn version() -> String {
    crate_version("redb")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, KnobSet};

    #[test]
    fn durability_is_a_closed_choice() {
        let mut o = EngineOptions::new();
        o.set("durability", "eventual");
        let e = KNOBS.validate(&o).unwrap_err();
        assert!(
            e.message.contains("redb") && e.message.contains("durability"),
            "{}",
            e.message
        );
        o.set("durability", "none");
        assert!(!KNOBS.parse(&o).unwrap().durable);
        assert!(version().starts_with("redb "), "{}", version());
    }
}
