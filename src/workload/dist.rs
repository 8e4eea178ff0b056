//! Distributions for declarative workloads: numbers (counts, lengths, selectivities)
//! and the selection of live keys by rank.
//!
//! Sampling uses `rand_distr`; what kvmark adds is how samples become keys:
//!
//! - `zipf` and `latest` draw a *rank* over the live keys with the exact Zipf law
//!   (rank r has weight 1/r^s; YCSB's constant s = 0.99 is the default). Rank 1 is the
//!   oldest live key for `zipf` and the newest for `latest` (YCSB workload D). With
//!   `scrambled: true`, a zipf rank is hashed across the live keys as YCSB's scrambled
//!   zipfian does.
//! - `poisson` draws a rank too (0-based, its natural support).
//! - Every continuous distribution draws a *fraction* of the live keys, `floor(x * n)`.
//!   Samples outside [0, 1) are drawn again (the distribution is truncated, never
//!   clamped onto the last key); `pareto` is shifted by its scale so its support starts
//!   at 0. After [`MAX_REDRAWS`] misses in a row the sample wraps (its fractional part,
//!   or the rank modulo n), so a distribution placed mostly outside still spreads over
//!   the keys instead of piling onto one.
//! - `histogram` (an empirical distribution, as `kvmark fit` writes) draws a bin by its
//!   weight and a point uniformly inside it; as a selection its bounds are fractions of
//!   the live keys (an empirical rank histogram), as a count or length it is rounded
//!   down, so the bin [a, b) gives the integers a to b - 1.
//! - `two_term_exp` (selection only) and `generalized_pareto` are db_bench mixgraph's
//!   key-range model ([`super::keyranges`]) and its value-size and scan-length law.

use std::sync::Arc;

use rand::{Rng, RngExt};
use rand_distr::{Beta, Distribution, Exp, LogNormal, Normal, Pareto, Poisson, Weibull, Zipf};

use super::keyranges::{KeyRangeParams, KeyRanges};

/// Draws tried before a selection sample wraps instead (see the module notes).
pub const MAX_REDRAWS: u32 = 64;

/// YCSB's zipfian constant, the default exponent of `zipf` and `latest`.
pub const YCSB_ZIPF_S: f64 = 0.99;

/// A distribution as written in a spec, validated.
#[derive(Debug, Clone)]
pub enum Dist {
    /// Uniform in [min, max).
    Uniform {
        /// Lower bound.
        min: f64,
        /// Upper bound (exclusive; equal to min for a constant).
        max: f64,
    },
    /// Normal(mean, std_dev).
    Normal(Normal<f64>),
    /// Beta(alpha, beta), in [0, 1].
    Beta(Beta<f64>),
    /// Zipf with exponent `s` over `n` items (as a number) or over the live keys.
    Zipf {
        /// Items, required when used as a number: samples are in [1, n].
        n: Option<u64>,
        /// Exponent.
        s: f64,
        /// Hash ranks across the keys (selection only).
        scrambled: bool,
    },
    /// Exponential(lambda).
    Exponential(Exp<f64>),
    /// Log-normal: `mean` and `std_dev` of the underlying normal.
    LogNormal(LogNormal<f64>),
    /// Poisson(lambda).
    Poisson(Poisson<f64>),
    /// Weibull(scale, shape).
    Weibull(Weibull<f64>),
    /// Pareto(scale, shape), support [scale, inf).
    Pareto {
        /// The scale, subtracted when selecting keys.
        scale: f64,
        /// The sampler.
        dist: Pareto<f64>,
    },
    /// Recency-skewed selection (zipf over ranks counted from the newest key).
    Latest {
        /// Exponent.
        s: f64,
    },
    /// An empirical distribution: bin i is [bounds[i], bounds[i + 1]), drawn with
    /// probability weight i over the sum, and uniform inside.
    Histogram {
        /// Increasing bin bounds, one more than the bins.
        bounds: Vec<f64>,
        /// Cumulative weights, normalised so the last is 1.
        cum: Vec<f64>,
    },
    /// Generalized Pareto, as db_bench's mixgraph draws value sizes and scan lengths:
    /// ceil(theta + sigma·(u^-k - 1)/k) for a uniform u in (0, 1] (theta - sigma·ln u
    /// when k is 0); a draw below `min` is raised to it, one above `max` wraps modulo
    /// `max`, as db_bench (7.8) does with value sizes (min 10, max
    /// `mix_max_value_size`).
    GeneralizedPareto {
        /// Shape.
        k: f64,
        /// Scale.
        sigma: f64,
        /// Location.
        theta: f64,
        /// Draws below it are raised to it.
        min: Option<f64>,
        /// Draws above it wrap modulo it.
        max: Option<f64>,
    },
    /// db_bench mixgraph's key-range model (selection only; see [`KeyRanges`]).
    TwoTermExp(Arc<KeyRanges>),
}

