//! Workloads: what a worker does with the store, independent of the file format.
//!
//! A [`Workload`] is opened once from a file and is shared by all threads. For each
//! thread of a measurement the runner asks it for a [`Program`]: the per-thread state
//! (a Lua state, or a spec's generators) that drives a [`Kv`]. The runner owns
//! budgets, phases, timing and threads; a program only runs units when asked.

pub mod dist;
pub mod epochs;
pub mod keyranges;
pub mod lua;
pub mod op;
pub mod oplog;
pub mod replay;
pub mod spec;
pub mod trace;
pub mod ycsb;

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use self::epochs::{EpochDefaults, EpochLayout};
use crate::kv::Kv;
use crate::kv::pace::{Rate, StopSignal};

/// The knobs a workload reads from its context (keybench's ctx fields).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Size of the user population (`--users`).
    pub users: u64,
    /// Size of the catalog or keyspace (`--items`).
    pub items: u64,
    /// The run's unit budget across all threads (`--ops`), 0 when time-bounded.
    pub ops: u64,
    /// The run's time budget in seconds (`--secs`), 0 when count-bounded.
    pub secs: f64,
    /// Base seed; thread t seeds its RNG with seed + t.
    pub seed: u64,
}

/// One value of a workload-declared sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum SweepValue {
    /// An integer value.
    Int(i64),
    /// A fractional value.
    Float(f64),
    /// A string value.
    Str(String),
}

impl fmt::Display for SweepValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepValue::Int(v) => write!(f, "{v}"),
            SweepValue::Float(v) => write!(f, "{v}"),
            SweepValue::Str(v) => f.write_str(v),
        }
    }
}

/// A sweep declared by the workload itself (keybench's `sweep = {...}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The ctx field that receives each value.
    pub param: String,
    /// The values, run in order.
    pub values: Vec<SweepValue>,
    /// Whether each value needs its own seeded store under `--seed-once`.
    pub load_per_value: bool,
}

/// How long a phase runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// A number of units across all threads.
    Ops(u64),
    /// A number of seconds.
    Secs(f64),
}

/// The share of `total` units thread `t` of `threads` runs: an even split, the
/// remainder going one each to the first threads.
pub fn share(total: u64, threads: usize, t: usize) -> u64 {
    let n = threads as u64;
    total / n + u64::from((t as u64) < total % n)
}

/// `count` times `scale`, rounded, kept at 1 or more when `count` is.
pub fn scaled(count: u64, scale: f64) -> u64 {
    if scale == 1.0 || count == 0 {
        return count;
    }
    ((count as f64 * scale).round() as u64).max(1)
}

/// One run phase of a workload. Lua workloads have one; specs have one per group.
#[derive(Debug, Clone, PartialEq)]
pub struct PhasePlan {
    /// Name shown in reports and timelines ("run" for Lua workloads).
    pub name: String,
    /// The phase's own budget, or None to use the run's `--ops`/`--secs`.
    pub budget: Option<Budget>,
    /// The phase's own target rate (a spec group's `rate`), which paces it open loop;
    /// None to follow the run's `--rate`, if any.
    pub rate: Option<Rate>,
}

/// What one thread of a measurement is.
#[derive(Debug, Clone)]
pub struct ThreadCtx {
    /// The run's knobs.
    pub params: Params,
    /// Batch size of this grid point.
    pub batch: usize,
    /// 0-based thread index.
    pub thread: usize,
    /// Number of threads in this phase (seed threads for a loader); in a segment of a
    /// scaled-out run, `thread` and `threads` count every segment's.
    pub threads: usize,
    /// Threads of this process (`threads` but for the segments), which share its
    /// memory.
    pub local_threads: usize,
    /// The workload sweep's parameter and value at this point.
    pub sweep: Option<(String, SweepValue)>,
    /// Whether the engine keeps its keys in order, so range, scan and delete_range
    /// work (`ctx.ordered` in Lua; memcached keeps none).
    pub ordered: bool,
}

/// A workload failure: a script error or a bad file. (An interrupted run is not an
/// error of the workload: the crew sees it in its abort flag.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadError {
    /// The file cannot be used at all (missing, unreadable, malformed): a usage error.
    Invalid(String),
    /// An error raised while running load() or run(), with its file and line.
    Runtime(String),
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::Invalid(m) | WorkloadError::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for WorkloadError {}

