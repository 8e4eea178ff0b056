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

use std::sync::Arc;

use tidesdb::{
    ColumnFamily, ColumnFamilyConfig, CompressionAlgorithm, Config, ErrorCode, IsolationLevel, LogLevel, SyncMode,
    TidesDB, Transaction,
};

use super::options::{format_size, parse_bool, parse_choice, parse_num, parse_size};
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineOptions, EngineResult, Existed, Knob, OpenRequest, ReadBuf,
    ScanFn, Session, Store, Values, fits_cap,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: "tidesdb",
    persistent: true,
    description: "TidesDB transactional LSM tree (bundled C library); a closed set of knobs",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: false,
    atomic_batches: true,
    version,
    knobs,
    validate,
    open,
};

const ENGINE: &str = "tidesdb";
/// The one column family kvmark uses.
const CF_NAME: &str = "kvmark";
/// TidesDB's limit on each bound of a native range delete.
const MAX_RANGE_BOUND: usize = 256;

const COMPRESSIONS: &[&str] = &["none", "snappy", "lz4", "zstd", "lz4_fast"];
const SYNC_MODES: &[&str] = &["none", "full", "interval"];
const ISOLATIONS: &[&str] = &[
    "read_uncommitted",
    "read_committed",
    "repeatable_read",
    "snapshot",
    "serializable",
];
const LOG_LEVELS: &[&str] = &["none", "trace", "info", "warn", "error"];

/// Every knob key, in the order `kvmark engines` lists them.
const KEYS: &[&str] = &[
    "write_buffer_size",
    "block_cache_size",
    "compression",
    "enable_bloom_filter",
    "bloom_fpr",
    "sync_mode",
    "sync_interval_us",
    "isolation_level",
    "num_flush_threads",
    "num_compaction_threads",
    "l0_queue_stall_threshold",
    "l1_file_count_trigger",
    "level_size_ratio",
    "min_levels",
    "dividing_level_offset",
    "klog_block_size",
    "keep_values_inline",
    "value_separation_threshold",
    "vlog_segment_size",
    "max_open_sstables",
    "skip_list_max_level",
    "skip_list_probability",
    "idle_flush_seconds",
    "tombstone_density_trigger",
    "tombstone_density_min_entries",
    "log_level",
    "log_to_file",
];

/// kvmark logs TidesDB's warnings and errors only: at the library's own `info` level it
/// writes a line per flush and compaction to stderr, in the middle of the report.
const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Warn;

/// The configuration a store opens with, and the isolation the verbs use.
struct Settings {
    db: Config,
    cf: ColumnFamilyConfig,
    isolation: IsolationLevel,
}

fn compression_name(c: CompressionAlgorithm) -> &'static str {
    match c {
        CompressionAlgorithm::None => "none",
        CompressionAlgorithm::Snappy => "snappy",
        CompressionAlgorithm::Lz4 => "lz4",
        CompressionAlgorithm::Zstd => "zstd",
        CompressionAlgorithm::Lz4Fast => "lz4_fast",
    }
}

fn isolation_from(name: &str) -> IsolationLevel {
    match name {
        "read_uncommitted" => IsolationLevel::ReadUncommitted,
        "repeatable_read" => IsolationLevel::RepeatableRead,
        "snapshot" => IsolationLevel::Snapshot,
        "serializable" => IsolationLevel::Serializable,
        _ => IsolationLevel::ReadCommitted,
    }
}

fn isolation_name(i: IsolationLevel) -> &'static str {
    match i {
        IsolationLevel::ReadUncommitted => "read_uncommitted",
        IsolationLevel::ReadCommitted => "read_committed",
        IsolationLevel::RepeatableRead => "repeatable_read",
        IsolationLevel::Snapshot => "snapshot",
        IsolationLevel::Serializable => "serializable",
    }
}

fn sync_name(s: SyncMode) -> &'static str {
    match s {
        SyncMode::None => "none",
        SyncMode::Full => "full",
        SyncMode::Interval => "interval",
    }
}

