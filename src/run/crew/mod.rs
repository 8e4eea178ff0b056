//! A crew: the worker threads of one measurement, moving through its steps (the load,
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

mod lead;
mod monitor;
mod step;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::task::Waker;
use std::time::{Duration, SystemTime};

use quanta::Clock;

pub use self::monitor::{Both, Monitor, Quiet};
pub use self::step::{CrewEnd, CrewOutcome, Step, StepOutcome};
use super::bulk::steps::Slot;
pub use super::live::{Live, Mailbox, Piece};
use super::sampler::{Sampler, SamplerCtx};
use super::segment::Segment;
use crate::engine::{EngineInfo, Pipeline, Store, inflight};
use crate::kv::ValueSizes;
use crate::kv::pace::PaceSpec;
use crate::metrics::Recorder;
use crate::workload::{Params, SweepValue, Workload, WorkloadError};

/// What a crew runs and against what.
pub struct Crew<'a> {
    /// The workload.
    pub workload: &'a dyn Workload,
    /// The open store.
    pub store: &'a dyn Store,
    /// Its engine, whose key and value limits every verb checks.
    pub engine: &'static EngineInfo,
    /// ctx knobs.
    pub params: &'a Params,
    /// Number of threads.
    pub threads: usize,
    /// Connections per thread: each is a worker with its own program and session
    /// (see [`crate::engine::inflight`]); 1 runs each thread's worker on the thread.
    pub connections: usize,
    /// Requests in flight on each connection (`--pipeline`): each connection is a
    /// group of this many workers sharing one server connection (see
    /// [`crate::engine::pipeline`]); 1 gives each worker a connection of its own.
    pub pipeline: usize,
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
    /// The longest a load step may take (`--load-secs`); past it the crew fails.
    pub load_limit: Option<Duration>,
    /// Wait for the engine's background work before every timed step (`--settle`).
    pub settle: bool,
    /// The value sizes that inserts and updates of timed steps draw from (epochs),
    /// read at the start of each timed step.
    pub value_sizes: Option<&'a Slot<ValueSizes>>,
    /// `--verify`: the store's checker, which every worker's verbs report to.
    pub verify: Option<&'a Arc<crate::kv::verify::Checker>>,
    /// Which part of a scaled-out run this crew is: its workers are the segment's
    /// slice of the whole run's (see [`crate::run::segment`]).
    pub segment: Segment,
    /// Hold the first timed step for the segments' common start.
    pub start: Option<Start<'a>>,
    /// Requests per connection before each session reconnects (`--reconnect-every`;
    /// 0: never).
    pub reconnect_every: u64,
    /// Value-size classes the workers split their calls by (`--size-classes`).
    pub size_classes: Option<Arc<crate::metrics::SizeClasses>>,
}

/// When a scaled-out run's first timed step starts.
#[derive(Clone, Copy)]
pub enum Start<'a> {
    /// At this absolute time (`--start-at`).
    At(SystemTime),
    /// When every segment has reached the server ([`crate::run::meet`]).
    Meet(&'a crate::run::meet::Meeting<'a>),
}

impl Crew<'_> {
    /// The crew's workers: one per pipeline slot of each connection of each thread.
    /// Budgets, schedules and the workload's ctx.thread / ctx.threads are shared out
    /// over workers.
    pub fn workers(&self) -> usize {
        self.threads * self.per_thread()
    }

    /// Workers on each thread: its connections times their pipeline depth.
    fn per_thread(&self) -> usize {
        self.connections.max(1) * self.pipeline.max(1)
    }

    /// Workers of the whole run (every segment's): what shares are taken of.
    pub fn all_workers(&self) -> usize {
        self.segment.workers(self.workers())
    }

    /// The whole run's index of this crew's worker `t`.
    pub fn global(&self, t: usize) -> usize {
        self.segment.worker(t, self.workers())
    }
}

/// What the lead and every worker of one crew run share.
struct Ctx<'c, 'a> {
    crew: &'c Crew<'a>,
    steps: &'c [Step],
    gate: Gate,
    /// Steps with an index below this value must stop.
    stop_before: Arc<AtomicUsize>,
    live: Live,
    /// The step the warm-up applies to: the first timed one.
    warm_step: Option<usize>,
    /// Each worker's thread id once it started (0 before), for stopping Lua code that
    /// does not return ([`crate::workload::lua::halt`]).
    pthreads: Vec<AtomicU64>,
}

/// How a worker's units in one step divide around the warm-up: all units, those
/// before the cut (all when the step ended within the warm-up), the cut's raw time, and
/// whether the worker is still warming up.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Ran {
    /// All units.
    pub(super) units: u64,
    /// Units before the cut.
    pub(super) warm: u64,
    /// The cut's raw time.
    pub(super) cut: Option<u64>,
    /// Still warming up.
    pub(super) warming: bool,
}

