//! Many requests in flight from one worker thread (`--connections`).
//!
//! A server is benchmarked by keeping many requests outstanding from a few client
//! cores. kvmark does it without changing how workloads are written: each connection
//! of a worker thread runs the ordinary blocking worker loop (its own program, `Kv`
//! and session) on its own stack, a stackful coroutine. When a server engine's verb has
//! to wait for the network it calls [`block_on`], which, inside a connection, polls
//! the request's future and, while it is pending, suspends the connection's stack and
//! lets the thread run another connection. Lua scripts, specs and operation logs, and
//! the timing around each verb, stay exactly as they are for embedded engines.
//!
//! Each worker thread runs its connections as tasks of a current-thread tokio runtime
//! ([`run_connections`]), which also drives the sockets and timers of the server
//! clients. Outside a connection (a store opening on the main thread, the conformance
//! suite, a sampler asking for statistics) [`block_on`] runs the future on a runtime of
//! the calling thread instead, so an engine's code is the same in both places.
//!
//! Embedded engines with one connection per thread never come here: the crew runs
//! them on the plain thread path.

use std::cell::{Cell, OnceCell, RefCell};
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::{Pin, pin};
use std::ptr;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

/// Each connection's stack. Lua scripts run on it, so it is sized for the C stack Lua
/// may use (LUAI_MAXCCALLS nested calls) with room for an engine's client library;
/// pages are only committed when touched.
const CONNECTION_STACK_BYTES: usize = 1 << 20;

/// Below this much time left, a paced wait inside a connection gives the thread to
/// other connections and checks the clock again, instead of arming a timer: tokio's
/// timers tick in whole milliseconds.
const TIMER_MARGIN_NS: u64 = 1_200_000;

/// What a suspended connection needs to resume and to wait again.
struct Here {
    yielder: Cell<*const Yielder<(), ()>>,
    /// The connection's [`connection_local`] word while it is suspended.
    local: Cell<usize>,
    /// The thread's nudge count when this connection last took a nudge.
    nudges: Cell<u64>,
    /// The context of the task poll that resumed the connection.
    cx: Cell<*mut Context<'static>>,
    /// True once the connection suspended since its last [`end_turn`].
    waited: Cell<bool>,
}

thread_local! {
    /// The connection running on this thread now, or null outside connections.
    static CURRENT: Cell<*const Here> = const { Cell::new(ptr::null()) };
    /// A word that follows the running connection (see [`connection_local`]).
    static CONNECTION_LOCAL: Cell<usize> = const { Cell::new(0) };
    /// Nudges this thread received (see [`nudged`]).
    static NUDGES: Cell<u64> = const { Cell::new(0) };
    /// Work left for when every connection of the thread waits (see [`when_idle`]).
    static IDLE: RefCell<Vec<Arc<dyn Idle>>> = const { RefCell::new(Vec::new()) };
    /// The runtime [`block_on`] uses outside connections, and its [`RuntimeId`].
    static FALLBACK: OnceCell<(tokio::runtime::Runtime, RuntimeId)> = const { OnceCell::new() };
    /// The [`RuntimeId`] of the [`run_connections`] running on this thread (0: none).
    static CONNECTIONS_RUNTIME: Cell<RuntimeId> = const { Cell::new(0) };
}

/// A word of state that belongs to the running connection rather than to the thread:
/// saved when a connection suspends and restored when it resumes, so code that keeps
/// "what this thread is running" in it (the Lua state a stop signal must reach) stays
/// true while several connections take turns on one thread. On a plain thread it is
/// an ordinary thread-local. Reading it is async-signal-safe.
pub fn connection_local<R>(f: impl FnOnce(&Cell<usize>) -> R) -> R {
    CONNECTION_LOCAL.with(f)
}

/// What a nudge does to a connection's [`connection_local`] word (set once).
static ON_NUDGE: std::sync::OnceLock<fn(usize)> = std::sync::OnceLock::new();

/// Sets what [`nudged`] does to each connection of the thread: `f` gets the
/// connection's [`connection_local`] word. The first call wins.
pub fn on_nudge(f: fn(usize)) {
    let _ = ON_NUDGE.set(f);
}

/// Records that this thread was nudged (from a signal handler: async-signal-safe). A
/// signal reaches only the connection running when it lands, often none; so each
/// connection of the thread gets the nudge (the [`on_nudge`] function, with its word)
/// the next time it resumes.
pub fn nudged() {
    NUDGES.with(|n| n.set(n.get().wrapping_add(1)));
}