impl Dist {
    /// Uniform in [min, max).
    pub fn uniform(min: f64, max: f64) -> Result<Dist, String> {
        if !(min.is_finite() && max.is_finite() && min <= max) {
            return Err(format!("uniform needs finite min <= max, got min {min}, max {max}"));
        }
        Ok(Dist::Uniform { min, max })
    }

    /// Normal(mean, std_dev).
    pub fn normal(mean: f64, std_dev: f64) -> Result<Dist, String> {
        if !(mean.is_finite() && std_dev.is_finite() && std_dev >= 0.0) {
            return Err(format!(
                "normal needs a finite mean and std_dev >= 0, got mean {mean}, std_dev {std_dev}"
            ));
        }
        Normal::new(mean, std_dev)
            .map(Dist::Normal)
            .map_err(|e| format!("normal(mean {mean}, std_dev {std_dev}): {e}"))
    }

    /// Beta(alpha, beta).
    pub fn beta(alpha: f64, beta: f64) -> Result<Dist, String> {
        Beta::new(alpha, beta)
            .map(Dist::Beta)
            .map_err(|e| format!("beta(alpha {alpha}, beta {beta}): {e}"))
    }

    /// Zipf with exponent `s` (YCSB's 0.99 when None).
    pub fn zipf(n: Option<u64>, s: Option<f64>, scrambled: bool) -> Result<Dist, String> {
        let s = s.unwrap_or(YCSB_ZIPF_S);
        if !(s.is_finite() && s > 0.0) {
            return Err(format!("zipf needs an exponent s > 0, got {s}"));
        }
        if n == Some(0) {
            return Err("zipf needs n >= 1".to_string());
        }
        Ok(Dist::Zipf { n, s, scrambled })
    }

    /// Exponential(lambda).
    pub fn exponential(lambda: f64) -> Result<Dist, String> {
        // Exp takes 0 (every draw infinite); a rate of 0 is a mistake here.
        if !(lambda > 0.0 && lambda.is_finite()) {
            return Err(format!(
                "exponential(lambda {lambda}): lambda must be a positive number"
            ));
        }
        Exp::new(lambda)
            .map(Dist::Exponential)
            .map_err(|e| format!("exponential(lambda {lambda}): {e}"))
    }

    /// Log-normal with the underlying normal's mean and std_dev.
    pub fn log_normal(mean: f64, std_dev: f64) -> Result<Dist, String> {
        if !(mean.is_finite() && std_dev.is_finite() && std_dev >= 0.0) {
            return Err(format!(
                "log_normal needs a finite mean and std_dev >= 0, got mean {mean}, std_dev {std_dev}"
            ));
        }
        LogNormal::new(mean, std_dev)
            .map(Dist::LogNormal)
            .map_err(|e| format!("log_normal(mean {mean}, std_dev {std_dev}): {e}"))
    }

    /// Poisson(lambda).
    pub fn poisson(lambda: f64) -> Result<Dist, String> {
        Poisson::new(lambda)
            .map(Dist::Poisson)
            .map_err(|e| format!("poisson(lambda {lambda}): {e}"))
    }

    /// Weibull(scale, shape).
    pub fn weibull(scale: f64, shape: f64) -> Result<Dist, String> {
        Weibull::new(scale, shape)
            .map(Dist::Weibull)
            .map_err(|e| format!("weibull(scale {scale}, shape {shape}): {e}"))
    }

