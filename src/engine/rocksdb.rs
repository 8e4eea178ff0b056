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

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rocksdb::{
    ColumnFamily, ColumnFamilyDescriptor, DB, DEFAULT_COLUMN_FAMILY_NAME, MergeOperands, Options, ReadOptions,
    WaitForCompactOptions, WriteBatch, WriteOptions,
};

use super::versions::lock_version;
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, Knob, KnobSet, OpenRequest,
    OptionError, ReadBuf, ScanFn, Session, StorageKind, Store, Values, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: "rocksdb",
    storage: StorageKind::Disk,
    description: "RocksDB LSM tree (bundled C++ library); options go verbatim to RocksDB's option-string parser",
    append: AppendMethod::NativeMerge,
    del_reports_existence: false,
    atomic_batches: true,
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

/// Every integer property RocksDB reports for the default column family.
const INT_PROPERTIES: &[&str] = &[
    "num-immutable-mem-table",
    "num-immutable-mem-table-flushed",
    "mem-table-flush-pending",
    "num-running-flushes",
    "compaction-pending",
    "num-running-compactions",
    "background-errors",
    "cur-size-active-mem-table",
    "cur-size-all-mem-tables",
    "size-all-mem-tables",
    "num-entries-active-mem-table",
    "num-entries-imm-mem-tables",
    "num-deletes-active-mem-table",
    "num-deletes-imm-mem-tables",
    "estimate-num-keys",
    "estimate-table-readers-mem",
    "is-file-deletions-enabled",
    "num-snapshots",
    "oldest-snapshot-time",
    "num-live-versions",
    "current-super-version-number",
    "estimate-live-data-size",
    "min-log-number-to-keep",
    "min-obsolete-sst-number-to-keep",
    "total-sst-files-size",
    "live-sst-files-size",
    "obsolete-sst-files-size",
    "base-level",
    "estimate-pending-compaction-bytes",
    "actual-delayed-write-rate",
    "is-write-stopped",
    "estimate-oldest-key-time",
    "block-cache-capacity",
    "block-cache-usage",
    "block-cache-pinned-usage",
    "num-blob-files",
    "total-blob-file-size",
    "live-blob-file-size",
    "live-blob-file-garbage-size",
];

/// Properties, files and compression ratio per level, write-stall counts by cause and
/// the cumulative stall time. Read on the sampler's thread, never on the hot path.
fn stats(db: &DB) -> Vec<(String, f64)> {
    let mut out = Vec::with_capacity(INT_PROPERTIES.len() + 64);
    for name in INT_PROPERTIES {
        if let Ok(Some(v)) = db.property_int_value(&format!("rocksdb.{name}")) {
            out.push((name.to_string(), v as f64));
        }
    }
    // A level past the configured count is not a property: that ends the walk.
    for level in 0..64 {
        let Ok(Some(files)) = db.property_int_value(&format!("rocksdb.num-files-at-level{level}")) else {
            break;
        };
        out.push((format!("num-files-at-level{level}"), files as f64));
        if let Ok(Some(ratio)) = db.property_value(&format!("rocksdb.compression-ratio-at-level{level}"))
            && let Ok(r) = ratio.trim().parse::<f64>()
        {
            out.push((format!("compression-ratio-at-level{level}"), r));
        }
    }
    for (scope, prop) in [
        ("cf", "rocksdb.cf-write-stall-stats"),
        ("db", "rocksdb.db-write-stall-stats"),
    ] {
        if let Ok(Some(text)) = db.property_value(prop) {
            for (name, v) in parse_stall_counts(&text) {
                out.push((format!("{scope}-write-stall.{name}"), v));
            }
        }
    }
    if let Ok(Some(text)) = db.property_value("rocksdb.dbstats")
        && let Some(secs) = parse_cumulative_stall(&text)
    {
        out.push(("write-stall-micros".to_string(), secs * 1e6));
    }
    out
}

