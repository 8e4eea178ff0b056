//! `skiplist`: the in-memory reference engine.
//!
//! A lock-free concurrent skip list (crossbeam-skiplist): readers and writers on
//! different threads never serialise on a lock. No persistence; the data is dropped
//! when the store closes.
//!
//! Batches (`mput`, `mdel`) are applied key by key: each key's write is atomic, but a
//! concurrent reader may observe a batch half applied. A lock-free skip list has no
//! cheap way to publish several keys at once, and the reference engine must not add a
//! global lock to fake it.

use std::ops::Bound;
use std::sync::Arc;

use crossbeam_epoch as epoch;
use crossbeam_skiplist::base::SkipList;

use super::{
    AppendMethod, EngineInfo, EngineOptions, EngineResult, Existed, Knob, OpenRequest, ScanFn, Session, Store,
};

// The guard-based base API, not SkipMap: its entries borrow from one epoch guard per
// call instead of taking a reference count per node. Reads then write nothing shared,
// and (unlike SkipMap's range iterator in crossbeam-skiplist 0.1.3, which drops the
// previous node's reference without releasing it) nothing a range visits is leaked.
type Map = SkipList<Box<[u8]>, Box<[u8]>>;

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: "skiplist",
    persistent: false,
    description: "in-memory lock-free skip list (crossbeam-skiplist); the reference engine",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    // Each key of a batch is inserted on its own (see the module comment).
    atomic_batches: false,
    version: || super::versions::crate_version("crossbeam-skiplist"),
    knobs: Vec::<Knob>::new,
    validate,
    open,
};

fn validate(options: &EngineOptions) -> EngineResult<()> {
    options.check_known("skiplist", &[])
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    validate(req.options)?;
    Ok(Box::new(SkiplistStore {
        map: Arc::new(Map::new(epoch::default_collector().clone())),
    }))
}

struct SkiplistStore {
    map: Arc<Map>,
}

impl Store for SkiplistStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(SkiplistSession {
            map: Arc::clone(&self.map),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        vec![("keys".to_string(), self.map.len() as f64)]
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        Ok(())
    }
}

struct SkiplistSession {
    map: Arc<Map>,
}

impl Session for SkiplistSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let guard = &epoch::pin();
        self.map.insert(key.into(), val.into(), guard).release(guard);
        Ok(())
    }

    fn get(&mut self, key: &[u8], out: &mut Vec<u8>) -> EngineResult<bool> {
        let guard = &epoch::pin();
        match self.map.get(key, guard) {
            Some(entry) => {
                out.clear();
                out.extend_from_slice(entry.value());
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let guard = &epoch::pin();
        Ok(match self.map.remove(key, guard) {
            Some(entry) => {
                entry.release(guard);
                Existed::Yes
            }
            None => Existed::No,
        })
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
            rows += 1;
            if f(entry.key(), entry.value()) || rows == limit {
                break;
            }
        }
        Ok(rows)
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<()> {
        // Compare-and-swap on the value's allocation: the guard keeps the allocation we
        // read alive, so its address cannot be reused by another value meanwhile.
        let guard = &epoch::pin();
        loop {
            let (expected, grown): (Option<*const u8>, Box<[u8]>) = match self.map.get(key, guard) {
                Some(current) => {
                    let mut v = Vec::with_capacity(current.value().len() + suffix.len());
                    v.extend_from_slice(current.value());
                    v.extend_from_slice(suffix);
                    (Some(current.value().as_ptr()), v.into_boxed_slice())
                }
                None => (None, suffix.into()),
            };
            let ours = grown.as_ptr();
            // Absent keys are inserted whatever the comparison says; present ones are
            // replaced only if still holding the value we extended.
            let entry = self
                .map
                .compare_insert(key.into(), grown, |v| Some(v.as_ptr()) == expected, guard);
            let won = std::ptr::eq(entry.value().as_ptr(), ours);
            entry.release(guard);
            if won {
                return Ok(());
            }
        }
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
            entry.remove();
        }
        Ok(())
    }
}
