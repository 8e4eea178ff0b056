//! The timeline sampler: its own thread beside a crew, turning what workers publish
//! into one [`Sample`] per interval.
//!
//! Workers never wait for it. Each period it bumps the crew's sample epoch and reads
//! the system probe, the store's disk usage and the engine's stats; at their next chunk
//! boundary (within about a millisecond) workers swap their recorder for an emptied
//! spare and leave the full one in their mailbox (a lock taken once per interval per
//! thread). One period later the sampler collects those interval recorders, merges
//! them exactly, computes rates and percentiles, and hands the finished sample to the
//! sinks: samples appear one period late, and the sampler wakes once per period
//! without ever polling the workers. Recorders go back as spares, so the hand-over
//! allocates nothing after the first interval.
//!
//! Nothing is lost: whatever a worker handed over is also returned to the crew at the
//! end of the step ([`Sampler::end_step`]), so point results stay exact.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use quanta::Clock;

use super::live::{Live, Piece};
use super::observer::{Observer, Sample};
use crate::engine::Store;
use crate::metrics::{OpKind, Recorder, op_label};
use crate::probe::du::DiskMeter;
use crate::probe::live::SystemMeter;
use crate::result::PointKey;
use crate::result::trend::IntervalFigures;

/// The step a sampler is told of: what it needs from the crew's step, and no more.
#[derive(Debug, Clone, Copy)]
pub struct StepInfo<'s> {
    /// The phase name its samples carry.
    pub name: &'s str,
    /// The workload's load() (samples count keys written, not units).
    pub load: bool,
    /// The step's time budget in seconds, if it has one.
    pub secs: Option<f64>,
}

/// What a crew needs to sample one measurement.
pub struct SamplerCtx<'a> {
    /// Sample period; None samples each step once, as a whole (histogram logs only).
    pub interval: Option<Duration>,
    /// Include the system probe's metrics.
    pub system: bool,
    /// Where samples go.
    pub sink: &'a dyn Observer,
    /// The point measured.
    pub point: &'a PointKey,
    /// 1-based point number.
    pub point_seq: usize,
    /// 1-based repeat, or 0 for a shared seed.
    pub repeat: usize,
    /// The store's directory, for its disk usage.
    pub store_dir: Option<&'a Path>,
}

/// How one worker thread ended a step, as the crew's lead saw it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadEnd {
    /// Raw clock at the thread's end.
    pub end_raw: u64,
    /// Units the thread completed in the step.
    pub units: u64,
    /// Primitive operations in the recorder the thread returned (what it did since
    /// its last hand-over).
    pub prim_ops: u64,
}

/// Per-thread bookkeeping for rates: each thread's own interval boundaries, so a
/// thread that answers late is measured over its own span, not the sampler's.
#[derive(Debug, Clone, Copy, Default)]
struct ThreadAcc {
    /// Raw clock of this thread's last boundary.
    last_raw: u64,
    /// Units handed over so far in the step.
    handed_units: u64,
    /// Units and primitive operations gathered for the sample being built.
    units: u64,
    prim: u64,
    /// Raw clock of the latest data gathered for it.
    end_raw: u64,
    has: bool,
}

struct Active {
    name: String,
    load: bool,
}

