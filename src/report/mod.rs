//! Reporters: sinks that receive the run's metadata, each finished point, and the end
//! of the run. One file per sink behind the small [`Sink`] trait; [`Reporter`] fans
//! every event out to all requested sinks (after hyperfine's exporters).

pub mod console;
pub mod format;
pub mod openloop;

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::run::RunOutcome;
use crate::run::pace::{Arrival, Rate};
use crate::run::result::PointResult;
use crate::run::slo::Slo;
use crate::workload::Budget;

/// What a run is, for report headers.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// kvmark's version.
    pub version: String,
    /// (name, path) of each workload, in run order.
    pub workloads: Vec<(String, PathBuf)>,
    /// (name, library version) of each engine.
    pub engines: Vec<(String, String)>,
    /// Thread counts swept.
    pub threads: Vec<usize>,
    /// Batch sizes given with --batch, if any.
    pub batch: Option<Vec<usize>>,
    /// Budget per timed phase.
    pub budget: Budget,
    /// Repeats per cell.
    pub repeat: usize,
    /// Base seed.
    pub seed: u64,
    /// ctx.users.
    pub users: u64,
    /// ctx.items.
    pub items: u64,
    /// Seed once per engine.
    pub seed_once: bool,
    /// Open-loop target rates swept (empty: closed loop).
    pub rates: Vec<Rate>,
    /// How paced units arrive.
    pub arrival: Arrival,
    /// Warm-up excluded from each measurement.
    pub warmup: Option<Duration>,
    /// The SLO searched for, if any, and the seconds per probe.
    pub slo: Option<(Slo, f64)>,
}

/// A report destination.
pub trait Sink {
    /// The run is starting.
    fn begin(&mut self, info: &RunInfo) -> io::Result<()>;
    /// A point finished (written at once, so a run that dies keeps finished points).
    fn point(&mut self, point: &PointResult) -> io::Result<()>;
    /// The run ended (normally, with failures, or interrupted).
    fn end(&mut self, outcome: &RunOutcome) -> io::Result<()>;
}

/// Fans events out to every sink, remembering write failures for the end of the run.
#[derive(Default)]
pub struct Reporter {
    sinks: Vec<(String, Box<dyn Sink>)>,
    errors: Vec<String>,
}

impl Reporter {
    /// A reporter with no sinks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a sink, named for error messages.
    pub fn add(&mut self, name: impl Into<String>, sink: Box<dyn Sink>) {
        self.sinks.push((name.into(), sink));
    }

    fn each(&mut self, mut f: impl FnMut(&mut dyn Sink) -> io::Result<()>) {
        for (name, sink) in &mut self.sinks {
            if let Err(e) = f(sink.as_mut()) {
                self.errors.push(format!("report sink {name}: {e}"));
            }
        }
    }

    /// Sends the run header.
    pub fn begin(&mut self, info: &RunInfo) {
        self.each(|s| s.begin(info));
    }

    /// Sends a finished point.
    pub fn point(&mut self, point: &PointResult) {
        self.each(|s| s.point(point));
    }

    /// Sends the end of the run.
    pub fn end(&mut self, outcome: &RunOutcome) {
        self.each(|s| s.end(outcome));
    }

    /// Write failures so far (each is reported and makes the exit status non-zero).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }
}
