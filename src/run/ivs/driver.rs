//! One grid cell in epochs: the main store's crew runs the load, then each epoch's
//! extend and run phases; between an extend phase and its run phase (while the main
//! crew's workers wait) the other modes of that epoch run on their own fresh stores.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::data::{self, Dump, KeyIndex, ScanWants};
use super::extend::ExtendPlan;
use super::sizes::SizeSnapshot;
use super::stats::{Intervals, RepeatFigures};
use super::steps::{ExtendWork, FillSource, Slot};
use super::{EpochInfo, EpochTag, Epochs, IvsMode};
use crate::engine::Session;
use crate::metrics::Recorder;
use crate::run::crew::{self, Crew, CrewEnd, Live, Monitor, Step, StepOutcome};
use crate::run::kv::ValueSizes;
use crate::run::progress::Progress;
use crate::run::result::{PhaseRun, PointKey, PointResult, PointStatus, RepeatRun, SeedResult, Spread};
use crate::run::sampler::SamplerCtx;
use crate::run::store::OpenStore;
use crate::run::{Cell, Runner};
use crate::workload::dist::Selector;
use crate::workload::spec::plan::scaled;
use crate::workload::spec::schema::CharacterSet;
use crate::workload::spec::strings::mix64;
use crate::workload::spec::values::ValuePool;
use crate::workload::{Budget, EpochLayout, Params, Workload};

/// Everything a cell's epochs share.
struct CellRun<'a> {
    r: &'a Runner<'a>,
    cell: &'a Cell,
    batched: bool,
    ep: &'a Epochs,
    layout: EpochLayout,
    /// The workload at `ep.scale` (a rescaled spec), when it differs from `r.wl`.
    scaled: Option<Arc<dyn Workload>>,
    /// ctx knobs at `ep.scale`.
    params: Params,
    /// Each run phase's budget.
    run_budget: Budget,
    /// Bytes that appends and built values are cut from.
    pool: Arc<ValuePool>,
    selector: Selector,
}

/// The store and load of one repeat, as the extend phases found it first.
#[derive(Debug, Clone)]
struct Initial {
    records: u64,
    volume: u64,
    sizes: SizeSnapshot,
}

/// The main store at the end of one epoch's extend phase.
struct EpochState {
    index: Arc<KeyIndex>,
    records: u64,
    volume: u64,
    sizes: SizeSnapshot,
    skipped: u64,
    /// The main store's content hash after the extend phase, when one was taken.
    hash: Option<u64>,
}

/// One point's repeats, gathered as they happen.
struct Accum {
    key: PointKey,
    status: PointStatus,
    phase: &'static str,
    repeats: Vec<RepeatRun>,
    merged: Recorder,
    figures: Vec<RepeatFigures>,
    info: Option<EpochInfo>,
    dumps: Vec<(u64, u64)>,
}

type Accums = BTreeMap<(u32, IvsMode), Accum>;

/// What each step of the main crew is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum MainStep {
    Load,
    LoadPhase(usize),
    Extend(u32),
    Run(u32),
}

