//! Value bytes: slices of a pre-generated random buffer at random offsets, as db_bench
//! makes them, instead of sampling every byte. Workloads fill the buffer from their
//! character set; [`super::Kv::put_sized`] draws an epoch's values from one.
//!
//! Its compressibility follows a ratio (db_bench's `compression_ratio`): each 100-byte
//! stretch holds `ratio * 100` random characters, repeated to fill the stretch, so a
//! compressor shrinks values to about that fraction.

use rand::{Rng, RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

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
    /// A buffer of characters from `chars` (not empty), compressible to about `ratio`.
    pub fn new(chars: &[u8], ratio: f64, seed: u64) -> ValuePool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_slices_with_the_requested_compressibility() {
        let alphanumeric = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let pool = ValuePool::new(alphanumeric, 0.25, 1);
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
