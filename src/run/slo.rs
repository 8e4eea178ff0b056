//! The SLO search (`--slo 'p99<2ms'`): the highest rate at which a response-time
//! target still holds, per grid point.
//!
//! First a short closed-loop run measures the point's capacity C. Then a bounded
//! bisection over rates in (0, C] runs short open-loop probes: a probe passes when the
//! chosen percentile of response time (one operation kind, or all merged) is under the
//! limit and the run kept up with its schedule (its final lag is under the limit too).
//! The first probe is C itself; the search stops after [`MAX_PROBES`] probes or when
//! the bracket between the best pass and the lowest failure is within [`BRACKET`].

use crate::kv::pace::Rate;
use crate::result::slo::{Probe, Slo, SloReport};
use crate::result::{PointResult, PointStatus};
use crate::workload::Budget;

use super::grid::Cell;
use super::runner::{Runner, Shared};

/// Most probes per point (after the capacity run).
pub const MAX_PROBES: usize = 10;

/// The search stops once (lowest failing - highest passing) / lowest failing is this small.
pub const BRACKET: f64 = 0.02;

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
}
