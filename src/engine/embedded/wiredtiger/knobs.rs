//! The engine's settings: the knobs that set them (WiredTiger 3.2's documented defaults)
//! and the configuration strings they become.

use super::ENGINE;
use crate::engine::options::format_size;
use crate::engine::{KnobDef, KnobTable};

const COMPRESSORS: &[&str] = &["none", "snappy", "zlib"];

pub(super) struct Settings {
    cache_size: u64,
    session_max: u32,
    checkpoint_wait: u32,
    log: bool,
    log_file_max: u64,
    transaction_sync: bool,
    leaf_page_max: u64,
    internal_page_max: u64,
    block_compressor: &'static str,
}

impl Settings {
    /// `wiredtiger_open`'s configuration.
    pub(super) fn connection_config(&self) -> String {
        let mut c = format!(
            "create,cache_size={},session_max={},statistics=(fast),checkpoint=(wait={}),\
             log=(enabled={},file_max={}),transaction_sync=(enabled={},method=fsync)",
            self.cache_size, self.session_max, self.checkpoint_wait, self.log, self.log_file_max, self.transaction_sync,
        );
        if self.block_compressor != "none" {
            // Debian ships the compressors as loadable extensions beside the library.
            c.push_str(&format!(
                ",extensions=[{}/libwiredtiger_{}.so]",
                env!("KVMARK_WIREDTIGER_LIBDIR"),
                self.block_compressor
            ));
        }
        c
    }

    /// The table's configuration.
    pub(super) fn table_config(&self) -> String {
        let mut c = format!(
            "key_format=u,value_format=u,leaf_page_max={},internal_page_max={}",
            self.leaf_page_max, self.internal_page_max
        );
        if self.block_compressor != "none" {
            c.push_str(&format!(",block_compressor={}", self.block_compressor));
        }
        c
    }
}

// WiredTiger 3.2's documented defaults.
const DEFAULT_CACHE: u64 = 100 << 20;
const DEFAULT_SESSION_MAX: u32 = 100;
const DEFAULT_LOG_FILE_MAX: u64 = 100 << 20;
const DEFAULT_LEAF_PAGE_MAX: u64 = 32 << 10;
const DEFAULT_INTERNAL_PAGE_MAX: u64 = 4 << 10;

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    ENGINE,
    || Settings {
        cache_size: DEFAULT_CACHE,
        session_max: DEFAULT_SESSION_MAX,
        checkpoint_wait: 0,
        log: false,
        log_file_max: DEFAULT_LOG_FILE_MAX,
        transaction_sync: false,
        leaf_page_max: DEFAULT_LEAF_PAGE_MAX,
        internal_page_max: DEFAULT_INTERNAL_PAGE_MAX,
        block_compressor: "none",
    },
    &[
        KnobDef {
            name: "cache_size",
            help: "the shared page cache (MongoDB gives it half the RAM less 1G)",
            default: || format_size(DEFAULT_CACHE),
            set: |s, v| v.size().map(|n| s.cache_size = n),
        },
        KnobDef {
            name: "session_max",
            help: "most WiredTiger sessions: one per worker thread, plus one for the stats",
            default: || DEFAULT_SESSION_MAX.to_string(),
            set: |s, v| v.num().map(|n| s.session_max = n),
        },
        KnobDef {
            name: "checkpoint_wait",
            help: "seconds between checkpoints (0: only at close; MongoDB uses 60)",
            default: || "0".to_string(),
            set: |s, v| v.num().map(|n| s.checkpoint_wait = n),
        },
        KnobDef {
            name: "log",
            help: "write-ahead log of every commit (MongoDB's journal)",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.log = b),
        },
        KnobDef {
            name: "log_file_max",
            help: "size of a log file before the next one starts (100K to 2G)",
            default: || format_size(DEFAULT_LOG_FILE_MAX),
            set: |s, v| v.size().map(|n| s.log_file_max = n),
        },
        KnobDef {
            name: "transaction_sync",
            help: "fsync the log at every commit (needs log=1)",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.transaction_sync = b),
        },
        KnobDef {
            name: "leaf_page_max",
            help: "largest leaf page written to disk",
            default: || format_size(DEFAULT_LEAF_PAGE_MAX),
            set: |s, v| v.size().map(|n| s.leaf_page_max = n),
        },
        KnobDef {
            name: "internal_page_max",
            help: "largest internal page written to disk",
            default: || format_size(DEFAULT_INTERNAL_PAGE_MAX),
            set: |s, v| v.size().map(|n| s.internal_page_max = n),
        },
        KnobDef {
            name: "block_compressor",
            help: "page compression: none, snappy or zlib (MongoDB uses snappy)",
            default: || "none".to_string(),
            set: |s, v| v.choice(COMPRESSORS).map(|c| s.block_compressor = c),
        },
    ],
)
.with_check(|s| {
    if s.transaction_sync && !s.log {
        return Err(("transaction_sync", "syncs the log, so it needs log=1".to_string()));
    }
    Ok(())
});