/// True when the calling code runs inside a connection of [`run_connections`].
pub fn in_connection() -> bool {
    !CURRENT.with(Cell::get).is_null()
}

/// Runs `fut` to completion for the calling session. Inside a connection the thread
/// runs other connections while `fut` waits; elsewhere it blocks the calling thread.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    let here = CURRENT.with(Cell::get);
    if here.is_null() {
        return FALLBACK.with(|rt| rt.get_or_init(fallback).0.block_on(fut));
    }
    // SAFETY: `here` points into the boxed state of the connection running now, which
    // outlives its coroutine; `cx` was set by the poll that resumed this connection
    // and stays valid until the coroutine suspends, which it only does below.
    let here = unsafe { &*here };
    let mut fut = pin!(fut);
    loop {
        let cx = unsafe { &mut *here.cx.get() };
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return out;
        }
        // SAFETY: the yielder belongs to this coroutine, which is running.
        unsafe { (*here.yielder.get()).suspend(()) };
    }
}

/// The waker of the connection running now, for waits that are not futures (a step
/// gate): whoever ends the wait wakes it. None outside connections.
pub fn current_waker() -> Option<Waker> {
    let here = CURRENT.with(Cell::get);
    // SAFETY: as in `block_on`.
    (!here.is_null()).then(|| unsafe { (*(*here).cx.get()).waker().clone() })
}

/// Suspends the running connection until its waker is woken (see [`current_waker`]).
/// Outside a connection it returns at once: the caller re-checks and blocks its own way.
pub fn suspend() {
    let here = CURRENT.with(Cell::get);
    if !here.is_null() {
        // SAFETY: as in `block_on`.
        unsafe { (*(*here).yielder.get()).suspend(()) };
    }
}

/// Gives the thread to the other connections that are ready, then continues. Outside a
/// connection it does nothing.
pub fn yield_now() {
    if in_connection() {
        block_on(tokio::task::yield_now());
    }
}

/// Ends a turn of the running connection (a chunk of units): gives the thread to the
/// other connections that are ready, unless this one already did by waiting since its
/// last turn (a unit that waited for the network let the others run then, so a second
/// switch per unit would only cost). Outside a connection it does nothing.
pub fn end_turn() {
    let here = CURRENT.with(Cell::get);
    if here.is_null() {
        return;
    }
    // SAFETY: as in `block_on`.
    let waited = unsafe { &(*here).waited };
    if !waited.get() {
        yield_now();
    }
    waited.set(false);
}

/// One step of a paced wait with `left_ns` to go (never longer than `max_sleep_ns`):
/// [`crate::clock::pause`] on a plain thread; inside a connection a timer for all but
/// the last [`TIMER_MARGIN_NS`], then turns given to the other connections, so the
/// thread keeps serving them while this one waits. The caller re-reads the clock.
pub fn pause(left_ns: u64, max_sleep_ns: u64) {
    if !in_connection() {
        crate::clock::pause(left_ns, max_sleep_ns);
    } else if left_ns > TIMER_MARGIN_NS {
        let ns = (left_ns - TIMER_MARGIN_NS).min(max_sleep_ns);
        block_on(tokio::time::sleep(Duration::from_nanos(ns)));
    } else {
        yield_now();
    }
}

/// Work that a connection leaves for when the thread has nothing else to run: a
/// pipelined connection's requests are written then, so the requests its sessions
/// made in one turn of the thread go out in one write.
pub trait Idle {
    /// Does the work; false when it must be called again (it registered `cx`'s waker
    /// for when it can go on, as a future would).
    fn idle(&self, cx: &mut Context<'_>) -> bool;
}

/// Leaves `work` for when every connection of the thread waits. Only inside a
/// connection (see [`in_connection`]); elsewhere the caller does the work itself.
pub fn when_idle(work: Arc<dyn Idle>) {
    IDLE.with(|l| l.borrow_mut().push(work));
}

/// Runs the work left by [`when_idle`], keeping what must be called again. The list's
/// storage is reused, so this allocates nothing once warm.
fn run_idle(cx: &mut Context<'_>) {
    let mut list = IDLE.with(|l| std::mem::take(&mut *l.borrow_mut()));
    if list.is_empty() {
        IDLE.with(|l| *l.borrow_mut() = list);
        return;
    }
    list.retain(|work| !work.idle(cx));
    IDLE.with(|l| {
        let mut now = l.borrow_mut();
        if now.is_empty() {
            std::mem::swap(&mut *now, &mut list);
        } else {
            now.append(&mut list);
        }
    });
}

/// Which runtime [`block_on`] runs futures on: a number no other runtime of the
/// process has. A connection's socket belongs to the runtime that opened it, so a
/// session checks this before it uses one (cheaper than asking tokio for its handle).
pub type RuntimeId = u64;

static NEXT_RUNTIME: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_runtime_id() -> RuntimeId {
    NEXT_RUNTIME.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn fallback() -> (tokio::runtime::Runtime, RuntimeId) {
    (new_runtime(), next_runtime_id())
}

/// The [`RuntimeId`] of the runtime a [`block_on`] called here runs on.
pub fn runtime_id() -> RuntimeId {
    if in_connection() {
        CONNECTIONS_RUNTIME.with(Cell::get)
    } else {
        FALLBACK.with(|rt| rt.get_or_init(fallback).1)
    }
}

fn new_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("kvmark: cannot start an event loop: {e}"))
}

