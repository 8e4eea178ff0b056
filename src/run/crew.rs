//! A crew: the worker threads of one measurement, moving through its steps (the seed,
//! then each timed phase) in lockstep.
//!
//! Every thread builds its program (its Lua state) before the first step; a step
//! starts on all threads at once when the main thread opens the gate, and its wall time
//! runs from that moment to the last thread's end. Threads never share anything per
//! operation: each owns its session, program and recorder, and publishes a relaxed
//! per-thread unit counter once per chunk for progress and sampling.
//!
//! With a sampler (see [`super::sampler`]), a worker also checks a relaxed sample
//! epoch once per chunk; when it changed, the worker leaves its interval recorder in
//! its mailbox and continues with an emptied spare. That lock is taken once per
//! sample interval per thread, never per operation.
//!
//! With a [`PaceSpec`] each worker paces its own units ([`crate::kv::pace`]). A warm-up
//! ends when the main thread clears [`Live::warming`]: each worker then drops what it
//! recorded at its next chunk boundary, and the step's time starts at the first cut.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use quanta::Clock;

use crate::engine::Store;
use crate::metrics::Recorder;
use crate::workload::{Budget, Params, Program, SweepValue, ThreadCtx, Workload, WorkloadError, share};

use super::epochs::steps::{self, ExtendWork, FillSource, Slot};
pub use super::live::{Live, Mailbox, Piece};
use super::sampler::{Sampler, SamplerCtx, ThreadEnd};
use crate::kv::Kv;
use crate::kv::ValueSizes;
use crate::kv::pace::{PaceSpec, StopSignal};

/// Chunks aim to take between these many nanoseconds: long enough that per-chunk
/// costs (two clock reads, a counter store, a Rust-to-Lua call) vanish, short enough
/// that a time budget or Ctrl-C stops workers within about a millisecond.
const CHUNK_MIN_NS: u64 = 100_000;
const CHUNK_MAX_NS: u64 = 1_000_000;
const CHUNK_CAP: u64 = 1 << 16;

/// How often the main thread wakes to check deadlines and Ctrl-C while waiting.
const POLL: Duration = Duration::from_millis(20);

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
    },
}

impl Step {
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

/// Observes a crew from the main thread: progress lines, samplers.
pub trait Monitor {
    /// Step `index` is next: the last chance to prepare what it uses (while every
    /// worker waits). An error stops the crew with that message.
    fn before_step(&mut self, _index: usize, _step: &Step) -> Result<(), String> {
        Ok(())
    }
    /// A step is about to start on every thread.
    fn step_started(&mut self, _step: &Step, _live: &Live) {}
    /// Called about once a second while a step runs.
    fn tick(&mut self, _step: &Step, _elapsed: Duration, _live: &Live) {}
    /// A step ended on every thread, with what it produced.
    fn step_finished(&mut self, _step: &Step, _elapsed: Duration, _outcome: &StepOutcome) {}
}

/// A monitor that does nothing.
pub struct Quiet;
impl Monitor for Quiet {}

/// Two monitors observing one crew, the first told first (a failure of the first's
/// `before_step` is the crew's).
pub struct Both<'a>(pub &'a mut dyn Monitor, pub &'a mut dyn Monitor);

impl Monitor for Both<'_> {
    fn before_step(&mut self, index: usize, step: &Step) -> Result<(), String> {
        self.0.before_step(index, step)?;
        self.1.before_step(index, step)
    }
    fn step_started(&mut self, step: &Step, live: &Live) {
        self.0.step_started(step, live);
        self.1.step_started(step, live);
    }
    fn tick(&mut self, step: &Step, elapsed: Duration, live: &Live) {
        self.0.tick(step, elapsed, live);
        self.1.tick(step, elapsed, live);
    }
    fn step_finished(&mut self, step: &Step, elapsed: Duration, outcome: &StepOutcome) {
        self.0.step_finished(step, elapsed, outcome);
        self.1.step_finished(step, elapsed, outcome);
    }
}

