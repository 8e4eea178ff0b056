//! One grid cell in epochs: the main store's crew runs the load, then each epoch's
//! extend and run phases; between an extend phase and its run phase (while the main
//! crew's workers wait) the other modes of that epoch run on their own fresh stores.

use crate::run::segment::Segment;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::kv::ValueSizes;
use crate::kv::sizes::SizeSnapshot;
use crate::kv::values::ValuePool;
use crate::metrics::Recorder;
use crate::result::epochs::{EpochInfo, EpochTag};
use crate::result::intervals::{Intervals, RepeatFigures};
use crate::result::{LoadResult, PhaseRun, PointKey, PointResult, PointStatus, RepeatLatency, RepeatRun, Spread};
use crate::run::bulk::data::{self, KeyIndex, ScanWants};
use crate::run::bulk::extend::ExtendPlan;
use crate::run::bulk::steps::{ExtendWork, Slot};
use crate::run::crew::{self, Both, Crew, CrewEnd, Monitor, Step, StepOutcome};
use crate::run::grid::Cell;
use crate::run::progress::Progress;
use crate::run::runner::Runner;
use crate::run::sampler::SamplerCtx;
use crate::run::store::OpenStore;
use crate::workload::dist::Selector;
use crate::workload::epochs::{EpochLayout, EpochMode, Epochs};
use crate::workload::scaled;
use crate::workload::spec::schema::CharacterSet;
use crate::workload::spec::strings::{charset_bytes, mix64};
use crate::workload::{Budget, Params, Workload};

/// Everything a cell's epochs share.
pub(super) struct CellRun<'a> {
    pub(super) r: &'a Runner<'a>,
    pub(super) cell: &'a Cell,
    pub(super) batched: bool,
    pub(super) ep: &'a Epochs,
    pub(super) layout: EpochLayout,
    /// The workload at `ep.scale` (a rescaled spec), when it differs from `r.wl`.
    pub(super) scaled: Option<Arc<dyn Workload>>,
    /// ctx knobs at `ep.scale`.
    pub(super) params: Params,
    /// Each run phase's budget.
    pub(super) run_budget: Budget,
    /// Bytes that appends and built values are cut from.
    pub(super) pool: Arc<ValuePool>,
    pub(super) selector: Selector,
}

/// The store and load of one repeat, as the extend phases found it first.
#[derive(Debug, Clone)]
pub(super) struct Initial {
    pub(super) records: u64,
    pub(super) volume: u64,
    pub(super) sizes: SizeSnapshot,
}

/// The main store at the end of one epoch's extend phase.
pub(super) struct EpochState {
    pub(super) index: Arc<KeyIndex>,
    pub(super) records: u64,
    pub(super) volume: u64,
    pub(super) sizes: SizeSnapshot,
    pub(super) skipped: u64,
    /// The main store's content hash after the extend phase, when one was taken.
    pub(super) hash: Option<u64>,
}

/// One point's repeats, gathered as they happen.
pub(super) struct Accum {
    pub(super) key: PointKey,
    pub(super) status: PointStatus,
    pub(super) phase: &'static str,
    pub(super) repeats: Vec<RepeatRun>,
    pub(super) merged: Recorder,
    pub(super) figures: Vec<RepeatFigures>,
    pub(super) info: Option<EpochInfo>,
    pub(super) dumps: Vec<(u64, u64)>,
}

pub(super) type Accums = BTreeMap<(u32, EpochMode), Accum>;

/// What each step of the main crew is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum MainStep {
    Load,
    LoadPhase(usize),
    Extend(u32),
    Run(u32),
}

