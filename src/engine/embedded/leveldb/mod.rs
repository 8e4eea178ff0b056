//! `leveldb`: Google LevelDB, the original LSM tree, through its C API, linked from the
//! system's `libleveldb` (Debian's `libleveldb-dev`, installed by `scripts/setup`).
//!
//! The system library is used instead of a crate that compiles LevelDB because the
//! one that does (`leveldb-sys` 2.0.9, LevelDB 1.22) fails to build with GCC here: its
//! CMake probe for clang's `-Wthread-safety` passes under the `-w` the `cc` crate now
//! adds, and the real compile then dies on the unknown flag. The bindings in `ffi.rs` are
//! the few C functions this engine calls, written from `leveldb/c.h`.
//!
//! Verb mapping: `put`/`del` one `Put`/`Delete`; `mput`/`mdel` one `WriteBatch`
//! (reused by the session); `get` one `Get` (LevelDB's C API returns a fresh copy,
//! which is copied into the caller's buffer and freed); `mget` a `Get` per key;
//! `range`/`scan` an iterator read key first, stopping at the first key `>= hi`
//! before its value is touched; `delete_range` has no native form in LevelDB, so it
//! iterates the range and deletes the keys in one write batch. LevelDB has neither
//! transactions nor a merge operator, so `append` is a get followed by a put: not
//! atomic, and `kvmark engines` says so. LevelDB never returns a busy status: writes
//! wait inside LevelDB when level 0 fills up.
//!
//! Knobs map onto LevelDB's `Options`; the C API has no getters, so the defaults
//! listed are those of `leveldb/options.h` (unchanged from 1.20 to 1.23).

mod ffi;
mod stats;

use std::ffi::{CStr, CString};
use std::ptr;
use std::sync::Arc;

use libc::{c_char, c_int, c_void, size_t};

use self::ffi::*;

use crate::engine::Limits;
use crate::engine::options::format_size;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, KnobDef, KnobTable, OpenRequest, ReadBuf,
    ScanFn, Session, StorageKind, Store, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "Google LevelDB LSM tree (the system libleveldb, C API); no transactions",
    append: AppendMethod::ReadThenWrite,
    del_reports_existence: false,
    atomic_batches: true,
    limits: Limits::NONE,
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "leveldb";
/// LevelDB's level count (`config::kNumLevels` in the bundled source).
const LEVELS: usize = 7;

// Defaults from leveldb/options.h (the C API has no getters).
const DEFAULT_WRITE_BUFFER: u64 = 4 << 20;
const DEFAULT_MAX_FILE_SIZE: u64 = 2 << 20;
const DEFAULT_BLOCK_CACHE: u64 = 8 << 20;
const DEFAULT_BLOCK_SIZE: u64 = 4 << 10;
const DEFAULT_RESTART_INTERVAL: i32 = 16;
const DEFAULT_MAX_OPEN_FILES: i32 = 1000;

