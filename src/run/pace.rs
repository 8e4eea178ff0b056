//! Open-loop pacing: target rates, arrival processes, and one worker's schedule.
//!
//! A run with a target rate gives every unit an intended start on its thread's
//! schedule: the rate is split evenly over the threads, each thread's first unit is
//! due when the step starts, and later ones follow at constant gaps or at exponential
//! gaps (Poisson arrivals, seeded with seed + thread). A worker that is ahead waits
//! for the intended start; a worker that fell behind issues the late unit at once,
//! neither skipping it nor waiting, and the lag shows up in response times.
//!
//! The waiting itself lives in [`super::kv::Kv::begin_unit`], next to the expiries it
//! issues while it waits; this file is the schedule arithmetic.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::metrics::PaceStats;

/// A target rate for a whole run, split evenly over its threads.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Units per second, or bytes per second when `bytes` is set.
    pub per_sec: f64,
    /// Paced by the bytes units write (key and value bytes of put, mput and append).
    pub bytes: bool,
    /// As given on the command line ("5000", "200MB/s"), for reports.
    pub text: String,
}

/// Byte-rate suffixes `--rate` accepts: decimal (SI, as disk vendors quote) and binary.
const BYTE_UNITS: [(&str, f64); 8] = [
    ("B", 1.0),
    ("KB", 1e3),
    ("kB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("KiB", 1024.0),
    ("MiB", 1024.0 * 1024.0),
    ("GiB", 1024.0 * 1024.0 * 1024.0),
];

impl Rate {
    /// A rate in units per second.
    pub fn units(per_sec: f64) -> Rate {
        Rate {
            per_sec,
            bytes: false,
            text: crate::report::format::rate(per_sec),
        }
    }

    /// Parses one `--rate` value: units per second ("5000", "2.5e3", "5000/s"), or a
    /// bandwidth with a unit and "/s" ("200MB/s", "1.5GB/s", "512KiB/s"; KB, MB and GB
    /// are powers of 1000, KiB, MiB and GiB powers of 1024).
    pub fn parse(text: &str) -> Result<Rate, String> {
        let t = text.trim();
        let bad = |why: &str| {
            format!(
                "--rate '{text}': {why} (give units per second such as 5000, or a bandwidth such as \
                 200MB/s; KB/MB/GB are powers of 1000, KiB/MiB/GiB powers of 1024)"
            )
        };
        let (body, per_sec_suffix) = match t.strip_suffix("/s") {
            Some(b) => (b.trim_end(), true),
            None => (t, false),
        };
        let split = body
            .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
            .unwrap_or(body.len());
        let (number, unit) = body.split_at(split);
        let value: f64 = number.trim().parse().map_err(|_| bad("not a number"))?;
        if !(value.is_finite() && value > 0.0) {
            return Err(bad("must be positive"));
        }
        if unit.is_empty() {
            return Ok(Rate {
                per_sec: value,
                bytes: false,
                text: t.to_string(),
            });
        }
        let scale = BYTE_UNITS
            .iter()
            .find(|(u, _)| *u == unit.trim())
            .map(|(_, s)| *s)
            .ok_or_else(|| bad(&format!("unknown unit '{}'", unit.trim())))?;
        if !per_sec_suffix {
            return Err(bad(&format!("a bandwidth needs '/s', as in {body}/s")));
        }
        Ok(Rate {
            per_sec: value * scale,
            bytes: true,
            text: t.to_string(),
        })
    }

    /// The target as shown in reports: "5000 wu/s" or "200MB/s".
    pub fn label(&self) -> String {
        if self.bytes {
            self.text.clone()
        } else {
            format!("{} wu/s", crate::report::format::rate(self.per_sec))
        }
    }

    /// `bytes_per_sec` in this target's own unit: "199.87MB/s" for a target of "200MB/s".
    pub fn bandwidth(&self, bytes_per_sec: f64) -> String {
        let body = self.text.trim_end_matches("/s");
        let (unit, scale) = BYTE_UNITS
            .iter()
            .rev()
            .find(|(u, _)| body.trim_end().ends_with(u))
            .copied()
            .unwrap_or(("B", 1.0));
        format!("{:.2}{unit}/s", bytes_per_sec / scale)
    }

    /// A short label for point names: "r5000" or "r200MB/s".
    pub fn short(&self) -> String {
        if self.bytes {
            format!("r{}", self.text)
        } else {
            format!("r{}", crate::report::format::rate(self.per_sec))
        }
    }
}

/// When units arrive on a paced schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Arrival {
    /// At fixed gaps of 1/rate.
    #[default]
    Constant,
    /// At exponentially distributed gaps of mean 1/rate (a Poisson process).
    Poisson,
}

