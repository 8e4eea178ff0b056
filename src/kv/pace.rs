//! Open-loop pacing: target rates, arrival processes, and one worker's schedule.
//!
//! A run with a target rate gives every unit an intended start on its thread's
//! schedule: the rate is split evenly over the threads, each thread's first unit is
//! due when the step starts, and later ones follow at constant gaps or at exponential
//! gaps (Poisson arrivals, seeded with seed + thread). A worker that is ahead waits
//! for the intended start; a worker that fell behind issues the late unit at once,
//! neither skipping it nor waiting, and the lag shows up in response times.
//!
//! One worker's schedule is a [`super::pacer::Pacer`]; the waiting itself lives in
//! [`super::Kv::begin_unit`], next to the expiries it issues while it waits.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A target rate for a whole run, split evenly over its threads.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Units per second, or bytes per second when `bytes` is set.
    pub per_sec: f64,
    /// Paced by the bytes units write (key and value bytes of put, mput and append).
    pub bytes: bool,
    /// As given on the command line ("5000", "200MB/s"), for reports.
    pub text: String,
    /// A rate that follows a sine wave (a spec group's `rate: {"sine": ...}`); then
    /// `per_sec` is its mean.
    pub wave: Option<Wave>,
}

/// A rate that follows a sine wave, as db_bench's mixgraph paces its queries:
/// a·sin(b·t + c) + d units per second at t seconds into the step, recomputed every
/// `interval` seconds and held in between (db_bench's `sine_a` to `sine_d` and
/// `sine_mix_rate_interval_milliseconds`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wave {
    /// Amplitude, units per second.
    pub a: f64,
    /// Angular frequency, radians per second.
    pub b: f64,
    /// Phase, radians.
    pub c: f64,
    /// Mean, units per second.
    pub d: f64,
    /// Seconds between recomputations.
    pub interval: f64,
}

impl Wave {
    /// A wave that stays above 0 units per second, or what is wrong with it.
    pub fn new(a: f64, b: f64, c: f64, d: f64, interval: f64) -> Result<Wave, String> {
        if let Some((name, v)) = [("a", a), ("b", b), ("c", c), ("d", d), ("interval", interval)]
            .into_iter()
            .find(|(_, v)| !v.is_finite())
        {
            return Err(format!("sine: {name} must be a finite number, got {v}"));
        }
        if interval <= 0.0 {
            return Err(format!(
                "sine: interval is in seconds and must be above 0, got {interval}"
            ));
        }
        if d - a.abs() <= 0.0 {
            return Err(format!(
                "sine: the rate a·sin(b·t + c) + d must stay above 0 operations per second; give d > |a| \
                 (got a {a}, d {d})"
            ));
        }
        Ok(Wave { a, b, c, d, interval })
    }

    /// The rate held at `secs` seconds into the step: the wave's value at the start of
    /// that interval.
    #[inline]
    pub fn at(&self, secs: f64) -> f64 {
        let t = (secs / self.interval).floor() * self.interval;
        self.a * (self.b * t + self.c).sin() + self.d
    }

    /// A rate that follows this wave.
    pub fn rate(self) -> Rate {
        Rate {
            per_sec: self.d,
            bytes: false,
            text: format!(
                "{}*sin({}*t+{})+{} per {}s",
                self.a, self.b, self.c, self.d, self.interval
            ),
            wave: Some(self),
        }
    }
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
            text: crate::metrics::format::rate(per_sec),
            wave: None,
        }
    }

    /// A phase's own rate (a spec group's, or YCSB's target), shown as written.
    pub fn phase(per_sec: f64) -> Rate {
        Rate {
            per_sec,
            bytes: false,
            text: format!("{per_sec}"),
            wave: None,
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
                wave: None,
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
            wave: None,
        })
    }

    /// The target as shown in reports: "5000 wu/s" or "200MB/s".
    pub fn label(&self) -> String {
        if self.bytes {
            self.text.clone()
        } else {
            format!("{} wu/s", crate::metrics::format::rate(self.per_sec))
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
            format!("r{}", crate::metrics::format::rate(self.per_sec))
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

/// Clock ticks per nanosecond of `clock` (1 where the clock counts nanoseconds).
pub fn ticks_per_ns(clock: &quanta::Clock) -> f64 {
    let ticks = 1u64 << 40;
    ticks as f64 / clock.delta_as_nanos(0, ticks).max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
