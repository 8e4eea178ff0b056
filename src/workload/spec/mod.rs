//! Declarative workload specs: Tectonic's JSON model of sections (isolated key
//! spaces) made of groups (phases run one after another) made of interleaved
//! operations, run directly against the engines (`kvmark spec.json`) or written out
//! as an operation log (`kvmark gen`).
//!
//! The pieces: [`schema`] (the JSON as written), [`plan`] (inheritance and checks),
//! [`section`] (key-space checks), [`strings`] and [`keys`] (string expressions and
//! the key space), [`live`] (live keys), [`sorted`] (K-L sortedness), [`values`],
//! [`generator`] (a thread's operation stream) and [`emit`] (`kvmark gen`).

pub mod emit;
pub mod generator;
pub mod keys;
pub mod live;
pub mod plan;
pub mod schema;
pub mod section;
pub mod sorted;
pub mod strings;
pub mod values;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use self::generator::Generator;
use self::plan::Plan;
use super::epochs::{EpochDefaults, EpochLayout};
use super::{PhasePlan, Program, Sweep, ThreadCtx, Workload, WorkloadError};
use crate::kv::Kv;

/// `--strict-spec`: refuse every field Tectonic's schema does not have where it
/// stands, instead of ignoring Tectonic's own misplaced fields with a warning. Set
/// once by the command line before any spec opens.
static STRICT: AtomicBool = AtomicBool::new(false);

/// Sets `--strict-spec` for the specs opened from now on.
pub fn set_strict(strict: bool) {
    STRICT.store(strict, Ordering::Relaxed);
}

/// A spec file, validated once and shared by all threads.
#[derive(Debug)]
pub struct SpecWorkload {
    path: PathBuf,
    plan: Arc<Plan>,
    /// The parsed file and its default name, to rebuild the plan rescaled.
    spec: schema::SpecFile,
    stem: String,
}

impl SpecWorkload {
    /// Reads, parses and validates `path`; every problem names the file and the JSON
    /// path it is about.
    pub fn open(path: &Path) -> Result<SpecWorkload, WorkloadError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| WorkloadError::Invalid(format!("cannot read spec {}: {e}", path.display())))?;
        let invalid = |m: String| WorkloadError::Invalid(format!("{}: {m}", path.display()));
        let (spec, warnings) = schema::parse_lenient(&text, STRICT.load(Ordering::Relaxed)).map_err(invalid)?;
        for w in warnings {
            eprintln!("kvmark: warning: {}: {w}", path.display());
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let plan = plan::build(&spec, &stem).map_err(invalid)?;
        Ok(SpecWorkload {
            path: path.to_path_buf(),
            plan: Arc::new(plan),
            spec,
            stem,
        })
    }

    /// The validated plan.
    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }
}

impl Workload for SpecWorkload {
    fn name(&self) -> &str {
        &self.plan.name
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn batched(&self) -> bool {
        false
    }

    fn sweep(&self) -> Option<&Sweep> {
        None
    }

    fn has_load(&self) -> bool {
        // Loading is a group like any other, timed and reported as its own phase.
        false
    }

    fn phases(&self) -> Vec<PhasePlan> {
        self.plan
            .sections
            .iter()
            .flat_map(|s| &s.groups)
            .map(|g| PhasePlan {
                name: g.name.clone(),
                budget: Some(g.budget),
                rate: g.rate.clone(),
            })
            .collect()
    }

    fn epoch_defaults(&self) -> Option<&EpochDefaults> {
        self.plan.epochs.as_ref()
    }

    fn ordered_needs(&self) -> Vec<String> {
        let ordered = |op: &plan::OpPlan| matches!(op.kind, plan::SpecOp::RangeQuery | plan::SpecOp::RangeDelete);
        self.plan
            .sections
            .iter()
            .flat_map(|s| &s.groups)
            .flat_map(|g| &g.ops)
            .filter(|op| ordered(op))
            .map(|op| op.path.clone())
            .collect()
    }

    fn epoch_layout(&self) -> Result<EpochLayout, String> {
        let phases = self.plan.phase_groups().len();
        if phases < 2 {
            return Err(format!(
                "{}: epochs need a group that loads the store and a last group to run in each epoch \
                 (this spec has one group)",
                self.path.display()
            ));
        }
        Ok(EpochLayout {
            load_fn: false,
            load_phases: (0..phases - 1).collect(),
            run_phase: phases - 1,
        })
    }

    fn rescaled(&self, scales: &[f64]) -> Result<Option<Arc<dyn Workload>>, WorkloadError> {
        let plan = plan::build_scaled(&self.spec, &self.stem, scales)
            .map_err(|m| WorkloadError::Invalid(format!("{}: {m}", self.path.display())))?;
        Ok(Some(Arc::new(SpecWorkload {
            path: self.path.clone(),
            plan: Arc::new(plan),
            spec: self.spec.clone(),
            stem: self.stem.clone(),
        })))
    }

    fn held_phases(&self) -> Vec<usize> {
        // The leading groups that only insert, counted: loading, as a kept store of
        // the same spec, --seed and --threads holds it. The last group always runs (a
        // spec that only inserts adds to the store).
        let phases = self.plan.phase_groups();
        let loading = phases
            .iter()
            .map(|&(s, g)| &self.plan.sections[s].groups[g])
            .take_while(|g| {
                matches!(g.budget, super::Budget::Ops(_))
                    && g.ops
                        .iter()
                        .all(|o| o.kind == plan::SpecOp::Insert && o.lifetime.is_none())
            })
            .count();
        (0..loading.min(phases.len().saturating_sub(1))).collect()
    }

    fn program(&self, ctx: &ThreadCtx, kv: Kv) -> Result<Box<dyn Program>, WorkloadError> {
        Ok(Box::new(SpecProgram {
            stream: Generator::new(Arc::clone(&self.plan), ctx.thread, ctx.threads, ctx.params.seed),
            kv,
            phase: None,
            thread: ctx.thread,
            skipped_reported: 0,
            lifetimes: self.plan.has_lifetimes(),
        }))
    }
}

/// Live keys each thread reads back to check an existing store
/// ([`Program::check_held`]).
const HELD_SAMPLE: usize = 16;

/// One thread of a spec run: its generator drives its verb set.
struct SpecProgram {
    stream: Generator,
    kv: Kv,
    phase: Option<usize>,
    thread: usize,
    skipped_reported: u64,
    /// Some inserts give keys a lifetime: run units through [`SpecProgram::run_expiring`].
    lifetimes: bool,
}

impl SpecProgram {
    /// Says how many operations of the phase that just ended found no live key.
    fn report_skips(&mut self) {
        let skipped = self.stream.skipped() - self.skipped_reported;
        if let (Some(p), true) = (self.phase, skipped > 0) {
            eprintln!(
                "kvmark: warning: phase {} thread {}: {skipped} operation(s) found no live key and did nothing \
                 (the thread's keys were all deleted and no insert was left)",
                self.stream.phase_name(p),
                self.thread
            );
        }
        self.skipped_reported = self.stream.skipped();
    }

