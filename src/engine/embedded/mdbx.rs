//! `mdbx`: libmdbx, LMDB's successor (a memory-mapped copy-on-write B+tree with a file
//! that grows and shrinks by a geometry), through the `mdbx-sys` crate, which compiles
//! the bundled libmdbx C source and generates its bindings with bindgen.
//!
//! The sys crate rather than its `libmdbx` wrapper: that wrapper begins and commits
//! every write transaction on a manager thread it talks to over rendezvous channels, two
//! thread hand-offs per write that a benchmark would charge to libmdbx (promise 1).
//!
//! Verb mapping, as `lmdb`'s: every read is one read-only transaction (`get`, `mget`,
//! `range`, `scan`: a cursor that stops at the first key `>= hi`); every write one write
//! transaction (`put`, `del`, `mput`, `mdel`, `append` as get + put, `delete_range` as
//! a cursor deleting every key in the range). libmdbx admits one writer at a time:
//! concurrent write transactions queue on libmdbx's own lock, which is the engine's
//! concurrency model, not one kvmark adds; readers never wait. `del` reports existence
//! (the delete returns not-found for free). Each session keeps one cursor, bound to the
//! transaction of each range verb, so a range allocates nothing.
//!
//! Knobs: the geometry (upper size, growth step, shrink threshold, page size), the sync
//! mode (durable, nometasync, safe_nosync, utterly_nosync), write map, read-ahead,
//! reader slots, LIFO page reclaiming.

use std::ffi::{CStr, CString, c_void};
use std::os::unix::ffi::OsStrExt;
use std::ptr;
use std::sync::Arc;

use mdbx_sys::*;

use crate::engine::options::format_size;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, KnobDef, KnobTable, KnobValue, OpenRequest,
    OptionError, ReadBuf, ScanFn, Session, StorageKind, Store, Values, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "libmdbx memory-mapped B+tree, LMDB's successor (bundled C library via mdbx-sys); one writer at a time",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    limits: crate::engine::Limits::NONE,
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "mdbx";
const SYNCS: &[&str] = &["durable", "nometasync", "safe_nosync", "utterly_nosync"];

/// kvmark's upper bound of the file, as `lmdb`'s map size: libmdbx's own default
/// follows the first size it is given, far too small to benchmark. It is address space;
/// the file grows to it by the growth step.
const DEFAULT_MAP_SIZE: u64 = 64 << 30;
/// libmdbx's page size limits (`MDBX_MIN_PAGESIZE`, `MDBX_MAX_PAGESIZE`).
const PAGE_SIZES: std::ops::RangeInclusive<u64> = 256..=65536;

struct Settings {
    map_size: u64,
    /// None: libmdbx derives it from the bounds.
    growth_step: Option<u64>,
    /// None: libmdbx derives it from the growth step.
    shrink_threshold: Option<u64>,
    /// None: the system's page size.
    page_size: Option<u64>,
    flags: MDBX_env_flags_t,
    /// None: libmdbx's default.
    max_readers: Option<u64>,
}

/// A size, or `auto` for the value libmdbx derives.
fn auto_size(v: &KnobValue<'_>) -> Result<Option<u64>, OptionError> {
    if v.text == "auto" { Ok(None) } else { v.size().map(Some) }
}

