//! The global `kv` table: Lua's view of [`Kv`], written against the Lua C API.
//!
//! These functions are the harness's hot path, so they skip mlua's general callback
//! machinery: each verb is a light C function (no closure, no upvalue) that finds the
//! worker's [`Bridge`] in the state's extra space (see [`bridge_of`]), a pointer read
//! where an upvalue costs a Lua API call. Arguments are borrowed straight from the Lua
//! stack (no copy, one API call per string); results are pushed after the engine call
//! has been timed.
//!
//! Lua errors unwind with longjmp, so a function raises only after every Rust value
//! with a destructor is gone (see [`raise`]); errors inside a scan callback are
//! caught with `lua_pcall` and re-raised once the engine's scan has returned.

use std::cell::{Cell, UnsafeCell};
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mlua::ffi::{self, lua_State};

use super::iter::IterCount;
use crate::engine::{Appended, EngineError, Existed};
use crate::kv::Kv;
use crate::kv::pace::StopSignal;

/// Per-worker state reached from the kv functions.
pub(crate) struct Bridge {
    /// True while verbs must not run: while the file itself loads, while another verb
    /// is running (a kv call from inside a kv.scan callback), or between calls.
    locked: Cell<bool>,
    /// The count behind `ctx.iter`, kept by the driver.
    iter: IterCount,
    /// The run's abort flag (Ctrl-C), read by the stop hook ([`super::halt`]) without
    /// touching the verb set, which a verb may hold while a scan callback runs Lua.
    abort: Arc<AtomicBool>,
    /// The current step's stop, for the same hook; set only while no Lua code runs.
    stop: UnsafeCell<Option<StopSignal>>,
    state: UnsafeCell<BridgeState>,
}

pub(crate) struct BridgeState {
    pub(crate) kv: Kv,
    // Borrowed from Lua strings for the duration of one call, then cleared.
    keys: Vec<&'static [u8]>,
    pairs: Vec<(&'static [u8], &'static [u8])>,
}

impl Bridge {
    pub(crate) fn new(kv: Kv) -> Self {
        Bridge {
            locked: Cell::new(true),
            iter: IterCount::default(),
            abort: Arc::clone(kv.abort_flag()),
            stop: UnsafeCell::new(None),
            state: UnsafeCell::new(BridgeState {
                kv,
                keys: Vec::new(),
                pairs: Vec::new(),
            }),
        }
    }

    /// Allows or forbids kv calls (allowed only inside load() and run()).
    pub(crate) fn set_open(&self, open: bool) {
        self.locked.set(!open);
    }

    /// The count behind `ctx.iter`.
    pub(super) fn iter_count(&self) -> &IterCount {
        &self.iter
    }

    /// Stops this thread's Lua code when `stop` is raised (None: only on abort).
    pub(crate) fn set_stop(&mut self, stop: Option<StopSignal>) {
        *self.stop.get_mut() = stop;
    }

    /// True when Lua code of this thread must stop: the run is being abandoned or the
    /// current step must stop.
    pub(crate) fn halting(&self) -> bool {
        // SAFETY: `stop` is written only through `&mut self`, never while Lua runs.
        self.abort.load(Ordering::Relaxed) || unsafe { &*self.stop.get() }.as_ref().is_some_and(StopSignal::raised)
    }

    /// The verb set. Only valid while no kv function is running.
    pub(crate) fn kv_mut(&mut self) -> &mut Kv {
        &mut self.state.get_mut().kv
    }

    pub(crate) fn into_kv(self) -> Kv {
        self.state.into_inner().kv
    }

    /// The boundary before a unit ([`Kv::begin_unit`]): false when the unit must not
    /// run because the step is stopping. Only called between verbs (from the driver).
    #[inline]
    pub(crate) fn begin_unit(&self) -> Result<bool, String> {
        // SAFETY: no verb is running (the driver calls this between units), so nothing
        // else borrows the state.
        let state = unsafe { &mut *self.state.get() };
        if let Some(go) = state.kv.try_begin_unit() {
            return Ok(go);
        }
        self.locked.set(true);
        let result = catch_unwind(AssertUnwindSafe(|| state.kv.begin_unit()));
        self.locked.set(false);
        result.map_err(|panic| format!("internal error at a unit boundary: {}", panic_text(&panic)))
    }
}

