//! Lua workloads, keybench's API: a file returns
//! `{ name =, load = optional, run =, batched = optional, sweep = optional }`.
//!
//! Every worker and every loader thread gets its own Lua 5.4 state, seeded with
//! seed + thread. Units run in chunks through a driver loop written in C ([`driver`]),
//! so the Rust-to-Lua call cost is paid once per chunk rather than once per unit.
//! Paced runs, and workloads that give keys a lifetime, run its variant that calls a
//! hook before every unit.

mod bridge;
mod driver;
pub mod halt;
mod iter;

use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use mlua::prelude::{LuaGcGenParams, LuaGcMode};
use mlua::{Function, Lua, Table, Value};

use self::bridge::Bridge;
use super::epochs::EpochLayout;
use super::{PhasePlan, Program, Sweep, SweepValue, ThreadCtx, Workload, WorkloadError};
use crate::engine::{EngineOptions, OpenRequest, skiplist};
use crate::kv::Kv;
use crate::kv::pace::StopSignal;

/// Top-level fields a workload table may have.
const KNOWN_FIELDS: [&str; 5] = ["name", "load", "run", "batched", "sweep"];

/// A Lua workload file, validated once and shared by all threads.
#[derive(Debug)]
pub struct LuaWorkload {
    path: PathBuf,
    chunk_name: String,
    source: Vec<u8>,
    name: String,
    batched: bool,
    has_load: bool,
    sweep: Option<Sweep>,
}

impl LuaWorkload {
    /// Reads and validates `path`: it must evaluate to a table with a `run` function.
    /// `abort` (Ctrl-C) and `limit` (`--load-secs`) stop a top level that does not
    /// return.
    pub fn open(path: &Path, abort: &Arc<AtomicBool>, limit: Option<Duration>) -> Result<Self, WorkloadError> {
        let source = std::fs::read(path)
            .map_err(|e| WorkloadError::Invalid(format!("cannot read workload {}: {e}", path.display())))?;
        let mut wl = LuaWorkload {
            path: path.to_path_buf(),
            chunk_name: format!("@{}", path.display()),
            source,
            name: String::new(),
            batched: false,
            has_load: false,
            sweep: None,
        };
        // Evaluate it once in a throwaway state (with a real kv table, since files
        // commonly cache `local get = kv.get`) to read its declarations.
        let opts = EngineOptions::new();
        let store =
            (skiplist::INFO.open)(&OpenRequest::memory(&opts)).map_err(|e| WorkloadError::Invalid(e.message))?;
        let session = store.session().map_err(|e| WorkloadError::Invalid(e.message))?;
        let kv = Kv::new(session, quanta::Clock::new(), Arc::clone(abort));
        let probe = {
            let expired = Arc::new(AtomicUsize::new(0));
            // Watched even without a limit: Ctrl-C may land on another thread.
            let _watchdog = match halt::Watchdog::start(limit, Arc::clone(&expired), Arc::clone(abort)) {
                Err(e) => {
                    eprintln!(
                        "kvmark: warning: {}: cannot watch the file's top level for --load-secs and Ctrl-C \
                         ({e}); if it never returns, a second Ctrl-C ends kvmark",
                        path.display()
                    );
                    None
                }
                Ok(w) => Some(w),
            };
            let probe = LuaState::new(&wl, kv, 1, Some(StopSignal::new(Arc::clone(&expired), 0)));
            if expired.load(Ordering::Relaxed) > 0 && probe.is_err() {
                return Err(WorkloadError::Invalid(format!(
                    "{}: the file's top level did not return within --load-secs {} (an endless loop?); give a \
                     larger --load-secs, or 0 for no limit, if it needs longer",
                    path.display(),
                    limit.unwrap_or_default().as_secs_f64()
                )));
            }
            probe?
        };
        let table = probe.table();
        let invalid = |msg: String| WorkloadError::Invalid(format!("{}: {msg}", path.display()));

        for pair in table.pairs::<Value, Value>() {
            let (key, _) = pair.map_err(|e| invalid(e.to_string()))?;
            let known = matches!(&key, Value::String(s) if KNOWN_FIELDS.contains(&&*s.to_string_lossy()));
            if !known {
                eprintln!(
                    "warning: {}: ignoring unknown field {} in the workload table (known: {})",
                    path.display(),
                    display_value(&key),
                    KNOWN_FIELDS.join(", ")
                );
            }
        }
        wl.name = match table.get::<Value>("name").map_err(|e| invalid(e.to_string()))? {
            Value::Nil => path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            Value::String(s) => s.to_string_lossy(),
            other => {
                return Err(invalid(format!("'name' must be a string, got {}", other.type_name())));
            }
        };
        match table.get::<Value>("run").map_err(|e| invalid(e.to_string()))? {
            Value::Function(_) => {}
            Value::Nil => return Err(invalid("the returned table has no 'run' function".into())),
            other => {
                return Err(invalid(format!("'run' must be a function, got {}", other.type_name())));
            }
        }
        wl.has_load = match table.get::<Value>("load").map_err(|e| invalid(e.to_string()))? {
            Value::Function(_) => true,
            Value::Nil => false,
            other => {
                return Err(invalid(format!("'load' must be a function, got {}", other.type_name())));
            }
        };
        wl.batched = match table.get::<Value>("batched").map_err(|e| invalid(e.to_string()))? {
            Value::Nil => false,
            Value::Boolean(b) => b,
            other => {
                return Err(invalid(format!(
                    "'batched' must be a boolean, got {}",
                    other.type_name()
                )));
            }
        };
        wl.sweep = match table.get::<Value>("sweep").map_err(|e| invalid(e.to_string()))? {
            Value::Nil => None,
            Value::Table(t) => Some(parse_sweep(&t).map_err(invalid)?),
            other => {
                return Err(invalid(format!("'sweep' must be a table, got {}", other.type_name())));
            }
        };
        Ok(wl)
    }
}

fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.to_string_lossy()),
        Value::Integer(i) => format!("[{i}]"),
        other => format!("of type {}", other.type_name()),
    }
}

fn parse_sweep(t: &Table) -> Result<Sweep, String> {
    let param = match t.get::<Value>("param").map_err(|e| e.to_string())? {
        Value::String(s) if !s.as_bytes().is_empty() => s.to_string_lossy(),
        other => {
            return Err(format!(
                "sweep.param must be a non-empty string, got {}",
                other.type_name()
            ));
        }
    };
    let values = match t.get::<Value>("values").map_err(|e| e.to_string())? {
        Value::Table(vals) => {
            let mut out = Vec::new();
            for v in vals.sequence_values::<Value>() {
                out.push(match v.map_err(|e| e.to_string())? {
                    Value::Integer(i) => SweepValue::Int(i),
                    Value::Number(n) if n.fract() == 0.0 && n.abs() < 9e15 => SweepValue::Int(n as i64),
                    Value::Number(n) => SweepValue::Float(n),
                    Value::String(s) => SweepValue::Str(s.to_string_lossy()),
                    other => {
                        return Err(format!(
                            "sweep.values may hold numbers and strings, got {}",
                            other.type_name()
                        ));
                    }
                });
            }
            if out.is_empty() {
                return Err("sweep.values is empty".into());
            }
            out
        }
        other => {
            return Err(format!("sweep.values must be an array, got {}", other.type_name()));
        }
    };
    // keybench reads a missing seed_per_value as true: a sweep value usually shapes
    // the dataset (valsize.lua's value size), so it gets its own seeded store.
    let seed_per_value = match t.get::<Value>("seed_per_value").map_err(|e| e.to_string())? {
        Value::Nil => true,
        Value::Boolean(b) => b,
        other => {
            return Err(format!(
                "sweep.seed_per_value must be a boolean, got {}",
                other.type_name()
            ));
        }
    };
    if param == "batch" && values.iter().any(|v| !matches!(v, SweepValue::Int(n) if *n >= 1)) {
        return Err("a sweep of 'batch' needs positive integer values".into());
    }
    Ok(Sweep {
        param,
        values,
        load_per_value: seed_per_value,
    })
}

