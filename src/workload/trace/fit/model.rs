//! The fitted distributions and how well each fits: sizes as histograms (exact sizes
//! when there are few, equal-mass bins otherwise), key popularity as uniform, a Zipf
//! law (exponent by maximum likelihood) or an empirical rank histogram, whichever is
//! the simplest within [`GOOD_FIT`] of the trace in Kolmogorov-Smirnov distance.

use std::collections::BTreeMap;

/// The largest Kolmogorov-Smirnov distance a simpler model may have and still be
/// chosen over a histogram.
pub const GOOD_FIT: f64 = 0.05;

/// Sizes with at most this many distinct values are written exactly.
pub const EXACT_SIZES: usize = 64;

/// Bins of a size histogram that is not exact.
pub const SIZE_BINS: usize = 64;

/// An empirical distribution: bins [bounds[i], bounds[i + 1]) with weights (the
/// spec's `histogram`). Sizes use whole-number bounds; a count or length drawn from it
/// is rounded down.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Increasing bounds, one more than the weights.
    pub bounds: Vec<f64>,
    /// Each bin's weight (a count).
    pub weights: Vec<f64>,
}

impl Histogram {
    /// The chance that a whole number drawn from it (rounded down) is at most `x`.
    fn cdf_int(&self, x: u64) -> f64 {
        let total: f64 = self.weights.iter().sum();
        let mut acc = 0.0;
        for (i, w) in self.weights.iter().enumerate() {
            let (a, b) = (self.bounds[i], self.bounds[i + 1]);
            if (x as f64) + 1.0 >= b {
                acc += w;
            } else if (x as f64) >= a {
                acc += w * ((x as f64) + 1.0 - a) / (b - a);
                break;
            } else {
                break;
            }
        }
        acc / total
    }
}

/// A fitted size distribution.
#[derive(Debug, Clone)]
pub struct SizeFit {
    /// The histogram.
    pub hist: Histogram,
    /// Whether it holds every size exactly.
    pub exact: bool,
    /// Kolmogorov-Smirnov distance to the trace's sizes.
    pub ks: f64,
    /// Smallest and largest size, and the mean.
    pub min: u64,
    /// See `min`.
    pub max: u64,
    /// See `min`.
    pub mean: f64,
    /// Sizes counted.
    pub count: u64,
}

/// Fits a size histogram to `sizes` (size -> count; not empty).
pub fn fit_sizes(sizes: &BTreeMap<u64, u64>) -> SizeFit {
    let count: u64 = sizes.values().sum();
    let mean = sizes.iter().map(|(&s, &c)| s as f64 * c as f64).sum::<f64>() / count as f64;
    let (min, max) = (
        *sizes.keys().next().expect("not empty"),
        *sizes.keys().next_back().expect("not empty"),
    );
    let exact = sizes.len() <= EXACT_SIZES;
    // Runs of sizes [lo, hi] with their count, in order.
    let mut runs: Vec<(u64, u64, u64)> = Vec::new();
    if exact {
        runs.extend(sizes.iter().map(|(&s, &c)| (s, s, c)));
    } else {
        let target = count as f64 / SIZE_BINS as f64;
        // The open run: its first and last size and its count.
        let mut open: Option<(u64, u64, u64)> = None;
        for (&s, &c) in sizes {
            if c as f64 >= target {
                // A size as common as a whole bin keeps a bin of its own, so its mass is
                // not spread over its lighter neighbours.
                runs.extend(open.take());
                runs.push((s, s, c));
                continue;
            }
            let (start, _, acc) = open.unwrap_or((s, s, 0));
            open = Some((start, s, acc + c));
            if (acc + c) as f64 >= target {
                runs.extend(open.take());
            }
        }
        runs.extend(open);
    }
    let mut hist = Histogram {
        bounds: Vec::new(),
        weights: Vec::new(),
    };
    for (lo, hi, c) in runs {
        match hist.bounds.last() {
            Some(&b) if b < lo as f64 => {
                // A gap between two runs: a bin nothing is drawn from.
                hist.weights.push(0.0);
                hist.bounds.push(lo as f64);
            }
            Some(_) => {}
            None => hist.bounds.push(lo as f64),
        }
        hist.bounds.push(hi as f64 + 1.0);
        hist.weights.push(c as f64);
    }
    let ks = ks_sizes(sizes, count, &hist);
    SizeFit {
        hist,
        exact,
        ks,
        min,
        max,
        mean,
        count,
    }
}