/// What a crew runs and against what.
pub struct Crew<'a> {
    /// The workload.
    pub workload: &'a dyn Workload,
    /// The open store.
    pub store: &'a dyn Store,
    /// ctx knobs.
    pub params: &'a Params,
    /// Number of threads.
    pub threads: usize,
    /// Batch size for ctx.batch.
    pub batch: usize,
    /// The workload sweep value for ctx.
    pub sweep: Option<(String, SweepValue)>,
    /// Shared calibrated clock.
    pub clock: &'a Clock,
    /// Set by Ctrl-C.
    pub abort: &'a Arc<AtomicBool>,
    /// The timeline sampler's settings, when this measurement is sampled.
    pub sampler: Option<SamplerCtx<'a>>,
    /// Open loop: the target rate and arrivals every timed step is paced on.
    pub pace: Option<PaceSpec>,
    /// Excluded from the figures: this long at the start of the first timed step.
    pub warmup: Option<Duration>,
    /// Wait for the engine's background work before every timed step (`--settle`).
    pub settle: bool,
    /// The value sizes that inserts and updates of timed steps draw from (epochs),
    /// read at the start of each timed step.
    pub value_sizes: Option<&'a Slot<ValueSizes>>,
}

/// How a worker's units in one step divide around the warm-up: all units, those
/// before the cut (all when the step ended within the warm-up), the cut's raw time, and
/// whether the worker is still warming up.
#[derive(Debug, Clone, Copy, Default)]
struct Ran {
    units: u64,
    warm: u64,
    cut: Option<u64>,
    warming: bool,
}

enum Msg {
    Ready(Result<(), String>),
    StepDone {
        step: usize,
        thread: usize,
        end_raw: u64,
        ran: Ran,
        rec: Recorder,
        error: Option<WorkloadError>,
    },
}

/// Opens steps to the workers. `released` counts opened steps.
struct Gate {
    state: Mutex<(usize, bool)>,
    cv: Condvar,
}

impl Gate {
    fn new() -> Self {
        Gate {
            state: Mutex::new((0, false)),
            cv: Condvar::new(),
        }
    }

    fn release(&self, steps: usize) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0 = steps;
        self.cv.notify_all();
    }

    fn cancel(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.cv.notify_all();
    }

    /// Waits until step `i` is open; false when the crew was cancelled instead.
    fn wait(&self, i: usize) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if g.1 {
                return false;
            }
            if g.0 > i {
                return true;
            }
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// The step the warm-up applies to: the first timed one.
fn warm_step(crew: &Crew<'_>, steps: &[Step]) -> Option<usize> {
    crew.warmup?;
    steps.iter().position(|s| matches!(s, Step::Run { .. }))
}

/// Runs `steps` on the crew's threads and gathers their results.
pub fn run(crew: &Crew<'_>, steps: &[Step], monitor: &mut dyn Monitor) -> CrewOutcome {
    let n = crew.threads;
    let gate = Gate::new();
    let stop_before = Arc::new(AtomicUsize::new(0)); // steps with index < this value must stop
    let live = Live::new(n, crew.sampler.as_ref().is_some_and(|c| c.interval.is_some()));
    let sampler = crew
        .sampler
        .as_ref()
        .map(|ctx| Sampler::new(ctx, &live, crew.store, crew.clock));
    let (tx, rx) = mpsc::channel::<Msg>();

    std::thread::scope(|scope| {
        for t in 0..n {
            let tx = tx.clone();
            let (gate, stop_before, live) = (&gate, &stop_before, &live);
            std::thread::Builder::new()
                .name(format!("kvmark-w{t}"))
                .spawn_scoped(scope, move || worker(crew, steps, t, tx, gate, stop_before, live))
                .expect("spawn a worker thread");
        }
        drop(tx);
        if let Some(s) = sampler.as_ref().filter(|s| s.ticks()) {
            let (wake_tx, wake_rx) = mpsc::channel();
            s.set_waker(wake_tx);
            std::thread::Builder::new()
                .name("kvmark-sampler".to_string())
                .spawn_scoped(scope, move || s.run(wake_rx))
                .expect("spawn the sampler thread");
        }
        let outcome = lead(crew, steps, &rx, &gate, &stop_before, &live, monitor, sampler.as_ref());
        if let Some(s) = &sampler {
            s.stop();
        }
        gate.cancel();
        outcome
    })
}

