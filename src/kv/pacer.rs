//! One worker's schedule: the intended start of each unit and the lag of the current
//! one.
//!
//! A [`Pacer`] lives inline in the worker's [`super::Kv`] and is cheap on the two
//! paths a run that cannot keep up takes all the time: [`Pacer::try_begin_late`] per
//! unit and [`Pacer::lag`] per operation are a few integer operations on fields next
//! to each other. Intended starts are raw clock readings in fixed point, so comparing
//! one with the last reading taken costs no conversion and fractions of a tick
//! accumulate. Everything else (drawn gaps, the stop signal, schedule statistics) sits
//! behind a pointer that only the slower paths follow.

use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::pace::{Arrival, PaceSpec, StopSignal, Wave};
use crate::metrics::PaceStats;

/// How the gap between two units is sized.
#[derive(Debug, Clone, Copy)]
enum Gap {
    /// Constant arrivals: [`Pacer::fixed_gap`], added as each unit begins (in integers:
    /// the common case costs no floating point).
    Fixed,
    /// Poisson arrivals: exponential gaps of this mean, in ticks.
    Exp(f64),
    /// By bandwidth, in bytes per tick: the mean gap is the thread's running mean of
    /// bytes per unit divided by this (exponential around it for Poisson arrivals).
    Bytes(f64),
    /// Set by the program before each unit ([`Pacer::set_upcoming`]): a trace's own
    /// clock. Holds the clock's ticks per nanosecond.
    Given(f64),
    /// A rate that follows a sine wave: the mean gap is the thread's share of the
    /// wave's rate at the previous unit's intended start.
    Wave {
        wave: Wave,
        ticks_per_ns: f64,
        threads: f64,
    },
}

/// Where the current unit stands, unless it is late and its lag not yet fixed (see
/// [`Pacer::late_pending`]): its first operation must still fix the lag of a unit
/// that waited for its start, or has done so, or the worker is not paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum FirstOp {
    #[default]
    Off,
    Done,
    Waited,
}

/// One tick in the schedule's fixed point: whole ticks in the high 64 bits, fractions
/// of a tick in the low 64.
const TICK: f64 = 18_446_744_073_709_551_616.0;

/// `ticks` (not negative) in the schedule's fixed point.
fn fixed_point(ticks: f64) -> u128 {
    let whole = ticks as u64;
    let frac = ((ticks - whole as f64) * TICK) as u64;
    (u128::from(whole) << 64) | u128::from(frac)
}

/// One worker's schedule and the lag of its current unit; `Pacer::default()` is a
/// worker that is not paced.
#[derive(Debug)]
pub struct Pacer {
    /// The current unit is late and its first operation is still to come: kept apart
    /// from `first` so that the hot case is one test (a four-way `match` becomes an
    /// indirect jump).
    late_pending: bool,
    first: FirstOp,
    /// Constant arrivals: every begin adds `fixed_gap` to `due`, which is thus always
    /// current (`drawn`); otherwise gaps are drawn when the next start is asked for.
    fixed: bool,
    drawn: bool,
    /// [`Pacer::try_begin_late`] may begin units: constant arrivals, and no other work
    /// at unit boundaries. Then `late_due` is the upcoming start (raw ticks), else
    /// `u64::MAX`, which no clock reading reaches, so that the late path costs one
    /// comparison.
    late_path: bool,
    late_due: u64,
    /// The current unit's intended start (raw ticks) and, once its first operation
    /// started, its lag (ns).
    unit_due: u64,
    lag: u64,
    /// The largest lag since the statistics were last taken.
    max_lag_ns: u64,
    /// Nanoseconds per clock tick in 32.32 fixed point: a lag costs one multiplication
    /// (quanta's conversion, used for service times, also checks the clock's kind and
    /// a shift each time).
    ns_per_tick: u64,
    /// Intended start of the upcoming unit, in raw ticks in fixed point.
    due: u128,
    fixed_gap: u128,
    /// Units begun so far with gaps drawn when needed, and the begun count when the
    /// statistics were last taken; with constant gaps the count is in `due` itself (see
    /// [`Pacer::units`]), so the late path counts nothing.
    units: u64,
    units_at_take: u64,
    /// The first unit's intended start, in the same fixed point as `due`.
    due0: u128,
    slow: Option<Box<SlowPart>>,
}

