//! K-L sortedness: K entries out of place, none displaced more than L positions.
//! Sorted groups insert their keys in this order (Tectonic's `sorted {k, l}`).

use rand::{Rng, RngExt};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::keys::{IdSlice, KeyCodec};
use super::strings::CharPools;
use crate::workload::dist::NumExpr;

/// Inserts of a `sorted` group: fresh ids ordered by key, then displaced (K-L).
pub struct SortedInserts {
    k: NumExpr,
    l: NumExpr,
    window: u64,
    queue: Vec<u64>,
    next: usize,
}

impl SortedInserts {
    /// K and L as written (fractions of `window` below 1, else counts); `window` is the
    /// thread's inserts in the group.
    pub fn new(k: NumExpr, l: NumExpr, window: u64) -> SortedInserts {
        SortedInserts {
            k,
            l,
            window,
            queue: Vec::new(),
            next: 0,
        }
    }

    /// The next insert id, refilling the window (sorted, then displaced) when empty.
    pub fn take(
        &mut self,
        codec: &KeyCodec,
        ids: &mut IdSlice,
        chars: &CharPools,
        rng: &mut Xoshiro256PlusPlus,
        scratch: &mut Vec<u8>,
    ) -> Option<u64> {
        if self.next == self.queue.len() {
            let n = self.window.min(ids.remaining());
            if n == 0 {
                return None;
            }
            self.queue.clear();
            for _ in 0..n {
                self.queue.push(ids.fresh()?);
            }
            self.queue.sort_by_cached_key(|&id| codec.order(id, chars, scratch));
            let k = share_or_count(self.k.sample(rng), n);
            let l = share_or_count(self.l.sample(rng), n);
            displace(&mut self.queue, k, l, rng);
            self.next = 0;
        }
        self.next += 1;
        Some(self.queue[self.next - 1])
    }
}

/// A K or L given as a fraction (below 1) of `n`, or as a count.
fn share_or_count(x: f64, n: u64) -> usize {
    let v = if x < 1.0 { x.max(0.0) * n as f64 } else { x };
    v.round() as usize
}

/// Reorders sorted `items` so that `k` entries are out of place and none moves more
/// than `l` positions; the farthest moves exactly `l` when k >= 2 (K-L sortedness).
///
/// Entries move by swaps of two untouched positions at most `l` apart (both then out
/// of place), plus one rotation of three when `k` is odd. Swaps are placed at random;
/// if random placement stalls (k close to n), a left-to-right sweep pairs what is left.
/// An odd `k` with `l` = 1, and a `k` the sweep cannot reach, round down.
pub fn displace<T, R: Rng + ?Sized>(items: &mut [T], k: usize, l: usize, rng: &mut R) {
    let n = items.len();
    let l = l.min(n.saturating_sub(1));
    if n < 2 || k < 2 || l == 0 {
        return;
    }
    let mut k = k.min(n);
    let mut touched = vec![false; n];
    // The first move sets the maximum displacement to exactly l.
    let i = rng.random_range(0..n - l);
    if k % 2 == 1 && l >= 2 {
        let j = rng.random_range(i + 1..i + l);
        // old[i+l] -> i, old[i] -> j, old[j] -> i+l.
        items.swap(i, i + l);
        items.swap(j, i + l);
        for p in [i, j, i + l] {
            touched[p] = true;
        }
        k -= 3;
    } else {
        items.swap(i, i + l);
        touched[i] = true;
        touched[i + l] = true;
        k -= 2;
        k -= k % 2;
    }
    let mut attempts = 20 * (k / 2) + 1000;
    while k >= 2 && attempts > 0 {
        attempts -= 1;
        let i = rng.random_range(0..n - 1);
        let j = i + rng.random_range(1..=l);
        if j < n && !touched[i] && !touched[j] {
            items.swap(i, j);
            touched[i] = true;
            touched[j] = true;
            k -= 2;
        }
    }
    let mut i = 0;
    while k >= 2 && i < n {
        if !touched[i]
            && let Some(j) = (i + 1..=(i + l).min(n - 1)).find(|&j| !touched[j])
        {
            items.swap(i, j);
            touched[i] = true;
            touched[j] = true;
            k -= 2;
        }
        i += 1;
    }
}

/// Measures K (entries out of place, as a count) and L (largest displacement) of a
/// sequence of distinct values.
pub fn measure_kl<T: Ord>(items: &[T]) -> (usize, usize) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[a].cmp(&items[b]));
    let mut k = 0;
    let mut l = 0;
    for (rank, &pos) in order.iter().enumerate() {
        if rank != pos {
            k += 1;
            l = l.max(rank.abs_diff(pos));
        }
    }
    (k, l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn kl_displacement_is_measured_back() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        for (n, k, l) in [
            (10_000, 100, 1000),
            (10_000, 101, 7),
            (1000, 500, 3),
            (1000, 1000, 50),
            (50, 2, 1),
        ] {
            let mut v: Vec<u32> = (0..n as u32).collect();
            displace(&mut v, k, l, &mut rng);
            let (mk, ml) = measure_kl(&v);
            assert_eq!(ml, l, "n {n} k {k} l {l}");
            // Exact, except that pairing every entry may leave a few isolated ones.
            assert!(
                mk == k || (k == n && mk * 100 >= n * 95),
                "n {n} k {k} l {l}: measured {mk}"
            );
        }
        let mut v: Vec<u32> = (0..100).collect();
        displace(&mut v, 0, 10, &mut rng);
        assert_eq!(measure_kl(&v), (0, 0));
    }
}
