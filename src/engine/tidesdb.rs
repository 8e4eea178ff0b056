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

use super::options::format_size;
use super::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, KnobDef, KnobTable, OpenRequest, ReadBuf,
    ScanFn, Session, StorageKind, Store, Values, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: "tidesdb",
    storage: StorageKind::Disk,
    description: "TidesDB transactional LSM tree (bundled C library); a closed set of knobs",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: false,
    atomic_batches: true,
    version,
    knobs: &KNOBS,
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

/// The knobs, mapped field by field onto TidesDB's database and column family
/// configurations; defaults are read from the linked library.
static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    || {
        let cf = ColumnFamilyConfig::default();
        Settings {
            db: Config {
                log_level: DEFAULT_LOG_LEVEL,
                ..Config::default()
            },
            isolation: cf.default_isolation_level,
            cf,
        }
    },
    &[
        KnobDef {
            name: "write_buffer_size",
            help: "memtable size before it is rotated and flushed (shared by column families)",
            default: || format_size(Config::default().memtable_write_buffer_size as u64),
            set: |s, v| v.size_usize().map(|n| s.db.memtable_write_buffer_size = n),
        },
        KnobDef {
            name: "block_cache_size",
            help: "block cache for hot sstable blocks",
            default: || format_size(Config::default().block_cache_size as u64),
            set: |s, v| v.size_usize().map(|n| s.db.block_cache_size = n),
        },
        KnobDef {
            name: "compression",
            help: "none, snappy, lz4, zstd or lz4_fast (only codecs this build has)",
            default: || match ColumnFamilyConfig::default().encoding_pipeline.as_slice() {
                [] => "none".to_string(),
                algos => algos.iter().map(|a| compression_name(*a)).collect::<Vec<_>>().join("+"),
            },
            set: |s, v| {
                let algo = match v.choice(COMPRESSIONS)? {
                    "snappy" => CompressionAlgorithm::Snappy,
                    "lz4" => CompressionAlgorithm::Lz4,
                    "zstd" => CompressionAlgorithm::Zstd,
                    "lz4_fast" => CompressionAlgorithm::Lz4Fast,
                    _ => CompressionAlgorithm::None,
                };
                if !algo.is_available() {
                    return Err(v.refuse(format_args!(
                        "this build of TidesDB has no {} codec (available: {})",
                        compression_name(algo),
                        available_compressions().join(", ")
                    )));
                }
                s.cf = std::mem::take(&mut s.cf).compression_algorithm(algo);
                Ok(())
            },
        },
        KnobDef {
            name: "enable_bloom_filter",
            help: "bloom filters for point lookups",
            default: || u8::from(ColumnFamilyConfig::default().enable_bloom_filter).to_string(),
            set: |s, v| v.bool().map(|b| s.cf.enable_bloom_filter = b),
        },
        KnobDef {
            name: "bloom_fpr",
            help: "bloom filter false-positive rate",
            default: || ColumnFamilyConfig::default().bloom_fpr.to_string(),
            set: |s, v| {
                let fpr: f64 = v.num()?;
                if !(fpr > 0.0 && fpr < 1.0) {
                    return Err(v.refuse("expected a rate between 0 and 1, e.g. 0.01"));
                }
                s.cf.bloom_fpr = fpr;
                Ok(())
            },
        },
        KnobDef {
            name: "sync_mode",
            help: "WAL durability: none, full (fsync every commit) or interval",
            default: || sync_name(Config::default().memtable_sync_mode).to_string(),
            set: |s, v| {
                s.db.memtable_sync_mode = match v.choice(SYNC_MODES)? {
                    "full" => SyncMode::Full,
                    "interval" => SyncMode::Interval,
                    _ => SyncMode::None,
                };
                Ok(())
            },
        },
        KnobDef {
            name: "sync_interval_us",
            help: "fsync interval for sync_mode=interval",
            default: || Config::default().memtable_sync_interval_us.to_string(),
            set: |s, v| v.num().map(|n| s.db.memtable_sync_interval_us = n),
        },
        KnobDef {
            name: "isolation_level",
            help: "isolation of kvmark's transactions (append uses at least snapshot)",
            default: || isolation_name(ColumnFamilyConfig::default().default_isolation_level).to_string(),
            set: |s, v| {
                s.isolation = isolation_from(v.choice(ISOLATIONS)?);
                s.cf.default_isolation_level = s.isolation;
                Ok(())
            },
        },
        KnobDef {
            name: "num_flush_threads",
            help: "flush worker threads",
            default: || Config::default().num_flush_threads.to_string(),
            set: |s, v| v.num().map(|n| s.db.num_flush_threads = n),
        },
        KnobDef {
            name: "num_compaction_threads",
            help: "compaction worker threads",
            default: || Config::default().num_compaction_threads.to_string(),
            set: |s, v| v.num().map(|n| s.db.num_compaction_threads = n),
        },
        KnobDef {
            name: "l0_queue_stall_threshold",
            help: "immutable memtables queued before writes stall (0: never)",
            default: || Config::default().memtable_l0_queue_stall_threshold.to_string(),
            set: |s, v| v.num().map(|n| s.db.memtable_l0_queue_stall_threshold = n),
        },
        KnobDef {
            name: "l1_file_count_trigger",
            help: "L1 sstables that trigger a compaction",
            default: || ColumnFamilyConfig::default().l1_file_count_trigger.to_string(),
            set: |s, v| v.num().map(|n| s.cf.l1_file_count_trigger = n),
        },
        KnobDef {
            name: "level_size_ratio",
            help: "size ratio between levels",
            default: || ColumnFamilyConfig::default().level_size_ratio.to_string(),
            set: |s, v| v.num().map(|n| s.cf.level_size_ratio = n),
        },
        KnobDef {
            name: "min_levels",
            help: "floor on the level count",
            default: || ColumnFamilyConfig::default().min_levels.to_string(),
            set: |s, v| v.num().map(|n| s.cf.min_levels = n),
        },
        KnobDef {
            name: "dividing_level_offset",
            help: "how far above the largest level the dividing level sits",
            default: || ColumnFamilyConfig::default().dividing_level_offset.to_string(),
            set: |s, v| v.num().map(|n| s.cf.dividing_level_offset = n),
        },
        KnobDef {
            name: "klog_block_size",
            help: "key-log btree node size (0: the btree's own choice)",
            default: || format_size(ColumnFamilyConfig::default().btree_klog_block_size as u64),
            set: |s, v| v.size_usize().map(|n| s.cf.btree_klog_block_size = n),
        },
        KnobDef {
            name: "keep_values_inline",
            help: "keep every value in the key log, never in the value log",
            default: || u8::from(ColumnFamilyConfig::default().keep_values_inline).to_string(),
            set: |s, v| v.bool().map(|b| s.cf.keep_values_inline = b),
        },
        KnobDef {
            name: "value_separation_threshold",
            help: "values this large or larger go to the value log",
            default: || format_size(Config::default().value_separation_threshold as u64),
            set: |s, v| v.size_usize().map(|n| s.db.value_separation_threshold = n),
        },
        KnobDef {
            name: "vlog_segment_size",
            help: "value-log segment size",
            default: || format_size(Config::default().vlog_segment_size as u64),
            set: |s, v| v.size_usize().map(|n| s.db.vlog_segment_size = n),
        },
        KnobDef {
            name: "max_open_sstables",
            help: "sstable file handles kept open",
            default: || Config::default().max_open_sstables.to_string(),
            set: |s, v| v.num().map(|n| s.db.max_open_sstables = n),
        },
        KnobDef {
            name: "skip_list_max_level",
            help: "memtable skip list max level",
            default: || Config::default().memtable_skip_list_max_level.to_string(),
            set: |s, v| v.num().map(|n| s.db.memtable_skip_list_max_level = n),
        },
        KnobDef {
            name: "skip_list_probability",
            help: "memtable skip list level probability",
            default: || Config::default().memtable_skip_list_probability.to_string(),
            set: |s, v| v.num().map(|n| s.db.memtable_skip_list_probability = n),
        },
        KnobDef {
            name: "idle_flush_seconds",
            help: "rotate a memtable idle this long (0: never)",
            default: || Config::default().memtable_idle_flush_seconds.to_string(),
            set: |s, v| v.num().map(|n| s.db.memtable_idle_flush_seconds = n),
        },
        KnobDef {
            name: "tombstone_density_trigger",
            help: "tombstone density that escalates compaction (0: off)",
            default: || ColumnFamilyConfig::default().tombstone_density_trigger.to_string(),
            set: |s, v| v.num().map(|n| s.cf.tombstone_density_trigger = n),
        },
        KnobDef {
            name: "tombstone_density_min_entries",
            help: "entries an sstable needs to be judged by density",
            default: || ColumnFamilyConfig::default().tombstone_density_min_entries.to_string(),
            set: |s, v| v.num().map(|n| s.cf.tombstone_density_min_entries = n),
        },
        KnobDef {
            name: "log_level",
            help: "none, trace, info, warn or error (library default: info, a line per flush on stderr)",
            default: || log_level_name(DEFAULT_LOG_LEVEL).to_string(),
            set: |s, v| {
                s.db.log_level = match v.choice(LOG_LEVELS)? {
                    "none" => LogLevel::None,
                    "trace" => LogLevel::Trace,
                    "info" => LogLevel::Info,
                    "error" => LogLevel::Error,
                    _ => LogLevel::Warn,
                };
                Ok(())
            },
        },
        KnobDef {
            name: "log_to_file",
            help: "log to LOG in the store directory instead of stderr",
            default: || u8::from(Config::default().log_to_file).to_string(),
            set: |s, v| v.bool().map(|b| s.db.log_to_file = b),
        },
    ],
);

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, KnobSet};

    #[test]
    fn values_map_onto_the_configuration() {
        let mut o = EngineOptions::new();
        o.set("write_buffer_size", "32M");
        o.set("enable_bloom_filter", "0");
        o.set("l0_queue_stall_threshold", "10");
        o.set("isolation_level", "snapshot");
        let s = KNOBS.parse(&o).unwrap();
        assert_eq!(s.db.memtable_write_buffer_size, 32 << 20);
        assert!(!s.cf.enable_bloom_filter);
        assert_eq!(s.db.memtable_l0_queue_stall_threshold, 10);
        assert_eq!(s.isolation, IsolationLevel::Snapshot);
        assert_eq!(s.cf.default_isolation_level, IsolationLevel::Snapshot);
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
            let e = KNOBS.validate(&o).unwrap_err();
            assert!(
                e.message.contains("tidesdb") && e.message.contains(k),
                "{k}: {}",
                e.message
            );
            assert_eq!(e.key.as_deref(), Some(k));
        }
    }
}