struct State {
    step: Option<Active>,
    /// Raw clock and Unix time of the first step's start.
    seq: Option<(u64, f64)>,
    /// Raw clock where the sample being built starts.
    boundary: u64,
    next_tick: Option<Instant>,
    /// End of a time-bounded step: no tick within half a period of it, so the last
    /// sample is not a sliver.
    deadline: Option<Instant>,
    threads: Vec<ThreadAcc>,
    /// Pieces taken from mailboxes, kept to reuse the vectors' capacity.
    scratch: Vec<Vec<Piece>>,
    interval: Recorder,
    /// In a [`Warm::Mixed`] interval, the part recorded after the warm-up.
    kept: Recorder,
    warm: Warm,
    handed: Recorder,
    /// Operation kinds seen in this step: later intervals without calls report 0.
    seen: Vec<OpKind>,
    keys_prev: u64,
    metrics: Vec<(String, f64)>,
    probes: Vec<(String, f64)>,
    /// The interval that ended at the last epoch bump, waiting for the workers'
    /// hand-overs: its end (raw clock) and the probes read then.
    pending: Option<(u64, Vec<(String, f64)>)>,
    system: Option<SystemMeter>,
    disk: Option<DiskMeter>,
    warned: Vec<&'static str>,
    /// The step's timeline intervals after the warm-up, for the stationarity check.
    trend: Vec<IntervalFigures>,
}

/// Whether the interval being built holds warm-up data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Warm {
    /// None: everything counts.
    No,
    /// Only warm-up data: shown in the timeline, kept out of results and logs.
    All,
    /// Some threads were still warming up: `kept` holds what counts.
    Mixed,
}