fn set_flag(flags: &mut MDBX_env_flags_t, flag: MDBX_env_flags_t, on: bool) {
    if on {
        *flags |= flag;
    } else {
        *flags &= !flag;
    }
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    || Settings {
        map_size: DEFAULT_MAP_SIZE,
        growth_step: None,
        shrink_threshold: None,
        page_size: None,
        flags: MDBX_SYNC_DURABLE,
        max_readers: None,
    },
    &[
        KnobDef {
            name: "map_size",
            help: "largest the file may grow (geometry's upper bound; address space, kvmark's default)",
            default: || format_size(DEFAULT_MAP_SIZE),
            set: |s, v| v.size().map(|n| s.map_size = n),
        },
        KnobDef {
            name: "growth_step",
            help: "how much the file grows at a time (auto: libmdbx derives it from the bounds)",
            default: || "auto".to_string(),
            set: |s, v| auto_size(v).map(|n| s.growth_step = n),
        },
        KnobDef {
            name: "shrink_threshold",
            help: "free space at the end of the file above which it shrinks (auto: twice the growth step)",
            default: || "auto".to_string(),
            set: |s, v| auto_size(v).map(|n| s.shrink_threshold = n),
        },
        KnobDef {
            name: "page_size",
            help: "page size of a new store, a power of two from 256 to 64K",
            // SAFETY: a pure function of the system's page size.
            default: || format_size(unsafe { mdbx_default_pagesize() } as u64),
            set: |s, v| {
                let n = v.size()?;
                if !n.is_power_of_two() || !PAGE_SIZES.contains(&n) {
                    return Err(v.refuse("a power of two from 256 to 64K"));
                }
                s.page_size = Some(n);
                Ok(())
            },
        },
        KnobDef {
            name: "sync",
            help: "commit durability: durable (fsync data, then meta), nometasync, safe_nosync or utterly_nosync",
            default: || "durable".to_string(),
            set: |s, v| {
                let flag = match v.choice(SYNCS)? {
                    "nometasync" => MDBX_NOMETASYNC,
                    "safe_nosync" => MDBX_SAFE_NOSYNC,
                    "utterly_nosync" => MDBX_UTTERLY_NOSYNC,
                    _ => MDBX_SYNC_DURABLE,
                };
                s.flags &= !(MDBX_NOMETASYNC | MDBX_SAFE_NOSYNC | MDBX_UTTERLY_NOSYNC);
                s.flags |= flag;
                Ok(())
            },
        },
        KnobDef {
            name: "write_map",
            help: "write through a writable memory map (MDBX_WRITEMAP)",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| set_flag(&mut s.flags, MDBX_WRITEMAP, b)),
        },
        KnobDef {
            name: "no_read_ahead",
            help: "turn off OS read-ahead (MDBX_NORDAHEAD), for random reads of stores larger than RAM",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| set_flag(&mut s.flags, MDBX_NORDAHEAD, b)),
        },
        KnobDef {
            name: "lifo_reclaim",
            help: "reuse freed pages last in, first out (MDBX_LIFORECLAIM)",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| set_flag(&mut s.flags, MDBX_LIFORECLAIM, b)),
        },
        KnobDef {
            name: "max_readers",
            help: "reader slots: concurrent reading threads",
            default: default_max_readers,
            set: |s, v| v.num().map(|n| s.max_readers = Some(n)),
        },
    ],
);

/// libmdbx's default reader slots, asked of a fresh (unopened) environment.
fn default_max_readers() -> String {
    let mut env = ptr::null_mut();
    let mut n = 0u64;
    // SAFETY: the environment is created, asked and closed here, never opened.
    unsafe {
        if mdbx_env_create(&mut env) != MDBX_SUCCESS {
            return "unknown".to_string();
        }
        let rc = mdbx_env_get_option(env, MDBX_opt_max_readers, &mut n);
        mdbx_env_close_ex(env, true);
        if rc != MDBX_SUCCESS {
            return "unknown".to_string();
        }
    }
    n.to_string()
}

/// libmdbx's message for a return code.
fn message(rc: i32) -> String {
    // SAFETY: mdbx_strerror returns a static or thread-local NUL-terminated string.
    let text = unsafe { CStr::from_ptr(mdbx_strerror(rc)) };
    format!("mdbx: {} ({rc})", text.to_string_lossy())
}

/// Ok for success, else the error with libmdbx's message.
fn check(rc: i32) -> EngineResult<()> {
    if rc == MDBX_SUCCESS {
        Ok(())
    } else {
        Err(EngineError::other(message(rc)))
    }
}

/// True when a lookup found nothing (end of data for a cursor).
fn not_found(rc: i32) -> bool {
    rc == MDBX_NOTFOUND || rc == MDBX_ENODATA
}

fn val(b: &[u8]) -> MDBX_val {
    MDBX_val {
        iov_base: b.as_ptr() as *mut c_void,
        iov_len: b.len(),
    }
}