/// What only the slower paths use.
#[derive(Debug)]
struct SlowPart {
    gap: Gap,
    arrival: Arrival,
    rng: Xoshiro256PlusPlus,
    stop: StopSignal,
    /// Bytes the worker had written when pacing began.
    written0: u64,
    /// Units that waited and their accuracy; the rest is filled in when taken.
    stats: PaceStats,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer {
            late_pending: false,
            first: FirstOp::Off,
            fixed: false,
            drawn: true,
            late_path: false,
            late_due: u64::MAX,
            unit_due: 0,
            lag: 0,
            max_lag_ns: 0,
            ns_per_tick: 0,
            due: 0,
            fixed_gap: 0,
            units: 0,
            units_at_take: 0,
            due0: 0,
            slow: None,
        }
    }
}

impl Pacer {
    /// Thread `thread` of `threads` whose first unit is due at raw reading `t0`, on a
    /// clock with `ticks_per_ns`, having written `written` bytes so far.
    pub fn new(
        spec: &PaceSpec,
        threads: usize,
        thread: usize,
        t0: u64,
        ticks_per_ns: f64,
        written: u64,
        stop: StopSignal,
    ) -> Self {
        let share = spec.rate.per_sec / threads.max(1) as f64;
        let mean = 1e9 / share * ticks_per_ns;
        let (gap, fixed_gap) = match (spec.rate.wave, spec.rate.bytes, spec.arrival) {
            (Some(wave), _, _) => (
                Gap::Wave {
                    wave,
                    ticks_per_ns,
                    threads: threads.max(1) as f64,
                },
                0,
            ),
            (None, true, _) => (Gap::Bytes(share / 1e9 / ticks_per_ns), 0),
            (None, false, Arrival::Constant) => (Gap::Fixed, fixed_point(mean)),
            (None, false, Arrival::Poisson) => (Gap::Exp(mean), 0),
        };
        Pacer {
            late_pending: false,
            first: FirstOp::Done,
            // A gap below 2^-64 ticks (an absurd rate) is 0: drawn, as a no-op.
            fixed: fixed_gap != 0,
            drawn: true,
            late_path: fixed_gap != 0,
            late_due: if fixed_gap != 0 { t0 } else { u64::MAX },
            unit_due: t0,
            lag: 0,
            max_lag_ns: 0,
            ns_per_tick: (4_294_967_296.0 / ticks_per_ns).round() as u64,
            due: u128::from(t0) << 64,
            fixed_gap,
            units: 0,
            units_at_take: 0,
            due0: u128::from(t0) << 64,
            slow: Some(Box::new(SlowPart {
                gap,
                arrival: spec.arrival,
                rng: Xoshiro256PlusPlus::seed_from_u64(spec.seed.wrapping_add(thread as u64)),
                stop,
                written0: written,
                stats: PaceStats::default(),
            })),
        }
    }

    /// A worker whose units are due when the program says ([`Pacer::set_upcoming`]),
    /// counted from raw reading `t0`: a trace replayed on its own clock.
    pub fn given(t0: u64, ticks_per_ns: f64, stop: StopSignal) -> Self {
        Pacer {
            first: FirstOp::Done,
            unit_due: t0,
            ns_per_tick: (4_294_967_296.0 / ticks_per_ns).round() as u64,
            due: u128::from(t0) << 64,
            due0: u128::from(t0) << 64,
            slow: Some(Box::new(SlowPart {
                gap: Gap::Given(ticks_per_ns),
                arrival: Arrival::Constant,
                rng: Xoshiro256PlusPlus::seed_from_u64(0),
                stop,
                written0: 0,
                stats: PaceStats::default(),
            })),
            ..Pacer::default()
        }
    }

