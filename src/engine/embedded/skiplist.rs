//! `skiplist`: the in-memory reference engine.
//!
//! A lock-free concurrent skip list (crossbeam-skiplist): readers and writers on
//! different threads never serialise on a lock. No persistence; the data is dropped
//! when the store closes.
//!
//! Each key's node holds its value in an atomic slot, and every write to a key is a
//! compare-and-swap on that slot: `put` swaps in a new value, `append` swaps in the
//! current value grown by the suffix, `del` swaps in a "dead" mark and then unlinks
//! the node. Writes to one key are therefore linearizable, and concurrent appends
//! never lose one another. (Replacing whole nodes, as an earlier version did with
//! `compare_insert`, is not: when the node it compared has just been unlinked,
//! crossbeam inserts unconditionally, and an append computed from a stale value
//! overwrites newer ones.) A node is unlinked only once it is dead, so a writer that
//! finds a dead node helps unlink it and starts again on a fresh one.
//!
//! Batches (`mput`, `mdel`) are applied key by key: each key's write is atomic, but a
//! concurrent reader may observe a batch half applied. A lock-free skip list has no
//! cheap way to publish several keys at once, and the reference engine must not add a
//! global lock to fake it.

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned, Shared};
use crossbeam_skiplist::base::SkipList;

use crate::engine::Limits;
use crate::engine::{
    AppendMethod, Appended, EngineInfo, EngineResult, Existed, KnobTable, OpenRequest, ReadBuf, ScanFn, Session,
    StorageKind, Store, fits_cap,
};

// The guard-based base API, not SkipMap: its entries borrow from one epoch guard per
// call instead of taking a reference count per node. Reads then write nothing shared,
// and (unlike SkipMap's range iterator in crossbeam-skiplist 0.1.3, which drops the
// previous node's reference without releasing it) nothing a range visits is leaked.
type Map = SkipList<Box<[u8]>, Slot>;

/// Tag of a slot whose node is being deleted: it holds no value and is never
/// written again.
const DEAD: usize = 1;

/// A key's value. Null without a tag: the node was just inserted and has no value
/// yet (absent to readers). A pointer: the value. Null tagged `DEAD`: deleted.
struct Slot(Atomic<Box<[u8]>>);

impl Slot {
    fn empty() -> Slot {
        Slot(Atomic::null())
    }

    fn load<'g>(&self, guard: &'g Guard) -> Shared<'g, Box<[u8]>> {
        self.0.load(Ordering::Acquire, guard)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // SAFETY: a slot is dropped with its node, once no thread can reach it any
        // more (the skip list defers node destruction past every guard), so the value
        // it still holds, if any, is ours to free. Dead slots hold none.
        unsafe {
            let v = self.0.load(Ordering::Relaxed, epoch::unprotected());
            if !v.is_null() {
                drop(v.into_owned());
            }
        }
    }
}

/// The live value in a loaded slot, if any.
fn live<'g>(v: Shared<'g, Box<[u8]>>) -> Option<&'g [u8]> {
    // SAFETY: a non-null pointer in a slot is a published value, freed only through
    // the epoch collector after it is swapped out, so it outlives the guard of `v`.
    (v.tag() != DEAD)
        .then(|| unsafe { v.as_ref() })
        .flatten()
        .map(|b| &b[..])
}

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: "skiplist",
    storage: StorageKind::Memory,
    description: "in-memory lock-free skip list (crossbeam-skiplist); the reference engine",
    append: AppendMethod::CompareAndSwap,
    del_reports_existence: true,
    // Each key of a batch is inserted on its own (see the module comment).
    atomic_batches: false,
    limits: Limits::NONE,
    version: || crate::engine::versions::crate_version("crossbeam-skiplist"),
    knobs: &KNOBS,
    open,
};

/// The skip list has no knobs: every option is refused.
pub static KNOBS: KnobTable<()> = KnobTable::new("skiplist", || (), &[]);

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    KNOBS.parse(req.options)?;
    Ok(Box::new(SkiplistStore {
        map: Arc::new(Map::new(epoch::default_collector().clone())),
        cap: req.max_value_bytes,
    }))
}

struct SkiplistStore {
    map: Arc<Map>,
    cap: Option<u64>,
}

impl Store for SkiplistStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(SkiplistSession {
            map: Arc::clone(&self.map),
            cap: self.cap,
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        // Nodes, including any a concurrent writer or delete is still settling.
        vec![("keys".to_string(), self.map.len() as f64)]
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        Ok(())
    }
}