/// Why a verb stops with a Lua error.
pub(super) enum Raise {
    /// A message, prefixed with the caller's file and line.
    Msg(String),
    /// An error value already on top of the stack (from a scan callback).
    Top,
}

type VerbResult = Result<c_int, Raise>;

/// Installs the global `kv` table into `l`, every verb bound to `bridge`.
///
/// # Safety
/// `bridge` must outlive the Lua state.
pub(crate) unsafe fn install(l: *mut lua_State, bridge: *const Bridge) {
    let verbs: [(&CStr, ffi::lua_CFunction); 12] = [
        (c"put", kv_put),
        (c"get", kv_get),
        (c"del", kv_del),
        (c"range", kv_range),
        (c"scan", kv_scan),
        (c"mget", kv_mget),
        (c"mput", kv_mput),
        (c"mdel", kv_mdel),
        (c"append", kv_append),
        (c"delete_range", kv_delete_range),
        (c"expire_after", kv_expire_after),
        (c"value_size", kv_value_size),
    ];
    unsafe {
        // The main thread's extra space first: every thread Lua creates from now on
        // (coroutine.create) starts with a copy of it.
        ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, ffi::LUA_RIDX_MAINTHREAD);
        let main = ffi::lua_tothread(l, -1);
        ffi::lua_pop(l, 1);
        for thread in [main, l] {
            ffi::lua_getextraspace(thread)
                .cast::<*const Bridge>()
                .write_unaligned(bridge);
        }
        ffi::lua_createtable(l, 0, verbs.len() as c_int);
        for (name, f) in verbs {
            ffi::lua_pushcfunction(l, f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        ffi::lua_setglobal(l, c"kv".as_ptr());
    }
}

/// The bridge of the state `l` runs in, as [`install`] left it in the extra space.
///
/// # Safety
/// `l` must be the state [`install`] ran on or a thread created after it (only those
/// can reach the verbs: mlua's own threads made before it never run Lua code), and the
/// bridge must still be live (it outlives the state).
#[inline(always)]
pub(super) unsafe fn bridge_of<'a>(l: *mut lua_State) -> &'a Bridge {
    // SAFETY: see above; `install` wrote a valid pointer there, which Lua copies into
    // every later thread and never touches otherwise.
    unsafe { &*ffi::lua_getextraspace(l).cast::<*const Bridge>().read_unaligned() }
}

/// Raises `msg` as a Lua error at the caller's position. The message is copied onto
/// the Lua stack and dropped before the longjmp.
pub(super) unsafe fn raise(l: *mut lua_State, why: Raise) -> ! {
    unsafe {
        if let Raise::Msg(msg) = why {
            ffi::luaL_where(l, 1);
            ffi::lua_pushlstring(l, msg.as_ptr().cast(), msg.len());
            drop(msg);
            ffi::lua_concat(l, 2);
        }
        ffi::lua_error(l)
    }
}

/// Runs one verb: checks the lock, catches panics, converts failures to Lua errors.
#[inline(always)]
unsafe fn verb(l: *mut lua_State, name: &'static str, f: impl FnOnce(&mut BridgeState) -> VerbResult) -> c_int {
    let outcome = unsafe {
        let bridge = bridge_of(l);
        if bridge.locked.get() {
            Err(Raise::Msg(format!(
                "kv.{name} can only be called from load() or run(), and not from inside a kv.scan callback"
            )))
        } else {
            bridge.locked.set(true);
            let state = &mut *bridge.state.get();
            let result = if state.kv.aborted() {
                Err(Raise::Msg("interrupted".to_string()))
            } else {
                match catch_unwind(AssertUnwindSafe(|| f(state))) {
                    Ok(r) => r,
                    Err(panic) => Err(Raise::Msg(format!(
                        "internal error in kv.{name}: {}",
                        panic_text(&panic)
                    ))),
                }
            };
            bridge.locked.set(false);
            result
        }
    };
    match outcome {
        Ok(n) => n,
        Err(why) => unsafe { raise(l, why) },
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

fn type_name(l: *mut lua_State, idx: c_int) -> String {
    unsafe {
        let t = ffi::lua_type(l, idx);
        CStr::from_ptr(ffi::lua_typename(l, t)).to_string_lossy().into_owned()
    }
}

/// Argument `idx` as bytes, borrowed from the Lua stack for the duration of the call.
/// Numbers are accepted and converted as Lua's own string functions do.
///
/// One API call: `lua_tolstring` itself answers NULL for anything but a string or a
/// number, so the type is looked at only to word the error (half the cost of a null
/// unit's key went to asking for the type first, measured with bench/callgrind.sh).
#[inline(always)]
unsafe fn arg_bytes<'a>(l: *mut lua_State, idx: c_int, verb: &str, what: &str) -> Result<&'a [u8], Raise> {
    unsafe {
        let mut len = 0usize;
        let ptr = ffi::lua_tolstring(l, idx, &mut len);
        if ptr.is_null() {
            return Err(not_a_string(l, idx, verb, what));
        }
        Ok(std::slice::from_raw_parts(ptr.cast(), len))
    }
}

#[cold]
#[inline(never)]
fn not_a_string(l: *mut lua_State, idx: c_int, verb: &str, what: &str) -> Raise {
    Raise::Msg(format!(
        "bad argument #{idx} to 'kv.{verb}' ({what} must be a string, got {})",
        type_name(l, idx)
    ))
}

/// Optional row limit: absent, nil or 0 means no limit.
unsafe fn arg_limit(l: *mut lua_State, idx: c_int, verb: &str) -> Result<usize, Raise> {
    unsafe {
        if ffi::lua_isnoneornil(l, idx) != 0 {
            return Ok(0);
        }
        let mut isnum = 0;
        let n = ffi::lua_tointegerx(l, idx, &mut isnum);
        if isnum == 0 || n < 0 {
            return Err(Raise::Msg(format!(
                "bad argument #{idx} to 'kv.{verb}' (limit must be a non-negative integer, got {})",
                type_name(l, idx)
            )));
        }
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }
}

unsafe fn arg_table(l: *mut lua_State, idx: c_int, verb: &str, what: &str) -> Result<usize, Raise> {
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return Err(Raise::Msg(format!(
                "bad argument #{idx} to 'kv.{verb}' ({what} must be a table, got {})",
                type_name(l, idx)
            )));
        }
        Ok(ffi::lua_rawlen(l, idx))
    }
}

/// Reads the string at the top of the stack as `'static` bytes and pops it.
///
/// Safety: the string must stay referenced elsewhere (by a table argument) for as long
/// as the slice is used; the caller clears the slices before returning to Lua.
unsafe fn pop_table_string(l: *mut lua_State, verb: &str, what: &str, i: usize) -> Result<&'static [u8], Raise> {
    unsafe {
        if ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
            let got = type_name(l, -1);
            ffi::lua_pop(l, 1);
            return Err(Raise::Msg(format!(
                "kv.{verb}: {what} #{i} must be a string, got {got}"
            )));
        }
        let mut len = 0usize;
        let ptr = ffi::lua_tolstring(l, -1, &mut len);
        ffi::lua_pop(l, 1);
        Ok(std::slice::from_raw_parts(ptr.cast(), len))
    }
}

