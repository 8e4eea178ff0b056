//! Config files: the round trip through --save-config and --config, the command line
//! over the file for every kind of value, and errors that name the file and line.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;

/// `key = value` pairs of a config file, per section, in order.
fn sections(path: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name.to_string();
            continue;
        }
        let (k, v) = line.split_once('=').unwrap();
        out.entry(current.clone())
            .or_default()
            .push((k.trim().to_string(), v.trim().to_string()));
    }
    out
}

fn get<'a>(s: &'a BTreeMap<String, Vec<(String, String)>>, section: &str, key: &str) -> Vec<&'a str> {
    s.get(section)
        .map(|e| e.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect())
        .unwrap_or_default()
}

/// (threads, op, count) of every tsv row: the grid and its operation counts.
fn grid_counts(tsv: &Path) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(tsv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (t, op, count) = (col("threads"), col("op"), col("count"));
    lines
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (c[t].to_string(), c[op].to_string(), c[count].to_string())
        })
        .collect()
}

#[test]
fn a_saved_config_replays_the_same_grid_and_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cnf = d.join("run.cnf");
    let first = d.join("first.tsv");
    let o = kvmark(&[
        "--ops",
        "3000",
        "--items",
        "700",
        "--threads",
        "1,2",
        "--seed",
        "7",
        "--save-config",
        cnf.to_str().unwrap(),
        "--report",
        &format!("console,tsv:{}", first.display()),
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("saved this run's config to"), "{}", stderr(&o));
    let saved = sections(&cnf);
    assert_eq!(get(&saved, "bench", "seed"), vec!["7"]);
    assert_eq!(get(&saved, "bench", "threads"), vec!["1,2"]);
    let wl = get(&saved, "bench", "workload");
    assert!(wl.len() == 1 && Path::new(wl[0]).is_absolute(), "{wl:?}");

    // Replayed from another directory, with only the sink changed.
    let second = d.join("second.tsv");
    let again = kvmark_in(
        d,
        &[
            "--config",
            cnf.to_str().unwrap(),
            "--report",
            &format!("console,tsv:{}", second.display()),
        ],
    );
    assert_exit(&again, 0);
    let (a, b) = (grid_counts(&first), grid_counts(&second));
    assert_eq!(a.len(), 8, "two points of four operation kinds: {a:?}");
    assert_eq!(a, b, "same grid, same seeds, same operation counts");
    let header = |out: &str| out.lines().next().unwrap().to_string();
    assert_eq!(header(&stdout(&o)), header(&stdout(&again)));

    // The comparison can fail: another seed draws other operations.
    let third = d.join("third.tsv");
    let other = kvmark(&[
        "--config",
        cnf.to_str().unwrap(),
        "--seed",
        "8",
        "--report",
        &format!("tsv:{}", third.display()),
    ]);
    assert_exit(&other, 0);
    assert_ne!(grid_counts(&third), a);
}

