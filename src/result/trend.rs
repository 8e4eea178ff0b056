//! Stationarity of a phase over its timeline intervals: the Mann-Kendall trend test
//! and the change from the phase's first third to its last, on throughput and on the
//! busiest operation kind's p99.
//!
//! A point's figures summarise a phase as if it were one steady state. When the
//! store changes under the load (compaction falling behind, a cache filling, a tree
//! growing a level), throughput or latency drifts across the phase and the summary
//! describes no moment of it. Mann-Kendall asks whether later intervals are
//! systematically above or below earlier ones, without assuming a distribution or a
//! straight line; the median of the last third of the intervals against the median
//! of the first third says by how much, robust to the odd slow interval and readable
//! as "fell 14%". A drift is reported only when both agree: significant at [`ALPHA`]
//! and a change of at least [`DRIFT`].

use super::Spread;
use crate::metrics::OpKind;

/// Significance at which a trend is called: strict, because timeline intervals are
/// serially correlated (which makes the test over-confident) and a suite of many
/// points would otherwise flag noise.
pub const ALPHA: f64 = 0.001;
/// The smallest change from a phase's first third to its last worth reporting.
pub const DRIFT: f64 = 0.10;
/// Intervals a phase needs before its trend is tested (the normal approximation of
/// Mann-Kendall's statistic is poor below about ten).
pub const MIN_INTERVALS: usize = 10;
/// Intervals are merged in consecutive groups down to at most this many before the
/// test, so a long run at a fine timeline costs O(`MAX_BINS`^2), not O(n^2).
pub const MAX_BINS: usize = 200;

/// One timeline interval of a timed phase, as the trend test needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalFigures {
    /// Workload units per second in the interval.
    pub wu_per_s: f64,
    /// Each operation kind's calls and service-time p99 (ns) in the interval.
    pub p99: Vec<(OpKind, u64, u64)>,
}

/// The outcome of the trend test on one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// Values tested (after grouping).
    pub n: usize,
    /// Mann-Kendall's S: concordant minus discordant pairs.
    pub s: i64,
    /// The standardised statistic (continuity-corrected, ties accounted for).
    pub z: f64,
    /// Two-sided p-value of no trend.
    pub p: f64,
    /// The median of the last third of the values against the median of the first
    /// third, as a share of the latter (negative: it fell).
    pub change: f64,
}

impl Trend {
    /// True when the series drifts: significant and large enough to matter.
    pub fn drifts(&self) -> bool {
        self.p < ALPHA && self.change.abs() >= DRIFT
    }
}

/// Consecutive values averaged in groups so that at most `max` remain.
pub fn group(values: &[f64], max: usize) -> Vec<f64> {
    if values.len() <= max || max == 0 {
        return values.to_vec();
    }
    let per = values.len().div_ceil(max);
    values
        .chunks(per)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}

/// Mann-Kendall and the change between thirds on `values` in time order; None with
/// fewer than [`MIN_INTERVALS`] values or a first third whose median is 0 (nothing to
/// compare a change with).
pub fn test(values: &[f64]) -> Option<Trend> {
    let x = group(values, MAX_BINS);
    let n = x.len();
    if n < MIN_INTERVALS {
        return None;
    }
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += (x[j] > x[i]) as i64 - (x[j] < x[i]) as i64;
        }
    }
    // Var(S) with the correction for tied groups of size t.
    let mut sorted = x.clone();
    sorted.sort_by(f64::total_cmp);
    let nf = n as f64;
    let mut var = nf * (nf - 1.0) * (2.0 * nf + 5.0);
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && sorted[j] == sorted[i] {
            j += 1;
        }
        let t = (j - i) as f64;
        var -= t * (t - 1.0) * (2.0 * t + 5.0);
        i = j;
    }
    var /= 18.0;
    let z = match s {
        0 => 0.0,
        _ if var <= 0.0 => 0.0,
        s if s > 0 => (s - 1) as f64 / var.sqrt(),
        s => (s + 1) as f64 / var.sqrt(),
    };
    let p = libm::erfc(z.abs() / std::f64::consts::SQRT_2);
    let third = n / 3;
    let first = Spread::of(&x[..third]).median;
    if first == 0.0 {
        return None;
    }
    let last = Spread::of(&x[n - third..]).median;
    Some(Trend {
        n,
        s,
        z,
        p,
        change: (last - first) / first,
    })
}