/// Parses "Write Stall (count): name: 1, other: 0\n..." into (name, count) pairs.
fn parse_stall_counts(text: &str) -> Vec<(String, f64)> {
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("Write Stall (count): ")) else {
        return Vec::new();
    };
    line.split(", ")
        .filter_map(|pair| {
            let (name, v) = pair.rsplit_once(": ")?;
            Some((name.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// Parses "Cumulative stall: HH:MM:SS.sss H:M:S, ..." from the DB stats into seconds.
fn parse_cumulative_stall(text: &str) -> Option<f64> {
    let rest = text.lines().find_map(|l| l.strip_prefix("Cumulative stall: "))?;
    let hms = rest.split_whitespace().next()?;
    let mut parts = hms.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
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

/// What the linked library says about itself: its version and every option with its
/// default, both read from the OPTIONS file RocksDB writes when a store opens.
struct Defaults {
    version: String,
    knobs: Vec<Knob>,
}

static PROBE: AtomicU64 = AtomicU64::new(0);

/// Opens a throwaway store once per process and reads its OPTIONS file.
fn defaults() -> &'static Result<Defaults, String> {
    static DEFAULTS: OnceLock<Result<Defaults, String>> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!(
            "kvmark-rocksdb-defaults-{}-{}",
            std::process::id(),
            PROBE.fetch_add(1, Ordering::Relaxed)
        ));
        let result = probe_defaults(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        result
    })
}

fn probe_defaults(dir: &Path) -> Result<Defaults, String> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let db = DB::open(&opts, dir).map_err(|e| e.into_string())?;
    drop(db);
    let entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    let file = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("OPTIONS-") && !n.ends_with(".dbtmp"))
        })
        .max()
        .ok_or("RocksDB wrote no OPTIONS file")?;
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    parse_options_file(&text)
}

/// Reads `[Version]`, `[DBOptions]`, `[CFOptions "default"]` and the block-based table
/// section of an OPTIONS file.
fn parse_options_file(text: &str) -> Result<Defaults, String> {
    let mut version = None;
    let mut knobs = Vec::new();
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        if section == "[Version]" {
            if key == "rocksdb_version" {
                version = Some(value.to_string());
            }
            continue;
        }
        let (name, help) = if section == "[DBOptions]" {
            (key.to_string(), help_for(key).unwrap_or("DB option"))
        } else if section.starts_with("[CFOptions") {
            if key == "merge_operator" || key == "comparator" {
                continue; // set by kvmark, or fixed: bytewise order is the contract
            }
            (key.to_string(), help_for(key).unwrap_or("column family option"))
        } else if section.starts_with("[TableOptions/BlockBasedTable") {
            (
                format!("block_based_table_factory={{{key}}}"),
                help_for(key).unwrap_or("block-based table option"),
            )
        } else {
            continue;
        };
        knobs.push(Knob {
            name: name.into(),
            default: if value.is_empty() {
                "(empty)".to_string()
            } else {
                value.to_string()
            },
            help: help.into(),
        });
    }
    let version = version.ok_or("no rocksdb_version in the OPTIONS file")?;
    Ok(Defaults {
        version: format!("RocksDB {version}"),
        knobs,
    })
}

