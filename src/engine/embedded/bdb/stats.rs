//! Berkeley DB's internals for the timeline: the memory pool (cache hits and misses,
//! pages, evictions, the effective cache size), the lock region (waits, deadlocks) and
//! the transaction region where they are open, and the B-tree's own counts.

use std::ptr;

use libc::c_void;

use super::ffi::*;
use super::{Handles, call};

/// Every figure the regions give. Read on the sampler's thread (the handles are
/// free-threaded); the stat calls take the regions' own mutexes briefly.
pub(super) fn stats(h: &Handles) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut put = |name: &str, v: f64| out.push((name.to_string(), v));
    // SAFETY: each stat call fills a struct it malloc'd (freed below) or fails and
    // leaves the pointer null.
    unsafe {
        let mut mp: *mut DB_MPOOL_STAT = ptr::null_mut();
        if call!(h.env, memp_stat, &mut mp, ptr::null_mut(), 0) == 0 && !mp.is_null() {
            let m = &*mp;
            put(
                "cache_bytes",
                m.st_gbytes as f64 * (1u64 << 30) as f64 + m.st_bytes as f64,
            );
            put("cache_hit", m.st_cache_hit as f64);
            put("cache_miss", m.st_cache_miss as f64);
            put("pages", m.st_pages as f64);
            put("pages_dirty", m.st_page_dirty as f64);
            put("pages_clean", m.st_page_clean as f64);
            put("page_in", m.st_page_in as f64);
            put("page_out", m.st_page_out as f64);
            put("page_create", m.st_page_create as f64);
            put("evict_clean", m.st_ro_evict as f64);
            put("evict_dirty", m.st_rw_evict as f64);
            put("hash_wait", m.st_hash_wait as f64);
            libc::free(mp.cast::<c_void>());
        }
        // The Concurrent Data Store has a lock region too (its one database lock).
        let mut lk: *mut DB_LOCK_STAT = ptr::null_mut();
        if call!(h.env, lock_stat, &mut lk, 0) == 0 && !lk.is_null() {
            let l = &*lk;
            put("lock_requests", l.st_nrequests as f64);
            put("lock_waits", l.st_lock_wait as f64);
            put("lock_nowaits", l.st_lock_nowait as f64);
            put("deadlocks", l.st_ndeadlocks as f64);
            put("locks", l.st_nlocks as f64);
            put("lockers", l.st_nlockers as f64);
            libc::free(lk.cast::<c_void>());
        }
        if h.transactions {
            let mut tx: *mut DB_TXN_STAT = ptr::null_mut();
            if call!(h.env, txn_stat, &mut tx, 0) == 0 && !tx.is_null() {
                let t = &*tx;
                put("txn_begins", t.st_nbegins as f64);
                put("txn_commits", t.st_ncommits as f64);
                put("txn_aborts", t.st_naborts as f64);
                put("txn_active", t.st_nactive as f64);
                libc::free(tx.cast::<c_void>());
            }
        }
        let mut bt: *mut DB_BTREE_STAT = ptr::null_mut();
        // DB_FAST_STAT: the counts the tree keeps, without walking it.
        if call!(
            h.db,
            stat,
            ptr::null_mut(),
            (&mut bt as *mut *mut DB_BTREE_STAT).cast::<c_void>(),
            DB_FAST_STAT
        ) == 0
            && !bt.is_null()
        {
            let b = &*bt;
            put("page_size", b.bt_pagesize as f64);
            put("levels", b.bt_levels as f64);
            put("keys", b.bt_nkeys as f64);
            libc::free(bt.cast::<c_void>());
        }
    }
    out
}
