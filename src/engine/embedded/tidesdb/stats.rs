//! TidesDB's internals for the timeline, from its stats API.

use tidesdb::{ColumnFamily, CompressionAlgorithm, TidesDB};

use super::knobs::compression_name;

/// Everything TidesDB's stats API reports: database, cache, stall, I/O, encoding and
/// column family (per level) figures.
pub(super) fn stats(db: &TidesDB, cf: &ColumnFamily<'_>) -> Vec<(String, f64)> {
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
