//! The runner: expands the grid, manages stores and seeds, runs each measurement and
//! reduces repeats into point results.
//!
//! Grid order: workload file, then engine, then the workload's sweep value, then
//! threads, then batch size, then target rate (open loop); each cell is measured
//! `repeat` times. Every measurement gets a fresh store unless `seed_once` shares one
//! seeded store per engine (and per sweep value when the workload asks for
//! `seed_per_value`). With an SLO, each cell is an SLO search ([`slo`]) instead.
//!
//! When a sink wants them, measurements are sampled ([`sampler`]): a timeline every
//! `--timeline` seconds, and interval histograms for histogram logs.

pub mod bulk;
pub mod crew;
pub mod epochs;
pub mod live;
pub mod observer;
pub mod progress;
pub mod sampler;
pub mod slo;
pub mod store;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use quanta::Clock;

use crate::engine::{EngineInfo, EngineOptions};
use crate::metrics::Recorder;
use crate::probe::ProbeSet;
use crate::workload::epochs::EpochFlags;
use crate::workload::{Budget, Params, SweepValue, Workload};

use self::crew::{Crew, CrewEnd, Step};
use self::observer::Observer;
use self::progress::Progress;
use self::sampler::SamplerCtx;
use self::store::OpenStore;
use crate::kv::pace::{Arrival, PaceSpec, Rate};
use crate::result::slo::Slo;
use crate::result::{PhaseRun, PointKey, PointResult, PointStatus, RepeatRun, SeedResult, SummaryRow};

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
    /// Batch sizes given with `--batch` (None: the workload's own sweep, or 1).
    pub batch: Option<Vec<usize>>,
    /// Budget of each timed phase that has none of its own.
    pub budget: Budget,
    /// Measurements per cell.
    pub repeat: usize,
    /// ctx knobs (users, items, seed, and the budget as ops/secs).
    pub params: Params,
    /// Loader threads (None: the point's thread count; the largest under seed-once).
    pub seed_threads: Option<usize>,
    /// Seed one store per engine and run every point against it.
    pub seed_once: bool,
    /// Where persistent engines put their stores.
    pub data_dir: Option<PathBuf>,
    /// Keep store directories after use.
    pub keep_data: bool,
    /// Wait for the engine's background work before every timed phase.
    pub settle: bool,
    /// Timeline sample period (`--timeline`), if any.
    pub timeline: Option<Duration>,
    /// Probes to run; the system probe is also sampled into the timeline.
    pub probes: ProbeSet,
    /// Where engine options were set: (engine, key) to "FILE:LINE" or the flag.
    pub option_origins: BTreeMap<(String, String), String>,
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
    /// Growing values in epochs (`--epochs` and friends, over a workload's own block).
    pub epochs: EpochFlags,
}

impl Plan {
    /// `msg` (an engine's refusal to open) with where each option it quotes was set,
    /// so a bad key in a config file is traced to its line.
    pub fn explain_open_error(&self, engine: &str, msg: String) -> String {
        let origins: Vec<String> = self
            .option_origins
            .iter()
            .filter(|((e, k), _)| e == engine && msg.contains(&format!("'{k}'")))
            .map(|((_, k), origin)| format!("{k} is set at {origin}"))
            .collect();
        if origins.is_empty() {
            msg
        } else {
            format!("{msg} ({})", origins.join("; "))
        }
    }
}

/// How measurements are sampled, when any sink wants samples.
#[derive(Clone, Copy)]
pub struct Sampling<'a> {
    /// Timeline period; None when only whole-step interval histograms are wanted.
    pub interval: Option<Duration>,
    /// Sample the system probe too.
    pub system: bool,
    /// Where samples go.
    pub sink: &'a dyn Observer,
}

/// How a whole run went.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// One row per finished point.
    pub rows: Vec<SummaryRow>,
    /// Ctrl-C stopped the run.
    pub interrupted: bool,
    /// Points that failed or saw engine errors.
    pub bad_points: usize,
    /// Errors that happened outside any point (closing or removing a store).
    pub other_errors: Vec<String>,
}

/// One cell's coordinates before the engine version is known.
#[derive(Clone)]
struct Cell {
    threads: usize,
    batch: usize,
    sweep: SweepPoint,
    rate: Option<Rate>,
}

/// A store seeded once and shared by several points.
struct Shared {
    store: OpenStore,
    seed: Option<SeedResult>,
}

