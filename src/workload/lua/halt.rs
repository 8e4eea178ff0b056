//! Stopping Lua code that never returns: a unit stuck in `while true do end`, a load()
//! or a file's top level that loops, or a loop of kv verbs past the step's end.
//!
//! An always-on instruction-count hook would do it, but in Lua 5.4 any hook makes the
//! interpreter trap on every instruction: measured on the null unit, +320 instructions
//! (+43%) whatever the count (see docs/benchmarks-history.md, "Stopping Lua"). So the hook is set
//! only when needed, the way Lua's own interpreter stops a script on Ctrl-C: a signal
//! handler on the thread running Lua sets a count hook of 1 on the state that thread
//! is running ([`lua_sethook`](ffi::lua_sethook) is safe to call asynchronously, see
//! its comment in ldebug.c). The hook then raises "interrupted" at every instruction
//! while its worker must stop (so a `pcall` in the workload cannot swallow it), and
//! removes itself as soon as it need not.
//!
//! Who sends the signal: the crew's lead, to a worker still running a step a while
//! after the step was told to stop (its deadline passed, Ctrl-C, another thread
//! failed), with [`nudge`]; and Ctrl-C or SIGTERM itself, which lands on some thread
//! of the process (while a workload file is first read, the main thread, the only
//! one).
//!
//! Known gap: the hook is set on the thread's main Lua state, so a coroutine that
//! loops without yielding is stopped only by a second Ctrl-C (which exits at once).

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use mlua::ffi::{self, lua_Debug, lua_State};

use super::bridge::{Bridge, Raise, raise};
use crate::engine::inflight;

/// The signal the lead sends a worker stuck in Lua. SIGURG is ignored by default, so
/// one arriving before the handler is set (or in a process that never sets it) is
/// harmless, and nothing else in kvmark or its engines uses it.
const NUDGE: c_int = libc::SIGURG;

/// Registry key of the bridge that a state's hook checks.
static BRIDGE_KEY: u8 = 0;

/// The Lua state this thread (or, with `--connections`, its running connection) is
/// running code of, or null: kept in [`inflight::connection_local`], which follows a
/// connection across its suspensions, so a signal never reaches the state of a
/// connection that has finished.
fn running() -> *mut lua_State {
    inflight::connection_local(Cell::get) as *mut lua_State
}

fn set_running(l: *mut lua_State) -> *mut lua_State {
    inflight::connection_local(|c| c.replace(l as usize)) as *mut lua_State
}

/// Registers the handler that sets the hook for `signal` (the nudge is registered
/// once, on first use of a Lua state; the app adds Ctrl-C and SIGTERM).
pub fn stop_lua_on(signal: c_int) -> std::io::Result<()> {
    inflight::on_nudge(hook);
    // SAFETY: the action only reads a thread-local and calls lua_sethook, both
    // async-signal-safe (see the module comment).
    unsafe { signal_hook::low_level::register(signal, set_hook_here) }.map(drop)
}

fn set_hook_here() {
    // Connections of this thread that are not running now take it when they resume.
    inflight::nudged();
    hook(running() as usize);
}

/// Sets the stopping hook on the state `l` (a [`connection_local`] word), if any: the
/// state this thread is executing, or that of a suspended connection, which the hook
/// stops when it resumes (or leaves alone, removing itself, if its step need not stop).
///
/// [`connection_local`]: inflight::connection_local
fn hook(l: usize) {
    let l = l as *mut lua_State;
    if !l.is_null() {
        // SAFETY: `l` is a live state of this thread: the one executing (see
        // `Running`) or one of a suspended connection, whose word is cleared when it
        // stops running Lua.
        unsafe { ffi::lua_sethook(l, Some(halt_hook), ffi::LUA_MASKCOUNT, 1) };
    }
}

