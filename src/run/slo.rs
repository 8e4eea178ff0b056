//! The SLO search (`--slo 'p99<2ms'`): the highest rate at which a response-time
//! target still holds, per grid point.
//!
//! First a short closed-loop run measures the point's capacity C. Then a bounded
//! bisection over rates in (0, C] runs short open-loop probes: a probe passes when the
//! chosen percentile of response time (one operation kind, or all merged) is under the
//! limit and the run kept up with its schedule (its final lag is under the limit too).
//! The first probe is C itself; the search stops after [`MAX_PROBES`] probes or when
//! the bracket between the best pass and the lowest failure is within [`BRACKET`].

use crate::metrics::{OpKind, Recorder};
use crate::workload::Budget;

use super::pace::Rate;
use super::result::{PointResult, PointStatus};
use super::{Cell, Runner, Shared};

/// Most probes per point (after the capacity run).
pub const MAX_PROBES: usize = 10;

/// The search stops once (lowest failing - highest passing) / lowest failing is this small.
pub const BRACKET: f64 = 0.02;

/// A response-time objective: a percentile of one kind (or all kinds) under a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The kind it judges; None for every kind merged.
    pub kind: Option<OpKind>,
    /// The percentile as written ("p99.9").
    pub percentile: String,
    /// The same as a quantile (0.999).
    pub quantile: f64,
    /// The limit in nanoseconds.
    pub limit_ns: u64,
    /// As given on the command line.
    pub text: String,
}

impl Slo {
    /// Parses `[KIND:]pN<LIMIT`, for example `p99<2ms` or `get:p99.9<500us`.
    pub fn parse(text: &str) -> Result<Slo, String> {
        let bad = |why: String| {
            format!("--slo '{text}': {why} (expected [KIND:]pN<LIMIT, for example 'p99<2ms' or 'get:p99.9<500us')")
        };
        let (lhs, limit) = text
            .split_once('<')
            .ok_or_else(|| bad("no '<' between the percentile and the limit".into()))?;
        let (kind, percentile) = match lhs.split_once(':') {
            Some((k, p)) => {
                let kind = OpKind::from_name(k.trim()).ok_or_else(|| {
                    let names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
                    bad(format!(
                        "unknown operation kind '{}' (one of {})",
                        k.trim(),
                        names.join(", ")
                    ))
                })?;
                (Some(kind), p.trim())
            }
            None => (None, lhs.trim()),
        };
        let q: f64 = percentile
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(format!("'{percentile}' is not a percentile such as p99 or p99.9")))?;
        if !(q > 0.0 && q <= 100.0) {
            return Err(bad(format!(
                "percentile {percentile} must be above p0 and at most p100"
            )));
        }
        let limit_ns = crate::clock::parse_duration_ns(limit).map_err(bad)?;
        if limit_ns == 0 {
            return Err(bad("the limit must be above zero".into()));
        }
        Ok(Slo {
            kind,
            percentile: percentile.to_string(),
            quantile: q / 100.0,
            limit_ns,
            text: text.trim().to_string(),
        })
    }

    /// The judged percentile of response time in `rec`, or None when it has no
    /// response times of the kind.
    pub fn value(&self, rec: &Recorder) -> Option<u64> {
        let hist = rec.response(self.kind)?;
        (!hist.is_empty()).then(|| hist.value_at_quantile(self.quantile))
    }
}

/// One open-loop probe of the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Target rate, units per second.
    pub target: f64,
    /// Achieved rate, units per second.
    pub achieved: f64,
    /// The judged percentile of response time (None: no such operations ran).
    pub value_ns: Option<u64>,
    /// How far behind schedule the probe ended.
    pub final_lag_ns: u64,
    /// Whether the objective held.
    pub pass: bool,
}

/// What an SLO search found at one point, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct SloReport {
    /// The objective.
    pub slo: Slo,
    /// Seconds per probe.
    pub probe_secs: f64,
    /// Closed-loop capacity, units per second.
    pub capacity: f64,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
    /// The highest passing target, if any passed.
    pub best: Option<f64>,
}

/// The search itself: probes `capacity` first, then bisects between the highest pass
/// (at first 0) and the lowest failure, at most [`MAX_PROBES`] times, until the two are
/// within [`BRACKET`]. `probe` says whether a rate passed, or None to abandon the
/// search. Returns the highest passing rate.
fn bisect(capacity: f64, mut probe: impl FnMut(f64) -> Option<bool>) -> Option<f64> {
    let (mut lo, mut hi) = (None::<f64>, None::<f64>);
    let mut target = capacity;
    for _ in 0..MAX_PROBES {
        let Some(pass) = probe(target) else { break };
        if pass {
            lo = Some(target);
            if hi.is_none() {
                break; // capacity itself passes: there is nothing above it to find
            }
        } else {
            hi = Some(target);
        }
        let h = hi.expect("a failure set the upper bound");
        let l = lo.unwrap_or(0.0);
        if h - l <= BRACKET * h {
            break;
        }
        target = (l + h) / 2.0;
    }
    lo
}