fn log_level_name(l: LogLevel) -> &'static str {
    match l {
        LogLevel::None => "none",
        LogLevel::Trace => "trace",
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
    }
}

fn int<T: std::str::FromStr>(key: &str, value: &str) -> EngineResult<T> {
    parse_num(ENGINE, key, value)
}

fn size(key: &str, value: &str) -> EngineResult<usize> {
    let n = parse_size(ENGINE, key, value)?;
    usize::try_from(n)
        .map_err(|_| EngineError::other(format!("engine {ENGINE}: option {key} = '{value}' is too large")))
}

/// Maps the options onto TidesDB's configurations, refusing unknown keys and values.
fn settings(options: &EngineOptions) -> EngineResult<Settings> {
    options.check_known(ENGINE, KEYS)?;
    let mut db = Config {
        log_level: DEFAULT_LOG_LEVEL,
        ..Config::default()
    };
    let mut cf = ColumnFamilyConfig::default();
    let mut isolation = cf.default_isolation_level;
    for (key, value) in options.iter() {
        match key {
            "write_buffer_size" => db.memtable_write_buffer_size = size(key, value)?,
            "block_cache_size" => db.block_cache_size = size(key, value)?,
            "compression" => {
                let algo = match parse_choice(ENGINE, key, value, COMPRESSIONS)? {
                    "snappy" => CompressionAlgorithm::Snappy,
                    "lz4" => CompressionAlgorithm::Lz4,
                    "zstd" => CompressionAlgorithm::Zstd,
                    "lz4_fast" => CompressionAlgorithm::Lz4Fast,
                    _ => CompressionAlgorithm::None,
                };
                if !algo.is_available() {
                    return Err(EngineError::other(format!(
                        "engine {ENGINE}: option compression = '{value}': this build of TidesDB has no {} codec \
                         (available: {})",
                        compression_name(algo),
                        available_compressions().join(", ")
                    )));
                }
                cf = cf.compression_algorithm(algo);
            }
            "enable_bloom_filter" => cf.enable_bloom_filter = parse_bool(ENGINE, key, value)?,
            "bloom_fpr" => {
                let fpr: f64 = int(key, value)?;
                if !(fpr > 0.0 && fpr < 1.0) {
                    return Err(EngineError::other(format!(
                        "engine {ENGINE}: option bloom_fpr = '{value}': expected a rate between 0 and 1, e.g. 0.01"
                    )));
                }
                cf.bloom_fpr = fpr;
            }
            "sync_mode" => {
                db.memtable_sync_mode = match parse_choice(ENGINE, key, value, SYNC_MODES)? {
                    "full" => SyncMode::Full,
                    "interval" => SyncMode::Interval,
                    _ => SyncMode::None,
                }
            }
            "sync_interval_us" => db.memtable_sync_interval_us = int(key, value)?,
            "isolation_level" => isolation = isolation_from(parse_choice(ENGINE, key, value, ISOLATIONS)?),
            "num_flush_threads" => db.num_flush_threads = int(key, value)?,
            "num_compaction_threads" => db.num_compaction_threads = int(key, value)?,
            "l0_queue_stall_threshold" => db.memtable_l0_queue_stall_threshold = int(key, value)?,
            "l1_file_count_trigger" => cf.l1_file_count_trigger = int(key, value)?,
            "level_size_ratio" => cf.level_size_ratio = int(key, value)?,
            "min_levels" => cf.min_levels = int(key, value)?,
            "dividing_level_offset" => cf.dividing_level_offset = int(key, value)?,
            "klog_block_size" => cf.btree_klog_block_size = size(key, value)?,
            "keep_values_inline" => cf.keep_values_inline = parse_bool(ENGINE, key, value)?,
            "value_separation_threshold" => db.value_separation_threshold = size(key, value)?,
            "vlog_segment_size" => db.vlog_segment_size = size(key, value)?,
            "max_open_sstables" => db.max_open_sstables = int(key, value)?,
            "skip_list_max_level" => db.memtable_skip_list_max_level = int(key, value)?,
            "skip_list_probability" => db.memtable_skip_list_probability = int(key, value)?,
            "idle_flush_seconds" => db.memtable_idle_flush_seconds = int(key, value)?,
            "tombstone_density_trigger" => cf.tombstone_density_trigger = int(key, value)?,
            "tombstone_density_min_entries" => cf.tombstone_density_min_entries = int(key, value)?,
            "log_level" => {
                db.log_level = match parse_choice(ENGINE, key, value, LOG_LEVELS)? {
                    "none" => LogLevel::None,
                    "trace" => LogLevel::Trace,
                    "info" => LogLevel::Info,
                    "error" => LogLevel::Error,
                    _ => LogLevel::Warn,
                }
            }
            "log_to_file" => db.log_to_file = parse_bool(ENGINE, key, value)?,
            // check_known refused every other key above.
            _ => {}
        }
    }
    cf.default_isolation_level = isolation;
    Ok(Settings { db, cf, isolation })
}

