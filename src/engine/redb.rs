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

use super::options::{format_size, parse_bool, parse_choice, parse_size};
use super::versions::crate_version;
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, Knob, OpenRequest, ReadBuf,
    ScanFn, Session, Store, Values, fits_cap,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: "redb",
    persistent: true,
    description: "redb pure-Rust copy-on-write B-tree; one writer at a time",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    version,
    knobs,
    validate,
    open,
};

const ENGINE: &str = "redb";
const FILE: &str = "kv.redb";
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");
const KEYS: &[&str] = &["cache_size", "durability", "two_phase_commit", "quick_repair"];
/// redb's default cache size (`Builder::new`).
const DEFAULT_CACHE: u64 = 1 << 30;

#[derive(Debug, Clone, Copy)]
struct Settings {
    cache_size: u64,
    durable: bool,
    two_phase: bool,
    quick_repair: bool,
}

fn settings(options: &EngineOptions) -> EngineResult<Settings> {
    options.check_known(ENGINE, KEYS)?;
    let mut s = Settings {
        cache_size: DEFAULT_CACHE,
        durable: true,
        two_phase: false,
        quick_repair: false,
    };
    for (key, value) in options.iter() {
        match key {
            "cache_size" => s.cache_size = parse_size(ENGINE, key, value)?,
            "durability" => s.durable = parse_choice(ENGINE, key, value, &["immediate", "none"])? == "immediate",
            "two_phase_commit" => s.two_phase = parse_bool(ENGINE, key, value)?,
            "quick_repair" => s.quick_repair = parse_bool(ENGINE, key, value)?,
            _ => {}
        }
    }
    Ok(s)
}

fn validate(options: &EngineOptions) -> EngineResult<()> {
    settings(options).map(drop)
}

fn err(e: impl Into<redb::Error>) -> EngineError {
    EngineError::other(format!("redb: {}", e.into()))
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req
        .dir
        .as_deref()
        .ok_or_else(|| EngineError::other("engine redb stores data on disk and needs a directory"))?;
    let s = settings(req.options)?;
    let cache = usize::try_from(s.cache_size).map_err(|_| EngineError::other("redb: cache_size is too large"))?;
    let db = Builder::new()
        .set_cache_size(cache)
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
        let shared = Arc::try_unwrap(self.shared).map_err(|s| {
            EngineError::other(format!(
                "redb: cannot close, {} session(s) still open",
                Arc::strong_count(&s) - 1
            ))
        })?;
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

fn knobs() -> Vec<Knob> {
    vec![
        Knob::new("cache_size", format_size(DEFAULT_CACHE), "page cache"),
        Knob::new(
            "durability",
            "immediate",
            "immediate (fsync every commit) or none (persisted by the next durable commit)",
        ),
        Knob::new(
            "two_phase_commit",
            "0",
            "fsync twice per commit, safe against a crafted crash",
        ),
        Knob::new(
            "quick_repair",
            "0",
            "keep allocator state per commit so recovery is fast",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_are_valid_values_and_typos_are_refused() {
        let mut o = EngineOptions::new();
        for k in knobs() {
            o.set(k.name.to_string(), k.default.clone());
        }
        validate(&o).unwrap();
        let mut o = EngineOptions::new();
        o.set("durability", "eventual");
        let e = validate(&o).unwrap_err();
        assert!(
            e.message.contains("redb") && e.message.contains("durability"),
            "{}",
            e.message
        );
        assert!(version().starts_with("redb "), "{}", version());
    }
}