/// Runs the plan, telling `observer` of each point as it finishes (and of samples
/// while it runs, when it wants them).
pub fn execute(plan: &Plan, observer: &dyn Observer, abort: &Arc<AtomicBool>) -> RunOutcome {
    let clock = Clock::new();
    let mut out = RunOutcome::default();
    // Sample only when the observer uses samples: --timeline sets the period for the
    // timeline and for interval histograms alike.
    let interval = plan
        .timeline
        .filter(|_| observer.wants_timeline() || observer.wants_intervals());
    let sampling = (interval.is_some() || observer.wants_intervals()).then_some(Sampling {
        interval,
        system: plan.probes.system,
        sink: observer,
    });
    let seq = std::cell::Cell::new(0usize);
    'all: for wl in &plan.workloads {
        let (batches, sweep_values, batched) = grid_axes(plan, wl.as_ref());
        let epochs = plan.epochs.resolve(wl.as_ref());
        for engine in &plan.engines {
            let options = plan.engine_options.get(engine.name).cloned().unwrap_or_default();
            let runner = Runner {
                plan,
                wl: wl.as_ref(),
                engine,
                options: &options,
                clock: &clock,
                abort,
                sampling,
                seq: &seq,
            };
            let mut shared: Option<Result<Shared, String>> = None;
            for (si, sweep) in sweep_values.iter().enumerate() {
                if plan.seed_once && (si == 0 || wl.sweep().is_some_and(|s| s.seed_per_value)) {
                    if let Some(Ok(old)) = shared.take()
                        && let Err(e) = old.store.close()
                    {
                        out.other_errors.push(e);
                    }
                    let seed_threads = plan.seed_threads.unwrap_or(*plan.threads.iter().max().unwrap_or(&1));
                    let cell = Cell {
                        threads: seed_threads,
                        batch: batches[0],
                        sweep: sweep.clone(),
                        rate: None,
                    };
                    shared = Some(runner.open_and_seed(&cell, batched, true, seq.get() + 1, 0));
                }
                let rates: Vec<Option<Rate>> = if plan.rates.is_empty() {
                    vec![None]
                } else {
                    plan.rates.iter().cloned().map(Some).collect()
                };
                for &threads in &plan.threads {
                    for &batch in &batches {
                        for rate in &rates {
                            let cell = Cell {
                                threads,
                                batch,
                                sweep: sweep.clone(),
                                rate: rate.clone(),
                            };
                            let points = match (&epochs, &plan.slo) {
                                (Some(ep), _) => epochs::run_cell(&runner, &cell, batched, ep),
                                (None, Some(objective)) => vec![slo::search(
                                    &runner,
                                    &cell,
                                    batched,
                                    shared.as_ref(),
                                    objective,
                                    plan.slo_secs,
                                )],
                                (None, None) => {
                                    vec![runner.measure(&cell, batched, shared.as_ref(), plan.budget, plan.repeat)]
                                }
                            };
                            let mut interrupted = false;
                            for point in &points {
                                interrupted |= point.status == PointStatus::Interrupted;
                                if point.is_bad() {
                                    out.bad_points += 1;
                                }
                                observer.point(point);
                                out.rows.push(SummaryRow::of(point));
                            }
                            if interrupted {
                                out.interrupted = true;
                                if let Some(Ok(s)) = shared.take()
                                    && let Err(e) = s.store.close()
                                {
                                    out.other_errors.push(e);
                                }
                                break 'all;
                            }
                        }
                    }
                }
            }
            if let Some(Ok(s)) = shared.take()
                && let Err(e) = s.store.close()
            {
                out.other_errors.push(e);
            }
        }
    }
    out
}

/// A workload sweep coordinate: the ctx parameter and its value, if any.
pub type SweepPoint = Option<(String, SweepValue)>;

/// The batch sizes, sweep values and batched flag of a workload under this plan.
fn grid_axes(plan: &Plan, wl: &dyn Workload) -> (Vec<usize>, Vec<SweepPoint>, bool) {
    match wl.sweep() {
        Some(sweep) if sweep.param == "batch" => {
            // The workload's own batch list, unless --batch overrides it.
            let from_sweep = sweep
                .values
                .iter()
                .map(|v| match v {
                    SweepValue::Int(n) => *n as usize,
                    _ => unreachable!("validated as positive integers"),
                })
                .collect();
            (plan.batch.clone().unwrap_or(from_sweep), vec![None], true)
        }
        Some(sweep) => {
            let batches = if wl.batched() {
                plan.batch.clone().unwrap_or_else(|| vec![1])
            } else {
                vec![1]
            };
            let values = sweep
                .values
                .iter()
                .map(|v| Some((sweep.param.clone(), v.clone())))
                .collect();
            (batches, values, wl.batched())
        }
        None => {
            let batches = if wl.batched() {
                plan.batch.clone().unwrap_or_else(|| vec![1])
            } else {
                vec![1]
            };
            (batches, vec![None], wl.batched())
        }
    }
}

/// Runs the points of one workload on one engine.
struct Runner<'a> {
    plan: &'a Plan,
    wl: &'a dyn Workload,
    engine: &'static EngineInfo,
    options: &'a EngineOptions,
    clock: &'a Clock,
    abort: &'a Arc<AtomicBool>,
    sampling: Option<Sampling<'a>>,
    /// Measurements numbered so far in the run.
    seq: &'a std::cell::Cell<usize>,
}

