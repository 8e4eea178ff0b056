//! `rocksdb`: RocksDB, the reference LSM tree (the `rocksdb` crate and the RocksDB C++
//! library it bundles).
//!
//! Options are not mapped one by one: every `rocksdb.KEY=VALUE` (or line of a
//! `[rocksdb]` config section) is joined into one `key=value;key=value` string and
//! handed to RocksDB's own option-string parser, so anything RocksDB accepts works,
//! nested `block_based_table_factory={...}` strings included, and RocksDB itself
//! refuses unknown keys. kvmark sets only `create_if_missing` and the merge operator.
//!
//! Verb mapping: `put`/`del`/`append` are single `Put`/`Delete`/`Merge` calls;
//! `mput`/`mdel` one `WriteBatch`; `get` a pinned read copied once into the caller's
//! buffer; `mget` one batched `MultiGet` (one snapshot); `range`/`scan` an iterator
//! with `iterate_upper_bound` set, so RocksDB itself stops at `hi`; `delete_range` a
//! native `DeleteRange` tombstone. A `Busy` or `TryAgain` status is reported as busy,
//! which the harness retries. Write stalls block inside RocksDB, as in production.

mod defaults;
mod stats;

use std::sync::Arc;

use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, DB, DEFAULT_COLUMN_FAMILY_NAME, MergeOperands, Options, ReadOptions,
    WaitForCompactOptions, WriteBatch, WriteOptions,
};

use self::defaults::{knobs, version};
use self::stats::stats;
use crate::engine::Limits;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, Knob, KnobSet, OpenRequest,
    OptionError, ReadBuf, ScanFn, Session, StorageKind, Store, Values, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "RocksDB LSM tree (bundled C++ library); options go verbatim to RocksDB's option-string parser",
    append: AppendMethod::NativeMerge,
    del_reports_existence: false,
    atomic_batches: true,
    limits: Limits::NONE,
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "rocksdb";

/// RocksDB's knobs are its own: listed from the OPTIONS file the linked library
/// writes, checked by its option-string parser. No table: a table would have to copy
/// RocksDB's hundreds of options and fall behind every release.
struct RocksKnobs;

static KNOBS: RocksKnobs = RocksKnobs;

impl KnobSet for RocksKnobs {
    fn list(&self) -> Vec<Knob> {
        knobs()
    }

    fn validate(&self, options: &EngineOptions) -> Result<(), OptionError> {
        build_options(options, None).map(drop)
    }
}

/// The merge operator's name, recorded by RocksDB in the store's OPTIONS file.
const MERGE_OPERATOR: &str = "kvmark.append";

/// Joins the options into one RocksDB option string, in the order given.
pub fn option_string(options: &EngineOptions) -> String {
    options
        .iter()
        .map(|(k, v)| format!("{}={}", k.trim(), v.trim()))
        .collect::<Vec<_>>()
        .join(";")
}

/// Builds the options a store opens with: RocksDB's defaults, then the user's option
/// string, then the two settings kvmark needs.
pub fn build_options(options: &EngineOptions, max_value_bytes: Option<u64>) -> Result<Options, OptionError> {
    let mut opts = if options.is_empty() {
        Options::default()
    } else {
        let s = option_string(options);
        Options::default().get_options_from_string(&s).map_err(|e| {
            // RocksDB's message names the key; the whole string only helps when short.
            let given = if s.len() <= 160 {
                format!(" '{s}'")
            } else {
                String::new()
            };
            OptionError::new(
                ENGINE,
                blamed_key(options),
                format_args!(
                    "RocksDB refused the options{given}: {} (see `kvmark engines` for every key)",
                    e.into_string()
                ),
            )
        })?
    };
    opts.create_if_missing(true);
    match max_value_bytes {
        None => opts.set_merge_operator_associative(MERGE_OPERATOR, append_merge),
        // With a cap, whether an operand applies depends on the value it lands on, so
        // operands cannot be combined on their own: no partial merge.
        Some(cap) => opts.set_merge_operator(
            MERGE_OPERATOR,
            move |_: &[u8], existing: Option<&[u8]>, operands: &MergeOperands| {
                Some(append_capped(existing, operands, cap))
            },
            |_: &[u8], _: Option<&[u8]>, _: &MergeOperands| None,
        ),
    }
    Ok(opts)
}