/// The main thread's side: starts steps together, enforces time budgets and Ctrl-C,
/// and merges what workers send back (and, when sampled, what they handed over).
#[allow(clippy::too_many_arguments)]
fn lead(
    crew: &Crew<'_>,
    steps: &[Step],
    rx: &mpsc::Receiver<Msg>,
    gate: &Gate,
    stop_before: &AtomicUsize,
    live: &Live,
    monitor: &mut dyn Monitor,
    sampler: Option<&Sampler<'_>>,
) -> CrewOutcome {
    let warm_step = warm_step(crew, steps);
    let n = crew.threads;
    let mut out = CrewOutcome {
        steps: Vec::new(),
        end: CrewEnd::Done,
    };

    // Every thread must have its program ready before anything is timed.
    let mut failure = None;
    for _ in 0..n {
        match rx.recv() {
            Ok(Msg::Ready(Ok(()))) => {}
            Ok(Msg::Ready(Err(e))) => failure = failure.or(Some(e)),
            Ok(Msg::StepDone { .. }) => unreachable!("no step was released"),
            Err(_) => failure = failure.or(Some("a worker thread exited unexpectedly".to_string())),
        }
    }
    if let Some(e) = failure {
        out.end = if crew.abort.load(Ordering::Relaxed) {
            CrewEnd::Interrupted
        } else {
            CrewEnd::Failed(e)
        };
        return out;
    }

    for (i, step) in steps.iter().enumerate() {
        if crew.abort.load(Ordering::Relaxed) {
            out.end = CrewEnd::Interrupted;
            break;
        }
        // Outside every step's time: the wait belongs to no phase.
        if crew.settle
            && matches!(step, Step::Run { .. })
            && let Err(e) = crew.store.settle()
        {
            out.end = CrewEnd::Failed(format!(
                "settling the store before phase {}: {}",
                step.name(),
                e.message
            ));
            break;
        }
        if let Err(e) = monitor.before_step(i, step) {
            out.end = if crew.abort.load(Ordering::Relaxed) {
                CrewEnd::Interrupted
            } else {
                CrewEnd::Failed(e)
            };
            break;
        }
        live.reset();
        if let Some(s) = sampler {
            s.prepare_step();
        }
        let warm_for = crew.warmup.filter(|_| warm_step == Some(i));
        live.warming.store(warm_for.is_some(), Ordering::Relaxed);
        monitor.step_started(step, live);
        let began = Instant::now();
        let warm_until = warm_for.map(|w| began + w);
        let deadline = match step {
            Step::Run {
                budget: Budget::Secs(s),
                ..
            } => Some(began + Duration::from_secs_f64(*s)),
            _ => None,
        };
        let start_raw = crew.clock.raw();
        gate.release(i + 1);
        if let Some(s) = sampler {
            s.step_started(step, start_raw, began);
        }
        let mut ends: Vec<Option<ThreadEnd>> = vec![None; n];

        let mut merged = StepOutcome {
            wall_ns: 0,
            units: 0,
            warmup_units: 0,
            thread_units: vec![0; n],
            rec: Recorder::new(),
        };
        let mut end_raw = start_raw;
        let mut first_cut: Option<u64> = None;
        let mut finished = 0;
        let mut next_tick = began + Duration::from_secs(1);
        while finished < n {
            let now = Instant::now();
            let mut wake = (now + POLL).min(next_tick);
            if let Some(d) = deadline {
                wake = wake.min(d);
            }
            if let Some(w) = warm_until.filter(|_| live.warming.load(Ordering::Relaxed)) {
                wake = wake.min(w);
            }
            match rx.recv_timeout(wake.saturating_duration_since(now)) {
                Ok(Msg::StepDone {
                    step: s,
                    thread,
                    end_raw: end,
                    ran,
                    rec,
                    error,
                }) => {
                    debug_assert_eq!(s, i);
                    finished += 1;
                    end_raw = end_raw.max(end);
                    ends[thread] = Some(ThreadEnd {
                        end_raw: end,
                        // Warm-up included: the sampler's rates count every unit run.
                        units: ran.units,
                        prim_ops: rec.prim_ops(),
                    });
                    if let Some(cut) = ran.cut {
                        first_cut = Some(first_cut.map_or(cut, |c: u64| c.min(cut)));
                    }
                    merged.units += ran.units - ran.warm;
                    merged.warmup_units += ran.warm;
                    merged.thread_units[thread] = ran.units - ran.warm;
                    merged.rec.merge(&rec);
                    if let Some(e) = error {
                        // One failure stops the others; the first message wins.
                        stop_before.store(i + 1, Ordering::Relaxed);
                        if out.end == CrewEnd::Done {
                            out.end = if crew.abort.load(Ordering::Relaxed) {
                                CrewEnd::Interrupted
                            } else {
                                CrewEnd::Failed(e.to_string())
                            };
                        }
                    }
                }
                Ok(Msg::Ready(_)) => unreachable!("ready is sent once"),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    out.end = CrewEnd::Failed("a worker thread exited unexpectedly".to_string());
                    break;
                }
            }
            let now = Instant::now();
            if warm_until.is_some_and(|w| now >= w) {
                live.warming.store(false, Ordering::Relaxed);
            }
            if deadline.is_some_and(|d| now >= d) {
                stop_before.store(i + 1, Ordering::Relaxed);
            }
            if crew.abort.load(Ordering::Relaxed) {
                stop_before.store(i + 1, Ordering::Relaxed);
                if out.end == CrewEnd::Done {
                    out.end = CrewEnd::Interrupted;
                }
            }
            if now >= next_tick && finished < n {
                monitor.tick(step, now - began, live);
                next_tick += Duration::from_secs(1);
            }
        }
        // With a warm-up, the measured time starts at the earliest cut (none: the
        // whole step was warm-up and nothing was measured).
        let measured_from = match warm_until {
            Some(_) => first_cut.unwrap_or(end_raw),
            None => start_raw,
        };
        merged.wall_ns = crew.clock.delta_as_nanos(measured_from, end_raw);
        if let Some(s) = sampler {
            // Everything workers handed over mid-step belongs to the step too (the
            // sampler keeps back what was handed over during a warm-up).
            let handed = s.end_step(&merged.rec, &ends, end_raw);
            merged.rec.merge(&handed);
        }
        monitor.step_finished(step, began.elapsed(), &merged);
        out.steps.push(merged);
        if out.end != CrewEnd::Done {
            break;
        }
    }
    out
}

