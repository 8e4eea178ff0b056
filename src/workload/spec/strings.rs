//! String expressions compiled for generation: constants, `uniform` characters,
//! `weighted` choices, `segmented` joins and `hot_range` prefixes.
//!
//! Random characters are never drawn one by one: each character set has a pool of
//! random characters built once per thread, and a `uniform` string is a slice of it
//! at a random offset (as db_bench builds values). Strings stay random-looking and
//! cost one copy.

use std::collections::HashSet;

use rand::{Rng, RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::schema::{CharacterSet, StringExpr};
use crate::workload::dist::NumExpr;

/// Characters of each set, in byte order (so fixed-width digit strings sort like
/// the numbers they encode).
pub fn charset_bytes(cs: CharacterSet) -> &'static [u8] {
    match cs {
        CharacterSet::Alphanumeric => b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        CharacterSet::Alphabetic => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        CharacterSet::Numeric => b"0123456789",
    }
}

fn cs_index(cs: CharacterSet) -> usize {
    match cs {
        CharacterSet::Alphanumeric => 0,
        CharacterSet::Alphabetic => 1,
        CharacterSet::Numeric => 2,
    }
}

/// A compiled string expression.
#[derive(Debug, Clone)]
pub enum Str {
    /// Constant bytes.
    Lit(Vec<u8>),
    /// `len` random characters of `cs`.
    Chars {
        /// The character set.
        cs: CharacterSet,
        /// The length.
        len: NumExpr,
    },
    /// One alternative, by cumulative weight.
    Weighted {
        /// Cumulative weights, normalised so the last is 1.
        cum: Vec<f64>,
        /// The alternatives.
        alts: Vec<Str>,
    },
    /// Parts in order (separators are `Lit` parts).
    Seq(Vec<Str>),
    /// A hot-range prefix.
    Hot(HotPrefix),
}

/// A `hot_range`: `amount` hot prefixes of `len` characters, one of which a string
/// gets with `probability`; otherwise it gets a random prefix that is not hot.
#[derive(Debug, Clone)]
pub struct HotPrefix {
    /// Prefix length.
    pub len: usize,
    /// Chance of a hot prefix.
    pub probability: f64,
    /// Characters.
    pub cs: CharacterSet,
    /// The hot prefixes, drawn from the run's seed.
    pub hot: Vec<Vec<u8>>,
    hot_set: HashSet<Vec<u8>>,
}

impl HotPrefix {
    /// True when `prefix` is one of the hot prefixes.
    pub fn is_hot(&self, prefix: &[u8]) -> bool {
        self.hot_set.contains(prefix)
    }
}

/// Random characters per character set, shared by every string a thread renders.
#[derive(Debug, Clone)]
pub struct CharPools {
    pools: [Vec<u8>; 3],
}

/// Longest string kvmark renders (keys, values, filler). Lengths drawn above it are
/// cut to it; expressions whose smallest length exceeds it are refused.
pub const MAX_STRING_BYTES: usize = 64 << 20;

/// Bytes in each character pool: long enough that slices at random offsets rarely
/// repeat, small enough to stay in cache.
const POOL_BYTES: usize = 1 << 16;

impl CharPools {
    /// The pools for `seed` that another worker of this process already holds, or new
    /// ones: every worker of a run has the same (built once, not once per worker).
    pub fn shared(seed: u64) -> std::sync::Arc<Self> {
        use std::sync::{Arc, Mutex, Weak};
        static POOLS: Mutex<Vec<(u64, Weak<CharPools>)>> = Mutex::new(Vec::new());
        let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = pools.iter().find(|(s, _)| *s == seed).and_then(|(_, p)| p.upgrade()) {
            return p;
        }
        pools.retain(|(_, p)| p.strong_count() > 0);
        let made = Arc::new(CharPools::new(seed));
        pools.push((seed, Arc::downgrade(&made)));
        made
    }

    /// Pools drawn from `seed`.
    pub fn new(seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut fill = |cs: CharacterSet| -> Vec<u8> {
            let chars = charset_bytes(cs);
            (0..POOL_BYTES)
                .map(|_| chars[rng.random_range(0..chars.len())])
                .collect()
        };
        CharPools {
            pools: [
                fill(CharacterSet::Alphanumeric),
                fill(CharacterSet::Alphabetic),
                fill(CharacterSet::Numeric),
            ],
        }
    }

