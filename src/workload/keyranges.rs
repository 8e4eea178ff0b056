//! Key-range hotness as RocksDB's db_bench models it in its `mixgraph` benchmark (Cao
//! et al., "Characterizing, Modeling, and Benchmarking RocksDB Key-Value Workloads at
//! Facebook", FAST '20): the `two_term_exp` selection of a spec.
//!
//! The live keys are cut into `ranges` ranges of equal size. A range's share of the
//! accesses follows a two-term exponential of its number x (from `ranges` down to 1),
//! f(x) = a·e^(b·x) + c·e^(d·x), and the ranges are shuffled so that hot ranges do not
//! sit together at one end. Inside a range, keys are either uniform or follow the
//! power law y = key_a·x^key_b, whose hot keys are scattered over the range by a hash
//! of their rank.
//!
//! The arithmetic is db_bench's (RocksDB 7.8, `GenerateTwoTermExpKeys`) so that the
//! same parameters give the same shares, to the integer: each range's share is
//! floor(amplify·f(x)) out of their sum, where amplify is 1/f of the first range with a
//! share above 1e-16, plus one; the shuffle and the scattering hash are the 64-bit
//! Mersenne Twister (C++'s `std::mt19937_64`), seeded as db_bench seeds it. One uniform
//! draw r in [0, n) picks both the range (r modulo the sum of shares) and the key inside
//! it (r modulo the range size), as in db_bench. Keys past the last whole range (the
//! remainder of n / ranges) are never picked, as in db_bench; with fewer live keys than
//! ranges the pick is uniform.

/// A validated two-term exponential key-range model.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRanges {
    /// Each range's first share number, in key order after the shuffle; a range owns
    /// the draws from its start to the next range's.
    starts: Vec<u64>,
    /// The sum of the shares: draws are taken modulo this.
    total: u64,
    /// The power law inside a range, or None for uniform.
    power: Option<(f64, f64)>,
}

/// Shares below this are 0, as in db_bench.
const MIN_SHARE: f64 = 1e-16;

/// The most ranges (each holds its start: 8 bytes).
pub const MAX_RANGES: u32 = 1 << 20;

/// The largest whole share of one range, so that their sum stays exact.
const MAX_UNITS: f64 = 1e12;

/// The parameters of db_bench's mixgraph key model: `keyrange_num`,
/// `keyrange_dist_a` to `_d`, `key_dist_a` and `key_dist_b`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyRangeParams {
    /// How many ranges (`keyrange_num`).
    pub ranges: u32,
    /// f(x) = a·e^(b·x) + c·e^(d·x).
    pub a: f64,
    /// See `a`.
    pub b: f64,
    /// See `a`.
    pub c: f64,
    /// See `a`.
    pub d: f64,
    /// Power law inside a range, y = key_a·x^key_b; 0 in either means uniform.
    pub key_a: f64,
    /// See `key_a`.
    pub key_b: f64,
}

