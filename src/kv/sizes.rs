//! Value-size snapshots: the distribution of value lengths in a store at one moment,
//! with YCSB-IVS's 100-byte bins, and draws from it for the sizes of the values a
//! run phase writes (the paper's `fieldlengthdistribution=histogram`), so a run phase
//! does not shift the distribution it measures.

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Width of a histogram bin in bytes (the paper's).
pub const BIN_BYTES: u64 = 100;

/// The value sizes of a store: summary figures and a histogram of 100-byte bins.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeSnapshot {
    /// Values counted.
    pub count: u64,
    /// Sum of their lengths.
    pub total: u64,
    /// Smallest length.
    pub min: u64,
    /// Largest length.
    pub max: u64,
    /// Median, 90th and 99th percentile lengths (nearest rank).
    pub p50: u64,
    /// 90th percentile length.
    pub p90: u64,
    /// 99th percentile length.
    pub p99: u64,
    /// (bin start in bytes, values in the bin), ascending, empty bins left out.
    pub bins: Vec<(u64, u64)>,
}

impl SizeSnapshot {
    /// The snapshot of `sizes` (any order).
    pub fn of(sizes: &[u32]) -> SizeSnapshot {
        let mut sorted: Vec<u64> = sizes.iter().map(|&s| u64::from(s)).collect();
        sorted.sort_unstable();
        let at = |q: f64| -> u64 {
            if sorted.is_empty() {
                return 0;
            }
            // Nearest rank: the smallest value with at least q of the values at or below it.
            let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
            sorted[rank - 1]
        };
        let mut bins: Vec<(u64, u64)> = Vec::new();
        for &s in &sorted {
            let start = s / BIN_BYTES * BIN_BYTES;
            match bins.last_mut() {
                Some((b, n)) if *b == start => *n += 1,
                _ => bins.push((start, 1)),
            }
        }
        SizeSnapshot {
            count: sorted.len() as u64,
            total: sorted.iter().sum(),
            min: sorted.first().copied().unwrap_or(0),
            max: sorted.last().copied().unwrap_or(0),
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            bins,
        }
    }

    /// Every value `len` bytes long, `count` of them.
    pub fn uniform(count: u64, len: u64) -> SizeSnapshot {
        SizeSnapshot {
            count,
            total: count * len,
            min: len,
            max: len,
            p50: len,
            p90: len,
            p99: len,
            bins: if count > 0 {
                vec![(len / BIN_BYTES * BIN_BYTES, count)]
            } else {
                Vec::new()
            },
        }
    }

    /// Mean length (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total as f64 / self.count as f64
        }
    }

    /// A sampler drawing lengths from this histogram.
    pub fn sampler(&self) -> SizeSampler {
        let mut cumulative = Vec::with_capacity(self.bins.len());
        let mut sum = 0u64;
        for &(start, n) in &self.bins {
            sum += n;
            cumulative.push((sum, start));
        }
        SizeSampler {
            cumulative,
            min: self.min,
            max: self.max,
        }
    }
}

/// Draws value lengths from a [`SizeSnapshot`]'s bins: a bin with the probability of
/// its share of the values, then a length uniform within the bin (kept within the
/// snapshot's smallest and largest length).
#[derive(Debug, Clone)]
pub struct SizeSampler {
    /// (values up to and including this bin, bin start).
    cumulative: Vec<(u64, u64)>,
    min: u64,
    max: u64,
}

impl SizeSampler {
    /// One length in bytes (0 from an empty snapshot).
    #[inline]
    pub fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> usize {
        let Some(&(total, _)) = self.cumulative.last() else {
            return 0;
        };
        let x = rng.random_range(0..total);
        let i = self.cumulative.partition_point(|&(upto, _)| upto <= x);
        let start = self.cumulative[i].1;
        let len = start + rng.random_range(0..BIN_BYTES);
        len.clamp(self.min, self.max) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn snapshot_figures_and_bins() {
        let sizes: Vec<u32> = vec![1000, 1000, 1000, 1100, 1250, 5000, 99, 0];
        let s = SizeSnapshot::of(&sizes);
        assert_eq!((s.count, s.total, s.min, s.max), (8, 10449, 0, 5000));
        assert_eq!(s.bins, vec![(0, 2), (1000, 3), (1100, 1), (1200, 1), (5000, 1)]);
        assert_eq!((s.p50, s.p90, s.p99), (1000, 5000, 5000));
        assert!((s.mean() - 10449.0 / 8.0).abs() < 1e-9);
        assert_eq!(SizeSnapshot::of(&[]).count, 0);
        let u = SizeSnapshot::uniform(3, 1234);
        assert_eq!((u.total, u.p99, u.bins.clone()), (3702, 1234, vec![(1200, 3)]));
    }

    #[test]
    fn draws_follow_the_bins() {
        // 3/4 of the values in the 1000 bin, 1/4 in the 4000 bin.
        let sizes: Vec<u32> = (0..400)
            .map(|i| if i % 4 == 0 { 4050 } else { 1000 + i % 100 })
            .collect();
        let sampler = SizeSnapshot::of(&sizes).sampler();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let draws: Vec<usize> = (0..20_000).map(|_| sampler.draw(&mut rng)).collect();
        let big = draws.iter().filter(|&&d| d >= 4000).count() as f64 / draws.len() as f64;
        assert!((big - 0.25).abs() < 0.02, "share of the 4000 bin: {big}");
        assert!(draws.iter().all(|&d| (1000..=4050).contains(&d)), "within min and max");
        assert!(
            draws.iter().filter(|&&d| d < 4000).all(|&d| d < 1100),
            "within the 1000 bin"
        );
        let one = SizeSnapshot::uniform(5, 777).sampler();
        assert!((0..100).all(|_| one.draw(&mut rng) == 777));
        assert_eq!(SizeSnapshot::of(&[]).sampler().draw(&mut rng), 0);
    }
}