    /// Appends `n` random characters of `cs` to `out`: a pool slice at a random
    /// offset, or (for strings longer than half the pool) consecutive slices.
    #[inline]
    pub fn push<R: Rng + ?Sized>(&self, cs: CharacterSet, n: usize, rng: &mut R, out: &mut Vec<u8>) {
        let pool = &self.pools[cs_index(cs)];
        let mut left = n.min(MAX_STRING_BYTES);
        while left > 0 {
            let take = left.min(POOL_BYTES / 2);
            let off = rng.random_range(0..=POOL_BYTES - take);
            out.extend_from_slice(&pool[off..off + take]);
            left -= take;
        }
    }
}

impl Str {
    /// Compiles `expr`; `cs` is the inherited character set, `seed` draws hot prefixes.
    /// Errors are messages for the expression's path.
    pub fn compile(expr: &StringExpr, cs: CharacterSet, seed: u64) -> Result<Str, String> {
        Ok(match expr {
            StringExpr::Const(s) => Str::Lit(s.as_bytes().to_vec()),
            StringExpr::Uniform(u) => {
                let len = super::plan::count_expr(&u.len).map_err(|e| format!("uniform.len: {e}"))?;
                if len.min_count().is_some_and(|m| m > MAX_STRING_BYTES as u64) {
                    return Err(format!("uniform.len: strings are at most {MAX_STRING_BYTES} bytes"));
                }
                Str::Chars {
                    cs: u.character_set.unwrap_or(cs),
                    len,
                }
            }
            StringExpr::Weighted(ws) => {
                if ws.is_empty() {
                    return Err("weighted needs at least one {weight, value}".into());
                }
                let mut total = 0.0;
                let mut cum = Vec::with_capacity(ws.len());
                let mut alts = Vec::with_capacity(ws.len());
                for (i, w) in ws.iter().enumerate() {
                    if !(w.weight.is_finite() && w.weight >= 0.0) {
                        return Err(format!("weighted[{i}].weight must be >= 0, got {}", w.weight));
                    }
                    total += w.weight;
                    cum.push(total);
                    alts.push(Str::compile(&w.value, cs, mix64(seed ^ (i as u64 + 1)))?);
                }
                if total <= 0.0 {
                    return Err("weighted: the weights sum to 0".into());
                }
                for c in &mut cum {
                    *c /= total;
                }
                Str::Weighted { cum, alts }
            }
            StringExpr::Segmented(s) => {
                let mut parts = Vec::new();
                for (i, seg) in s.segments.iter().enumerate() {
                    if i > 0 && !s.separator.is_empty() {
                        parts.push(Str::Lit(s.separator.as_bytes().to_vec()));
                    }
                    let part = Str::compile(seg, cs, mix64(seed ^ (0x100 + i as u64)))
                        .map_err(|e| format!("segmented.segments[{i}]: {e}"))?;
                    match part {
                        Str::Seq(inner) => parts.extend(inner),
                        other => parts.push(other),
                    }
                }
                Str::Seq(parts)
            }
            StringExpr::HotRange(h) => Str::Hot(HotPrefix::new(h.len, h.amount, h.probability, cs, seed)?),
        })
    }

    /// Appends a random rendering to `out`; returns true when a hot prefix was chosen.
    pub fn render<R: Rng + ?Sized>(&self, pools: &CharPools, rng: &mut R, out: &mut Vec<u8>) -> bool {
        match self {
            Str::Lit(b) => {
                out.extend_from_slice(b);
                false
            }
            Str::Chars { cs, len } => {
                let n = len.sample_count(rng) as usize;
                pools.push(*cs, n, rng, out);
                false
            }
            Str::Weighted { cum, alts } => {
                let u: f64 = rng.random();
                let i = cum.iter().position(|&c| u < c).unwrap_or(alts.len() - 1);
                alts[i].render(pools, rng, out)
            }
            Str::Seq(parts) => {
                let mut hot = false;
                for p in parts {
                    hot |= p.render(pools, rng, out);
                }
                hot
            }
            Str::Hot(h) => h.render(rng, out),
        }
    }

    /// The rendered width when it never varies.
    pub fn fixed_width(&self) -> Option<usize> {
        match self {
            Str::Lit(b) => Some(b.len()),
            Str::Chars { len, .. } => match (len.min_count(), len.max_count()) {
                (Some(a), Some(b)) if a == b => Some(a as usize),
                _ => None,
            },
            Str::Weighted { alts, .. } => {
                let w = alts[0].fixed_width()?;
                alts.iter().all(|a| a.fixed_width() == Some(w)).then_some(w)
            }
            Str::Seq(parts) => parts.iter().map(Str::fixed_width).sum(),
            Str::Hot(h) => Some(h.len),
        }
    }