    /// Pareto(scale, shape).
    pub fn pareto(scale: f64, shape: f64) -> Result<Dist, String> {
        Pareto::new(scale, shape)
            .map(|dist| Dist::Pareto { scale, dist })
            .map_err(|e| format!("pareto(scale {scale}, shape {shape}): {e}"))
    }

    /// Recency-skewed selection with exponent `s` (YCSB's 0.99 when None).
    pub fn latest(s: Option<f64>) -> Result<Dist, String> {
        let s = s.unwrap_or(YCSB_ZIPF_S);
        if !(s.is_finite() && s > 0.0) {
            return Err(format!("latest needs an exponent s > 0, got {s}"));
        }
        Ok(Dist::Latest { s })
    }

    /// An empirical distribution of `weights.len()` bins between `bounds`.
    pub fn histogram(bounds: &[f64], weights: &[f64]) -> Result<Dist, String> {
        if weights.is_empty() || bounds.len() != weights.len() + 1 {
            return Err(format!(
                "histogram needs one more bound than weights (bin i is [bounds[i], bounds[i+1])), got {} bounds and {} weights",
                bounds.len(),
                weights.len()
            ));
        }
        if let Some(i) = (0..bounds.len()).find(|&i| !bounds[i].is_finite() || (i > 0 && bounds[i] <= bounds[i - 1])) {
            return Err(format!(
                "histogram bounds must be finite and increasing: bounds[{i}] = {} follows {}",
                bounds[i],
                if i > 0 {
                    bounds[i - 1].to_string()
                } else {
                    "nothing".to_string()
                }
            ));
        }
        if let Some(i) = weights.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(format!(
                "histogram weights[{i}] = {}: give a weight of 0 or more",
                weights[i]
            ));
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err("histogram weights are all 0: give at least one bin a weight".to_string());
        }
        let mut acc = 0.0;
        let mut cum: Vec<f64> = weights
            .iter()
            .map(|w| {
                acc += w;
                acc / total
            })
            .collect();
        *cum.last_mut().expect("not empty") = 1.0;
        Ok(Dist::Histogram {
            bounds: bounds.to_vec(),
            cum,
        })
    }

    /// Generalized Pareto with shape `k`, scale `sigma`, location `theta` (default 0),
    /// draws below `min` raised to it and draws above `max` wrapped modulo it.
    pub fn generalized_pareto(
        k: f64,
        sigma: f64,
        theta: Option<f64>,
        min: Option<f64>,
        max: Option<f64>,
    ) -> Result<Dist, String> {
        let theta = theta.unwrap_or(0.0);
        if !(k.is_finite() && sigma.is_finite() && sigma > 0.0 && theta.is_finite()) {
            return Err(format!(
                "generalized_pareto needs a finite k and theta and sigma > 0, got k {k}, sigma {sigma}, theta {theta}"
            ));
        }
        if let Some(m) = min
            && !m.is_finite()
        {
            return Err(format!("generalized_pareto: min must be a finite number, got {m}"));
        }
        if let Some(m) = max
            && !(m.is_finite() && m >= 1.0 && m >= min.unwrap_or(m))
        {
            return Err(format!(
                "generalized_pareto: max must be a number of at least 1 and at least min, got {m}"
            ));
        }
        Ok(Dist::GeneralizedPareto {
            k,
            sigma,
            theta,
            min,
            max,
        })
    }

    /// db_bench mixgraph's key-range model.
    pub fn two_term_exp(p: KeyRangeParams) -> Result<Dist, String> {
        KeyRanges::new(p).map(|k| Dist::TwoTermExp(Arc::new(k)))
    }

    /// Checks that the distribution can be sampled as a plain number.
    pub fn check_number(&self) -> Result<(), String> {
        match self {
            Dist::Latest { .. } => Err("`latest` selects recent keys; it is not a number distribution".into()),
            Dist::TwoTermExp(_) => {
                Err("`two_term_exp` selects keys by key range; it is not a number distribution".into())
            }
            Dist::Zipf { n: None, .. } => Err("zipf used as a number needs `n` (samples are in [1, n])".into()),
            Dist::Zipf { scrambled: true, .. } => Err("`scrambled` applies to key selection only".into()),
            _ => Ok(()),
        }
    }

    /// A raw sample. `latest`, `two_term_exp` and a zipf without `n` (rejected by
    /// [`Dist::check_number`]) sample as 0.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self {
            Dist::Uniform { min, max } if min < max => rng.random_range(*min..*max),
            Dist::Uniform { min, .. } => *min,
            Dist::Normal(d) => d.sample(rng),
            Dist::Beta(d) => d.sample(rng),
            Dist::Zipf { n: Some(n), s, .. } => match Zipf::new(*n as f64, *s) {
                Ok(z) => z.sample(rng),
                Err(_) => 1.0,
            },
            Dist::Zipf { n: None, .. } | Dist::Latest { .. } | Dist::TwoTermExp(_) => 0.0,
            Dist::Exponential(d) => d.sample(rng),
            Dist::LogNormal(d) => d.sample(rng),
            Dist::Poisson(d) => d.sample(rng),
            Dist::Weibull(d) => d.sample(rng),
            Dist::Pareto { dist, .. } => dist.sample(rng),
            Dist::Histogram { bounds, cum } => {
                let u: f64 = rng.random();
                let i = cum.partition_point(|&c| c <= u).min(cum.len() - 1);
                rng.random_range(bounds[i]..bounds[i + 1])
            }
            Dist::GeneralizedPareto {
                k,
                sigma,
                theta,
                min,
                max,
            } => {
                let u = 1.0 - rng.random::<f64>();
                let x = if *k == 0.0 {
                    theta - sigma * u.ln()
                } else {
                    theta + sigma * (u.powf(-k) - 1.0) / k
                }
                .ceil();
                match (min, max) {
                    (Some(lo), _) if x < *lo => *lo,
                    (_, Some(hi)) if x > *hi => x % hi,
                    _ => x,
                }
            }
        }
    }
}