/// One worker thread: builds its program, then runs each released step.
fn worker(
    crew: &Crew<'_>,
    steps: &[Step],
    t: usize,
    tx: mpsc::Sender<Msg>,
    gate: &Gate,
    stop_before: &Arc<AtomicUsize>,
    live: &Live,
) {
    let paced = crew.pace.is_some() || steps.iter().any(|s| matches!(s, Step::Run { pace: Some(_), .. }));
    if paced && let Err(e) = crate::clock::precise_sleeps() {
        eprintln!("kvmark: warning: cannot set timer slack ({e}); paced waits may overshoot by about 50 us");
    }
    let ready = crew
        .store
        .session()
        .map_err(|e| format!("cannot open a session on the store: {e}"))
        .and_then(|session| {
            let kv = Kv::new(session, crew.clock.clone(), Arc::clone(crew.abort));
            let ctx = ThreadCtx {
                params: crew.params.clone(),
                batch: crew.batch,
                thread: t,
                threads: crew.threads,
                sweep: crew.sweep.clone(),
            };
            crew.workload.program(&ctx, kv).map_err(|e| e.to_string())
        });
    let mut program = match ready {
        Ok(p) => {
            let _ = tx.send(Msg::Ready(Ok(())));
            p
        }
        Err(e) => {
            let _ = tx.send(Msg::Ready(Err(e)));
            return;
        }
    };

    let warm_step = warm_step(crew, steps);
    let mut iter = 0u64;
    for (i, step) in steps.iter().enumerate() {
        if !gate.wait(i) {
            break;
        }
        let mut ran = Ran {
            warming: warm_step == Some(i),
            ..Ran::default()
        };
        let result = match step {
            Step::Load => {
                if live.sampled {
                    program.kv().publish_writes(Some(Arc::clone(&live.keys[t])));
                }
                let r = program.load();
                program.kv().publish_writes(None);
                r
            }
            Step::Run {
                phase, budget, pace, ..
            } => {
                let quota = match budget {
                    Budget::Ops(total) => Some(share(*total, crew.threads, t)),
                    Budget::Secs(_) => None,
                };
                if let Some(spec) = pace.as_ref().or(crew.pace.as_ref()) {
                    let stop = StopSignal::new(Arc::clone(stop_before), i);
                    program.kv().start_pacing(spec, crew.threads, t, stop);
                }
                if let Some(slot) = crew.value_sizes {
                    program
                        .kv()
                        .set_value_sizes(slot.get(), crew.params.seed ^ ((i as u64) << 32));
                }
                program.enter(*phase).and_then(|()| {
                    run_units(
                        crew,
                        program.as_mut(),
                        *phase,
                        i,
                        quota,
                        &mut iter,
                        stop_before,
                        live,
                        t,
                        &mut ran,
                    )
                })
            }
            Step::Extend { work, .. } => {
                let stop = || stop_before.load(Ordering::Relaxed) > i || crew.abort.load(Ordering::Relaxed);
                match work.get() {
                    Some(work) => {
                        let r = steps::extend(program.kv(), &work, t, live, &stop);
                        ran.units = r.done;
                        Ok(())
                    }
                    None => Err(WorkloadError::Runtime("the extend phase was not planned".to_string())),
                }
            }
            Step::Fill { source, .. } => {
                let stop = || stop_before.load(Ordering::Relaxed) > i || crew.abort.load(Ordering::Relaxed);
                let r = steps::fill(program.kv(), source, t, crew.threads, live, &stop);
                ran.units = r.done;
                r.error.map_or(Ok(()), |e| Err(WorkloadError::Runtime(e)))
            }
            Step::Skip { phases } => phases
                .iter()
                .try_for_each(|(phase, units)| program.skip(*phase, units.get(t).copied().unwrap_or(0))),
        };
        let end_raw = crew.clock.raw();
        let mut rec = program.kv().take_recorder();
        program.kv().end_pacing();
        if ran.warming {
            // The step ended within the warm-up: everything it ran is excluded.
            ran.warm = ran.units;
            rec = Recorder::new();
        }
        let error = result.err();
        let failed = error.is_some();
        if tx
            .send(Msg::StepDone {
                step: i,
                thread: t,
                end_raw,
                ran,
                rec,
                error,
            })
            .is_err()
            || failed
        {
            break;
        }
    }
    // Closing the Lua state happens here, outside any timed step.
    drop(program.finish());
}