/// The kind with the most calls over `intervals`, and its p99 series over the
/// intervals in which it was called.
pub fn busiest_p99(intervals: &[IntervalFigures]) -> Option<(OpKind, Vec<f64>)> {
    let mut calls: Vec<(OpKind, u64)> = Vec::new();
    for (kind, n, _) in intervals.iter().flat_map(|i| i.p99.iter()) {
        match calls.iter_mut().find(|(k, _)| k == kind) {
            Some((_, c)) => *c += n,
            None => calls.push((*kind, *n)),
        }
    }
    let (kind, _) = calls.into_iter().max_by_key(|(_, c)| *c)?;
    let series = intervals
        .iter()
        .filter_map(|i| {
            i.p99
                .iter()
                .find(|(k, n, _)| *k == kind && *n > 0)
                .map(|(_, _, p)| *p as f64)
        })
        .collect();
    Some((kind, series))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_rise_is_a_trend_measured_between_its_thirds() {
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        let t = test(&x).unwrap();
        // Every pair concordant: S = 45, Var = 10 * 9 * 25 / 18 = 125.
        assert_eq!(t.s, 45);
        assert!((t.z - 44.0 / 125f64.sqrt()).abs() < 1e-12, "{t:?}");
        assert!(t.p < 1e-4 && t.p > 5e-5, "{t:?}");
        // The last third's median 9 against the first third's 2.
        assert!((t.change - 3.5).abs() < 1e-12, "{t:?}");
        assert!(t.drifts());
        let falling: Vec<f64> = x.iter().rev().copied().collect();
        let f = test(&falling).unwrap();
        assert_eq!(f.s, -45);
        assert!((f.change - (2.0 - 9.0) / 9.0).abs() < 1e-12 && f.drifts(), "{f:?}");
    }

    #[test]
    fn ties_shrink_the_variance_and_noise_is_no_trend() {
        // Two tied pairs: Var = (10*9*25 - 2 * 2*1*9) / 18 = 123.
        let x = [1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0, 9.0];
        let t = test(&x).unwrap();
        assert_eq!(t.s, 43);
        assert!((t.z - 42.0 / 123f64.sqrt()).abs() < 1e-12, "{t:?}");
        // A level series with a spike and alternating noise has no trend.
        let level = [
            100.0, 103.0, 98.0, 250.0, 101.0, 99.0, 102.0, 97.0, 100.0, 103.0, 98.0, 101.0,
        ];
        let l = test(&level).unwrap();
        assert!(!l.drifts(), "{l:?}");
        assert!(l.change.abs() < 0.05, "{l:?}");
        // Significant but small: a rise of 1.3% across the phase is not reported.
        let small: Vec<f64> = (0..40).map(|i| 1000.0 + f64::from(i) * 0.5).collect();
        let s = test(&small).unwrap();
        assert!(s.p < ALPHA && !s.drifts(), "{s:?}");
        assert!(test(&x[..9]).is_none());
        assert!(test(&[0.0; 12]).is_none());
    }

    #[test]
    fn long_series_are_grouped_and_the_busiest_kind_is_chosen() {
        let long: Vec<f64> = (0..1000).map(f64::from).collect();
        let g = group(&long, 200);
        assert_eq!(g.len(), 200);
        assert_eq!(g[0], 2.0);
        assert_eq!(test(&long).unwrap().n, 200);
        let iv = |get: u64, put: u64| IntervalFigures {
            wu_per_s: 1.0,
            p99: vec![(OpKind::Get, get, 10 * get), (OpKind::Put, put, 7)],
        };
        let (kind, series) = busiest_p99(&[iv(5, 3), iv(0, 3), iv(6, 3)]).unwrap();
        assert_eq!(kind, OpKind::Get);
        assert_eq!(series, vec![50.0, 60.0]);
        assert!(busiest_p99(&[]).is_none());
    }
}
