//! Workloads that misbehave, through the real binary: Lua code that never returns
//! (stopped by the time budget and by Ctrl-C, wherever it loops).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Output};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;

/// Writes a Lua workload `name` with `source` in a fresh directory.
fn lua(name: &str, source: &str) -> (tempfile::TempDir, String) {
    let (dir, path) = spec_file(name, source);
    (dir, path.display().to_string())
}

/// Waits at most `limit` for `child` to end (killing it and failing otherwise), and
/// returns its output with the stderr collected by `err`.
fn ended_within(mut child: Child, limit: Duration, err: Option<std::thread::JoinHandle<String>>) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            // The stderr its reader collected, when it was taken for a marker.
            let err = err.map_or_else(|| stderr(&o), |e| e.join().unwrap_or_default());
            panic!("kvmark did not end within {limit:?}\n{}\n{err}", stdout(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut o = child.wait_with_output().unwrap();
    if let Some(err) = err {
        o.stderr = err.join().unwrap().into_bytes();
    }
    o
}

/// Starts kvmark and returns it once its stderr has said `marker` (the rest of its
/// stderr is collected by the returned thread).
fn started(args: &[&str], marker: &str) -> (Child, std::thread::JoinHandle<String>) {
    let mut child = spawn_kvmark(args);
    let pipe = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(marker) => break,
            Ok(_) => {}
            Err(_) => {
                let _ = child.kill();
                panic!("kvmark never said {marker:?}");
            }
        }
    }
    (child, reader)
}

#[test]
fn the_time_budget_stops_units_that_never_return_on_every_connection() {
    // Three connections on one thread, each in a unit that never returns but waits on
    // a pretend server in every verb, so the connections take turns: the stop must
    // reach each connection's own Lua state, whichever one runs when it arrives.
    let (_dir, path) = lua(
        "verbs.lua",
        "return { run = function(ctx) while true do kv.get('x') end end }",
    );
    let child = spawn_kvmark(&[
        "--backend",
        "sim",
        "--engine-opt",
        "sim.service=100us",
        "--engine-opt",
        "sim.remote=true",
        "--secs",
        "1",
        "--threads",
        "1",
        "--connections",
        "3",
        &path,
    ]);
    let o = ended_within(child, Duration::from_secs(30), None);
    // Stopped in time; no unit finished, so the point has no figure and fails.
    assert_says(&o, 1, "phase run: no unit finished in its 1 s: a unit never returned");
    assert!(!stdout(&o).contains("INTERRUPTED"), "{}", stdout(&o));
}

#[test]
fn the_time_budget_stops_units_that_never_return() {
    // A bare loop, a loop that catches every error it can, and a loop of verbs: each
    // used to run forever past --secs.
    for (name, run) in [
        ("spin.lua", "while true do end"),
        ("pcall.lua", "while true do pcall(function() while true do end end) end"),
        ("verbs.lua", "while true do kv.get('x') end"),
    ] {
        let (_dir, path) = lua(name, &format!("return {{ run = function(ctx) {run} end }}"));
        let child = spawn_kvmark(&["--secs", "1", "--threads", "2", &path]);
        let o = ended_within(child, Duration::from_secs(30), None);
        // Stopped in time; no unit finished, so the point has no figure and fails
        // (it used to exit 0 with an empty point).
        assert_says(&o, 1, "phase run: no unit finished in its 1 s: a unit never returned");
        assert!(!stdout(&o).contains("INTERRUPTED"), "{name}: {}", stdout(&o));
    }
    // A unit that takes a while but returns is a result, not a failure. Its 0.15 s are
    // of CPU time (os.clock), and the first unit must end inside the budget, so the
    // budget leaves room for a loaded machine to run the worker 13 times slower.
    let (_dir, path) = lua(
        "slow.lua",
        "return { run = function(ctx) local t = os.clock() while os.clock() - t < 0.15 do end end }",
    );
    let o = ended_within(
        spawn_kvmark(&["--secs", "2", "--threads", "1", &path]),
        Duration::from_secs(30),
        None,
    );
    assert_exit(&o, 0);
}