/// Runs units in adaptive chunks until the quota is done, the phase is exhausted, or
/// the step is stopped, counting them into `ran` (and cutting the warm-up there).
/// Returns the error that ended it, if any.
#[allow(clippy::too_many_arguments)]
fn run_units(
    crew: &Crew<'_>,
    program: &mut dyn Program,
    phase: usize,
    step: usize,
    quota: Option<u64>,
    iter: &mut u64,
    stop_before: &AtomicUsize,
    live: &Live,
    t: usize,
    ran: &mut Ran,
) -> Result<(), WorkloadError> {
    let clock = crew.clock;
    let counter = &live.units[t];
    let mut done = 0u64;
    let mut chunk = 1u64;
    // Per chunk, one relaxed load tells whether the sampler wants this interval.
    let mut epoch = live.epoch.load(Ordering::Relaxed);
    let mut handed = 0u64;
    loop {
        if stop_before.load(Ordering::Relaxed) > step || crew.abort.load(Ordering::Relaxed) {
            break;
        }
        let want = match quota {
            Some(q) if done >= q => break,
            Some(q) => chunk.min(q - done),
            None => chunk,
        };
        let t0 = clock.raw();
        let result = program.run(phase, *iter + 1, want);
        let t1 = clock.raw();
        let got = match result {
            Ok(got) => got,
            Err(e) => {
                ran.units = done;
                return Err(e);
            }
        };
        let took = clock.delta_as_nanos(t0, t1);
        done += got;
        *iter += got;
        ran.units = done;
        counter.store(done, Ordering::Relaxed);
        if ran.warming && !live.warming.load(Ordering::Relaxed) {
            // The warm-up is over: drop what it recorded and count afresh from here.
            ran.warming = false;
            ran.warm = done;
            ran.cut = Some(t1);
            drop(program.kv().take_recorder());
        }
        let now_epoch = live.epoch.load(Ordering::Relaxed);
        if now_epoch != epoch {
            // After any warm-up cut above, so a piece is marked warm-up only when
            // everything in it was recorded during the warm-up.
            epoch = now_epoch;
            live.hand_over(t, program.kv(), done - handed, t1, ran.warming);
            handed = done;
        }
        if got < want {
            break;
        }
        if took < CHUNK_MIN_NS {
            chunk = (chunk * 2).min(CHUNK_CAP);
        } else if took > CHUNK_MAX_NS {
            chunk = (chunk / 2).max(1);
        }
    }
    Ok(())
}
