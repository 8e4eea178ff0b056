//! How a run is watched: the small trait the runner reports through. The runner owns
//! it and the reporters implement it, so the runner needs nothing from the layers
//! above it. It is told per finished point and per sample interval, never per
//! operation.

use super::sampler::Sample;
use crate::result::PointResult;

/// Whoever watches a run: told of each finished point and, while a measurement runs,
/// of its samples (from the sampler thread, hence `Sync`).
pub trait Observer: Sync {
    /// True when samples should carry the `--timeline` metrics.
    fn wants_timeline(&self) -> bool {
        false
    }
    /// True when interval histograms are wanted even without `--timeline` (each step
    /// is then one interval).
    fn wants_intervals(&self) -> bool {
        false
    }
    /// A point finished.
    fn point(&self, point: &PointResult);
    /// One interval of one phase of one measurement.
    fn sample(&self, sample: &Sample<'_>);
}
