//! `tokyocabinet`: Tokyo Cabinet 1.4, its B+ tree database (TCBDB) by default or its
//! hash database (TCHDB, `type=hash`), through its C API, linked from the system's
//! `libtokyocabinet` (Debian's `libtokyocabinet-dev`, installed by `scripts/setup`;
//! bindings generated from its headers by build.rs). One file, `kvmark.tcb` or
//! `kvmark.tch`, in the store's directory.
//!
//! Sessions share one handle made thread-safe by Tokyo Cabinet itself
//! (`tcbdbsetmutex`): the B+ tree takes one reader-writer lock for the whole database
//! per call, so writers go one at a time while readers share it; the hash database
//! (`tchdbsetmutex`) adds record locks per bucket under a shared method lock, so
//! writers of different buckets run together. kvmark adds no lock.
//!
//! Verb mapping (B+ tree): `put` `tcbdbput`; `get` `tcbdbget` (a fresh copy, copied
//! into the caller's buffer and freed); `del` `tcbdbout`, which reports a missing key
//! for free; `range`/`scan` a session's cursor, jumped to `lo` and read record by
//! record into two reused buffers (`tcbdbcurrec`); `delete_range` the same cursor
//! removing records (`tcbdbcurout`). `append` is `tcbdbputproc`: Tokyo Cabinet calls
//! kvmark's function with the current value inside its own write lock, and the value
//! cap is checked there, so an append is atomic (`tcbdbputcat` is the same write
//! without the chance to check the cap). Batches apply key by key: Tokyo Cabinet's
//! transaction belongs to the database, not to a thread (other threads' writes join
//! it and their reads see it uncommitted), and beginning one writes every cached page,
//! so it cannot make a session's batch atomic.
//!
//! With `type=hash` there is no key order: `range`, `scan` and `delete_range` refuse at
//! once, naming the knob.
//!
//! Knobs are Tokyo Cabinet's tuning parameters (`tcbdbtune`, `tcbdbsetcache`,
//! `tcbdbsetxmsiz`, `tcbdbsetdfunit` and their hash counterparts); defaults are those
//! of its sources (its C API has no getters before open), for the B+ tree unless the
//! help says otherwise, and an unset knob is left to the library.

mod ffi;

use std::ffi::{CStr, CString};
use std::ptr;
use std::sync::Arc;

use libc::{c_int, c_void};

use self::ffi::*;

use crate::engine::knobs::KnobValue;
use crate::engine::options::OptionError;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, KnobDef, KnobTable, OpenRequest, ReadBuf,
    Rows, ScanFn, Session, StorageKind, Store, fits_cap, unshare,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "Tokyo Cabinet B+ tree, or hash with type=hash (system libtokyocabinet, C API); sessions \
                  share one handle under Tokyo Cabinet's own database-wide reader-writer lock",
    append: AppendMethod::NativeUpdate,
    del_reports_existence: true,
    atomic_batches: false,
    // Sizes are C ints in Tokyo Cabinet's API.
    limits: crate::engine::Limits {
        empty_keys: true,
        max_key_bytes: i32::MAX as usize,
        max_value_bytes: i32::MAX as usize,
    },
    version,
    knobs: &KNOBS,
    open,
};

const ENGINE: &str = "tokyocabinet";
const TYPES: &[&str] = &["btree", "hash"];

#[derive(Debug, Clone, Default)]
struct Settings {
    hash: bool,
    lmemb: Option<i32>,
    nmemb: Option<i32>,
    bnum: Option<i64>,
    apow: Option<i8>,
    fpow: Option<i8>,
    opts: u8,
    lcnum: Option<i32>,
    ncnum: Option<i32>,
    rcnum: Option<i32>,
    xmsiz: Option<i64>,
    dfunit: Option<i32>,
}