/// What a worker tells the lead.
pub(super) enum Msg {
    Ready(Result<(), String>),
    StepDone {
        step: usize,
        thread: usize,
        end_raw: u64,
        ran: Ran,
        rec: Recorder,
        error: Option<WorkloadError>,
        /// The worker's kernel thread id and its time waiting for a CPU in the step:
        /// a worker may exit before the lead reads the process's threads.
        tid: u64,
        run_wait_ns: u64,
    },
}

/// Opens steps to the workers. `released` counts opened steps.
pub(super) struct Gate {
    state: Mutex<(usize, bool)>,
    cv: Condvar,
    /// Connections waiting for a step (see [`crate::engine::inflight`]): they cannot
    /// block their thread, which runs other connections, so they suspend and are woken.
    parked: Mutex<Vec<Waker>>,
}

impl Gate {
    pub(super) fn new() -> Self {
        Gate {
            state: Mutex::new((0, false)),
            cv: Condvar::new(),
            parked: Mutex::new(Vec::new()),
        }
    }

    pub(super) fn release(&self, steps: usize) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0 = steps;
        self.wake_all();
    }

    pub(super) fn cancel(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
        self.wake_all();
    }

    fn wake_all(&self) {
        self.cv.notify_all();
        let parked = std::mem::take(&mut *self.parked.lock().unwrap_or_else(|p| p.into_inner()));
        parked.into_iter().for_each(Waker::wake);
    }

    /// Waits until step `i` is open; false when the crew was cancelled instead.
    pub(super) fn wait(&self, i: usize) -> bool {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if g.1 {
                return false;
            }
            if g.0 > i {
                return true;
            }
            match inflight::current_waker() {
                Some(waker) => {
                    // Parked while the state lock is held, so a release cannot slip
                    // between the check above and the park.
                    self.parked.lock().unwrap_or_else(|p| p.into_inner()).push(waker);
                    drop(g);
                    inflight::suspend();
                    g = self.state.lock().unwrap_or_else(|p| p.into_inner());
                }
                None => g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }
}