/// Which measurement a crew samples: its point key, point number and repeat.
struct SampleAs<'k> {
    key: &'k PointKey,
    seq: usize,
    repeat: usize,
}

impl Runner<'_> {
    fn key(&self, cell: &Cell, batched: bool) -> PointKey {
        PointKey {
            workload: self.wl.name().to_string(),
            workload_path: self.wl.path().to_path_buf(),
            engine: self.engine.name.to_string(),
            engine_version: (self.engine.version)(),
            threads: cell.threads,
            batch: cell.batch,
            batched,
            sweep: cell.sweep.clone(),
            rate: cell.rate.clone(),
            arrival: self.plan.arrival,
            epoch: None,
        }
    }

    /// A crew for the seed: never paced, no warm-up.
    fn crew<'b>(
        &'b self,
        store: &'b OpenStore,
        threads: usize,
        batch: usize,
        sweep: Option<(String, SweepValue)>,
        sample_as: SampleAs<'b>,
    ) -> Crew<'b> {
        let sampler = self.sampling.map(|s| SamplerCtx {
            interval: s.interval,
            system: s.system,
            sink: s.sink,
            point: sample_as.key,
            point_seq: sample_as.seq,
            repeat: sample_as.repeat,
            store_dir: store.dir.as_deref(),
        });
        Crew {
            workload: self.wl,
            store: store.store.as_ref(),
            params: &self.plan.params,
            threads,
            batch,
            sweep,
            clock: self.clock,
            abort: self.abort,
            sampler,
            pace: None,
            warmup: None,
            settle: self.plan.settle,
            value_sizes: None,
        }
    }

    /// A crew for a measurement of `cell`: paced at its rate, with the plan's warm-up.
    fn measuring_crew<'b>(&'b self, store: &'b OpenStore, cell: &Cell, sample_as: SampleAs<'b>) -> Crew<'b> {
        Crew {
            pace: cell.rate.clone().map(|rate| PaceSpec {
                rate,
                arrival: self.plan.arrival,
                seed: self.plan.params.seed,
            }),
            warmup: self.plan.warmup,
            ..self.crew(store, cell.threads, cell.batch, cell.sweep.clone(), sample_as)
        }
    }

    /// Opens a fresh store and runs the workload's load() on `cell.threads` threads.
    /// `seq` and `repeat` label its timeline samples.
    fn open_and_seed(
        &self,
        cell: &Cell,
        batched: bool,
        shared: bool,
        seq: usize,
        repeat: usize,
    ) -> Result<Shared, String> {
        let threads = cell.threads;
        let store = OpenStore::open(
            self.engine,
            self.options,
            self.plan.data_dir.as_deref(),
            self.plan.keep_data,
            self.plan.max_value_bytes,
        )
        .map_err(|e| self.plan.explain_open_error(self.engine.name, e))?;
        if !self.wl.has_load() {
            return Ok(Shared { store, seed: None });
        }
        let mut progress = Progress::seeding(self.wl.name(), self.engine.name, threads);
        let key = self.key(cell, batched);
        let sample_as = SampleAs { key: &key, seq, repeat };
        let crew = self.crew(&store, threads, cell.batch, cell.sweep.clone(), sample_as);
        let outcome = crew::run(&crew, &[Step::Load], &mut progress);
        let dropped = match outcome.end {
            CrewEnd::Done => seed_errors(&outcome.steps[0].rec),
            _ => None,
        };
        match outcome.end {
            CrewEnd::Done if dropped.is_none() => {
                let step = &outcome.steps[0];
                let seed = SeedResult {
                    threads,
                    wall_ns: step.wall_ns,
                    keys: step.rec.write_ops(),
                    shared,
                };
                Ok(Shared {
                    store,
                    seed: Some(seed),
                })
            }
            end => {
                let mut why = match (end, dropped) {
                    (_, Some(errors)) => format!("seeding failed: {errors}"),
                    (CrewEnd::Failed(e), _) => format!("seeding failed: {e}"),
                    _ => "interrupted while seeding".to_string(),
                };
                if let Err(e) = store.close() {
                    why.push_str(&format!(" (then {e})"));
                }
                Err(why)
            }
        }
    }

    /// Measures one cell `repeats` times, phases without a budget of their own running
    /// for `budget`, and reduces the repeats.
    fn measure(
        &self,
        cell: &Cell,
        batched: bool,
        shared: Option<&Result<Shared, String>>,
        budget: Budget,
        repeats: usize,
    ) -> PointResult {
        let key = self.key(cell, batched);
        let phases = self.wl.phases();
        let steps: Vec<Step> = phases
            .iter()
            .enumerate()
            .map(|(i, p)| Step::Run {
                phase: i,
                name: p.name.clone(),
                budget: p.budget.unwrap_or(budget),
                pace: p.rate.map(|per_sec| PaceSpec {
                    rate: Rate {
                        per_sec,
                        bytes: false,
                        text: format!("{per_sec}"),
                    },
                    arrival: self.plan.arrival,
                    seed: self.plan.params.seed,
                }),
            })
            .collect();
        let mut point = PointResult {
            key,
            status: PointStatus::Ok,
            repeats: Vec::new(),
            merged: Recorder::new(),
            phases: phases.iter().map(|p| (p.name.clone(), Recorder::new())).collect(),
            slo: None,
            epoch: None,
        };
        let label = point.key.label();
        // Each measurement (a point, or an SLO probe) is numbered for its samples.
        let seq = self.seq.get() + 1;
        self.seq.set(seq);
        for repeat in 1..=repeats {
            let (fresh, seed) = match shared {
                Some(Ok(s)) => (None, s.seed.clone()),
                Some(Err(e)) => {
                    point.status = failed_status(e, &label, self.abort);
                    break;
                }
                None => {
                    let seed_cell = Cell {
                        threads: self.plan.seed_threads.unwrap_or(cell.threads),
                        batch: cell.batch,
                        sweep: cell.sweep.clone(),
                        rate: None,
                    };
                    match self.open_and_seed(&seed_cell, batched, false, seq, repeat) {
                        Ok(s) => (Some(s.store), s.seed),
                        Err(e) => {
                            point.status = failed_status(&e, &label, self.abort);
                            break;
                        }
                    }
                }
            };
            let store = match (&fresh, shared) {
                (Some(s), _) => s,
                (None, Some(Ok(s))) => &s.store,
                _ => unreachable!("a store was opened or shared"),
            };
            let mut progress = Progress::running(&label);
            let sample_as = SampleAs {
                key: &point.key,
                seq,
                repeat,
            };
            let outcome = crew::run(&self.measuring_crew(store, cell, sample_as), &steps, &mut progress);
            if let Some(s) = fresh
                && let Err(e) = s.close()
                && outcome.end == CrewEnd::Done
            {
                point.status = PointStatus::Failed(format!("{label}: {e}"));
            }
            let mut thread_units = vec![0u64; cell.threads];
            let mut phase_runs = Vec::new();
            for (i, step) in outcome.steps.iter().enumerate() {
                for (t, u) in step.thread_units.iter().enumerate() {
                    thread_units[t] += u;
                }
                point.merged.merge(&step.rec);
                point.phases[i].1.merge(&step.rec);
                phase_runs.push(PhaseRun {
                    name: steps[i].name().to_string(),
                    wall_ns: step.wall_ns,
                    units: step.units,
                    prim_ops: step.rec.prim_ops(),
                    warmup_units: step.warmup_units,
                    bytes: step.rec.write_bytes(),
                });
            }
            let complete = outcome.end == CrewEnd::Done;
            if complete || outcome.end == CrewEnd::Interrupted {
                // An interrupted repeat is kept (partial figures, clearly marked).
                point.repeats.push(RepeatRun {
                    phases: phase_runs,
                    thread_units,
                    seed,
                });
            }
            match outcome.end {
                CrewEnd::Done => {}
                CrewEnd::Interrupted => {
                    point.status = PointStatus::Interrupted;
                    break;
                }
                CrewEnd::Failed(e) => {
                    point.status = PointStatus::Failed(format!("{label}: {e}"));
                    break;
                }
            }
        }
        point
    }
}

/// The engine errors a seed saw, as one message, or None. A seed that lost writes
/// would leave every later figure of the point describing another dataset, so it
/// fails the point instead of passing silently.
fn seed_errors(rec: &Recorder) -> Option<String> {
    engine_errors(rec).map(|e| format!("engine errors in load(): {e}"))
}

/// The engine errors a recorder counted, per operation kind with the first message,
/// or None when there were none.
pub(crate) fn engine_errors(rec: &Recorder) -> Option<String> {
    let failed: Vec<String> = rec
        .used()
        .filter(|(_, s)| s.errors > 0)
        .map(|(kind, s)| {
            format!(
                "{} of {} {} calls failed ({})",
                s.errors,
                s.count(),
                kind.name(),
                s.first_error.as_deref().unwrap_or("no message")
            )
        })
        .collect();
    (!failed.is_empty()).then(|| failed.join("; "))
}

fn failed_status(msg: &str, label: &str, abort: &AtomicBool) -> PointStatus {
    if abort.load(std::sync::atomic::Ordering::Relaxed) {
        PointStatus::Interrupted
    } else {
        PointStatus::Failed(format!("{label}: {msg}"))
    }
}