impl Workload for LuaWorkload {
    fn name(&self) -> &str {
        &self.name
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn batched(&self) -> bool {
        self.batched
    }

    fn sweep(&self) -> Option<&Sweep> {
        self.sweep.as_ref()
    }

    fn has_load(&self) -> bool {
        self.has_load
    }

    fn epoch_layout(&self) -> Result<EpochLayout, String> {
        if !self.has_load {
            return Err(format!(
                "{}: epochs need a load() that creates the records the extend phases grow",
                self.path.display()
            ));
        }
        Ok(EpochLayout {
            load_fn: true,
            load_phases: Vec::new(),
            run_phase: 0,
        })
    }

    fn phases(&self) -> Vec<PhasePlan> {
        vec![PhasePlan {
            rate: None,
            name: "run".to_string(),
            budget: None,
        }]
    }

    fn program(&self, ctx: &ThreadCtx, kv: Kv) -> Result<Box<dyn Program>, WorkloadError> {
        let state = LuaState::new(self, kv, ctx.local_threads, None)?;
        let runtime = |e: mlua::Error| WorkloadError::Runtime(lua_error_text(&e));
        let lua = state.lua();
        let ctx_table = lua.create_table().map_err(runtime)?;
        let p = &ctx.params;
        let set = |k: &str, v: Value| ctx_table.set(k, v).map_err(runtime);
        set("users", Value::Integer(p.users as i64))?;
        set("items", Value::Integer(p.items as i64))?;
        set("ops", Value::Integer(p.ops as i64))?;
        set("secs", Value::Number(p.secs))?;
        set("seed", Value::Integer(p.seed as i64))?;
        set("batch", Value::Integer(ctx.batch as i64))?;
        set("thread", Value::Integer(ctx.thread as i64))?;
        set("threads", Value::Integer(ctx.threads as i64))?;
        set("ordered", Value::Boolean(ctx.ordered))?;
        if let Some((param, value)) = &ctx.sweep {
            let v = match value {
                SweepValue::Int(i) => Value::Integer(*i),
                SweepValue::Float(f) => Value::Number(*f),
                SweepValue::Str(s) => Value::String(lua.create_string(s).map_err(runtime)?),
            };
            ctx_table.set(param.as_str(), v).map_err(runtime)?;
        }
        let seed = p.seed.wrapping_add(ctx.thread as u64) as i64;
        let randomseed: Function = lua
            .globals()
            .get::<Table>("math")
            .and_then(|m| m.get("randomseed"))
            .map_err(runtime)?;
        randomseed.call::<()>(seed).map_err(runtime)?;

        let run: Function = state.table().get("run").map_err(runtime)?;
        let load: Option<Function> = state.table().get("load").map_err(runtime)?;
        // SAFETY (all three): the bridge outlives the state (see `LuaState::close`), and
        // ctx has no `iter` field.
        let count = state.bridge().iter_count() as *const iter::IterCount;
        unsafe { lua.exec_raw::<()>(&ctx_table, |l| iter::install(l, 1, count)) }.map_err(runtime)?;
        let driver = unsafe { driver::build(lua, state.bridge_ptr(), run.clone(), ctx_table.clone(), false) }
            .map_err(runtime)?;
        let hooked =
            unsafe { driver::build(lua, state.bridge_ptr(), run, ctx_table.clone(), true) }.map_err(runtime)?;
        Ok(Box::new(LuaProgram {
            state,
            driver,
            hooked,
            load,
            ctx: ctx_table,
        }))
    }
}

/// A Lua state with the kv table installed and the workload file evaluated.
struct LuaState {
    /// None once closed. Values (tables, functions) hold only weak references, so
    /// dropping this closes the state.
    lua: Option<Lua>,
    /// What the file returned.
    table: Option<Table>,
    /// Freed after the state is closed, never before.
    bridge: Option<NonNull<Bridge>>,
    /// The raw state mlua runs functions on (where the stop hook is set).
    raw: std::cell::Cell<*mut mlua::ffi::lua_State>,
    /// The workload file, for errors that do not say where they happened.
    path: String,
    /// Bytes this state may allocate.
    memory_limit: usize,
}

impl LuaState {
    /// A state for one of `threads` threads, with its share of the memory limit;
    /// `stop` stops the file's top level (besides Ctrl-C).
    fn new(wl: &LuaWorkload, kv: Kv, threads: usize, stop: Option<StopSignal>) -> Result<Self, WorkloadError> {
        let mut bridge = Box::new(Bridge::new(kv));
        bridge.set_stop(stop);
        let bridge = NonNull::from(Box::leak(bridge));
        let mut state = LuaState {
            lua: Some(Lua::new()),
            table: None,
            bridge: Some(bridge),
            raw: std::cell::Cell::new(std::ptr::null_mut()),
            path: wl.path.display().to_string(),
            memory_limit: memory_limit(threads),
        };
        let lua = state.lua();
        let mut raw = std::ptr::null_mut();
        // Workloads make short-lived strings (keys, values) against a small live heap,
        // which the incremental collector answers with a full cycle every few dozen
        // units; the generational one collects them young. Measured in docs/benchmarks-history.md
        // (Engines, harness overhead); a workload may switch back with collectgarbage.
        lua.gc_set_mode(LuaGcMode::Generational(LuaGcGenParams::default()));
        // Past it an allocation is a Lua error naming the file, where running the
        // machine out of memory aborted the whole process without a report.
        lua.set_memory_limit(state.memory_limit)
            .map_err(|e| WorkloadError::Invalid(format!("cannot set up Lua: {e}")))?;
        lua.load(SANDBOX)
            .set_name("=kvmark sandbox")
            .set_mode(mlua::chunk::ChunkMode::Text)
            .exec()
            .map_err(|e| WorkloadError::Invalid(format!("cannot set up Lua: {e}")))?;
        // Modules next to the workload file can be `require`d.
        let dir = wl
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let set_path = lua
            .globals()
            .get::<Table>("package")
            .and_then(|pkg| {
                let old: String = pkg.get("path")?;
                pkg.set("path", format!("{}/?.lua;{old}", dir.display()))
            })
            .map_err(|e| WorkloadError::Invalid(format!("cannot set up Lua: {e}")));
        set_path?;
        // SAFETY: the bridge is freed only after the state is closed (see `close`).
        unsafe {
            lua.exec_raw::<()>((), |l| {
                bridge::install(l, bridge.as_ptr());
                halt::attach(l, bridge.as_ptr());
                raw = l;
            })
        }
        .map_err(|e| WorkloadError::Invalid(format!("cannot set up Lua: {e}")))?;
        state.raw.set(raw);
        let evaluated = {
            let _running = state.running();
            lua.load(&wl.source[..])
                .set_name(&wl.chunk_name)
                .set_mode(mlua::chunk::ChunkMode::Text)
                .eval::<Value>()
        };
        let table = match evaluated {
            Ok(Value::Table(t)) => t,
            Ok(other) => {
                return Err(WorkloadError::Invalid(format!(
                    "{}: the file must return a table {{ name =, load =, run = }}, but it returned {}",
                    wl.path.display(),
                    other.type_name()
                )));
            }
            Err(e) => return Err(WorkloadError::Invalid(state.error_text(&e))),
        };
        state.table = Some(table);
        Ok(state)
    }

