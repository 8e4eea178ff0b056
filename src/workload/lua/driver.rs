//! The unit driver in C: runs `run(ctx)` for units `first..=last`, keeping `ctx.iter`
//! current and, in the hooked variant, calling
//! [`Kv::begin_unit`](crate::kv::Kv::begin_unit) before each one.
//!
//! Every Lua workload runs its units through it, closed loop or open, so the two
//! differ only by the hook. A Rust-to-Lua call per unit would cost more than the unit
//! itself on a fast engine, and so would a Lua-to-C call per unit from a Lua loop, so
//! this driver is a `lua_CFunction` that loops itself: per unit it sets the count
//! behind `ctx.iter` (a table store only once the workload has read it, see
//! [`super::iter`]), calls the hook and `lua_call`s `run`. Measured on the null
//! workload, it costs less than a Lua loop that stores `ctx.iter` per unit. An error in
//! `run` unwinds through it with longjmp, which is why it holds no Rust value with a
//! destructor.

use std::ffi::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Function, Lua, Table};

use super::bridge::{Bridge, Raise, raise};

/// Upvalues of the driver closure.
const UP_BRIDGE: c_int = 1;
const UP_RUN: c_int = 2;
const UP_CTX: c_int = 3;
const UP_ITER_KEY: c_int = 4;

/// Stack slots the driver copies its upvalues to (plain stack indices are cheaper for
/// the Lua API to resolve than upvalue pseudo-indices).
const RUN: c_int = 3;
const CTX: c_int = 4;
const ITER_KEY: c_int = 5;

/// Builds the driver for `run` and `ctx`, with the unit hook or without. Calling it as
/// `driver(first, last)` returns the number of units run: fewer than asked only when
/// the step is stopping.
///
/// # Safety
/// `bridge` must outlive the Lua state.
pub(super) unsafe fn build(
    lua: &Lua,
    bridge: *const Bridge,
    run: Function,
    ctx: Table,
    hooked: bool,
) -> mlua::Result<Function> {
    unsafe {
        lua.exec_raw::<Function>((run, ctx), |l| {
            // Stack: 1 = run, 2 = ctx.
            ffi::lua_pushlightuserdata(l, bridge as *mut std::ffi::c_void);
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushvalue(l, 2);
            ffi::lua_pushstring(l, c"iter".as_ptr());
            let f: ffi::lua_CFunction = if hooked { drive::<true> } else { drive::<false> };
            ffi::lua_pushcclosure(l, f, 4);
            ffi::lua_replace(l, 1);
            ffi::lua_settop(l, 1);
        })
    }
}

unsafe extern "C-unwind" fn drive<const HOOKED: bool>(l: *mut lua_State) -> c_int {
    unsafe {
        let first = ffi::lua_tointeger(l, 1);
        let last = ffi::lua_tointeger(l, 2);
        let bridge = &*(ffi::lua_touserdata(l, ffi::lua_upvalueindex(UP_BRIDGE)) as *const Bridge);
        let iter = bridge.iter_count();
        ffi::lua_settop(l, 2);
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(UP_RUN));
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(UP_CTX));
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(UP_ITER_KEY));
        let mut done: ffi::lua_Integer = 0;
        let mut i = first;
        while i <= last {
            iter.current.set(i);
            if iter.stored.get() {
                // Measured: cheaper than lua_setfield, which looks the name up first.
                ffi::lua_pushvalue(l, ITER_KEY);
                ffi::lua_pushinteger(l, i);
                ffi::lua_rawset(l, CTX);
            }
            if HOOKED {
                match bridge.begin_unit() {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(msg) => raise(l, Raise::Msg(msg)),
                }
            }
            ffi::lua_pushvalue(l, RUN);
            ffi::lua_pushvalue(l, CTX);
            ffi::lua_call(l, 1, 0);
            done += 1;
            i += 1;
        }
        ffi::lua_pushinteger(l, done);
        1
    }
}