/// A count Tokyo Cabinet takes as a C int; its tuning treats 0 as "the default".
fn count<T: std::str::FromStr + Default + PartialOrd>(v: &KnobValue<'_>) -> Result<T, OptionError> {
    let n: T = v.num()?;
    if n < T::default() {
        return Err(v.refuse("expected a number of 0 or more"));
    }
    Ok(n)
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    Settings::default,
    &[
        KnobDef {
            name: "type",
            help: "btree (TCBDB, ordered) or hash (TCHDB: no key order, so no range, scan or delete_range)",
            default: || "btree".to_string(),
            set: |s, v| v.choice(TYPES).map(|t| s.hash = t == "hash"),
        },
        KnobDef {
            name: "lmemb",
            help: "btree: records per leaf page",
            default: || "128".to_string(),
            set: |s, v| count(v).map(|n| s.lmemb = Some(n)),
        },
        KnobDef {
            name: "nmemb",
            help: "btree: children per non-leaf page",
            default: || "256".to_string(),
            set: |s, v| count(v).map(|n| s.nmemb = Some(n)),
        },
        KnobDef {
            name: "bnum",
            help: "hash bucket array size (hash: 131071)",
            default: || "32749".to_string(),
            set: |s, v| count(v).map(|n| s.bnum = Some(n)),
        },
        KnobDef {
            name: "apow",
            help: "record alignment, a power of 2 (hash: 4)",
            default: || "8".to_string(),
            set: |s, v| count(v).map(|n| s.apow = Some(n)),
        },
        KnobDef {
            name: "fpow",
            help: "free block pool size, a power of 2",
            default: || "10".to_string(),
            set: |s, v| count(v).map(|n| s.fpow = Some(n)),
        },
        KnobDef {
            name: "opts",
            help: "letters: l (64-bit offsets, files over 2G), d (deflate), b (bzip2), t (TCBS); none",
            default: || "none".to_string(),
            set: |s, v| {
                if v.text.eq_ignore_ascii_case("none") {
                    s.opts = 0;
                    return Ok(());
                }
                let mut opts = 0u8;
                for c in v.text.chars() {
                    opts |= match c {
                        'l' | 'L' => BDBTLARGE as u8,
                        'd' | 'D' => BDBTDEFLATE as u8,
                        'b' | 'B' => BDBTBZIP as u8,
                        't' | 'T' => BDBTTCBS as u8,
                        _ => return Err(v.refuse("expected none or letters from l, d, b, t")),
                    };
                }
                s.opts = opts;
                Ok(())
            },
        },
        KnobDef {
            name: "lcnum",
            help: "btree: leaf pages cached",
            default: || "1024".to_string(),
            set: |s, v| count(v).map(|n| s.lcnum = Some(n)),
        },
        KnobDef {
            name: "ncnum",
            help: "btree: non-leaf pages cached",
            default: || "512".to_string(),
            set: |s, v| count(v).map(|n| s.ncnum = Some(n)),
        },
        KnobDef {
            name: "rcnum",
            help: "hash: records cached (0: no record cache)",
            default: || "0".to_string(),
            set: |s, v| count(v).map(|n| s.rcnum = Some(n)),
        },
        KnobDef {
            name: "xmsiz",
            help: "extra memory-mapped region of the file (hash: 64M)",
            default: || "0".to_string(),
            set: |s, v| {
                v.size()
                    .and_then(|n| i64::try_from(n).map_err(|_| v.refuse("too large")))
                    .map(|n| s.xmsiz = Some(n))
            },
        },
        KnobDef {
            name: "dfunit",
            help: "auto-defragmentation unit (0: off)",
            default: || "0".to_string(),
            set: |s, v| count(v).map(|n| s.dfunit = Some(n)),
        },
    ],
);

/// The open database of either type.
#[derive(Clone, Copy)]
enum Db {
    Tree(*mut TCBDB),
    Hash(*mut TCHDB),
}

impl Db {
    /// The message of the calling thread's last error (Tokyo Cabinet keeps error codes
    /// per thread once the mutex is set) and its code.
    fn last_error(self) -> (c_int, String) {
        // SAFETY: the handle is live; the message is a static string.
        unsafe {
            let (code, msg) = match self {
                Db::Tree(db) => {
                    let c = tcbdbecode(db);
                    (c, tcbdberrmsg(c))
                }
                Db::Hash(db) => {
                    let c = tchdbecode(db);
                    (c, tchdberrmsg(c))
                }
            };
            (code, CStr::from_ptr(msg).to_string_lossy().into_owned())
        }
    }

