//! What workers publish while a crew runs, for the main thread and the sampler:
//! relaxed per-thread counters, the sample epoch, and the per-thread mailboxes where
//! workers leave interval recorders.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_utils::CachePadded;

use crate::kv::Kv;
use crate::metrics::Recorder;

/// An interval recorder a worker handed over.
#[derive(Debug)]
pub struct Piece {
    /// What the worker recorded since its previous hand-over.
    pub rec: Recorder,
    /// Units it completed in that time.
    pub units: u64,
    /// Raw clock at the hand-over.
    pub raw: u64,
    /// Recorded during a warm-up: shown in the timeline, left out of the results.
    pub warm: bool,
}

/// A worker's hand-over point with the sampler.
#[derive(Debug, Default)]
pub struct Mailbox {
    /// Handed over, not yet collected.
    pub pieces: Vec<Piece>,
    /// Emptied recorders to swap in.
    pub spares: Vec<Recorder>,
}

/// Live counters the main thread (and any sampler) reads while a crew runs.
#[derive(Debug)]
pub struct Live {
    /// Units each thread completed in the current step (warm-up included), updated
    /// once per chunk.
    pub units: Vec<CachePadded<AtomicU64>>,
    /// True while the current step's warm-up runs: what is recorded now will be
    /// discarded (the timeline marks these samples as warm-up).
    pub warming: AtomicBool,
    /// Keys each thread wrote in the current seed, published only while sampled.
    pub keys: Vec<Arc<CachePadded<AtomicU64>>>,
    /// Bumped by the sampler to ask workers for their interval recorders.
    pub epoch: CachePadded<AtomicU64>,
    /// Per-thread hand-over points.
    pub mailboxes: Vec<CachePadded<Mutex<Mailbox>>>,
    /// Whether a sampler thread samples this crew periodically.
    pub sampled: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Live {
    /// Counters and mailboxes for `threads` workers.
    pub fn new(threads: usize, sampled: bool) -> Self {
        Live {
            units: (0..threads).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            warming: AtomicBool::new(false),
            keys: (0..threads)
                .map(|_| Arc::new(CachePadded::new(AtomicU64::new(0))))
                .collect(),
            epoch: CachePadded::new(AtomicU64::new(0)),
            mailboxes: (0..threads)
                .map(|_| CachePadded::new(Mutex::new(Mailbox::default())))
                .collect(),
            sampled,
        }
    }

    /// Units completed so far in the current step, over all threads.
    pub fn units(&self) -> u64 {
        self.units.iter().map(|u| u.load(Ordering::Relaxed)).sum()
    }

    /// Zeroes the counters (at the start of a step).
    pub fn reset(&self) {
        for u in &self.units {
            u.store(0, Ordering::Relaxed);
        }
        for k in &self.keys {
            k.store(0, Ordering::Relaxed);
        }
    }

    /// Leaves the worker's interval recorder in its mailbox, continuing with a spare.
    #[cold]
    #[inline(never)]
    pub fn hand_over(&self, t: usize, kv: &mut Kv, units: u64, raw: u64, warm: bool) {
        let mut mb = lock(&self.mailboxes[t]);
        let full = match mb.spares.pop() {
            Some(spare) => kv.replace_recorder(spare),
            None => {
                // The first hand-over of a thread: allocate its spare outside the lock.
                drop(mb);
                let spare = kv.recorder().empty_like();
                let full = kv.replace_recorder(spare);
                mb = lock(&self.mailboxes[t]);
                full
            }
        };
        mb.pieces.push(Piece {
            rec: full,
            units,
            raw,
            warm,
        });
    }
}
