//! What a crew runs and what it produces: its steps, each step's merged outcome, and
//! how the crew's run ended.

use std::sync::Arc;

use crate::kv::pace::PaceSpec;
use crate::metrics::Recorder;
use crate::result::ClientCpu;
use crate::run::bulk::steps::{ExtendWork, FillSource, Slot};
use crate::run::sampler::StepInfo;
use crate::workload::Budget;

/// One step every thread of a crew performs.
#[derive(Debug, Clone)]
pub enum Step {
    /// Call the workload's load() once per thread.
    Load,
    /// Run units of a workload phase until the budget is spent.
    Run {
        /// Index into the workload's phases.
        phase: usize,
        /// Phase name for reports.
        name: String,
        /// Units across all threads, or seconds.
        budget: Budget,
        /// This phase's own pacing (a spec group's rate), overriding the crew's.
        pace: Option<PaceSpec>,
    },
    /// Grow values: each thread's share of an extend phase, decided on the main thread
    /// just before the step starts (an epoch's extend phase).
    Extend {
        /// Phase name for reports.
        name: String,
        /// The work, filled in before the step starts.
        work: Arc<Slot<ExtendWork>>,
    },
    /// Write records into the store in batches: a dump restored, a baseline built.
    Fill {
        /// Phase name for reports.
        name: String,
        /// What to write.
        source: Arc<FillSource>,
    },
    /// Advance each thread's program past units another crew already ran, without
    /// touching the store (so a fresh store gets a program in the same state).
    Skip {
        /// Per phase, the units each thread skips.
        phases: Arc<Vec<(usize, Vec<u64>)>>,
        /// Then check that the store holds their work ([`crate::workload::Program::check_held`]):
        /// an existing store's, not one the crew fills next.
        check: bool,
    },
}

impl Step {
    /// What the sampler is told of this step.
    pub fn info(&self) -> StepInfo<'_> {
        StepInfo {
            name: self.name(),
            load: matches!(self, Step::Load),
            secs: match self {
                Step::Run {
                    budget: Budget::Secs(s),
                    ..
                } => Some(*s),
                _ => None,
            },
        }
    }

    /// Name for reports.
    pub fn name(&self) -> &str {
        match self {
            Step::Load => "seed",
            Step::Run { name, .. } | Step::Extend { name, .. } | Step::Fill { name, .. } => name,
            Step::Skip { .. } => "skip",
        }
    }
}

/// What one step produced, merged over the crew's threads.
#[derive(Debug)]
pub struct StepOutcome {
    /// When the measured part of the step began, Unix time in nanoseconds (after any
    /// warm-up); it ends `wall_ns` later.
    pub start_unix_ns: u64,
    /// Wall time from the common start to the last thread's end.
    pub wall_ns: u64,
    /// Units completed after the warm-up (0 for a load step).
    pub units: u64,
    /// Units the warm-up excluded (run, but not reported).
    pub warmup_units: u64,
    /// Units per thread, after the warm-up.
    pub thread_units: Vec<u64>,
    /// All threads' recorders merged.
    pub rec: Recorder,
    /// The client's own load over the whole step, for the saturation check.
    pub client_cpu: ClientCpu,
    /// Its timeline intervals after the warm-up (empty without `--timeline`).
    pub trend: Vec<crate::result::trend::IntervalFigures>,
}

/// How a crew's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrewEnd {
    /// Every step completed.
    Done,
    /// A thread failed; the message says how.
    Failed(String),
    /// Ctrl-C.
    Interrupted,
}

/// Everything a crew produced. Steps that completed are kept even when a later one
/// failed.
#[derive(Debug)]
pub struct CrewOutcome {
    /// Completed steps, in order (an interrupted step is included, partial).
    pub steps: Vec<StepOutcome>,
    /// How it ended.
    pub end: CrewEnd,
}