    fn err(self, what: &str) -> EngineError {
        EngineError::other(format!("tokyocabinet: {what}: {}", self.last_error().1))
    }

    /// Ok(false) when the call failed only because the record is missing.
    fn found(self, ok: bool, what: &str) -> EngineResult<bool> {
        if ok {
            return Ok(true);
        }
        match self.last_error() {
            (code, _) if code == TCENOREC as c_int => Ok(false),
            (_, msg) => Err(EngineError::other(format!("tokyocabinet: {what}: {msg}"))),
        }
    }
}

struct Handles {
    db: Db,
    /// The value cap of `append`.
    cap: Option<u64>,
}

// SAFETY: the handle has Tokyo Cabinet's mutex set before open, which makes every call
// on it thread-safe.
unsafe impl Send for Handles {}
unsafe impl Sync for Handles {}

impl Handles {
    fn close(mut self) -> EngineResult<()> {
        let r = self.close_db();
        std::mem::forget(self);
        r
    }

    fn close_db(&mut self) -> EngineResult<()> {
        // SAFETY: closed (if open) and deleted once.
        unsafe {
            match self.db {
                Db::Tree(db) if !db.is_null() => {
                    let ok = tcbdbclose(db) || tcbdbecode(db) == TCEINVALID as c_int;
                    let r = if ok { Ok(()) } else { Err(self.db.err("close")) };
                    tcbdbdel(db);
                    self.db = Db::Tree(ptr::null_mut());
                    r
                }
                Db::Hash(db) if !db.is_null() => {
                    let ok = tchdbclose(db) || tchdbecode(db) == TCEINVALID as c_int;
                    let r = if ok { Ok(()) } else { Err(self.db.err("close")) };
                    tchdbdel(db);
                    self.db = Db::Hash(ptr::null_mut());
                    r
                }
                _ => Ok(()),
            }
        }
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        // Only after a failed open: `close` forgets the handles it closed.
        let _ = self.close_db();
    }
}

/// Tokyo Cabinet's "use the default" for a tuning number.
const DEFAULT: i64 = -1;

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    let file = dir.join(if s.hash { "kvmark.tch" } else { "kvmark.tcb" });
    let path = CString::new(file.to_string_lossy().as_bytes())
        .map_err(|_| EngineError::other("tokyocabinet: the store path contains a NUL byte"))?;
    let num = |n: Option<i32>| n.unwrap_or(DEFAULT as i32);
    let pow = |n: Option<i8>| n.unwrap_or(DEFAULT as i8);
    // SAFETY: a fresh handle owned by `h` (closed and deleted on an early return),
    // tuned before it opens, as Tokyo Cabinet requires.
    unsafe {
        let h = if s.hash {
            let db = tchdbnew();
            let h = Handles {
                db: Db::Hash(db),
                cap: req.max_value_bytes,
            };
            let ok = tchdbsetmutex(db)
                && tchdbtune(db, s.bnum.unwrap_or(DEFAULT), pow(s.apow), pow(s.fpow), s.opts)
                && tchdbsetcache(db, num(s.rcnum))
                && s.xmsiz.is_none_or(|n| tchdbsetxmsiz(db, n))
                && tchdbsetdfunit(db, num(s.dfunit))
                && tchdbopen(db, path.as_ptr(), (HDBOWRITER | HDBOCREAT) as c_int);
            if !ok {
                return Err(h.db.err("open"));
            }
            h
        } else {
            let db = tcbdbnew();
            let h = Handles {
                db: Db::Tree(db),
                cap: req.max_value_bytes,
            };
            let ok = tcbdbsetmutex(db)
                && tcbdbtune(
                    db,
                    num(s.lmemb),
                    num(s.nmemb),
                    s.bnum.unwrap_or(DEFAULT),
                    pow(s.apow),
                    pow(s.fpow),
                    s.opts,
                )
                && tcbdbsetcache(db, num(s.lcnum), num(s.ncnum))
                && s.xmsiz.is_none_or(|n| tcbdbsetxmsiz(db, n))
                && tcbdbsetdfunit(db, num(s.dfunit))
                && tcbdbopen(db, path.as_ptr(), (BDBOWRITER | BDBOCREAT) as c_int);
            if !ok {
                return Err(h.db.err("open"));
            }
            h
        };
        Ok(Box::new(TcStore { h: Arc::new(h) }))
    }
}

