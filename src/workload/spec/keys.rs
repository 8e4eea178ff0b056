//! A section's key space: every key is a pure function of a 64-bit *id*.
//!
//! The key expression of a section's inserts is split around one `uniform` part, the
//! *identity*: its first digits spell the id in the character set's base, so distinct
//! ids give distinct keys by construction (inserts are unique without a membership
//! check), and the live set stores 8-byte ids instead of keys. Everything else (other
//! segments, hot prefixes, the identity's filler characters, variable lengths) is
//! drawn from a generator seeded by the id, so a key can be rendered again from its id
//! at any time.
//!
//! Each thread owns a contiguous slice of the id space and walks it in a pseudo-random
//! order (a Feistel permutation), so its keys look uniformly random, never collide with
//! another thread's, and ids it has not handed out yet are certainly absent.
//!
//! When every part before the identity has a fixed width, keys sort like their
//! *order value* (the non-literal bytes before the identity, then the id), which is
//! what range deletes and start-end ranges need.

use rand::{Rng, SeedableRng};
use rand_xoshiro::SplitMix64;

use super::schema::CharacterSet;
use super::strings::{CharPools, Str, charset_bytes, mix64};
use crate::workload::dist::NumExpr;

/// The compiled key space of a section.
#[derive(Debug, Clone)]
pub struct KeyCodec {
    pre: Vec<Str>,
    id_cs: CharacterSet,
    id_digits: usize,
    id_len: NumExpr,
    post: Vec<Str>,
    /// Ids in [0, cap).
    cap: u64,
    /// Byte template of the fixed-width part before the identity (None: a literal byte
    /// position holds a varying byte), or None when that part varies in width.
    pre_template: Option<Vec<Option<u8>>>,
    /// Non-literal bytes before the identity, when keys are ordered by order value.
    ordered_bytes: Option<u32>,
    salt: u64,
    digit_of: [u8; 256],
    /// The whole key except the id digits, when nothing in it is random (most keys
    /// of benchmarks: a constant prefix and the id), so rendering needs no generator.
    fixed: Option<(Vec<u8>, Vec<u8>)>,
}

/// A `weighted` choice between `uniform` strings of one character set that differ
/// only in length (Tectonic's varied key lengths) is one `uniform` string whose length
/// is that weighted choice, so it can be a key's identity; any other part is kept.
fn lengths_by_weight(part: Str) -> Str {
    let Str::Weighted { cum, alts } = &part else {
        return part;
    };
    let mut values = Vec::with_capacity(alts.len());
    let mut set = None;
    for alt in alts {
        match alt {
            Str::Chars {
                cs,
                len: NumExpr::Const(len),
            } if set.is_none_or(|s| s == *cs) => {
                set = Some(*cs);
                values.push(*len);
            }
            _ => return part,
        }
    }
    match set {
        Some(cs) => Str::Chars {
            cs,
            len: NumExpr::Choice {
                cum: cum.clone(),
                values,
            },
        },
        None => part,
    }
}

/// Largest id width (in characters) whose ids fit in 64 bits.
fn max_digits(base: u64) -> usize {
    let mut d = 0;
    let mut cap: u64 = 1;
    while let Some(next) = cap.checked_mul(base) {
        cap = next;
        d += 1;
    }
    d
}

