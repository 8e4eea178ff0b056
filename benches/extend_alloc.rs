//! What the harness allocates per extend: an epoch's extend phase (the planned appends
//! one worker issues through the timed verbs) against an engine session that keeps
//! nothing, with every heap allocation of the process counted. The engine's own
//! allocations (the grown value) are the engine's; this counts kvmark's.
//!
//! cargo bench --bench extend_alloc -- [EXTENDS] [KEYS] [BYTES]
//! (defaults: 1,000,000 extends over 10,000 keys, 100 bytes each)

// Only the argument parsing is shared here.
#[allow(dead_code)]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kvmark::engine::{Appended, EngineResult, Existed, ReadBuf, ScanFn, Session};
use kvmark::kv::Kv;
use kvmark::kv::values::ValuePool;
use kvmark::run::bulk::data::KeyIndex;
use kvmark::run::bulk::extend::ExtendPlan;
use kvmark::run::bulk::steps::{self, ExtendWork};
use kvmark::run::live::Live;
use kvmark::workload::dist::{NumExpr, Selector};
use kvmark::workload::spec::schema::CharacterSet;
use kvmark::workload::spec::strings::charset_bytes;

/// The system allocator, counting allocations and reallocations.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A session that accepts every call and keeps nothing.
struct Nothing;

impl Session for Nothing {
    fn put(&mut self, _: &[u8], _: &[u8]) -> EngineResult<()> {
        Ok(())
    }
    fn get(&mut self, _: &[u8], _: &mut ReadBuf) -> EngineResult<bool> {
        Ok(false)
    }
    fn del(&mut self, _: &[u8]) -> EngineResult<Existed> {
        Ok(Existed::Unknown)
    }
    fn scan(&mut self, _: &[u8], _: &[u8], _: usize, _: &mut ScanFn<'_>) -> EngineResult<usize> {
        Ok(0)
    }
    fn append(&mut self, _: &[u8], _: &[u8]) -> EngineResult<Appended> {
        Ok(Appended::Yes)
    }
    fn delete_range(&mut self, _: &[u8], _: &[u8]) -> EngineResult<()> {
        Ok(())
    }
}

fn main() {
    let args = common::args();
    let extends: u64 = common::arg(&args, 0, 1_000_000);
    let keys: u64 = common::arg(&args, 1, 10_000);
    let bytes: u64 = common::arg(&args, 2, 100);
    let mut index = KeyIndex::default();
    for i in 0..keys {
        index.push(format!("user{i:012}").as_bytes(), 1000);
    }
    let zipf = Selector::new(Some(&kvmark::workload::epochs::default_extend_dist())).expect("a valid selector");
    let plan = ExtendPlan::draw(&mut index, extends, &zipf, &NumExpr::Const(bytes as f64), None, 1, 1);
    let work = ExtendWork {
        plan,
        index: Arc::new(index),
        pool: Arc::new(ValuePool::new(charset_bytes(CharacterSet::Alphanumeric), 1.0, 1)),
        seed: 1,
    };
    let clock = quanta::Clock::new();
    let mut kv = Kv::new(Box::new(Nothing), clock, Arc::new(AtomicBool::new(false)));
    let live = Live::new(1, false);
    // The first append creates the kind's histogram: a one-time cost, outside the count.
    let _ = kv.append(b"warm", b"up");
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let started = std::time::Instant::now();
    let run = steps::extend(&mut kv, &work, 0, &live, &|| false);
    let took = started.elapsed();
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    println!(
        "{} extends of {bytes} B over {keys} keys: {allocations} allocations ({:.6} per extend), {:.1} ns per extend \
         (null engine)",
        run.done,
        allocations as f64 / run.done.max(1) as f64,
        took.as_nanos() as f64 / run.done.max(1) as f64
    );
}
