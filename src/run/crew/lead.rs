//! The main thread's side of a crew: it opens each step to every worker at once,
//! enforces time budgets, warm-ups and Ctrl-C, and merges what the workers send back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use super::{CrewEnd, CrewOutcome, Ctx, Monitor, Msg, Step, StepOutcome};
use crate::metrics::Recorder;
use crate::run::sampler::{Sampler, ThreadEnd};
use crate::run::segment::unix_ns;
use crate::workload::Budget;
use crate::workload::lua::halt;

/// How often the main thread wakes to check deadlines and Ctrl-C while waiting.
const POLL: Duration = Duration::from_millis(20);

/// The main thread's side: starts steps together, enforces time budgets and Ctrl-C,
/// and merges what workers send back (and, when sampled, what they handed over).
pub(super) fn lead(
    ctx: &Ctx<'_, '_>,
    rx: &mpsc::Receiver<Msg>,
    monitor: &mut dyn Monitor,
    sampler: Option<&Sampler<'_>>,
) -> CrewOutcome {
    let (crew, steps, gate, live) = (ctx.crew, ctx.steps, &ctx.gate, &ctx.live);
    let stop_before: &AtomicUsize = &ctx.stop_before;
    let warm_step = ctx.warm_step;
    let n = crew.workers();
    let mut out = CrewOutcome {
        steps: Vec::new(),
        end: CrewEnd::Done,
    };

    // Every thread must have its program ready before anything is timed (a file's
    // top level runs then, and Ctrl-C must stop it too).
    let mut failure = None;
    let mut nudger = Nudger::default();
    let mut ready = 0;
    while ready < n {
        match rx.recv_timeout(POLL) {
            Ok(Msg::Ready(Ok(()))) => ready += 1,
            Ok(Msg::Ready(Err(e))) => {
                ready += 1;
                failure = failure.or(Some(e));
            }
            Ok(Msg::StepDone { .. }) => unreachable!("no step was released"),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                failure = failure.or(Some("a worker thread exited unexpectedly".to_string()));
                break;
            }
        }
        nudger.check(crew.abort.load(Ordering::Relaxed), ctx, |_| true);
    }
    if let Some(e) = failure {
        out.end = if crew.abort.load(Ordering::Relaxed) {
            CrewEnd::Interrupted
        } else {
            CrewEnd::Failed(e)
        };
        return out;
    }

    let first_run = steps.iter().position(|s| matches!(s, Step::Run { .. }));
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
        if let Some(start) = crew.start.filter(|_| first_run == Some(i)) {
            let at = match start {
                super::Start::At(at) => Ok(at),
                super::Start::Meet(meeting) => meeting.meet(crew.abort),
            };
            let started = match at {
                Ok(at) => wait_until(at, crew).then_some(()).ok_or(CrewEnd::Interrupted),
                Err(_) if crew.abort.load(Ordering::Relaxed) => Err(CrewEnd::Interrupted),
                Err(e) => Err(CrewEnd::Failed(e)),
            };
            if let Err(end) = started {
                out.end = end;
                break;
            }
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
        // A load that never returns (an endless loop in load()) fails the point at
        // --load-secs instead of hanging the run.
        let load_deadline = crew
            .load_limit
            .filter(|_| matches!(step, Step::Load))
            .map(|l| began + l);
        let start_raw = crew.clock.raw();
        let start_unix_ns = unix_ns(SystemTime::now());
        let (cpu_before, wait_before) = (
            crate::probe::live::process_cpu_ns(),
            crate::probe::live::run_wait_by_thread(),
        );
        // Each worker thread's run-queue wait over the step, by thread id. Connections
        // share their thread, so each of them reports that thread's wait: take the
        // widest report per thread (the last to finish), never their sum, which
        // counted one thread's wait once per connection (24 cores' worth of waiting
        // from 3 threads at 2 x 32 connections).
        let mut worker_waits: Vec<(u64, u64)> = Vec::with_capacity(crew.threads);
        gate.release(i + 1);
        if let Some(s) = sampler {
            s.step_started(step.info(), start_raw, began);
        }
        let mut ends: Vec<Option<ThreadEnd>> = vec![None; n];

        let mut merged = StepOutcome {
            start_unix_ns,
            wall_ns: 0,
            units: 0,
            warmup_units: 0,
            thread_units: vec![0; n],
            rec: Recorder::new(),
            client_cpu: Default::default(),
            trend: Vec::new(),
        };
        let mut end_raw = start_raw;
        let mut first_cut: Option<u64> = None;
        let mut finished = 0;
        let mut next_tick = began + Duration::from_secs(1);
        let mut nudger = Nudger::default();
        while finished < n {
            let now = Instant::now();
            let mut wake = (now + POLL).min(next_tick);
            if let Some(d) = deadline.or(load_deadline) {
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
                    tid,
                    run_wait_ns,
                }) => {
                    match worker_waits.iter_mut().find(|(t, _)| *t == tid) {
                        Some((_, w)) => *w = (*w).max(run_wait_ns),
                        None => worker_waits.push((tid, run_wait_ns)),
                    }
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
            if load_deadline.is_some_and(|d| now >= d) && stop_before.load(Ordering::Relaxed) <= i {
                stop_before.store(i + 1, Ordering::Relaxed);
                if out.end == CrewEnd::Done {
                    out.end = CrewEnd::Failed(format!(
                        "load() did not return within --load-secs {} (an endless loop?); give a larger \
                         --load-secs, or 0 for no limit, if the load needs longer",
                        crew.load_limit.unwrap_or_default().as_secs_f64()
                    ));
                }
            }
            if crew.abort.load(Ordering::Relaxed) {
                stop_before.store(i + 1, Ordering::Relaxed);
                if out.end == CrewEnd::Done {
                    out.end = CrewEnd::Interrupted;
                }
            }
            nudger.check(stop_before.load(Ordering::Relaxed) > i, ctx, |t| ends[t].is_none());
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
        let worker_tids: Vec<u64> = worker_waits.iter().map(|(t, _)| *t).collect();
        merged.client_cpu = crate::result::ClientCpu {
            cpu_ns: crate::probe::live::process_cpu_ns().saturating_sub(cpu_before),
            wait_ns: worker_waits.iter().map(|(_, w)| w).sum::<u64>()
                + crate::probe::live::run_wait_between(
                    &wait_before,
                    &crate::probe::live::run_wait_by_thread(),
                    &worker_tids,
                ),
            wall_ns: began.elapsed().as_nanos() as u64,
        };
        // A timed phase in which no unit finished, and whose workers had to be
        // interrupted, has no figure to give: run() never returned within the phase's
        // time (an endless loop), or a unit takes longer than the phase. A paced phase
        // too short for any arrival is not this.
        if let (Some(secs), true) = (step.info().secs, out.end == CrewEnd::Done)
            && merged.units + merged.warmup_units == 0
            && nudger.nudged
        {
            out.end = CrewEnd::Failed(format!(
                "phase {}: no unit finished in its {secs} s: a unit never returned (an endless loop in run()?) or \
                 takes longer than the phase (give a longer --secs)",
                step.name()
            ));
        }
        merged.start_unix_ns = start_unix_ns + crew.clock.delta_as_nanos(start_raw, measured_from);
        if let Some(s) = sampler {
            // Everything workers handed over mid-step belongs to the step too (the
            // sampler keeps back what was handed over during a warm-up).
            let handed = s.end_step(&merged.rec, &ends, end_raw);
            merged.rec.merge(&handed);
            merged.trend = s.take_trend();
        }
        monitor.step_finished(step, began.elapsed(), &merged);
        out.steps.push(merged);
        if out.end != CrewEnd::Done {
            break;
        }
    }
    out
}