fn empty_val() -> MDBX_val {
    MDBX_val {
        iov_base: ptr::null_mut(),
        iov_len: 0,
    }
}

/// The bytes `v` points at, valid while its transaction is.
///
/// # Safety
/// `v` must come from libmdbx within a transaction that outlives the slice.
unsafe fn bytes<'t>(v: &MDBX_val) -> &'t [u8] {
    if v.iov_len == 0 {
        &[]
    } else {
        // SAFETY: libmdbx points at iov_len readable bytes in the map (caller's promise).
        unsafe { std::slice::from_raw_parts(v.iov_base as *const u8, v.iov_len) }
    }
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    // libmdbx logs notices (a new file, read-ahead) to stderr by default: keep its
    // warnings and errors only, so a run's output stays kvmark's.
    static QUIET: std::sync::Once = std::sync::Once::new();
    // SAFETY: sets libmdbx's global log level, once, before any environment opens.
    QUIET.call_once(|| unsafe {
        mdbx_setup_debug(MDBX_LOG_WARN, MDBX_DBG_DONTCHANGE, None);
    });
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| EngineError::other(format!("mdbx: the directory {} holds a NUL byte", dir.display())))?;
    let mut env = Env(ptr::null_mut());
    let signed = |n: Option<u64>| n.map_or(-1, |n| isize::try_from(n).unwrap_or(isize::MAX));
    // SAFETY: the environment is created here and owned by `env`, which closes it on
    // any error below; the directory is this store's own.
    unsafe {
        check(mdbx_env_create(&mut env.0))?;
        check(mdbx_env_set_geometry(
            env.0,
            -1,
            -1,
            signed(Some(s.map_size)),
            signed(s.growth_step),
            signed(s.shrink_threshold),
            signed(s.page_size),
        ))
        .map_err(|e| e.context("setting the geometry (map_size, growth_step, shrink_threshold, page_size)"))?;
        if let Some(n) = s.max_readers {
            check(mdbx_env_set_option(env.0, MDBX_opt_max_readers, n)).map_err(|e| e.context("max_readers"))?;
        }
        check(mdbx_env_open(env.0, path.as_ptr(), s.flags, 0o644))?;
    }
    let mut dbi: MDBX_dbi = 0;
    // SAFETY: one write transaction on the open environment, ended by its guard.
    unsafe {
        let txn = Txn::begin(env.0, MDBX_TXN_READWRITE)?;
        check(mdbx_dbi_open(txn.0, ptr::null(), MDBX_CREATE, &mut dbi))?;
        txn.commit()?;
    }
    Ok(Box::new(MdbxStore {
        shared: Arc::new(Shared {
            env,
            dbi,
            cap: req.max_value_bytes,
        }),
    }))
}

/// The open environment; closed when dropped (a store dropped without `close`).
struct Env(*mut MDBX_env);

// SAFETY: a libmdbx environment is made to be shared by threads; each thread runs its
// own transactions on it.
unsafe impl Send for Env {}
// SAFETY: as above.
unsafe impl Sync for Env {}

impl Env {
    /// Syncs and closes, reporting libmdbx's errors.
    fn close(mut self) -> EngineResult<()> {
        let env = std::mem::replace(&mut self.0, ptr::null_mut());
        // SAFETY: every session (and so every transaction and cursor) is gone.
        unsafe {
            // Under the nosync modes the last commits may only be in the page cache:
            // make them durable, as closing promises. MDBX_RESULT_TRUE: nothing to sync.
            let rc = mdbx_env_sync_ex(env, true, false);
            if rc != MDBX_SUCCESS && rc != MDBX_RESULT_TRUE {
                mdbx_env_close_ex(env, true);
                return Err(EngineError::other(message(rc)).context("syncing at close"));
            }
            check(mdbx_env_close_ex(env, false))
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the environment is open and nothing uses it any more.
            unsafe { mdbx_env_close_ex(self.0, false) };
        }
    }
}

/// A transaction, aborted when dropped unless committed.
struct Txn(*mut MDBX_txn);