/// A number expression: a constant or a distribution sampled per use.
#[derive(Debug, Clone)]
pub enum NumExpr {
    /// Always this value.
    Const(f64),
    /// A fresh sample per use.
    Dist(Dist),
    /// One of several values, by cumulative weight (normalised so the last is 1): a
    /// `weighted` choice between lengths.
    Choice {
        /// Cumulative weights.
        cum: Vec<f64>,
        /// The values.
        values: Vec<f64>,
    },
}

impl NumExpr {
    /// A raw sample.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self {
            NumExpr::Const(v) => *v,
            NumExpr::Dist(d) => d.sample(rng),
            NumExpr::Choice { cum, values } => {
                let u: f64 = rng.random();
                let i = cum.iter().position(|&c| u < c).unwrap_or(values.len() - 1);
                values[i]
            }
        }
    }

    /// A non-negative integer (a count or a length). A uniform with integral bounds
    /// draws integers in [min, max], both inclusive; any other sample is rounded to
    /// the nearest integer, negatives giving 0.
    #[inline]
    pub fn sample_count<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            NumExpr::Const(v) => v.round().max(0.0) as u64,
            NumExpr::Dist(Dist::Uniform { min, max }) if min.fract() == 0.0 && max.fract() == 0.0 => {
                let (lo, hi) = (min.max(0.0) as u64, max.max(0.0) as u64);
                if lo >= hi { lo } else { rng.random_range(lo..=hi) }
            }
            // Bin [a, b) gives a to b - 1, so a bin [v, v + 1) is exactly v.
            NumExpr::Dist(Dist::Histogram { .. }) => self.sample(rng).floor().max(0.0) as u64,
            NumExpr::Dist(_) | NumExpr::Choice { .. } => self.sample(rng).round().max(0.0) as u64,
        }
    }

    /// The smallest value [`NumExpr::sample_count`] can return, when it is known.
    pub fn min_count(&self) -> Option<u64> {
        match self {
            NumExpr::Const(v) => Some(v.round().max(0.0) as u64),
            NumExpr::Dist(Dist::Uniform { min, .. }) => Some(min.round().max(0.0) as u64),
            NumExpr::Dist(Dist::Histogram { bounds, .. }) => Some(bounds[0].floor().max(0.0) as u64),
            NumExpr::Choice { values, .. } => values.iter().map(|v| v.round().max(0.0) as u64).min(),
            _ => None,
        }
    }

    /// The largest value [`NumExpr::sample_count`] can return, when it is bounded.
    pub fn max_count(&self) -> Option<u64> {
        match self {
            NumExpr::Const(v) => Some(v.round().max(0.0) as u64),
            NumExpr::Dist(Dist::Uniform { max, .. }) => Some(max.round().max(0.0) as u64),
            NumExpr::Dist(Dist::Zipf { n: Some(n), .. }) => Some(*n),
            NumExpr::Dist(Dist::GeneralizedPareto { max: Some(m), .. }) => Some(m.max(0.0) as u64),
            NumExpr::Dist(Dist::Histogram { bounds, .. }) => {
                Some((bounds[bounds.len() - 1].ceil() - 1.0).max(0.0) as u64)
            }
            NumExpr::Choice { values, .. } => values.iter().map(|v| v.round().max(0.0) as u64).max(),
            _ => None,
        }
    }
}

