//! The core: the kv verb contract, ctx, budgets, the grid, seeds, errors and exits,
//! each checked by running the real binary.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn every_verb_keeps_its_contract() {
    let o = kvmark(&["--ops", "1", &workload("contract.lua")]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("contract ok"), "{}", stderr(&o));
    // Each verb was timed into its own histogram.
    let out = stdout(&o);
    for op in [
        "put",
        "get",
        "del",
        "range",
        "scan",
        "mget",
        "mput",
        "mdel",
        "append",
        "delete_range",
    ] {
        assert!(op_count(&out, op).unwrap_or(0) > 0, "no {op} row in\n{out}");
    }
}

#[test]
fn a_lua_error_names_file_line_and_point_and_the_run_goes_on() {
    let o = kvmark(&["--ops", "10", "--threads", "1,2", &workload("fail_at.lua")]);
    assert_exit(&o, 1);
    let out = stdout(&o);
    assert!(out.contains("FAILED: fail_at skiplist t1 b1: "), "{out}");
    assert!(
        out.contains("fail_at.lua:5: deliberate failure"),
        "file and line missing:\n{out}"
    );
    // The next point still ran and succeeded.
    let rows = summary_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(rows[0].last().unwrap(), "failed");
    assert_eq!(rows[1].last().unwrap(), "ok");
    assert!(stderr(&o).contains("1 of 2 point(s) failed"), "{}", stderr(&o));
}

