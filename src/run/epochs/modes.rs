//! The other modes of an epoch, run while the main crew waits between the epoch's
//! extend phase and its run phase: each on a fresh store of the same engine, loaded
//! from a dump of the main store (`clean`), built from its keys (`average`), or loaded
//! by the workload at the main store's volume (`spread`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::driver::{MainMonitor, load_errors, load_of, status_of};
use crate::kv::ValueSizes;
use crate::kv::sizes::SizeSnapshot;
use crate::result::epochs::{EpochInfo, EpochTag};
use crate::result::intervals::Intervals;
use crate::result::{LoadResult, PointStatus};
use crate::run::bulk::data::{self, Dump, ScanWants};
use crate::run::bulk::steps::{FillSource, Slot};
use crate::run::crew::{self, Both, CrewEnd, Monitor, Step, StepOutcome};
use crate::run::progress::Progress;
use crate::run::store::OpenStore;
use crate::workload::Workload;
use crate::workload::epochs::EpochMode;
use crate::workload::scaled;

impl MainMonitor<'_, '_> {
    /// Key ranges a dump is read in, one thread each: every CPU (the dump is not
    /// measured, so it may use the whole machine), and at least one per worker, so
    /// each worker of the restore loads whole files.
    fn dump_ranges(&self) -> usize {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        cpus.max(self.run.cell.workers())
    }

    /// Runs the other modes of epoch `e` on fresh stores. Their failures go into their
    /// points; only Ctrl-C stops the main crew.
    pub(super) fn other_modes(&mut self, e: u32) -> Result<(), String> {
        let modes: Vec<EpochMode> = self
            .run
            .ep
            .modes
            .iter()
            .copied()
            .filter(|m| *m != EpochMode::Main)
            .collect();
        let verify = self.run.ep.verify;
        let mut dump: Option<(Dump, u64)> = None;
        let mut main_hash = None;
        if verify || modes.contains(&EpochMode::Clean) {
            let path = modes
                .contains(&EpochMode::Clean)
                .then(|| data::dump_path(self.run.r.plan.data_dir.as_deref()));
            let began = Instant::now();
            let wants = ScanWants {
                index: false,
                hash: verify,
            };
            let splits = self.epochs[e as usize - 1].index.split_points(self.dump_ranges());
            match data::scan_store(self.main.store.as_ref(), &splits, wants, path.as_deref()) {
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
                Ok((step, load, info, end)) => {
                    if end != CrewEnd::Done {
                        a.fail(status_of(&end));
                    }
                    if let Some(step) = step {
                        a.add(&step, load, info);
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
        mode: EpochMode,
        dump: Option<&(Arc<Dump>, u64)>,
        main_hash: Option<u64>,
    ) -> Result<(Option<StepOutcome>, Option<LoadResult>, EpochInfo, CrewEnd), String> {
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
            check: false,
        };
        let mut spread_wl: Option<Arc<dyn Workload>> = None;
        let mut params = run.params.clone();
        let (fill_steps, sizes) = match mode {
            EpochMode::Clean => {
                let (d, ns) = dump.ok_or("no dump of the main store was taken")?;
                info.dump = Some((*ns, d.file_bytes()));
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
            EpochMode::Average => {
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
            EpochMode::Spread => {
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
            EpochMode::Main | EpochMode::Extend => unreachable!("run on the main store"),
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
            verify: (mode == EpochMode::Clean && run.ep.verify).then(|| Verify {
                store: &store,
                want: main_hash,
                splits: st.index.split_points(self.dump_ranges()),
                run_step: loads,
            }),
            hash: None,
        };
        let mut progress = Progress::running(&key.label());
        let outcome = crew::run(&crew, &steps, &mut Both(&mut progress, &mut mon));
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
        let load = load_of(&load_outcomes, run.cell.threads);
        if mode == EpochMode::Spread {
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
        if end == CrewEnd::Done
            && let Some(why) = load_errors(&load_outcomes)
        {
            end = CrewEnd::Failed(why);
        }
        if let Err(err) = closed
            && end == CrewEnd::Done
        {
            end = CrewEnd::Failed(err);
        }
        Ok((run_step, load, info, end))
    }
}

/// A step outcome kept past its crew.
fn clone_outcome(o: &StepOutcome) -> StepOutcome {
    StepOutcome {
        start_unix_ns: o.start_unix_ns,
        wall_ns: o.wall_ns,
        units: o.units,
        warmup_units: o.warmup_units,
        thread_units: o.thread_units.clone(),
        rec: o.rec.clone(),
        client_cpu: o.client_cpu,
        trend: o.trend.clone(),
    }
}

/// With `--ivs-verify`, checks that a restored store holds exactly the main store's
/// data, before its run phase starts.
struct ModeMonitor<'a> {
    verify: Option<Verify<'a>>,
    hash: Option<u64>,
}

/// What `--ivs-verify` compares.
struct Verify<'a> {
    /// The restored store.
    store: &'a OpenStore,
    /// The main store's hash.
    want: Option<u64>,
    /// The key ranges the main store's hash was taken over.
    splits: Vec<Vec<u8>>,
    /// The index of the run step, which the check precedes.
    run_step: usize,
}

impl Monitor for ModeMonitor<'_> {
    fn before_step(&mut self, index: usize, _step: &Step) -> Result<(), String> {
        let Some(v) = self.verify.as_ref().filter(|v| v.run_step == index) else {
            return Ok(());
        };
        let wants = ScanWants {
            index: false,
            hash: true,
        };
        let (scan, _) = data::scan_store(v.store.store.as_ref(), &v.splits, wants, None)?;
        let want = v.want;
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
}