/// The first key RocksDB refuses on its own, so the refusal of the whole string can be
/// traced to where that key was set; None when every key passes alone.
fn blamed_key(options: &EngineOptions) -> Option<&str> {
    options.iter().find_map(|(k, v)| {
        let one = format!("{}={}", k.trim(), v.trim());
        Options::default().get_options_from_string(&one).is_err().then_some(k)
    })
}

/// Append as a merge: the existing value (if any) followed by every operand in order.
/// Concatenation is associative, so the same function also serves partial merges.
fn append_merge(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let len = existing.map_or(0, <[u8]>::len) + operands.iter().map(<[u8]>::len).sum::<usize>();
    let mut out = Vec::with_capacity(len);
    if let Some(e) = existing {
        out.extend_from_slice(e);
    }
    for op in operands {
        out.extend_from_slice(op);
    }
    Some(out)
}

/// Append under a value cap: each operand in order, except those that would take the
/// value past `cap` (the same rule the other engines apply at write time).
fn append_capped(existing: Option<&[u8]>, operands: &MergeOperands, cap: u64) -> Vec<u8> {
    let existing = existing.unwrap_or_default();
    let all = existing.len() + operands.iter().map(<[u8]>::len).sum::<usize>();
    // Room for every operand that can fit, so the value is copied once.
    let mut out = Vec::with_capacity(all.min(usize::try_from(cap).unwrap_or(usize::MAX).max(existing.len())));
    out.extend_from_slice(existing);
    for op in operands {
        if fits_cap(Some(cap), out.len(), op.len()) {
            out.extend_from_slice(op);
        }
    }
    out
}

/// A RocksDB error: `Busy` and `TryAgain` are transient, the rest are not.
fn err(e: rocksdb::Error) -> EngineError {
    match e.kind() {
        rocksdb::ErrorKind::Busy | rocksdb::ErrorKind::TryAgain => EngineError::busy(e.into_string()),
        _ => EngineError::other(e.into_string()),
    }
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let opts = build_options(req.options, req.max_value_bytes)?;
    // The default column family is opened by name so that its handle exists for the
    // column-family calls (batched MultiGet, DeleteRange) and carries these options.
    let cf = ColumnFamilyDescriptor::new(DEFAULT_COLUMN_FAMILY_NAME, opts.clone());
    let db = DB::open_cf_descriptors(&opts, dir, [cf]).map_err(err)?;
    Ok(Box::new(RocksStore {
        db: Arc::new(db),
        max_value_bytes: req.max_value_bytes,
    }))
}

fn default_cf(db: &DB) -> EngineResult<&ColumnFamily> {
    db.cf_handle(DEFAULT_COLUMN_FAMILY_NAME)
        .ok_or_else(|| EngineError::other("rocksdb: the default column family handle is missing"))
}

struct RocksStore {
    db: Arc<DB>,
    max_value_bytes: Option<u64>,
}

impl Store for RocksStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(RocksSession {
            db: Arc::clone(&self.db),
            read: ReadOptions::default(),
            write: WriteOptions::default(),
            max_value_bytes: self.max_value_bytes,
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        stats(&self.db)
    }

    fn settle(&self) -> EngineResult<()> {
        // Queued and running flushes and compactions; the memtable is left as it is
        // (no flush is forced), so the store keeps the shape the workload gave it.
        self.db.wait_for_compact(&WaitForCompactOptions::default()).map_err(err)
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let db = unshare(ENGINE, self.db)?;
        // Errors of flushes and compactions surface nowhere else: report them here.
        let background_errors = db.property_int_value("rocksdb.background-errors").map_err(err)?;
        drop(db);
        match background_errors {
            Some(n) if n > 0 => Err(EngineError::other(format!(
                "rocksdb: {n} background error(s) (flush or compaction) during the run; see LOG in the store directory"
            ))),
            _ => Ok(()),
        }
    }
}

/// One worker's handle: option objects are made once and reused for every call.
struct RocksSession {
    db: Arc<DB>,
    read: ReadOptions,
    write: WriteOptions,
    /// The value cap, checked here only for a suffix that cannot fit any value.
    max_value_bytes: Option<u64>,
}