#[test]
fn every_kind_of_value_on_the_command_line_overrides_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (data_a, data_b) = (d.join("data-a"), d.join("data-b"));
    std::fs::create_dir_all(&data_a).unwrap();
    std::fs::create_dir_all(&data_b).unwrap();
    let cnf = d.join("file.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[bench]\n\
             workload = {batch}\n\
             workload = {ctx}\n\
             secs = 30 ; a bound\n\
             threads = 1,2\n\
             repeat = 3\n\
             users = 11\n\
             seed = 5\n\
             seed_once = true\n\
             keep_data = false\n\
             settle = true\n\
             auto_plot = true\n\
             data_dir = {a}\n\
             timeline = 1\n\
             probe = none\n\
             report_dir = {rd}\n",
            batch = workload("batchcount.lua"),
            ctx = workload("ctx.lua"),
            a = data_a.display(),
            rd = d.join("never").display(),
        ),
    )
    .unwrap();
    let eff = d.join("effective.cnf");
    let o = kvmark(&[
        "--config",
        cnf.to_str().unwrap(),
        "--ops",
        "40",
        "--threads",
        "3",
        "--users",
        "12",
        "--no-seed-once",
        "--keep-data",
        "--no-auto-plot",
        "--data-dir",
        data_b.to_str().unwrap(),
        "--timeline",
        "0.5",
        "--probe",
        "build",
        "--no-report-dir",
        "--report",
        "console,timeline:-",
        "--save-config",
        eff.to_str().unwrap(),
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    let s = sections(&eff);
    let one = |key: &str| get(&s, "bench", key).join("|");
    // A repeatable value: the command line's list replaces the file's.
    assert_eq!(get(&s, "bench", "workload"), vec![workload("ctx.lua").as_str()]);
    // Integers, lists, floats, booleans, paths, probe lists; a bound on the command
    // line replaces the file's bound.
    assert_eq!(one("ops"), "40");
    assert_eq!(one("secs"), "");
    assert_eq!(one("threads"), "3");
    assert_eq!(one("users"), "12");
    assert_eq!(one("seed_once"), "false");
    assert_eq!(one("keep_data"), "true");
    assert_eq!(one("settle"), "true", "from the file");
    assert_eq!(one("auto_plot"), "false", "--no-auto-plot switches the file's off");
    assert_eq!(one("data_dir"), data_b.display().to_string());
    assert_eq!(one("timeline"), "0.5");
    assert_eq!(one("probe"), "build");
    assert_eq!(one("report_dir"), "", "--no-report-dir switches the file's off");
    // What the command line did not name comes from the file.
    assert_eq!(one("repeat"), "3");
    assert_eq!(one("seed"), "5");
    // And the run used the effective values.
    let out = stdout(&o);
    assert!(
        out.starts_with("kvmark 0.1.0: 1 workload(s), engine=skiplist seed=5 repeat=3 ops=40 users=12"),
        "{out}"
    );
    assert!(out.contains("threads: 3 "), "{out}");
    assert!(!out.contains("seed-once"), "{out}");
    assert!(
        out.contains("[probe: build]") && !out.contains("[probe: system]"),
        "{out}"
    );
    assert!(!d.join("never").exists());

    // The other way round, the file's booleans and bound hold when the command line
    // is silent.
    let o = kvmark(&[
        "--config",
        cnf.to_str().unwrap(),
        "--secs",
        "0.3",
        "--no-report-dir",
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("seed-once"), "{out}");
    assert!(out.contains("secs=0.3"), "{out}");
}

#[test]
fn engine_sections_merge_with_engine_opt_flags() {
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("e.cnf");
    std::fs::write(
        &cnf,
        "[bench]\nops = 5\nbackend = sim\n\n[sim]\nservice = 1us # inline\nstall_every = 2s\n",
    )
    .unwrap();
    let eff = dir.path().join("eff.cnf");
    let o = kvmark(&[
        "--config",
        cnf.to_str().unwrap(),
        "--engine-opt",
        "sim.stall_every=3s",
        "--engine-opt",
        "sim.stall=1ms",
        "--save-config",
        eff.to_str().unwrap(),
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    let s = sections(&eff);
    assert_eq!(
        s["sim"],
        vec![
            ("service".to_string(), "1us".to_string()),
            ("stall_every".to_string(), "3s".to_string()),
            ("stall".to_string(), "1ms".to_string()),
        ]
    );
}

#[test]
fn an_engine_option_for_an_engine_not_run_is_warned_about() {
    let o = kvmark(&["--ops", "5", "--engine-opt", "sim.service=1ms", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains("warning: --engine-opt sim.service has no effect: sim is not among the engines run"),
        "{}",
        stderr(&o)
    );
    let o = kvmark(&[
        "--ops",
        "5",
        "--backend",
        "sim",
        "--engine-opt",
        "sim.service=1us",
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn a_bad_engine_option_in_a_config_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("e.cnf");
    std::fs::write(&cnf, "[bench]\nops = 5\n\n[skiplist]\ncache = 64M\n").unwrap();
    let o = kvmark(&["--config", cnf.to_str().unwrap(), &workload("ctx.lua")]);
    // Options are checked before anything runs: a usage error, traced to the line.
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("unknown option 'cache' for engine skiplist"), "{err}");
    assert!(err.contains(&format!("(cache is set at {}:5)", cnf.display())), "{err}");
}

#[test]
fn config_errors_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[bench]\nops = 100\nthreads = 1,two\n",
            3,
            "threads: 'two' is not a positive whole number",
        ),
        (
            "[bench]\n# ok\nsecs = soon\n",
            3,
            "secs: 'soon' is not a positive number of seconds",
        ),
        (
            "[bench]\nseed_once = perhaps\n",
            2,
            "seed_once: 'perhaps' is not a boolean",
        ),
        ("[bench]\nthreadz = 4\n", 2, "threadz: unknown key in [bench]"),
        (
            "[bench]\nrepeat = 2\nrepeat = 3\n",
            3,
            "repeat: set twice in [bench] (first on line 2)",
        ),
        (
            "[skiplist]\nwrite_buffer_size = 64MB\n",
            2,
            "[skiplist] write_buffer_size: '64MB': unknown size suffix 'MB'",
        ),
        ("[skiplist]\nblock_size = 4KB\n", 2, "unknown size suffix 'KB'"),
        ("[nosuchengine]\nx = 1\n", 1, "unknown section [nosuchengine]"),
        ("ops = 5\n", 1, "'ops' is outside any section"),
        ("[bench]\nops 5\n", 2, "expected KEY = VALUE"),
        ("[bench]\nreport = console,xml\n", 2, "unknown report sink 'xml'"),
    ];
    for (i, (text, line, msg)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.cnf"));
        std::fs::write(&path, text).unwrap();
        let o = kvmark(&["--config", path.to_str().unwrap(), &workload("ctx.lua")]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(&format!("{}:{line}: ", path.display())), "{text:?}: {err}");
        assert!(err.contains(msg), "{text:?}: {err}");
        assert!(stdout(&o).is_empty(), "nothing runs");
    }
    // The same rule on the command line.
    let o = kvmark(&["--engine-opt", "skiplist.size=10MB", &workload("ctx.lua")]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--engine-opt 'skiplist.size=10MB': '10MB': unknown size suffix 'MB'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_config_alone_names_the_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("w.cnf");
    std::fs::write(&cnf, format!("[bench]\nops = 3\nworkload = {}\n", workload("ctx.lua"))).unwrap();
    let o = kvmark(&["--config", cnf.to_str().unwrap()]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("=== ctx ==="), "{}", stdout(&o));
    // Without a config or a workload the error says what to give.
    let o = kvmark(&[]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("no workload file given"), "{}", stderr(&o));
}

#[test]
fn the_bundled_samples_load() {
    for entry in std::fs::read_dir(root().join("samples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("cnf") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // Samples for engines this build lacks are checked where they are compiled in.
        let engines: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix('[')?.strip_suffix(']'))
            .filter(|s| *s != "bench")
            .collect();
        if engines.iter().any(|e| kvmark::engine::find(e).is_none()) {
            continue;
        }
        // Every value is checked as a run would check it; the sample's data directory
        // is replaced by one that exists here.
        let data = tempfile::tempdir().unwrap();
        let cli = kvmark::cli::parse_from([
            "kvmark",
            "--config",
            path.to_str().unwrap(),
            "--data-dir",
            data.path().to_str().unwrap(),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        cli.run.outputs().unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        cli.run
            .into_plan()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn help_explains_the_report_and_config_flags() {
    let o = kvmark(&["--help"]);
    assert_exit(&o, 0);
    let help = stdout(&o);
    for flag in [
        "--report ",
        "--report-dir",
        "--no-report-dir",
        "--timeline",
        "--no-timeline",
        "--probe",
        "--config",
        "--save-config",
        "--auto-plot",
        "--no-auto-plot",
        "kvmark plot",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn open_loop_settings_replay_too() {
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("ol.cnf");
    let o = kvmark(&[
        "--rate",
        "1000,3000",
        "--arrival",
        "poisson",
        "--warmup",
        "0.2",
        "--secs",
        "0.6",
        "--save-config",
        cnf.to_str().unwrap(),
        &bundled("null.lua"),
    ]);
    assert_exit(&o, 0);
    let s = sections(&cnf);
    assert_eq!(get(&s, "bench", "rate"), vec!["1000,3000"]);
    assert_eq!(get(&s, "bench", "arrival"), vec!["poisson"]);
    assert_eq!(get(&s, "bench", "warmup"), vec!["0.2"]);
    let again = kvmark(&["--config", cnf.to_str().unwrap()]);
    assert_exit(&again, 0);
    let out = stdout(&again);
    assert!(out.contains("open loop: rate 1000,3000 (poisson arrivals)"), "{out}");
    assert_eq!(out.matches("rate: target ").count(), 2, "{out}");
}

#[test]
fn open_loop_and_list_values_on_the_command_line_override_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let never = d.join("never.tsv");
    let cnf = d.join("paced.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[bench]\nworkload = {}\nbackend = sim\nbatch = 2\nitems = 13\nseed_threads = 2\nsecs = 0.3\n\
             report = tsv:{}\nrate = 1000\narrival = poisson\nwarmup = 0.1\n\n[sim]\nservice = 1us\n",
            bundled("null.lua"),
            never.display()
        ),
    )
    .unwrap();
    // Every kind the first precedence test leaves out: an engine list, a batch list,
    // integers, a sink list, and the open-loop strings and numbers. An SLO search on
    // the command line replaces the file's rate.
    let eff = d.join("eff.cnf");
    let o = kvmark(&[
        "--config",
        cnf.to_str().unwrap(),
        "--backend",
        "skiplist",
        "--batch",
        "3",
        "--items",
        "14",
        "--seed-threads",
        "1",
        "--report",
        "console",
        "--slo",
        "p99<1s",
        "--slo-secs",
        "0.3",
        "--arrival",
        "constant",
        "--warmup",
        "0.05",
        "--save-config",
        eff.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let s = sections(&eff);
    let one = |key: &str| get(&s, "bench", key).join("|");
    for (key, want) in [
        ("backend", "skiplist"),
        ("batch", "3"),
        ("items", "14"),
        ("seed_threads", "1"),
        ("report", "console"),
        ("slo", "p99<1s"),
        ("slo_secs", "0.3"),
        ("arrival", "constant"),
        ("warmup", "0.05"),
        ("rate", ""),
    ] {
        assert_eq!(one(key), want, "{key}");
    }
    assert!(!s.contains_key("sim"), "options of an engine that no longer runs");
    assert!(!never.exists(), "the file's sink was replaced");
    assert!(stdout(&o).contains("slo p99<1s"), "{}", stdout(&o));

    // A rate on the command line replaces a file's SLO search, and --no-rate drops
    // whichever the file has.
    let searching = d.join("slo.cnf");
    std::fs::write(
        &searching,
        format!(
            "[bench]\nworkload = {}\nslo = p99<1ms\nslo_secs = 5\nsecs = 0.3\n",
            bundled("null.lua")
        ),
    )
    .unwrap();
    let o = kvmark(&["--config", searching.to_str().unwrap(), "--rate", "2000"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("rate: target 2000 wu/s") && !out.contains("slo "), "{out}");
    for file in [&cnf, &searching] {
        let o = kvmark(&["--config", file.to_str().unwrap(), "--no-rate", "--report", "console"]);
        assert_exit(&o, 0);
        let out = stdout(&o);
        assert!(!out.contains("rate: target") && !out.contains("response time"), "{out}");
    }
}

#[test]
fn values_the_plan_refuses_name_the_config_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[bench]\nops = 5\nthreads = 2,0\n",
            "3: threads: '0' is not a positive whole number",
        ),
        ("[bench]\nbackend = nosuch\n", "2: backend: unknown engine 'nosuch'"),
        ("[bench]\n\nrepeat = 0\n", "3: repeat: give at least 1"),
        ("[bench]\nprobe = gpu\n", "2: probe: unknown probe 'gpu'"),
    ];
    for (i, (text, msg)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.cnf"));
        std::fs::write(&path, text).unwrap();
        let o = kvmark(&["--config", path.to_str().unwrap(), &workload("ctx.lua")]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(&format!("{}:{msg}", path.display())), "{text:?}: {err}");
    }
    // Settings refused together name the lines that set them.
    let path = dir.path().join("together.cnf");
    std::fs::write(&path, "[bench]\nrate = 100\nwarmup = 3\nsecs = 1\n").unwrap();
    let o = kvmark(&["--config", path.to_str().unwrap(), &workload("ctx.lua")]);
    assert_exit(&o, 2);
    let p = path.display();
    assert!(
        stderr(&o).contains(&format!(
            "--warmup 3 is not shorter than --secs 1: nothing would be measured \
             (warmup is set at {p}:3; secs is set at {p}:4)"
        )),
        "{}",
        stderr(&o)
    );
    // A value the command line replaces is the command line's to check.
    let o = kvmark(&["--config", path.to_str().unwrap(), "--secs", "-1", &workload("ctx.lua")]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("error: --secs -1: give a positive number"),
        "{}",
        stderr(&o)
    );
}