#[derive(Debug, Clone, Default)]
struct Settings {
    write_buffer_size: Option<u64>,
    block_cache_size: Option<u64>,
    block_size: Option<u64>,
    block_restart_interval: Option<i32>,
    max_open_files: Option<i32>,
    max_file_size: Option<u64>,
    snappy: Option<bool>,
    bloom_bits_per_key: Option<i32>,
    paranoid_checks: Option<bool>,
    sync: bool,
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    Settings::default,
    &[
        KnobDef {
            name: "write_buffer_size",
            help: "memtable size before it is written to a level-0 table",
            default: || format_size(DEFAULT_WRITE_BUFFER),
            set: |s, v| v.size().map(|n| s.write_buffer_size = Some(n)),
        },
        KnobDef {
            name: "block_cache_size",
            help: "LRU block cache (LevelDB makes an internal 8M one if unset)",
            default: || format_size(DEFAULT_BLOCK_CACHE),
            set: |s, v| v.size().map(|n| s.block_cache_size = Some(n)),
        },
        KnobDef {
            name: "block_size",
            help: "uncompressed data block size",
            default: || format_size(DEFAULT_BLOCK_SIZE),
            set: |s, v| v.size().map(|n| s.block_size = Some(n)),
        },
        KnobDef {
            name: "block_restart_interval",
            help: "keys between restart points for delta encoding",
            default: || DEFAULT_RESTART_INTERVAL.to_string(),
            set: |s, v| v.num().map(|n| s.block_restart_interval = Some(n)),
        },
        KnobDef {
            name: "max_open_files",
            help: "table files kept open",
            default: || DEFAULT_MAX_OPEN_FILES.to_string(),
            set: |s, v| v.num().map(|n| s.max_open_files = Some(n)),
        },
        KnobDef {
            name: "max_file_size",
            help: "target size of a table file",
            default: || format_size(DEFAULT_MAX_FILE_SIZE),
            set: |s, v| v.size().map(|n| s.max_file_size = Some(n)),
        },
        KnobDef {
            name: "compression",
            help: "snappy or none",
            default: || "snappy".to_string(),
            set: |s, v| v.choice(&["snappy", "none"]).map(|c| s.snappy = Some(c == "snappy")),
        },
        KnobDef {
            name: "bloom_bits_per_key",
            help: "bloom filter bits per key (0: no filter, LevelDB's default)",
            default: || "0".to_string(),
            set: |s, v| v.num().map(|n| s.bloom_bits_per_key = Some(n)),
        },
        KnobDef {
            name: "paranoid_checks",
            help: "aggressive checking of data integrity",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.paranoid_checks = Some(b)),
        },
        KnobDef {
            name: "sync",
            help: "fsync the log on every write",
            default: || "0".to_string(),
            set: |s, v| v.bool().map(|b| s.sync = b),
        },
    ],
);

/// Takes ownership of a C error string, if the call set one.
fn check(e: *mut c_char) -> EngineResult<()> {
    if e.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB sets errptr to a NUL-terminated string it allocated with malloc.
    let msg = unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned();
    // SAFETY: freed exactly once, with LevelDB's own free.
    unsafe { leveldb_free(e.cast::<c_void>()) };
    Err(EngineError::other(format!("leveldb: {msg}")))
}

/// The open database and the objects it references, freed after it closes.
struct Handles {
    db: *mut leveldb_t,
    options: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
    filter: *mut leveldb_filterpolicy_t,
    sync: bool,
    /// The value cap of `append`.
    cap: Option<u64>,
}

// SAFETY: a LevelDB database is safe for concurrent use by many threads (its header
// says so); the options, cache and filter are only read once it is open.
unsafe impl Send for Handles {}
unsafe impl Sync for Handles {}

impl Drop for Handles {
    fn drop(&mut self) {
        // SAFETY: each pointer was created by this module and is freed once, the
        // database first since it uses the others.
        unsafe {
            if !self.db.is_null() {
                leveldb_close(self.db);
            }
            leveldb_options_destroy(self.options);
            if !self.cache.is_null() {
                leveldb_cache_destroy(self.cache);
            }
            if !self.filter.is_null() {
                leveldb_filterpolicy_destroy(self.filter);
            }
        }
    }
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    let path = CString::new(dir.to_string_lossy().as_bytes())
        .map_err(|_| EngineError::other("leveldb: the store path contains a NUL byte"))?;
    // SAFETY: plain constructor and setters on a fresh options object; `handles` owns
    // every pointer from here on, so an early return frees them.
    unsafe {
        let mut handles = Handles {
            db: ptr::null_mut(),
            options: leveldb_options_create(),
            cache: ptr::null_mut(),
            filter: ptr::null_mut(),
            sync: s.sync,
            cap: req.max_value_bytes,
        };
        let o = handles.options;
        leveldb_options_set_create_if_missing(o, 1);
        if let Some(n) = s.write_buffer_size {
            leveldb_options_set_write_buffer_size(o, n as size_t);
        }
        if let Some(n) = s.block_cache_size {
            handles.cache = leveldb_cache_create_lru(n as size_t);
            leveldb_options_set_cache(o, handles.cache);
        }
        if let Some(n) = s.block_size {
            leveldb_options_set_block_size(o, n as size_t);
        }
        if let Some(n) = s.block_restart_interval {
            leveldb_options_set_block_restart_interval(o, n);
        }
        if let Some(n) = s.max_open_files {
            leveldb_options_set_max_open_files(o, n);
        }
        if let Some(n) = s.max_file_size {
            leveldb_options_set_max_file_size(o, n as size_t);
        }
        if let Some(snappy) = s.snappy {
            leveldb_options_set_compression(o, c_int::from(snappy));
        }
        if let Some(bits) = s.bloom_bits_per_key.filter(|b| *b > 0) {
            handles.filter = leveldb_filterpolicy_create_bloom(bits);
            leveldb_options_set_filter_policy(o, handles.filter);
        }
        if let Some(p) = s.paranoid_checks {
            leveldb_options_set_paranoid_checks(o, u8::from(p));
        }
        let mut e = ptr::null_mut();
        handles.db = leveldb_open(o, path.as_ptr(), &mut e);
        check(e)?;
        if handles.db.is_null() {
            return Err(EngineError::other("leveldb: open returned no database"));
        }
        Ok(Box::new(LevelStore {
            handles: Arc::new(handles),
        }))
    }
}