impl Session for RocksSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.db.put_opt(key, val, &self.write).map_err(err)
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        match self.db.get_pinned_opt(key, &self.read).map_err(err)? {
            Some(v) => {
                out.set(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.db.delete_opt(key, &self.write).map_err(err)?;
        Ok(Existed::Unknown)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        // The crate moves read options into the iterator, so a bounded iterator needs
        // its own options object and bound buffer; RocksDB then never reads past `hi`.
        let mut opts = ReadOptions::default();
        opts.set_iterate_upper_bound(hi);
        let mut it = self.db.raw_iterator_opt(opts);
        it.seek(lo);
        let mut rows = 0usize;
        while let Some((k, v)) = it.item() {
            rows += 1;
            if f(k, v) || rows == limit {
                break;
            }
            it.next();
        }
        it.status().map_err(err)?;
        Ok(rows)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        let cf = default_cf(&self.db)?;
        for result in self
            .db
            .batched_multi_get_cf_opt(cf, keys.iter().copied(), false, &self.read)
        {
            match result.map_err(err)? {
                Some(v) => out.push_hit(&v),
                None => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        // Sized up front: the batch's buffer is then allocated once, not regrown.
        let bytes: usize = pairs.iter().map(|(k, v)| k.len() + v.len() + 24).sum();
        let mut batch = WriteBatch::with_capacity_bytes(bytes + 12);
        for (k, v) in pairs {
            batch.put(k, v);
        }
        self.db.write_opt(batch, &self.write).map_err(err)
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let bytes: usize = keys.iter().map(|k| k.len() + 12).sum();
        let mut batch = WriteBatch::with_capacity_bytes(bytes + 12);
        for k in keys {
            batch.delete(k);
        }
        self.db.write_opt(batch, &self.write).map_err(err)?;
        Ok(None)
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        // A suffix longer than the cap fits no value, so the answer is known without a
        // read; merging it would leave a missing key present and empty.
        if !fits_cap(self.max_value_bytes, 0, suffix.len()) {
            return Ok(Appended::Skipped);
        }
        self.db.merge_opt(key, suffix, &self.write).map_err(err)?;
        // The merge operator applies the cap when it merges; knowing now would take a read.
        Ok(Appended::Unknown)
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let cf = default_cf(&self.db)?;
        self.db.delete_range_cf_opt(cf, lo, hi, &self.write).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::StorePlace;

    #[test]
    fn option_strings_keep_order_and_nesting() {
        let mut o = EngineOptions::new();
        o.set("write_buffer_size", "64M");
        o.set(
            "block_based_table_factory",
            "{block_cache=64M;filter_policy=bloomfilter:10:false}",
        );
        assert_eq!(
            option_string(&o),
            "write_buffer_size=64M;block_based_table_factory={block_cache=64M;filter_policy=bloomfilter:10:false}"
        );
        assert!(KNOBS.validate(&o).is_ok());
    }

    #[test]
    fn unknown_options_are_refused_naming_engine_and_key() {
        let mut o = EngineOptions::new();
        o.set("no_such_option", "1");
        let e = KNOBS.validate(&o).unwrap_err();
        assert!(
            e.message.contains("rocksdb") && e.message.contains("no_such_option"),
            "{}",
            e.message
        );
        // The whole string is refused; the key to blame is the one refused on its own.
        let mut o = EngineOptions::new();
        o.set("write_buffer_size", "4M");
        o.set("max_write_buffer_number", "lots");
        let e = KNOBS.validate(&o).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("max_write_buffer_number"), "{e}");
    }

    #[test]
    fn settle_leaves_no_flush_or_compaction_running_or_pending() {
        let dir = tempfile::tempdir().unwrap();
        // Tiny memtables and an early L0 trigger: the writes below queue many flushes
        // and compactions.
        let mut o = EngineOptions::new();
        o.set("write_buffer_size", "65536");
        o.set("level0_file_num_compaction_trigger", "2");
        let store = open(&OpenRequest::new(StorePlace::Dir(dir.path().join("db")), &o)).unwrap();
        let mut s = store.session().unwrap();
        let value = vec![7u8; 1024];
        for i in (0..6000u32).rev() {
            s.put(format!("k{i:08}").as_bytes(), &value).unwrap();
        }
        drop(s);
        store.settle().unwrap();
        let stats = store.stats();
        let stat = |n: &str| stats.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        for busy in [
            "num-running-flushes",
            "num-running-compactions",
            "compaction-pending",
            "estimate-pending-compaction-bytes",
        ] {
            assert_eq!(stat(busy), Some(0.0), "{busy} after settle");
        }
        assert!(stat("num-files-at-level0").is_some_and(|n| n < 2.0), "{stats:?}");
        store.close().unwrap();
    }
}
