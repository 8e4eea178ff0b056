//! The plan: everything a run needs, already validated (built from the command line
//! and config files).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::engine::{EngineError, EngineInfo, EngineOptions};
use crate::kv::pace::{Arrival, Rate};
use crate::probe::ProbeSet;
use crate::result::slo::Slo;
use crate::run::segment::Segment;
use crate::workload::epochs::EpochFlags;
use crate::workload::{Budget, Params, Workload};

/// Everything a run needs, already validated.
pub struct Plan {
    /// Workloads, run in order.
    pub workloads: Vec<Arc<dyn Workload>>,
    /// Engines, compared in order.
    pub engines: Vec<&'static EngineInfo>,
    /// Options per engine name.
    pub engine_options: BTreeMap<String, EngineOptions>,
    /// Thread counts to sweep.
    pub threads: Vec<usize>,
    /// Connections per thread to sweep (`--connections`): each is a worker with its
    /// own session, and a thread runs its connections' requests concurrently.
    pub connections: Vec<usize>,
    /// Requests in flight on each connection to sweep (`--pipeline`): each
    /// connection is a group of this many workers sharing one server connection.
    pub pipeline: Vec<usize>,
    /// Batch sizes given with `--batch` (None: the workload's own sweep, or 1).
    pub batch: Option<Vec<usize>>,
    /// Budget of each timed phase that has none of its own.
    pub budget: Budget,
    /// The longest each load step may take (`--load-secs`; None: no limit).
    pub load_limit: Option<Duration>,
    /// Measurements per cell.
    pub repeat: usize,
    /// ctx knobs (users, items, seed, and the budget as ops/secs).
    pub params: Params,
    /// Loader threads (None: the point's thread count; the largest under seed-once).
    pub load_threads: Option<usize>,
    /// Seed one store per engine and run every point against it.
    pub load_once: bool,
    /// Where persistent engines put their stores.
    pub data_dir: Option<PathBuf>,
    /// Keep store directories after use.
    pub keep_data: bool,
    /// The store an earlier run kept, reopened for every point instead of a fresh,
    /// seeded one (`--use-existing`; the plan checked it and implies `load_once`).
    pub use_existing: Option<crate::engine::StorePlace>,
    /// Wait for the engine's background work before every timed phase.
    pub settle: bool,
    /// Timeline sample period (`--timeline`), if any.
    pub timeline: Option<Duration>,
    /// Probes to run; the system probe is also sampled into the timeline.
    pub probes: ProbeSet,
    /// Where engine options were set: (engine, key) to "FILE:LINE" or the flag.
    pub option_origins: BTreeMap<(String, String), String>,
    /// How the workload files were read as traces (`--format`), if it was given.
    pub trace_format: Option<crate::workload::trace::TraceFormat>,
    /// How a trace's requests are dealt to the threads (`--trace-split`).
    pub trace_split: crate::workload::trace::TraceSplit,
    /// Traces replay on their own clock this many times as fast (`--speed`).
    pub speed: Option<f64>,
    /// Open-loop target rates to sweep (empty: closed loop).
    pub rates: Vec<Rate>,
    /// How paced units arrive.
    pub arrival: Arrival,
    /// Excluded from every measurement's figures: this long at the start of its
    /// first timed phase.
    pub warmup: Option<Duration>,
    /// Search each cell for the highest rate meeting this objective.
    pub slo: Option<Slo>,
    /// Seconds per SLO probe (and for the capacity run before them).
    pub slo_secs: f64,
    /// The longest value an append may make (`--max-value-bytes`); None: no cap.
    pub max_value_bytes: Option<u64>,
    /// Value-size classes each operation kind is split by (`--size-classes`).
    pub size_classes: Option<std::sync::Arc<crate::metrics::SizeClasses>>,
    /// Growing values in epochs (`--epochs` and friends, over a workload's own block).
    pub epochs: EpochFlags,
    /// Check every read against what was acknowledged (`--verify`, `kv::verify`).
    pub verify: bool,
    /// Which part of a scaled-out run this process is (`--segment`).
    pub segment: Segment,
    /// Every segment's first timed phase starts at this absolute time (`--start-at`).
    pub start_at: Option<SystemTime>,
    /// Requests per connection before a server engine's session closes it and opens a
    /// new one, timed as `connect` (`--reconnect-every`); 0 keeps connections.
    pub reconnect_every: u64,
    /// A server engine's segments without `--start-at`: the launcher's job identity,
    /// which names their shared namespace and where they meet for a common start
    /// ([`crate::run::meet`]).
    pub job: Option<crate::run::segment::Job>,
    /// Pin each worker thread to one CPU (`--pin`).
    pub pin: bool,
    /// YCSB's `-p` properties and phase flags, for the replay config.
    pub ycsb: crate::workload::ycsb::Options,
}

impl Plan {
    /// A scaled-out run's name for what its segments share (a server engine's
    /// namespace): the segment count, the seed and the common start (or, without one,
    /// the job identity), so the segments of one run agree on it and another run's
    /// differ. None for a whole run.
    pub fn shared_tag(&self) -> Option<String> {
        use crate::workload::spec::strings::mix64;
        if !self.segment.is_part() {
            return None;
        }
        let start = match (self.start_at, &self.job) {
            (Some(at), _) => crate::run::segment::unix_ns(at),
            (None, Some(job)) => job.id.bytes().fold(0x6a6f62, |h, b| mix64(h ^ u64::from(b))),
            (None, None) => 0,
        };
        let mixed = mix64(self.params.seed ^ mix64(start));
        Some(format!("s{}_{:08x}", self.segment.count, mixed as u32))
    }

    /// An engine's refusal to open, with where the option it refused was set (a
    /// config file's line or the flag). The engine's knob table names the option as
    /// data ([`OptionError`]), so a bad key or value is traced without matching text.
    pub fn explain_open_error(&self, engine: &EngineInfo, err: EngineError) -> String {
        let refused = self
            .engine_options
            .get(engine.name)
            .and_then(|options| engine.validate(options).err());
        match refused {
            Some(option) => option.traced(&err.message, &self.option_origins),
            None => err.message,
        }
    }
}