/// Kolmogorov-Smirnov distance between the sizes and a histogram of whole numbers:
/// both are step functions that change only at whole numbers, and between two sizes of
/// the trace its function is flat, so the largest gap is at a size or just before the
/// next.
fn ks_sizes(sizes: &BTreeMap<u64, u64>, count: u64, hist: &Histogram) -> f64 {
    let mut d: f64 = 0.0;
    let mut acc = 0u64;
    let mut prev: Option<u64> = None;
    for (&s, &c) in sizes {
        if let Some(p) = prev
            && s > p + 1
        {
            d = d.max((acc as f64 / count as f64 - hist.cdf_int(s - 1)).abs());
        }
        acc += c;
        d = d.max((acc as f64 / count as f64 - hist.cdf_int(s)).abs());
        prev = Some(s);
    }
    d
}

/// How keys are chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum Popularity {
    /// Every live key alike.
    Uniform,
    /// Zipf's law over the live keys.
    Zipf {
        /// The exponent.
        s: f64,
    },
    /// An empirical histogram over rank fractions of the live keys.
    Ranks(Histogram),
}

/// The fitted popularity of the written keys.
#[derive(Debug, Clone)]
pub struct PopularityFit {
    /// The chosen model.
    pub chosen: Popularity,
    /// The exponent the Zipf law fitted, and each model's Kolmogorov-Smirnov distance.
    pub zipf_s: f64,
    /// See `zipf_s`.
    pub ks_uniform: f64,
    /// See `zipf_s`.
    pub ks_zipf: f64,
    /// See `zipf_s`.
    pub ks_ranks: f64,
    /// The rank histogram, whichever is chosen.
    pub ranks: Histogram,
    /// The accesses' mean age: each key's insert order as a fraction of the keys, 0
    /// the oldest, weighted by its accesses.
    pub age_trace: f64,
    /// The same if the most used keys were the oldest.
    pub age_oldest: f64,
    /// Keys and accesses counted.
    pub keys: u64,
    /// See `keys`.
    pub accesses: u64,
}

/// Fits the popularity of the written keys, each given as (accesses, insert order).
/// None when no key was accessed after its insert.
pub fn fit_popularity(keys: &[(u32, u32)]) -> Option<PopularityFit> {
    let mut counts: Vec<u64> = keys.iter().map(|&(a, _)| u64::from(a)).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let accesses: u64 = counts.iter().sum();
    if accesses == 0 {
        return None;
    }
    let n = counts.len();
    let zipf_s = zipf_mle(&counts, accesses);
    let empirical = |r: usize, acc: &mut u64| {
        *acc += counts[r];
        *acc as f64 / accesses as f64
    };
    // Uniform and Zipf, walking the ranks once.
    let (mut ks_uniform, mut ks_zipf) = (0.0f64, 0.0f64);
    let h = harmonic(n as u64, zipf_s);
    let (mut acc, mut zc) = (0u64, 0.0);
    for r in 0..n {
        let e = empirical(r, &mut acc);
        zc += ((r + 1) as f64).powf(-zipf_s);
        ks_uniform = ks_uniform.max((e - (r + 1) as f64 / n as f64).abs());
        ks_zipf = ks_zipf.max((e - zc / h).abs());
    }
    let ranks = rank_histogram(&counts);
    let mut ks_ranks = 0.0f64;
    let mut acc = 0u64;
    let total: f64 = ranks.weights.iter().sum();
    let mut bin = 0;
    let mut below = 0.0;
    for r in 0..n {
        let e = empirical(r, &mut acc);
        // Ranks r' <= r are the fractions below (r + 1) / n.
        let x = (r + 1) as f64 / n as f64;
        while bin < ranks.weights.len() && ranks.bounds[bin + 1] <= x + 1e-12 {
            below += ranks.weights[bin];
            bin += 1;
        }
        let partial = if bin < ranks.weights.len() {
            let (a, b) = (ranks.bounds[bin], ranks.bounds[bin + 1]);
            ranks.weights[bin] * ((x - a) / (b - a)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        ks_ranks = ks_ranks.max((e - (below + partial) / total).abs());
    }
    let chosen = if ks_uniform <= GOOD_FIT {
        Popularity::Uniform
    } else if ks_zipf <= GOOD_FIT {
        Popularity::Zipf { s: zipf_s }
    } else {
        Popularity::Ranks(ranks.clone())
    };
    let (age_trace, age_oldest) = mean_age(keys, &counts, accesses);
    Some(PopularityFit {
        chosen,
        zipf_s,
        ks_uniform,
        ks_zipf,
        ks_ranks,
        ranks,
        age_trace,
        age_oldest,
        keys: n as u64,
        accesses,
    })
}

/// The maximum-likelihood Zipf exponent of rank counts sorted high to low: the `s`
/// that maximises -s * sum(c_r ln r) - N ln H(n, s), found by golden-section search
/// in (0, 4] (the log-likelihood is concave in s).
fn zipf_mle(counts: &[u64], total: u64) -> f64 {
    let n = counts.len() as u64;
    let weighted_log: f64 = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(r, &c)| c as f64 * ((r + 1) as f64).ln())
        .sum();
    let ll = |s: f64| -s * weighted_log - total as f64 * harmonic(n, s).ln();
    let (mut a, mut b) = (1e-3, 4.0);
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut x1, mut x2) = (b - phi * (b - a), a + phi * (b - a));
    let (mut f1, mut f2) = (ll(x1), ll(x2));
    for _ in 0..60 {
        if f1 < f2 {
            a = x1;
            x1 = x2;
            f1 = f2;
            x2 = a + phi * (b - a);
            f2 = ll(x2);
        } else {
            b = x2;
            x2 = x1;
            f2 = f1;
            x1 = b - phi * (b - a);
            f1 = ll(x1);
        }
    }
    (a + b) / 2.0
}