impl CellRun<'_> {
    pub(super) fn wl(&self) -> &dyn Workload {
        self.scaled.as_deref().unwrap_or(self.r.wl)
    }

    pub(super) fn key(&self, tag: Option<EpochTag>) -> PointKey {
        PointKey {
            epoch: tag,
            ..self.r.key(self.cell, self.batched)
        }
    }

    pub(super) fn open_store(&self) -> Result<OpenStore, String> {
        OpenStore::open(
            self.r.engine,
            self.r.options,
            self.r.plan.data_dir.as_deref(),
            self.r.plan.keep_data,
            self.r.plan.max_value_bytes,
            None,
        )
        .map_err(|e| self.r.plan.explain_open_error(self.r.engine, e))
    }

    pub(super) fn next_seq(&self) -> usize {
        let seq = self.r.seq.get() + 1;
        self.r.seq.set(seq);
        seq
    }

    /// A crew of the cell's threads on `store`.
    pub(super) fn crew<'b>(
        &'b self,
        wl: &'b dyn Workload,
        params: &'b Params,
        store: &'b OpenStore,
        sample: Option<SamplerCtx<'b>>,
        sizes: &'b Slot<ValueSizes>,
    ) -> Crew<'b> {
        Crew {
            workload: wl,
            store: store.store.as_ref(),
            engine: self.r.engine,
            params,
            threads: self.cell.threads,
            connections: self.cell.connections,
            pipeline: self.cell.pipeline,
            batch: self.cell.batch,
            sweep: self.cell.sweep.clone(),
            clock: self.r.clock,
            abort: self.r.abort,
            sampler: sample,
            pace: None,
            warmup: None,
            load_limit: self.r.plan.load_limit,
            settle: self.r.plan.settle,
            value_sizes: Some(sizes),
            verify: None,
            segment: Segment::WHOLE,
            start: None,
            reconnect_every: 0,
            size_classes: self.r.plan.size_classes.clone(),
        }
    }

    pub(super) fn sampler<'b>(
        &'b self,
        key: &'b PointKey,
        seq: usize,
        repeat: usize,
        store: &'b OpenStore,
    ) -> Option<SamplerCtx<'b>> {
        self.r.sampling.map(|s| SamplerCtx {
            interval: s.interval,
            system: s.system,
            sink: s.sink,
            point: key,
            point_seq: seq,
            repeat,
            store_dir: store.dir(),
        })
    }

    /// The steps that load a store with `wl`: load(), or the load phases.
    pub(super) fn load_steps(&self, wl: &dyn Workload, prefix: &str) -> Vec<Step> {
        let mut steps = Vec::new();
        if self.layout.load_fn {
            steps.push(Step::Load);
        }
        let phases = wl.phases();
        for &p in &self.layout.load_phases {
            steps.push(Step::Run {
                phase: p,
                name: format!("{prefix}{}", phases[p].name),
                budget: phases[p].budget.unwrap_or(self.run_budget),
                pace: None,
            });
        }
        steps
    }

    pub(super) fn run_step(&self, name: String) -> Step {
        Step::Run {
            phase: self.layout.run_phase,
            name,
            budget: self.run_budget,
            pace: None,
        }
    }

    pub(super) fn value_sizes(&self, sizes: &SizeSnapshot) -> Arc<ValueSizes> {
        Arc::new(ValueSizes {
            sampler: sizes.sampler(),
            pool: Arc::clone(&self.pool),
        })
    }

    pub(super) fn seed_for(&self, what: u64, epoch: u32) -> u64 {
        mix64(self.r.plan.params.seed ^ mix64(what ^ (u64::from(epoch) << 32)))
    }
}