/// Fills `state.keys` from the array at stack index `idx`.
unsafe fn collect_keys(l: *mut lua_State, idx: c_int, verb: &str, state: &mut BridgeState) -> Result<(), Raise> {
    unsafe {
        let n = arg_table(l, idx, verb, "keys")?;
        state.keys.clear();
        for i in 1..=n {
            ffi::lua_rawgeti(l, idx, i as ffi::lua_Integer);
            let key = pop_table_string(l, verb, "key", i)?;
            state.keys.push(key);
        }
        Ok(())
    }
}

#[inline]
unsafe fn push_bytes(l: *mut lua_State, b: &[u8]) {
    unsafe {
        ffi::lua_pushlstring(l, b.as_ptr().cast(), b.len());
    }
}

/// Engine failure: returns `nil, message` (the error is already counted).
unsafe fn push_engine_error(l: *mut lua_State, e: &EngineError) -> c_int {
    unsafe {
        ffi::lua_pushnil(l);
        push_bytes(l, e.message.as_bytes());
    }
    2
}

unsafe fn push_true(l: *mut lua_State) -> c_int {
    unsafe { ffi::lua_pushboolean(l, 1) };
    1
}

unsafe extern "C-unwind" fn kv_put(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "put", |st| {
            let key = arg_bytes(l, 1, "put", "key")?;
            let val = arg_bytes(l, 2, "put", "value")?;
            Ok(match st.kv.put(key, val) {
                Ok(()) => push_true(l),
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

unsafe extern "C-unwind" fn kv_get(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "get", |st| {
            let key = arg_bytes(l, 1, "get", "key")?;
            Ok(match st.kv.get(key) {
                Ok(Some(v)) => {
                    push_bytes(l, v);
                    1
                }
                Ok(None) => {
                    ffi::lua_pushnil(l);
                    1
                }
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

unsafe extern "C-unwind" fn kv_del(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "del", |st| {
            let key = arg_bytes(l, 1, "del", "key")?;
            Ok(match st.kv.del(key) {
                Ok(Existed::Yes) => push_true(l),
                Ok(Existed::No) => {
                    ffi::lua_pushboolean(l, 0);
                    1
                }
                Ok(Existed::Unknown) => {
                    ffi::lua_pushnil(l);
                    1
                }
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

unsafe extern "C-unwind" fn kv_range(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "range", |st| {
            let lo = arg_bytes(l, 1, "range", "lo")?;
            let hi = arg_bytes(l, 2, "range", "hi")?;
            let limit = arg_limit(l, 3, "range")?;
            let rows = match st.kv.range(lo, hi, limit) {
                Ok(rows) => rows,
                Err(e) => return Ok(push_engine_error(l, &e)),
            };
            // Building the result table is outside the timed region.
            ffi::lua_createtable(l, rows.len().min(i32::MAX as usize) as c_int, 0);
            for (i, (k, v)) in rows.iter().enumerate() {
                ffi::lua_createtable(l, 0, 2);
                push_bytes(l, k);
                ffi::lua_setfield(l, -2, c"key".as_ptr());
                push_bytes(l, v);
                ffi::lua_setfield(l, -2, c"val".as_ptr());
                ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
            }
            Ok(1)
        })
    }
}

/// One scanned row, handed to [`scan_row`] through a light userdata.
struct RowRef {
    key: *const u8,
    key_len: usize,
    val: *const u8,
    val_len: usize,
}

/// Calls the user's scan callback (stack: 1 = callback, 2 = RowRef) under the
/// protection of the caller's `lua_pcall`, so even a memory error while pushing the
/// row cannot longjmp through the engine's scan.
unsafe extern "C-unwind" fn scan_row(l: *mut lua_State) -> c_int {
    unsafe {
        let row = &*(ffi::lua_touserdata(l, 2) as *const RowRef);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushlstring(l, row.key.cast(), row.key_len);
        ffi::lua_pushlstring(l, row.val.cast(), row.val_len);
        ffi::lua_call(l, 2, 1);
    }
    1
}

unsafe extern "C-unwind" fn kv_scan(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "scan", |st| {
            let lo = arg_bytes(l, 1, "scan", "lo")?;
            let hi = arg_bytes(l, 2, "scan", "hi")?;
            if ffi::lua_type(l, 3) != ffi::LUA_TFUNCTION {
                return Err(Raise::Msg(format!(
                    "bad argument #3 to 'kv.scan' (callback must be a function, got {})",
                    type_name(l, 3)
                )));
            }
            let limit = arg_limit(l, 4, "scan")?;
            if ffi::lua_checkstack(l, 8) == 0 {
                return Err(Raise::Msg("kv.scan: Lua stack overflow".to_string()));
            }
            let mut callback_failed = false;
            let mut on_row = |k: &[u8], v: &[u8]| -> bool {
                let row = RowRef {
                    key: k.as_ptr(),
                    key_len: k.len(),
                    val: v.as_ptr(),
                    val_len: v.len(),
                };
                ffi::lua_pushcfunction(l, scan_row);
                ffi::lua_pushvalue(l, 3);
                ffi::lua_pushlightuserdata(l, &row as *const RowRef as *mut c_void);
                if ffi::lua_pcall(l, 2, 1, 0) != ffi::LUA_OK {
                    // Leave the error value on the stack and stop the scan.
                    callback_failed = true;
                    return true;
                }
                let stop = ffi::lua_toboolean(l, -1) != 0;
                ffi::lua_pop(l, 1);
                stop
            };
            let result = st.kv.scan(lo, hi, limit, &mut on_row);
            if callback_failed {
                return Err(Raise::Top);
            }
            Ok(match result {
                Ok(n) => {
                    ffi::lua_pushinteger(l, n as ffi::lua_Integer);
                    1
                }
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

unsafe extern "C-unwind" fn kv_mget(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "mget", |st| {
            collect_keys(l, 1, "mget", st)?;
            let result = st.kv.mget(&st.keys);
            st.keys.clear();
            let values = match result {
                Ok(values) => values,
                Err(e) => return Ok(push_engine_error(l, &e)),
            };
            ffi::lua_createtable(l, values.len().min(i32::MAX as usize) as c_int, 0);
            for i in 0..values.len() {
                if let Some(v) = values.get(i) {
                    push_bytes(l, v);
                    ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
                }
            }
            Ok(1)
        })
    }
}

unsafe extern "C-unwind" fn kv_mput(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "mput", |st| {
            let n = arg_table(l, 1, "mput", "pairs")?;
            st.pairs.clear();
            for i in 1..=n {
                if ffi::lua_rawgeti(l, 1, i as ffi::lua_Integer) != ffi::LUA_TTABLE {
                    let got = type_name(l, -1);
                    ffi::lua_pop(l, 1);
                    return Err(Raise::Msg(format!(
                        "kv.mput: pair #{i} must be a table {{key=, val=}}, got {got}"
                    )));
                }
                ffi::lua_getfield(l, -1, c"key".as_ptr());
                let key = pop_table_string(l, "mput", "key of pair", i)?;
                ffi::lua_getfield(l, -1, c"val".as_ptr());
                let val = match pop_table_string(l, "mput", "val of pair", i) {
                    Ok(v) => v,
                    Err(e) => {
                        ffi::lua_pop(l, 1);
                        return Err(e);
                    }
                };
                ffi::lua_pop(l, 1);
                st.pairs.push((key, val));
            }
            let result = st.kv.mput(&st.pairs);
            st.pairs.clear();
            Ok(match result {
                Ok(()) => push_true(l),
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

unsafe extern "C-unwind" fn kv_mdel(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "mdel", |st| {
            collect_keys(l, 1, "mdel", st)?;
            let result = st.kv.mdel(&st.keys);
            st.keys.clear();
            Ok(match result {
                Ok(Some(n)) => {
                    ffi::lua_pushinteger(l, n as ffi::lua_Integer);
                    1
                }
                Ok(None) => {
                    ffi::lua_pushnil(l);
                    1
                }
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

unsafe extern "C-unwind" fn kv_append(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "append", |st| {
            let key = arg_bytes(l, 1, "append", "key")?;
            let suffix = arg_bytes(l, 2, "append", "bytes")?;
            Ok(match st.kv.append(key, suffix) {
                Ok(Appended::Yes) => push_true(l),
                Ok(Appended::Skipped) => {
                    ffi::lua_pushboolean(l, 0);
                    1
                }
                // A native merge applies the value cap later; knowing now takes a read.
                Ok(Appended::Unknown) => {
                    ffi::lua_pushnil(l);
                    1
                }
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

unsafe extern "C-unwind" fn kv_delete_range(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "delete_range", |st| {
            let lo = arg_bytes(l, 1, "delete_range", "lo")?;
            let hi = arg_bytes(l, 2, "delete_range", "hi")?;
            Ok(match st.kv.delete_range(lo, hi) {
                Ok(()) => push_true(l),
                Err(e) => push_engine_error(l, &e),
            })
        })
    }
}

/// kv.value_size(): a value length drawn from the epoch's value sizes (YCSB-IVS's
/// histogram field lengths), or nil outside an epoch's run phase.
unsafe extern "C-unwind" fn kv_value_size(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "value_size", |st| {
            match st.kv.value_size() {
                Some(n) => ffi::lua_pushinteger(l, n as ffi::lua_Integer),
                None => ffi::lua_pushnil(l),
            }
            Ok(1)
        })
    }
}

unsafe extern "C-unwind" fn kv_expire_after(l: *mut lua_State) -> c_int {
    unsafe {
        verb(l, "expire_after", |st| {
            let key = arg_bytes(l, 1, "expire_after", "key")?;
            let mut isnum = 0;
            let secs = ffi::lua_tonumberx(l, 2, &mut isnum);
            let after = (isnum != 0)
                .then(|| Duration::try_from_secs_f64(secs).ok())
                .flatten()
                .ok_or_else(|| {
                    Raise::Msg(format!(
                        "bad argument #2 to 'kv.expire_after' (seconds must be a non-negative number, got {})",
                        if isnum != 0 { secs.to_string() } else { type_name(l, 2) }
                    ))
                })?;
            st.kv.expire_after(key, after);
            Ok(0)
        })
    }
}