/// One-line help for the options a comparison usually touches.
fn help_for(key: &str) -> Option<&'static str> {
    Some(match key {
        "write_buffer_size" => "memtable size before it is switched and flushed",
        "max_write_buffer_number" => "memtables (active + immutable) before writes stall",
        "min_write_buffer_number_to_merge" => "immutable memtables merged into one flush",
        "compression" => "compression of levels above the bottommost (kNoCompression, kSnappyCompression, ...)",
        "bottommost_compression" => "compression of the bottommost level",
        "level0_file_num_compaction_trigger" => "L0 files that trigger an L0 compaction",
        "level0_slowdown_writes_trigger" => "L0 files at which writes are delayed",
        "level0_stop_writes_trigger" => "L0 files at which writes stop",
        "max_background_jobs" => "background flush and compaction threads",
        "max_background_compactions" => "background compaction threads (deprecated by max_background_jobs)",
        "max_background_flushes" => "background flush threads (deprecated by max_background_jobs)",
        "max_subcompactions" => "threads one compaction may split into",
        "target_file_size_base" => "target SST size at L1",
        "max_bytes_for_level_base" => "total size of L1",
        "max_bytes_for_level_multiplier" => "size ratio between levels",
        "level_compaction_dynamic_level_bytes" => "size levels from the bottom up",
        "compaction_style" => "kCompactionStyleLevel, kCompactionStyleUniversal or kCompactionStyleFIFO",
        "soft_pending_compaction_bytes_limit" => "pending compaction bytes at which writes are delayed",
        "hard_pending_compaction_bytes_limit" => "pending compaction bytes at which writes stop",
        "delayed_write_rate" => "write rate (bytes/s) while delayed",
        "max_open_files" => "table files kept open (-1: all)",
        "use_direct_reads" => "O_DIRECT for reads",
        "use_direct_io_for_flush_and_compaction" => "O_DIRECT for flush and compaction writes",
        "bytes_per_sync" => "sync SST files incrementally every N bytes",
        "wal_bytes_per_sync" => "sync the WAL incrementally every N bytes",
        "manual_wal_flush" => "buffer WAL writes until an explicit flush",
        "enable_pipelined_write" => "separate WAL and memtable write queues",
        "allow_concurrent_memtable_write" => "several writers insert into the memtable at once",
        "unordered_write" => "higher write throughput, weaker snapshot guarantees",
        "block_size" => "uncompressed data block size",
        "block_cache" => "block cache capacity, e.g. block_based_table_factory={block_cache=64M}",
        "filter_policy" => "bloom filter, e.g. block_based_table_factory={filter_policy=bloomfilter:10:false}",
        "cache_index_and_filter_blocks" => "keep index and filter blocks in the block cache",
        "pin_l0_filter_and_index_blocks_in_cache" => "pin L0 index and filter blocks in the cache",
        "whole_key_filtering" => "bloom filters over whole keys",
        "format_version" => "SST format version",
        _ => return None,
    })
}

fn version() -> String {
    match defaults() {
        Ok(d) => d.version.clone(),
        Err(e) => {
            // The crate's version carries the bundled RocksDB release as build metadata.
            let bundled = lock_version("librocksdb-sys")
                .and_then(|v| v.split_once('+'))
                .map_or("unknown", |(_, r)| r);
            format!("RocksDB {bundled} (bundled; reading the linked library failed: {e})")
        }
    }
}

fn knobs() -> Vec<Knob> {
    match defaults() {
        Ok(d) => d.knobs.clone(),
        Err(e) => vec![Knob {
            name: "(any RocksDB option)".into(),
            default: "?".to_string(),
            help: format!("forwarded to RocksDB's option-string parser; reading defaults failed: {e}").into(),
        }],
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
    fn stall_text_parses() {
        let counts = parse_stall_counts("Write Stall (count): cf-l0-file-count-limit-delays: 3, total-stops: 1\n");
        assert_eq!(
            counts,
            vec![
                ("cf-l0-file-count-limit-delays".to_string(), 3.0),
                ("total-stops".to_string(), 1.0)
            ]
        );
        let secs = parse_cumulative_stall("x\nCumulative stall: 01:02:03.500 H:M:S, 0.0 percent\n").unwrap();
        assert!((secs - 3723.5).abs() < 1e-9);
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

    #[test]
    fn defaults_come_from_the_linked_library() {
        let d = defaults().as_ref().expect("probe the linked RocksDB");
        assert!(d.version.starts_with("RocksDB 1"), "{}", d.version);
        let find = |n: &str| d.knobs.iter().find(|k| k.name == n).map(|k| k.default.clone());
        assert_eq!(find("write_buffer_size").as_deref(), Some("67108864"));
        assert_eq!(find("level0_stop_writes_trigger").as_deref(), Some("36"));
        assert!(find("block_based_table_factory={block_size}").is_some());
    }
}
