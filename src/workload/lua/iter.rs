//! `ctx.iter`, kept current without a table store per unit for workloads that never
//! read it.
//!
//! Storing a field through the Lua C API costs some 100 instructions, an eighth of a
//! null unit, and most workloads never look at `ctx.iter`. So `ctx` starts without an
//! `iter` field, and its metatable answers for it: the first time a workload reads
//! `ctx.iter`, assigns it, or walks `ctx` with `pairs`, the field is created with the
//! driver's count and the driver stores it before every unit from then on, exactly as
//! a plain field. Every read sees the documented value, the 1-based count of this
//! worker's `run` calls; only `rawget(ctx, "iter")` and `next(ctx)` before the first
//! such access see no field. The metatable is protected, so a workload cannot replace
//! it and lose the field.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use mlua::ffi::{self, lua_State};

/// Upvalues of the metamethods.
const UP_COUNT: c_int = 1;
const UP_KEY: c_int = 2;

/// The driver's count of units, shared with `ctx`'s metamethods.
#[derive(Debug, Default)]
pub(super) struct IterCount {
    /// The current unit's `ctx.iter`.
    pub(super) current: Cell<i64>,
    /// True once `ctx.iter` is a real field that the driver keeps current.
    pub(super) stored: Cell<bool>,
}

/// Gives the table at `ctx` (an absolute stack index) the metatable that answers for
/// `iter` from `count`, and leaves the stack as it was.
///
/// # Safety
/// `count` must outlive the Lua state; `ctx` must be a table without an `iter` field.
pub(super) unsafe fn install(l: *mut lua_State, ctx: c_int, count: *const IterCount) {
    let methods: [(&std::ffi::CStr, ffi::lua_CFunction); 3] = [
        (c"__index", ctx_index),
        (c"__newindex", ctx_newindex),
        (c"__pairs", ctx_pairs),
    ];
    unsafe {
        ffi::lua_createtable(l, 0, 4);
        for (name, f) in methods {
            ffi::lua_pushlightuserdata(l, count as *mut c_void);
            ffi::lua_pushstring(l, c"iter".as_ptr());
            ffi::lua_pushcclosure(l, f, 2);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        ffi::lua_pushstring(l, c"kvmark ctx".as_ptr());
        ffi::lua_setfield(l, -2, c"__metatable".as_ptr());
        ffi::lua_setmetatable(l, ctx);
    }
}

/// The count behind the running metamethod.
unsafe fn count<'a>(l: *mut lua_State) -> &'a IterCount {
    unsafe { &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(UP_COUNT)) as *const IterCount) }
}

/// True when the value at `idx` is the string "iter".
unsafe fn is_iter(l: *mut lua_State, idx: c_int) -> bool {
    unsafe { ffi::lua_rawequal(l, idx, ffi::lua_upvalueindex(UP_KEY)) != 0 }
}

/// Makes `ctx.iter` (ctx at stack index 1) a real field, kept current from now on.
unsafe fn store(l: *mut lua_State) {
    unsafe {
        let count = count(l);
        count.stored.set(true);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(UP_KEY));
        ffi::lua_pushinteger(l, count.current.get());
        ffi::lua_rawset(l, 1);
    }
}

/// `ctx[k]` for a key `ctx` lacks: `iter` (which becomes a field), else nil.
unsafe extern "C-unwind" fn ctx_index(l: *mut lua_State) -> c_int {
    unsafe {
        if is_iter(l, 2) {
            store(l);
            ffi::lua_pushinteger(l, count(l).current.get());
        } else {
            ffi::lua_pushnil(l);
        }
        1
    }
}

/// `ctx[k] = v` for a key `ctx` lacks: a plain store; assigning `iter` makes it a
/// field the driver keeps current, as it always was.
unsafe extern "C-unwind" fn ctx_newindex(l: *mut lua_State) -> c_int {
    unsafe {
        if is_iter(l, 2) {
            count(l).stored.set(true);
        }
        ffi::lua_settop(l, 3);
        ffi::lua_rawset(l, 1);
        0
    }
}

/// `pairs(ctx)`: every field, `iter` included.
unsafe extern "C-unwind" fn ctx_pairs(l: *mut lua_State) -> c_int {
    unsafe {
        ffi::lua_settop(l, 1);
        store(l);
        ffi::lua_pushcfunction(l, ctx_next);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushnil(l);
        3
    }
}

/// The `pairs` iterator: `next` on the raw table.
unsafe extern "C-unwind" fn ctx_next(l: *mut lua_State) -> c_int {
    unsafe {
        ffi::lua_settop(l, 2);
        if ffi::lua_next(l, 1) != 0 {
            2
        } else {
            ffi::lua_pushnil(l);
            1
        }
    }
}
