//! Reporters: sinks that receive the run's metadata, live samples, each finished
//! point, and the end of the run. One file per sink behind the small [`Sink`] trait;
//! [`Reporter`] fans every event out to all requested sinks (after hyperfine's
//! exporters). [`sinks`] lists every sink; [`setup`] turns `--report` and
//! `--report-dir` into a reporter.

pub mod atomic;
pub mod bundle;
pub mod compare;
pub mod console;
pub mod encode;
pub mod epochs;
pub mod figures;
pub mod hdr;
pub mod json;
pub mod metrics;
pub mod openloop;
pub mod setup;
pub mod sinks;
pub mod timeline;
pub mod tsv;
pub mod verify;
pub mod ycsb;

use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::kv::pace::{Arrival, Rate};
use crate::probe::Probe;
use crate::result::PointResult;
use crate::result::RunOutcome;
use crate::result::slo::Slo;
use crate::run::observer::{Observer, Sample};
use crate::run::segment::Segment;
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
    /// Effective options per engine (engines without options are left out).
    pub engine_options: Vec<(String, Vec<(String, String)>)>,
    /// Thread counts swept.
    pub threads: Vec<usize>,
    /// Connections per thread swept.
    pub connections: Vec<usize>,
    /// Requests in flight per connection swept (`--pipeline`).
    pub pipeline: Vec<usize>,
    /// The value-size classes each kind is split by (`--size-classes`).
    pub size_classes: Option<std::sync::Arc<crate::metrics::SizeClasses>>,
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
    pub load_once: bool,
    /// Waited for the engine's background work before every timed phase.
    pub settle: bool,
    /// Loader threads, when set.
    pub load_threads: Option<usize>,
    /// Timeline period in seconds, when sampled.
    pub timeline: Option<f64>,
    /// The data directory, if any.
    pub data_dir: Option<PathBuf>,
    /// Unix time the run started, in seconds.
    pub started_unix: f64,
    /// The command line as given.
    pub command: Vec<String>,
    /// What the probes found.
    pub probes: Vec<Probe>,
    /// Open-loop target rates swept (empty: closed loop).
    pub rates: Vec<Rate>,
    /// How paced units arrive.
    pub arrival: Arrival,
    /// Warm-up excluded from each measurement.
    pub warmup: Option<Duration>,
    /// The SLO searched for, if any, and the seconds per probe.
    pub slo: Option<(Slo, f64)>,
    /// A segment of a scaled-out run, or a run with a common start: where and when.
    pub scale: Option<ScaleInfo>,
}

/// What a segment of a scaled-out run records so `kvmark merge` can make the
/// segments one and show each beside the merge.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleInfo {
    /// Which segment.
    pub segment: Segment,
    /// `--start-at`, Unix time in nanoseconds.
    pub start_at_unix_ns: Option<u64>,
    /// Without `--start-at` on a server engine: the launcher's job identity, which
    /// names the shared namespace and where the segments meet for their common start.
    pub job: Option<crate::run::segment::Job>,
    /// The host it ran on.
    pub host: String,
    /// The clock's synchronisation state when the run started.
    pub clock_sync: String,
    /// The tag of the server namespaces the segments share (`kvmark_ENGINE_TAG_N`),
    /// for a scaled-out run.
    pub shared_tag: Option<String>,
}

/// A report destination.
pub trait Sink: Send {
    /// The run is starting.
    fn begin(&mut self, info: &RunInfo) -> io::Result<()>;
    /// A point finished (written at once, so a run that dies keeps finished points).
    fn point(&mut self, point: &PointResult) -> io::Result<()>;
    /// A live sample (only sent while some sink wants samples).
    fn sample(&mut self, _sample: &Sample<'_>) -> io::Result<()> {
        Ok(())
    }
    /// The run ended (normally, with failures, or interrupted).
    fn end(&mut self, outcome: &RunOutcome) -> io::Result<()>;
    /// True when the sink uses the `--timeline` metrics.
    fn wants_timeline(&self) -> bool {
        false
    }
    /// True when the sink uses interval histograms even without `--timeline` (each
    /// step is then one interval).
    fn wants_intervals(&self) -> bool {
        false
    }
}

struct Slot {
    name: String,
    sink: Box<dyn Sink>,
    failed: bool,
}

#[derive(Default)]
struct Inner {
    sinks: Vec<Slot>,
    errors: Vec<String>,
}

/// Fans events out to every sink, remembering write failures for the end of the run.
/// A sink that failed once is reported and not written again. Shared by the main
/// thread and the sampler thread, so events are serialised by a lock (never touched
/// by workers).
#[derive(Default)]
pub struct Reporter {
    inner: Mutex<Inner>,
}

impl Reporter {
    /// A reporter with no sinks.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a sink, named for error messages.
    pub fn add(&mut self, name: impl Into<String>, sink: Box<dyn Sink>) {
        self.lock().sinks.push(Slot {
            name: name.into(),
            sink,
            failed: false,
        });
    }

    fn each(&self, mut f: impl FnMut(&mut dyn Sink) -> io::Result<()>) {
        let mut inner = self.lock();
        let Inner { sinks, errors } = &mut *inner;
        for slot in sinks.iter_mut().filter(|s| !s.failed) {
            if let Err(e) = f(slot.sink.as_mut()) {
                slot.failed = true;
                errors.push(format!("report sink {}: {e} (no further output to it)", slot.name));
            }
        }
    }

    /// Sends the run header.
    pub fn begin(&self, info: &RunInfo) {
        self.each(|s| s.begin(info));
    }

    /// Sends the end of the run.
    pub fn end(&self, outcome: &RunOutcome) {
        self.each(|s| s.end(outcome));
    }

    /// Write failures so far (each is reported and makes the exit status non-zero).
    pub fn errors(&self) -> Vec<String> {
        self.lock().errors.clone()
    }
}

/// The run tells the reporter what happens: every sink gets each finished point and
/// each sample; samples are taken when some sink uses them.
impl Observer for Reporter {
    fn wants_timeline(&self) -> bool {
        self.lock().sinks.iter().any(|s| s.sink.wants_timeline())
    }

    fn wants_intervals(&self) -> bool {
        self.lock().sinks.iter().any(|s| s.sink.wants_intervals())
    }

    fn point(&self, point: &PointResult) {
        self.each(|s| s.point(point));
    }

    fn sample(&self, sample: &Sample<'_>) {
        self.each(|s| s.sample(sample));
    }
}

/// Replaces tabs and line breaks, which would break a TSV row.
pub fn tsv_field(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Failing(usize);
    impl Sink for Failing {
        fn begin(&mut self, _: &RunInfo) -> io::Result<()> {
            Ok(())
        }
        fn point(&mut self, _: &PointResult) -> io::Result<()> {
            Ok(())
        }
        fn end(&mut self, _: &RunOutcome) -> io::Result<()> {
            self.0 += 1;
            Err(io::Error::other("disk full"))
        }
    }

    #[test]
    fn a_failing_sink_is_reported_once() {
        let mut r = Reporter::new();
        r.add("tsv:x", Box::new(Failing(0)));
        r.end(&RunOutcome::default());
        r.end(&RunOutcome::default());
        let errors = r.errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("report sink tsv:x: disk full"), "{errors:?}");
    }

    #[test]
    fn tsv_fields_stay_on_one_row() {
        assert_eq!(tsv_field("a\tb\nc"), "a b c");
    }
}