impl Txn {
    /// # Safety
    /// `env` must be open; the transaction must end on this thread.
    unsafe fn begin(env: *mut MDBX_env, flags: MDBX_txn_flags_t) -> EngineResult<Txn> {
        let mut txn = ptr::null_mut();
        // SAFETY: the caller's promise.
        check(unsafe { mdbx_txn_begin_ex(env, ptr::null_mut(), flags, &mut txn, ptr::null_mut()) })?;
        Ok(Txn(txn))
    }

    fn commit(mut self) -> EngineResult<()> {
        let txn = std::mem::replace(&mut self.0, ptr::null_mut());
        // SAFETY: the transaction is live; commit ends (and frees) it even on error.
        check(unsafe { mdbx_txn_commit_ex(txn, ptr::null_mut()) })
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the transaction is live; abort ends and frees it.
            unsafe { mdbx_txn_abort_ex(self.0, ptr::null_mut()) };
        }
    }
}

struct Shared {
    env: Env,
    dbi: MDBX_dbi,
    /// The value cap of `append`.
    cap: Option<u64>,
}

struct MdbxStore {
    shared: Arc<Shared>,
}

impl Store for MdbxStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        // SAFETY: a cursor not bound to any transaction yet; the session closes it.
        let cursor = unsafe { mdbx_cursor_create(ptr::null_mut()) };
        if cursor.is_null() {
            return Err(EngineError::other("mdbx: cannot create a cursor (out of memory)"));
        }
        Ok(Box::new(MdbxSession {
            shared: Arc::clone(&self.shared),
            cursor,
            scratch: Vec::new(),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let env = self.shared.env.0;
        let mut out = Vec::new();
        // SAFETY: plain structs filled by libmdbx from the open environment.
        let (info, stat) = unsafe {
            let mut info: MDBX_envinfo = std::mem::zeroed();
            let mut stat: MDBX_stat = std::mem::zeroed();
            let info_rc = mdbx_env_info_ex(env, ptr::null(), &mut info, size_of::<MDBX_envinfo>());
            let stat_rc = mdbx_env_stat_ex(env, ptr::null(), &mut stat, size_of::<MDBX_stat>());
            (
                (info_rc == MDBX_SUCCESS).then_some(info),
                (stat_rc == MDBX_SUCCESS).then_some(stat),
            )
        };
        if let Some(i) = info {
            let ops = &i.mi_pgop_stat;
            out.extend(
                [
                    ("geo_lower", i.mi_geo.lower),
                    ("geo_upper", i.mi_geo.upper),
                    ("geo_current", i.mi_geo.current),
                    ("geo_grow", i.mi_geo.grow),
                    ("geo_shrink", i.mi_geo.shrink),
                    ("map_size", i.mi_mapsize),
                    ("file_bytes", i.mi_dxb_fsize),
                    ("last_page_number", i.mi_last_pgno),
                    ("last_txn_id", i.mi_recent_txnid),
                    ("unsynced_bytes", i.mi_unsync_volume),
                    ("max_readers", u64::from(i.mi_maxreaders)),
                    ("readers", u64::from(i.mi_numreaders)),
                    ("pages_new", ops.newly),
                    ("pages_cow", ops.cow),
                    ("pages_cloned", ops.clone),
                    ("page_splits", ops.split),
                    ("page_merges", ops.merge),
                    ("pages_spilled", ops.spill),
                    ("pages_unspilled", ops.unspill),
                    ("write_ops", ops.wops),
                    ("prefaults", ops.prefault),
                    ("msyncs", ops.msync),
                    ("fsyncs", ops.fsync),
                ]
                .map(|(k, v)| (k.to_string(), v as f64)),
            );
        }
        if let Some(st) = stat {
            out.extend(
                [
                    ("page_size", u64::from(st.ms_psize)),
                    ("depth", u64::from(st.ms_depth)),
                    ("branch_pages", st.ms_branch_pages),
                    ("leaf_pages", st.ms_leaf_pages),
                    ("overflow_pages", st.ms_overflow_pages),
                    ("entries", st.ms_entries),
                ]
                .map(|(k, v)| (k.to_string(), v as f64)),
            );
        }
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        unshare(ENGINE, self.shared)?.env.close()
    }
}

struct MdbxSession {
    shared: Arc<Shared>,
    /// Bound to the transaction of each range verb; closed with the session.
    cursor: *mut MDBX_cursor,
    /// Reused by `append` to build the grown value.
    scratch: Vec<u8>,
}

// SAFETY: the cursor is this session's alone and only bound inside a verb, on the
// thread running it; a session moves between threads only between verbs.
unsafe impl Send for MdbxSession {}

impl Drop for MdbxSession {
    fn drop(&mut self) {
        // SAFETY: created by mdbx_cursor_create, unbound (its last transaction ended).
        unsafe { mdbx_cursor_close(self.cursor) };
    }
}

impl MdbxSession {
    fn begin(&self, flags: MDBX_txn_flags_t) -> EngineResult<Txn> {
        // SAFETY: the environment is open while a session holds `shared`; every
        // transaction ends inside the verb that began it, on its thread.
        unsafe { Txn::begin(self.shared.env.0, flags) }
    }

    /// The value of `key` in `txn`, borrowed from the map while `txn` lives.
    fn lookup<'t>(&self, txn: &'t Txn, key: &[u8]) -> EngineResult<Option<&'t [u8]>> {
        let k = val(key);
        let mut v = empty_val();
        // SAFETY: a live transaction; `v` points into its snapshot.
        let rc = unsafe { mdbx_get(txn.0, self.shared.dbi, &k, &mut v) };
        if not_found(rc) {
            return Ok(None);
        }
        check(rc)?;
        // SAFETY: filled by mdbx_get in `txn`.
        Ok(Some(unsafe { bytes(&v) }))
    }

    fn write(&self, txn: &Txn, key: &[u8], value: &[u8]) -> EngineResult<()> {
        let k = val(key);
        let mut v = val(value);
        // SAFETY: a live write transaction; libmdbx copies key and value.
        check(unsafe { mdbx_put(txn.0, self.shared.dbi, &k, &mut v, MDBX_UPSERT) })
    }

    /// Deletes `key` in `txn`; true when it existed.
    fn remove(&self, txn: &Txn, key: &[u8]) -> EngineResult<bool> {
        let k = val(key);
        // SAFETY: a live write transaction.
        let rc = unsafe { mdbx_del(txn.0, self.shared.dbi, &k, ptr::null()) };
        if not_found(rc) {
            return Ok(false);
        }
        check(rc).map(|()| true)
    }

    /// Binds the session's cursor to `txn` and puts it on the first key `>= lo`;
    /// returns the row there, or None past the end.
    fn seek<'t>(&self, txn: &'t Txn, lo: &[u8]) -> EngineResult<Option<(&'t [u8], &'t [u8])>> {
        // SAFETY: a live transaction; the cursor is this session's.
        check(unsafe { mdbx_cursor_bind(txn.0, self.cursor, self.shared.dbi) })?;
        let mut k = val(lo);
        let op = if lo.is_empty() { MDBX_FIRST } else { MDBX_SET_RANGE };
        self.step(&mut k, op)
    }

    /// Moves the bound cursor by `op`; the row there, or None past the end.
    fn step<'t>(&self, k: &mut MDBX_val, op: MDBX_cursor_op) -> EngineResult<Option<(&'t [u8], &'t [u8])>> {
        let mut v = empty_val();
        // SAFETY: the cursor is bound to a live transaction.
        let rc = unsafe { mdbx_cursor_get(self.cursor, k, &mut v, op) };
        if not_found(rc) {
            return Ok(None);
        }
        check(rc)?;
        // SAFETY: filled by mdbx_cursor_get in the bound transaction.
        Ok(Some(unsafe { (bytes(k), bytes(&v)) }))
    }
}

