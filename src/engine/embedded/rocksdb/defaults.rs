//! What the linked RocksDB says about itself: its version and every option with its
//! default, read from the OPTIONS file it writes when a throwaway store opens.

use std::path::Path;
use std::sync::OnceLock;

use rocksdb::{DB, Options};

use crate::engine::Knob;
use crate::engine::storage::fresh_dir;
use crate::engine::versions::{lock_version, shared_library_of};

/// What the linked library says about itself: its version and every option with its
/// default, both read from the OPTIONS file RocksDB writes when a store opens.
struct Defaults {
    version: String,
    knobs: Vec<Knob>,
}

/// Opens a throwaway store once per process and reads its OPTIONS file.
fn defaults() -> &'static Result<Defaults, String> {
    static DEFAULTS: OnceLock<Result<Defaults, String>> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        // A directory of its own, never an existing one, since it is removed after.
        let dir = fresh_dir(&std::env::temp_dir(), "kvmark-rocksdb-defaults")
            .map_err(|e| format!("cannot create a directory to read RocksDB's defaults: {e}"))?;
        let result = probe_defaults(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        result
    })
}

fn probe_defaults(dir: &Path) -> Result<Defaults, String> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    // A fresh store has no table files, yet RocksDB starts max_file_opening_threads
    // threads (16 by default) at open to load them: 16 stacks and up to 16 malloc arenas
    // at once in every run that records the build probe. Under an address-space limit
    // that aborted kvmark (std::thread throws, nothing catches it). One thread is
    // enough here, and the knob's real default is read from the library below.
    opts.set_max_file_opening_threads(1);
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
    let mut defaults = parse_options_file(&text)?;
    let opening_threads = default_max_file_opening_threads().to_string();
    for knob in defaults
        .knobs
        .iter_mut()
        .filter(|k| k.name == "max_file_opening_threads")
    {
        knob.default.clone_from(&opening_threads);
    }
    Ok(defaults)
}

/// The library's default for the one option the probe sets, from a fresh options
/// object (the Rust crate has no getter for it).
fn default_max_file_opening_threads() -> i32 {
    // SAFETY: the options object is created, read and destroyed here, and used by
    // nothing else.
    unsafe {
        let opts = librocksdb_sys::rocksdb_options_create();
        let n = librocksdb_sys::rocksdb_options_get_max_file_opening_threads(opts);
        librocksdb_sys::rocksdb_options_destroy(opts);
        n
    }
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

pub(super) fn version() -> String {
    match defaults() {
        Ok(d) => format!("{} ({})", d.version, codecs()),
        Err(e) => {
            // The crate's version carries the bundled RocksDB release as build metadata.
            let bundled = lock_version("librocksdb-sys")
                .and_then(|v| v.split_once('+'))
                .map_or("unknown", |(_, r)| r);
            format!("RocksDB {bundled} (bundled; reading the linked library failed: {e})")
        }
    }
}

/// Where RocksDB's compression codecs come from. zstd is read from the linked library
/// itself. snappy, lz4, zlib and bzip2 are compiled in: their crates build them
/// statically for RocksDB, and RocksDB 11 calls snappy::CompressionOptions, which
/// Debian 12's snappy 1.1.9 lacks (it came with snappy 1.2).
fn codecs() -> String {
    // SAFETY: ZSTD_versionNumber takes nothing and returns a number.
    let zstd_version = unsafe { zstd_sys::ZSTD_versionNumber() };
    let zstd = format!(
        "zstd {}.{}.{}",
        zstd_version / 10_000,
        zstd_version / 100 % 100,
        zstd_version % 100
    );
    let zstd = match shared_library_of(zstd_sys::ZSTD_versionNumber as *const std::ffi::c_void) {
        Some(lib) => format!("{zstd} from the system ({lib})"),
        None => format!("{zstd} compiled in"),
    };
    format!("codecs: {zstd}; snappy, lz4, zlib and bzip2 compiled in")
}

pub(super) fn knobs() -> Vec<Knob> {
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

    #[test]
    fn defaults_come_from_the_linked_library() {
        let d = defaults().as_ref().expect("probe the linked RocksDB");
        assert!(d.version.starts_with("RocksDB 1"), "{}", d.version);
        let find = |n: &str| d.knobs.iter().find(|k| k.name == n).map(|k| k.default.clone());
        assert_eq!(find("write_buffer_size").as_deref(), Some("67108864"));
        assert_eq!(find("level0_stop_writes_trigger").as_deref(), Some("36"));
        assert!(find("block_based_table_factory={block_size}").is_some());
        // The probe opens its store with one file-opening thread; the listed default
        // is still the library's.
        assert_eq!(find("max_file_opening_threads").as_deref(), Some("16"));
    }
}