/// H(n, s) = sum of r^-s for r in 1..=n: exact for the first 10,000 terms, the rest
/// by the Euler-Maclaurin formula (an error far below what a fit can tell).
pub fn harmonic(n: u64, s: f64) -> f64 {
    const EXACT: u64 = 10_000;
    let m = n.min(EXACT);
    let head: f64 = (1..=m).map(|r| (r as f64).powf(-s)).sum();
    if n <= EXACT {
        return head;
    }
    let (a, b) = (m as f64, n as f64);
    let integral = if (s - 1.0).abs() < 1e-12 {
        b.ln() - a.ln()
    } else {
        (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s)
    };
    head + integral + (b.powf(-s) - a.powf(-s)) / 2.0
}

/// An empirical histogram of rank counts (sorted high to low) over rank fractions:
/// one bin per rank for the first ten, then bins 20% wider each, so the head is exact
/// and the tail takes a few dozen bins.
fn rank_histogram(counts: &[u64]) -> Histogram {
    let n = counts.len();
    let mut edges = vec![0usize];
    let mut next = 1.0f64;
    while *edges.last().expect("not empty") < n {
        let last = *edges.last().expect("not empty");
        next = if last < 10 {
            (last + 1) as f64
        } else {
            next.max(last as f64) * 1.2
        };
        edges.push((next.ceil() as usize).clamp(last + 1, n));
    }
    let weights = edges
        .windows(2)
        .map(|w| counts[w[0]..w[1]].iter().sum::<u64>() as f64)
        .collect();
    Histogram {
        bounds: edges.iter().map(|&e| e as f64 / n as f64).collect(),
        weights,
    }
}

/// Where the accesses fall by age: the access-weighted mean of each key's insert
/// order as a fraction of the keys (0: all on the oldest key). `counts` are the same
/// accesses sorted high to low.
fn mean_age(keys: &[(u32, u32)], counts: &[u64], accesses: u64) -> (f64, f64) {
    let n = keys.len() as f64;
    let trace = keys.iter().map(|&(a, o)| f64::from(a) * f64::from(o)).sum::<f64>() / n / accesses as f64;
    let oldest = counts
        .iter()
        .enumerate()
        .map(|(r, &c)| c as f64 * r as f64)
        .sum::<f64>()
        / n
        / accesses as f64;
    (trace, oldest)
}

/// Where a spec's selection puts the hot keys by age.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The hottest are the oldest (`zipf`, a rank histogram).
    Oldest,
    /// The hottest are the newest (`latest`, a mirrored rank histogram).
    Newest,
    /// Hot keys spread over the ages (`zipf` with `scrambled`).
    Spread,
}