    fn lua(&self) -> &Lua {
        self.lua.as_ref().expect("Lua state is open")
    }

    /// Marks this thread as running this state's code, for the stop hook.
    fn running(&self) -> halt::Running {
        halt::Running::enter(self.raw.get())
    }

    fn table(&self) -> &Table {
        self.table.as_ref().expect("workload table is loaded")
    }

    fn bridge_ptr(&self) -> *const Bridge {
        self.bridge.expect("bridge is live").as_ptr()
    }

    fn bridge(&self) -> &Bridge {
        // SAFETY: valid until `close`; shared access only touches Cell/UnsafeCell parts.
        unsafe { self.bridge.expect("bridge is live").as_ref() }
    }

    /// Calls a Lua function with kv verbs allowed for its duration.
    fn call_open<A: mlua::IntoLuaMulti, R: mlua::FromLuaMulti>(
        &self,
        f: &Function,
        args: A,
    ) -> Result<R, WorkloadError> {
        self.bridge().set_open(true);
        let result = {
            let _running = self.running();
            f.call::<R>(args)
        };
        self.bridge().set_open(false);
        result.map_err(|e| WorkloadError::Runtime(self.error_text(&e)))
    }

    /// A Lua error as text; running out of memory also names the file and the limit.
    fn error_text(&self, e: &mlua::Error) -> String {
        match e {
            mlua::Error::MemoryError(_) => format!(
                "{}: the workload's Lua state reached its memory limit of {} MiB (half of the memory \
                 kvmark could still allocate, shared by the Lua states of a point's threads)",
                self.path,
                self.memory_limit >> 20
            ),
            other => lua_error_text(other),
        }
    }

    fn kv_mut(&mut self) -> &mut Kv {
        // SAFETY: no Lua code is running (we hold &mut self), so no verb borrows it.
        unsafe { self.bridge.expect("bridge is live").as_mut().kv_mut() }
    }

