//! TidesDB's knobs: one table mapped field by field onto its database and column
//! family configurations, with the defaults read from the linked library.

use tidesdb::{ColumnFamilyConfig, CompressionAlgorithm, Config, IsolationLevel, LogLevel, SyncMode};

use super::ENGINE;
use crate::engine::options::format_size;
use crate::engine::{KnobDef, KnobTable};

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
pub(super) struct Settings {
    /// The database configuration.
    pub(super) db: Config,
    /// The configuration of kvmark's column family.
    pub(super) cf: ColumnFamilyConfig,
    /// The isolation of kvmark's transactions.
    pub(super) isolation: IsolationLevel,
}

pub(super) fn compression_name(c: CompressionAlgorithm) -> &'static str {
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
pub(super) static KNOBS: KnobTable<Settings> = KnobTable::new(
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
