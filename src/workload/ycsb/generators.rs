//! YCSB's number generators, with YCSB's constants and arithmetic, so that a key a
//! YCSB client would pick is the key kvmark picks for the same draw: the FNV-64 hash of
//! key numbers, the zipfian generator (Gray et al.'s method, as YCSB implements it,
//! with its incremental zeta when the item count grows), the scrambled zipfian over
//! YCSB's fixed ten-billion-item space, skewed-latest, hotspot, exponential and
//! sequential.

use rand::{Rng, RngExt};

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// The item space of YCSB's scrambled zipfian (its `ITEM_COUNT`).
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;

/// zeta(SCRAMBLED_ITEMS, 0.99), the constant YCSB uses instead of summing ten billion
/// terms (its `ZETAN`).
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of `x`, made
/// non-negative as a Java long (`Math.abs`).
#[inline]
pub fn fnvhash64(x: u64) -> u64 {
    (crate::workload::dist::fnv1a64(x) as i64).unsigned_abs()
}

/// YCSB's `CoreWorkload.buildKeyName`: "user", then zeros up to `zeropadding`
/// digits, then the key number (hashed unless inserts are ordered), written into `out`.
pub fn key_name(keynum: u64, zeropadding: usize, ordered: bool, out: &mut Vec<u8>) {
    let n = if ordered { keynum } else { fnvhash64(keynum) };
    out.clear();
    out.extend_from_slice(b"user");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut v = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let len = digits.len() - i;
    out.extend(std::iter::repeat_n(b'0', zeropadding.saturating_sub(len)));
    out.extend_from_slice(&digits[i..]);
}

/// Sum of 1/i^theta for i in [from, to) (YCSB's `zetastatic`, counting from `from`
/// items already summed into `initial`).
fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from..to {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
    }
    sum
}

/// YCSB's `ZipfianGenerator`: item `base` is the most popular, then `base + 1`, ...
#[derive(Debug, Clone)]
pub struct Zipfian {
    base: u64,
    items: u64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    /// The item count zetan was computed for.
    count_for_zeta: u64,
}

impl Zipfian {
    /// Items `min..=max` with constant `theta` (zeta summed here: O(items)).
    pub fn new(min: u64, max: u64, theta: f64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(0, items, theta, 0.0))
    }

    /// Items `min..=max` with a known zeta(items, theta).
    pub fn with_zetan(min: u64, max: u64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            base: min,
            items,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: 0.0,
            count_for_zeta: items,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
    }

    /// A value over the first `items` items (YCSB's `nextLong(itemcount)`): when the
    /// count grew, zeta is extended by the new terms, as YCSB does.
    #[inline]
    pub fn next_of<R: Rng + ?Sized>(&mut self, items: u64, rng: &mut R) -> u64 {
        if items != self.count_for_zeta && items > self.count_for_zeta {
            self.zetan = zeta(self.count_for_zeta, items, self.theta, self.zetan);
            self.count_for_zeta = items;
            self.eta = self.eta_for(items);
        }
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64
    }

    /// A value over all its items.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        self.next_of(self.items, rng)
    }
}

/// How run-phase operations pick key numbers (`requestdistribution`).
#[derive(Debug, Clone)]
pub enum KeyChooser {
    /// Uniform over `min..=max`.
    Uniform {
        /// First key number.
        min: u64,
        /// Last key number.
        max: u64,
    },
    /// YCSB's scrambled zipfian over `min..=max`: a zipfian rank over ten billion
    /// items, hashed onto the range.
    Zipfian {
        /// First key number.
        min: u64,
        /// Items in the range.
        count: u64,
        /// The rank generator.
        ranks: Box<Zipfian>,
    },
    /// Skewed towards the newest key: the latest key number minus a zipfian rank.
    Latest(Box<Zipfian>),
    /// `hot_opn` of the picks land in the first `hot` keys from `min`, the rest in the
    /// `cold` keys after them.
    Hotspot {
        /// First key number.
        min: u64,
        /// Keys in the hot set.
        hot: u64,
        /// Keys in the cold set.
        cold: u64,
        /// Share of picks in the hot set.
        hot_opn: f64,
    },
    /// Key numbers counting back from the latest by an exponential distance.
    Exponential {
        /// Rate of the distance.
        gamma: f64,
    },
    /// `start`, `start + 1`, ... wrapping after `count` keys.
    Sequential {
        /// First key number.
        start: u64,
        /// Keys in the cycle.
        count: u64,
        /// Position in the cycle.
        next: u64,
    },
}

impl KeyChooser {
    /// The scrambled zipfian over `min..=max` (YCSB's `ScrambledZipfianGenerator`).
    pub fn scrambled_zipfian(min: u64, max: u64, theta: f64) -> KeyChooser {
        let ranks = if theta == ZIPFIAN_CONSTANT {
            Zipfian::with_zetan(0, SCRAMBLED_ITEMS, theta, SCRAMBLED_ZETAN)
        } else {
            Zipfian::new(0, SCRAMBLED_ITEMS, theta)
        };
        KeyChooser::Zipfian {
            min,
            count: max - min + 1,
            ranks: Box::new(ranks),
        }
    }