fn available_compressions() -> Vec<&'static str> {
    [
        CompressionAlgorithm::None,
        CompressionAlgorithm::Snappy,
        CompressionAlgorithm::Lz4,
        CompressionAlgorithm::Zstd,
        CompressionAlgorithm::Lz4Fast,
    ]
    .into_iter()
    .filter(|c| c.is_available())
    .map(compression_name)
    .collect()
}

fn validate(options: &EngineOptions) -> EngineResult<()> {
    settings(options).map(drop)
}

/// A TidesDB error: "locked" (transient contention) and a commit conflict are busy.
fn err(e: tidesdb::Error) -> EngineError {
    match e.code() {
        Some(ErrorCode::Locked | ErrorCode::Conflict) => EngineError::busy(e.to_string()),
        _ => EngineError::other(e.to_string()),
    }
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req
        .dir
        .as_deref()
        .ok_or_else(|| EngineError::other("engine tidesdb stores data on disk and needs a directory"))?;
    let s = settings(req.options)?;
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
        let db = Arc::try_unwrap(db).map_err(|db| {
            EngineError::other(format!(
                "tidesdb: cannot close, {} session(s) still open",
                Arc::strong_count(&db) - 1
            ))
        })?;
        drop(db);
        Ok(())
    }
}

/// Everything TidesDB's stats API reports: database, cache, stall, I/O, encoding and
/// column family (per level) figures.
fn stats(db: &TidesDB, cf: &ColumnFamily<'_>) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::with_capacity(160);
    let mut put = |name: String, v: f64| out.push((name, v));
    if let Ok(s) = db.get_db_stats() {
        let fields: [(&str, f64); 39] = [
            ("num_column_families", s.num_column_families as f64),
            ("immutable_memtable_count", s.immutable_memtable_count as f64),
            ("compaction_pending_count", s.compaction_pending_count as f64),
            ("total_sstable_count", s.total_sstable_count as f64),
            ("total_data_size_bytes", s.total_data_size_bytes as f64),
            ("num_open_sstables", s.num_open_sstables as f64),
            ("global_seq", s.global_seq as f64),
            ("min_snapshot_seq", s.min_snapshot_seq as f64),
            ("active_txn_count", s.active_txn_count as f64),
            ("txn_memory_bytes", s.txn_memory_bytes as f64),
            ("txn_commits", s.txn_commits as f64),
            ("txn_conflicts", s.txn_conflicts as f64),
            ("memtable_bytes", s.memtable_bytes as f64),
            ("is_flushing", f64::from(u8::from(s.is_flushing))),
            ("next_cf_index", f64::from(s.next_cf_index)),
            ("wal_generation", s.wal_generation as f64),
            ("flush_count", s.flush_count as f64),
            ("compaction_count", s.compaction_count as f64),
            ("flush_bytes_written", s.flush_bytes_written as f64),
            ("compaction_bytes_written", s.compaction_bytes_written as f64),
            ("compaction_bytes_read", s.compaction_bytes_read as f64),
            ("wal_bytes_written", s.wal_bytes_written as f64),
            ("user_bytes_written", s.user_bytes_written as f64),
            ("vlog_file_size", s.vlog_file_size as f64),
            ("vlog_value_count", s.vlog_value_count as f64),
            ("vlog_used_bytes", s.vlog_used_bytes as f64),
            ("vlog_stored_bytes", s.vlog_stored_bytes as f64),
            ("vlog_live_bytes", s.vlog_live_bytes as f64),
            ("vlog_segment_count", s.vlog_segment_count as f64),
            ("vlog_bytes_written", s.vlog_bytes_written as f64),
            ("vlog_dead_bytes", s.vlog_dead_bytes as f64),
            ("vlog_reclaim_calls", s.vlog_reclaim_calls as f64),
            ("vlog_reclaim_passes", s.vlog_reclaim_passes as f64),
            ("vlog_segments_retired", s.vlog_segments_retired as f64),
            ("vlog_segments_drainable", s.vlog_segments_drainable as f64),
            ("writes_throttled", s.writes_throttled as f64),
            ("writes_blocked", s.writes_blocked as f64),
            ("write_stall_us", s.write_stall_us as f64),
            ("write_stall_ceiling_hits", s.write_stall_ceiling_hits as f64),
        ];
        for (name, v) in fields {
            put(name.to_string(), v);
        }
    }
    if let Ok(c) = db.get_cache_stats() {
        put("cache.enabled".into(), f64::from(u8::from(c.enabled)));
        put("cache.total_entries".into(), c.total_entries as f64);
        put("cache.total_bytes".into(), c.total_bytes as f64);
        put("cache.hits".into(), c.hits as f64);
        put("cache.misses".into(), c.misses as f64);
        put("cache.hit_rate".into(), c.hit_rate);
        put("cache.num_partitions".into(), c.num_partitions as f64);
    }
    if let Ok(stalls) = db.get_stall_stats() {
        for (reason, s) in stalls.iter() {
            put(format!("stall.{reason}.count"), s.count as f64);
            put(format!("stall.{reason}.total_us"), s.total_us as f64);
            put(format!("stall.{reason}.max_us"), s.max_us as f64);
        }
    }
    if let Ok(io) = db.get_io_stats() {
        for (class, s) in io.iter() {
            put(format!("io.{class}.ops"), s.ops as f64);
            put(format!("io.{class}.bytes"), s.bytes as f64);
            put(format!("io.{class}.total_us"), s.total_us as f64);
            put(format!("io.{class}.max_us"), s.max_us as f64);
        }
    }
    for (log, chains) in [
        ("klog", db.get_klog_encoding_stats()),
        ("vlog", db.get_vlog_encoding_stats()),
    ] {
        for chain in chains.into_iter().flatten() {
            let ids: Vec<&str> = chain
                .ids
                .iter()
                .map(|&id| CompressionAlgorithm::from_id(id).map_or("other", compression_name))
                .collect();
            let label = if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join("+")
            };
            put(
                format!("{log}_encoding.{label}.logical_bytes"),
                chain.logical_bytes as f64,
            );
            put(
                format!("{log}_encoding.{label}.stored_bytes"),
                chain.stored_bytes as f64,
            );
            put(format!("{log}_encoding.{label}.items"), chain.item_count as f64);
        }
    }
    if let Ok(s) = cf.get_stats() {
        put("cf.num_levels".into(), f64::from(s.num_levels));
        for (i, bytes) in s.level_sizes.iter().enumerate() {
            let level = i + 1;
            put(format!("cf.level{level}.bytes"), *bytes as f64);
            if let Some(n) = s.level_num_sstables.get(i) {
                put(format!("cf.level{level}.sstables"), f64::from(*n));
            }
            if let Some(n) = s.level_key_counts.get(i) {
                put(format!("cf.level{level}.keys"), *n as f64);
            }
            if let Some(n) = s.level_tombstone_counts.get(i) {
                put(format!("cf.level{level}.tombstones"), *n as f64);
            }
        }
        let fields: [(&str, f64); 22] = [
            ("total_keys", s.total_keys as f64),
            ("total_data_size", s.total_data_size as f64),
            ("avg_key_size", s.avg_key_size),
            ("avg_value_size", s.avg_value_size),
            ("read_amp", s.read_amp),
            ("btree_total_nodes", s.btree_total_nodes as f64),
            ("btree_max_height", f64::from(s.btree_max_height)),
            ("btree_avg_height", s.btree_avg_height),
            ("total_tombstones", s.total_tombstones as f64),
            ("tombstone_ratio", s.tombstone_ratio),
            ("max_sst_density", s.max_sst_density),
            ("max_sst_density_level", f64::from(s.max_sst_density_level)),
            ("wal_bytes_written", s.wal_bytes_written as f64),
            ("flush_bytes_written", s.flush_bytes_written as f64),
            ("compaction_bytes_written", s.compaction_bytes_written as f64),
            ("compaction_bytes_read", s.compaction_bytes_read as f64),
            ("user_bytes_written", s.user_bytes_written as f64),
            ("compaction_count", s.compaction_count as f64),
            ("unflushed_key_count", s.unflushed_key_count as f64),
            ("filter_resident_bytes", s.filter_resident_bytes as f64),
            (
                "estimated_cardinality",
                cf.estimate_cardinality().map_or(f64::NAN, |n| n as f64),
            ),
            ("is_compacting", f64::from(u8::from(cf.is_compacting()))),
        ];
        for (name, v) in fields {
            if !v.is_nan() {
                put(format!("cf.{name}"), v);
            }
        }
    }
    out
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
    format!("TidesDB {}", tidesdb::TIDESDB_LINKED_VERSION)
}

