//! Values: slices of a pre-generated random buffer at random offsets, as db_bench
//! makes them, instead of sampling every byte.
//!
//! The buffer is built once per thread from the spec's character set. Its
//! compressibility follows `compression_ratio` (db_bench's knob): each 100-byte
//! stretch holds `ratio * 100` random characters, repeated to fill the stretch, so
//! a compressor shrinks values to about that fraction.

use rand::{Rng, RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::schema::CharacterSet;
use super::strings::{CharPools, MAX_STRING_BYTES, Str, charset_bytes};
use crate::workload::dist::NumExpr;

/// Bytes in a value buffer (db_bench uses 1 MiB too).
const POOL_BYTES: usize = 1 << 20;

/// Length of each stretch that `compression_ratio` applies to.
const STRETCH: usize = 100;

/// A buffer of value bytes for one character set.
#[derive(Debug, Clone)]
pub struct ValuePool {
    data: Vec<u8>,
}

impl ValuePool {
    /// A buffer of characters from `cs`, compressible to about `ratio`.
    pub fn new(cs: CharacterSet, ratio: f64, seed: u64) -> ValuePool {
        let chars = charset_bytes(cs);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let unique = ((ratio * STRETCH as f64).ceil() as usize).clamp(1, STRETCH);
        let mut data = Vec::with_capacity(POOL_BYTES);
        while data.len() < POOL_BYTES {
            let start = data.len();
            for _ in 0..unique {
                data.push(chars[rng.random_range(0..chars.len())]);
            }
            while data.len() < start + STRETCH {
                let i = start + (data.len() - start) % unique;
                data.push(data[i]);
            }
        }
        data.truncate(POOL_BYTES);
        ValuePool { data }
    }

    /// A value of `len` bytes (at most half the buffer) starting at `offset`, taken
    /// modulo the offsets where it fits: the same bytes for the same offset.
    #[inline]
    pub fn slice_at(&self, offset: usize, len: usize) -> &[u8] {
        let len = len.min(POOL_BYTES / 2);
        let off = offset % (POOL_BYTES - len + 1);
        &self.data[off..off + len]
    }

    /// A value of `len` bytes: a slice of the buffer when it fits in half of it,
    /// else consecutive slices copied into `out`.
    #[inline]
    pub fn value<'a, R: Rng + ?Sized>(&'a self, len: usize, rng: &mut R, out: &'a mut Vec<u8>) -> &'a [u8] {
        if len <= POOL_BYTES / 2 {
            let off = rng.random_range(0..=POOL_BYTES - len);
            return &self.data[off..off + len];
        }
        out.clear();
        while out.len() < len {
            let take = (len - out.len()).min(POOL_BYTES / 2);
            let off = rng.random_range(0..=POOL_BYTES - take);
            out.extend_from_slice(&self.data[off..off + take]);
        }
        out
    }
}

/// How an operation makes its values.
#[derive(Debug, Clone)]
pub enum ValueGen {
    /// `uniform {len, character_set}`: a pool slice (compressible per the spec).
    Pool {
        /// Which pool.
        cs: CharacterSet,
        /// Length.
        len: NumExpr,
    },
    /// Any other string expression, rendered (not subject to `compression_ratio`).
    Expr(Str),
}

impl ValueGen {
    /// The generator for a compiled value expression.
    pub fn new(s: Str) -> ValueGen {
        match s {
            Str::Chars { cs, len } => ValueGen::Pool { cs, len },
            other => ValueGen::Expr(other),
        }
    }
}

/// The pools of one thread, built on first use per character set.
#[derive(Debug)]
pub struct Values {
    pools: [Option<ValuePool>; 3],
    ratio: f64,
    seed: u64,
    buf: Vec<u8>,
}

impl Values {
    /// Pools for values compressible to `ratio`, drawn from `seed`.
    pub fn new(ratio: f64, seed: u64) -> Values {
        Values {
            pools: [None, None, None],
            ratio,
            seed,
            buf: Vec::new(),
        }
    }

    /// Builds the pools `gens` use (outside any timed region).
    pub fn prepare(&mut self, gens: &[&ValueGen]) {
        for g in gens {
            if let ValueGen::Pool { cs, .. } = g {
                let i = *cs as usize;
                if self.pools[i].is_none() {
                    self.pools[i] = Some(ValuePool::new(*cs, self.ratio, self.seed ^ (i as u64 + 1)));
                }
            }
        }
    }

    /// One value of `gen` (its pool was prepared).
    #[inline]
    pub fn make<'a, R: Rng + ?Sized>(&'a mut self, g: &ValueGen, chars: &CharPools, rng: &mut R) -> &'a [u8] {
        match g {
            ValueGen::Pool { cs, len } => {
                let len = (len.sample_count(rng) as usize).min(MAX_STRING_BYTES);
                let pool = self.pools[*cs as usize].as_ref().expect("value pools are prepared");
                pool.value(len, rng, &mut self.buf)
            }
            ValueGen::Expr(s) => {
                self.buf.clear();
                s.render(chars, rng, &mut self.buf);
                &self.buf
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_slices_with_the_requested_compressibility() {
        let pool = ValuePool::new(CharacterSet::Alphanumeric, 0.25, 1);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let mut buf = Vec::new();
        let v = pool.value(1000, &mut rng, &mut buf).to_vec();
        assert_eq!(v.len(), 1000);
        assert!(v.iter().all(u8::is_ascii_alphanumeric));
        // Each 100-byte stretch repeats its first 25 characters.
        assert!(pool.data[..100].chunks(25).all(|c| c == &pool.data[..25]));
        let long = pool.value(POOL_BYTES + 10, &mut rng, &mut buf);
        assert_eq!(long.len(), POOL_BYTES + 10);
    }
}