    /// A key number no greater than `latest` (YCSB's `nextKeynum`: draws past the
    /// newest key are drawn again; an exponential distance counts back from it).
    #[inline]
    pub fn pick<R: Rng + ?Sized>(&mut self, latest: u64, rng: &mut R) -> u64 {
        // Bounded redraws: a range wholly past `latest` would otherwise never return.
        for _ in 0..1000 {
            let k = match self {
                KeyChooser::Exponential { gamma } => {
                    let u: f64 = rng.random();
                    let d = (-(1.0 - u).ln() / *gamma) as u64;
                    match latest.checked_sub(d) {
                        Some(k) => return k,
                        None => continue,
                    }
                }
                KeyChooser::Uniform { min, max } => rng.random_range(*min..=*max),
                KeyChooser::Zipfian { min, count, ranks } => *min + fnvhash64(ranks.next(rng)) % *count,
                KeyChooser::Latest(z) => {
                    // YCSB's SkewedLatestGenerator: zipfian over the keys so far.
                    let items = latest.max(1);
                    return latest - z.next_of(items, rng).min(latest);
                }
                KeyChooser::Hotspot {
                    min,
                    hot,
                    cold,
                    hot_opn,
                } => {
                    if rng.random::<f64>() < *hot_opn {
                        *min + (rng.random::<u64>() >> 1) % (*hot).max(1)
                    } else {
                        *min + *hot + (rng.random::<u64>() >> 1) % (*cold).max(1)
                    }
                }
                KeyChooser::Sequential { start, count, next } => {
                    let k = *start + *next % *count;
                    *next += 1;
                    k
                }
            };
            if k <= latest {
                return k;
            }
        }
        latest
    }
}

/// A length generator (`fieldlengthdistribution`, `scanlengthdistribution`).
#[derive(Debug, Clone)]
pub enum Lengths {
    /// Always the same.
    Constant(u64),
    /// Uniform over `min..=max`.
    Uniform(u64, u64),
    /// YCSB's zipfian over `min..=max`, favouring `min`.
    Zipfian(Box<Zipfian>),
}

impl Lengths {
    /// One length.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        match self {
            Lengths::Constant(n) => *n,
            Lengths::Uniform(lo, hi) => rng.random_range(*lo..=*hi),
            Lengths::Zipfian(z) => z.next(rng),
        }
    }

    /// The largest length it gives.
    pub fn max(&self) -> u64 {
        match self {
            Lengths::Constant(n) => *n,
            Lengths::Uniform(_, hi) => *hi,
            Lengths::Zipfian(z) => z.base + z.items - 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn keys_are_ycsbs() {
        let mut k = Vec::new();
        key_name(5, 1, true, &mut k);
        assert_eq!(k, b"user5");
        key_name(5, 8, true, &mut k);
        assert_eq!(k, b"user00000005");
        // Key number 0 as YCSB writes it (its first record, in every YCSB load log).
        key_name(0, 1, false, &mut k);
        assert_eq!(k, b"user6284781860667377211");
        key_name(3, 1, false, &mut k);
        assert_eq!(k, b"user4052466453699787802");
        assert!(k.len() <= 4 + 19);
    }

    #[test]
    fn zipfian_follows_its_law_and_grows() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut z = Zipfian::new(0, 999, ZIPFIAN_CONSTANT);
        let mut counts = [0u64; 2];
        let draws = 200_000;
        for _ in 0..draws {
            let v = z.next(&mut rng);
            assert!(v < 1000);
            if v < 2 {
                counts[v as usize] += 1;
            }
        }
        // Gray et al.'s method, as YCSB has it, is exact for the two hottest items:
        // 1/zeta and 0.5^theta/zeta.
        let zn = zeta(0, 1000, 0.99, 0.0);
        for (i, c) in counts.iter().enumerate() {
            let want = draws as f64 / ((i + 1) as f64).powf(0.99) / zn;
            assert!((*c as f64 - want).abs() < want * 0.05, "rank {i}: {c} vs {want}");
        }
        // Growing the item count extends zeta by the new terms only.
        let _ = z.next_of(2000, &mut rng);
        assert!((z.zetan - zeta(0, 2000, 0.99, 0.0)).abs() < 1e-9);
    }

    #[test]
    fn choosers_stay_in_range() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut hot = KeyChooser::Hotspot {
            min: 0,
            hot: 20,
            cold: 80,
            hot_opn: 0.8,
        };
        let n = 100_000;
        let in_hot = (0..n).filter(|_| hot.pick(99, &mut rng) < 20).count();
        assert!((in_hot as f64 / n as f64 - 0.8).abs() < 0.01, "{in_hot}");
        let mut z = KeyChooser::scrambled_zipfian(0, 99, ZIPFIAN_CONSTANT);
        let mut seen = [0u32; 100];
        for _ in 0..n {
            seen[z.pick(99, &mut rng) as usize] += 1;
        }
        // Scrambling spreads the hottest ranks: the most popular key is the hash of rank 0.
        let top = (0..100).max_by_key(|&i| seen[i]).unwrap();
        assert_eq!(top as u64, fnvhash64(0) % 100);
        let mut latest = KeyChooser::Latest(Box::new(Zipfian::new(0, 99, ZIPFIAN_CONSTANT)));
        let newest = (0..n).filter(|_| latest.pick(99, &mut rng) == 99).count();
        assert!(newest > n / 10, "{newest}");
        let mut seq = KeyChooser::Sequential {
            start: 10,
            count: 3,
            next: 0,
        };
        let got: Vec<u64> = (0..4).map(|_| seq.pick(99, &mut rng)).collect();
        assert_eq!(got, [10, 11, 12, 10]);
        let mut exp = KeyChooser::Exponential {
            gamma: -(1.0f64 - 0.95).ln() / 85.0,
        };
        // 95% of the distances are below 86 (whole keys), and draws past key 0 are
        // drawn again, as YCSB does.
        let near = (0..n).filter(|_| exp.pick(99, &mut rng) >= 99 - 85).count();
        let g: f64 = -(1.0f64 - 0.95).ln() / 85.0;
        let want = (1.0 - (-g * 86.0).exp()) / (1.0 - (-g * 100.0).exp());
        assert!((near as f64 / n as f64 - want).abs() < 0.01, "{near} vs {want}");
    }
}