/// One connection: a coroutine running its body on its own stack, polled as a future.
struct Connection<'a, R> {
    coroutine: ManuallyDrop<Coroutine<(), (), R, DefaultStack>>,
    here: Box<Here>,
    /// The body borrows from the caller of [`run_connections`] for `'a`.
    _borrows: PhantomData<&'a ()>,
}

impl<'a, R> Connection<'a, R> {
    fn new(body: impl FnOnce() -> R + 'a) -> std::io::Result<Self> {
        let stack = DefaultStack::new(CONNECTION_STACK_BYTES)?;
        let here = Box::new(Here {
            yielder: Cell::new(ptr::null()),
            local: Cell::new(0),
            nudges: Cell::new(0),
            cx: Cell::new(ptr::null_mut()),
            waited: Cell::new(false),
        });
        let here_ptr: *const Here = &*here;
        let run = move |yielder: &Yielder<(), ()>, ()| {
            // SAFETY: the box outlives the coroutine (see `Drop`).
            unsafe { (*here_ptr).yielder.set(yielder) };
            body()
        };
        // SAFETY: what `body` borrows lives for 'a, and the connection cannot outlive
        // 'a: `run_connections` drives every connection to its end or drops it before
        // it returns, also when it unwinds.
        let coroutine = unsafe { Coroutine::with_stack_unchecked(stack, run) };
        Ok(Connection {
            coroutine: ManuallyDrop::new(coroutine),
            here,
            _borrows: PhantomData,
        })
    }
}

impl<R> Future for Connection<'_, R> {
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.get_mut();
        // The context lives until this poll returns, which is before the connection
        // can run again: it is only read while the coroutine runs inside this call.
        this.here.cx.set(ptr::from_mut(cx).cast::<Context<'static>>());
        let outer = CURRENT.with(|c| c.replace(&*this.here));
        let outer_local = CONNECTION_LOCAL.with(|c| c.replace(this.here.local.get()));
        let nudges = NUDGES.with(Cell::get);
        if nudges != this.here.nudges.get() {
            this.here.nudges.set(nudges);
            if let Some(f) = ON_NUDGE.get() {
                f(this.here.local.get());
            }
        }
        let result = this.coroutine.resume(());
        this.here.local.set(CONNECTION_LOCAL.with(|c| c.replace(outer_local)));
        CURRENT.with(|c| c.set(outer));
        this.here.cx.set(ptr::null_mut());
        match result {
            CoroutineResult::Yield(()) => {
                this.here.waited.set(true);
                Poll::Pending
            }
            CoroutineResult::Return(out) => Poll::Ready(out),
        }
    }
}

impl<R> Drop for Connection<'_, R> {
    fn drop(&mut self) {
        if self.coroutine.started() && !self.coroutine.done() {
            // Dropped while suspended (only when the thread is already unwinding from a
            // panic): unwinding its stack would cross Lua's C frames, so the objects on
            // it are leaked instead.
            // SAFETY: nothing refers into the coroutine's stack from outside.
            unsafe { self.coroutine.force_reset() };
        }
        // SAFETY: dropped once, here.
        unsafe { ManuallyDrop::drop(&mut self.coroutine) };
    }
}

