//! `bdb`: Berkeley DB 5.3, its B-tree access method inside an environment (`DB_ENV`),
//! through its C API, linked from the system's `libdb-5.3` (Debian's `libdb5.3-dev`,
//! installed by `scripts/setup`; bindings generated from its `db.h` by build.rs).
//!
//! The environment is private to the process (`DB_PRIVATE`: its regions live on the
//! heap, not in shared-memory files) and holds one B-tree file, `kvmark.db`. Its two
//! modes are the `transactions` knob:
//! - on (the default): the Transactional Data Store, `DB_INIT_TXN` with the log and
//!   page locks; every write commits durably (the log is flushed at commit unless
//!   `txn_sync` says otherwise); recovery runs when the store is reopened.
//! - off: the Concurrent Data Store (`DB_INIT_CDB`), not plain `DB_INIT_LOCK`: Berkeley
//!   DB's own guide warns that page locking without transactions can deadlock on a
//!   page split and then leave the database inconsistent, while the Concurrent Data
//!   Store takes one lock for the whole database and never deadlocks. Readers run
//!   concurrently; writers go one at a time. No log: nothing is durable before close.
//!
//! Sessions share one database handle opened `DB_THREAD` (free-threaded); kvmark adds
//! no lock. With transactions, Berkeley DB locks pages and detects deadlocks when a lock
//! waits (`DB_LOCK_DEFAULT`); the loser's operation is aborted and reported busy, so the
//! harness retries it and counts the retry.
//!
//! Verb mapping, transactions on: `put`/`del`/`get` one auto-committed call (`del`
//! reports existence: Berkeley DB returns not-found for free); `mput`/`mdel`/`append`
//! (get with a write lock, then put)/`delete_range` (a cursor deleting every key) one
//! transaction each; `range` a cursor in one transaction (degree 3: the rows are one
//! consistent read); `scan` the same, but a deadlock after rows were delivered resumes
//! past the last row in a new transaction instead of delivering rows twice.
//! Transactions off: writes apply key by key, `append` and `delete_range` hold a write
//! cursor (`DB_WRITECURSOR`, the one writer) for their whole read-modify-write.
//!
//! Stats: the memory pool (cache hits, misses, pages, evictions, the effective cache
//! size), the lock region (requests, waits, deadlocks), the transaction region and the
//! B-tree's own counts (`stats.rs`). The knobs are in `knobs.rs`.

mod ffi;
mod knobs;
mod stats;

use std::ffi::{CStr, CString};
use std::ptr;
use std::sync::Arc;

use libc::{c_int, c_void};

use self::ffi::*;
use self::knobs::KNOBS;

use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, OpenRequest, ReadBuf, Rows, ScanFn,
    Session, StorageKind, Store, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "Berkeley DB B-tree in a private environment (system libdb 5.3, C API); sessions share one \
                  free-threaded handle: page locks with deadlock detection (busy retries), or with \
                  transactions=0 the Concurrent Data Store's single writer",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    // DBT sizes are 32-bit.
    limits: crate::engine::Limits {
        empty_keys: true,
        max_key_bytes: u32::MAX as usize,
        max_value_bytes: u32::MAX as usize,
    },
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "bdb";
/// The B-tree's file inside the store's directory.
const FILE: &str = "kvmark.db";

/// Calls a method of a Berkeley DB handle (its C API is a table of function pointers).
macro_rules! call {
    ($obj:expr, $method:ident $(, $arg:expr)* $(,)?) => {{
        let obj = $obj;
        match (*obj).$method {
            Some(f) => f(obj $(, $arg)*),
            None => unreachable!(concat!("Berkeley DB leaves ", stringify!($method), " unset")),
        }
    }};
}
use call;

/// Berkeley DB's message for a return code.
fn strerror(code: c_int) -> String {
    // SAFETY: db_strerror returns a static string (or one in a static buffer) for any code.
    unsafe { CStr::from_ptr(db_strerror(code)) }
        .to_string_lossy()
        .into_owned()
}

/// Maps a return code: a deadlock or an ungranted lock is busy (the harness retries).
fn check(code: c_int, what: &str) -> EngineResult<()> {
    match code {
        0 => Ok(()),
        DB_LOCK_DEADLOCK | DB_LOCK_NOTGRANTED => Err(EngineError::busy(format!("bdb: {what}: {}", strerror(code)))),
        _ => Err(EngineError::other(format!("bdb: {what}: {}", strerror(code)))),
    }
}