/// Runs `cell` in epochs, every repeat, and returns its points in report order: per
/// epoch the extend phase, then each run mode.
pub(in crate::run) fn run_cell(r: &Runner<'_>, cell: &Cell, batched: bool, ep: &Epochs) -> Vec<PointResult> {
    let layout = match r.wl.epoch_layout() {
        Ok(l) => l,
        Err(e) => return vec![failed(r.key(cell, batched), e)],
    };
    let scaled_wl = if ep.scale == 1.0 {
        Ok(None)
    } else {
        r.wl.rescaled(&vec![ep.scale; r.wl.phases().len()])
    };
    let scaled_wl = match scaled_wl {
        Ok(s) => s,
        Err(e) => return vec![failed(r.key(cell, batched), e.to_string())],
    };
    let base = &r.plan.params;
    let params = Params {
        users: scaled(base.users, ep.scale),
        items: scaled(base.items, ep.scale),
        ..base.clone()
    };
    let run_budget = match r.plan.budget {
        Budget::Ops(n) => Budget::Ops(scaled(n, ep.scale)),
        secs => secs,
    };
    let selector = match Selector::new(ep.extend_selection.as_ref()) {
        Ok(s) => s,
        Err(e) => return vec![failed(r.key(cell, batched), e)],
    };
    let run = CellRun {
        r,
        cell,
        batched,
        ep,
        layout,
        scaled: scaled_wl,
        params,
        run_budget,
        pool: Arc::new(ValuePool::new(
            charset_bytes(CharacterSet::Alphanumeric),
            1.0,
            mix64(r.plan.params.seed ^ 0x6976_7370),
        )),
        selector,
    };
    let mut accums = Accums::new();
    for e in 1..=ep.count {
        for mode in std::iter::once(EpochMode::Extend).chain(ep.modes.iter().copied()) {
            let tag = EpochTag { number: e, mode };
            accums.insert(
                (e, mode),
                Accum {
                    key: run.key(Some(tag)),
                    status: PointStatus::Ok,
                    phase: if mode == EpochMode::Extend { "extend" } else { "run" },
                    repeats: Vec::new(),
                    merged: Recorder::new(),
                    figures: Vec::new(),
                    info: None,
                    dumps: Vec::new(),
                },
            );
        }
    }
    for repeat in 1..=r.plan.repeat {
        let stop = run.repeat(repeat, &mut accums);
        if stop || r.abort.load(Ordering::Relaxed) {
            break;
        }
    }
    accums.into_values().map(Accum::finish).collect()
}

fn failed(key: PointKey, why: String) -> PointResult {
    let label = key.label();
    PointResult {
        key,
        status: PointStatus::Failed(format!("{label}: {why}")),
        repeats: Vec::new(),
        merged: Recorder::new(),
        phases: Vec::new(),
        slo: None,
        epoch: None,
        verify: None,
    }
}

impl Accum {
    pub(super) fn fail(&mut self, status: PointStatus) {
        if self.status == PointStatus::Ok {
            self.status = match status {
                PointStatus::Failed(m) => PointStatus::Failed(format!("{}: {m}", self.key.label())),
                other => other,
            };
        }
    }

    /// Adds one repeat's step.
    pub(super) fn add(&mut self, step: &StepOutcome, load: Option<LoadResult>, info: EpochInfo) {
        self.merged.merge(&step.rec);
        self.figures
            .push(RepeatFigures::of(&step.rec, step.units, step.wall_ns));
        self.repeats.push(RepeatRun {
            phases: vec![PhaseRun {
                name: self.phase.to_string(),
                start_unix_ns: step.start_unix_ns,
                wall_ns: step.wall_ns,
                units: step.units,
                prim_ops: step.rec.prim_ops(),
                warmup_units: 0,
                bytes: step.rec.write_bytes(),
                trend: step.trend.clone(),
            }],
            thread_units: step.thread_units.clone(),
            load,
            latency: Some(RepeatLatency::of([&step.rec])),
            client_cpu: Some(step.client_cpu),
        });
        if let Some(d) = info.dump {
            self.dumps.push(d);
        }
        self.info = Some(info);
    }

    fn finish(self) -> PointResult {
        let epoch = self.info.map(|mut info| {
            info.intervals = Intervals::of(&self.figures);
            info.dump = (!self.dumps.is_empty()).then(|| {
                let median = |f: &dyn Fn(&(u64, u64)) -> u64| {
                    Spread::of(&self.dumps.iter().map(|d| f(d) as f64).collect::<Vec<_>>()).median as u64
                };
                (median(&|d| d.0), median(&|d| d.1))
            });
            Box::new(info)
        });
        let status = if self.repeats.is_empty() && self.status == PointStatus::Ok {
            PointStatus::Failed(format!("{}: no repeat reached this point", self.key.label()))
        } else {
            self.status
        };
        PointResult {
            key: self.key,
            status,
            repeats: self.repeats,
            phases: vec![(self.phase.to_string(), self.merged.clone())],
            merged: self.merged,
            slo: None,
            epoch,
            verify: None,
        }
    }
}

/// The seed of a store loaded by `steps` (their wall time and keys written).
pub(super) fn load_of(steps: &[StepOutcome], threads: usize) -> Option<LoadResult> {
    (!steps.is_empty()).then(|| LoadResult {
        threads,
        wall_ns: steps.iter().map(|s| s.wall_ns).sum(),
        keys: steps.iter().map(|s| s.rec.write_ops()).sum(),
        shared: false,
    })
}