/// Runs `count` connections on the calling thread, connection `c` running `body(c)`
/// on its own stack, until every one returns. A panic in a connection unwinds out of
/// this call (the other connections are dropped first). Fails only when a stack
/// cannot be allocated.
pub fn run_connections<F>(count: usize, body: F) -> std::io::Result<()>
where
    F: Fn(usize) + Sync,
{
    let runtime = new_runtime();
    // Restored on the way out, also when a connection's panic unwinds through here.
    struct Restore(RuntimeId);
    impl Drop for Restore {
        fn drop(&mut self) {
            CONNECTIONS_RUNTIME.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CONNECTIONS_RUNTIME.with(|c| c.replace(next_runtime_id())));
    let body = &body;
    let mut connections = FuturesUnordered::new();
    for c in 0..count {
        connections.push(Connection::new(move || body(c))?);
    }
    // Whenever no connection can go on, the work they left for that moment is done
    // (requests written) before the thread waits for the network.
    runtime.block_on(std::future::poll_fn(|cx| {
        loop {
            match connections.poll_next_unpin(cx) {
                Poll::Ready(Some(())) => {}
                Poll::Ready(None) => return Poll::Ready(()),
                Poll::Pending => {
                    run_idle(cx);
                    return Poll::Pending;
                }
            }
        }
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_interleave_while_their_requests_wait() {
        // Each connection waits three times; all of them are waiting at once, so the
        // whole takes about one wait per round, not one per connection and round. The
        // waits are long beside a loaded machine's pauses, which come on top of the
        // three, while waits taken one at a time could not take less than all 24.
        const WAIT: Duration = Duration::from_millis(100);
        let order = std::sync::Mutex::new(Vec::new());
        let start = std::time::Instant::now();
        run_connections(8, |c| {
            for round in 0..3 {
                assert!(in_connection());
                block_on(tokio::time::sleep(WAIT));
                order.lock().unwrap().push((round, c));
            }
        })
        .unwrap();
        let took = start.elapsed();
        let order = order.into_inner().unwrap();
        assert_eq!(order.len(), 24);
        // Every connection finished round 0 before any finished round 1.
        assert!(order[..8].iter().all(|&(round, _)| round == 0), "{order:?}");
        assert!(took < WAIT * 8 * 3, "{took:?}: the waits did not overlap");
    }

    #[test]
    fn connections_that_never_wait_still_take_turns() {
        // Bodies that never wait: each end of a turn hands the thread to the other.
        let order = std::sync::Mutex::new(Vec::new());
        run_connections(2, |c| {
            for turn in 0..3 {
                order.lock().unwrap().push((c, turn));
                end_turn();
            }
        })
        .unwrap();
        let order = order.into_inner().unwrap();
        assert_eq!(order.len(), 6);
        // Which of two ready connections the event loop resumes first is its own
        // choice; that neither gets ahead of the other by more than a turn is the point.
        let mut done = [0i32; 2];
        for &(c, _) in &order {
            done[c] += 1;
            assert!((done[0] - done[1]).abs() <= 1, "{order:?}");
        }
    }

    #[test]
    fn idle_work_runs_once_every_connection_waits() {
        // Each connection leaves work and then waits; the work sees all of them
        // already waiting (what lets a pipe write a whole turn's requests at once).
        struct Count<'a>(&'a std::sync::atomic::AtomicUsize, std::sync::Mutex<Vec<usize>>);
        impl Idle for Count<'static> {
            fn idle(&self, _: &mut Context<'_>) -> bool {
                self.1
                    .lock()
                    .unwrap()
                    .push(self.0.load(std::sync::atomic::Ordering::SeqCst));
                true
            }
        }
        static WAITING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let work = Arc::new(Count(&WAITING, std::sync::Mutex::new(Vec::new())));
        run_connections(3, |_| {
            when_idle(work.clone());
            WAITING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            block_on(tokio::time::sleep(Duration::from_millis(5)));
        })
        .unwrap();
        assert_eq!(*work.1.lock().unwrap(), vec![3, 3, 3]);
    }

    #[test]
    fn outside_a_connection_block_on_runs_on_the_threads_own_loop() {
        assert!(!in_connection());
        assert_eq!(block_on(async { 7 }), 7);
        assert!(current_waker().is_none());
        yield_now();
        end_turn();
        suspend();
    }

    #[test]
    fn a_panic_in_a_connection_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            run_connections(3, |c| {
                block_on(tokio::task::yield_now());
                if c == 1 {
                    panic!("connection one failed");
                }
            })
        });
        let panic = r.unwrap_err();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"connection one failed"));
    }
}
