//! The runner of one workload on one engine: it opens and seeds stores, builds the
//! crews of each measurement, runs a cell's repeats and reduces them into a point.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use quanta::Clock;

use super::crew::{self, Crew, CrewEnd, Start, Step};
use super::grid::Cell;
use super::meet::Meeting;
use super::progress::Progress;
use super::sampler::SamplerCtx;
use super::store::OpenStore;
use super::{Plan, Sampling};
use crate::engine::{EngineInfo, EngineOptions};
use crate::kv::pace::PaceSpec;
use crate::kv::verify::{Checker, VerifyReport};
use crate::metrics::Recorder;
use crate::result::{LoadResult, PhaseRun, PointKey, PointResult, PointStatus, RepeatLatency, RepeatRun};
use crate::workload::{Budget, PhasePlan, Workload};

/// A store seeded once and shared by several points.
pub(in crate::run) struct Shared {
    pub(in crate::run) store: OpenStore,
    pub(in crate::run) load: Option<LoadResult>,
}

/// Runs the points of one workload on one engine.
pub(in crate::run) struct Runner<'a> {
    pub(in crate::run) plan: &'a Plan,
    pub(in crate::run) wl: &'a dyn Workload,
    pub(in crate::run) engine: &'static EngineInfo,
    pub(in crate::run) options: &'a EngineOptions,
    pub(in crate::run) clock: &'a Clock,
    pub(in crate::run) abort: &'a Arc<AtomicBool>,
    pub(in crate::run) sampling: Option<Sampling<'a>>,
    /// Measurements numbered so far in the run.
    pub(in crate::run) seq: &'a std::cell::Cell<usize>,
    /// Where a server engine's segments meet for their common start, when no
    /// `--start-at` gives it.
    pub(in crate::run) meeting: Option<&'a Meeting<'a>>,
}

/// Which measurement a crew samples: its point key, point number and repeat.
pub(in crate::run) struct SampleAs<'k> {
    pub(in crate::run) key: &'k PointKey,
    pub(in crate::run) seq: usize,
    pub(in crate::run) repeat: usize,
}