/// Waits for `--start-at` (every segment's common start), waking every [`POLL`] for
/// Ctrl-C; false when interrupted. A start already passed (the load took longer) is
/// a warning: the segments' figures then cover different times, which merge reports.
fn wait_until(at: SystemTime, crew: &super::Crew<'_>) -> bool {
    match at.duration_since(SystemTime::now()) {
        Err(late) => {
            eprintln!(
                "kvmark: warning: segment {} reached the common start {:.3} s late (its load took longer); \
                 starting now",
                crew.segment.label(),
                late.duration().as_secs_f64()
            );
            true
        }
        Ok(_) => loop {
            if crew.abort.load(Ordering::Relaxed) {
                return false;
            }
            match at.duration_since(SystemTime::now()) {
                Ok(left) => std::thread::sleep(left.min(POLL)),
                Err(_) => return true,
            }
        },
    }
}

/// How long a worker may go on running after its step was told to stop before its Lua
/// code is interrupted: far past the chunk length (at most about a millisecond) after
/// which a worker checks its stop by itself, so only code that never returns is cut.
const GRACE: Duration = Duration::from_millis(100);

/// Interrupts the Lua code of workers still running a step [`GRACE`] after it was
/// told to stop, and again every [`GRACE`] (a nudge that arrives while the thread
/// runs no Lua does nothing).
#[derive(Default)]
struct Nudger {
    since: Option<Instant>,
    /// Whether any worker had to be interrupted.
    nudged: bool,
}

impl Nudger {
    /// Called about every [`POLL`]: `stopping` says whether the step must stop,
    /// `running(t)` whether thread t still runs it.
    fn check(&mut self, stopping: bool, ctx: &Ctx<'_, '_>, running: impl Fn(usize) -> bool) {
        if !stopping {
            return;
        }
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        if now.duration_since(since) < GRACE {
            return;
        }
        for (t, pthread) in ctx.pthreads.iter().enumerate() {
            let pthread = pthread.load(Ordering::Relaxed);
            if pthread != 0 && running(t) {
                halt::nudge(pthread as libc::pthread_t);
                self.nudged = true;
            }
        }
        self.since = Some(now);
    }
}
