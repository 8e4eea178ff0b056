//! One operation of a generated or replayed stream, and how it drives the timed verbs.
//!
//! A spec's unit is one of these: inserts and updates are `put`, merges `append`,
//! point queries `get`, point deletes `del`, range deletes `delete_range`, and range
//! queries `scan` (streamed to a callback that only counts, so a large range is never
//! materialised). A read-modify-write is a `get` then a `put` of the same key, both
//! timed, in one unit.

use crate::kv::Kv;

/// Upper bound of a count-bounded scan: sorts after every key that does not start
/// with 256 bytes of 0xff (spec keys never contain 0xff at all).
pub const SCAN_END: [u8; 256] = [0xff; 256];

/// One operation, borrowing its key and value bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// Insert a fresh key (`I`).
    Insert {
        /// Key.
        key: &'a [u8],
        /// Value.
        val: &'a [u8],
    },
    /// Overwrite a live key (`U`).
    Update {
        /// Key.
        key: &'a [u8],
        /// Value.
        val: &'a [u8],
    },
    /// Append to a live key's value (`M`).
    Merge {
        /// Key.
        key: &'a [u8],
        /// Suffix.
        val: &'a [u8],
    },
    /// Get then put a live key (`W`, kvmark's extension to the line format).
    ReadModifyWrite {
        /// Key.
        key: &'a [u8],
        /// New value.
        val: &'a [u8],
    },
    /// Point query (`P`), of a live or an absent key.
    Get {
        /// Key.
        key: &'a [u8],
    },
    /// Point delete (`D`), of a live or an absent key.
    Delete {
        /// Key.
        key: &'a [u8],
    },
    /// Range query (`S`): from `lo`, up to `hi` (exclusive) or `limit` rows.
    Scan {
        /// First key.
        lo: &'a [u8],
        /// End key, or None for a count-bounded scan.
        hi: Option<&'a [u8]>,
        /// Row limit (0: none).
        limit: u64,
    },
    /// Range delete (`R`) of keys in [lo, hi).
    DeleteRange {
        /// First key.
        lo: &'a [u8],
        /// End key (exclusive).
        hi: &'a [u8],
    },
    /// Nothing to do: the operation needed a live key and the thread had none. It
    /// still counts as a unit so the phase's budget is kept; generators count these.
    Skip,
}

impl Op<'_> {
    /// Runs the operation against `kv`. Engine errors are already counted per kind
    /// by `kv` (and reported, and fail the point), so they are not returned here.
    #[inline]
    pub fn execute(&self, kv: &mut Kv) {
        // Each result is recorded inside Kv (errors counted with their first message).
        match *self {
            Op::Insert { key, val } | Op::Update { key, val } => {
                // In an epoch's run phase the length comes from the epoch's value sizes.
                let _ = kv.put_sized(key, val);
            }
            Op::Merge { key, val } => {
                let _ = kv.append(key, val);
            }
            Op::ReadModifyWrite { key, val } => {
                let _ = kv.get(key);
                let _ = kv.put_sized(key, val);
            }
            Op::Get { key } => {
                let _ = kv.get(key);
            }
            Op::Delete { key } => {
                let _ = kv.del(key);
            }
            Op::Scan { lo, hi, limit } => {
                let hi = hi.unwrap_or(&SCAN_END);
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                let _ = kv.scan(lo, hi, limit, &mut |_, _| false);
            }
            Op::DeleteRange { lo, hi } => {
                let _ = kv.delete_range(lo, hi);
            }
            Op::Skip => {}
        }
    }
}
