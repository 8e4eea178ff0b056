//! The engine's settings: their defaults and the knobs that set them.

use super::ENGINE;
use super::ffi::{DB_TXN_NOSYNC, DB_TXN_WRITE_NOSYNC};
use crate::engine::options::format_size;
use crate::engine::{KnobDef, KnobTable};

/// Berkeley DB's cache when none is set (`DB_ENV->set_cachesize`'s documented default).
const DEFAULT_CACHE: u64 = 256 << 10;
const SYNCS: &[&str] = &["sync", "write_nosync", "nosync"];

#[derive(Debug, Clone)]
pub(super) struct Settings {
    pub(super) cache_size: Option<u64>,
    pub(super) page_size: Option<u32>,
    pub(super) transactions: bool,
    /// Extra environment flags for commit durability.
    pub(super) txn_sync: u32,
}

pub(super) static KNOBS: KnobTable<Settings> = KnobTable::<Settings>::new(
    ENGINE,
    || Settings {
        cache_size: None,
        page_size: None,
        transactions: true,
        txn_sync: 0,
    },
    &[
        KnobDef {
            name: "cache_size",
            help: "memory pool (page cache) size; Berkeley DB adds 25% below 500M",
            default: || format_size(DEFAULT_CACHE),
            set: |s, v| {
                let n = v.size()?;
                if n == 0 {
                    return Err(v.refuse("expected a size above 0"));
                }
                s.cache_size = Some(n);
                Ok(())
            },
        },
        KnobDef {
            name: "page_size",
            help: "B-tree page size, a power of two from 512 to 64K (auto: the file system's block size)",
            default: || "auto".to_string(),
            set: |s, v| {
                if v.text.eq_ignore_ascii_case("auto") {
                    s.page_size = None;
                    return Ok(());
                }
                match v.size() {
                    Ok(n) if (512..=65536).contains(&n) && n.is_power_of_two() => {
                        s.page_size = Some(n as u32);
                        Ok(())
                    }
                    _ => Err(v.refuse("expected auto or a power of two from 512 to 64K")),
                }
            },
        },
        KnobDef {
            name: "transactions",
            help: "1: transactions, log and durable commits; 0: Concurrent Data Store (one writer, no log)",
            default: || "1".to_string(),
            set: |s, v| v.bool().map(|b| s.transactions = b),
        },
        KnobDef {
            name: "txn_sync",
            help: "commit durability with transactions: sync (flush the log), write_nosync or nosync",
            default: || "sync".to_string(),
            set: |s, v| {
                s.txn_sync = match v.choice(SYNCS)? {
                    "write_nosync" => DB_TXN_WRITE_NOSYNC,
                    "nosync" => DB_TXN_NOSYNC,
                    _ => 0,
                };
                Ok(())
            },
        },
    ],
);