/// A workload opened from a file, shared by all threads.
pub trait Workload: Send + Sync {
    /// Name that labels the report.
    fn name(&self) -> &str;
    /// The file it came from.
    fn path(&self) -> &Path;
    /// Whether the workload reads ctx.batch, so the batch list sweeps it.
    fn batched(&self) -> bool {
        false
    }
    /// A sweep the workload declares, if any.
    fn sweep(&self) -> Option<&Sweep> {
        None
    }
    /// Whether there is a seed (load) phase.
    fn has_load(&self) -> bool;
    /// The timed phases, in order.
    fn phases(&self) -> Vec<PhasePlan>;
    /// Per-thread state driving `kv`. Created on the thread that will use it.
    fn program(&self, ctx: &ThreadCtx, kv: Kv) -> Result<Box<dyn Program>, WorkloadError>;
    /// The units worker `worker` of `workers` runs of a phase counted as `total`
    /// units: an even split ([`share`]) unless the workload deals its units out
    /// otherwise (a trace split by client).
    fn quota(&self, _phase: usize, total: u64, workers: usize, worker: usize) -> u64 {
        share(total, workers, worker)
    }
    /// Epochs the workload declares itself.
    fn epoch_defaults(&self) -> Option<&EpochDefaults> {
        None
    }
    /// Which phases load the store and which one each epoch runs; an error says why
    /// the workload cannot run in epochs.
    fn epoch_layout(&self) -> Result<EpochLayout, String>;
    /// The same workload with the operation counts of phase i scaled by `scales[i]`,
    /// or None when its phases are not counted by the workload (a Lua script, whose
    /// size comes from ctx and the budget).
    fn rescaled(&self, _scales: &[f64]) -> Result<Option<Arc<dyn Workload>>, WorkloadError> {
        Ok(None)
    }
    /// What in the workload needs the keys in order (range, scan, delete_range), as the
    /// workload file names it (`sections[0].groups[1].range_queries`,
    /// `scanproportion`), so the plan refuses an engine that keeps no order before
    /// anything runs. Empty when nothing does, or when the workload cannot tell before
    /// it runs (a Lua script, an operation log: the engine refuses each call then).
    fn ordered_needs(&self) -> Vec<String> {
        Vec::new()
    }
    /// The phases whose work an existing store (`--use-existing`) already holds: a
    /// spec's loading groups. They are not run; each worker's program skips them
    /// ([`Program::skip`]) and then checks that the store holds what they would have
    /// written ([`Program::check_held`]). Empty for a workload whose loading is its
    /// seed step (`load()`, skipped anyway) or that has none.
    fn held_phases(&self) -> Vec<usize> {
        Vec::new()
    }
}

/// One thread's executable state.
pub trait Program {
    /// Runs the seed phase for this thread's shard.
    fn load(&mut self) -> Result<(), WorkloadError>;
    /// Runs up to `n` units of `phase`, numbering them from `first_iter` (1-based, per
    /// worker). Before each unit it calls [`Kv::begin_unit`] (open-loop pacing and key
    /// lifetimes live there; it returns at once otherwise) and stops when that returns
    /// false. Returns the units run: fewer than `n` means the phase is exhausted or the
    /// step is stopping.
    fn run(&mut self, phase: usize, first_iter: u64, n: u64) -> Result<u64, WorkloadError>;
    /// Starts a pass of `phase`: a timed step begins (count-bounded phases start their
    /// counts afresh, so a phase can run again, as each epoch's run phase does).
    fn enter(&mut self, _phase: usize) -> Result<(), WorkloadError> {
        Ok(())
    }
    /// Advances the program past `units` units of one pass of `phase` without running
    /// them, as if
    /// another crew had run them (the store already holds their effect). Programs
    /// without state that carries over between units do nothing.
    fn skip(&mut self, _phase: usize, _units: u64) -> Result<(), WorkloadError> {
        Ok(())
    }
    /// After skipped phases whose work an existing store should hold
    /// ([`Workload::held_phases`]): reads a sample of what they would have written and
    /// fails, saying why, when the store does not hold it.
    fn check_held(&mut self) -> Result<(), WorkloadError> {
        Ok(())
    }
    /// Stops the program's code when `stop` is raised, from now on (each step of a
    /// crew passes its own). Only Lua can run code that never returns to the worker's
    /// checks; other programs return between units and need nothing.
    fn stop_on(&mut self, _stop: StopSignal) {}
    /// The timed verb set, for taking recorders between phases.
    fn kv(&mut self) -> &mut Kv;
    /// Ends the program, returning its verb set (and with it the recorder).
    fn finish(self: Box<Self>) -> Kv;
}

/// Opens a workload file, choosing the format by its extension: `.lua` scripts,
/// `.json` declarative specs, `.ops` operation logs; any other name that reads as
/// YCSB properties is a YCSB workload file.
pub fn open(path: &Path) -> Result<Arc<dyn Workload>, WorkloadError> {
    open_until(path, &Arc::new(AtomicBool::new(false)), None)
}

/// [`open`], stopped by `abort` (Ctrl-C) or after `limit` (`--load-secs`): a Lua
/// file's top level runs while it opens.
pub fn open_until(
    path: &Path,
    abort: &Arc<AtomicBool>,
    limit: Option<std::time::Duration>,
) -> Result<Arc<dyn Workload>, WorkloadError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "lua" => Ok(Arc::new(lua::LuaWorkload::open(path, abort, limit)?)),
        "json" => Ok(Arc::new(spec::SpecWorkload::open(path)?)),
        "ops" => replay::open_workload(path),
        _ if ycsb::props::looks_like(path) => ycsb::open(path, &ycsb::Options::default()),
        _ => Err(WorkloadError::Invalid(format!(
            "{}: unknown workload type '.{ext}' (expected a .lua script, a .json spec, an .ops operation log or a YCSB workload file; \
             `kvmark replay FILE` replays a log of any name)",
            path.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_is_fair_and_complete() {
        for total in [0u64, 1, 7, 10, 200_000, 200_001] {
            for threads in 1..=7 {
                let shares: Vec<u64> = (0..threads).map(|t| share(total, threads, t)).collect();
                assert_eq!(shares.iter().sum::<u64>(), total);
                let (min, max) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(max - min <= 1, "{total}/{threads}: {shares:?}");
            }
        }
        assert_eq!((0..3).map(|t| share(10, 3, t)).collect::<Vec<_>>(), vec![4, 3, 3]);
    }
}