struct SkiplistSession {
    map: Arc<Map>,
    cap: Option<u64>,
}

impl SkiplistSession {
    /// Sets `key`'s value to `next(current)` (None: the key is absent) with a
    /// compare-and-swap, retrying until no other write got in between.
    fn write(&self, key: &[u8], mut next: impl FnMut(Option<&[u8]>) -> Option<Box<[u8]>>) {
        let guard = &epoch::pin();
        loop {
            // The common case (the key exists) allocates no key.
            let retry = match self.map.get(key, guard) {
                Some(entry) => try_write(entry.value(), &mut next, guard, || {
                    entry.remove();
                }),
                None => {
                    let entry = self.map.get_or_insert_with(key.into(), Slot::empty, guard);
                    let retry = try_write(entry.value(), &mut next, guard, || {
                        entry.remove(guard);
                    });
                    entry.release(guard);
                    retry
                }
            };
            if !retry {
                return;
            }
        }
    }

    /// Marks the key's slot dead and unlinks its node; true if it held a value.
    fn delete(&self, slot: &Slot, unlink: impl Fn(), guard: &Guard) -> bool {
        loop {
            let cur = slot.load(guard);
            if cur.tag() == DEAD {
                unlink(); // another delete got here first: help it finish
                return false;
            }
            if cur.is_null() {
                return false; // a node a writer has just inserted: no value yet
            }
            let dead = Shared::null().with_tag(DEAD);
            if slot
                .0
                .compare_exchange(cur, dead, Ordering::AcqRel, Ordering::Acquire, guard)
                .is_ok()
            {
                // SAFETY: `cur` is no longer reachable from the slot; readers that
                // loaded it hold guards, which the collector waits for.
                unsafe { guard.defer_destroy(cur) };
                unlink();
                return true;
            }
        }
    }
}

/// One compare-and-swap attempt on a node's slot; true when the caller must look the
/// key up again (the node is dead, or another write got in between).
fn try_write(
    slot: &Slot,
    next: &mut impl FnMut(Option<&[u8]>) -> Option<Box<[u8]>>,
    guard: &Guard,
    unlink: impl FnOnce(),
) -> bool {
    let cur = slot.load(guard);
    if cur.tag() == DEAD {
        unlink(); // help the delete finish, then start over on a fresh node
        return true;
    }
    // None: the value stays as it is (decided on the value just loaded).
    let Some(value) = next(live(cur)) else {
        return false;
    };
    let new = Owned::new(value);
    match slot
        .0
        .compare_exchange(cur, new, Ordering::AcqRel, Ordering::Acquire, guard)
    {
        Ok(_) => {
            if !cur.is_null() {
                // SAFETY: as in `delete`: swapped out, freed after every guard.
                unsafe { guard.defer_destroy(cur) };
            }
            false
        }
        Err(_) => true,
    }
}

impl Session for SkiplistSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.write(key, |_| Some(val.into()));
        Ok(())
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let guard = &epoch::pin();
        match self.map.get(key, guard).and_then(|e| live(e.value().load(guard))) {
            Some(v) => {
                out.set(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let guard = &epoch::pin();
        let existed = match self.map.get(key, guard) {
            Some(entry) => self.delete(
                entry.value(),
                || {
                    entry.remove();
                },
                guard,
            ),
            None => false,
        };
        Ok(if existed { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let guard = &epoch::pin();
        let mut rows = 0usize;
        for entry in self
            .map
            .range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)), guard)
        {
            let Some(v) = live(entry.value().load(guard)) else {
                continue;
            };
            rows += 1;
            if f(entry.key(), v) || rows == limit {
                break;
            }
        }
        Ok(rows)
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        if !fits_cap(self.cap, 0, suffix.len()) {
            return Ok(Appended::Skipped);
        }
        let mut skipped = false;
        self.write(key, |current| {
            let current = current.unwrap_or_default();
            // The decision is made on the value this compare-and-swap would replace;
            // a skip leaves it untouched, so the value never passes the cap.
            skipped = !fits_cap(self.cap, current.len(), suffix.len());
            if skipped {
                return None;
            }
            let mut v = Vec::with_capacity(current.len() + suffix.len());
            v.extend_from_slice(current);
            v.extend_from_slice(suffix);
            Some(v.into_boxed_slice())
        });
        Ok(if skipped { Appended::Skipped } else { Appended::Yes })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let guard = &epoch::pin();
        for entry in self
            .map
            .range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)), guard)
        {
            self.delete(
                entry.value(),
                || {
                    entry.remove();
                },
                guard,
            );
        }
        Ok(())
    }
}