/// The sampler of one crew run; shared by the crew's lead and the sampler thread.
pub(crate) struct Sampler<'a> {
    ctx: &'a SamplerCtx<'a>,
    live: &'a Live,
    store: &'a dyn Store,
    clock: &'a Clock,
    state: Mutex<State>,
    wake: Mutex<Option<mpsc::Sender<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'a> Sampler<'a> {
    /// A sampler over `live` for a crew of `threads`.
    pub fn new(ctx: &'a SamplerCtx<'a>, live: &'a Live, store: &'a dyn Store, clock: &'a Clock) -> Self {
        let threads = live.units.len();
        let timeline = ctx.interval.is_some();
        Sampler {
            ctx,
            live,
            store,
            clock,
            state: Mutex::new(State {
                step: None,
                seq: None,
                boundary: 0,
                next_tick: None,
                deadline: None,
                threads: vec![ThreadAcc::default(); threads],
                scratch: (0..threads).map(|_| Vec::with_capacity(4)).collect(),
                interval: Recorder::new(),
                kept: Recorder::new(),
                warm: Warm::No,
                handed: Recorder::new(),
                seen: Vec::new(),
                keys_prev: 0,
                metrics: Vec::new(),
                probes: Vec::new(),
                pending: None,
                system: (timeline && ctx.system).then(SystemMeter::new),
                disk: if timeline {
                    ctx.store_dir.map(DiskMeter::new)
                } else {
                    None
                },
                warned: Vec::new(),
                trend: Vec::new(),
            }),
            wake: Mutex::new(None),
        }
    }

    /// True when samples are taken periodically (a sampler thread is needed).
    pub fn ticks(&self) -> bool {
        self.ctx.interval.is_some()
    }

    /// The sampler thread's loop: sleeps until the next tick or a wake-up, and ends
    /// when the crew drops the waker.
    pub fn run(&self, wake: mpsc::Receiver<()>) {
        loop {
            let next = lock(&self.state).next_tick;
            let got = match next {
                None => wake.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(t) => wake.recv_timeout(t.saturating_duration_since(Instant::now())),
            };
            match got {
                Ok(()) => {}
                Err(RecvTimeoutError::Timeout) => self.tick_if_due(),
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Installs the channel that wakes the sampler thread.
    pub fn set_waker(&self, tx: mpsc::Sender<()>) {
        *lock(&self.wake) = Some(tx);
    }

    /// Stops the sampler thread.
    pub fn stop(&self) {
        lock(&self.wake).take();
    }

    fn wake(&self) {
        if let Some(tx) = lock(&self.wake).as_ref() {
            // The thread may have stopped already; nothing to wake then.
            let _ = tx.send(());
        }
    }

    /// Called before a step's gate opens: a system baseline.
    pub fn prepare_step(&self) {
        let mut st = lock(&self.state);
        if let Some(m) = st.system.as_mut() {
            m.restart();
        }
    }

    /// Called as the step's gate opens at raw clock `start_raw`.
    pub fn step_started(&self, step: StepInfo<'_>, start_raw: u64, began: Instant) {
        let mut st = lock(&self.state);
        if st.seq.is_none() {
            let unix = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64();
            st.seq = Some((start_raw, unix));
        }
        st.step = Some(Active {
            name: step.name.to_string(),
            load: step.load,
        });
        st.boundary = start_raw;
        for acc in st.threads.iter_mut() {
            *acc = ThreadAcc {
                last_raw: start_raw,
                end_raw: start_raw,
                ..ThreadAcc::default()
            };
        }
        st.interval.reset();
        st.handed = Recorder::new();
        st.seen.clear();
        st.keys_prev = 0;
        st.pending = None;
        st.trend.clear();
        st.next_tick = self.ctx.interval.map(|d| began + d);
        st.deadline = step.secs.map(|s| began + Duration::from_secs_f64(s));
        drop(st);
        self.wake();
    }

    fn tick_if_due(&self) {
        let mut st = lock(&self.state);
        let (Some(due), Some(period)) = (st.next_tick, self.ctx.interval) else {
            return;
        };
        let now = Instant::now();
        if now < due || st.step.is_none() {
            return;
        }
        let mut next = due + period;
        while next <= now {
            next += period;
        }
        st.next_tick = Some(next);
        if st
            .deadline
            .is_some_and(|d| d.saturating_duration_since(now) < period / 2)
        {
            return;
        }
        let load = st.step.as_ref().is_some_and(|s| s.load);
        let st = &mut *st;
        if load {
            let now_raw = self.clock.raw();
            self.read_probes(st);
            let keys: u64 = self.live.keys.iter().map(|k| k.load(Ordering::Relaxed)).sum();
            self.emit_seed(st, keys, now_raw);
        } else {
            // Finish the interval that ended at the previous bump: its hand-overs
            // arrived within a chunk of it, long ago.
            self.collect(st);
            self.emit_pending(st);
            self.live.epoch.fetch_add(1, Ordering::Relaxed);
            let now_raw = self.clock.raw();
            self.read_probes(st);
            st.pending = Some((now_raw, std::mem::take(&mut st.probes)));
        }
    }

    /// Emits the interval that ended at the last bump, with the probes read then.
    fn emit_pending(&self, st: &mut State) {
        if let Some((end_raw, probes)) = st.pending.take() {
            st.probes = probes;
            self.emit_run(st, end_raw);
        }
    }

    /// Ends the step: gathers what workers handed over, emits the final sample
    /// (including `finals`, what they returned at the end), and returns everything
    /// handed over during the step, for the crew to merge with `finals`.
    pub fn end_step(&self, finals: &Recorder, ends: &[Option<ThreadEnd>], end_raw: u64) -> Recorder {
        let mut st = lock(&self.state);
        st.next_tick = None;
        let st = &mut *st;
        let Some(load) = st.step.as_ref().map(|s| s.load) else {
            return Recorder::new();
        };
        let timeline = self.ticks();
        if load {
            if timeline {
                self.read_probes(st);
                self.emit_seed(st, finals.write_ops(), end_raw);
            }
        } else {
            self.collect(st);
            // A tick that came after the workers had finished ended its interval past
            // the step's end: what it gathered belongs to the final interval (emitted
            // on its own, it was followed by one of negative length).
            if st.pending.as_ref().is_some_and(|(raw, _)| *raw >= end_raw) {
                st.pending = None;
            }
            self.emit_pending(st);
            if timeline {
                self.read_probes(st);
            }
            for (acc, end) in st.threads.iter_mut().zip(ends) {
                if let Some(end) = end {
                    acc.units += end.units.saturating_sub(acc.handed_units);
                    acc.prim += end.prim_ops;
                    acc.end_raw = acc.end_raw.max(end.end_raw);
                    acc.has = true;
                }
            }
            st.interval.merge(finals);
            if st.warm == Warm::Mixed {
                st.kept.merge(finals);
            }
            self.emit_run(st, end_raw);
        }
        st.step = None;
        std::mem::take(&mut st.handed)
    }

    /// The timeline intervals of the step that just ended (after its warm-up), for
    /// the stationarity check; empty without `--timeline`.
    pub fn take_trend(&self) -> Vec<IntervalFigures> {
        std::mem::take(&mut lock(&self.state).trend)
    }

    /// Reads the system probe, the disk and the engine's stats into `st.probes`.
    fn read_probes(&self, st: &mut State) {
        st.probes.clear();
        if let Some(m) = st.system.as_mut() {
            m.sample(&mut st.probes);
            for name in m.take_missing() {
                if !st.warned.contains(&name) {
                    st.warned.push(name);
                    eprintln!("kvmark: warning: the timeline has no {name}: it cannot be read on this system");
                }
            }
        }
        if let Some(d) = st.disk.as_mut() {
            d.sample(&mut st.probes);
        }
        for (name, value) in self.store.stats() {
            st.probes.push((format!("engine.{name}"), value));
        }
    }

    /// Takes every piece out of the mailboxes, merges them into the interval, and
    /// returns the emptied recorders as spares. Pieces recorded during a warm-up go
    /// into the interval (the timeline shows them) but not into the step's results.
    fn collect(&self, st: &mut State) {
        debug_assert!(st.interval.is_empty(), "the previous interval was emitted");
        for (t, mailbox) in self.live.mailboxes.iter().enumerate() {
            std::mem::swap(&mut lock(mailbox).pieces, &mut st.scratch[t]);
        }
        let pieces = st.scratch.iter().flatten();
        let (warm, all) = pieces.fold((0, 0), |(w, n), p| (w + usize::from(p.warm), n + 1));
        if all == 0 {
            return;
        }
        st.warm = match warm {
            0 => Warm::No,
            w if w == all => Warm::All,
            _ => Warm::Mixed,
        };
        for (t, mailbox) in self.live.mailboxes.iter().enumerate() {
            if st.scratch[t].is_empty() {
                continue;
            }
            let acc = &mut st.threads[t];
            for piece in st.scratch[t].iter_mut() {
                acc.units += piece.units;
                acc.handed_units += piece.units;
                acc.prim += piece.rec.prim_ops();
                acc.end_raw = acc.end_raw.max(piece.raw);
                acc.has = true;
                if st.warm == Warm::Mixed && !piece.warm {
                    st.kept.merge(&piece.rec);
                }
                if st.interval.is_empty() {
                    // Adopt the piece as the interval and hand the worker the emptied
                    // interval recorder: no copy and no clearing of whole histograms.
                    st.interval.allocate_kinds_of(&piece.rec);
                    std::mem::swap(&mut st.interval, &mut piece.rec);
                } else {
                    st.interval.merge(&piece.rec);
                    piece.rec.reset();
                }
            }
            let mut mb = lock(mailbox);
            mb.spares.extend(st.scratch[t].drain(..).map(|p| p.rec));
        }
        // One merge per sample, however many threads handed over.
        match st.warm {
            Warm::No => st.handed.merge(&st.interval),
            Warm::Mixed => st.handed.merge(&st.kept),
            Warm::All => {}
        }
    }

    fn secs(&self, from: u64, to: u64) -> f64 {
        if to <= from {
            0.0
        } else {
            self.clock.delta_as_nanos(from, to) as f64 / 1e9
        }
    }

    /// Emits the run sample ending at `end_raw` from the gathered pieces.
    fn emit_run(&self, st: &mut State, end_raw: u64) {
        let timeline = self.ticks();
        st.metrics.clear();
        let (mut wu, mut ops) = (0.0, 0.0);
        for acc in st.threads.iter_mut().filter(|a| a.has) {
            let span = self.secs(acc.last_raw, acc.end_raw);
            if span > 0.0 {
                wu += acc.units as f64 / span;
                ops += acc.prim as f64 / span;
            }
            acc.last_raw = acc.end_raw;
            acc.units = 0;
            acc.prim = 0;
            acc.has = false;
        }
        if timeline {
            st.metrics.push(("wu_per_s".to_string(), wu));
            st.metrics.push(("ops_per_s".to_string(), ops));
            for kind in OpKind::ALL {
                match st.interval.kind(kind) {
                    Some(s) => {
                        let name = kind.name();
                        st.metrics.push((format!("op.{name}.count"), s.count() as f64));
                        // Only where calls failed: a fault shows as a run of these rows.
                        if s.errors > 0 {
                            st.metrics.push((format!("op.{name}.errors"), s.errors as f64));
                        }
                        for (set, h) in s.latency_sets() {
                            let label = op_label(kind, set);
                            st.metrics
                                .push((format!("op.{label}.p50_ns"), h.value_at_quantile(0.50) as f64));
                            st.metrics
                                .push((format!("op.{label}.p99_ns"), h.value_at_quantile(0.99) as f64));
                            st.metrics.push((format!("op.{label}.max_ns"), h.max() as f64));
                        }
                        if !st.seen.contains(&kind) {
                            st.seen.push(kind);
                        }
                    }
                    None if st.seen.contains(&kind) => st.metrics.push((format!("op.{}.count", kind.name()), 0.0)),
                    None => {}
                }
            }
            st.metrics.append(&mut st.probes);
            if st.warm == Warm::No && end_raw > st.boundary {
                let p99 = (st.interval.used())
                    .map(|(kind, s)| (kind, s.count(), s.hist.value_at_quantile(0.99)))
                    .collect();
                st.trend.push(IntervalFigures { wu_per_s: wu, p99 });
            }
        }
        if end_raw > st.boundary || !st.interval.is_empty() {
            let name = match st.warm {
                Warm::No => st.step.as_ref().map(|s| s.name.as_str()).unwrap_or("run"),
                Warm::All | Warm::Mixed => "warmup",
            };
            let latency = match st.warm {
                Warm::No => Some(&st.interval),
                Warm::Mixed => Some(&st.kept),
                Warm::All => None,
            };
            self.send(st, name, end_raw, latency);
        }
        st.interval.reset();
        if st.warm == Warm::Mixed {
            st.kept.reset();
        }
        st.warm = Warm::No;
        st.boundary = st.boundary.max(end_raw);
    }

    /// Emits a seed sample ending at `end_raw` with `keys` written so far.
    fn emit_seed(&self, st: &mut State, keys: u64, end_raw: u64) {
        st.metrics.clear();
        let span = self.secs(st.boundary, end_raw);
        let rate = if span > 0.0 {
            keys.saturating_sub(st.keys_prev) as f64 / span
        } else {
            0.0
        };
        st.metrics.push(("keys_per_s".to_string(), rate));
        st.metrics.append(&mut st.probes);
        if end_raw > st.boundary {
            self.send(st, "seed", end_raw, None);
        }
        st.keys_prev = keys;
        st.boundary = st.boundary.max(end_raw);
    }

    fn send(&self, st: &State, phase: &str, end_raw: u64, latency: Option<&Recorder>) {
        let (seq_raw, seq_unix) = st.seq.unwrap_or((st.boundary, 0.0));
        let start_s = self.secs(seq_raw, st.boundary);
        self.ctx.sink.sample(&Sample {
            point: self.ctx.point,
            point_seq: self.ctx.point_seq,
            repeat: self.ctx.repeat,
            phase,
            start_s,
            elapsed_s: self.secs(seq_raw, end_raw),
            start_unix: seq_unix + start_s,
            metrics: &st.metrics,
            latency,
        });
    }
}
