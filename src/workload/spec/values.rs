//! Values: slices of a pre-generated random buffer at random offsets, as db_bench
//! makes them, instead of sampling every byte.
//!
//! The buffer ([`ValuePool`]) is built from the spec's character set, compressible to
//! the spec's `compression_ratio` (db_bench's knob), and the run's seed: the same for
//! every worker, so the workers of a process share one (a megabyte each, built once
//! instead of once per worker: a server run may have hundreds of workers).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use rand::Rng;

use super::schema::CharacterSet;
use super::strings::{CharPools, MAX_STRING_BYTES, Str, charset_bytes};
use crate::kv::values::ValuePool;
use crate::workload::dist::NumExpr;

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

/// The pool of character set `cs`, compression ratio `ratio` and seed `seed`: the one
/// another worker of this process already holds, or a new one. Called when a phase
/// starts, never per operation.
fn shared_pool(cs: CharacterSet, ratio: f64, seed: u64) -> Arc<ValuePool> {
    type Key = (usize, u64, u64);
    static POOLS: Mutex<Option<HashMap<Key, Weak<ValuePool>>>> = Mutex::new(None);
    let key = (cs as usize, ratio.to_bits(), seed);
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let pools = pools.get_or_insert_with(HashMap::new);
    if let Some(pool) = pools.get(&key).and_then(Weak::upgrade) {
        return pool;
    }
    // Pools no worker holds any more are dropped from the table here.
    pools.retain(|_, p| p.strong_count() > 0);
    let pool = Arc::new(ValuePool::new(charset_bytes(cs), ratio, seed));
    pools.insert(key, Arc::downgrade(&pool));
    pool
}

/// The pools of one worker (shared with the other workers), taken on first use per
/// character set.
#[derive(Debug)]
pub struct Values {
    pools: [Option<Arc<ValuePool>>; 3],
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
                    self.pools[i] = Some(shared_pool(*cs, self.ratio, self.seed ^ (i as u64 + 1)));
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