/// Searches one cell; the returned point is the best passing probe (else the last
/// probe, else the capacity run), carrying the search's report.
pub(super) fn search(
    runner: &Runner<'_>,
    cell: &Cell,
    batched: bool,
    shared: Option<&Result<Shared, String>>,
    slo: &Slo,
    probe_secs: f64,
) -> PointResult {
    let budget = Budget::Secs(probe_secs);
    let closed = Cell {
        rate: None,
        ..cell.clone()
    };
    let mut point = runner.measure(&closed, batched, shared, budget, 1);
    let capacity = point.wu_per_sec().median;
    let mut report = SloReport {
        slo: slo.clone(),
        probe_secs,
        capacity,
        probes: Vec::new(),
        best: None,
    };
    if point.status != PointStatus::Ok || point.errors() > 0 || capacity <= 0.0 {
        point.slo = Some(report);
        return point;
    }
    let mut best: Option<PointResult> = None;
    let mut failed = false;
    bisect(capacity, |target| {
        let probe_cell = Cell {
            rate: Some(Rate::units(target)),
            ..cell.clone()
        };
        let probe = runner.measure(&probe_cell, batched, shared, budget, 1);
        if probe.status != PointStatus::Ok || probe.errors() > 0 {
            // A failed or interrupted probe ends the search; its figures explain why.
            failed = true;
            point = probe;
            return None;
        }
        let value_ns = slo.value(&probe.merged);
        let final_lag_ns = probe.merged.pace().map_or(0, |p| p.final_lag_ns);
        let pass = value_ns.is_some_and(|v| v < slo.limit_ns) && final_lag_ns < slo.limit_ns;
        report.probes.push(Probe {
            target,
            achieved: probe.wu_per_sec().median,
            value_ns,
            final_lag_ns,
            pass,
        });
        if pass {
            report.best = Some(target);
            best = Some(probe);
        } else {
            point = probe;
        }
        Some(pass)
    });
    if failed {
        best = None;
    }
    let mut out = best.unwrap_or(point);
    out.slo = Some(report);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_with_kind_percentile_and_unit() {
        let s = Slo::parse("p99<2ms").unwrap();
        assert_eq!((s.kind, s.quantile, s.limit_ns), (None, 0.99, 2_000_000));
        let s = Slo::parse("get:p99.9<500us").unwrap();
        assert_eq!(
            (s.kind, s.percentile.as_str(), s.limit_ns),
            (Some(OpKind::Get), "p99.9", 500_000)
        );
        assert!((s.quantile - 0.999).abs() < 1e-12);
        assert_eq!(Slo::parse(" p50 < 1s ").unwrap().limit_ns, 1_000_000_000);
        for (bad, why) in [
            ("p99", "no '<'"),
            ("q99<1ms", "not a percentile"),
            ("p0<1ms", "above p0"),
            ("p101<1ms", "at most p100"),
            ("p99<2", "needs a unit"),
            ("p99<2min", "unknown time unit"),
            ("gte:p99<1ms", "unknown operation kind 'gte'"),
            ("p99<0ms", "above zero"),
        ] {
            let err = Slo::parse(bad).unwrap_err();
            assert!(err.contains(why) && err.contains("--slo"), "{bad}: {err}");
        }
    }

    /// A system that passes every rate up to `limit`.
    fn search_for(capacity: f64, limit: f64) -> (Option<f64>, Vec<f64>) {
        let mut probes = Vec::new();
        let best = bisect(capacity, |r| {
            probes.push(r);
            Some(r <= limit)
        });
        (best, probes)
    }

    #[test]
    fn bisection_converges_within_the_bracket_and_probe_budget() {
        for limit in [100.0, 430.0, 700.0, 980.0, 999.0] {
            let (best, probes) = search_for(1000.0, limit);
            let best = best.unwrap();
            assert!(
                best <= limit && best >= limit * (1.0 - BRACKET) - 1000.0 / 1024.0,
                "{limit}: {best}"
            );
            assert!(probes.len() <= MAX_PROBES, "{limit}: {probes:?}");
            assert_eq!(probes[0], 1000.0, "capacity is probed first");
        }
        // Capacity itself passing ends the search at once.
        assert_eq!(search_for(1000.0, 5000.0), (Some(1000.0), vec![1000.0]));
        // Nothing passing: ten halvings, no answer.
        let (best, probes) = search_for(1000.0, 0.1);
        assert_eq!((best, probes.len()), (None, MAX_PROBES));
        // An abandoned search keeps what it had.
        let mut n = 0;
        let best = bisect(1000.0, |r| {
            n += 1;
            (n < 3).then_some(r < 900.0)
        });
        assert_eq!(best, Some(500.0));
    }

    #[test]
    fn the_value_reads_response_times_of_one_kind_or_all() {
        let mut rec = Recorder::new();
        let slo = Slo::parse("p50<1ms").unwrap();
        rec.record(OpKind::Get, 10, 1);
        assert_eq!(slo.value(&rec), None, "closed loop has no response times");
        for _ in 0..10 {
            rec.record(OpKind::Get, 10, 1).record_response(1_000);
            rec.record(OpKind::Put, 10, 1).record_response(3_000);
        }
        rec.record(OpKind::Put, 10, 1).record_response(3_000);
        // Histogram values are exact to 3 significant digits.
        let near = |v: Option<u64>, want: u64| v.is_some_and(|v| v.abs_diff(want) <= want / 1000);
        assert!(near(slo.value(&rec), 3_000), "{:?}", slo.value(&rec));
        assert!(near(Slo::parse("get:p50<1ms").unwrap().value(&rec), 1_000));
        assert_eq!(Slo::parse("del:p50<1ms").unwrap().value(&rec), None);
    }
}