impl Arrival {
    /// Parses `--arrival`.
    pub fn parse(s: &str) -> Result<Arrival, String> {
        match s.trim() {
            "constant" => Ok(Arrival::Constant),
            "poisson" => Ok(Arrival::Poisson),
            other => Err(format!("--arrival '{other}': expected constant or poisson")),
        }
    }

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

impl fmt::Display for Arrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a crew paces its workers.
#[derive(Debug, Clone, PartialEq)]
pub struct PaceSpec {
    /// The whole crew's target.
    pub rate: Rate,
    /// Arrival process.
    pub arrival: Arrival,
    /// Base seed; thread t draws its Poisson gaps from seed + t.
    pub seed: u64,
}

/// Tells a waiting worker that its step is being stopped (deadline, failure, Ctrl-C),
/// so a long gap between units never delays the end of a step.
#[derive(Debug, Clone)]
pub struct StopSignal {
    stop_before: Arc<AtomicUsize>,
    step: usize,
}

impl StopSignal {
    /// Raised once `stop_before` exceeds `step` (the crew's per-step stop flag).
    pub fn new(stop_before: Arc<AtomicUsize>, step: usize) -> Self {
        StopSignal { stop_before, step }
    }

    /// True once the step must stop.
    #[inline]
    pub fn raised(&self) -> bool {
        self.stop_before.load(Ordering::Relaxed) > self.step
    }
}

/// How the gap between two units is sized.
#[derive(Debug, Clone, Copy)]
enum Gap {
    /// Constant arrivals: whole ticks plus a fraction in units of 2^-32 ticks, added
    /// in integers (the common case costs no floating point).
    Fixed { ticks: u64, frac: u32 },
    /// Poisson arrivals: exponential gaps of this mean, in ticks.
    Exp(f64),
    /// By bandwidth, in bytes per tick: the mean gap is the thread's running mean of
    /// bytes per unit divided by this (exponential around it for Poisson arrivals).
    Bytes(f64),
}

/// Clock ticks per nanosecond of `clock` (1 where the clock counts nanoseconds).
pub fn ticks_per_ns(clock: &quanta::Clock) -> f64 {
    let ticks = 1u64 << 40;
    ticks as f64 / clock.delta_as_nanos(0, ticks).max(1) as f64
}

/// One worker's schedule and the lag of its current unit. Intended starts are raw
/// clock readings, so comparing one with the last reading taken costs no conversion.
#[derive(Debug)]
pub struct Pacer {
    gap: Gap,
    arrival: Arrival,
    rng: Xoshiro256PlusPlus,
    stop: StopSignal,
    /// Units begun so far.
    units: u64,
    /// Intended start of the upcoming unit in raw ticks, and its fraction of a tick
    /// (2^-32 units); `drawn` says whether it is current.
    due_raw: u64,
    due_frac: u64,
    drawn: bool,
    /// Bytes the worker had written when pacing began.
    written0: u64,
    /// The current unit: its intended start, whether it waited, and its lag once its
    /// first operation started.
    unit_due: u64,
    unit_waited: bool,
    pending: bool,
    lag: u64,
    stats: PaceStats,
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
        let gap = if spec.rate.bytes {
            Gap::Bytes(share / 1e9 / ticks_per_ns)
        } else {
            let mean = 1e9 / share * ticks_per_ns;
            match spec.arrival {
                Arrival::Constant => Gap::Fixed {
                    ticks: mean as u64,
                    frac: (mean.fract() * 4_294_967_296.0) as u32,
                },
                Arrival::Poisson => Gap::Exp(mean),
            }
        };
        Pacer {
            gap,
            arrival: spec.arrival,
            rng: Xoshiro256PlusPlus::seed_from_u64(spec.seed.wrapping_add(thread as u64)),
            stop,
            units: 0,
            due_raw: t0,
            due_frac: 0,
            drawn: true,
            written0: written,
            unit_due: 0,
            unit_waited: false,
            pending: false,
            lag: 0,
            stats: PaceStats::default(),
        }
    }