/// Picks live keys: a rank or fraction in [0, n) from a distribution, per the module
/// notes. One per operation and thread; it caches the Zipf sampler for the current n.
#[derive(Debug, Clone)]
pub struct Selector {
    how: How,
    zipf: Option<(u64, Zipf<f64>)>,
}

#[derive(Debug, Clone)]
enum How {
    Uniform { min: f64, max: f64 },
    Zipf { s: f64, scrambled: bool },
    Latest { s: f64 },
    Rank(Dist),
    Fraction { dist: Dist, shift: f64 },
    KeyRanges(Arc<KeyRanges>),
}

impl Selector {
    /// A selector for `dist`; None means uniform over all live keys.
    pub fn new(dist: Option<&Dist>) -> Result<Selector, String> {
        let how = match dist {
            None => How::Uniform { min: 0.0, max: 1.0 },
            Some(Dist::Uniform { min, max }) => {
                if !(0.0 <= *min && min < max && *max <= 1.0) {
                    return Err(format!(
                        "a selection uniform takes fractions of the live keys: give 0 <= min < max <= 1 \
                         (got min {min}, max {max})"
                    ));
                }
                How::Uniform { min: *min, max: *max }
            }
            Some(Dist::Zipf { s, scrambled, .. }) => How::Zipf {
                s: *s,
                scrambled: *scrambled,
            },
            Some(Dist::Latest { s }) => How::Latest { s: *s },
            Some(Dist::Histogram { bounds, .. }) if bounds[0] < 0.0 || bounds[bounds.len() - 1] > 1.0 => {
                return Err(format!(
                    "a selection histogram takes fractions of the live keys: give bounds from 0 to 1 (got {} to {})",
                    bounds[0],
                    bounds[bounds.len() - 1]
                ));
            }
            Some(d @ Dist::Poisson(_)) => How::Rank(d.clone()),
            Some(Dist::TwoTermExp(k)) => How::KeyRanges(Arc::clone(k)),
            Some(d @ Dist::Pareto { scale, .. }) => How::Fraction {
                dist: d.clone(),
                shift: *scale,
            },
            Some(d) => How::Fraction {
                dist: d.clone(),
                shift: 0.0,
            },
        };
        Ok(Selector { how, zipf: None })
    }

    /// True when ranks count from the newest key, so compaction must keep order.
    pub fn is_ordered(&self) -> bool {
        !matches!(self.how, How::Uniform { .. })
    }

    /// A position in [0, n), n >= 1: 0 is the oldest live key.
    #[inline]
    pub fn pick<R: Rng + ?Sized>(&mut self, n: u64, rng: &mut R) -> u64 {
        debug_assert!(n > 0);
        match &self.how {
            How::Uniform { min, max } => {
                if *min == 0.0 && *max == 1.0 {
                    rng.random_range(0..n)
                } else {
                    let x = rng.random_range(*min..*max);
                    ((x * n as f64) as u64).min(n - 1)
                }
            }
            How::Zipf { s, scrambled } => {
                let (s, scrambled) = (*s, *scrambled);
                let rank = self.zipf_rank(n, s, rng);
                if scrambled { fnv1a64(rank) % n } else { rank }
            }
            How::Latest { s } => {
                let s = *s;
                n - 1 - self.zipf_rank(n, s, rng)
            }
            How::Rank(dist) => {
                let mut x = 0.0;
                for _ in 0..MAX_REDRAWS {
                    x = dist.sample(rng);
                    if x >= 0.0 && x < n as f64 {
                        return x as u64;
                    }
                }
                (x.max(0.0) as u64) % n
            }
            How::Fraction { dist, shift } => {
                let mut x = 0.0;
                for _ in 0..MAX_REDRAWS {
                    x = dist.sample(rng) - shift;
                    if (0.0..1.0).contains(&x) {
                        return ((x * n as f64) as u64).min(n - 1);
                    }
                }
                let f = x.rem_euclid(1.0);
                ((f * n as f64) as u64).min(n - 1)
            }
            How::KeyRanges(k) => k.key(rng.random_range(0..n), n),
        }
    }