impl KeyCodec {
    /// Builds the key space of `expr` (compiled); `salt` makes sections differ.
    pub fn new(expr: Str, salt: u64) -> Result<KeyCodec, String> {
        let parts = match expr {
            Str::Seq(parts) => parts,
            other => vec![other],
        };
        let parts: Vec<Str> = parts.into_iter().map(lengths_by_weight).collect();
        // The identity: the `uniform` part (outside any `weighted`) that can hold the
        // most ids; the last one wins ties, so a leading tenant-like part stays random.
        let mut best: Option<(usize, u64)> = None;
        for (i, p) in parts.iter().enumerate() {
            if let Str::Chars { cs, len } = p {
                let base = charset_bytes(*cs).len() as u64;
                let digits = id_digits(base, len);
                let cap = base.checked_pow(digits as u32).unwrap_or(u64::MAX);
                if digits > 0 && best.is_none_or(|(_, c)| cap >= c) {
                    best = Some((i, cap));
                }
            }
        }
        let Some((at, cap)) = best else {
            return Err(
                "a key needs a `uniform` part of at least one character (outside `weighted`) \
                        to make unique keys"
                    .into(),
            );
        };
        let mut parts = parts;
        let post = parts.split_off(at + 1);
        let Some(Str::Chars { cs: id_cs, len: id_len }) = parts.pop() else {
            unreachable!("the identity is a uniform part")
        };
        let pre = parts;
        let id_digits = id_digits(charset_bytes(id_cs).len() as u64, &id_len);

        let pre_template = pre_template(&pre);
        let ordered_bytes = pre_template.as_ref().and_then(|t| {
            let varying = t.iter().filter(|b| b.is_none()).count() as u32;
            (varying * 8 + 64 - cap.leading_zeros() <= 128).then_some(varying)
        });
        let literal = |parts: &[Str]| -> Option<Vec<u8>> {
            let mut out = Vec::new();
            for p in parts {
                match p {
                    Str::Lit(b) => out.extend_from_slice(b),
                    _ => return None,
                }
            }
            Some(out)
        };
        let fixed = match (literal(&pre), literal(&post), id_len.max_count()) {
            (Some(a), Some(b), Some(max)) if max as usize <= id_digits => Some((a, b)),
            _ => None,
        };
        let mut digit_of = [u8::MAX; 256];
        for (i, &c) in charset_bytes(id_cs).iter().enumerate() {
            digit_of[c as usize] = i as u8;
        }
        Ok(KeyCodec {
            pre,
            id_cs,
            id_digits,
            id_len,
            post,
            cap,
            pre_template,
            ordered_bytes,
            salt,
            digit_of,
            fixed,
        })
    }

    /// How many ids (and so keys) there are.
    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// True when keys sort by their order value (range deletes and start-end ranges).
    pub fn is_ordered(&self) -> bool {
        self.ordered_bytes.is_some()
    }

    /// True when order values are the ids themselves (no varying part before them),
    /// so they fit in 64 bits.
    pub fn is_narrow(&self) -> bool {
        self.ordered_bytes == Some(0)
    }

    /// True when a key can be parsed back to its id (a fixed-width part before it).
    pub fn is_decodable(&self) -> bool {
        self.pre_template.is_some()
    }

    /// True when some part before or after the identity is a hot prefix.
    pub fn has_hot(&self) -> bool {
        self.pre.iter().chain(&self.post).any(Str::has_hot)
    }

    /// Appends the key of `id` to `out`; returns true when it got a hot prefix.
    #[inline]
    pub fn render(&self, id: u64, pools: &CharPools, out: &mut Vec<u8>) -> bool {
        if let Some((prefix, suffix)) = &self.fixed {
            out.extend_from_slice(prefix);
            self.push_digits(id, out);
            out.extend_from_slice(suffix);
            return false;
        }
        let mut rng = SplitMix64::seed_from_u64(self.salt ^ mix64(id));
        let mut hot = false;
        for p in &self.pre {
            hot |= p.render(pools, &mut rng, out);
        }
        self.push_digits(id, out);
        let len = (self.id_len.sample_count(&mut rng) as usize).max(self.id_digits);
        if len > self.id_digits {
            pools.push(self.id_cs, len - self.id_digits, &mut rng, out);
        }
        for p in &self.post {
            hot |= p.render(pools, &mut rng, out);
        }
        hot
    }

    #[inline]
    fn push_digits(&self, id: u64, out: &mut Vec<u8>) {
        // A constant base lets the compiler turn each division into a multiplication.
        match self.id_cs {
            CharacterSet::Numeric => spell::<10>(id, self.id_digits, charset_bytes(self.id_cs), out),
            CharacterSet::Alphabetic => spell::<52>(id, self.id_digits, charset_bytes(self.id_cs), out),
            CharacterSet::Alphanumeric => spell::<62>(id, self.id_digits, charset_bytes(self.id_cs), out),
        }
    }