    /// Makes the upcoming unit due `offset_ns` after the schedule began. Only a pacer
    /// made by [`Pacer::given`] takes it; others draw their own starts.
    #[inline]
    pub fn set_upcoming(&mut self, offset_ns: u64) {
        if let Some(Gap::Given(ticks_per_ns)) = self.slow.as_deref().map(|s| s.gap) {
            self.due = self.due0 + fixed_point(offset_ns as f64 * ticks_per_ns);
            self.drawn = true;
        }
    }

    /// True while the worker is paced.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.first != FirstOp::Off
    }

    /// Begins the upcoming unit if it is already late at raw reading `now` and its
    /// start needs no drawing (constant arrivals): the boundary of a worker that is
    /// behind schedule. False when [`Pacer::upcoming`] and [`Pacer::begin`] must decide.
    #[inline]
    pub fn try_begin_late(&mut self, now: u64) -> bool {
        let due = self.late_due;
        if due > now {
            return false;
        }
        self.unit_due = due;
        self.late_pending = true;
        self.due += self.fixed_gap;
        self.late_due = (self.due >> 64) as u64;
        true
    }

    /// Sends every unit through [`Pacer::upcoming`] and [`Pacer::begin`], for workers
    /// with other work at unit boundaries (key lifetimes).
    pub fn close_late_path(&mut self) {
        self.late_path = false;
        self.late_due = u64::MAX;
    }

    /// The intended start of the upcoming unit, as a raw clock reading. It is drawn
    /// once (a Poisson gap is never redrawn) from the gap after the previous unit;
    /// `written` is the worker's running count of bytes written (pacing by bytes).
    #[inline]
    pub fn upcoming(&mut self, written: u64) -> u64 {
        if !self.drawn {
            self.draw(written);
        }
        (self.due >> 64) as u64
    }

    /// Moves the upcoming start past a gap drawn now (Poisson arrivals, or pacing by
    /// bytes).
    #[inline(never)]
    fn draw(&mut self, written: u64) {
        self.drawn = true;
        let Some(slow) = self.slow.as_deref_mut() else {
            return;
        };
        let mean = match slow.gap {
            Gap::Fixed | Gap::Given(_) => return,
            Gap::Exp(mean) => mean,
            Gap::Bytes(per_tick) => (written - slow.written0) as f64 / self.units as f64 / per_tick,
            Gap::Wave {
                wave,
                ticks_per_ns,
                threads,
            } => {
                let secs = ((self.due - self.due0) >> 64) as f64 / ticks_per_ns / 1e9;
                threads * 1e9 / wave.at(secs) * ticks_per_ns
            }
        };
        let gap = match slow.arrival {
            Arrival::Constant => mean,
            Arrival::Poisson => {
                let draw: f64 = Exp1.sample(&mut slow.rng);
                mean * draw
            }
        };
        self.due += fixed_point(gap);
    }

    /// The upcoming unit starts now; it waited for its intended start or not.
    #[inline]
    pub fn begin(&mut self, waited: bool) {
        if !self.fixed {
            self.units += 1;
        }
        self.unit_due = (self.due >> 64) as u64;
        self.due += self.fixed_gap;
        self.drawn = self.fixed;
        match self.slow.as_deref_mut() {
            Some(slow) if waited => {
                slow.stats.waited += 1;
                self.first = FirstOp::Waited;
                self.late_pending = false;
                // The late path stays shut until this unit's first operation has been
                // filed as one that waited (or, if it has none, until the next begin
                // here clears the mark), so the mark can never outlive its unit.
                self.late_due = u64::MAX;
            }
            _ => {
                self.first = FirstOp::Done;
                self.late_pending = true;
                self.reopen_late_path();
            }
        }
    }

    /// Points the late path at the upcoming start, if it is open.
    #[inline]
    fn reopen_late_path(&mut self) {
        if self.late_path {
            self.late_due = (self.due >> 64) as u64;
        }
    }

    /// The current unit's lag in nanoseconds given the raw start of an operation in
    /// it, or None when not paced: the unit's first operation fixes it (its start minus
    /// the intended start, at least 0).
    #[inline]
    pub fn lag(&mut self, start: u64) -> Option<u64> {
        if self.late_pending {
            self.late_pending = false;
            self.fix_lag(start);
            return Some(self.lag);
        }
        match self.first {
            FirstOp::Off => None,
            FirstOp::Done => Some(self.lag),
            FirstOp::Waited => {
                self.fix_lag_waited(start);
                self.first = FirstOp::Done;
                Some(self.lag)
            }
        }
    }

    #[inline]
    fn fix_lag(&mut self, start: u64) {
        let ticks = start.saturating_sub(self.unit_due);
        let lag = ((u128::from(ticks) * u128::from(self.ns_per_tick)) >> 32) as u64;
        self.lag = lag;
        self.max_lag_ns = self.max_lag_ns.max(lag);
    }

    /// A unit that waited for its start: its lag is the pacer's own error.
    #[cold]
    fn fix_lag_waited(&mut self, start: u64) {
        self.fix_lag(start);
        if let Some(slow) = self.slow.as_deref_mut() {
            slow.stats.accuracy.saturating_record(self.lag.max(1));
        }
        self.reopen_late_path();
    }

    /// True once the step must stop.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.slow.as_deref().is_some_and(|s| s.stop.raised())
    }

    /// Hands over the schedule statistics gathered so far and starts afresh.
    pub fn take_stats(&mut self) -> PaceStats {
        let Some(slow) = self.slow.as_deref_mut() else {
            return PaceStats::default();
        };
        let mut stats = std::mem::take(&mut slow.stats);
        // Counted here rather than per unit: the units begun since the last take that
        // did not wait, the largest lag, and the latest unit's.
        let units = self.units();
        stats.late = units - self.units_at_take - stats.waited;
        self.units_at_take = units;
        stats.max_lag_ns = std::mem::take(&mut self.max_lag_ns);
        if stats.units() > 0 {
            stats.final_lag_ns = self.lag;
        }
        stats
    }

    /// Units begun so far.
    pub fn units(&self) -> u64 {
        if self.fixed {
            // Every begin added exactly one gap.
            ((self.due - self.due0) / self.fixed_gap) as u64
        } else {
            self.units
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::kv::pace::{Rate, ticks_per_ns};

    fn stop() -> StopSignal {
        StopSignal::new(Arc::new(AtomicUsize::new(0)), 0)
    }

    fn spec(rate: &str, arrival: Arrival) -> PaceSpec {
        PaceSpec {
            rate: Rate::parse(rate).unwrap(),
            arrival,
            seed: 7,
        }
    }

    /// A pacer on a nanosecond clock (1 tick per ns).
    fn pacer(rate: &str, arrival: Arrival, threads: usize, thread: usize, t0: u64, written: u64) -> Pacer {
        Pacer::new(&spec(rate, arrival), threads, thread, t0, 1.0, written, stop())
    }

    /// Intended starts of the next `n` units, each writing `bytes` more.
    fn dues(p: &mut Pacer, n: usize, written: &mut u64, bytes: u64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                let due = p.upcoming(*written);
                assert_eq!(p.upcoming(*written), due, "drawn once");
                p.begin(false);
                *written += bytes;
                due
            })
            .collect()
    }

    #[test]
    fn constant_arrivals_are_evenly_spaced_per_thread() {
        // 4000 units/s over 2 threads: 2000/s each, 500 us apart, the first at t0.
        let mut p = pacer("4000", Arrival::Constant, 2, 1, 1_000, 0);
        assert_eq!(dues(&mut p, 4, &mut 0, 0), vec![1_000, 501_000, 1_001_000, 1_501_000]);
        assert_eq!(p.units(), 4);
        // On a clock of 2.5 ticks per ns the gaps are in ticks.
        let mut p = Pacer::new(&spec("1000", Arrival::Constant), 1, 0, 0, 2.5, 0, stop());
        assert_eq!(dues(&mut p, 2, &mut 0, 0), vec![0, 2_500_000]);
        // Fractions of a tick accumulate instead of being lost: 7 units/s on a
        // nanosecond clock are 142,857,142.86 ns apart (whole gaps would end at 999,999,994).
        let mut p = pacer("7", Arrival::Constant, 1, 0, 0, 0);
        let d = dues(&mut p, 8, &mut 0, 0);
        assert!(d[7].abs_diff(1_000_000_000) <= 1, "{d:?}");
    }

    #[test]
    fn a_sine_rate_changes_the_gap_once_per_interval() {
        // 1000 + 500·sin(t·pi/2) units/s, held for a second at a time, over 2 threads:
        // second 0 at 1000/s (2 ms apart per thread), second 1 at 1500/s.
        let wave = Wave::new(500.0, std::f64::consts::FRAC_PI_2, 0.0, 1000.0, 1.0).unwrap();
        let spec = PaceSpec {
            rate: wave.rate(),
            arrival: Arrival::Constant,
            seed: 7,
        };
        let mut p = Pacer::new(&spec, 2, 0, 0, 1.0, 0, stop());
        let d = dues(&mut p, 1300, &mut 0, 0);
        assert_eq!(d[1] - d[0], 2_000_000);
        let in_first = d.iter().filter(|&&t| t < 1_000_000_000).count();
        let in_second = d
            .iter()
            .filter(|&&t| (1_000_000_000..2_000_000_000).contains(&t))
            .count();
        assert_eq!(in_first, 500);
        // 750 gaps of 4/3 ms end exactly at the next second, give or take a rounding.
        assert!((750..=751).contains(&in_second), "{in_second}");
        assert_eq!(spec.rate.per_sec, 1000.0, "reports take the mean");
        assert!(Wave::new(1000.0, 1.0, 0.0, 900.0, 1.0).unwrap_err().contains("d > |a|"));
        assert!(Wave::new(10.0, 1.0, 0.0, 900.0, 0.0).unwrap_err().contains("above 0"));
    }

    #[test]
    fn poisson_gaps_average_the_interval_and_depend_on_the_seed() {
        let run = |thread: usize| {
            *dues(
                &mut pacer("1000", Arrival::Poisson, 1, thread, 0, 0),
                100_001,
                &mut 0,
                0,
            )
            .last()
            .unwrap()
        };
        let mean_gap = run(0) as f64 / 100_000.0;
        assert!((mean_gap - 1e6).abs() < 1e4, "mean gap {mean_gap} ns");
        assert_eq!(run(0), run(0));
        assert_ne!(run(0), run(1));
    }

    #[test]
    fn a_given_schedule_keeps_the_starts_the_program_sets() {
        // On 2 ticks per ns, from t0 = 100: each start is t0 plus twice the offset.
        let mut p = Pacer::given(100, 2.0, stop());
        assert!(p.is_active());
        let mut got = Vec::new();
        for offset in [0, 5, 5, 1_000] {
            p.set_upcoming(offset);
            got.push(p.upcoming(0));
            p.begin(false);
        }
        assert_eq!(got, vec![100, 110, 110, 2_100]);
        assert_eq!(p.units(), 4);
        // Other pacers ignore it.
        let mut fixed = pacer("1000", Arrival::Constant, 1, 0, 0, 0);
        fixed.set_upcoming(7);
        assert_eq!(fixed.upcoming(0), 0);
    }

    #[test]
    fn byte_rates_space_units_by_the_mean_bytes_written() {
        // 1 MB/s on one thread; units write 1000 bytes each: 1 ms apart.
        let mut written = 500;
        let mut p = pacer("1MB/s", Arrival::Constant, 1, 0, 0, written);
        assert_eq!(dues(&mut p, 3, &mut written, 1000), vec![0, 1_000_000, 2_000_000]);
        // A unit that writes nothing lowers the running mean to 3000 bytes over 4
        // units, so the gap after it is 0.75 ms.
        assert_eq!(dues(&mut p, 2, &mut written, 0), vec![3_000_000, 3_750_000]);
    }

    #[test]
    fn the_first_operation_of_a_unit_fixes_its_lag() {
        let clock = quanta::Clock::new();
        let tpn = ticks_per_ns(&clock);
        let mut p = Pacer::new(&spec("1000", Arrival::Constant), 1, 0, 0, tpn, 0, stop());
        p.upcoming(0);
        p.begin(true);
        let at = |ns: f64| (ns * tpn) as u64;
        let lag = p.lag(at(3_000.0)).unwrap();
        assert!(lag.abs_diff(3_000) <= 2, "{lag}");
        assert_eq!(p.lag(at(9e9)), Some(lag), "the first operation fixed it");
        p.upcoming(0);
        p.begin(false);
        let late = p.lag(at(50e6)).unwrap();
        assert!(late.abs_diff(49_000_000) <= 2, "{late}");
        let stats = p.take_stats();
        assert_eq!((stats.waited, stats.late, stats.max_lag_ns), (1, 1, late));
        assert_eq!(p.take_stats().units(), 0);
    }

    #[test]
    fn a_worker_behind_schedule_begins_units_on_the_late_path() {
        // 1000 units/s on a nanosecond clock: due at 0, 1 ms, 2 ms, ...
        let mut p = pacer("1000", Arrival::Constant, 1, 0, 0, 0);
        assert!(p.try_begin_late(0), "the first unit is due at once");
        assert_eq!(p.lag(500), Some(500));
        assert!(!p.try_begin_late(999_999), "the second is not due yet");
        assert!(p.try_begin_late(5_000_000));
        assert_eq!(p.lag(5_000_100), Some(4_000_100), "start minus intended start");
        assert_eq!(p.lag(9_000_000), Some(4_000_100), "the first operation fixed it");
        assert!(p.try_begin_late(5_000_200));
        assert_eq!(p.upcoming(0), 3_000_000, "the late path keeps the schedule");
        let stats = p.take_stats();
        assert_eq!((stats.waited, stats.late), (0, 3));
        assert_eq!((stats.max_lag_ns, stats.final_lag_ns), (4_000_100, 4_000_100));
        // Lifetimes send every unit through upcoming and begin.
        p.close_late_path();
        assert!(!p.try_begin_late(u64::MAX - 1));
        assert_eq!(p.upcoming(0), 3_000_000);
        p.begin(false);
        assert_eq!(p.lag(3_000_050), Some(50));
        assert_eq!(p.take_stats().late, 1);
    }

    #[test]
    fn an_unpaced_worker_has_no_schedule() {
        let mut p = Pacer::default();
        assert!(!p.is_active());
        assert!(!p.try_begin_late(u64::MAX - 1));
        assert_eq!(p.lag(123), None);
        // Poisson arrivals never take the late path: their gaps are drawn.
        let mut p = pacer("1000", Arrival::Poisson, 1, 0, 0, 0);
        assert!(p.is_active() && !p.try_begin_late(u64::MAX - 1));
    }

    #[test]
    fn a_unit_that_waited_and_made_no_call_leaves_no_mark_on_the_next() {
        let mut p = pacer("1000", Arrival::Constant, 1, 0, 0, 0);
        assert_eq!(p.upcoming(0), 0);
        p.begin(true);
        // No call in that unit; the next is already late.
        assert!(!p.try_begin_late(5_000_000), "the late path waits for the next begin");
        assert_eq!(p.upcoming(0), 1_000_000);
        p.begin(false);
        assert_eq!(p.lag(5_000_000), Some(4_000_000));
        assert_eq!(p.lag(6_000_000), Some(4_000_000), "a second call keeps the lag");
        assert!(p.try_begin_late(6_000_100), "and the late path is open again");
        let stats = p.take_stats();
        assert_eq!((stats.waited, stats.late, stats.accuracy.len()), (1, 2, 0));
        // A unit that waited and made a call reopens it at once.
        assert_eq!(p.upcoming(0), 3_000_000);
        p.begin(true);
        assert_eq!(p.lag(3_000_200), Some(200));
        assert!(p.try_begin_late(9_000_000));
        assert_eq!(p.take_stats().accuracy.len(), 1);
    }
}