impl CellRun<'_> {
    fn wl(&self) -> &dyn Workload {
        self.scaled.as_deref().unwrap_or(self.r.wl)
    }

    fn key(&self, tag: Option<EpochTag>) -> PointKey {
        PointKey {
            epoch: tag,
            ..self.r.key(self.cell, self.batched)
        }
    }

    fn open_store(&self) -> Result<OpenStore, String> {
        OpenStore::open(
            self.r.engine,
            self.r.options,
            self.r.plan.data_dir.as_deref(),
            self.r.plan.keep_data,
            self.r.plan.max_value_bytes,
        )
        .map_err(|e| self.r.plan.explain_open_error(self.r.engine.name, e))
    }

    fn next_seq(&self) -> usize {
        let seq = self.r.seq.get() + 1;
        self.r.seq.set(seq);
        seq
    }

    /// A crew of the cell's threads on `store`.
    fn crew<'b>(
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
            params,
            threads: self.cell.threads,
            batch: self.cell.batch,
            sweep: self.cell.sweep.clone(),
            clock: self.r.clock,
            abort: self.r.abort,
            sampler: sample,
            pace: None,
            warmup: None,
            value_sizes: Some(sizes),
        }
    }

    fn sampler<'b>(
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
            store_dir: store.dir.as_deref(),
        })
    }

    /// The steps that load a store with `wl`: load(), or the load phases.
    fn load_steps(&self, wl: &dyn Workload, prefix: &str) -> Vec<Step> {
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

    fn run_step(&self, name: String) -> Step {
        Step::Run {
            phase: self.layout.run_phase,
            name,
            budget: self.run_budget,
            pace: None,
        }
    }

    fn value_sizes(&self, sizes: &SizeSnapshot) -> Arc<ValueSizes> {
        Arc::new(ValueSizes {
            sampler: sizes.sampler(),
            pool: Arc::clone(&self.pool),
        })
    }

    fn seed_for(&self, what: u64, epoch: u32) -> u64 {
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
            CharacterSet::Alphanumeric,
            1.0,
            mix64(r.plan.params.seed ^ 0x6976_7370),
        )),
        selector,
    };
    let mut accums = Accums::new();
    for e in 1..=ep.count {
        for mode in std::iter::once(IvsMode::Extend).chain(ep.modes.iter().copied()) {
            let tag = EpochTag { number: e, mode };
            accums.insert(
                (e, mode),
                Accum {
                    key: run.key(Some(tag)),
                    status: PointStatus::Ok,
                    phase: if mode == IvsMode::Extend { "extend" } else { "run" },
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
    }
}

impl Accum {
    fn fail(&mut self, status: PointStatus) {
        if self.status == PointStatus::Ok {
            self.status = match status {
                PointStatus::Failed(m) => PointStatus::Failed(format!("{}: {m}", self.key.label())),
                other => other,
            };
        }
    }

    /// Adds one repeat's step.
    fn add(&mut self, step: &StepOutcome, seed: Option<SeedResult>, info: EpochInfo) {
        self.merged.merge(&step.rec);
        self.figures
            .push(RepeatFigures::of(&step.rec, step.units, step.wall_ns));
        self.repeats.push(RepeatRun {
            phases: vec![PhaseRun {
                name: self.phase.to_string(),
                wall_ns: step.wall_ns,
                units: step.units,
                prim_ops: step.rec.prim_ops(),
                warmup_units: 0,
                bytes: step.rec.write_bytes(),
            }],
            thread_units: step.thread_units.clone(),
            seed,
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
        }
    }
}

/// The seed of a store loaded by `steps` (their wall time and keys written).
fn seed_of(steps: &[StepOutcome], threads: usize) -> Option<SeedResult> {
    (!steps.is_empty()).then(|| SeedResult {
        threads,
        wall_ns: steps.iter().map(|s| s.wall_ns).sum(),
        keys: steps.iter().map(|s| s.rec.write_ops()).sum(),
        shared: false,
    })
}

fn status_of(end: &CrewEnd) -> PointStatus {
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
            accums,
            progress: Progress::running(&key.label()),
        };
        let outcome = crew::run(&crew, &steps, &mut mon);
        let epochs = std::mem::take(&mut mon.epochs);
        drop(mon);
        let load_len = kinds
            .iter()
            .take_while(|k| matches!(k, MainStep::Load | MainStep::LoadPhase(_)))
            .count();
        let seed = seed_of(&outcome.steps[..load_len.min(outcome.steps.len())], self.cell.threads);
        for (i, step) in outcome.steps.iter().enumerate() {
            let (e, mode) = match kinds[i] {
                MainStep::Extend(e) => (e, IvsMode::Extend),
                MainStep::Run(e) => (e, IvsMode::Main),
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
            a.add(step, if mode == IvsMode::Main { seed.clone() } else { None }, info);
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
struct MainMonitor<'a, 'r> {
    run: &'a CellRun<'r>,
    repeat: usize,
    main: &'a OpenStore,
    kinds: &'a [MainStep],
    extend_slot: &'a Slot<ExtendWork>,
    sizes: &'a Slot<ValueSizes>,
    finished: usize,
    /// Per load phase and run phase finished so far: the units each thread ran.
    done_units: Vec<(usize, Vec<u64>)>,
    initial: Option<Initial>,
    epochs: Vec<EpochState>,
    accums: &'a mut Accums,
    progress: Progress,
}

impl Monitor for MainMonitor<'_, '_> {
    fn before_step(&mut self, index: usize, _step: &Step) -> Result<(), String> {
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

    fn step_started(&mut self, step: &Step, live: &Live) {
        self.progress.step_started(step, live);
    }

    fn tick(&mut self, step: &Step, elapsed: Duration, live: &Live) {
        self.progress.tick(step, elapsed, live);
    }

    fn step_finished(&mut self, step: &Step, elapsed: Duration, outcome: &StepOutcome) {
        self.progress.step_finished(step, elapsed, outcome);
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
    fn session(&self) -> Result<Box<dyn Session>, String> {
        self.main
            .store
            .session()
            .map_err(|e| format!("cannot open a session on the main store: {e}"))
    }

    /// Indexes the main store and plans epoch `e`'s extends.
    fn plan_extends(&mut self, e: u32) -> Result<(), String> {
        let mut session = self.session()?;
        let wants = ScanWants {
            index: true,
            hash: false,
        };
        let (scan, _) = data::scan_store(&mut *session, wants, None)?;
        drop(session);
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
            self.run.cell.threads,
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

    /// Runs the other modes of epoch `e` on fresh stores. Their failures go into their
    /// points; only Ctrl-C stops the main crew.
    fn other_modes(&mut self, e: u32) -> Result<(), String> {
        let modes: Vec<IvsMode> = self
            .run
            .ep
            .modes
            .iter()
            .copied()
            .filter(|m| *m != IvsMode::Main)
            .collect();
        let verify = self.run.ep.verify;
        let mut dump: Option<(Dump, u64)> = None;
        let mut main_hash = None;
        if verify || modes.contains(&IvsMode::Clean) {
            let path = modes
                .contains(&IvsMode::Clean)
                .then(|| data::dump_path(self.run.r.plan.data_dir.as_deref()));
            let began = Instant::now();
            let mut session = self.session()?;
            let wants = ScanWants {
                index: false,
                hash: verify,
            };
            match data::scan_store(&mut *session, wants, path.as_deref()) {
                Ok((scan, d)) => {
                    main_hash = scan.hash;
                    dump = d.map(|d| (d, began.elapsed().as_nanos() as u64));
                }
                Err(err) => {
                    for m in &modes {
                        if let Some(a) = self.accums.get_mut(&(e, *m)) {
                            a.fail(PointStatus::Failed(format!("dumping the main store: {err}")));
                        }
                    }
                    return Ok(());
                }
            }
        }
        self.epochs[e as usize - 1].hash = main_hash;
        let dump = dump.map(|(d, ns)| (Arc::new(d), ns));
        for mode in modes {
            if self.run.r.abort.load(Ordering::Relaxed) {
                return Err("interrupted".to_string());
            }
            let result = self.mode(e, mode, dump.as_ref(), main_hash);
            let a = self.accums.get_mut(&(e, mode)).expect("every point has an accumulator");
            match result {
                Ok((step, seed, info, end)) => {
                    if end != CrewEnd::Done {
                        a.fail(status_of(&end));
                    }
                    if let Some(step) = step {
                        a.add(&step, seed, info);
                    }
                    if end == CrewEnd::Interrupted {
                        return Err("interrupted".to_string());
                    }
                }
                Err(err) => a.fail(PointStatus::Failed(err)),
            }
        }
        Ok(())
    }

    /// One mode of epoch `e`: the run step's outcome (if it ran), the store's seed,
    /// its figures, and how its crew ended.
    fn mode(
        &self,
        e: u32,
        mode: IvsMode,
        dump: Option<&(Arc<Dump>, u64)>,
        main_hash: Option<u64>,
    ) -> Result<(Option<StepOutcome>, Option<SeedResult>, EpochInfo, CrewEnd), String> {
        let run = self.run;
        let st = &self.epochs[e as usize - 1];
        let initial = self.initial.as_ref().expect("indexed before the first extend phase");
        let tag = EpochTag { number: e, mode };
        let mut info = EpochInfo {
            tag,
            records: st.records,
            volume_bytes: st.volume,
            value_sizes: st.sizes.clone(),
            skipped_extends: 0,
            target_records: None,
            dump: None,
            data_hash: None,
            intervals: Intervals::default(),
        };
        let skip = Step::Skip {
            phases: Arc::new(self.done_units.clone()),
        };
        let mut spread_wl: Option<Arc<dyn Workload>> = None;
        let mut params = run.params.clone();
        let (fill_steps, sizes) = match mode {
            IvsMode::Clean => {
                let (d, ns) = dump.ok_or("no dump of the main store was taken")?;
                info.dump = Some((*ns, d.file_bytes));
                (
                    vec![
                        skip,
                        Step::Fill {
                            name: format!("e{e}.restore"),
                            source: Arc::new(FillSource::Dump(Arc::clone(d))),
                        },
                    ],
                    st.sizes.clone(),
                )
            }
            IvsMode::Average => {
                let len = st.sizes.mean().round() as usize;
                info.value_sizes = SizeSnapshot::uniform(st.records, len as u64);
                info.volume_bytes = st.index.key_bytes() + st.records * len as u64;
                (
                    vec![
                        skip,
                        Step::Fill {
                            name: format!("e{e}.build"),
                            source: Arc::new(FillSource::Uniform {
                                index: Arc::clone(&st.index),
                                len,
                                pool: Arc::clone(&run.pool),
                                seed: run.seed_for(0x6176_6720, e),
                            }),
                        },
                    ],
                    info.value_sizes.clone(),
                )
            }
            IvsMode::Spread => {
                let per_record = initial.volume as f64 / initial.records as f64;
                let target = (st.volume as f64 / per_record).round().max(1.0) as u64;
                let factor = target as f64 / initial.records as f64;
                info.target_records = Some(target);
                info.value_sizes = initial.sizes.clone();
                let mut scales = vec![run.ep.scale; run.r.wl.phases().len()];
                for &p in &run.layout.load_phases {
                    scales[p] = run.ep.scale * factor;
                }
                spread_wl = run.r.wl.rescaled(&scales).map_err(|e| e.to_string())?;
                params.items = scaled(run.params.items, factor);
                params.users = scaled(run.params.users, factor);
                let wl = spread_wl.as_deref().unwrap_or(run.wl());
                (run.load_steps(wl, &format!("e{e}.spread.")), initial.sizes.clone())
            }
            IvsMode::Main | IvsMode::Extend => unreachable!("run on the main store"),
        };
        let store = run.open_store()?;
        let mut steps = fill_steps;
        let loads = steps.len();
        steps.push(run.run_step(format!("e{e}.{mode}")));
        let key = run.key(Some(tag));
        let seq = run.next_seq();
        let slot = Slot::<ValueSizes>::default();
        slot.set(Some(run.value_sizes(&sizes)));
        let wl = spread_wl.as_deref().unwrap_or(run.wl());
        let crew = run.crew(wl, &params, &store, run.sampler(&key, seq, self.repeat, &store), &slot);
        let mut mon = ModeMonitor {
            progress: Progress::running(&key.label()),
            verify: (mode == IvsMode::Clean && run.ep.verify).then_some((&store, main_hash, loads)),
            hash: None,
        };
        let outcome = crew::run(&crew, &steps, &mut mon);
        info.data_hash = mon.hash;
        let closed = store.close();
        // The steps that loaded the store (a Skip step's outcome is empty and left out).
        let load_outcomes: Vec<StepOutcome> = outcome
            .steps
            .iter()
            .take(loads)
            .zip(&steps)
            .filter(|(_, s)| !matches!(s, Step::Skip { .. }))
            .map(|(o, _)| clone_outcome(o))
            .collect();
        let seed = seed_of(&load_outcomes, run.cell.threads);
        if mode == IvsMode::Spread {
            let written: u64 = load_outcomes.iter().map(|o| o.rec.write_ops()).sum();
            info.records = written;
            info.volume_bytes = load_outcomes.iter().map(|o| o.rec.write_bytes()).sum();
            let target = info.target_records.unwrap_or(written);
            if written.abs_diff(target) * 20 > target {
                eprintln!(
                    "kvmark: warning: {}: the load wrote {written} records for a spread of {target}: \
                     a Lua load() should size its records by ctx.items (and ctx.users)",
                    key.label()
                );
            }
        }
        let run_step = (outcome.steps.len() > loads).then(|| clone_outcome(&outcome.steps[loads]));
        let mut end = outcome.end;
        if let Err(err) = closed
            && end == CrewEnd::Done
        {
            end = CrewEnd::Failed(err);
        }
        Ok((run_step, seed, info, end))
    }
}

/// A step outcome kept past its crew.
fn clone_outcome(o: &StepOutcome) -> StepOutcome {
    StepOutcome {
        wall_ns: o.wall_ns,
        units: o.units,
        warmup_units: o.warmup_units,
        thread_units: o.thread_units.clone(),
        rec: o.rec.clone(),
    }
}

/// Progress for a mode's crew, and with `--ivs-verify` the check that a restored store
/// holds exactly the main store's data (before its run phase starts).
struct ModeMonitor<'a> {
    progress: Progress,
    /// (the store, the main store's hash, the index of the run step).
    verify: Option<(&'a OpenStore, Option<u64>, usize)>,
    hash: Option<u64>,
}

impl Monitor for ModeMonitor<'_> {
    fn before_step(&mut self, index: usize, _step: &Step) -> Result<(), String> {
        let Some((store, want, run_index)) = self.verify else {
            return Ok(());
        };
        if index != run_index {
            return Ok(());
        }
        let mut session = store
            .store
            .session()
            .map_err(|e| format!("cannot open a session on the restored store: {e}"))?;
        let wants = ScanWants {
            index: false,
            hash: true,
        };
        let (scan, _) = data::scan_store(&mut *session, wants, None)?;
        self.hash = scan.hash;
        if scan.hash != want {
            return Err(format!(
                "the restored store differs from the main store ({} records, hash {:016x}; main hash {:016x})",
                scan.records,
                scan.hash.unwrap_or(0),
                want.unwrap_or(0)
            ));
        }
        Ok(())
    }

    fn step_started(&mut self, step: &Step, live: &Live) {
        self.progress.step_started(step, live);
    }

    fn tick(&mut self, step: &Step, elapsed: Duration, live: &Live) {
        self.progress.tick(step, elapsed, live);
    }

    fn step_finished(&mut self, step: &Step, elapsed: Duration, outcome: &StepOutcome) {
        self.progress.step_finished(step, elapsed, outcome);
    }
}