    /// True when the expression contains a `hot_range`.
    pub fn has_hot(&self) -> bool {
        match self {
            Str::Hot(_) => true,
            Str::Weighted { alts, .. } => alts.iter().any(Str::has_hot),
            Str::Seq(parts) => parts.iter().any(Str::has_hot),
            _ => false,
        }
    }
}

impl HotPrefix {
    fn new(len: u64, amount: u64, probability: f64, cs: CharacterSet, seed: u64) -> Result<Self, String> {
        if !(1..=4096).contains(&len) {
            return Err(format!("hot_range.len must be from 1 to 4096, got {len}"));
        }
        if !(0.0..=1.0).contains(&probability) {
            return Err(format!("hot_range.probability must be in [0, 1], got {probability}"));
        }
        let chars = charset_bytes(cs);
        let space = (chars.len() as u64).checked_pow(len as u32);
        if amount == 0 || space.is_some_and(|s| amount >= s) {
            return Err(format!(
                "hot_range.amount must be at least 1 and below the {} possible prefixes of {len} characters, got {amount}",
                space.map_or("many".to_string(), |s| s.to_string())
            ));
        }
        if amount > 1 << 20 {
            return Err(format!("hot_range.amount {amount} is too large (at most 1048576)"));
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ 0x484f_5452));
        let mut hot_set = HashSet::new();
        let mut hot = Vec::new();
        while (hot.len() as u64) < amount {
            let p: Vec<u8> = (0..len).map(|_| chars[rng.random_range(0..chars.len())]).collect();
            if hot_set.insert(p.clone()) {
                hot.push(p);
            }
        }
        Ok(HotPrefix {
            len: len as usize,
            probability,
            cs,
            hot,
            hot_set,
        })
    }

    /// Appends a prefix: hot with `probability`, else a random prefix that is not hot.
    pub fn render<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut Vec<u8>) -> bool {
        if rng.random::<f64>() < self.probability {
            out.extend_from_slice(&self.hot[rng.random_range(0..self.hot.len())]);
            return true;
        }
        let chars = charset_bytes(self.cs);
        let start = out.len();
        loop {
            out.truncate(start);
            for _ in 0..self.len {
                out.push(chars[rng.random_range(0..chars.len())]);
            }
            if !self.hot_set.contains(&out[start..]) {
                return false;
            }
        }
    }
}

/// SplitMix64's finaliser: a cheap, well-mixed 64-bit hash.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::spec::schema::parse;

    fn compile(json: &str) -> Str {
        let spec = parse(&format!(
            r#"{{"sections": [{{"groups": [{{"inserts": {{"op_count": 1, "key": {json}}}}}]}}]}}"#
        ))
        .unwrap();
        let key = spec.sections[0].groups[0]
            .inserts
            .as_ref()
            .unwrap()
            .key
            .clone()
            .unwrap();
        Str::compile(&key, CharacterSet::Alphanumeric, 9).unwrap()
    }

    #[test]
    fn hot_range_prefixes_come_with_their_probability() {
        let s = compile(r#"{"hot_range": {"len": 3, "amount": 5, "probability": 0.3}}"#);
        let Str::Hot(h) = &s else { panic!() };
        let pools = CharPools::new(1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let (mut hot, n) = (0, 100_000);
        let mut out = Vec::new();
        for _ in 0..n {
            out.clear();
            let flagged = s.render(&pools, &mut rng, &mut out);
            assert_eq!(flagged, h.is_hot(&out), "the flag says what was drawn");
            hot += u32::from(h.is_hot(&out));
        }
        let share = f64::from(hot) / f64::from(n);
        assert!((share - 0.3).abs() < 0.01, "{share}");
    }

    #[test]
    fn segments_join_and_lengths_vary() {
        let s = compile(
            r#"{"segmented": {"segments": ["t", {"uniform": {"len": {"uniform": {"min": 2, "max": 5}},
               "character_set": "numeric"}}], "separator": ":"}}"#,
        );
        let pools = CharPools::new(1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let mut lens = HashSet::new();
        for _ in 0..200 {
            let mut out = Vec::new();
            s.render(&pools, &mut rng, &mut out);
            assert!(out.starts_with(b"t:"), "{out:?}");
            assert!(out[2..].iter().all(u8::is_ascii_digit));
            lens.insert(out.len() - 2);
        }
        assert_eq!(lens, HashSet::from([2, 3, 4, 5]));
        assert_eq!(s.fixed_width(), None);
    }
}