/// The engine errors of the steps that loaded a store, as a failure message: a store
/// that lost writes while it was loaded holds other data than the mode says.
pub(super) fn load_errors(steps: &[StepOutcome]) -> Option<String> {
    let errors: Vec<String> = steps
        .iter()
        .filter_map(|s| crate::run::runner::engine_errors(&s.rec))
        .collect();
    (!errors.is_empty()).then(|| format!("engine errors while loading the store: {}", errors.join("; ")))
}

pub(super) fn status_of(end: &CrewEnd) -> PointStatus {
    match end {
        CrewEnd::Done => PointStatus::Ok,
        CrewEnd::Failed(e) => PointStatus::Failed(e.clone()),
        CrewEnd::Interrupted => PointStatus::Interrupted,
    }
}

impl CellRun<'_> {
    /// One repeat of every epoch. True when the run must stop (Ctrl-C).
    fn repeat(&self, repeat: usize, accums: &mut Accums) -> bool {
        let fail_all = |accums: &mut Accums, status: PointStatus| {
            for a in accums.values_mut() {
                a.fail(status.clone());
            }
        };
        let main = match self.open_store() {
            Ok(s) => s,
            Err(e) => {
                fail_all(accums, PointStatus::Failed(e));
                return false;
            }
        };
        let mut steps = self.load_steps(self.wl(), "");
        let mut kinds: Vec<MainStep> = Vec::new();
        if self.layout.load_fn {
            kinds.push(MainStep::Load);
        }
        kinds.extend(self.layout.load_phases.iter().map(|&p| MainStep::LoadPhase(p)));
        let extend_slot = Arc::new(Slot::<ExtendWork>::default());
        for e in 1..=self.ep.count {
            steps.push(Step::Extend {
                name: format!("e{e}.extend"),
                work: Arc::clone(&extend_slot),
            });
            kinds.push(MainStep::Extend(e));
            steps.push(self.run_step(format!("e{e}.main")));
            kinds.push(MainStep::Run(e));
        }
        let key = self.key(None);
        let seq = self.next_seq();
        let sizes = Slot::<ValueSizes>::default();
        let crew = self.crew(
            self.wl(),
            &self.params,
            &main,
            self.sampler(&key, seq, repeat, &main),
            &sizes,
        );
        let mut mon = MainMonitor {
            run: self,
            repeat,
            main: &main,
            kinds: &kinds,
            extend_slot: &extend_slot,
            sizes: &sizes,
            finished: 0,
            done_units: Vec::new(),
            initial: None,
            epochs: Vec::new(),
            load_failed: None,
            accums,
        };
        let mut progress = Progress::running(&key.label());
        let outcome = crew::run(&crew, &steps, &mut Both(&mut progress, &mut mon));
        let epochs = std::mem::take(&mut mon.epochs);
        drop(mon);
        let load_len = kinds
            .iter()
            .take_while(|k| matches!(k, MainStep::Load | MainStep::LoadPhase(_)))
            .count();
        let load = load_of(&outcome.steps[..load_len.min(outcome.steps.len())], self.cell.threads);
        for (i, step) in outcome.steps.iter().enumerate() {
            let (e, mode) = match kinds[i] {
                MainStep::Extend(e) => (e, EpochMode::Extend),
                MainStep::Run(e) => (e, EpochMode::Main),
                _ => continue,
            };
            let Some(st) = epochs.get(e as usize - 1) else { continue };
            let info = EpochInfo {
                tag: EpochTag { number: e, mode },
                records: st.records,
                volume_bytes: st.volume,
                value_sizes: st.sizes.clone(),
                skipped_extends: st.skipped,
                target_records: None,
                dump: None,
                data_hash: st.hash,
                intervals: Intervals::default(),
            };
            let a = accums.get_mut(&(e, mode)).expect("every point has an accumulator");
            let last = i + 1 == outcome.steps.len();
            if last && outcome.end != CrewEnd::Done {
                a.fail(status_of(&outcome.end));
            }
            a.add(step, if mode == EpochMode::Main { load.clone() } else { None }, info);
        }
        if outcome.end != CrewEnd::Done {
            // The epochs the crew did not reach fail with the same reason.
            for a in accums.values_mut().filter(|a| a.repeats.len() < repeat) {
                a.fail(status_of(&outcome.end));
            }
        }
        if let Err(e) = main.close() {
            fail_all(accums, PointStatus::Failed(e));
        }
        outcome.end == CrewEnd::Interrupted
    }
}