/// An input DBT over a borrowed slice (Berkeley DB only reads it).
fn input(bytes: &[u8]) -> DBT {
    DBT {
        data: bytes.as_ptr().cast_mut().cast::<c_void>(),
        size: bytes.len() as u32,
        ulen: 0,
        dlen: 0,
        doff: 0,
        app_data: ptr::null_mut(),
        flags: 0,
    }
}

/// An output DBT into a malloc'd buffer Berkeley DB grows with realloc; freed by `Buf`.
struct Buf(DBT);

impl Buf {
    fn new() -> Buf {
        Buf(DBT {
            data: ptr::null_mut(),
            flags: DB_DBT_REALLOC,
            ..input(&[])
        })
    }

    fn bytes(&self) -> &[u8] {
        if self.0.size == 0 {
            return &[];
        }
        // SAFETY: after a successful get, data holds size bytes Berkeley DB wrote.
        unsafe { std::slice::from_raw_parts(self.0.data.cast::<u8>(), self.0.size as usize) }
    }

    /// Makes the buffer hold `bytes`, as the input of a positioning get (`DB_SET_RANGE`)
    /// whose result Berkeley DB writes back into the same buffer.
    fn load(&mut self, bytes: &[u8]) {
        // SAFETY: realloc of our own malloc'd (or null) pointer to at least one byte.
        unsafe {
            let p = libc::realloc(self.0.data, bytes.len().max(1));
            assert!(!p.is_null(), "bdb: out of memory for a {}-byte key", bytes.len());
            ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>(), bytes.len());
            self.0.data = p;
        }
        self.0.size = bytes.len() as u32;
    }
}

// SAFETY: the buffer is owned memory; the DBT only points at it.
unsafe impl Send for Buf {}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: malloc'd by `load` or by Berkeley DB's realloc (the C library's).
        unsafe { libc::free(self.0.data) };
    }
}

/// The open environment and database.
struct Handles {
    env: *mut DB_ENV,
    db: *mut DB,
    transactions: bool,
    /// The value cap of `append`.
    cap: Option<u64>,
}

// SAFETY: the environment and database are opened DB_THREAD, which makes their
// handles free-threaded (usable by many threads at once).
unsafe impl Send for Handles {}
unsafe impl Sync for Handles {}

impl Handles {
    /// Closes the database and the environment; the first failure is returned.
    fn close(mut self) -> EngineResult<()> {
        let r = self.close_handles();
        std::mem::forget(self);
        r
    }

    fn close_handles(&mut self) -> EngineResult<()> {
        let mut result = Ok(());
        // SAFETY: each handle is closed once (and forgotten); a close frees it even on error.
        unsafe {
            if !self.db.is_null() {
                result = check(call!(self.db, close, 0), "close database");
                self.db = ptr::null_mut();
            }
            if !self.env.is_null() {
                if self.transactions && result.is_ok() {
                    // Reopening then recovers from this checkpoint, not from the start.
                    result = check(call!(self.env, txn_checkpoint, 0, 0, 0), "checkpoint");
                }
                let r = check(call!(self.env, close, 0), "close environment");
                result = result.and(r);
                self.env = ptr::null_mut();
            }
        }
        result
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        // Only after a failed open: `close` forgets the handles it closed.
        let _ = self.close_handles();
    }
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    let home = CString::new(dir.to_string_lossy().as_bytes())
        .map_err(|_| EngineError::other("bdb: the store path contains a NUL byte"))?;
    let file = CString::new(FILE).expect("no NUL");
    let mut h = Handles {
        env: ptr::null_mut(),
        db: ptr::null_mut(),
        transactions: s.transactions,
        cap: req.max_value_bytes,
    };
    // SAFETY: the handles are created here and owned by `h`, which closes them on an
    // early return; every argument is a live C string or a plain flag.
    unsafe {
        check(db_env_create(&mut h.env, 0), "create environment")?;
        if let Some(n) = s.cache_size {
            let (g, b) = ((n >> 30) as u32, (n & ((1 << 30) - 1)) as u32);
            check(call!(h.env, set_cachesize, g, b, 1), "cache_size")?;
        }
        let mut flags = DB_CREATE | DB_INIT_MPOOL | DB_PRIVATE | DB_THREAD;
        if s.transactions {
            flags |= DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_TXN | DB_RECOVER;
            check(call!(h.env, set_lk_detect, DB_LOCK_DEFAULT), "deadlock detection")?;
            if s.txn_sync != 0 {
                check(call!(h.env, set_flags, s.txn_sync, 1), "txn_sync")?;
            }
        } else {
            flags |= DB_INIT_CDB;
        }
        check(call!(h.env, open, home.as_ptr(), flags, 0o644), "open environment")?;
        check(db_create(&mut h.db, h.env, 0), "create database")?;
        if let Some(n) = s.page_size {
            check(call!(h.db, set_pagesize, n), "page_size")?;
        }
        let mut db_flags = DB_CREATE | DB_THREAD;
        if s.transactions {
            db_flags |= DB_AUTO_COMMIT;
        }
        check(
            call!(
                h.db,
                open,
                ptr::null_mut(),
                file.as_ptr(),
                ptr::null(),
                DBTYPE_DB_BTREE,
                db_flags,
                0o644
            ),
            "open database",
        )?;
    }
    Ok(Box::new(BdbStore { h: Arc::new(h) }))
}