    /// Closes the Lua state, then frees the bridge, returning its verb set.
    fn close(&mut self) -> Option<Kv> {
        self.table = None;
        self.lua = None;
        // SAFETY: created with Box::leak in `new`; the state that pointed at it is gone.
        self.bridge
            .take()
            .map(|b| unsafe { Box::from_raw(b.as_ptr()) }.into_kv())
    }
}

impl Drop for LuaState {
    fn drop(&mut self) {
        self.close();
    }
}

/// One thread's Lua program.
struct LuaProgram {
    state: LuaState,
    /// The C loop, for closed-loop runs.
    driver: Function,
    /// The C loop that calls `Kv::begin_unit` before each unit.
    hooked: Function,
    load: Option<Function>,
    ctx: Table,
}

impl LuaProgram {
    /// Units of the chunk starting at `first_iter` that finished: the drivers count
    /// each unit before running it, so the count names the one that was running (read
    /// from the count, not from `ctx.iter`, which a workload may have changed).
    fn units_finished(&self, first_iter: u64, n: u64) -> u64 {
        let running = self.state.bridge().iter_count().current.get();
        (running - first_iter as i64).clamp(0, n as i64) as u64
    }
}

impl Program for LuaProgram {
    fn load(&mut self) -> Result<(), WorkloadError> {
        let Some(load) = &self.load else {
            return Ok(());
        };
        let count = self.state.bridge().iter_count();
        count.current.set(1);
        if count.stored.get() {
            self.ctx
                .raw_set("iter", 1)
                .map_err(|e| WorkloadError::Runtime(lua_error_text(&e)))?;
        }
        self.state.call_open::<_, ()>(load, &self.ctx)
    }

    fn run(&mut self, _phase: usize, first_iter: u64, n: u64) -> Result<u64, WorkloadError> {
        if n == 0 {
            return Ok(0);
        }
        let range = (first_iter as i64, (first_iter + n - 1) as i64);
        let driver = if self.state.kv_mut().unit_hooks() {
            &self.hooked
        } else {
            &self.driver
        };
        match self.state.call_open::<_, i64>(driver, range) {
            // Ctrl-C stops a chunk with a Lua error from its next verb, and a stopping
            // step with one from the stop hook (see `halt`). Count the units
            // that finished before it, so an interrupted point's figures stay consistent
            // (its wu/s and ops/s cover the same units); the crew sees the interruption
            // in the abort flag.
            Err(_) if self.state.bridge().halting() => Ok(self.units_finished(first_iter, n)),
            other => other.map(|done| done as u64),
        }
    }

    fn stop_on(&mut self, stop: StopSignal) {
        // SAFETY: no Lua code is running (we hold &mut self).
        unsafe { self.state.bridge.expect("bridge is live").as_mut() }.set_stop(Some(stop));
    }

    fn kv(&mut self) -> &mut Kv {
        self.state.kv_mut()
    }

    fn finish(self: Box<Self>) -> Kv {
        let LuaProgram { mut state, .. } = *self;
        state.close().expect("state closed only once")
    }
}

/// The sandbox every state runs before the workload file.
const SANDBOX: &str = include_str!("sandbox.lua");

/// Bytes each of `threads` Lua states may allocate: half of what the process may
/// still allocate (the machine's available memory, less where a cgroup or `ulimit -v`
/// allows less) shared between them, or 1 GiB shared where none of that is known. A
/// runaway loop on every thread then meets this limit, a Lua error naming the file,
/// before the system refuses an allocation, which aborts the process (mlua's allocator
/// cannot return a failure the system gives it).
fn memory_limit(threads: usize) -> usize {
    let half = crate::probe::system::memory_headroom().map_or(1 << 30, |b| (b / 2) as usize);
    half / threads.max(1)
}

/// A Lua error as one readable message: the script's "file:line: message" followed
/// by its traceback when there is one.
pub fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::RuntimeError(msg) | mlua::Error::SyntaxError { message: msg, .. } => msg.clone(),
        mlua::Error::CallbackError { cause, traceback } => {
            format!("{}\n{traceback}", lua_error_text(cause))
        }
        mlua::Error::MemoryError(msg) => format!("out of memory: {msg}"),
        other => other.to_string(),
    }
}