#[test]
fn load_secs_stops_lua_that_never_returns_at_top_level_and_in_load() {
    let spin = "while true do end";
    // The top level runs while the file is read: a bad workload file, nothing runs.
    let (_dir, top) = lua("top.lua", &format!("{spin}\nreturn {{ run = function(ctx) end }}"));
    let o = ended_within(
        spawn_kvmark(&["--secs", "1", "--load-secs", "1", &top]),
        Duration::from_secs(30),
        None,
    );
    assert_says(
        &o,
        2,
        "top.lua: the file's top level did not return within --load-secs 1",
    );
    // A load() that never returns fails its point, on every thread.
    let (_dir, load) = lua(
        "load.lua",
        &format!("return {{ load = function(ctx) {spin} end, run = function(ctx) end }}"),
    );
    let o = ended_within(
        spawn_kvmark(&["--secs", "1", "--load-secs", "1", "--threads", "2", &load]),
        Duration::from_secs(30),
        None,
    );
    assert_says(&o, 1, "load() did not return within --load-secs 1 (an endless loop?)");
    // 0 is no limit, not no time: the same load runs on until Ctrl-C.
    let (_dir, spinning) = lua(
        "spinning.lua",
        &format!(
            "return {{ load = function(ctx) io.stderr:write('spinning\\n') {spin} end, run = function(ctx) end }}"
        ),
    );
    let (mut child, err) = started(&["--load-secs", "0", "--ops", "10", &spinning], "spinning");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "kvmark ended with --load-secs 0");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_exit(&ended_within(child, Duration::from_secs(30), Some(err)), 130);
    // A negative limit is refused.
    assert_says(
        &kvmark(&["--load-secs", "-1", &top]),
        2,
        "--load-secs -1: give a number of seconds",
    );
}

#[test]
fn ctrl_c_stops_lua_that_never_returns_at_top_level_in_load_and_in_run() {
    let spin = "io.stderr:write('spinning\\n') while true do end";
    for (name, source) in [
        ("top.lua", format!("{spin}\nreturn {{ run = function(ctx) end }}")),
        (
            "load.lua",
            format!("return {{ load = function(ctx) {spin} end, run = function(ctx) end }}"),
        ),
        ("run.lua", format!("return {{ run = function(ctx) {spin} end }}")),
    ] {
        let (_dir, path) = lua(name, &source);
        let (child, err) = started(&["--ops", "100", "--threads", "2", &path], "spinning");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ended_within(child, Duration::from_secs(30), Some(err))
        }))
        .unwrap_or_else(|e| panic!("{name}: {}", e.downcast_ref::<String>().cloned().unwrap_or_default()));
        assert_exit(&o, 130);
    }
}

/// Asserts that `o` exited with `code` and said `says` (on either stream).
fn assert_says(o: &Output, code: i32, says: &str) {
    assert_exit(o, code);
    let all = format!("{}{}", stdout(o), stderr(o));
    assert!(all.contains(says), "expected {says:?} in:\n{all}");
}

/// Runs a workload whose `run` body is `run`, for a few units on one thread.
fn run_body(name: &str, run: &str) -> Output {
    let (_dir, path) = lua(name, &format!("return {{ run = function(ctx) {run} end }}"));
    kvmark(&["--ops", "3", &path])
}

#[test]
fn lua_running_out_of_memory_fails_the_point_naming_the_file() {
    // Each of 64 threads' states may hold 1/128 of the machine's memory, so a 2 GB
    // string is refused before it is allocated (on machines up to 256 GB): a Lua error
    // naming the file, where an allocation failure used to abort the whole process
    // with no report.
    let (_dir, path) = lua(
        "hog.lua",
        "return { run = function(ctx) local s = string.rep('x', (1 << 31) - 64) end }",
    );
    let o = kvmark(&["--ops", "64", "--threads", "64", &path]);
    assert_says(&o, 1, "hog.lua: the workload's Lua state reached its memory limit");
}

#[test]
fn lua_running_out_of_memory_under_ulimit_fails_the_point_instead_of_aborting() {
    // Under `ulimit -v 2 GB` a 400 MB string used to abort the process (the system
    // refused the allocation before the limit, set from the machine's memory, did).
    let (_dir, path) = lua(
        "big.lua",
        "return { run = function(ctx) local s = string.rep('x', 400 * 1024 * 1024) end }",
    );
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kvmark"));
    cmd.args(["--ops", "3", &path]);
    // SAFETY: setrlimit is async-signal-safe, as pre_exec requires.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    assert_says(&o, 1, "big.lua: the workload's Lua state reached its memory limit");
}

#[test]
fn os_exit_fails_the_point_instead_of_ending_kvmark() {
    assert_says(
        &run_body("exit.lua", "os.exit(3)"),
        1,
        "os.exit is not available to workloads",
    );
}