    /// The intended start of the upcoming unit, as a raw clock reading. It is drawn
    /// once (a Poisson gap is never redrawn) from the gap after the previous unit;
    /// `written` is the worker's running count of bytes written (pacing by bytes).
    #[inline]
    pub fn upcoming(&mut self, written: u64) -> u64 {
        if !self.drawn {
            self.drawn = true;
            match self.gap {
                Gap::Fixed { ticks, frac } => {
                    self.due_frac += u64::from(frac);
                    self.due_raw += ticks + (self.due_frac >> 32);
                    self.due_frac &= 0xffff_ffff;
                }
                Gap::Exp(mean) => self.advance(mean),
                Gap::Bytes(per_tick) => self.advance((written - self.written0) as f64 / self.units as f64 / per_tick),
            }
        }
        self.due_raw
    }

    /// Moves the upcoming start by a gap of `mean` ticks (exponential around it for
    /// Poisson arrivals), keeping the fraction of a tick.
    fn advance(&mut self, mean: f64) {
        let gap = match self.arrival {
            Arrival::Constant => mean,
            Arrival::Poisson => {
                let draw: f64 = Exp1.sample(&mut self.rng);
                mean * draw
            }
        };
        let frac = self.due_frac as f64 / 4_294_967_296.0 + gap;
        self.due_raw += frac as u64;
        self.due_frac = (frac.fract() * 4_294_967_296.0) as u64;
    }

    /// The upcoming unit starts now; it waited for its intended start or not.
    #[inline]
    pub fn begin(&mut self, waited: bool) {
        self.units += 1;
        self.drawn = false;
        self.unit_due = self.due_raw;
        self.unit_waited = waited;
        self.pending = true;
    }

    /// The current unit's lag in nanoseconds, given the raw start of an operation in
    /// it: the first operation fixes it (its start minus the intended start, at least 0).
    #[inline]
    pub fn lag(&mut self, clock: &quanta::Clock, start: u64) -> u64 {
        if self.pending {
            self.pending = false;
            self.lag = clock.delta_as_nanos(self.unit_due, start);
            self.stats.unit(self.lag, self.unit_waited);
        }
        self.lag
    }

    /// True once the step must stop.
    #[inline]
    pub fn stopping(&self) -> bool {
        self.stop.raised()
    }

    /// Hands over the schedule statistics gathered so far and starts afresh.
    pub fn take_stats(&mut self) -> PaceStats {
        std::mem::take(&mut self.stats)
    }

    /// Units begun so far.
    pub fn units(&self) -> u64 {
        self.units
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn rates_parse_as_units_or_bandwidths() {
        let r = Rate::parse("5000").unwrap();
        assert_eq!((r.per_sec, r.bytes), (5000.0, false));
        assert_eq!(Rate::parse("2.5e3/s").unwrap().per_sec, 2500.0);
        let b = Rate::parse("200MB/s").unwrap();
        assert_eq!((b.per_sec, b.bytes), (200e6, true));
        assert_eq!(Rate::parse("1.5 GB/s").unwrap().per_sec, 1.5e9);
        assert_eq!(Rate::parse("2KiB/s").unwrap().per_sec, 2048.0);
        for bad in ["0", "-5", "fast", "200MB", "3XB/s", "nan", "inf", ""] {
            assert!(Rate::parse(bad).is_err(), "{bad} accepted");
        }
        assert!(Rate::parse("200MB").unwrap_err().contains("needs '/s'"));
        assert_eq!(b.bandwidth(199_870_000.0), "199.87MB/s");
        assert_eq!(Rate::parse("1MiB/s").unwrap().bandwidth(524_288.0), "0.50MiB/s");
        assert_eq!(Rate::parse("10B/s").unwrap().bandwidth(9.0), "9.00B/s");
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
        let lag = p.lag(&clock, at(3_000.0));
        assert!(lag.abs_diff(3_000) <= 2, "{lag}");
        assert_eq!(p.lag(&clock, at(9e9)), lag, "the first operation fixed it");
        p.upcoming(0);
        p.begin(false);
        let late = p.lag(&clock, at(50e6));
        assert!(late.abs_diff(49_000_000) <= 2, "{late}");
        let stats = p.take_stats();
        assert_eq!((stats.waited, stats.late, stats.max_lag_ns), (1, 1, late));
        assert_eq!(p.take_stats().units(), 0);
    }
}