fn knobs() -> Vec<Knob> {
    let db = Config::default();
    let cf = ColumnFamilyConfig::default();
    let pipeline = match cf.encoding_pipeline.as_slice() {
        [] => "none".to_string(),
        algos => algos.iter().map(|a| compression_name(*a)).collect::<Vec<_>>().join("+"),
    };
    vec![
        Knob::new(
            "write_buffer_size",
            format_size(db.memtable_write_buffer_size as u64),
            "memtable size before it is rotated and flushed (shared by column families)",
        ),
        Knob::new(
            "block_cache_size",
            format_size(db.block_cache_size as u64),
            "block cache for hot sstable blocks",
        ),
        Knob::new(
            "compression",
            pipeline,
            "none, snappy, lz4, zstd or lz4_fast (only codecs this build has)",
        ),
        Knob::new(
            "enable_bloom_filter",
            u8::from(cf.enable_bloom_filter).to_string(),
            "bloom filters for point lookups",
        ),
        Knob::new(
            "bloom_fpr",
            cf.bloom_fpr.to_string(),
            "bloom filter false-positive rate",
        ),
        Knob::new(
            "sync_mode",
            sync_name(db.memtable_sync_mode),
            "WAL durability: none, full (fsync every commit) or interval",
        ),
        Knob::new(
            "sync_interval_us",
            db.memtable_sync_interval_us.to_string(),
            "fsync interval for sync_mode=interval",
        ),
        Knob::new(
            "isolation_level",
            isolation_name(cf.default_isolation_level),
            "isolation of kvmark's transactions (append uses at least snapshot)",
        ),
        Knob::new(
            "num_flush_threads",
            db.num_flush_threads.to_string(),
            "flush worker threads",
        ),
        Knob::new(
            "num_compaction_threads",
            db.num_compaction_threads.to_string(),
            "compaction worker threads",
        ),
        Knob::new(
            "l0_queue_stall_threshold",
            db.memtable_l0_queue_stall_threshold.to_string(),
            "immutable memtables queued before writes stall (0: never)",
        ),
        Knob::new(
            "l1_file_count_trigger",
            cf.l1_file_count_trigger.to_string(),
            "L1 sstables that trigger a compaction",
        ),
        Knob::new(
            "level_size_ratio",
            cf.level_size_ratio.to_string(),
            "size ratio between levels",
        ),
        Knob::new("min_levels", cf.min_levels.to_string(), "floor on the level count"),
        Knob::new(
            "dividing_level_offset",
            cf.dividing_level_offset.to_string(),
            "how far above the largest level the dividing level sits",
        ),
        Knob::new(
            "klog_block_size",
            format_size(cf.btree_klog_block_size as u64),
            "key-log btree node size (0: the btree's own choice)",
        ),
        Knob::new(
            "keep_values_inline",
            u8::from(cf.keep_values_inline).to_string(),
            "keep every value in the key log, never in the value log",
        ),
        Knob::new(
            "value_separation_threshold",
            format_size(db.value_separation_threshold as u64),
            "values this large or larger go to the value log",
        ),
        Knob::new(
            "vlog_segment_size",
            format_size(db.vlog_segment_size as u64),
            "value-log segment size",
        ),
        Knob::new(
            "max_open_sstables",
            db.max_open_sstables.to_string(),
            "sstable file handles kept open",
        ),
        Knob::new(
            "skip_list_max_level",
            db.memtable_skip_list_max_level.to_string(),
            "memtable skip list max level",
        ),
        Knob::new(
            "skip_list_probability",
            db.memtable_skip_list_probability.to_string(),
            "memtable skip list level probability",
        ),
        Knob::new(
            "idle_flush_seconds",
            db.memtable_idle_flush_seconds.to_string(),
            "rotate a memtable idle this long (0: never)",
        ),
        Knob::new(
            "tombstone_density_trigger",
            cf.tombstone_density_trigger.to_string(),
            "tombstone density that escalates compaction (0: off)",
        ),
        Knob::new(
            "tombstone_density_min_entries",
            cf.tombstone_density_min_entries.to_string(),
            "entries an sstable needs to be judged by density",
        ),
        Knob::new(
            "log_level",
            log_level_name(DEFAULT_LOG_LEVEL),
            "none, trace, info, warn or error (library default: info, a line per flush on stderr)",
        ),
        Knob::new(
            "log_to_file",
            u8::from(db.log_to_file).to_string(),
            "log to LOG in the store directory instead of stderr",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_listed_as_a_knob_and_accepted() {
        let names: Vec<String> = knobs().iter().map(|k| k.name.to_string()).collect();
        assert_eq!(names, KEYS.iter().map(|k| k.to_string()).collect::<Vec<_>>());
        // Each knob's listed default is itself a valid value.
        let mut o = EngineOptions::new();
        for k in knobs() {
            o.set(k.name.to_string(), k.default.clone());
        }
        validate(&o).unwrap();
    }

    #[test]
    fn values_map_onto_the_configuration() {
        let mut o = EngineOptions::new();
        o.set("write_buffer_size", "32M");
        o.set("enable_bloom_filter", "0");
        o.set("l0_queue_stall_threshold", "10");
        o.set("isolation_level", "snapshot");
        let s = settings(&o).unwrap();
        assert_eq!(s.db.memtable_write_buffer_size, 32 << 20);
        assert!(!s.cf.enable_bloom_filter);
        assert_eq!(s.db.memtable_l0_queue_stall_threshold, 10);
        assert_eq!(s.isolation, IsolationLevel::Snapshot);
    }

    #[test]
    fn bad_keys_and_values_name_engine_and_key() {
        for (k, v) in [
            ("nope", "1"),
            ("write_buffer_size", "64MB"),
            ("sync_mode", "sometimes"),
            ("bloom_fpr", "2"),
        ] {
            let mut o = EngineOptions::new();
            o.set(k, v);
            let e = validate(&o).unwrap_err();
            assert!(
                e.message.contains("tidesdb") && e.message.contains(k),
                "{k}: {}",
                e.message
            );
        }
    }
}