#[test]
fn ctx_fields_and_iter_counting() {
    let o = kvmark(&[
        "--ops",
        "5",
        "--users",
        "7",
        "--items",
        "9",
        "--seed",
        "42",
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("load thread=0 threads=1 iter=1 batch=1"), "{err}");
    // Every state (the one that reads the file's table, the loader's, the worker's)
    // runs the generational collector.
    assert!(err.matches("gc=generational").count() >= 2, "{err}");
    assert!(!err.contains("gc=incremental"), "{err}");
    let iters: Vec<&str> = err.lines().filter(|l| l.starts_with("run ")).collect();
    assert_eq!(iters.len(), 5, "{err}");
    for (i, line) in iters.iter().enumerate() {
        assert!(
            line.starts_with(&format!(
                "run thread=0 threads=1 iter={} users=7 items=9 ops=5 seed=42 batch=1",
                i + 1
            )),
            "{line}"
        );
    }
}

#[test]
fn ctx_iter_is_current_however_and_whenever_it_is_read() {
    // ctx.iter becomes a real field only once a unit looks at it (the driver counts
    // without storing until then); whichever way the first look happens, a helper
    // reading it or pairs, and in closed or open loop, every unit sees its count.
    for seed in ["1", "2"] {
        for rate in [None, Some("1e9")] {
            let mut args = vec!["--ops", "5", "--seed", seed];
            args.extend(rate.map(|r| ["--rate", r]).iter().flatten());
            let file = workload("iterlazy.lua");
            args.push(&file);
            let o = kvmark(&args);
            assert_exit(&o, 0);
            let err = stderr(&o);
            let units: Vec<&str> = err.lines().filter(|l| l.starts_with("unit ")).collect();
            let want: Vec<String> = (3..=5)
                .map(|i| format!("unit iter={i} pairs={i} raw={i} missing=nil"))
                .collect();
            assert_eq!(units, want, "seed {seed}, rate {rate:?}:\n{err}");
        }
    }
}

/// Per-thread (max iter, count of run() calls) from ctx.lua's output.
fn per_thread_iters(err: &str) -> BTreeMap<u64, (u64, u64)> {
    let mut per_thread: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for line in err.lines().filter(|l| l.starts_with("run ")) {
        let field = |name: &str| -> u64 {
            line.split_whitespace()
                .find_map(|f| f.strip_prefix(&format!("{name}=")))
                .and_then(|v| v.parse().ok())
                .unwrap()
        };
        let e = per_thread.entry(field("thread")).or_default();
        e.0 = e.0.max(field("iter"));
        e.1 += 1;
    }
    per_thread
}

#[test]
fn the_op_budget_is_split_fairly_across_threads() {
    let o = kvmark(&["--ops", "10", "--threads", "3", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    let split = per_thread_iters(&stderr(&o));
    // 10 units over 3 threads: 4, 3, 3, each counting iter from 1.
    assert_eq!(split.get(&0), Some(&(4, 4)));
    assert_eq!(split.get(&1), Some(&(3, 3)));
    assert_eq!(split.get(&2), Some(&(3, 3)));
    // Three loaders, each told its index.
    let err = stderr(&o);
    for t in 0..3 {
        assert!(err.contains(&format!("load thread={t} threads=3 iter=1")), "{err}");
    }
}

#[test]
fn threads_are_seeded_with_seed_plus_thread() {
    // The same seed gives the same random draws; thread t of seed s draws like
    // thread 0 of seed s + t.
    let draws = |seed: &str, threads: &str| -> BTreeMap<u64, Vec<String>> {
        let o = kvmark(&["--ops", "6", "--threads", threads, "--seed", seed, &workload("ctx.lua")]);
        assert_exit(&o, 0);
        let mut m: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        for line in stderr(&o).lines().filter(|l| l.starts_with("run ")) {
            let t: u64 = line.split_whitespace().nth(1).unwrap()[7..].parse().unwrap();
            m.entry(t)
                .or_default()
                .push(line.rsplit(' ').next().unwrap().to_string());
        }
        m
    };
    assert_eq!(draws("5", "2"), draws("5", "2"));
    let two = draws("5", "2");
    let shifted = draws("6", "1");
    assert_eq!(two[&1], shifted[&0][..3].to_vec());
}

#[test]
fn batches_count_one_unit_and_batch_primitive_ops() {
    let o = kvmark(&["--ops", "1000", "--batch", "8", &workload("batchcount.lua")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert_eq!(op_count(&out, "mget"), Some(500));
    assert_eq!(op_count(&out, "mput"), Some(500));
    // Two throughput lines, ops/s exactly 8 x wu/s.
    let line = out.lines().find(|l| l.contains("ops/s (")).expect("an ops/s line");
    assert!(line.contains("(8.00 ops per unit)"), "{line}");
    let rows = summary_rows(&out);
    assert!(rows.is_empty(), "one point has no summary");
}

#[test]
fn one_op_per_unit_prints_one_throughput_line() {
    let o = kvmark(&["--ops", "100", "--batch", "1", &workload("batchcount.lua")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("wu/s (1 op per unit)"), "{out}");
    assert!(!out.contains("ops/s ("), "{out}");
}

#[test]
fn the_grid_sweeps_batch_only_for_batched_workloads() {
    let o = kvmark(&[
        "--ops",
        "200",
        "--threads",
        "1,2",
        "--batch",
        "1,4",
        &workload("batchcount.lua"),
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    let rows = summary_rows(&stdout(&o));
    let cells: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r[0].clone(), r[2].clone(), r[3].clone()))
        .collect();
    let want: Vec<(String, String, String)> = [
        ("batchcount", "1", "1"),
        ("batchcount", "1", "4"),
        ("batchcount", "2", "1"),
        ("batchcount", "2", "4"),
        ("ctx", "1", "1"),
        ("ctx", "2", "1"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(cells, want);
    // Batched points name their sweep, others do not.
    assert_eq!(rows[1][4], "batch=4");
    assert_eq!(rows[4][4], "-");
}

#[test]
fn repeats_report_median_and_spread() {
    let o = kvmark(&[
        "--ops",
        "2000",
        "--repeat",
        "3",
        "--threads",
        "1,2",
        &workload("batchcount.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("(median of 3 runs)"), "{out}");
    assert!(out.contains("over 3 runs"), "{out}");
    // Latency comes from the merge of all repeats: 3 x 1000 calls per kind.
    assert_eq!(op_count(&out, "mget"), Some(3000));
    let rows = summary_rows(&out);
    assert_eq!(rows.len(), 2);
    assert!(rows[0][6].contains('-'), "min-max column: {:?}", rows[0]);
}

#[test]
fn secs_bounds_the_run_by_time() {
    let start = Instant::now();
    let o = kvmark(&["--secs", "1", "--ops", "5", &workload("slow.lua")]);
    let took = start.elapsed();
    assert_exit(&o, 0);
    let out = stdout(&o);
    // --secs clears the op count: far more than 5 units ran.
    assert!(op_count(&out, "get").unwrap() > 5, "{out}");
    assert!(out.contains("secs=1"), "{out}");
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn the_seed_phase_is_timed_and_reported() {
    let o = kvmark(&["--ops", "1000", "--items", "3000", &bundled("mixed.lua")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let seed = out.lines().find(|l| l.starts_with("seed: ")).expect("a seed line");
    assert!(seed.starts_with("seed: 3000 keys in "), "{seed}");
    assert!(seed.contains("keys/s, 1 thread"), "{seed}");
}

#[test]
fn seed_threads_sets_the_loader_count() {
    let o = kvmark(&["--ops", "2", "--seed-threads", "3", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("load thread=2 threads=3"), "{err}");
    assert!(err.contains("run thread=0 threads=1"), "{err}");
}

#[test]
fn seed_once_shares_one_store_across_points() {
    let shared = kvmark(&[
        "--ops",
        "4",
        "--threads",
        "1,2",
        "--repeat",
        "2",
        "--seed-once",
        &workload("seedonce.lua"),
    ]);
    assert_exit(&shared, 0);
    let lines: Vec<String> = stderr(&shared)
        .lines()
        .filter(|l| l.starts_with("threads="))
        .map(str::to_string)
        .collect();
    assert_eq!(
        lines,
        vec![
            "threads=1 seeded=true ran_before=false",
            "threads=1 seeded=true ran_before=true",
            "threads=2 seeded=true ran_before=true",
            "threads=2 seeded=true ran_before=true",
        ]
    );
    assert!(stdout(&shared).contains("(seeded once, shared)"));
    // Without it, every measurement gets a fresh, freshly seeded store.
    let fresh = kvmark(&[
        "--ops",
        "4",
        "--threads",
        "1,2",
        "--repeat",
        "2",
        &workload("seedonce.lua"),
    ]);
    assert_exit(&fresh, 0);
    let err = stderr(&fresh);
    assert_eq!(err.matches("seeded=true ran_before=false").count(), 4, "{err}");
}

#[test]
fn a_workload_sweep_runs_one_point_per_value() {
    let o = kvmark(&["--ops", "3", &workload("sweep.lua")]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("load size=8\nrun size=8\nload size=64\nrun size=64"),
        "{err}"
    );
    let rows = summary_rows(&stdout(&o));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][4], "size=8");
    assert_eq!(rows[1][4], "size=64");
    assert!(stdout(&o).contains("size=64 (median of 1 run)"));
}

#[test]
fn a_batch_sweep_is_overridden_by_the_batch_flag() {
    let own = kvmark(&["--ops", "10", &workload("batchsweep.lua")]);
    assert_exit(&own, 0);
    let batches: Vec<String> = summary_rows(&stdout(&own)).iter().map(|r| r[3].clone()).collect();
    assert_eq!(batches, vec!["2", "5"]);
    let flag = kvmark(&["--ops", "10", "--batch", "3", &workload("batchsweep.lua")]);
    assert_exit(&flag, 0);
    let out = stdout(&flag);
    assert!(out.contains("threads=1 batch=3"), "{out}");
    assert!(out.contains("(3.00 ops per unit)"), "{out}");
}

#[test]
fn kv_calls_inside_a_scan_callback_are_refused() {
    let o = kvmark(&["--ops", "1", &workload("scan_reenter.lua")]);
    assert_exit(&o, 1);
    let out = stdout(&o);
    assert!(out.contains("scan_reenter.lua:4:"), "{out}");
    assert!(
        out.contains("kv.del can only be called from load() or run(), and not from inside a kv.scan callback"),
        "{out}"
    );
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["no/such/file.lua"], "cannot read workload no/such/file.lua"),
        (&["--threads", "0", "x.lua"], "--threads needs positive integers"),
        (&["--backend", "nosuch", "x.lua"], "unknown engine 'nosuch'"),
        (&["--secs", "-1", "x.lua"], "--secs -1: give a positive number"),
        (&["--repeat", "0", "x.lua"], "--repeat 0"),
        (&["--engine-opt", "skiplist", "x.lua"], "expected ENGINE.KEY=VALUE"),
        (
            &["--backend", "rocksdb", "--data-dir", "/no/such/dir", "x.lua"],
            "not an existing directory",
        ),
        (&["--bogus-flag", "x.lua"], "unexpected argument '--bogus-flag'"),
        (&["README.md"], "unknown workload type '.md'"),
    ];
    for (args, msg) in cases {
        let o = kvmark(args);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(msg), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?} printed a report");
    }
}

#[test]
fn malformed_workload_files_are_usage_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("syntax.lua", "return { run = function( end }", "syntax.lua:1:"),
        ("notable.lua", "return 42", "must return a table"),
        ("norun.lua", "return { name = 'x' }", "no 'run' function"),
        (
            "badbatched.lua",
            "return { run = function() end, batched = 'yes' }",
            "'batched' must be a boolean",
        ),
        (
            "badsweep.lua",
            "return { run = function() end, sweep = { param = 'n', values = {} } }",
            "sweep.values is empty",
        ),
        (
            "toplevel.lua",
            "error('boom at load time')",
            "toplevel.lua:1: boom at load time",
        ),
    ];
    for (name, src, msg) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, src).unwrap();
        let o = kvmark(&[path.to_str().unwrap()]);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(msg), "{name}: {}", stderr(&o));
    }
}

#[test]
fn a_kv_call_at_file_load_time_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("early.lua");
    std::fs::write(&path, "kv.put('a', 'b')\nreturn { run = function() end }").unwrap();
    let o = kvmark(&[path.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("early.lua:1: kv.put can only be called from load() or run()"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_verb_arguments_raise_lua_errors_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("badarg.lua");
    std::fs::write(&path, "return { run = function()\n  kv.get(nil)\nend }").unwrap();
    let o = kvmark(&["--ops", "1", path.to_str().unwrap()]);
    assert_exit(&o, 1);
    assert!(
        stdout(&o).contains("badarg.lua:2: bad argument #1 to 'kv.get' (key must be a string, got nil)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn progress_stays_off_when_stderr_is_not_a_terminal() {
    let o = kvmark(&["--secs", "1.5", &workload("slow.lua")]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(!err.contains("wu/s"), "progress leaked into redirected stderr: {err}");
    assert!(!err.contains("seeding"), "{err}");
}

#[test]
fn help_explains_every_flag() {
    let o = kvmark(&["--help"]);
    assert_exit(&o, 0);
    let help = stdout(&o);
    for flag in [
        "--ops",
        "--secs",
        "--threads",
        "--batch",
        "--backend",
        "--repeat",
        "--users",
        "--items",
        "--seed ",
        "--seed-threads",
        "--seed-once",
        "--data-dir",
        "--keep-data",
        "--engine-opt",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn engines_lists_the_reference_engine() {
    let o = kvmark(&["engines"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("skiplist\n"), "{out}");
    assert!(out.contains("in-memory"), "{out}");
    assert!(out.contains("reports whether the key existed"), "{out}");
}

#[test]
fn ctrl_c_reports_the_point_as_interrupted_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let (tl, report) = timeline_report(dir.path());
    let child = spawn_kvmark(&[
        "--secs",
        "30",
        "--threads",
        "1,2",
        "--timeline",
        "0.1",
        "--report",
        &report,
        &workload("slow.lua"),
    ]);
    // Inside the first point's timed phase, however long a loaded machine takes to
    // start kvmark.
    wait_for("a sample of the timed phase", || timed_for(&tl, 0.0));
    let started = Instant::now();
    let o = interrupt(child);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopping took {:?}",
        started.elapsed()
    );
    assert_exit(&o, 130);
    let out = stdout(&o);
    assert!(out.contains("INTERRUPTED"), "{out}");
    // The interrupted point still reports what ran; the 2-thread point never started.
    assert!(op_count(&out, "get").unwrap_or(0) > 0, "{out}");
    // Units and operations cover the same work: the units that finished before the
    // stop are counted (one get each), so one throughput line.
    assert!(out.contains("(1 op per unit)"), "{out}");
    assert!(!out.contains("threads=2"), "{out}");
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
}

#[test]
fn progress_prints_once_a_second_on_a_terminal() {
    // `script` (util-linux, in Debian's essential bsdutils) gives kvmark a pseudo-terminal.
    let cmd = format!(
        "{} --secs 2.5 --items 2000 {} >/dev/null",
        env!("CARGO_BIN_EXE_kvmark"),
        bundled("mixed.lua")
    );
    let o = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("run script(1)");
    let tty = String::from_utf8_lossy(&o.stdout).replace('\r', "");
    let lines: Vec<&str> = tty.lines().collect();
    assert!(
        lines[0].starts_with("seeding mixed on skiplist with 1 thread ... done ("),
        "{tty}"
    );
    let ticks: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("mixed skiplist t1 b1 "))
        .collect();
    assert_eq!(ticks.len(), 2, "one line per second of a 2.5 s point: {tty}");
    // The first line comes a second in; a loaded machine may wake the printer late,
    // by anything short of the second line's time.
    let first: f64 = ticks[0]
        .split_whitespace()
        .find_map(|w| w.strip_suffix("/2.5s"))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no elapsed/total field: {tty}"));
    assert!((1.0..2.0).contains(&first) && ticks[0].ends_with(" wu/s"), "{tty}");

    let cmd = format!(
        "{} --ops 40000000 --threads 2 {} >/dev/null",
        env!("CARGO_BIN_EXE_kvmark"),
        bundled("null.lua")
    );
    let o = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .expect("run script(1)");
    let tty = String::from_utf8_lossy(&o.stdout).replace('\r', "");
    // Count-bounded (40 M units take well over a second): elapsed, rate and percent done.
    let line = tty
        .lines()
        .find(|l| l.starts_with("null skiplist t2 b1 "))
        .expect("a progress line");
    assert!(
        line.contains(" wu/s ") && line.contains("% (") && line.ends_with("/40000000)"),
        "{line}"
    );
}

#[test]
fn a_workload_can_require_modules_next_to_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("helpers.lua"),
        "return { key = function(i) return 'k' .. i end }",
    )
    .unwrap();
    let main = dir.path().join("main.lua");
    std::fs::write(
        &main,
        "local h = require('helpers')\nreturn { run = function(ctx) kv.put(h.key(ctx.iter), 'v') end }",
    )
    .unwrap();
    // Run from elsewhere: the module is found next to the file, not in the working directory.
    let o = kvmark_in(std::path::Path::new("/"), &["--ops", "5", main.to_str().unwrap()]);
    assert_exit(&o, 0);
    assert_eq!(op_count(&stdout(&o), "put"), Some(5));
}

#[test]
fn ctrl_c_while_seeding_reports_the_point_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("longload.lua");
    std::fs::write(
        &script,
        "local function load(ctx)\n  for i = 1, 1e12 do kv.put(\"k\" .. (i % 1000), \"v\") end\nend\n\
         return { load = load, run = function(ctx) kv.get(\"k1\") end }\n",
    )
    .unwrap();
    let (tl, report) = timeline_report(dir.path());
    let child = spawn_kvmark(&[
        "--secs",
        "1",
        "--threads",
        "1,2",
        "--timeline",
        "0.1",
        "--report",
        &report,
        script.to_str().unwrap(),
    ]);
    // Inside the seeding, however long a loaded machine takes to start kvmark.
    wait_for("a sample of the seeding", || {
        std::fs::read_to_string(&tl).is_ok_and(|t| t.lines().any(|l| l.split('\t').nth(5) == Some("seed")))
    });
    let o = interrupt(child);
    assert_exit(&o, 130);
    let out = stdout(&o);
    assert!(out.contains("INTERRUPTED"), "the seeding point says so:\n{out}");
    assert!(!out.contains("threads=2"), "{out}");
}

#[test]
fn a_lua_error_in_load_names_file_line_and_point_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("badload.lua");
    std::fs::write(
        &script,
        "local function load(ctx)\n  kv.put(\"a\", \"b\")\n  if ctx.threads == 1 then error(\"no seed for one\") end\nend\n\
         return { load = load, run = function(ctx) kv.get(\"a\") end }\n",
    )
    .unwrap();
    let o = kvmark(&["--ops", "10", "--threads", "1,2", script.to_str().unwrap()]);
    assert_exit(&o, 1);
    let out = stdout(&o);
    assert!(
        out.contains("FAILED: badload skiplist t1 b1: seeding failed: ")
            && out.contains("badload.lua:3: no seed for one"),
        "{out}"
    );
    let rows = summary_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(rows[0].last().unwrap(), "failed");
    assert_eq!(rows[1].last().unwrap(), "ok");
}

/// Runs the null workload with each of `refused` and checks it is a usage error
/// whose message says `why`, never a panic.
fn usage_errors(refused: &[&[&str]], why: &[&str]) {
    for args in refused {
        let null = bundled("null.lua");
        let o = kvmark(&[*args, &[null.as_str()]].concat());
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(why.iter().all(|w| err.contains(w)), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn absurd_durations_are_usage_errors_not_panics() {
    // Seconds past a year (or NaN) would overflow the clock's durations: each is
    // refused by the flag parser, naming the flag, instead of panicking and hanging.
    usage_errors(
        &[
            &["--secs", "1e300"],
            &["--secs", "1e19"],
            &["--secs", "nan"],
            &["--slo", "get:p99<1ms", "--slo-secs", "1e300"],
            &["--warmup", "1e300", "--secs", "1e301"],
        ],
        &["up to a year"],
    );
}

#[test]
fn absurd_thread_counts_are_usage_errors_naming_the_bound() {
    usage_errors(
        &[
            &["--threads", "100000"],
            &["--threads", "1,4097"],
            &["--seed-threads", "1000000"],
        ],
        &["too many threads", "at most 4096"],
    );
    // The bound itself passes the flag parser (the plan's check of --ops comes later;
    // running 4096 threads would take a minute on a small machine).
    let o = kvmark(&["--ops", "0", "--threads", "4096", &bundled("null.lua")]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--ops 0"), "{}", stderr(&o));
}

#[test]
fn a_worker_thread_that_cannot_start_fails_the_point_with_a_message() {
    // A stack no machine can map makes every thread spawn fail, as running out of
    // threads or memory does: the point fails with the system's reason, no panic, and
    // the run ends instead of waiting for threads that never started.
    let o = kvmark_env(
        &[("RUST_MIN_STACK", "1099511627776")],
        &["--ops", "10", "--threads", "2", &bundled("null.lua")],
    );
    assert_exit(&o, 1);
    let out = stdout(&o);
    assert!(out.contains("cannot start worker thread 1 of 2: "), "{out}");
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

#[test]
fn verbs_work_from_coroutines_on_every_thread() {
    // The verbs find their worker's store through the Lua state's extra space, which
    // every coroutine inherits; two threads check that each finds its own.
    let o = kvmark(&["--ops", "200", "--threads", "2", &workload("coroutine.lua")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert_eq!(op_count(&out, "del"), Some(200), "{out}");
}