/// Asks the thread `pthread` to stop the Lua code it runs, if any, at its next
/// instruction (a no-op for a thread running no Lua, or whose step need not stop).
pub fn nudge(pthread: libc::pthread_t) {
    static NUDGE_HANDLER: Once = Once::new();
    NUDGE_HANDLER.call_once(|| {
        if let Err(e) = stop_lua_on(NUDGE) {
            eprintln!("kvmark: warning: cannot install the handler that stops Lua code past a deadline: {e}");
        }
    });
    // SAFETY: the thread has not been joined (the crew joins its threads only after
    // its lead is done), so its id is valid.
    unsafe { libc::pthread_kill(pthread, NUDGE) };
}

/// This thread's id, for [`nudge`].
pub fn this_thread() -> libc::pthread_t {
    // SAFETY: no preconditions.
    unsafe { libc::pthread_self() }
}

/// Points the hook of `l` at `bridge`.
///
/// # Safety
/// `bridge` must outlive the state.
pub(super) unsafe fn attach(l: *mut lua_State, bridge: *const Bridge) {
    unsafe {
        ffi::lua_pushlightuserdata(l, bridge as *mut _);
        ffi::lua_rawsetp(l, ffi::LUA_REGISTRYINDEX, &BRIDGE_KEY as *const u8 as *const _);
    }
}

/// Marks this thread as running code of the state `l` while it lives.
pub(super) struct Running(*mut lua_State);

impl Running {
    pub(super) fn enter(l: *mut lua_State) -> Self {
        Running(set_running(l))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        set_running(self.0);
    }
}

unsafe extern "C-unwind" fn halt_hook(l: *mut lua_State, _ar: *mut lua_Debug) {
    unsafe {
        ffi::lua_rawgetp(l, ffi::LUA_REGISTRYINDEX, &BRIDGE_KEY as *const u8 as *const _);
        let bridge = ffi::lua_touserdata(l, -1) as *const Bridge;
        ffi::lua_pop(l, 1);
        if !bridge.is_null() && (*bridge).halting() {
            // The hook stays at every instruction, so the error escapes any pcall.
            raise(l, Raise::Msg("interrupted".to_string()));
        }
        // A nudge that came late, or a step that has ended: back to full speed.
        ffi::lua_sethook(l, None, 0, 0);
    }
}

/// How often a [`Watchdog`] looks at its clock and the abort flag, and nudges again once
/// its time is up: the first nudge may land while the thread runs no Lua (inside a C
/// library call), which sets no hook.
const RENUDGE: Duration = Duration::from_millis(100);

/// Stops the Lua code of the thread that starts it once `limit` (if any) has passed,
/// raising `expired` (to 1, so a [`StopSignal`](crate::kv::pace::StopSignal) on step 0
/// of it is raised), or once `abort` is set: nudges the thread until dropped. Ctrl-C
/// lands on any thread of the process that does not block it, this watcher's own
/// included, where it sets no hook; the watcher passes it on.
pub struct Watchdog {
    /// Dropping it ends the watch.
    done: Option<mpsc::Sender<()>>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Watches the calling thread; fails when the watcher thread cannot start.
    pub fn start(limit: Option<Duration>, expired: Arc<AtomicUsize>, abort: Arc<AtomicBool>) -> std::io::Result<Self> {
        let (done, wait) = mpsc::channel::<()>();
        let target = this_thread();
        // A small stack of its own: it only waits and signals (and RUST_MIN_STACK, which
        // sizes other threads, does not apply).
        let watcher = std::thread::Builder::new()
            .name("lua-watchdog".into())
            .stack_size(64 << 10)
            .spawn(move || {
                let deadline = limit.map(|l| Instant::now() + l);
                // The target is alive until the Watchdog is dropped, which waits for this
                // loop to end (a dropped sender disconnects the channel).
                while wait.recv_timeout(RENUDGE) == Err(RecvTimeoutError::Timeout) {
                    let late = deadline.is_some_and(|d| Instant::now() >= d);
                    if late {
                        expired.store(1, Ordering::Relaxed);
                    }
                    if late || abort.load(Ordering::Relaxed) {
                        nudge(target);
                    }
                }
            });
        Ok(Watchdog {
            done: Some(done),
            watcher: Some(watcher?),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.done.take());
        if let Some(w) = self.watcher.take() {
            // Err only if the watcher panicked; it only waits and signals, and the
            // watch is over either way.
            let _ = w.join();
        }
    }
}