impl PopularityFit {
    /// The placement whose mean age of the accesses is nearest the trace's: the
    /// oldest-first ranks give `age_oldest`, newest-first about 1 - `age_oldest`,
    /// spread about one half.
    pub fn placement(&self) -> Placement {
        let options = [
            (Placement::Oldest, self.age_oldest),
            (Placement::Newest, 1.0 - self.age_oldest),
            (Placement::Spread, 0.5),
        ];
        options
            .iter()
            .min_by(|a, b| (a.1 - self.age_trace).abs().total_cmp(&(b.1 - self.age_trace).abs()))
            .map_or(Placement::Spread, |o| o.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_sizes_are_exact_and_many_are_binned() {
        let sizes: BTreeMap<u64, u64> = [(10, 5), (20, 10), (30, 5)].into_iter().collect();
        let f = fit_sizes(&sizes);
        assert!(f.exact);
        assert_eq!(f.hist.bounds, vec![10.0, 11.0, 20.0, 21.0, 30.0, 31.0]);
        assert_eq!(f.hist.weights, vec![5.0, 0.0, 10.0, 0.0, 5.0]);
        assert!(f.ks < 1e-12, "{}", f.ks);
        assert_eq!((f.min, f.max, f.count), (10, 30, 20));
        assert!((f.mean - 20.0).abs() < 1e-9);
        // 1000 sizes, uniform: binned, and close.
        let sizes: BTreeMap<u64, u64> = (1000..2000).map(|s| (s, 3)).collect();
        let f = fit_sizes(&sizes);
        assert!(!f.exact);
        assert!(f.hist.weights.len() <= SIZE_BINS + 1, "{}", f.hist.weights.len());
        assert_eq!(f.hist.bounds[0], 1000.0);
        assert_eq!(*f.hist.bounds.last().unwrap(), 2000.0);
        assert!(f.ks < 0.01, "{}", f.ks);
        // A common size beside a spread: it keeps its own bin, so the mean holds.
        let mut sizes: BTreeMap<u64, u64> = (200..=1000).map(|s| (s, 1)).collect();
        sizes.insert(8, 3);
        sizes.insert(100, 2000);
        sizes.insert(4096, 800);
        let f = fit_sizes(&sizes);
        assert!(!f.exact);
        let i = f.hist.bounds.iter().position(|&b| b == 100.0).unwrap();
        assert_eq!((f.hist.bounds[i + 1], f.hist.weights[i]), (101.0, 2000.0));
        assert!(f.ks < 0.01, "{}", f.ks);
    }

    #[test]
    fn a_zipf_law_is_recovered() {
        // Expected counts of Zipf(1.1) over 2000 keys, 10^6 accesses.
        let (n, s) = (2000u64, 1.1);
        let h = harmonic(n, s);
        let keys: Vec<(u32, u32)> = (1..=n)
            .map(|r| ((1e6 * (r as f64).powf(-s) / h).round() as u32, r as u32))
            .collect();
        let f = fit_popularity(&keys).unwrap();
        assert!((f.zipf_s - s).abs() < 0.02, "{}", f.zipf_s);
        assert!(matches!(f.chosen, Popularity::Zipf { .. }), "{f:?}");
        assert!(f.ks_zipf < 0.01 && f.ks_uniform > 0.3, "{f:?}");
        // The oldest keys are the hottest here.
        assert_eq!(f.placement(), Placement::Oldest, "{f:?}");
    }

    #[test]
    fn uniform_and_irregular_popularity() {
        let keys: Vec<(u32, u32)> = (0..1000).map(|i| (50, i)).collect();
        let f = fit_popularity(&keys).unwrap();
        assert_eq!(f.chosen, Popularity::Uniform);
        // Two tiers, no law: 10 keys take half the accesses, the rest share the other.
        let keys: Vec<(u32, u32)> = (0..1000).map(|i| (if i < 10 { 5000 } else { 50 }, 999 - i)).collect();
        let f = fit_popularity(&keys).unwrap();
        assert!(matches!(f.chosen, Popularity::Ranks(_)), "{f:?}");
        assert!(f.ks_ranks < 0.01, "{}", f.ks_ranks);
        assert_eq!(f.placement(), Placement::Newest, "the newest keys are hot: {f:?}");
        // Hot keys of every age.
        let keys: Vec<(u32, u32)> = (0..1000).map(|i| (if i % 100 == 0 { 5000 } else { 50 }, i)).collect();
        assert_eq!(fit_popularity(&keys).unwrap().placement(), Placement::Spread);
        assert!(fit_popularity(&[(0, 0), (0, 1)]).is_none());
    }

    #[test]
    fn harmonic_numbers_past_the_exact_head() {
        let exact: f64 = (1..=50_000u64).map(|r| (r as f64).powf(-0.8)).sum();
        assert!((harmonic(50_000, 0.8) - exact).abs() / exact < 1e-9);
        let exact: f64 = (1..=50_000u64).map(|r| 1.0 / r as f64).sum();
        assert!((harmonic(50_000, 1.0) - exact).abs() / exact < 1e-9);
    }
}