struct LevelStore {
    handles: Arc<Handles>,
}

impl Store for LevelStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        // SAFETY: fresh option and batch objects owned by the session (freed in Drop).
        unsafe {
            let write = leveldb_writeoptions_create();
            leveldb_writeoptions_set_sync(write, u8::from(self.handles.sync));
            Ok(Box::new(LevelSession {
                handles: Arc::clone(&self.handles),
                read: leveldb_readoptions_create(),
                write,
                batch: leveldb_writebatch_create(),
            }))
        }
    }

    fn stats(&self) -> Vec<(String, f64)> {
        stats::stats(self.handles.db)
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let handles = unshare(ENGINE, self.handles)?;
        drop(handles);
        Ok(())
    }
}

struct LevelSession {
    handles: Arc<Handles>,
    read: *mut leveldb_readoptions_t,
    write: *mut leveldb_writeoptions_t,
    /// Reused by every batch write: cleared, filled, written.
    batch: *mut leveldb_writebatch_t,
}

// SAFETY: the session's option and batch objects are used by one thread at a time
// (the session's owner); the database handle is thread-safe.
unsafe impl Send for LevelSession {}

impl Drop for LevelSession {
    fn drop(&mut self) {
        // SAFETY: created in `session`, freed once here.
        unsafe {
            leveldb_readoptions_destroy(self.read);
            leveldb_writeoptions_destroy(self.write);
            leveldb_writebatch_destroy(self.batch);
        }
    }
}

fn c(bytes: &[u8]) -> *const c_char {
    bytes.as_ptr().cast::<c_char>()
}

/// Frees an iterator however its loop ends.
struct Iter(*mut leveldb_iterator_t);

impl Drop for Iter {
    fn drop(&mut self) {
        // SAFETY: created by leveldb_create_iterator, destroyed once.
        unsafe { leveldb_iter_destroy(self.0) };
    }
}

impl Iter {
    /// The iterator's error status, once the loop is over.
    fn status(&self) -> EngineResult<()> {
        let mut e: *mut c_char = ptr::null_mut();
        // SAFETY: `e` receives NULL or a malloc'd error string, which `check` frees.
        unsafe { leveldb_iter_get_error(self.0, &mut e) };
        check(e)
    }

    fn key(&self) -> &[u8] {
        let mut len: size_t = 0;
        // SAFETY: called only while the iterator is valid; the slice lives until the
        // iterator moves, which the borrow of `self` enforces.
        unsafe {
            let p = leveldb_iter_key(self.0, &mut len);
            std::slice::from_raw_parts(p.cast::<u8>(), len)
        }
    }

    fn value(&self) -> &[u8] {
        let mut len: size_t = 0;
        // SAFETY: as for `key`.
        unsafe {
            let p = leveldb_iter_value(self.0, &mut len);
            std::slice::from_raw_parts(p.cast::<u8>(), len)
        }
    }
}