struct BdbStore {
    h: Arc<Handles>,
}

impl Store for BdbStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(BdbSession {
            h: Arc::clone(&self.h),
            key: Buf::new(),
            val: Buf::new(),
            last: Vec::new(),
            scratch: ReadBuf::new(),
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        stats::stats(&self.h)
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        unshare(ENGINE, self.h)?.close()
    }
}

struct BdbSession {
    h: Arc<Handles>,
    /// Cursor outputs, grown by Berkeley DB and kept for the next range.
    key: Buf,
    val: Buf,
    /// The last key a scan delivered, where a scan resumes after a deadlock.
    last: Vec<u8>,
    /// The value an append grows.
    scratch: ReadBuf,
}

/// A transaction, aborted on drop unless committed.
struct Txn(*mut DB_TXN);

impl Txn {
    /// A new transaction, or none (a null handle) without transactions.
    fn begin(h: &Handles) -> EngineResult<Txn> {
        let mut t = ptr::null_mut();
        if h.transactions {
            // SAFETY: a top-level transaction in our environment.
            check(unsafe { call!(h.env, txn_begin, ptr::null_mut(), &mut t, 0) }, "begin")?;
        }
        Ok(Txn(t))
    }

    fn commit(mut self) -> EngineResult<()> {
        let t = std::mem::replace(&mut self.0, ptr::null_mut());
        if t.is_null() {
            return Ok(());
        }
        // SAFETY: commit frees the handle, even when it fails.
        check(unsafe { call!(t, commit, 0) }, "commit")
    }
}

impl Drop for Txn {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: abort frees the handle; its error leaves nothing more to undo.
            unsafe { call!(self.0, abort) };
        }
    }
}

/// A cursor, closed on drop (before its transaction ends: declare it after the `Txn`).
struct Cursor(*mut DBC);

impl Cursor {
    fn open(h: &Handles, txn: &Txn, flags: u32) -> EngineResult<Cursor> {
        let mut c = ptr::null_mut();
        // SAFETY: a cursor on our database in `txn` (or none).
        check(unsafe { call!(h.db, cursor, txn.0, &mut c, flags) }, "cursor")?;
        Ok(Cursor(c))
    }

    /// A cursor get: Ok(false) at the end of the data.
    fn get(&self, key: &mut Buf, val: &mut Buf, flags: u32) -> EngineResult<bool> {
        // SAFETY: the cursor is open; the DBTs are ours, realloc'd by Berkeley DB.
        match unsafe { call!(self.0, get, &mut key.0, &mut val.0, flags) } {
            DB_NOTFOUND => Ok(false),
            code => check(code, "cursor get").map(|()| true),
        }
    }

    fn close(mut self) -> EngineResult<()> {
        let c = std::mem::replace(&mut self.0, ptr::null_mut());
        // SAFETY: closed once.
        check(unsafe { call!(c, close) }, "cursor close")
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: closed once; an error here is already reported by the verb.
            unsafe { call!(self.0, close) };
        }
    }
}

impl BdbSession {
    /// Puts one pair in `txn` (or auto-committed).
    fn put_in(&self, txn: &Txn, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let (mut k, mut v) = (input(key), input(val));
        // SAFETY: input DBTs over live slices.
        check(unsafe { call!(self.h.db, put, txn.0, &mut k, &mut v, 0) }, "put")
    }

    fn del_in(&self, txn: &Txn, key: &[u8]) -> EngineResult<Existed> {
        let mut k = input(key);
        // SAFETY: an input DBT over a live slice.
        match unsafe { call!(self.h.db, del, txn.0, &mut k, 0) } {
            DB_NOTFOUND => Ok(Existed::No),
            code => check(code, "del").map(|()| Existed::Yes),
        }
    }