    /// The order value of `id`'s key (ordered key spaces only): keys compare like
    /// their order values.
    pub fn order(&self, id: u64, pools: &CharPools, scratch: &mut Vec<u8>) -> u128 {
        let (Some(template), Some(varying)) = (&self.pre_template, self.ordered_bytes) else {
            return u128::from(id);
        };
        if varying == 0 {
            return u128::from(id);
        }
        scratch.clear();
        let mut rng = SplitMix64::seed_from_u64(self.salt ^ mix64(id));
        for p in &self.pre {
            p.render(pools, &mut rng, scratch);
        }
        let mut pre: u128 = 0;
        for (i, t) in template.iter().enumerate() {
            if t.is_none() {
                pre = (pre << 8) | u128::from(scratch[i]);
            }
        }
        pre * u128::from(self.cap) + u128::from(id)
    }

    /// Appends the smallest key whose order value is at least `order`: the fixed part
    /// and the identity digits, without filler. Past every key, it is `\xff`, which
    /// sorts after every spec key (UTF-8 text never holds that byte).
    pub fn bound(&self, order: u128, out: &mut Vec<u8>) {
        let (Some(template), Some(varying)) = (&self.pre_template, self.ordered_bytes) else {
            out.push(0xff);
            return;
        };
        let cap = u128::from(self.cap);
        let pre = order / cap;
        if varying < 16 && pre >> (8 * varying) != 0 {
            out.push(0xff);
            return;
        }
        let mut shift = 8 * varying;
        for t in template {
            match t {
                Some(b) => out.push(*b),
                None => {
                    shift -= 8;
                    out.push((pre >> shift) as u8);
                }
            }
        }
        self.push_digits((order % cap) as u64, out);
    }

    /// The id whose key is exactly `key`, if there is one.
    pub fn decode(&self, key: &[u8], pools: &CharPools, scratch: &mut Vec<u8>) -> Option<u64> {
        let at = self.pre_template.as_ref()?.len();
        let digits = key.get(at..at + self.id_digits)?;
        let base = charset_bytes(self.id_cs).len() as u64;
        let mut id: u64 = 0;
        for &c in digits {
            let d = self.digit_of[c as usize];
            if d == u8::MAX {
                return None;
            }
            id = id.checked_mul(base)?.checked_add(u64::from(d))?;
        }
        if id >= self.cap {
            return None;
        }
        scratch.clear();
        self.render(id, pools, scratch);
        (scratch.as_slice() == key).then_some(id)
    }
}

/// Appends `id` as `digits` characters of `chars` (base `B`), most significant first.
#[inline]
fn spell<const B: u64>(id: u64, digits: usize, chars: &[u8], out: &mut Vec<u8>) {
    // Spelled right to left into a stack buffer (ids have at most 64 digits, in base 2
    // and up), then appended in one copy.
    let mut buf = [0u8; 64];
    let mut i = digits;
    let mut x = id;
    if B == 10 {
        // Two decimal digits per division.
        while i >= 2 {
            let pair = (x % 100) as usize;
            x /= 100;
            buf[i - 2..i].copy_from_slice(&DIGIT_PAIRS[2 * pair..2 * pair + 2]);
            i -= 2;
        }
    }
    while i > 0 {
        buf[i - 1] = chars[(x % B) as usize];
        x /= B;
        i -= 1;
    }
    out.extend_from_slice(&buf[..digits]);
}

/// "00" to "99".
const DIGIT_PAIRS: &[u8; 200] = b"00010203040506070809101112131415161718192021222324252627282930313233343536373839\
40414243444546474849505152535455565758596061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Digits of the identity: as many as fit in 64 bits, but no more than its shortest
/// length (a longer length is filled with random characters after the digits).
fn id_digits(base: u64, len: &NumExpr) -> usize {
    let most = max_digits(base);
    match len.min_count() {
        Some(min) => most.min(min as usize),
        None => most,
    }
}

/// The byte template of fixed-width parts (None when some part varies in width).
fn pre_template(pre: &[Str]) -> Option<Vec<Option<u8>>> {
    let mut t = Vec::new();
    for p in pre {
        match p {
            Str::Lit(b) => t.extend(b.iter().map(|&c| Some(c))),
            other => t.extend(std::iter::repeat_n(None, other.fixed_width()?)),
        }
    }
    Some(t)
}