impl LevelSession {
    fn iter(&self, lo: &[u8]) -> Iter {
        // SAFETY: the iterator is freed by `Iter`'s Drop before the session goes.
        unsafe {
            let it = Iter(leveldb_create_iterator(self.handles.db, self.read));
            leveldb_iter_seek(it.0, c(lo), lo.len());
            it
        }
    }

    fn write_batch(&mut self) -> EngineResult<()> {
        let mut e = ptr::null_mut();
        // SAFETY: the batch and options belong to this session.
        unsafe { leveldb_write(self.handles.db, self.write, self.batch, &mut e) };
        check(e)
    }
}

impl Session for LevelSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let mut e = ptr::null_mut();
        // SAFETY: pointers and lengths of live slices.
        unsafe {
            leveldb_put(
                self.handles.db,
                self.write,
                c(key),
                key.len(),
                c(val),
                val.len(),
                &mut e,
            )
        };
        check(e)
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let mut len: size_t = 0;
        let mut e = ptr::null_mut();
        // SAFETY: the result is NULL (absent) or a malloc'd copy of `len` bytes, freed
        // below. (glibc's malloc(0) is never NULL, so an empty value is not "absent".)
        unsafe {
            let p = leveldb_get(self.handles.db, self.read, c(key), key.len(), &mut len, &mut e);
            check(e)?;
            if p.is_null() {
                return Ok(false);
            }
            out.set(std::slice::from_raw_parts(p.cast::<u8>(), len));
            leveldb_free(p.cast::<c_void>());
        }
        Ok(true)
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let mut e = ptr::null_mut();
        // SAFETY: pointer and length of a live slice.
        unsafe { leveldb_delete(self.handles.db, self.write, c(key), key.len(), &mut e) };
        check(e)?;
        Ok(Existed::Unknown)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let it = self.iter(lo);
        let mut rows = 0usize;
        // SAFETY: `valid` and `next` on the live iterator.
        while unsafe { leveldb_iter_valid(it.0) } != 0 {
            // The key first: the value past `hi` is never read.
            let k = it.key();
            if k >= hi {
                break;
            }
            rows += 1;
            if f(k, it.value()) || rows == limit {
                break;
            }
            unsafe { leveldb_iter_next(it.0) };
        }
        it.status()?;
        Ok(rows)
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        // SAFETY: the session's own batch, filled from live slices (LevelDB copies).
        unsafe {
            leveldb_writebatch_clear(self.batch);
            for (k, v) in pairs {
                leveldb_writebatch_put(self.batch, c(k), k.len(), c(v), v.len());
            }
        }
        self.write_batch()
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        // SAFETY: as for `mput`.
        unsafe {
            leveldb_writebatch_clear(self.batch);
            for k in keys {
                leveldb_writebatch_delete(self.batch, c(k), k.len());
            }
        }
        self.write_batch()?;
        Ok(None)
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let mut value = ReadBuf::new();
        self.get(key, &mut value)?;
        if !fits_cap(self.handles.cap, value.len(), suffix.len()) {
            return Ok(Appended::Skipped);
        }
        value.extend_from_slice(suffix);
        self.put(key, &value)?;
        Ok(Appended::Yes)
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        // SAFETY: the batch is cleared before the iterator fills it with copies of keys.
        unsafe { leveldb_writebatch_clear(self.batch) };
        {
            let it = self.iter(lo);
            // SAFETY: as in `scan`.
            while unsafe { leveldb_iter_valid(it.0) } != 0 {
                let k = it.key();
                if k >= hi {
                    break;
                }
                unsafe {
                    leveldb_writebatch_delete(self.batch, c(k), k.len());
                    leveldb_iter_next(it.0);
                }
            }
            it.status()?;
        }
        self.write_batch()
    }
}

fn version() -> String {
    // SAFETY: plain getters.
    let (major, minor) = unsafe { (leveldb_major_version(), leveldb_minor_version()) };
    format!("LevelDB {major}.{minor}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_linked_librarys() {
        assert!(version().starts_with("LevelDB 1."), "{}", version());
    }
}
