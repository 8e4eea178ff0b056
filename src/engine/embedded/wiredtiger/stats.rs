//! WiredTiger's connection statistics for the timeline, read through a statistics
//! cursor (`statistics:`) with `statistics=(fast)` on the connection.

use std::ptr;

use libc::{c_char, c_int};

use super::call;
use super::ffi::*;

/// (timeline name, WiredTiger statistic): the cache, page traffic (pages requested from
/// the cache are its hits and misses, pages read into it its misses), checkpoints,
/// transactions, the log, and the time application threads spend waiting.
const STATS: &[(&str, u32)] = &[
    ("cache_bytes_max", WT_STAT_CONN_CACHE_BYTES_MAX),
    ("cache_bytes_inuse", WT_STAT_CONN_CACHE_BYTES_INUSE),
    ("cache_bytes_dirty", WT_STAT_CONN_CACHE_BYTES_DIRTY),
    ("cache_pages_requested", WT_STAT_CONN_CACHE_PAGES_REQUESTED),
    ("cache_pages_read", WT_STAT_CONN_CACHE_READ),
    ("cache_pages_written", WT_STAT_CONN_CACHE_WRITE),
    ("cache_evicted_clean", WT_STAT_CONN_CACHE_EVICTION_CLEAN),
    ("cache_evicted_dirty", WT_STAT_CONN_CACHE_EVICTION_DIRTY),
    ("cache_evicted_by_app", WT_STAT_CONN_CACHE_EVICTION_APP),
    ("app_evict_time_us", WT_STAT_CONN_APPLICATION_EVICT_TIME),
    ("app_cache_wait_us", WT_STAT_CONN_APPLICATION_CACHE_TIME),
    ("checkpoints", WT_STAT_CONN_TXN_CHECKPOINT),
    ("checkpoint_running", WT_STAT_CONN_TXN_CHECKPOINT_RUNNING),
    ("txn_begins", WT_STAT_CONN_TXN_BEGIN),
    ("txn_commits", WT_STAT_CONN_TXN_COMMIT),
    ("txn_rollbacks", WT_STAT_CONN_TXN_ROLLBACK),
    ("log_bytes_written", WT_STAT_CONN_LOG_BYTES_WRITTEN),
    ("log_syncs", WT_STAT_CONN_LOG_SYNC),
    ("lock_checkpoint_wait_us", WT_STAT_CONN_LOCK_CHECKPOINT_WAIT_APPLICATION),
    ("lock_dhandle_wait_us", WT_STAT_CONN_LOCK_DHANDLE_WAIT_APPLICATION),
    ("lock_schema_wait_us", WT_STAT_CONN_LOCK_SCHEMA_WAIT_APPLICATION),
    ("lock_txn_global_wait_us", WT_STAT_CONN_LOCK_TXN_GLOBAL_WAIT_APPLICATION),
];

/// Every statistic of [`STATS`] that `session` can read now; none if the cursor
/// cannot open (the timeline then shows a gap, not a zero).
pub(super) fn read(session: *mut WT_SESSION) -> Vec<(String, f64)> {
    let mut out = Vec::with_capacity(STATS.len());
    let mut c: *mut WT_CURSOR = ptr::null_mut();
    // SAFETY: a live session used under the stats mutex; the cursor is closed below.
    unsafe {
        let rc = call!(
            session,
            open_cursor,
            c"statistics:".as_ptr(),
            ptr::null_mut(),
            ptr::null(),
            &mut c
        );
        if rc != 0 {
            return out;
        }
        for &(name, id) in STATS {
            call!(c, set_key, id as c_int);
            if call!(c, search) != 0 {
                continue;
            }
            let (mut desc, mut shown, mut value): (*const c_char, *const c_char, i64) = (ptr::null(), ptr::null(), 0);
            if call!(c, get_value, &mut desc, &mut shown, &mut value) == 0 {
                out.push((name.to_string(), value as f64));
            }
        }
        call!(c, close);
    }
    out
}
