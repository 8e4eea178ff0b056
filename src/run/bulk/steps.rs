//! What a crew's workers do in the epoch steps that are not workload units: an extend
//! phase (their share of the planned appends) and a fill (writing records into a fresh
//! store in batches: a dump being restored, or a baseline being built). Both go
//! through the timed verbs, so they are measured and reported like any phase.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::data::{Dump, DumpReader, KeyIndex, LOAD_BATCH_BYTES, LOAD_BATCH_RECORDS};
use super::extend::ExtendPlan;
use crate::kv::Kv;
use crate::kv::values::ValuePool;
use crate::run::live::Live;
use crate::workload::spec::strings::mix64;

/// Operations between two checks for a stop, a sample hand-over and progress.
const CHUNK: usize = 256;

/// A value decided on the main thread just before the step that uses it starts.
#[derive(Debug)]
pub struct Slot<T> {
    value: Mutex<Option<Arc<T>>>,
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Slot {
            value: Mutex::new(None),
        }
    }
}

impl<T> Slot<T> {
    /// Puts `value` in the slot (or empties it).
    pub fn set(&self, value: Option<Arc<T>>) {
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = value;
    }

    /// What the slot holds now.
    pub fn get(&self) -> Option<Arc<T>> {
        self.value.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// An extend phase ready to run: the plan, the keys it refers to, and the bytes to
/// append (slices of a shared random buffer).
#[derive(Debug)]
pub struct ExtendWork {
    /// Per-thread appends.
    pub plan: ExtendPlan,
    /// The keys the plan's indexes refer to.
    pub index: Arc<KeyIndex>,
    /// Where appended bytes come from.
    pub pool: Arc<ValuePool>,
    /// Seeds each thread's choice of offsets into the pool.
    pub seed: u64,
}

/// Records to write into a fresh store.
#[derive(Debug)]
pub enum FillSource {
    /// A dump of another store, loaded back as it was.
    Dump(Arc<Dump>),
    /// Every key of an index, each with a value of `len` bytes from `pool`.
    Uniform {
        /// The keys.
        index: Arc<KeyIndex>,
        /// Value length.
        len: usize,
        /// Where value bytes come from.
        pool: Arc<ValuePool>,
        /// Seeds each thread's offsets into the pool.
        seed: u64,
    },
}

/// How a step of this module ended on one thread: operations done, or why it stopped.
pub struct StepRun {
    /// Operations (appends, or records written) completed.
    pub done: u64,
    /// The error that stopped it, if any.
    pub error: Option<String>,
}

/// Checks between chunks: a stop or Ctrl-C, the sampler's hand-over, progress.
struct Pacing<'a> {
    live: &'a Live,
    t: usize,
    stop: &'a dyn Fn() -> bool,
    epoch: u64,
    handed: u64,
}

impl<'a> Pacing<'a> {
    /// Thread `t`'s bookkeeping, starting at the crew's current sample epoch.
    fn new(live: &'a Live, t: usize, stop: &'a dyn Fn() -> bool) -> Self {
        Pacing {
            live,
            t,
            stop,
            epoch: live.epoch.load(Ordering::Relaxed),
            handed: 0,
        }
    }

    /// False when the step must stop.
    fn between_chunks(&mut self, kv: &mut Kv, done: u64) -> bool {
        self.live.units[self.t].store(done, Ordering::Relaxed);
        let now_epoch = self.live.epoch.load(Ordering::Relaxed);
        if now_epoch != self.epoch {
            self.epoch = now_epoch;
            let raw = kv.clock().raw();
            self.live.hand_over(self.t, kv, done - self.handed, raw, false);
            self.handed = done;
        }
        !(self.stop)()
    }
}

/// Thread `t`'s share of an extend phase. `stop` says when the run is stopping.
pub fn extend(kv: &mut Kv, work: &ExtendWork, t: usize, live: &Live, stop: &dyn Fn() -> bool) -> StepRun {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix64(work.seed ^ mix64(t as u64 + 1)));
    let mut scratch = Vec::new();
    let mut pacing = Pacing::new(live, t, stop);
    let mut done = 0u64;
    let Some(share) = work.plan.threads.get(t) else {
        return StepRun { done, error: None };
    };
    for chunk in share.appends.chunks(CHUNK) {
        for &(i, len) in chunk {
            let key = work.index.key(i as usize);
            let suffix = work.pool.value(len as usize, &mut rng, &mut scratch);
            // Errors are counted by the verb; the plan already kept every append
            // under the cap, so a skip here would mean the store changed behind it.
            let _ = kv.append(key, suffix);
            done += 1;
        }
        if !pacing.between_chunks(kv, done) {
            break;
        }
    }
    StepRun { done, error: None }
}

/// Thread `t` of `threads`' share of a fill.
pub fn fill(
    kv: &mut Kv,
    source: &FillSource,
    t: usize,
    threads: usize,
    live: &Live,
    stop: &dyn Fn() -> bool,
) -> StepRun {
    let mut pacing = Pacing::new(live, t, stop);
    let mut done = 0u64;
    match source {
        FillSource::Dump(dump) => {
            for file in dump.files_for(t, threads) {
                let mut reader = DumpReader::open(file);
                loop {
                    let batch = match reader.next_batch() {
                        Ok(b) => b,
                        Err(e) => return StepRun { done, error: Some(e) },
                    };
                    if batch.is_empty() {
                        break;
                    }
                    // A failed write is counted by the verb and fails the point once
                    // the store is loaded (see `driver::load_errors`); loading on is
                    // pointless.
                    if kv.mput(&batch).is_err() {
                        return StepRun { done, error: None };
                    }
                    done += batch.len() as u64;
                    if !pacing.between_chunks(kv, done) {
                        return StepRun { done, error: None };
                    }
                }
            }
        }
        FillSource::Uniform { index, len, pool, seed } => {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix64(*seed ^ mix64(t as u64 + 1)));
            let mut scratch = Vec::new();
            // Contiguous key ranges per thread, as a dump's shares are.
            let n = index.len();
            let (lo, hi) = (n * t / threads, n * (t + 1) / threads);
            let per_batch = LOAD_BATCH_RECORDS.min((LOAD_BATCH_BYTES / (*len).max(1)).max(1));
            let mut i = lo;
            while i < hi {
                let end = (i + per_batch).min(hi);
                // Large values are copied out of the pool (each its own slice); small
                // ones are borrowed from it.
                let vals: Vec<Vec<u8>> = if *len > POOL_BORROW_LIMIT {
                    (i..end)
                        .map(|_| pool.value(*len, &mut rng, &mut scratch).to_vec())
                        .collect()
                } else {
                    Vec::new()
                };
                let batch: Vec<(&[u8], &[u8])> = (i..end)
                    .enumerate()
                    .map(|(j, k)| {
                        let v: &[u8] = if vals.is_empty() {
                            pool.slice_at(mix64(*seed ^ k as u64) as usize, *len)
                        } else {
                            &vals[j]
                        };
                        (index.key(k), v)
                    })
                    .collect();
                if kv.mput(&batch).is_err() {
                    break; // counted; fails the point (see above)
                }
                done += batch.len() as u64;
                i = end;
                if !pacing.between_chunks(kv, done) {
                    break;
                }
            }
        }
    }
    StepRun { done, error: None }
}

/// Values up to this length are borrowed from the pool; longer ones are copied.
const POOL_BORROW_LIMIT: usize = 256 << 10;
