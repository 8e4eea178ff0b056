//! Figures derived from a point for the machine-readable sinks: one view per timed
//! phase (and one over all phases when there are several), with its own throughput.

use crate::metrics::Recorder;
use crate::run::result::{PointResult, Spread, per_sec};

/// The rows of one phase of a point (or of all its phases).
#[derive(Debug)]
pub struct PhaseView<'a> {
    /// The phase name, or "all" for the merge of several phases.
    pub name: &'a str,
    /// Its latency histograms and counters, merged over repeats and threads.
    pub rec: &'a Recorder,
    /// Workload units per second over repeats.
    pub wu: Spread,
    /// Primitive operations per second over repeats.
    pub ops: Spread,
    /// Units over all repeats.
    pub units: u64,
    /// Wall time over all repeats, seconds.
    pub wall_s: f64,
}

/// Phase views of a point: one per phase, plus "all" when there are several.
pub fn phase_views(p: &PointResult) -> Vec<PhaseView<'_>> {
    let mut views = Vec::new();
    for (i, (name, rec)) in p.phases.iter().enumerate() {
        let runs: Vec<_> = p.repeats.iter().filter_map(|r| r.phases.get(i)).collect();
        views.push(PhaseView {
            name,
            rec,
            wu: Spread::of(&runs.iter().map(|r| per_sec(r.units, r.wall_ns)).collect::<Vec<_>>()),
            ops: Spread::of(&runs.iter().map(|r| per_sec(r.prim_ops, r.wall_ns)).collect::<Vec<_>>()),
            units: runs.iter().map(|r| r.units).sum(),
            wall_s: runs.iter().map(|r| r.wall_ns as f64 / 1e9).sum(),
        });
    }
    if views.len() != 1 {
        views.push(PhaseView {
            name: "all",
            rec: &p.merged,
            wu: p.wu_per_sec(),
            ops: p.ops_per_sec(),
            units: p.repeats.iter().map(|r| r.units()).sum(),
            wall_s: p.repeats.iter().map(|r| r.wall_ns() as f64 / 1e9).sum(),
        });
    }
    views
}

/// Hits over lookups for `get`/`mget` rows; None for kinds that do not look keys up.
pub fn hit_rate(hits: u64, misses: u64) -> Option<f64> {
    (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64)
}

/// Errors over calls (0 for no calls).
pub fn err_rate(errors: u64, calls: u64) -> f64 {
    if calls == 0 { 0.0 } else { errors as f64 / calls as f64 }
}
