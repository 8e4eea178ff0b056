//! The extend phase of an epoch, planned before it runs: which keys grow and by how
//! much, decided once from the store's key index so that the value cap is applied
//! exactly (the harness knows every value's length without reading it) and every
//! engine, whatever its append method, sees the same appends.
//!
//! Keys are chosen by rank from the extend distribution (uniform, or YCSB's scrambled
//! zipfian so the hot keys are spread over the key space). Each key belongs to one
//! thread (index mod threads), so no two threads ever append to the same key: appends
//! stay exact even on engines whose append is a read and then a write.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::data::KeyIndex;
use crate::engine::fits_cap;
use crate::workload::dist::{NumExpr, Selector};

/// One thread's share of an extend phase.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ThreadExtends {
    /// (key index, bytes to append), in the order drawn.
    pub appends: Vec<(u32, u32)>,
}

/// An epoch's extend phase.
#[derive(Debug, Default)]
pub struct ExtendPlan {
    /// Per thread.
    pub threads: Vec<ThreadExtends>,
    /// Extends drawn that the cap turned away (never issued).
    pub skipped: u64,
    /// Bytes the issued extends add.
    pub bytes: u64,
}

impl ExtendPlan {
    /// Draws `count` extends over `index` for `threads` threads, applying them to the
    /// index's sizes as it goes (so the index then describes the store after the
    /// phase). `len` gives each extend's length; `cap` is the value cap.
    #[allow(clippy::too_many_arguments)]
    pub fn draw(
        index: &mut KeyIndex,
        count: u64,
        selector: &Selector,
        len: &NumExpr,
        cap: Option<u64>,
        threads: usize,
        seed: u64,
    ) -> ExtendPlan {
        let mut plan = ExtendPlan {
            threads: vec![ThreadExtends::default(); threads],
            skipped: 0,
            bytes: 0,
        };
        let n = index.len() as u64;
        if n == 0 {
            plan.skipped = count;
            return plan;
        }
        let mut selector = selector.clone();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        for _ in 0..count {
            let i = selector.pick(n, &mut rng) as usize;
            let bytes = len.sample_count(&mut rng).min(u64::from(u32::MAX)) as u32;
            let size = index.sizes[i];
            if !fits_cap(cap, size as usize, bytes as usize) {
                plan.skipped += 1;
                continue;
            }
            index.sizes[i] = size + bytes;
            plan.bytes += u64::from(bytes);
            plan.threads[i % threads].appends.push((i as u32, bytes));
        }
        plan
    }

    /// Extends that will be issued.
    pub fn issued(&self) -> u64 {
        self.threads.iter().map(|t| t.appends.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::dist::Dist;

    fn index(n: usize, len: u32) -> KeyIndex {
        let mut ix = KeyIndex::default();
        for i in 0..n {
            ix.push(format!("k{i:06}").as_bytes(), len as usize);
        }
        ix
    }

    #[test]
    fn uniform_extends_spread_and_keep_exact_sizes() {
        let mut ix = index(1000, 1000);
        let before = ix.volume();
        let plan = ExtendPlan::draw(
            &mut ix,
            10_000,
            &Selector::new(None).unwrap(),
            &NumExpr::Const(100.0),
            None,
            3,
            1,
        );
        assert_eq!((plan.issued(), plan.skipped, plan.bytes), (10_000, 0, 1_000_000));
        assert_eq!(ix.volume(), before + 1_000_000);
        for (t, share) in plan.threads.iter().enumerate() {
            assert!(
                share.appends.iter().all(|&(i, _)| i as usize % 3 == t),
                "keys are owned by one thread"
            );
        }
        let max = *ix.sizes.iter().max().unwrap();
        // About 10 extends a key (sd 3.2): the largest stays within twice the mean of 2000.
        assert!(max < 4000, "uniform growth stays near the mean (max {max})");
    }

    #[test]
    fn zipfian_extends_concentrate_and_the_cap_holds() {
        let mut ix = index(10_000, 1000);
        let zipf = Selector::new(Some(&Dist::zipf(None, Some(0.99), true).unwrap())).unwrap();
        let plan = ExtendPlan::draw(&mut ix, 100_000, &zipf, &NumExpr::Const(100.0), Some(200_000), 2, 9);
        let max = *ix.sizes.iter().max().unwrap() as f64;
        let mean = ix.sizes.iter().map(|&s| s as f64).sum::<f64>() / ix.len() as f64;
        assert!(
            max > 50.0 * mean,
            "the hottest key grows far past the mean: max {max}, mean {mean}"
        );
        assert!(ix.sizes.iter().all(|&s| s <= 200_000), "no value passes the cap");
        assert!(plan.skipped > 0, "the hottest key hit the cap");
        assert_eq!(plan.issued() + plan.skipped, 100_000);
        // Deterministic for a seed.
        let mut again = index(10_000, 1000);
        let plan2 = ExtendPlan::draw(&mut again, 100_000, &zipf, &NumExpr::Const(100.0), Some(200_000), 2, 9);
        assert_eq!(plan.threads, plan2.threads);
    }
}