    /// Reads `key` into `out` in `txn` with `flags` (`DB_RMW` to lock it for writing).
    fn get_in(&self, txn: &Txn, key: &[u8], out: &mut ReadBuf, flags: u32) -> EngineResult<bool> {
        let mut k = input(key);
        let mut want = 0usize;
        loop {
            let room = out.room(want);
            let mut v = DBT {
                data: room.as_mut_ptr().cast::<c_void>(),
                ulen: room.len().min(u32::MAX as usize) as u32,
                flags: DB_DBT_USERMEM,
                ..input(&[])
            };
            // SAFETY: Berkeley DB writes at most ulen bytes into the room lent.
            match unsafe { call!(self.h.db, get, txn.0, &mut k, &mut v, flags) } {
                0 => {
                    out.filled(v.size as usize);
                    return Ok(true);
                }
                DB_NOTFOUND => return Ok(false),
                // The value is larger than the room: `size` says how large.
                DB_BUFFER_SMALL => want = v.size as usize,
                code => return check(code, "get").map(|()| false),
            }
        }
    }

    /// Delivers the rows `lo <= key < hi` to `f` from one cursor in one transaction.
    /// A failure after `delivered` rows leaves `last` at the last row delivered.
    /// With `keep_last` (a scan), a walk after `delivered` rows resumes past `last`.
    fn walk(
        &mut self,
        lo: &[u8],
        hi: &[u8],
        limit: usize,
        delivered: &mut usize,
        keep_last: bool,
        f: &mut ScanFn<'_>,
    ) -> EngineResult<()> {
        let txn = Txn::begin(&self.h)?;
        let cur = Cursor::open(&self.h, &txn, 0)?;
        let resume = keep_last && *delivered > 0;
        if resume {
            self.key.load(&self.last);
        } else {
            self.key.load(lo);
        }
        let mut found = cur.get(&mut self.key, &mut self.val, DB_SET_RANGE)?;
        if found && resume && self.key.bytes() == self.last.as_slice() {
            // Resuming: this row was delivered before the deadlock.
            found = cur.get(&mut self.key, &mut self.val, DB_NEXT)?;
        }
        while found && self.key.bytes() < hi {
            if keep_last {
                self.last.clear();
                self.last.extend_from_slice(self.key.bytes());
            }
            *delivered += 1;
            if f(self.key.bytes(), self.val.bytes()) || *delivered == limit {
                break;
            }
            found = cur.get(&mut self.key, &mut self.val, DB_NEXT)?;
        }
        cur.close()?;
        txn.commit()
    }
}

impl Session for BdbSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.put_in(&Txn(ptr::null_mut()), key, val)
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        self.get_in(&Txn(ptr::null_mut()), key, out, 0)
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.del_in(&Txn(ptr::null_mut()), key)
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let mut delivered = 0usize;
        loop {
            match self.walk(lo, hi, limit, &mut delivered, true, f) {
                Ok(()) => return Ok(delivered),
                // A deadlock after rows went out: resume past them in a new transaction
                // (a retry of the whole scan would deliver them twice).
                Err(e) if e.kind == crate::engine::ErrorKind::Busy && delivered > 0 => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        if lo >= hi {
            return Ok(());
        }
        let mut delivered = 0usize;
        self.walk(lo, hi, limit, &mut delivered, false, &mut |k, v| {
            out.push(k, v);
            false
        })?;
        Ok(())
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        let txn = Txn::begin(&self.h)?;
        for (k, v) in pairs {
            self.put_in(&txn, k, v)?;
        }
        txn.commit()
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let txn = Txn::begin(&self.h)?;
        let mut existed = 0usize;
        for k in keys {
            existed += usize::from(self.del_in(&txn, k)? == Existed::Yes);
        }
        txn.commit()?;
        Ok(Some(existed))
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        if !fits_cap(self.h.cap, 0, suffix.len()) {
            return Ok(Appended::Skipped);
        }
        let mut value = std::mem::take(&mut self.scratch);
        let r = if self.h.transactions {
            self.append_txn(key, suffix, &mut value)
        } else {
            self.append_cds(key, suffix, &mut value)
        };
        self.scratch = value;
        r
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let txn = Txn::begin(&self.h)?;
        let flags = if self.h.transactions { 0 } else { DB_WRITECURSOR };
        let cur = Cursor::open(&self.h, &txn, flags)?;
        // With transactions, read with write locks: no upgrade to deadlock on.
        let rmw = if self.h.transactions { DB_RMW } else { 0 };
        self.key.load(lo);
        let mut found = cur.get(&mut self.key, &mut self.val, DB_SET_RANGE | rmw)?;
        while found && self.key.bytes() < hi {
            // SAFETY: the cursor is open and positioned on a record.
            check(unsafe { call!(cur.0, del, 0) }, "cursor del")?;
            found = cur.get(&mut self.key, &mut self.val, DB_NEXT | rmw)?;
        }
        cur.close()?;
        txn.commit()
    }
}

