//! The Mann-Whitney U test (Wilcoxon rank-sum) that `kvmark compare` uses to say
//! whether a throughput change is larger than the spread between repeats.
//!
//! Why this test: repeats are few (3 to 10) and their spread is not normal (a stray
//! compaction makes one repeat slow), so a rank test that assumes no distribution
//! suits them; benchstat uses the same test for the same reason. For few repeats the
//! p-value is exact: every way of splitting the pooled values' ranks (midranks for
//! ties) into the two groups is counted, as long as there are at most
//! [`EXACT_LIMIT`] ways; beyond that the normal approximation with the tie correction
//! is used.

/// Most arrangements counted exactly (C(20,10) = 184756: ten repeats a side).
pub const EXACT_LIMIT: u64 = 200_000;

/// The outcome of one test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Test {
    /// Two-sided p-value.
    pub p: f64,
    /// The smallest p-value these group sizes can give: when it is above the
    /// significance level, no difference could be called significant.
    pub min_p: f64,
    /// True when the p-value was counted exactly.
    pub exact: bool,
}

/// C(n, k), saturating.
fn choose(n: u64, k: u64) -> u64 {
    let k = k.min(n - k);
    let mut c: u64 = 1;
    for i in 0..k {
        c = match c.checked_mul(n - i) {
            Some(v) => v / (i + 1),
            None => return u64::MAX,
        };
    }
    c
}

/// Midranks (1-based) of `pooled`; ties share the mean of their ranks.
fn midranks(pooled: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&a, &b| pooled[a].total_cmp(&pooled[b]));
    let mut ranks = vec![0.0; pooled.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && pooled[order[j + 1]] == pooled[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &o in &order[i..=j] {
            ranks[o] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// Counts the subsets of `ranks` of size `k` whose sum lies at least `dist` from
/// `mean` (both tails).
fn count_extreme(ranks: &[f64], k: usize, mean: f64, dist: f64) -> u64 {
    fn walk(ranks: &[f64], from: usize, left: usize, sum: f64, mean: f64, dist: f64) -> u64 {
        if left == 0 {
            return u64::from((sum - mean).abs() >= dist - 1e-9);
        }
        (from..=ranks.len() - left)
            .map(|i| walk(ranks, i + 1, left - 1, sum + ranks[i], mean, dist))
            .sum()
    }
    walk(ranks, 0, k, 0.0, mean, dist)
}

/// The standard normal distribution's upper tail, P(Z > z), by the complementary
/// error function (Abramowitz and Stegun 7.1.26, error below 1.5e-7).
fn normal_upper(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    if x >= 0.0 { erfc / 2.0 } else { 1.0 - erfc / 2.0 }
}

/// Two-sided Mann-Whitney U test of `a` against `b`; None when a group is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<Test> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let ranks = midranks(&pooled);
    let n = (n1 + n2) as f64;
    let mean = n1 as f64 * (n + 1.0) / 2.0;
    let observed: f64 = ranks[..n1].iter().sum();
    let dist = (observed - mean).abs();
    let ways = choose((n1 + n2) as u64, n1 as u64);
    // The most extreme split is one of the two tails: 2 ways in all (1 when the
    // groups are the same size and all values tie, which never reaches significance).
    let min_p = (2.0 / ways as f64).min(1.0);
    if ways <= EXACT_LIMIT {
        let extreme = count_extreme(&ranks, n1, mean, dist);
        return Some(Test {
            p: (extreme as f64 / ways as f64).min(1.0),
            min_p,
            exact: true,
        });
    }
    // Normal approximation, the variance reduced for ties, with a continuity correction.
    let mut tie_term = 0.0;
    let mut sorted = pooled.clone();
    sorted.sort_by(f64::total_cmp);
    let mut i = 0;
    while i < sorted.len() {
        let j = sorted[i..].iter().take_while(|&&v| v == sorted[i]).count();
        let t = j as f64;
        tie_term += t * t * t - t;
        i += j;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let var = f1 * f2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = ((dist - 0.5).max(0.0)) / var.sqrt();
        (2.0 * normal_upper(z)).min(1.0)
    };
    Some(Test { p, min_p, exact: false })
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len().is_multiple_of(2) {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_values_match_the_tables() {
        // Complete separation of 5 and 5: 2 of C(10,5) = 252 splits are as extreme.
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(t.exact);
        assert!((t.p - 2.0 / 252.0).abs() < 1e-12, "{}", t.p);
        assert!((t.min_p - 2.0 / 252.0).abs() < 1e-12);
        // 3 and 3 can never go below 0.1.
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((t.p - 0.1).abs() < 1e-12 && (t.min_p - 0.1).abs() < 1e-12);
        // Interleaved groups are no evidence at all.
        let t = mann_whitney(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]).unwrap();
        assert!((t.p - 1.0).abs() < 1e-12, "{}", t.p);
        // U = 1 for n1 = n2 = 4: P(U <= 1) = 2/70, so two-sided 4/70 (tables: 0.057).
        let t = mann_whitney(&[1.0, 2.0, 3.0, 5.0], &[4.0, 6.0, 7.0, 8.0]).unwrap();
        assert!((t.p - 4.0 / 70.0).abs() < 1e-12, "{}", t.p);
    }

    #[test]
    fn ties_share_their_rank() {
        assert_eq!(midranks(&[10.0, 20.0, 10.0, 30.0]), vec![1.5, 3.0, 1.5, 4.0]);
        // Everything tied: nothing differs.
        let t = mann_whitney(&[5.0; 4], &[5.0; 4]).unwrap();
        assert!((t.p - 1.0).abs() < 1e-12);
    }

    #[test]
    fn large_groups_use_the_normal_approximation() {
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (0..30).map(|i| f64::from(i) + 100.0).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(!t.exact && t.p < 1e-9, "{t:?}");
        let same = mann_whitney(&a, &a).unwrap();
        assert!(same.p > 0.9, "{same:?}");
        assert!((normal_upper(1.959_964) - 0.025).abs() < 1e-6);
        assert!(mann_whitney(&[], &[1.0]).is_none());
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(choose(10, 5), 252);
        assert_eq!(choose(20, 10), 184_756);
    }
}
