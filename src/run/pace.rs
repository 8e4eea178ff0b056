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
            text: format!("{per_sec:.0}"),
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
    /// A mean gap in nanoseconds.
    Units(f64),
    /// Bytes per nanosecond: the mean gap is the thread's running mean of bytes per
    /// unit divided by this.
    Bytes(f64),
}

/// One worker's schedule and the lag of its current unit. Times are nanoseconds on
/// the worker's clock origin.
#[derive(Debug)]
pub struct Pacer {
    gap: Gap,
    arrival: Arrival,
    rng: Xoshiro256PlusPlus,
    stop: StopSignal,
    /// Units scheduled so far.
    units: u64,
    /// Intended start of the last scheduled unit.
    due: f64,
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
    /// Thread `thread` of `threads` starting its schedule at `t0_ns`, having written
    /// `written` bytes so far.
    pub fn new(spec: &PaceSpec, threads: usize, thread: usize, t0_ns: u64, written: u64, stop: StopSignal) -> Self {
        let share = spec.rate.per_sec / threads.max(1) as f64;
        let gap = if spec.rate.bytes {
            Gap::Bytes(share / 1e9)
        } else {
            Gap::Units(1e9 / share)
        };
        Pacer {
            gap,
            arrival: spec.arrival,
            rng: Xoshiro256PlusPlus::seed_from_u64(spec.seed.wrapping_add(thread as u64)),
            stop,
            units: 0,
            due: t0_ns as f64,
            written0: written,
            unit_due: 0,
            unit_waited: false,
            pending: false,
            lag: 0,
            stats: PaceStats::default(),
        }
    }

    /// Schedules the next unit and returns its intended start. `written` is the
    /// worker's running count of bytes written (used when pacing by bytes).
    pub fn next_due(&mut self, written: u64) -> u64 {
        if self.units > 0 {
            let mean = match self.gap {
                Gap::Units(ns) => ns,
                Gap::Bytes(per_ns) => (written - self.written0) as f64 / self.units as f64 / per_ns,
            };
            self.due += match self.arrival {
                Arrival::Constant => mean,
                Arrival::Poisson => {
                    let draw: f64 = Exp1.sample(&mut self.rng);
                    mean * draw
                }
            };
        }
        self.units += 1;
        self.due as u64
    }

    /// The scheduled unit is about to run; it waited for its start or not.
    #[inline]
    pub fn begin(&mut self, due: u64, waited: bool) {
        self.unit_due = due;
        self.unit_waited = waited;
        self.pending = true;
    }

    /// The current unit's lag, given the start of an operation in it: the first
    /// operation fixes it (start minus intended start, at least 0).
    #[inline]
    pub fn lag(&mut self, start_ns: impl FnOnce() -> u64) -> u64 {
        if self.pending {
            self.pending = false;
            self.lag = start_ns().saturating_sub(self.unit_due);
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

    /// Units scheduled so far.
    pub fn scheduled(&self) -> u64 {
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

    #[test]
    fn constant_arrivals_are_evenly_spaced_per_thread() {
        // 4000 units/s over 2 threads: 2000/s each, 500 us apart, the first at t0.
        let mut p = Pacer::new(&spec("4000", Arrival::Constant), 2, 1, 1_000, 0, stop());
        let dues: Vec<u64> = (0..4).map(|_| p.next_due(0)).collect();
        assert_eq!(dues, vec![1_000, 501_000, 1_001_000, 1_501_000]);
    }

    #[test]
    fn poisson_gaps_average_the_interval_and_depend_on_the_seed() {
        let run = |thread: usize| {
            let mut p = Pacer::new(&spec("1000", Arrival::Poisson), 1, thread, 0, 0, stop());
            (0..=100_000).map(|_| p.next_due(0)).last().unwrap()
        };
        let mean_gap = run(0) as f64 / 100_000.0;
        assert!((mean_gap - 1e6).abs() < 1e4, "mean gap {mean_gap} ns");
        assert_eq!(run(0), run(0));
        assert_ne!(run(0), run(1));
    }

    #[test]
    fn byte_rates_space_units_by_the_mean_bytes_written() {
        // 1 MB/s on one thread; units write 1000 bytes each: 1 ms apart.
        let mut p = Pacer::new(&spec("1MB/s", Arrival::Constant), 1, 0, 0, 500, stop());
        assert_eq!(p.next_due(500), 0);
        assert_eq!(p.next_due(1_500), 1_000_000);
        assert_eq!(p.next_due(2_500), 2_000_000);
        // A unit that writes nothing lowers the running mean to 2000 bytes over 3
        // units, so the next gap is 2/3 ms.
        assert_eq!(p.next_due(2_500), 2_666_666);
    }

    #[test]
    fn the_first_operation_of_a_unit_fixes_its_lag() {
        let mut p = Pacer::new(&spec("1000", Arrival::Constant), 1, 0, 0, 0, stop());
        let due = p.next_due(0);
        p.begin(due, true);
        assert_eq!(p.lag(|| 3_000), 3_000);
        assert_eq!(p.lag(|| unreachable!("the lag is already known")), 3_000);
        let due = p.next_due(0);
        p.begin(due, false);
        assert_eq!(p.lag(|| 50_000_000), 49_000_000);
        let stats = p.take_stats();
        assert_eq!((stats.waited, stats.late, stats.max_lag_ns), (1, 1, 49_000_000));
        assert_eq!(stats.final_lag_ns, 49_000_000);
        assert_eq!(p.take_stats().units(), 0);
    }
}
