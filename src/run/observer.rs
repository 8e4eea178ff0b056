//! How a run is watched: the small trait the runner reports through. The runner owns
//! it and the reporters implement it, so the runner needs nothing from the layers
//! above it. It is told per finished point and per sample interval, never per
//! operation.

use crate::metrics::Recorder;
use crate::result::{PointKey, PointResult};

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

/// One timeline interval.
#[derive(Debug)]
pub struct Sample<'a> {
    /// The grid point (for a seed: the point it seeds, with the loader thread count).
    pub point: &'a PointKey,
    /// 1-based number of the point in the run (a shared seed carries the number of
    /// the first point it serves).
    pub point_seq: usize,
    /// 1-based repeat of the point; 0 for a seed shared by several points.
    pub repeat: usize,
    /// `seed`, or the timed phase's name (`run` for Lua workloads).
    pub phase: &'a str,
    /// Interval start, seconds since the measurement's first step began.
    pub start_s: f64,
    /// Interval end, seconds since the measurement's first step began.
    pub elapsed_s: f64,
    /// Interval start as Unix time in seconds (for histogram logs).
    pub start_unix: f64,
    /// Metric name and value, in a stable order. Empty when only interval histograms
    /// were asked for (no `--timeline`).
    pub metrics: &'a [(String, f64)],
    /// The interval's latency histograms per operation kind (None for a seed).
    pub latency: Option<&'a Recorder>,
}