impl BdbSession {
    /// Append in one transaction: read with a write lock, check the cap, write.
    fn append_txn(&mut self, key: &[u8], suffix: &[u8], value: &mut ReadBuf) -> EngineResult<Appended> {
        let txn = Txn::begin(&self.h)?;
        if !self.get_in(&txn, key, value, DB_RMW)? {
            value.clear();
        }
        if !fits_cap(self.h.cap, value.len(), suffix.len()) {
            return Ok(Appended::Skipped);
        }
        value.extend_from_slice(suffix);
        self.put_in(&txn, key, value)?;
        txn.commit()?;
        Ok(Appended::Yes)
    }

    /// Append under the Concurrent Data Store's write cursor, which excludes every
    /// other writer from the read to the write.
    fn append_cds(&mut self, key: &[u8], suffix: &[u8], value: &mut ReadBuf) -> EngineResult<Appended> {
        let none = Txn(ptr::null_mut());
        let cur = Cursor::open(&self.h, &none, DB_WRITECURSOR)?;
        self.key.load(key);
        if cur.get(&mut self.key, &mut self.val, DB_SET)? {
            value.set(self.val.bytes());
        } else {
            value.clear();
        }
        if !fits_cap(self.h.cap, value.len(), suffix.len()) {
            return cur.close().map(|()| Appended::Skipped);
        }
        value.extend_from_slice(suffix);
        let (mut k, mut v) = (input(key), input(value));
        // SAFETY: input DBTs over live slices; KEYFIRST replaces the value of an
        // existing key in a database without duplicates.
        check(unsafe { call!(cur.0, put, &mut k, &mut v, DB_KEYFIRST) }, "cursor put")?;
        cur.close()?;
        Ok(Appended::Yes)
    }
}

fn version() -> String {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: db_version returns a static string and fills the three numbers.
    let text = unsafe { CStr::from_ptr(db_version(&mut major, &mut minor, &mut patch)) };
    text.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{open_in_tempdir, range_keys};

    /// The Concurrent Data Store (transactions=0), which the conformance suite (default
    /// options) does not reach: every verb, and appends that stay atomic under the
    /// write cursor.
    #[test]
    fn concurrent_data_store_keeps_the_verbs_and_atomic_appends() {
        let options = [("transactions", "0"), ("cache_size", "4M"), ("page_size", "4K")];
        let (store, _dir) = open_in_tempdir(open, &options, Some(100));
        let mut s = store.session().unwrap();
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..10).map(|i| (format!("k{i}").into_bytes(), vec![b'v'; i])).collect();
        let refs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        s.mput(&refs).unwrap();
        assert_eq!(range_keys(&mut *s, b"k2", b"k5"), [b"k2", b"k3", b"k4"]);
        s.delete_range(b"k2", b"k5").unwrap();
        assert_eq!(s.mdel(&[b"k3", b"k6", b"k7"]).unwrap(), Some(2));
        assert_eq!(s.del(b"k1").unwrap(), Existed::Yes);
        assert_eq!(s.del(b"k1").unwrap(), Existed::No);
        assert_eq!(range_keys(&mut *s, b"k", b"l"), [b"k0", b"k5", b"k8", b"k9"]);
        assert_eq!(s.append(b"k9", &[b'+'; 91]).unwrap(), Appended::Yes);
        assert_eq!(s.append(b"k9", b"!").unwrap(), Appended::Skipped, "past the cap of 100");
        drop(s);
        std::thread::scope(|scope| {
            for t in 0..4u8 {
                let mut s = store.session().unwrap();
                scope.spawn(move || {
                    for _ in 0..20 {
                        assert_eq!(s.append(b"log", &[b'a' + t]).unwrap(), Appended::Yes);
                    }
                });
            }
        });
        let mut s = store.session().unwrap();
        let mut out = ReadBuf::new();
        assert!(s.get(b"log", &mut out).unwrap());
        assert_eq!(out.len(), 80, "no append lost");
        let stats = store.stats();
        let names: Vec<&str> = stats.iter().map(|(k, _)| k.as_str()).collect();
        assert!(
            names.contains(&"cache_hit") && names.contains(&"lock_requests"),
            "{names:?}"
        );
        assert!(!names.contains(&"txn_commits"), "no transaction region: {names:?}");
        drop(s);
        store.close().unwrap();
    }

    #[test]
    fn version_is_the_linked_librarys() {
        assert!(version().starts_with("Berkeley DB 5.3."), "{}", version());
    }
}
