//! Values: slices of a pre-generated random buffer at random offsets, as db_bench
//! makes them, instead of sampling every byte.
//!
//! The buffer ([`ValuePool`]) is built once per thread from the spec's character set,
//! compressible to the spec's `compression_ratio` (db_bench's knob).

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
                    self.pools[i] = Some(ValuePool::new(
                        charset_bytes(*cs),
                        self.ratio,
                        self.seed ^ (i as u64 + 1),
                    ));
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
