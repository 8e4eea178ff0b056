//! Spread across repeats, as YCSB-IVS charts it: the mean of a figure over repeats and
//! its 95% interval, mean +- 1.96 standard errors (the sample standard deviation over
//! the square root of the number of repeats).

use std::collections::BTreeMap;

use super::per_sec;
use crate::metrics::{OpKind, Recorder};

/// z for a two-sided 95% interval under the normal approximation the paper uses.
pub const Z95: f64 = 1.96;

/// A figure over repeats.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Interval {
    /// Mean over repeats.
    pub mean: f64,
    /// Half-width of the 95% interval (0 with a single repeat).
    pub ci95: f64,
    /// Repeats.
    pub n: usize,
}

impl Interval {
    /// The interval of `values`.
    pub fn of(values: &[f64]) -> Interval {
        let n = values.len();
        if n == 0 {
            return Interval::default();
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let ci95 = if n < 2 {
            0.0
        } else {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            Z95 * var.sqrt() / (n as f64).sqrt()
        };
        Interval { mean, ci95, n }
    }

    /// Lower end of the interval.
    pub fn low(&self) -> f64 {
        self.mean - self.ci95
    }

    /// Upper end of the interval.
    pub fn high(&self) -> f64 {
        self.mean + self.ci95
    }
}

/// The per-operation latency figures kept for each repeat, in report order.
pub const LATENCY_FIGURES: [&str; 5] = ["mean_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns"];

/// Where the mean is in [`LATENCY_FIGURES`].
pub const MEAN: usize = 0;
/// Where the p99 is in [`LATENCY_FIGURES`].
pub const P99: usize = 2;

/// One repeat's figures of one point: throughput and, per operation kind, the
/// latency figures of [`LATENCY_FIGURES`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepeatFigures {
    /// Units per second.
    pub wu_per_s: f64,
    /// Primitive operations per second.
    pub ops_per_s: f64,
    /// Per kind, the values of [`LATENCY_FIGURES`].
    pub ops: BTreeMap<OpKind, [f64; 5]>,
}

impl RepeatFigures {
    /// The figures of one repeat's recorder over `units` units in `wall_ns`.
    pub fn of(rec: &Recorder, units: u64, wall_ns: u64) -> RepeatFigures {
        let ops = rec
            .used()
            .map(|(kind, s)| {
                let h = &s.hist;
                (
                    kind,
                    [
                        h.mean(),
                        h.value_at_quantile(0.5) as f64,
                        h.value_at_quantile(0.99) as f64,
                        h.value_at_quantile(0.999) as f64,
                        h.max() as f64,
                    ],
                )
            })
            .collect();
        RepeatFigures {
            wu_per_s: per_sec(units, wall_ns),
            ops_per_s: per_sec(rec.prim_ops(), wall_ns),
            ops,
        }
    }
}

/// Intervals of a point's figures over its repeats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Intervals {
    /// Units per second.
    pub wu_per_s: Interval,
    /// Primitive operations per second.
    pub ops_per_s: Interval,
    /// Per kind, an interval per [`LATENCY_FIGURES`] entry (over the repeats that
    /// had calls of the kind).
    pub ops: BTreeMap<OpKind, [Interval; 5]>,
}

impl Intervals {
    /// The intervals over `repeats`.
    pub fn of(repeats: &[RepeatFigures]) -> Intervals {
        let take = |f: &dyn Fn(&RepeatFigures) -> f64| Interval::of(&repeats.iter().map(f).collect::<Vec<_>>());
        let kinds: std::collections::BTreeSet<OpKind> = repeats.iter().flat_map(|r| r.ops.keys().copied()).collect();
        let ops = kinds
            .into_iter()
            .map(|kind| {
                let per = |i: usize| {
                    Interval::of(
                        &repeats
                            .iter()
                            .filter_map(|r| r.ops.get(&kind).map(|v| v[i]))
                            .collect::<Vec<_>>(),
                    )
                };
                (kind, std::array::from_fn(per))
            })
            .collect();
        Intervals {
            wu_per_s: take(&|r| r.wu_per_s),
            ops_per_s: take(&|r| r.ops_per_s),
            ops,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_matches_a_hand_computed_example() {
        // Values 10, 12, 14, 16, 18: mean 14, sample variance (16+4+0+4+16)/4 = 10,
        // standard error sqrt(10)/sqrt(5) = sqrt(2) = 1.41421..., ci95 = 1.96 * 1.41421 = 2.771859.
        let i = Interval::of(&[10.0, 12.0, 14.0, 16.0, 18.0]);
        assert_eq!(i.n, 5);
        assert!((i.mean - 14.0).abs() < 1e-12);
        assert!((i.ci95 - 2.771_858_6).abs() < 1e-6, "{}", i.ci95);
        assert!((i.low() - 11.228_141_4).abs() < 1e-6 && (i.high() - 16.771_858_6).abs() < 1e-6);
        // Two values 100 and 200: sd 70.7107, se 50, ci95 98.
        let two = Interval::of(&[100.0, 200.0]);
        assert!((two.mean - 150.0).abs() < 1e-12 && (two.ci95 - 98.0).abs() < 1e-9);
        assert_eq!(
            Interval::of(&[5.0]),
            Interval {
                mean: 5.0,
                ci95: 0.0,
                n: 1
            }
        );
        assert_eq!(Interval::of(&[]).n, 0);
    }

    #[test]
    fn intervals_over_repeats_per_kind() {
        let mut a = Recorder::new();
        a.record(OpKind::Get, 1000, 1);
        a.record(OpKind::Get, 3000, 1);
        let mut b = Recorder::new();
        b.record(OpKind::Get, 2000, 1);
        b.record(OpKind::Put, 500, 1);
        let ra = RepeatFigures::of(&a, 2, 1_000_000_000);
        let rb = RepeatFigures::of(&b, 4, 1_000_000_000);
        assert_eq!((ra.wu_per_s, rb.wu_per_s), (2.0, 4.0));
        let iv = Intervals::of(&[ra, rb]);
        assert_eq!(iv.wu_per_s.mean, 3.0);
        assert!((iv.wu_per_s.ci95 - Z95 * 2f64.sqrt() / 2f64.sqrt()).abs() < 1e-9);
        let get = iv.ops[&OpKind::Get];
        assert_eq!(get[0].n, 2);
        assert!((get[0].mean - 2000.0).abs() < 2.0, "mean of the two means");
        let put = iv.ops[&OpKind::Put];
        assert_eq!((put[0].n, put[0].ci95), (1, 0.0), "only repeat b had puts");
    }
}