impl KeyRanges {
    /// Builds the shuffled ranges, or says which parameter is unusable.
    pub fn new(p: KeyRangeParams) -> Result<KeyRanges, String> {
        if !(1..=MAX_RANGES).contains(&p.ranges) {
            return Err(format!(
                "two_term_exp needs ranges from 1 to {MAX_RANGES}, got {}",
                p.ranges
            ));
        }
        if let Some((name, v)) = [
            ("a", p.a),
            ("b", p.b),
            ("c", p.c),
            ("d", p.d),
            ("key_a", p.key_a),
            ("key_b", p.key_b),
        ]
        .into_iter()
        .find(|(_, v)| !v.is_finite())
        {
            return Err(format!("two_term_exp: {name} must be a finite number, got {v}"));
        }
        if p.key_a < 0.0 || p.key_b < 0.0 {
            return Err(format!(
                "two_term_exp: key_a and key_b must be 0 (keys uniform inside a range) or above, got {} and {}",
                p.key_a, p.key_b
            ));
        }
        let mut amplify = 0.0f64;
        let mut shares = Vec::with_capacity(p.ranges as usize);
        for x in (1..=p.ranges).rev() {
            let x = f64::from(x);
            let mut f = p.a * (p.b * x).exp() + p.c * (p.d * x).exp();
            if f < MIN_SHARE {
                f = 0.0;
            }
            if amplify == 0.0 && f > 0.0 {
                amplify = (1.0 / f).floor() + 1.0;
            }
            let units = (amplify * f).floor();
            if units > MAX_UNITS {
                return Err(format!(
                    "two_term_exp: range {x}'s share is {units} units (db_bench's unit is the coldest range's \
                     share, or 1 when that is above 1); keep every share within {MAX_UNITS} units"
                ));
            }
            shares.push(units as u64);
        }
        let total: u64 = shares.iter().sum();
        if total == 0 {
            return Err(format!(
                "two_term_exp: a·e^(b·x) + c·e^(d·x) gives every one of the {} ranges a share of 0; \
                 check the signs of a, b, c and d",
                p.ranges
            ));
        }
        let mut mt = Mt64::new(total);
        let n = u64::from(p.ranges);
        for i in 0..shares.len() {
            let j = (mt.next() % n) as usize;
            shares.swap(i, j);
        }
        let mut at = 0;
        let starts = shares
            .iter()
            .map(|s| {
                let start = at;
                at += s;
                start
            })
            .collect();
        let power = (p.key_a != 0.0 && p.key_b != 0.0).then_some((p.key_a, 1.0 / p.key_b));
        Ok(KeyRanges { starts, total, power })
    }

    /// The share of range `i` (in key order) of all draws.
    #[cfg(test)]
    fn share(&self, i: usize) -> f64 {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.total);
        (end - self.starts[i]) as f64 / self.total as f64
    }

    /// How many ranges.
    #[cfg(test)]
    fn ranges(&self) -> usize {
        self.starts.len()
    }

    /// The key (a rank in [0, n)) for the uniform draw `r` in [0, n).
    #[inline]
    pub fn key(&self, r: u64, n: u64) -> u64 {
        let size = n / self.starts.len() as u64;
        if size == 0 {
            return r;
        }
        let pick = r % self.total;
        let range = self.starts.partition_point(|&s| s <= pick) - 1;
        let within = r % size;
        let offset = match self.power {
            None => within,
            Some((a, inv_b)) => {
                let u = within as f64 / size as f64;
                let seed = (u / a).powf(inv_b).ceil() as i64;
                mt64_first(seed as u64) % size
            }
        };
        size * range as u64 + offset
    }
}

/// The 64-bit Mersenne Twister (MT19937-64, C++'s `std::mt19937_64`).
struct Mt64 {
    state: [u64; MT_N],
    at: usize,
}

const MT_N: usize = 312;
const MT_M: usize = 156;
const MT_MATRIX: u64 = 0xB502_6F5A_A966_19E9;
const MT_UPPER: u64 = 0xFFFF_FFFF_8000_0000;
const MT_LOWER: u64 = 0x7FFF_FFFF;
const MT_INIT: u64 = 6_364_136_223_846_793_005;

/// Word `i` of the seeded state from word `i - 1`.
#[inline]
fn mt_seed_step(prev: u64, i: usize) -> u64 {
    MT_INIT.wrapping_mul(prev ^ (prev >> 62)).wrapping_add(i as u64)
}

/// One twisted word from words i, i + 1 and i + M.
#[inline]
fn mt_twist(x_i: u64, x_next: u64, x_m: u64) -> u64 {
    let y = (x_i & MT_UPPER) | (x_next & MT_LOWER);
    x_m ^ (y >> 1) ^ if y & 1 == 1 { MT_MATRIX } else { 0 }
}

#[inline]
fn mt_temper(mut y: u64) -> u64 {
    y ^= (y >> 29) & 0x5555_5555_5555_5555;
    y ^= (y << 17) & 0x71D6_7FFF_EDA6_0000;
    y ^= (y << 37) & 0xFFF7_EEE0_0000_0000;
    y ^ (y >> 43)
}

impl Mt64 {
    fn new(seed: u64) -> Mt64 {
        let mut state = [0u64; MT_N];
        state[0] = seed;
        for i in 1..MT_N {
            state[i] = mt_seed_step(state[i - 1], i);
        }
        Mt64 { state, at: MT_N }
    }