/// A pseudo-random permutation of [0, n): a balanced Feistel network on the smallest
/// even bit width that covers n, with cycle walking back into range.
#[derive(Debug, Clone)]
pub struct Perm {
    n: u64,
    half: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Perm {
    /// A permutation of [0, n) keyed by `seed`.
    pub fn new(n: u64, seed: u64) -> Perm {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half = bits.div_ceil(2).max(1);
        let mut s = SplitMix64::seed_from_u64(seed);
        Perm {
            n,
            half,
            mask: if half >= 64 { u64::MAX } else { (1u64 << half) - 1 },
            keys: [s.next_u64(), s.next_u64(), s.next_u64(), s.next_u64()],
        }
    }

    #[inline]
    fn round(&self, x: u64, k: u64) -> u64 {
        mix64(x ^ k) & self.mask
    }

    #[inline]
    fn forward(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half, x & self.mask);
        for &k in &self.keys {
            (l, r) = (r, l ^ self.round(r, k));
        }
        (l << self.half) | r
    }

    #[inline]
    fn backward(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half, x & self.mask);
        for &k in self.keys.iter().rev() {
            (l, r) = (r ^ self.round(l, k), l);
        }
        (l << self.half) | r
    }

    /// The image of `x` < n.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        let mut y = self.forward(x);
        while y >= self.n {
            y = self.forward(y);
        }
        y
    }

    /// The preimage of `y` < n.
    #[inline]
    pub fn invert(&self, y: u64) -> u64 {
        let mut x = self.backward(y);
        while x >= self.n {
            x = self.backward(x);
        }
        x
    }
}

/// One thread's slice of a section's ids: `[base, base + len)`, handed out in
/// permuted order.
#[derive(Debug, Clone)]
pub struct IdSlice {
    base: u64,
    len: u64,
    owned_end: u64,
    perm: Perm,
    issued: u64,
}

impl IdSlice {
    /// Thread `thread` of `threads`' slice of [0, cap).
    pub fn new(cap: u64, thread: usize, threads: usize, seed: u64) -> IdSlice {
        let len = cap / threads as u64;
        IdSlice {
            base: len * thread as u64,
            len,
            owned_end: len * threads as u64,
            perm: Perm::new(len.max(1), mix64(seed ^ thread as u64)),
            issued: 0,
        }
    }

    /// Ids this thread may still hand out.
    pub fn remaining(&self) -> u64 {
        self.len - self.issued
    }

    /// The first id of the slice and the first past it.
    pub fn bounds(&self) -> (u64, u64) {
        (self.base, self.base + self.len)
    }

    /// A fresh id, never handed out before, or None when the slice is used up.
    #[inline]
    pub fn fresh(&mut self) -> Option<u64> {
        if self.issued >= self.len {
            return None;
        }
        let id = self.base + self.perm.apply(self.issued);
        self.issued += 1;
        Some(id)
    }

    /// The `i`-th id handed out (i below the number handed out).
    #[inline]
    pub fn nth(&self, i: u64) -> u64 {
        self.base + self.perm.apply(i)
    }

    /// A random id not handed out yet (its key is certainly absent), or None.
    #[inline]
    pub fn unissued<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<u64> {
        use rand::RngExt;
        if self.issued >= self.len {
            return None;
        }
        Some(self.base + self.perm.apply(rng.random_range(self.issued..self.len)))
    }