struct TcStore {
    h: Arc<Handles>,
}

impl Store for TcStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        // SAFETY: a cursor on the open tree and two growable buffers, owned by the
        // session and freed in its Drop.
        unsafe {
            let cursor = match self.h.db {
                Db::Tree(db) => tcbdbcurnew(db),
                Db::Hash(_) => ptr::null_mut(),
            };
            Ok(Box::new(TcSession {
                h: Arc::clone(&self.h),
                cursor,
                kx: tcxstrnew(),
                vx: tcxstrnew(),
            }))
        }
    }

    fn stats(&self) -> Vec<(String, f64)> {
        // SAFETY: counters read under Tokyo Cabinet's own lock.
        unsafe {
            match self.h.db {
                Db::Tree(db) => vec![
                    ("records".to_string(), tcbdbrnum(db) as f64),
                    ("file_size".to_string(), tcbdbfsiz(db) as f64),
                    ("leaf_pages".to_string(), tcbdblnum(db) as f64),
                    ("node_pages".to_string(), tcbdbnnum(db) as f64),
                    ("buckets".to_string(), tcbdbbnum(db) as f64),
                    ("buckets_used".to_string(), tcbdbbnumused(db) as f64),
                ],
                Db::Hash(db) => vec![
                    ("records".to_string(), tchdbrnum(db) as f64),
                    ("file_size".to_string(), tchdbfsiz(db) as f64),
                    ("buckets".to_string(), tchdbbnum(db) as f64),
                    ("buckets_used".to_string(), tchdbbnumused(db) as f64),
                    ("extra_mapped".to_string(), tchdbxmsiz(db) as f64),
                ],
            }
        }
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        unshare(ENGINE, self.h)?.close()
    }
}

struct TcSession {
    h: Arc<Handles>,
    /// The session's B+ tree cursor, jumped for every range (null for a hash).
    cursor: *mut BDBCUR,
    /// The cursor's key and value, copied by Tokyo Cabinet into these reused buffers.
    kx: *mut TCXSTR,
    vx: *mut TCXSTR,
}

// SAFETY: the cursor and buffers are used by the session's owner only; the database
// handle is thread-safe.
unsafe impl Send for TcSession {}

impl Drop for TcSession {
    fn drop(&mut self) {
        // SAFETY: created in `session`, freed once here, before the database closes
        // (the session holds the store's Arc).
        unsafe {
            if !self.cursor.is_null() {
                tcbdbcurdel(self.cursor);
            }
            tcxstrdel(self.kx);
            tcxstrdel(self.vx);
        }
    }
}

fn c(bytes: &[u8]) -> *const c_void {
    bytes.as_ptr().cast::<c_void>()
}

fn len(bytes: &[u8]) -> c_int {
    bytes.len() as c_int
}

/// The bytes of a Tokyo Cabinet extensible string.
///
/// # Safety
/// `x` is a live TCXSTR not written while the slice lives.
unsafe fn xstr<'a>(x: *const TCXSTR) -> &'a [u8] {
    // SAFETY: a TCXSTR holds `size` bytes at `ptr`.
    unsafe { std::slice::from_raw_parts((*x).ptr.cast::<u8>(), (*x).size as usize) }
}

/// The value cap check and the suffix, for the append callback.
struct Grow<'a> {
    suffix: &'a [u8],
    cap: Option<u64>,
    skipped: bool,
}