/// Drives the main crew: plans each extend phase just before it starts, and runs the
/// other modes of an epoch just before the main run phase.
pub(super) struct MainMonitor<'a, 'r> {
    pub(super) run: &'a CellRun<'r>,
    pub(super) repeat: usize,
    pub(super) main: &'a OpenStore,
    kinds: &'a [MainStep],
    pub(super) extend_slot: &'a Slot<ExtendWork>,
    pub(super) sizes: &'a Slot<ValueSizes>,
    pub(super) finished: usize,
    /// Per load phase and run phase finished so far: the units each thread ran.
    pub(super) done_units: Vec<(usize, Vec<u64>)>,
    pub(super) initial: Option<Initial>,
    pub(super) epochs: Vec<EpochState>,
    /// Why the load failed (engine errors), which stops the crew before its next step.
    load_failed: Option<String>,
    pub(super) accums: &'a mut Accums,
}

impl Monitor for MainMonitor<'_, '_> {
    fn before_step(&mut self, index: usize, _step: &Step) -> Result<(), String> {
        if let Some(why) = &self.load_failed {
            return Err(why.clone());
        }
        match self.kinds[index] {
            MainStep::Extend(e) => self.plan_extends(e),
            MainStep::Run(e) => {
                self.extend_slot.set(None);
                let st = &self.epochs[e as usize - 1];
                self.sizes.set(Some(self.run.value_sizes(&st.sizes)));
                self.other_modes(e)
            }
            MainStep::Load | MainStep::LoadPhase(_) => Ok(()),
        }
    }

    fn step_finished(&mut self, _step: &Step, _elapsed: Duration, outcome: &StepOutcome) {
        if matches!(self.kinds[self.finished], MainStep::Load | MainStep::LoadPhase(_)) {
            self.load_failed = load_errors(std::slice::from_ref(outcome));
        }
        match self.kinds[self.finished] {
            MainStep::LoadPhase(p) => self.done_units.push((p, outcome.thread_units.clone())),
            MainStep::Run(_) => self
                .done_units
                .push((self.run.layout.run_phase, outcome.thread_units.clone())),
            MainStep::Load | MainStep::Extend(_) => {}
        }
        self.finished += 1;
    }
}

impl MainMonitor<'_, '_> {
    /// Indexes the main store and plans epoch `e`'s extends.
    fn plan_extends(&mut self, e: u32) -> Result<(), String> {
        let wants = ScanWants {
            index: true,
            hash: false,
        };
        let (scan, _) = data::scan_store(self.main.store.as_ref(), &[], wants, None)?;
        let mut index = scan.index.expect("asked for an index");
        if self.initial.is_none() {
            if index.is_empty() {
                return Err("the load left the store empty: there is nothing for the extend phases to grow".into());
            }
            self.initial = Some(Initial {
                records: index.len() as u64,
                volume: index.volume(),
                sizes: SizeSnapshot::of(&index.sizes),
            });
        }
        let ep = self.run.ep;
        let plan = ExtendPlan::draw(
            &mut index,
            ep.extend_ops,
            &self.run.selector,
            &ep.extend_len,
            self.run.r.plan.max_value_bytes,
            self.run.cell.workers(),
            self.run.seed_for(0x6578_7465_6e64, e),
        );
        let index = Arc::new(index);
        let state = EpochState {
            records: index.len() as u64,
            volume: index.volume(),
            sizes: SizeSnapshot::of(&index.sizes),
            skipped: plan.skipped,
            index: Arc::clone(&index),
            hash: None,
        };
        // Only the latest epoch's index is needed (for `average`); free the older ones.
        if let Some(prev) = self.epochs.last_mut() {
            prev.index = Arc::new(KeyIndex::default());
        }
        self.epochs.push(state);
        self.extend_slot.set(Some(Arc::new(ExtendWork {
            plan,
            index,
            pool: Arc::clone(&self.run.pool),
            seed: self.run.seed_for(0x7375_6666, e),
        })));
        Ok(())
    }
}