impl Runner<'_> {
    pub(in crate::run) fn key(&self, cell: &Cell, batched: bool) -> PointKey {
        PointKey {
            workload: self.wl.name().to_string(),
            workload_path: self.wl.path().to_path_buf(),
            engine: self.engine.name.to_string(),
            engine_version: (self.engine.version)(),
            threads: cell.threads,
            connections: cell.connections,
            pipeline: cell.pipeline,
            batch: cell.batch,
            batched,
            sweep: cell.sweep.clone(),
            rate: cell.rate.clone(),
            arrival: self.plan.arrival,
            epoch: None,
        }
    }

    /// A crew of `cell`'s workers for the seed: never paced, no warm-up.
    pub(in crate::run) fn crew<'b>(&'b self, store: &'b OpenStore, cell: &Cell, sample_as: SampleAs<'b>) -> Crew<'b> {
        let sampler = self.sampling.map(|s| SamplerCtx {
            interval: s.interval,
            system: s.system,
            sink: s.sink,
            point: sample_as.key,
            point_seq: sample_as.seq,
            repeat: sample_as.repeat,
            store_dir: store.dir(),
        });
        Crew {
            workload: self.wl,
            store: store.store.as_ref(),
            engine: self.engine,
            params: &self.plan.params,
            threads: cell.threads,
            connections: cell.connections,
            pipeline: cell.pipeline,
            batch: cell.batch,
            sweep: cell.sweep.clone(),
            clock: self.clock,
            abort: self.abort,
            sampler,
            pace: None,
            warmup: None,
            load_limit: self.plan.load_limit,
            settle: self.plan.settle,
            value_sizes: None,
            verify: store.verify.as_ref(),
            segment: self.plan.segment,
            start: None,
            reconnect_every: self.plan.reconnect_every,
            size_classes: self.plan.size_classes.clone(),
        }
    }

    /// A crew for a measurement of `cell`: paced at its rate, with the plan's warm-up.
    pub(in crate::run) fn measuring_crew<'b>(
        &'b self,
        store: &'b OpenStore,
        cell: &Cell,
        sample_as: SampleAs<'b>,
    ) -> Crew<'b> {
        Crew {
            pace: cell.rate.clone().map(|rate| PaceSpec {
                rate,
                arrival: self.plan.arrival,
                seed: self.plan.params.seed,
            }),
            warmup: self.plan.warmup,
            // Only the run's first measurement waits for the common start: later ones
            // follow it in every segment alike.
            start: match (self.plan.start_at, self.meeting) {
                _ if (sample_as.seq, sample_as.repeat) != (1, 1) => None,
                (Some(at), _) => Some(Start::At(at)),
                (None, Some(meeting)) => Some(Start::Meet(meeting)),
                (None, None) => None,
            },
            ..self.crew(store, cell, sample_as)
        }
    }

    /// Opens a fresh store and runs the workload's load() on `cell.threads` threads.
    /// `seq` and `repeat` label its timeline samples.
    pub(in crate::run) fn open_and_load(
        &self,
        cell: &Cell,
        batched: bool,
        shared: bool,
        seq: usize,
        repeat: usize,
    ) -> Result<Shared, String> {
        let threads = cell.threads;
        let opened = match &self.plan.use_existing {
            Some(place) => {
                OpenStore::open_existing(self.engine, self.options, place.clone(), self.plan.max_value_bytes)
            }
            None => OpenStore::open(
                self.engine,
                self.options,
                self.plan.data_dir.as_deref(),
                self.plan.keep_data,
                self.plan.max_value_bytes,
                self.plan.shared_tag().as_deref(),
            ),
        };
        let store = opened
            .map_err(|e| self.plan.explain_open_error(self.engine, e))
            .map(|mut store| {
                if self.plan.verify {
                    store.verify = Some(Arc::new(Checker::new()));
                }
                store
            })?;
        // An existing store is the load: the seed step is skipped.
        if !self.wl.has_load() || self.plan.use_existing.is_some() {
            return Ok(Shared { store, load: None });
        }
        let mut progress = Progress::loading(self.wl.name(), self.engine.name, threads);
        let key = self.key(cell, batched);
        let sample_as = SampleAs { key: &key, seq, repeat };
        let crew = self.crew(&store, cell, sample_as);
        let outcome = crew::run(&crew, &[Step::Load], &mut progress);
        let dropped = match outcome.end {
            CrewEnd::Done => load_errors(&outcome.steps[0].rec),
            _ => None,
        };
        match outcome.end {
            CrewEnd::Done if dropped.is_none() => {
                let step = &outcome.steps[0];
                let load = LoadResult {
                    threads,
                    wall_ns: step.wall_ns,
                    keys: step.rec.write_ops(),
                    shared,
                };
                Ok(Shared {
                    store,
                    load: Some(load),
                })
            }
            end => {
                let mut why = match (end, dropped) {
                    (_, Some(errors)) => match store.dir().and_then(disk_full) {
                        Some(full) => format!("seeding failed: {full}; {errors}"),
                        None => format!("seeding failed: {errors}"),
                    },
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
    pub(in crate::run) fn measure(
        &self,
        cell: &Cell,
        batched: bool,
        shared: Option<&Result<Shared, String>>,
        budget: Budget,
        repeats: usize,
    ) -> PointResult {
        let key = self.key(cell, batched);
        let phases = self.wl.phases();
        // An existing store already holds what the workload's loading phases write: they
        // are skipped (and checked), not run.
        let held = match self.plan.use_existing {
            Some(_) => self.wl.held_phases(),
            None => Vec::new(),
        };
        let make_steps = || -> Vec<Step> {
            phases
                .iter()
                .enumerate()
                .filter(|(i, _)| !held.contains(i))
                .map(|(i, p)| Step::Run {
                    phase: i,
                    name: p.name.clone(),
                    budget: p.budget.unwrap_or(budget),
                    pace: p.rate.clone().map(|rate| PaceSpec {
                        rate,
                        arrival: self.plan.arrival,
                        seed: self.plan.params.seed,
                    }),
                })
                .collect()
        };
        let steps = make_steps();
        let mut point = PointResult {
            key,
            status: PointStatus::Ok,
            repeats: Vec::new(),
            merged: Recorder::new(),
            phases: steps.iter().map(|s| (s.name().to_string(), Recorder::new())).collect(),
            slo: None,
            epoch: None,
            verify: self.plan.verify.then(VerifyReport::default),
        };
        let label = point.key.label();
        // Each measurement (a point, or an SLO probe) is numbered for its samples.
        let seq = self.seq.get() + 1;
        self.seq.set(seq);
        for repeat in 1..=repeats {
            let (fresh, load) = match shared {
                Some(Ok(s)) => (None, s.load.clone()),
                Some(Err(e)) => {
                    point.status = failed_status(e, &label, self.abort);
                    break;
                }
                None => {
                    let load_cell = Cell {
                        threads: self.plan.load_threads.unwrap_or(cell.threads),
                        connections: cell.connections,
                        pipeline: cell.pipeline,
                        batch: cell.batch,
                        sweep: cell.sweep.clone(),
                        rate: None,
                    };
                    match self.open_and_load(&load_cell, batched, false, seq, repeat) {
                        Ok(s) => (Some(s.store), s.load),
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
            let crew = self.measuring_crew(store, cell, sample_as);
            let outcome = if held.is_empty() {
                crew::run(&crew, &steps, &mut progress)
            } else {
                let mut with_skip = vec![self.held_skip(&crew, &held, &phases, budget)];
                with_skip.extend(make_steps());
                let mut outcome = crew::run(&crew, &with_skip, &mut progress);
                // The skip ran nothing; its check's reads are not the point's.
                if !outcome.steps.is_empty() {
                    outcome.steps.remove(0);
                }
                outcome
            };
            // Engine errors on a full disk: say so, naming the directory, while the
            // store still fills it (it is removed at close).
            if let Some(dir) = store.dir()
                && let Some(e) = outcome.steps.iter().find_map(|s| engine_errors(&s.rec))
                && let Some(full) = disk_full(dir)
            {
                point.status = PointStatus::Failed(format!("{label}: {full}; the engine's errors: {e}"));
            }
            if let (Some(report), Some(checker)) = (&mut point.verify, &store.verify)
                && let Err(e) = verify_point(store, checker, report)
                && outcome.end == CrewEnd::Done
            {
                point.status = PointStatus::Failed(format!("{label}: {e}"));
            }
            if let Some(s) = fresh
                && let Err(e) = s.close()
                && outcome.end == CrewEnd::Done
            {
                point.status = match &point.status {
                    // The first failure (a full disk) stays the headline.
                    PointStatus::Failed(first) => PointStatus::Failed(format!("{first} (then {e})")),
                    _ => PointStatus::Failed(format!("{label}: {e}")),
                };
            }
            let mut thread_units = vec![0u64; cell.workers()];
            let mut phase_runs = Vec::new();
            for (i, step) in outcome.steps.iter().enumerate() {
                for (t, u) in step.thread_units.iter().enumerate() {
                    thread_units[t] += u;
                }
                point.merged.merge(&step.rec);
                point.phases[i].1.merge(&step.rec);
                phase_runs.push(PhaseRun {
                    name: steps[i].name().to_string(),
                    start_unix_ns: step.start_unix_ns,
                    wall_ns: step.wall_ns,
                    units: step.units,
                    prim_ops: step.rec.prim_ops(),
                    warmup_units: step.warmup_units,
                    bytes: step.rec.write_bytes(),
                    trend: step.trend.clone(),
                });
            }
            let complete = outcome.end == CrewEnd::Done;
            if complete || outcome.end == CrewEnd::Interrupted {
                // An interrupted repeat is kept (partial figures, clearly marked).
                let client_cpu =
                    (outcome.steps.iter()).fold(crate::result::ClientCpu::default(), |all, s| all.plus(s.client_cpu));
                point.repeats.push(RepeatRun {
                    phases: phase_runs,
                    thread_units,
                    load,
                    latency: Some(RepeatLatency::of(outcome.steps.iter().map(|s| &s.rec))),
                    client_cpu: Some(client_cpu),
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
        if point.status == PointStatus::Ok
            && let Some(v) = point.verify.as_ref().filter(|v| v.anomalies() > 0)
        {
            point.status = PointStatus::Failed(format!("{label}: --verify found {}", v.summary()));
        }
        point
    }

    /// The step that advances every worker's program past the `held` phases, as
    /// running them would, and then checks the existing store holds their work.
    fn held_skip(&self, crew: &Crew<'_>, held: &[usize], phases: &[PhasePlan], budget: Budget) -> Step {
        let units = held
            .iter()
            .map(|&p| {
                let per_worker = match phases[p].budget.unwrap_or(budget) {
                    Budget::Ops(total) => (0..crew.workers())
                        .map(|t| self.wl.quota(p, total, crew.all_workers(), crew.global(t)))
                        .collect(),
                    // Only count-bounded phases are held (SpecWorkload::held_phases).
                    Budget::Secs(_) => Vec::new(),
                };
                (p, per_worker)
            })
            .collect();
        Step::Skip {
            phases: Arc::new(units),
            check: true,
        }
    }
}

/// A message when the filesystem holding `dir` is full (under 1 MiB or 0.5% free).
pub(super) fn disk_full(dir: &std::path::Path) -> Option<String> {
    let (free, total) = crate::engine::storage::disk_space(dir)?;
    (free < (total / 200).max(1 << 20)).then(|| {
        format!(
            "the disk holding the store {} is full ({free} of {total} bytes free)",
            dir.display()
        )
    })
}

/// `--verify`: the final pass over every key the store's checker knows, then what
/// the checks found since the last point, added to `report`.
fn verify_point(store: &OpenStore, checker: &Checker, report: &mut VerifyReport) -> Result<(), String> {
    let pass = store
        .store
        .session()
        .map_err(|e| format!("verify: cannot open a session for the final pass: {e}"))
        .and_then(|mut session| checker.final_pass(session.as_mut()).map(|_| ()));
    let found = checker.take_report();
    report.merge(&found);
    pass
}

/// The engine errors a seed saw, as one message, or None. A seed that lost writes
/// would leave every later figure of the point describing another dataset, so it
/// fails the point instead of passing silently.
fn load_errors(rec: &Recorder) -> Option<String> {
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
