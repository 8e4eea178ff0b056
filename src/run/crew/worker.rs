//! One worker thread of a crew: it builds its program, then runs each step the lead
//! opens, its units in adaptive chunks. Nothing here is shared per operation: per
//! chunk a worker reads two clock values, stores its relaxed unit counter and checks
//! the sample epoch.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use super::{Ctx, Msg, Ran, Release, Step};
use crate::engine::{Pipeline, inflight};
use crate::kv::Kv;
use crate::kv::pace::StopSignal;
use crate::metrics::Recorder;
use crate::run::bulk::steps;
use crate::workload::lua::halt;
use crate::workload::{Budget, Program, ThreadCtx, WorkloadError};

/// Chunks aim to take between these many nanoseconds: long enough that per-chunk
/// costs (two clock reads, a counter store, a Rust-to-Lua call) vanish, short enough
/// that a time budget or Ctrl-C stops workers within about a millisecond.
const CHUNK_MIN_NS: u64 = 100_000;
const CHUNK_MAX_NS: u64 = 1_000_000;
const CHUNK_CAP: u64 = 1 << 16;

/// One worker's place in its crew: the crew's context, its thread index, and the
/// units it ran so far over every step (the numbering programs see).
struct Seat<'c, 'a> {
    ctx: &'c Ctx<'c, 'a>,
    t: usize,
    iter: u64,
}

/// One worker: builds its program, then runs each released step. A worker of a
/// pipeline group opens its session on the group's shared connection.
pub(super) fn worker(ctx: &Ctx<'_, '_>, t: usize, tx: mpsc::Sender<Msg>, group: Option<&Pipeline>) {
    let (crew, steps, gate, live) = (ctx.crew, ctx.steps, &ctx.gate, &ctx.live);
    let stop_before = &ctx.stop_before;
    // A panic here must not leave the other threads waiting for this one.
    let _release = Release {
        ctx,
        sampler: None,
        on_panic_only: true,
    };
    ctx.pthreads[t].store(halt::this_thread() as u64, Ordering::Relaxed);
    let paced = crew.pace.is_some() || steps.iter().any(|s| matches!(s, Step::Run { pace: Some(_), .. }));
    if paced && let Err(e) = crate::clock::precise_sleeps() {
        eprintln!("kvmark: warning: cannot set timer slack ({e}); paced waits may overshoot by about 50 us");
    }
    let session = match group {
        Some(group) => crew.store.pipelined_session(group),
        None => crew.store.session(),
    };
    let ready = session
        .map_err(|e| format!("cannot open a session on the store: {e}"))
        .and_then(|session| {
            let mut kv = Kv::new(session, crew.clock.clone(), Arc::clone(crew.abort));
            kv.limit_sizes(crew.engine.name, crew.engine.limits);
            kv.reconnect_every(crew.reconnect_every);
            kv.split_by_size(crew.size_classes.clone());
            if let Some(checker) = crew.verify {
                kv.verify_with(checker);
            }
            let ctx = ThreadCtx {
                params: crew.params.clone(),
                batch: crew.batch,
                thread: crew.global(t),
                threads: crew.all_workers(),
                local_threads: crew.workers(),
                sweep: crew.sweep.clone(),
                ordered: crew.engine.ordered(),
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

    let warm_step = ctx.warm_step;
    let mut seat = Seat { ctx, t, iter: 0 };
    for (i, step) in steps.iter().enumerate() {
        if !gate.wait(i) {
            break;
        }
        let wait_before = crate::probe::live::thread_run_wait_ns();
        program.stop_on(StopSignal::new(Arc::clone(stop_before), i));
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
                    Budget::Ops(total) => Some(crew.workload.quota(*phase, *total, crew.all_workers(), crew.global(t))),
                    Budget::Secs(_) => None,
                };
                if let Some(spec) = pace.as_ref().or(crew.pace.as_ref()) {
                    let stop = StopSignal::new(Arc::clone(stop_before), i);
                    program
                        .kv()
                        .start_pacing(spec, crew.all_workers(), crew.global(t), stop);
                }
                if let Some(slot) = crew.value_sizes {
                    program
                        .kv()
                        .set_value_sizes(slot.get(), crew.params.seed ^ ((i as u64) << 32));
                }
                program
                    .enter(*phase)
                    .and_then(|()| seat.run_units(program.as_mut(), *phase, i, quota, &mut ran))
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
                let r = steps::fill(program.kv(), source, t, crew.workers(), live, &stop);
                ran.units = r.done;
                r.error.map_or(Ok(()), |e| Err(WorkloadError::Runtime(e)))
            }
            Step::Skip { phases, check } => phases
                .iter()
                .try_for_each(|(phase, units)| program.skip(*phase, units.get(t).copied().unwrap_or(0)))
                .and_then(|()| if *check { program.check_held() } else { Ok(()) }),
        };
        let end_raw = crew.clock.raw();
        let run_wait_ns = crate::probe::live::thread_run_wait_ns().saturating_sub(wait_before);
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
                tid: crate::probe::live::thread_id(),
                run_wait_ns,
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

impl Seat<'_, '_> {
    /// Runs units in adaptive chunks until the quota is done, the phase is exhausted,
    /// or the step is stopped, counting them into `ran` (and cutting the warm-up
    /// there). Returns the error that ended it, if any.
    fn run_units(
        &mut self,
        program: &mut dyn Program,
        phase: usize,
        step: usize,
        quota: Option<u64>,
        ran: &mut Ran,
    ) -> Result<(), WorkloadError> {
        // Locals, so the loop reads exactly what it read before it had a context.
        let ctx = self.ctx;
        let (crew, live, t) = (ctx.crew, &ctx.live, self.t);
        let stop_before: &AtomicUsize = &ctx.stop_before;
        let iter = &mut self.iter;
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
            // Other connections of this thread get their turn (a no-op on a plain
            // thread), unless a server engine's verb already gave it by waiting.
            inflight::end_turn();
            if took < CHUNK_MIN_NS {
                chunk = (chunk * 2).min(CHUNK_CAP);
            } else if took > CHUNK_MAX_NS {
                chunk = (chunk / 2).max(1);
            }
        }
        Ok(())
    }
}