    /// The unit loop of a spec with key lifetimes: it also schedules the delete of each
    /// key inserted with a lifetime, and takes the keys the harness deleted out of the
    /// live set before the next operation picks one. Kept apart from the plain loop so
    /// specs without lifetimes pay nothing for it.
    fn run_expiring(&mut self, n: u64) -> Result<u64, WorkloadError> {
        let mut done = 0;
        while done < n {
            // Expiries are issued only here, so the live set is exact for the unit.
            if !self.kv.begin_unit() {
                break;
            }
            if self.kv.has_expired() {
                for tag in self.kv.drain_expired() {
                    self.stream.expired(tag);
                }
            }
            match self.stream.next_op().map_err(WorkloadError::Runtime)? {
                Some(op) => op.execute(&mut self.kv),
                None => break,
            }
            if let Some((key, after, tag)) = self.stream.take_lifetime() {
                self.kv.expire_after_tagged(key, after, tag);
            }
            done += 1;
        }
        Ok(done)
    }
}

impl Program for SpecProgram {
    fn load(&mut self) -> Result<(), WorkloadError> {
        Ok(())
    }

    fn enter(&mut self, phase: usize) -> Result<(), WorkloadError> {
        self.report_skips();
        let section = self.stream.section();
        self.stream.enter(phase).map_err(WorkloadError::Runtime)?;
        if self.lifetimes && self.stream.section() != section {
            // A new key space with a new live set: expiries of the old section's
            // keys are still issued, but their tags would name the wrong keys.
            self.kv.forget_expiry_tags();
        }
        self.phase = Some(phase);
        Ok(())
    }

    fn run(&mut self, phase: usize, _first_iter: u64, n: u64) -> Result<u64, WorkloadError> {
        if self.phase != Some(phase) {
            self.enter(phase)?;
        }
        if self.lifetimes {
            return self.run_expiring(n);
        }
        let mut done = 0;
        while done < n {
            // The unit boundary: expiries and, when paced, the wait for the intended start.
            if !self.kv.begin_unit() {
                break;
            }
            match self.stream.next_op().map_err(WorkloadError::Runtime)? {
                Some(op) => op.execute(&mut self.kv),
                None => break,
            }
            done += 1;
        }
        Ok(done)
    }

    fn skip(&mut self, phase: usize, units: u64) -> Result<(), WorkloadError> {
        // Each call is one pass of the phase, as each step of the crew that ran it was.
        self.enter(phase)?;
        for _ in 0..units {
            // Only the stream's state matters: the live set, counters and RNG.
            if self.stream.next_op().map_err(WorkloadError::Runtime)?.is_none() {
                break;
            }
            if self.lifetimes {
                // A skipped insert's lifetime was scheduled by the crew that ran it.
                let _ = self.stream.take_lifetime();
            }
        }
        // Operations that found no live key belong to the crew that ran them.
        self.skipped_reported = self.stream.skipped();
        Ok(())
    }

    fn check_held(&mut self) -> Result<(), WorkloadError> {
        let keys = self.stream.live_sample(HELD_SAMPLE);
        let mut absent = 0;
        for key in &keys {
            match self.kv.get(key) {
                Ok(Some(_)) => {}
                Ok(None) => absent += 1,
                Err(e) => {
                    return Err(WorkloadError::Runtime(format!(
                        "--use-existing: reading the existing store's keys failed: {e}"
                    )));
                }
            }
        }
        if absent == 0 {
            return Ok(());
        }
        Err(WorkloadError::Runtime(format!(
            "--use-existing: the store does not hold the keys the spec's loading groups insert ({absent} of {} \
             sampled keys of thread {} are absent). With --use-existing kvmark skips the leading groups that only \
             insert and takes their keys as loaded, so the store must come from the same spec with the same --seed \
             and --threads (a run with --keep-data); or run without --use-existing",
            keys.len(),
            self.thread
        )))
    }

    fn kv(&mut self) -> &mut Kv {
        &mut self.kv
    }

    fn finish(mut self: Box<Self>) -> Kv {
        self.report_skips();
        self.kv
    }
}
