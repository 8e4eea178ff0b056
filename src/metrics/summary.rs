//! Latency summaries computed from whole histograms (never averaged percentiles).

use super::Histogram;

/// The percentiles every report carries, as (label, quantile).
pub const QUANTILES: [(&str, f64); 5] = [
    ("p50", 0.50),
    ("p90", 0.90),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
];

/// The numbers a report prints for one operation kind, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest sample.
    pub min: u64,
    /// Values at [`QUANTILES`], in that order.
    pub quantiles: [u64; QUANTILES.len()],
    /// Largest sample.
    pub max: u64,
}

impl LatencySummary {
    /// Summarises `hist`.
    pub fn of(hist: &Histogram) -> Self {
        let count = hist.len();
        if count == 0 {
            return LatencySummary {
                count,
                mean: 0.0,
                min: 0,
                quantiles: [0; QUANTILES.len()],
                max: 0,
            };
        }
        let mut quantiles = [0u64; QUANTILES.len()];
        for (slot, (_, q)) in quantiles.iter_mut().zip(QUANTILES) {
            *slot = hist.value_at_quantile(q);
        }
        LatencySummary {
            count,
            mean: hist.mean(),
            min: hist.min(),
            quantiles,
            max: hist.max(),
        }
    }

    /// The value at the named percentile ("p50", "p99.9", ...).
    pub fn at(&self, label: &str) -> Option<u64> {
        QUANTILES
            .iter()
            .position(|(l, _)| *l == label)
            .map(|i| self.quantiles[i])
    }

    /// Median.
    pub fn p50(&self) -> u64 {
        self.quantiles[0]
    }

    /// 99th percentile.
    pub fn p99(&self) -> u64 {
        self.quantiles[2]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::new_histogram;

    /// Exact quantile of a sorted sample, with HdrHistogram's convention (the
    /// smallest value with at least q of the samples at or below it).
    fn exact(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    fn check_accuracy(samples: &mut [u64]) {
        let mut h = new_histogram();
        for &s in samples.iter() {
            h.record(s).unwrap();
        }
        samples.sort_unstable();
        let sum = LatencySummary::of(&h);
        for (i, (label, q)) in QUANTILES.iter().enumerate() {
            let want = exact(samples, *q) as f64;
            let got = sum.quantiles[i] as f64;
            // 3 significant digits: relative error at most 1/1000 (plus the unit step).
            let tol = (want / 1000.0).max(1.0);
            assert!((got - want).abs() <= tol, "{label}: got {got}, exact {want}");
        }
        assert_eq!(sum.count, samples.len() as u64);
    }

    #[test]
    fn tiny_values_are_exact() {
        // keybench's log histogram over-reports values under 64 ns by up to 4x.
        let mut samples: Vec<u64> = (1..=63).cycle().take(10_000).collect();
        check_accuracy(&mut samples);
        let mut h = new_histogram();
        for v in [1u64, 2, 3, 7, 17, 33, 63] {
            h.record(v).unwrap();
            assert_eq!(h.value_at_quantile(1.0), v, "max of a single-value histogram");
            assert_eq!(h.min(), 1);
        }
    }

    #[test]
    fn accurate_across_the_whole_range() {
        // Log-spread samples from 1 ns to one hour.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut samples = Vec::with_capacity(200_000);
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let exp = (state % 4_200) as f64 / 100.0; // 0 .. 42 (2^42 ns ~ 73 min)
            samples.push((2f64.powf(exp) as u64).clamp(1, crate::metrics::HIST_MAX_NS));
        }
        check_accuracy(&mut samples);
    }

    #[test]
    fn each_decade_keeps_three_digits() {
        // Up to 5e11 ns (about 8 minutes) and the one-hour ceiling itself.
        let values = [1u64, 10, 100, 1_000, 10_000, 1_000_000, 1_000_000_000, 100_000_000_000]
            .map(|base| base * 5 + base / 3)
            .into_iter()
            .chain([crate::metrics::HIST_MAX_NS]);
        for v in values {
            let mut h = new_histogram();
            h.record(v).unwrap();
            let got = h.value_at_quantile(0.5);
            let err = (got as f64 - v as f64).abs() / v as f64;
            assert!(err <= 0.001, "value {v} reported as {got}");
        }
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        let s = LatencySummary::of(&new_histogram());
        assert_eq!(s.count, 0);
        assert_eq!(s.max, 0);
    }
}