/// Tokyo Cabinet's duplication callback for `append`: called with the current value
/// inside the database's write lock, it returns the grown value (malloc'd; Tokyo
/// Cabinet frees it) or NULL to leave the record as it is when the cap would be passed.
unsafe extern "C" fn grow(vbuf: *const c_void, vsiz: c_int, sp: *mut c_int, op: *mut c_void) -> *mut c_void {
    // SAFETY: `op` is the `Grow` passed by `append`, alive for the call; `vbuf` holds
    // `vsiz` bytes; the result is malloc'd with room for both parts.
    unsafe {
        let g = &mut *op.cast::<Grow<'_>>();
        let old = vsiz as usize;
        if !fits_cap(g.cap, old, g.suffix.len()) {
            g.skipped = true;
            return ptr::null_mut();
        }
        let n = old + g.suffix.len();
        let p = libc::malloc(n.max(1)).cast::<u8>();
        if p.is_null() {
            return ptr::null_mut();
        }
        ptr::copy_nonoverlapping(vbuf.cast::<u8>(), p, old);
        ptr::copy_nonoverlapping(g.suffix.as_ptr(), p.add(old), g.suffix.len());
        *sp = n as c_int;
        p.cast::<c_void>()
    }
}

impl TcSession {
    /// The B+ tree, or the refusal of a verb that needs key order.
    fn tree(&self, verb: &str) -> EngineResult<*mut TCBDB> {
        match self.h.db {
            Db::Tree(db) => Ok(db),
            Db::Hash(_) => Err(EngineError::other(format!(
                "tokyocabinet: {verb} needs key order, which type=hash does not keep; use type=btree"
            ))),
        }
    }

    /// Jumps the cursor to `lo` and copies the record there; false past the end.
    fn seek(&mut self, lo: &[u8]) -> EngineResult<bool> {
        // SAFETY: the session's cursor on the live tree.
        let ok = unsafe { tcbdbcurjump(self.cursor, c(lo), len(lo)) };
        if !self.h.db.found(ok, "cursor jump")? {
            return Ok(false);
        }
        self.record()
    }

    /// Copies the cursor's record into the session's buffers; false past the end.
    fn record(&mut self) -> EngineResult<bool> {
        // SAFETY: the session's cursor and buffers.
        let ok = unsafe { tcbdbcurrec(self.cursor, self.kx, self.vx) };
        self.h.db.found(ok, "cursor read")
    }

    fn next(&mut self) -> EngineResult<bool> {
        // SAFETY: the session's cursor.
        let ok = unsafe { tcbdbcurnext(self.cursor) };
        Ok(self.h.db.found(ok, "cursor next")? && self.record()?)
    }
}