    /// True when `id` may be live: another thread's, or one this thread handed out.
    pub fn maybe_live(&self, id: u64) -> bool {
        if id >= self.owned_end {
            return false;
        }
        if id < self.base || id >= self.base + self.len {
            return true;
        }
        self.perm.invert(id - self.base) < self.issued
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::dist::Dist;
    use std::collections::HashSet;

    fn chars(cs: CharacterSet, len: u64) -> Str {
        Str::Chars {
            cs,
            len: NumExpr::Const(len as f64),
        }
    }

    #[test]
    fn permutations_are_bijective_and_invertible() {
        for n in [1u64, 2, 3, 10, 1000, 4097] {
            let p = Perm::new(n, 42);
            let images: HashSet<u64> = (0..n).map(|x| p.apply(x)).collect();
            assert_eq!(images.len() as u64, n);
            assert!(images.iter().all(|&y| y < n));
            for x in 0..n {
                assert_eq!(p.invert(p.apply(x)), x);
            }
        }
        let p = Perm::new(u64::MAX, 1);
        assert_eq!(p.invert(p.apply(123_456_789)), 123_456_789);
    }

    #[test]
    fn keys_are_unique_ordered_and_decodable() {
        let expr = Str::Seq(vec![
            Str::Lit(b"user:".to_vec()),
            chars(CharacterSet::Numeric, 12),
            Str::Lit(b":".to_vec()),
            Str::Chars {
                cs: CharacterSet::Alphanumeric,
                len: NumExpr::Dist(Dist::uniform(0.0, 8.0).unwrap()),
            },
        ]);
        let codec = KeyCodec::new(expr, 7).unwrap();
        assert_eq!(codec.capacity(), 1_000_000_000_000);
        assert!(codec.is_ordered() && codec.is_decodable());
        let pools = CharPools::new(3);
        let mut slice = IdSlice::new(codec.capacity(), 0, 1, 5);
        let mut keys = Vec::new();
        let mut scratch = Vec::new();
        for _ in 0..2000 {
            let id = slice.fresh().unwrap();
            let mut k = Vec::new();
            codec.render(id, &pools, &mut k);
            assert_eq!(codec.decode(&k, &pools, &mut scratch), Some(id));
            keys.push((codec.order(id, &pools, &mut scratch), k));
        }
        let distinct: HashSet<&Vec<u8>> = keys.iter().map(|(_, k)| k).collect();
        assert_eq!(distinct.len(), keys.len());
        let mut by_order = keys.clone();
        by_order.sort();
        let mut by_bytes = keys.clone();
        by_bytes.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(by_order, by_bytes, "keys sort like their order values");
        // A bound sorts before the key of the same order and after the one before.
        let mut b = Vec::new();
        codec.bound(by_order[10].0, &mut b);
        assert!(b.as_slice() <= by_order[10].1.as_slice() && b.as_slice() > by_order[9].1.as_slice());
    }

    #[test]
    fn thread_slices_are_disjoint_and_unissued_ids_absent() {
        let cap = 10_000;
        let mut slices: Vec<IdSlice> = (0..3).map(|t| IdSlice::new(cap, t, 3, 9)).collect();
        let mut seen = HashSet::new();
        for s in &mut slices {
            for _ in 0..1000 {
                assert!(seen.insert(s.fresh().unwrap()));
            }
        }
        let mut rng = SplitMix64::seed_from_u64(1);
        for _ in 0..1000 {
            let id = slices[1].unissued(&mut rng).unwrap();
            assert!(!seen.contains(&id));
            assert!(!slices[1].maybe_live(id));
        }
        let s = &slices[0];
        assert!(s.maybe_live(s.bounds().1), "another thread's id may be live");
        assert!(!s.maybe_live(9_999), "the remainder past the last slice is never used");
    }

    #[test]
    fn constant_keys_spell_their_id() {
        let expr = Str::Seq(vec![Str::Lit(b"user".to_vec()), chars(CharacterSet::Numeric, 19)]);
        let codec = KeyCodec::new(expr, 1).unwrap();
        let pools = CharPools::new(1);
        for (id, want) in [
            (1_234_567u64, &b"user0000000000001234567"[..]),
            (9_999_999_999_999_999_999, b"user9999999999999999999"),
            (0, b"user0000000000000000000"),
        ] {
            let mut k = Vec::new();
            codec.render(id, &pools, &mut k);
            assert_eq!(k, want);
            assert_eq!(codec.decode(&k, &pools, &mut Vec::new()), Some(id));
        }
        let odd = KeyCodec::new(chars(CharacterSet::Numeric, 3), 1).unwrap();
        let mut k = Vec::new();
        odd.render(42, &pools, &mut k);
        assert_eq!(k, b"042");
    }

    #[test]
    fn a_key_without_a_uniform_part_is_refused() {
        let err = KeyCodec::new(Str::Lit(b"k".to_vec()), 1).unwrap_err();
        assert!(err.contains("uniform"), "{err}");
    }
}