    fn next(&mut self) -> u64 {
        if self.at == MT_N {
            for i in 0..MT_N {
                let twisted = mt_twist(self.state[i], self.state[(i + 1) % MT_N], self.state[(i + MT_M) % MT_N]);
                self.state[i] = twisted;
            }
            self.at = 0;
        }
        let y = self.state[self.at];
        self.at += 1;
        mt_temper(y)
    }
}

/// The first output of MT19937-64 seeded with `seed`, without the whole state: it
/// needs only words 0, 1 and M of the seeded state (db_bench seeds a generator per key
/// pick and takes its first output, the scattering hash).
#[inline]
fn mt64_first(seed: u64) -> u64 {
    let w1 = mt_seed_step(seed, 1);
    let mut w = w1;
    for i in 2..=MT_M {
        w = mt_seed_step(w, i);
    }
    mt_temper(mt_twist(seed, w1, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn published() -> KeyRangeParams {
        // The parameters of db_bench's documentation and the FAST '20 paper's appendix.
        KeyRangeParams {
            ranges: 30,
            a: 14.18,
            b: -2.917,
            c: 0.0164,
            d: -0.08082,
            key_a: 0.002312,
            key_b: 0.3467,
        }
    }

    #[test]
    fn the_twister_is_the_standard_one() {
        // The C++ standard requires the 10000th output of a default-seeded (5489)
        // std::mt19937_64 to be this value.
        let mut mt = Mt64::new(5489);
        let v = (0..10_000).map(|_| mt.next()).last().unwrap();
        assert_eq!(v, 9_981_545_732_273_789_042);
        for seed in [0, 1, 2, 5489, 42, u64::MAX, 1 << 40, 123_456_789] {
            assert_eq!(mt64_first(seed), Mt64::new(seed).next(), "seed {seed}");
        }
    }

    #[test]
    fn shares_are_db_benchs_to_the_unit() {
        let k = KeyRanges::new(published()).unwrap();
        assert_eq!((k.ranges(), k.total), (30, 667));
        // f(30) = 0.00145, so amplify is 689, and range x gets floor(689·f(x)) of the
        // 667 units: 538 for x = 1, 38 for x = 2. The shuffle puts them at 29 and 23,
        // as db_bench 7.8.3's query trace shows (80.8% and 5.7% of its accesses).
        assert_eq!(k.share(29), 538.0 / 667.0);
        assert_eq!(k.share(23), 38.0 / 667.0);
        let total: f64 = (0..30).map(|i| k.share(i)).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }

    #[test]
    fn keys_land_in_their_ranges_by_share() {
        let k = KeyRanges::new(published()).unwrap();
        let n = 30_000u64;
        let mut per_range = [0u64; 30];
        for r in 0..n * 10 {
            let key = k.key(r % n, n);
            assert!(key < n);
            per_range[(key / 1000) as usize] += 1;
        }
        for (i, c) in per_range.iter().enumerate() {
            let want = k.share(i) * (n * 10) as f64;
            assert!(
                (*c as f64 - want).abs() <= want * 0.02 + 20.0,
                "range {i}: {c} vs {want}"
            );
        }
    }

    #[test]
    fn unusable_parameters_are_refused() {
        let mut p = published();
        p.ranges = 0;
        assert!(KeyRanges::new(p).unwrap_err().contains("ranges from 1"));
        let mut p = published();
        p.key_b = -1.0;
        assert!(KeyRanges::new(p).unwrap_err().contains("or above"));
        let mut p = published();
        p.a = 1e300;
        assert!(KeyRanges::new(p).unwrap_err().contains("within"));
        let mut p = published();
        (p.a, p.c) = (-1.0, 0.0);
        assert!(KeyRanges::new(p).unwrap_err().contains("share of 0"));
        let mut p = published();
        p.b = f64::NAN;
        assert!(KeyRanges::new(p).unwrap_err().contains("b must be a finite number"));
    }

    #[test]
    fn fewer_live_keys_than_ranges_pick_uniformly() {
        let k = KeyRanges::new(published()).unwrap();
        assert_eq!(k.key(7, 10), 7);
    }
}