/// Runs `steps` on the crew's threads and gathers their results.
pub fn run(crew: &Crew<'_>, steps: &[Step], monitor: &mut dyn Monitor) -> CrewOutcome {
    let n = crew.workers();
    let ctx = Ctx {
        crew,
        steps,
        gate: Gate::new(),
        stop_before: Arc::new(AtomicUsize::new(0)),
        live: Live::new(n, crew.sampler.as_ref().is_some_and(|c| c.interval.is_some())),
        warm_step: crew
            .warmup
            .and_then(|_| steps.iter().position(|s| matches!(s, Step::Run { .. }))),
        pthreads: (0..n).map(|_| AtomicU64::new(0)).collect(),
    };
    let sampler = crew
        .sampler
        .as_ref()
        .map(|sc| Sampler::new(sc, &ctx.live, crew.store, crew.clock));
    let (tx, rx) = mpsc::channel::<Msg>();

    std::thread::scope(|scope| {
        // Dropped before the joins below, or while unwinding from a panic here: either
        // way every thread is told to leave, so the scope's wait for them ends.
        let release = Release {
            ctx: &ctx,
            sampler: sampler.as_ref(),
            on_panic_only: false,
        };
        let mut threads = Vec::with_capacity(crew.threads + 1);
        let mut failed = None;
        let per_thread = crew.per_thread();
        let depth = crew.pipeline.max(1);
        for t in 0..crew.threads {
            let tx = tx.clone();
            let ctx = &ctx;
            let body = move || {
                // --pin: once per OS thread, before its workers open sessions.
                if let Err(e) = crate::run::pin::pin_worker(t) {
                    eprintln!("kvmark: warning: {e}; this thread runs unpinned");
                }
                if per_thread == 1 {
                    return worker::worker(ctx, t, tx, None);
                }
                // Workers t*W .. t*W+W-1 share this thread; with a pipeline, each run of
                // `depth` of them shares one connection (a group).
                let groups: Vec<_> = match depth {
                    1 => Vec::new(),
                    _ => (0..per_thread / depth).map(|_| Pipeline::new(depth)).collect(),
                };
                let run = inflight::run_connections(per_thread, |c| {
                    let group = groups.get(c / depth).map(|g| &**g);
                    worker::worker(ctx, t * per_thread + c, tx.clone(), group)
                });
                if let Err(e) = run {
                    // Every worker of this thread that did not start reports the
                    // failure, so the lead is not left waiting for them.
                    for _ in 0..per_thread {
                        let _ = tx.send(Msg::Ready(Err(format!(
                            "cannot start the connections of thread {t}: {e}"
                        ))));
                    }
                }
            };
            let spawned = std::thread::Builder::new()
                .name(format!("kvmark-w{t}"))
                .spawn_scoped(scope, body);
            match spawned {
                Ok(thread) => threads.push(thread),
                Err(e) => {
                    failed = Some(format!("cannot start worker thread {} of {}: {e}", t + 1, crew.threads));
                    break;
                }
            }
        }
        drop(tx);
        if failed.is_none()
            && let Some(s) = sampler.as_ref().filter(|s| s.ticks())
        {
            let (wake_tx, wake_rx) = mpsc::channel();
            s.set_waker(wake_tx);
            match std::thread::Builder::new()
                .name("kvmark-sampler".to_string())
                .spawn_scoped(scope, move || s.run(wake_rx))
            {
                Ok(thread) => threads.push(thread),
                Err(e) => failed = Some(format!("cannot start the sampler thread: {e}")),
            }
        }
        let outcome = match failed {
            None => lead::lead(&ctx, &rx, monitor, sampler.as_ref()),
            Some(why) => CrewOutcome {
                steps: Vec::new(),
                end: CrewEnd::Failed(why),
            },
        };
        drop(release);
        // Joined one by one, not left to the scope: the scope returns once each
        // thread's closure is done, before the thread has exited and run its
        // thread-local destructors. LMDB's destructor frees the thread's reader slot
        // in the environment's mapped lock file, so a store closed before that
        // (right after this returns) made it write to an unmapped page (a segfault
        // seen in about 1 of 10 runs of tests/engines.rs).
        for thread in threads {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
        outcome
    })
}

/// Tells every thread of a crew to leave when dropped: cancels the gate (so workers
/// waiting for a step return), stops every step (so running ones end at their next
/// chunk) and stops the sampler. The lead holds one around its work and each worker
/// one that acts only while unwinding: a panic on any thread then ends the crew, where
/// it used to leave the others waiting at the gate and the scope waiting for them
/// forever.
struct Release<'c, 'a> {
    ctx: &'c Ctx<'c, 'a>,
    sampler: Option<&'c Sampler<'c>>,
    on_panic_only: bool,
}

impl Drop for Release<'_, '_> {
    fn drop(&mut self) {
        if self.on_panic_only && !std::thread::panicking() {
            return;
        }
        if let Some(s) = self.sampler {
            s.stop();
        }
        self.ctx.stop_before.store(usize::MAX, Ordering::Relaxed);
        self.ctx.gate.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    use super::{Crew, Monitor, Step, run};
    use crate::engine::{EngineOptions, OpenRequest, skiplist};
    use crate::workload::{self, Budget, Params};

    /// A monitor that panics, as a bug in a progress line would: before the workers
    /// are let into the step (they wait at the gate), or during it (they are running a
    /// step of an hour).
    enum Panics {
        BeforeTheStep,
        DuringTheStep,
    }
    impl Monitor for Panics {
        fn step_started(&mut self, _step: &Step, _live: &super::Live) {
            if let Panics::BeforeTheStep = self {
                panic!("a monitor's bug");
            }
        }
        fn tick(&mut self, _step: &Step, _elapsed: Duration, _live: &super::Live) {
            panic!("a monitor's bug");
        }
    }

    /// Runs one step of an hour of the null workload on three threads with `monitor`
    /// and returns whether the crew passed a panic on, or fails if it hangs.
    fn crew_panics(mut monitor: Panics) -> bool {
        let (done_tx, done_rx) = mpsc::channel();
        // On its own thread, so a hang fails the test instead of stalling it.
        std::thread::spawn(move || {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/null.lua");
            let wl = workload::open(&path).unwrap();
            let opts = EngineOptions::new();
            let store = (skiplist::INFO.open)(&OpenRequest::memory(&opts)).unwrap();
            let params = Params {
                users: 10,
                items: 10,
                ops: 0,
                secs: 3600.0,
                seed: 1,
            };
            let clock = quanta::Clock::new();
            let abort = Arc::new(AtomicBool::new(false));
            let crew = Crew {
                workload: wl.as_ref(),
                store: store.as_ref(),
                engine: &skiplist::INFO,
                params: &params,
                threads: 3,
                connections: 1,
                pipeline: 1,
                batch: 1,
                sweep: None,
                clock: &clock,
                abort: &abort,
                sampler: None,
                pace: None,
                warmup: None,
                load_limit: None,
                settle: false,
                value_sizes: None,
                verify: None,
                segment: super::Segment::WHOLE,
                start: None,
                reconnect_every: 0,
                size_classes: None,
            };
            let steps = [Step::Run {
                phase: 0,
                name: "run".to_string(),
                budget: Budget::Secs(3600.0),
                pace: None,
            }];
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&crew, &steps, &mut monitor)));
            let _ = done_tx.send(caught.is_err());
        });
        done_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the crew hung after its main thread panicked")
    }

    #[test]
    fn a_panic_on_the_main_thread_releases_waiting_and_running_workers() {
        assert!(crew_panics(Panics::BeforeTheStep), "the panic was not passed on");
        assert!(crew_panics(Panics::DuringTheStep), "the panic was not passed on");
    }
}
