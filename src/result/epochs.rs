//! Growing-value figures of a point: which epoch and mode it measured, the store it
//! measured, and its figures over repeats.

use crate::kv::sizes::SizeSnapshot;
use crate::workload::epochs::EpochMode;

use super::intervals::Intervals;

/// Which epoch and mode a point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochTag {
    /// 1-based epoch.
    pub number: u32,
    /// What it measures.
    pub mode: EpochMode,
}

/// Growing-value figures of one point.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochInfo {
    /// Which epoch and mode.
    pub tag: EpochTag,
    /// Records in the store the point measured.
    pub records: u64,
    /// Key and value bytes in it.
    pub volume_bytes: u64,
    /// Its value sizes (the main store's at the end of the extend phase, for extend,
    /// main and clean points).
    pub value_sizes: SizeSnapshot,
    /// Extends of the epoch that the value cap turned away (extend and main points).
    pub skipped_extends: u64,
    /// Spread: the records the load was asked for (the volume over the initial record
    /// size).
    pub target_records: Option<u64>,
    /// Clean: the dump of the main store, as (wall ns, file bytes), median over repeats.
    pub dump: Option<(u64, u64)>,
    /// Hash of the store's logical contents, with `--ivs-verify` (main: after the
    /// extend phase; clean: after the restore).
    pub data_hash: Option<u64>,
    /// Figures over repeats: mean and 95% interval.
    pub intervals: Intervals,
}