#[test]
fn binary_chunks_are_refused_everywhere_lua_loads_code() {
    // Bytecode, whole or corrupted, from load: refused before the interpreter reads it.
    for run in [
        "assert(load(string.dump(function() return 1 end)))()",
        "assert(load(string.dump(function() return 1 end):sub(1, 30) .. ('\\255'):rep(40)))()",
        "assert(load(string.dump(function() return 1 end), 'x', 'b'))()",
    ] {
        assert_says(&run_body("bytecode.lua", run), 1, "attempt to load a binary chunk");
    }
    // A workload file that is bytecode, and a module that is.
    let dir = tempfile::tempdir().unwrap();
    let luac = b"\x1bLua\x54\x00\x19\x93\r\n\x1a\n";
    std::fs::write(dir.path().join("compiled.lua"), luac).unwrap();
    std::fs::write(dir.path().join("mod.lua"), luac).unwrap();
    std::fs::write(
        dir.path().join("uses.lua"),
        "require('mod')\nreturn { run = function() end }",
    )
    .unwrap();
    for file in ["compiled.lua", "uses.lua"] {
        let o = kvmark(&["--ops", "3", &dir.path().join(file).display().to_string()]);
        assert_says(&o, 2, "attempt to load a binary chunk");
    }
}

#[test]
fn workloads_cannot_reach_files_commands_or_c_modules() {
    let (_dir, path) = lua(
        "reach.lua",
        "assert(io.open == nil and io.popen == nil and io.lines == nil and io.output == nil)\n\
         assert(os.execute == nil and os.remove == nil and os.rename == nil and os.tmpname == nil)\n\
         assert(require('io').open == nil and require('os').execute == nil)\n\
         assert(package.loadlib == nil and package.cpath == '')\n\
         assert(not pcall(require, 'lfs'))\n\
         -- debug reaches other functions' locals and upvalues and replaces hooks.\n\
         assert(debug == nil and package.loaded.debug == nil and not pcall(require, 'debug'))\n\
         -- What stays: output to the terminal, time, the environment.\n\
         assert(os.time() and os.clock() and os.getenv('HOME'))\n\
         io.stderr:write('sandboxed\\n')\n\
         return { run = function() end }",
    );
    assert_says(&kvmark(&["--ops", "3", &path]), 0, "sandboxed");
}

#[test]
fn kill_9_halfway_through_a_grid_leaves_every_finished_point_readable() {
    // Three points of 2 s each (long, so a kill that a loaded machine delivers late
    // still lands in the second), with a timeline; killed once the first has been
    // reported. Every report file must then be whole as of that point: results.json a
    // valid document marked incomplete, points.tsv whole rows, the finished point's
    // histogram log under its name (the interrupted one only under a temporary name),
    // and `kvmark plot` reads the directory and says the run did not finish.
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().to_str().unwrap();
    let child = spawn_kvmark(&[
        "--backend",
        "sim",
        "--threads",
        "1,2,3",
        "--secs",
        "2",
        "--timeline",
        "0.1",
        "--report-dir",
        dir,
        &bundled("mixed.lua"),
    ]);
    let bundle = || {
        std::fs::read_dir(parent.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.is_dir())
    };
    // The sinks take a finished point one after another: wait for the last of them.
    wait_for("the first finished point in results.json and hdr/", || {
        bundle().is_some_and(|b| {
            std::fs::read_to_string(b.join("results.json")).is_ok_and(|t| t.contains("\"threads\": 1"))
                && b.join("hdr/001-mixed-sim-t1-b1.hlog").is_file()
        })
    });
    let o = signal(child, libc::SIGKILL);
    assert_eq!(o.status.code(), None, "killed");
    let b = bundle().unwrap();

    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(b.join("results.json")).unwrap())
        .expect("results.json is a whole document");
    assert_eq!(doc["summary"]["complete"], false, "{}", doc["summary"]);
    let finished = doc["points"].as_array().unwrap().len();
    assert!((1..3).contains(&finished), "{finished} points");

    let tsv = std::fs::read_to_string(b.join("points.tsv")).unwrap();
    assert!(tsv.ends_with('\n'), "whole rows only");
    let header_fields = tsv.lines().next().unwrap().split('\t').count();
    assert!(tsv.lines().all(|l| l.split('\t').count() == header_fields), "{tsv}");
    let timeline = std::fs::read_to_string(b.join("timeline.tsv")).unwrap();
    assert!(timeline.ends_with('\n'), "whole timeline rows only");

    let logs: Vec<String> = std::fs::read_dir(b.join("hdr"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let named = logs.iter().filter(|n| n.ends_with(".hlog")).count();
    assert_eq!(named, finished, "one named log per finished point: {logs:?}");
    assert!(
        logs.iter().all(|n| n.ends_with(".hlog") || n.ends_with(".partial")),
        "{logs:?}"
    );

    let out = parent.path().join("figs");
    let o = kvmark(&["plot", b.to_str().unwrap(), "--out", out.to_str().unwrap(), "--html"]);
    // Plotted, and exit 1 as for any input that is not whole, saying why.
    assert_exit(&o, 1);
    let said = stderr(&o);
    assert!(
        said.contains("the run did not finish") && said.contains("wrote"),
        "{said}"
    );
    assert!(
        out.join("report.html").is_file(),
        "the HTML report of the finished points"
    );
}