impl Session for TcSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        // SAFETY: pointers and lengths of live slices.
        let ok = unsafe {
            match self.h.db {
                Db::Tree(db) => tcbdbput(db, c(key), len(key), c(val), len(val)),
                Db::Hash(db) => tchdbput(db, c(key), len(key), c(val), len(val)),
            }
        };
        if ok { Ok(()) } else { Err(self.h.db.err("put")) }
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        let mut size: c_int = 0;
        // SAFETY: the result is NULL or a malloc'd copy of `size` bytes, freed below.
        unsafe {
            let p = match self.h.db {
                Db::Tree(db) => tcbdbget(db, c(key), len(key), &mut size),
                Db::Hash(db) => tchdbget(db, c(key), len(key), &mut size),
            };
            if !self.h.db.found(!p.is_null(), "get")? {
                return Ok(false);
            }
            out.set(std::slice::from_raw_parts(p.cast::<u8>(), size as usize));
            tcfree(p);
        }
        Ok(true)
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        // SAFETY: pointer and length of a live slice.
        let ok = unsafe {
            match self.h.db {
                Db::Tree(db) => tcbdbout(db, c(key), len(key)),
                Db::Hash(db) => tchdbout(db, c(key), len(key)),
            }
        };
        Ok(match self.h.db.found(ok, "del")? {
            true => Existed::Yes,
            false => Existed::No,
        })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        self.tree("scan")?;
        if lo >= hi {
            return Ok(0);
        }
        let mut rows = 0usize;
        let mut more = self.seek(lo)?;
        while more {
            // SAFETY: the buffers are not written until the next cursor call.
            let (k, v) = unsafe { (xstr(self.kx), xstr(self.vx)) };
            if k >= hi {
                break;
            }
            rows += 1;
            if f(k, v) || rows == limit {
                break;
            }
            more = self.next()?;
        }
        Ok(rows)
    }

    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        self.tree("range")?;
        self.scan(lo, hi, limit, &mut |k, v| {
            out.push(k, v);
            false
        })?;
        Ok(())
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        if !fits_cap(self.h.cap, 0, suffix.len()) {
            return Ok(Appended::Skipped);
        }
        let mut g = Grow {
            suffix,
            cap: self.h.cap,
            skipped: false,
        };
        let op = (&mut g as *mut Grow<'_>).cast::<c_void>();
        // SAFETY: a missing key stores `suffix`; an existing one calls `grow` with `op`,
        // which outlives the call.
        let ok = unsafe {
            match self.h.db {
                Db::Tree(db) => tcbdbputproc(db, c(key), len(key), c(suffix), len(suffix), Some(grow), op),
                Db::Hash(db) => tchdbputproc(db, c(key), len(key), c(suffix), len(suffix), Some(grow), op),
            }
        };
        match (ok, g.skipped) {
            (true, _) => Ok(Appended::Yes),
            (false, true) => Ok(Appended::Skipped),
            (false, false) => Err(self.h.db.err("append")),
        }
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        self.tree("delete_range")?;
        if lo >= hi {
            return Ok(());
        }
        let mut more = self.seek(lo)?;
        // SAFETY: the key buffer is read before the next cursor call.
        while more && unsafe { xstr(self.kx) } < hi {
            // Removing moves the cursor to the next record.
            // SAFETY: the session's cursor, on a record.
            let ok = unsafe { tcbdbcurout(self.cursor) };
            more = self.h.db.found(ok, "cursor out")? && self.record()?;
        }
        Ok(())
    }
}

fn version() -> String {
    // SAFETY: tcversion is a static C string set at load time.
    let v = unsafe { CStr::from_ptr(tcversion) };
    format!("Tokyo Cabinet {}", v.to_string_lossy())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::open_in_tempdir;

    #[test]
    fn hash_type_keeps_the_key_verbs_and_refuses_the_range_verbs_naming_the_knob() {
        let (store, dir) = open_in_tempdir(open, &[("type", "hash"), ("bnum", "1000")], None);
        assert!(dir.path().join("kvmark.tch").exists(), "a hash database file");
        let mut s = store.session().unwrap();
        s.put(b"a", b"1").unwrap();
        assert_eq!(s.append(b"a", b"2").unwrap(), Appended::Yes);
        let mut out = ReadBuf::new();
        assert!(s.get(b"a", &mut out).unwrap());
        assert_eq!(out.as_slice(), b"12");
        assert_eq!(s.del(b"a").unwrap(), Existed::Yes);
        assert_eq!(s.del(b"a").unwrap(), Existed::No);
        let mut rows = Rows::default();
        let refusals = [
            s.range(b"a", b"z", 0, &mut rows).unwrap_err(),
            s.scan(b"a", b"z", 0, &mut |_, _| false).unwrap_err(),
            s.delete_range(b"a", b"z").unwrap_err(),
        ];
        for (e, verb) in refusals.iter().zip(["range", "scan", "delete_range"]) {
            assert!(
                e.message.starts_with(&format!("tokyocabinet: {verb} needs key order"))
                    && e.message.contains("type=hash")
                    && e.message.contains("type=btree"),
                "{e}"
            );
        }
        let stats = store.stats();
        assert!(stats.iter().any(|(k, v)| k == "buckets_used" && *v >= 0.0), "{stats:?}");
        drop(s);
        store.close().unwrap();
    }

    #[test]
    fn version_is_the_linked_librarys() {
        assert!(version().starts_with("Tokyo Cabinet 1.4."), "{}", version());
    }
}