    /// A 0-based Zipf rank in [0, n), rebuilding the sampler when n changed.
    #[inline]
    fn zipf_rank<R: Rng + ?Sized>(&mut self, n: u64, s: f64, rng: &mut R) -> u64 {
        let zipf = match &self.zipf {
            Some((cached, z)) if *cached == n => z,
            _ => {
                let z = Zipf::new(n as f64, s).expect("validated: n >= 1, s > 0");
                &self.zipf.insert((n, z)).1
            }
        };
        (zipf.sample(rng) as u64).clamp(1, n) - 1
    }
}

/// FNV-1a over the 8 bytes of `x`: YCSB's hash for scrambling zipfian ranks.
#[inline]
pub fn fnv1a64(x: u64) -> u64 {
    fnv1a(&x.to_le_bytes())
}

/// FNV-1a over `bytes`: the same in every process (a trace's client ids).
#[inline]
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn zeta(n: u64, s: f64) -> f64 {
        (1..=n).map(|i| 1.0 / (i as f64).powf(s)).sum()
    }

    #[test]
    fn zipf_rank_frequencies_follow_the_ycsb_law() {
        let (n, draws) = (100_000u64, 2_000_000u64);
        let mut sel = Selector::new(Some(&Dist::zipf(None, None, false).unwrap())).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut counts = [0u64; 10];
        for _ in 0..draws {
            let r = sel.pick(n, &mut rng);
            if r < 10 {
                counts[r as usize] += 1;
            }
        }
        let z = zeta(n, YCSB_ZIPF_S);
        // The hottest key draws about 8%, as YCSB's zipfian does at 0.99 over 100k keys.
        let top = counts[0] as f64 / draws as f64;
        assert!((top - 1.0 / z).abs() < 0.002, "top share {top}, expected {}", 1.0 / z);
        assert!((0.075..0.09).contains(&top), "{top}");
        for (r, &c) in counts.iter().enumerate() {
            let expected = draws as f64 / ((r + 1) as f64).powf(YCSB_ZIPF_S) / z;
            let rel = (c as f64 - expected).abs() / expected;
            assert!(rel < 0.03, "rank {}: {c} draws, expected {expected:.0}", r + 1);
        }
    }

    #[test]
    fn latest_favours_the_newest_keys() {
        let n = 10_000u64;
        let mut sel = Selector::new(Some(&Dist::latest(None).unwrap())).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let draws = 200_000;
        let newest = (0..draws).filter(|_| sel.pick(n, &mut rng) == n - 1).count();
        let newest_10 = (0..draws).filter(|_| sel.pick(n, &mut rng) >= n - 10).count();
        let share = newest as f64 / draws as f64;
        let z = zeta(n, YCSB_ZIPF_S);
        assert!((share - 1.0 / z).abs() < 0.005, "{share}");
        let expected10: f64 = (1..=10).map(|r| 1.0 / (r as f64).powf(YCSB_ZIPF_S) / z).sum();
        let share10 = newest_10 as f64 / draws as f64;
        assert!((share10 - expected10).abs() < 0.01, "{share10} vs {expected10}");
    }

    #[test]
    fn scrambled_zipf_spreads_hot_ranks() {
        let n = 1000u64;
        let mut sel = Selector::new(Some(&Dist::zipf(None, None, true).unwrap())).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..100_000 {
            counts[sel.pick(n, &mut rng) as usize] += 1;
        }
        let hottest = (0..n as usize).max_by_key(|&i| counts[i]).unwrap();
        assert_eq!(hottest as u64, fnv1a64(0) % n, "rank 0 lands where its hash says");
        assert_ne!(hottest, 0);
    }

    #[test]
    fn continuous_distributions_are_truncated_not_clamped() {
        let n = 1000u64;
        // Mostly above 1: Tectonic would clamp nearly every draw onto the last key.
        let mut sel = Selector::new(Some(&Dist::normal(0.9, 0.2).unwrap())).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut last = 0;
        let mut below_half = 0;
        for _ in 0..100_000 {
            let i = sel.pick(n, &mut rng);
            assert!(i < n);
            last += u32::from(i == n - 1);
            below_half += u32::from(i < n / 2);
        }
        assert!(last < 1000, "{last} draws piled on the last key");
        assert!(below_half > 1000, "the lower tail is kept: {below_half}");
        // Pareto is shifted to start at 0, so it selects low keys, not the last one.
        let mut sel = Selector::new(Some(&Dist::pareto(1.0, 3.0).unwrap())).unwrap();
        let low = (0..10_000).filter(|_| sel.pick(n, &mut rng) < n / 2).count();
        assert!(low > 7000, "{low}");
    }

    #[test]
    fn counts_from_integral_uniforms_are_inclusive() {
        let e = NumExpr::Dist(Dist::uniform(1.0, 3.0).unwrap());
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut seen = [0u32; 4];
        for _ in 0..1000 {
            seen[e.sample_count(&mut rng) as usize] += 1;
        }
        assert_eq!(seen[0], 0);
        assert!(seen[1] > 0 && seen[2] > 0 && seen[3] > 0, "{seen:?}");
        assert_eq!(NumExpr::Const(-3.0).sample_count(&mut rng), 0);
    }

    #[test]
    fn histograms_draw_bins_by_weight() {
        // As lengths: exact sizes 10 and 20 (bins [v, v+1)) and a range [100, 200).
        let d = Dist::histogram(&[10.0, 11.0, 20.0, 21.0, 100.0, 200.0], &[1.0, 0.0, 2.0, 0.0, 1.0]).unwrap();
        let e = NumExpr::Dist(d.clone());
        assert_eq!((e.min_count(), e.max_count()), (Some(10), Some(199)));
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let (mut ten, mut twenty, mut wide) = (0u32, 0u32, 0u32);
        for _ in 0..40_000 {
            match e.sample_count(&mut rng) {
                10 => ten += 1,
                20 => twenty += 1,
                100..=199 => wide += 1,
                other => panic!("{other} is in no bin with weight"),
            }
        }
        let near = |got: u32, want: f64| (f64::from(got) / 40_000.0 - want).abs() < 0.01;
        assert!(
            near(ten, 0.25) && near(twenty, 0.5) && near(wide, 0.25),
            "{ten} {twenty} {wide}"
        );
        // As a selection: fractions of the live keys; the first tenth takes 90%.
        let d = Dist::histogram(&[0.0, 0.1, 1.0], &[9.0, 1.0]).unwrap();
        let mut sel = Selector::new(Some(&d)).unwrap();
        let low = (0..10_000).filter(|_| sel.pick(1000, &mut rng) < 100).count();
        assert!((8800..9200).contains(&low), "{low}");
        assert!(Selector::new(Some(&Dist::histogram(&[0.0, 2.0], &[1.0]).unwrap())).is_err());
        assert!(Dist::histogram(&[0.0, 1.0], &[1.0, 2.0]).is_err());
        assert!(Dist::histogram(&[1.0, 1.0], &[1.0]).is_err());
        assert!(Dist::histogram(&[0.0, 1.0], &[0.0]).is_err());
        assert!(Dist::histogram(&[0.0, 1.0], &[-1.0]).is_err());
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert!(Dist::zipf(None, Some(0.0), false).is_err());
        assert!(Dist::normal(0.0, -1.0).is_err());
        assert!(Selector::new(Some(&Dist::uniform(0.0, 2.0).unwrap())).is_err());
        assert!(Dist::latest(None).unwrap().check_number().is_err());
        assert!(Dist::zipf(None, None, false).unwrap().check_number().is_err());
    }
}