impl Session for MdbxSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let txn = self.begin(MDBX_TXN_READWRITE)?;
        self.write(&txn, key, val)?;
        txn.commit()
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let txn = self.begin(MDBX_TXN_RDONLY)?;
        match self.lookup(&txn, key)? {
            Some(v) => {
                out.set(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let txn = self.begin(MDBX_TXN_READWRITE)?;
        if !self.remove(&txn, key)? {
            // Nothing changed: the abort on drop is the cheaper end.
            return Ok(Existed::No);
        }
        txn.commit()?;
        Ok(Existed::Yes)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let txn = self.begin(MDBX_TXN_RDONLY)?;
        let mut rows = 0usize;
        let mut k = empty_val();
        let mut row = self.seek(&txn, lo)?;
        while let Some((key, v)) = row {
            if key >= hi {
                break;
            }
            rows += 1;
            if f(key, v) || rows == limit {
                break;
            }
            row = self.step(&mut k, MDBX_NEXT)?;
        }
        Ok(rows)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        let txn = self.begin(MDBX_TXN_RDONLY)?;
        for key in keys {
            match self.lookup(&txn, key)? {
                Some(v) => out.push_hit(v),
                None => out.push_miss(),
            }
        }
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let txn = self.begin(MDBX_TXN_READWRITE)?;
        for (k, v) in pairs {
            self.write(&txn, k, v)?;
        }
        txn.commit()
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let txn = self.begin(MDBX_TXN_READWRITE)?;
        let mut existed = 0usize;
        for k in keys {
            existed += usize::from(self.remove(&txn, k)?);
        }
        txn.commit()?;
        Ok(Some(existed))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let txn = self.begin(MDBX_TXN_READWRITE)?;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        if let Some(v) = self.lookup(&txn, key)? {
            scratch.extend_from_slice(v);
        }
        let fits = fits_cap(self.shared.cap, scratch.len(), suffix.len());
        let done = if fits {
            scratch.extend_from_slice(suffix);
            self.write(&txn, key, &scratch).and_then(|()| txn.commit())
        } else {
            Ok(())
        };
        self.scratch = scratch;
        done.map(|()| if fits { Appended::Yes } else { Appended::Skipped })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let txn = self.begin(MDBX_TXN_READWRITE)?;
        let mut k = empty_val();
        let mut row = self.seek(&txn, lo)?;
        while let Some((key, _)) = row {
            if key >= hi {
                break;
            }
            // SAFETY: the cursor is bound to the live write transaction, on a row.
            check(unsafe { mdbx_cursor_del(self.cursor, MDBX_CURRENT) })?;
            // After a delete the cursor stands on the next row.
            row = self.step(&mut k, MDBX_GET_CURRENT)?;
        }
        txn.commit()
    }
}

fn version() -> String {
    // SAFETY: a static the library defines.
    let v = unsafe { &mdbx_version };
    format!("libmdbx {}.{}.{}", v.major, v.minor, v.patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, KnobSet, StorePlace};

    #[test]
    fn knobs_parse_and_refuse() {
        let mut o = EngineOptions::new();
        o.set("map_size", "1G");
        o.set("sync", "safe_nosync");
        o.set("growth_step", "16M");
        let s = KNOBS.parse(&o).unwrap();
        assert_eq!((s.map_size, s.growth_step), (1 << 30, Some(16 << 20)));
        assert_eq!(s.flags & MDBX_SAFE_NOSYNC, MDBX_SAFE_NOSYNC);
        let mut o = EngineOptions::new();
        o.set("page_size", "3000");
        let e = KNOBS.validate(&o).unwrap_err();
        assert!(e.message.contains("page_size"), "{}", e.message);
        assert!(version().starts_with("libmdbx 0."), "{}", version());
        assert!(
            default_max_readers().parse::<u32>().is_ok(),
            "{}",
            default_max_readers()
        );
    }

    #[test]
    fn geometry_knobs_reach_the_library() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = EngineOptions::new();
        o.set("map_size", "256M");
        o.set("growth_step", "8M");
        o.set("page_size", "16K");
        let store = open(&OpenRequest::new(StorePlace::Dir(dir.path().to_path_buf()), &o)).unwrap();
        let stats: std::collections::BTreeMap<String, f64> = store.stats().into_iter().collect();
        assert_eq!(stats["geo_upper"], (256u64 << 20) as f64);
        assert_eq!(stats["geo_grow"], (8u64 << 20) as f64);
        assert_eq!(stats["page_size"], 16384.0);
        store.close().unwrap();
    }
}
