//! Reports: every sink's output parsed back and checked against the run, the live
//! timeline, histogram logs, report directories and probes, each by running the
//! real binary.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::parse::*;
use common::*;
use kvmark::metrics::format::{duration_ns, rate};
use kvmark::probe::live::SYSTEM_METRICS;
use serde_json::Value;

#[test]
fn every_sink_agrees_with_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let report = format!(
        "console:{},tsv:{},timeline:{},json:{},hdr:{}",
        d.join("c.txt").display(),
        d.join("p.tsv").display(),
        d.join("t.tsv").display(),
        d.join("r.json").display(),
        d.join("h").display()
    );
    let o = kvmark(&[
        "--ops",
        "6000",
        "--items",
        "2000",
        "--threads",
        "1,2",
        "--repeat",
        "2",
        "--timeline",
        "0.02",
        "--report",
        &report,
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 0);
    assert!(stdout(&o).is_empty(), "console went to a file, stdout stays empty");
    let console = std::fs::read_to_string(d.join("c.txt")).unwrap();
    let points = console_points(&console);
    assert_eq!(points.len(), 2, "{console}");

    // tsv: keybench's columns first, then kvmark's; one row per op per point.
    let tsv = read_tsv(&d.join("p.tsv"));
    let keybench = "workload engine threads sweep_param sweep_value op count p50_ns p99_ns p999_ns max_ns \
                    hit_rate err_rate wu_per_s ops_per_s";
    assert_eq!(tsv.header[..15].join(" "), keybench);
    assert_eq!(tsv.header.len(), kvmark::report::tsv::COLUMNS.len());
    let summary = summary_rows(&console);
    for (i, point) in points.iter().enumerate() {
        let threads = (i + 1).to_string();
        assert!(
            point.coords.contains(&format!("threads={threads} ")),
            "{}",
            point.coords
        );
        let rows: Vec<&BTreeMap<String, String>> = tsv.rows.iter().filter(|r| r["threads"] == threads).collect();
        assert_eq!(rows.len(), point.ops.len(), "one tsv row per console row");
        for (row, (op, vals)) in rows.iter().zip(&point.ops) {
            assert_eq!(&row["op"], op);
            assert_eq!(row["count"], vals[0], "{op} count");
            let ns = |col: &str| duration_ns(row[col].parse::<f64>().unwrap());
            assert_eq!(ns("p50_ns"), vals[2], "{op} p50");
            assert_eq!(ns("p90_ns"), vals[3], "{op} p90");
            assert_eq!(ns("p99_ns"), vals[4], "{op} p99");
            assert_eq!(ns("p999_ns"), vals[5], "{op} p99.9");
            assert_eq!(ns("p9999_ns"), vals[6], "{op} p99.99");
            assert_eq!(ns("max_ns"), vals[7], "{op} max");
            assert_eq!(
                (row["workload"].as_str(), row["engine"].as_str()),
                ("mixed", "skiplist")
            );
            assert_eq!((row["phase"].as_str(), row["status"].as_str()), ("run", "ok"));
            assert_eq!(row["repeats"], "2");
            assert_eq!(row["errors"], "0");
            // The summary's wu/s column is the same median.
            let wu: f64 = row["wu_per_s"].parse().unwrap();
            assert_eq!(rate(wu), summary[i][5], "wu/s of point {i}");
            let (lo, hi): (f64, f64) = (
                row["wu_per_s_min"].parse().unwrap(),
                row["wu_per_s_max"].parse().unwrap(),
            );
            assert!(lo <= wu && wu <= hi);
            assert_eq!(row["seed_keys"], "2000");
            // keybench's meaning: the point's get hit rate in percent, on every row.
            let hit: f64 = row["hit_rate"].parse().unwrap();
            assert!((0.0..=100.0).contains(&hit));
            assert_eq!(row["hit_rate"], rows[0]["hit_rate"], "one hit rate per point");
            if op == "get" {
                let (h, m): (f64, f64) = (row["hits"].parse().unwrap(), row["misses"].parse().unwrap());
                assert!((hit - 100.0 * h / (h + m)).abs() < 0.001, "{hit} vs {h}/{m}");
            }
            assert_eq!(row["err_rate"], "0.000");
            assert_eq!((row["sweep_param"].as_str(), row["sweep_value"].as_str()), ("", "1"));
        }
    }

    // json: the same numbers, plus what the tsv cannot hold.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(doc["run"]["threads"], serde_json::json!([1, 2]));
    assert_eq!(doc["run"]["budget"]["ops"], 6000);
    assert_eq!(doc["summary"]["points"], 2);
    for name in ["system", "build"] {
        assert!(doc["probes"][name].is_object(), "probe {name} missing");
    }
    let jpoints = doc["points"].as_array().unwrap();
    assert_eq!(jpoints.len(), 2);
    for jp in jpoints {
        let threads = jp["threads"].as_u64().unwrap().to_string();
        let repeats = jp["repeats"].as_array().unwrap();
        assert_eq!(repeats.len(), 2);
        let units: u64 = repeats.iter().map(|r| r["units"].as_u64().unwrap()).sum();
        assert_eq!(units, 12_000, "6000 units per repeat");
        for r in repeats {
            assert!(r["wu_per_s"].as_f64().unwrap() > 0.0);
            assert_eq!(
                r["thread_units"].as_array().unwrap().len(),
                jp["threads"].as_u64().unwrap() as usize
            );
        }
        for op in jp["ops"].as_array().unwrap() {
            let row = tsv
                .rows
                .iter()
                .find(|r| r["threads"] == threads && r["op"] == op["op"].as_str().unwrap())
                .unwrap();
            assert_eq!(op["count"].as_u64().unwrap().to_string(), row["count"]);
            for (label, col) in [
                ("p50", "p50_ns"),
                ("p99", "p99_ns"),
                ("p99.9", "p999_ns"),
                ("p99.99", "p9999_ns"),
            ] {
                assert_eq!(
                    op["percentiles_ns"][label].as_u64().unwrap().to_string(),
                    row[col],
                    "{label}"
                );
            }
            assert_eq!(op["max_ns"].as_u64().unwrap().to_string(), row["max_ns"]);
        }
    }

    // hdr: one log per point; merging every interval of a tag gives the point's
    // histogram exactly.
    let logs = files_in(&d.join("h"));
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert!(logs[0].ends_with("001-mixed-skiplist-t1-b1.hlog"), "{logs:?}");
    for (i, log) in logs.iter().enumerate() {
        let threads = (i + 1).to_string();
        let tags = hlog_by_tag(log);
        let rows: Vec<_> = tsv.rows.iter().filter(|r| r["threads"] == threads).collect();
        assert_eq!(tags.len(), rows.len(), "{tags:?}");
        for row in rows {
            let (h, intervals) = &tags[&format!("run.{}", row["op"])];
            assert!(*intervals >= 2, "two repeats give at least two intervals");
            assert_eq!(h.len().to_string(), row["count"]);
            assert_eq!(h.value_at_quantile(0.99).to_string(), row["p99_ns"]);
            assert_eq!(h.max().to_string(), row["max_ns"]);
        }
    }

    // timeline: interval counts add up to the point's counts exactly.
    let tl = read_tsv(&d.join("t.tsv"));
    assert_eq!(tl.header, kvmark::report::timeline::COLUMNS.to_vec());
    for row in &tsv.rows {
        let metric = format!("op.{}.count", row["op"]);
        let sum: u64 = tl
            .rows
            .iter()
            .filter(|r| r["threads"] == row["threads"] && r["phase"] == "run" && r["metric"] == metric)
            .map(|r| r["value"].parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum.to_string(), row["count"], "{metric} at {} threads", row["threads"]);
    }
}

#[test]
fn the_timeline_samples_every_system_metric() {
    let dir = tempfile::tempdir().unwrap();
    let tl_path = dir.path().join("tl.tsv");
    let started = std::time::Instant::now();
    let o = kvmark(&[
        "--secs",
        "2",
        "--items",
        "5000",
        "--timeline",
        "0.2",
        "--report",
        &format!("console,timeline:{}", tl_path.display()),
        &bundled("mixed.lua"),
    ]);
    let took = started.elapsed().as_secs_f64();
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    let tl = read_tsv(&tl_path);
    // Samples of the timed phase, by their end time.
    let mut samples: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    let mut lengths: BTreeMap<String, f64> = BTreeMap::new();
    for r in tl.rows.iter().filter(|r| r["phase"] == "run") {
        let at = format!("{:>12}", r["elapsed_s"]);
        samples
            .entry(at.clone())
            .or_default()
            .insert(r["metric"].clone(), r["value"].parse().unwrap());
        lengths.insert(at, r["interval_s"].parse().unwrap());
    }
    assert!(
        samples.len() >= 3,
        "a 2 s run sampled every 0.2 s has several samples, got {}",
        samples.len()
    );
    let mut gets = 0.0;
    for (at, m) in &samples {
        for metric in SYSTEM_METRICS
            .iter()
            .copied()
            .chain(["wu_per_s", "ops_per_s", "engine.keys"])
        {
            assert!(
                m.contains_key(metric),
                "{metric} missing from the sample at {at}: {m:?}"
            );
        }
        assert!(lengths[at] > 0.0, "sample at {at} covers no time");
        // Interval latency wherever the interval had calls.
        let count = m.get("op.get.count").copied().unwrap_or(0.0);
        if count > 0.0 {
            for stat in ["p50_ns", "p99_ns", "max_ns"] {
                assert!(m[&format!("op.get.{stat}")] > 0.0, "op.get.{stat} at {at}");
            }
            assert!(m["op.get.p50_ns"] <= m["op.get.p99_ns"] && m["op.get.p99_ns"] <= m["op.get.max_ns"]);
            assert!(m["wu_per_s"] > 0.0);
        }
        gets += count;
    }
    assert!(gets > 0.0);
    let last: f64 = samples.keys().last().unwrap().trim().parse().unwrap();
    // Before kvmark ended, however long a loaded machine took to seed and to stop (0.2%
    // for the calibrated clock the samples are timed by).
    assert!(
        last > 1.5 && last < took * 1.002,
        "the last sample ends with the run: {last} (kvmark took {took:.3} s)"
    );
    // The seed was sampled too.
    let seed: Vec<_> = tl.rows.iter().filter(|r| r["phase"] == "seed").collect();
    assert!(seed.iter().any(|r| r["metric"] == "keys_per_s"), "no seed samples");
    assert!(seed.iter().any(|r| r["metric"] == "proc.rss_bytes"));
}

#[test]
fn a_shared_seed_is_sampled_once_as_repeat_zero() {
    let dir = tempfile::tempdir().unwrap();
    let tl_path = dir.path().join("tl.tsv");
    let o = kvmark(&[
        "--ops",
        "2000",
        "--items",
        "3000",
        "--threads",
        "1,2",
        "--seed-once",
        "--timeline",
        "0.05",
        "--report",
        &format!("timeline:{}", tl_path.display()),
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 0);
    let tl = read_tsv(&tl_path);
    let seed: Vec<_> = tl.rows.iter().filter(|r| r["phase"] == "seed").collect();
    assert!(!seed.is_empty());
    assert!(
        seed.iter().all(|r| r["repeat"] == "0" && r["threads"] == "2"),
        "{:?}",
        seed[0]
    );
    let runs: Vec<_> = tl.rows.iter().filter(|r| r["phase"] == "run").collect();
    assert!(runs.iter().all(|r| r["repeat"] == "1"));
    assert!(runs.iter().any(|r| r["threads"] == "1") && runs.iter().any(|r| r["threads"] == "2"));
}

#[test]
fn histogram_logs_go_to_stdout_without_a_timeline() {
    let o = kvmark(&[
        "--ops",
        "500",
        "--threads",
        "1,2",
        "--report",
        "hdr",
        &workload("batchcount.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    // Without --timeline each phase of each repeat is one interval.
    assert_eq!(out.matches("#[BaseTime: ").count(), 2, "{out}");
    assert_eq!(out.matches("Tag=run.mget,").count(), 2, "{out}");
    assert_eq!(out.matches("Tag=run.mput,").count(), 2, "{out}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.hlog");
    std::fs::write(&path, &o.stdout).unwrap();
    let tags = hlog_by_tag(&path);
    // 500 units per point, half mget and half mput, two points.
    assert_eq!(tags["run.mget"].0.len(), 500);
    assert_eq!(tags["run.mput"].0.len(), 500);
}

#[test]
fn a_report_dir_bundles_everything_and_replays() {
    let parent = tempfile::tempdir().unwrap();
    let o = kvmark(&[
        "--ops",
        "1000",
        "--items",
        "500",
        "--report",
        "tsv:ignored.tsv",
        "--report-dir",
        parent.path().to_str().unwrap(),
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(err.contains("--report is ignored"), "{err}");
    assert!(!root().join("ignored.tsv").exists());
    let dirs = files_in(parent.path());
    assert_eq!(dirs.len(), 1);
    let d = &dirs[0];
    assert!(err.contains(&format!("reports are in {}", d.display())), "{err}");
    for f in ["report.txt", "points.tsv", "timeline.tsv", "results.json", "replay.cnf"] {
        assert!(d.join(f).is_file(), "{f} missing");
    }
    assert_eq!(files_in(&d.join("hdr")).len(), 1);
    // report.txt is the whole console report, the same as stdout.
    let txt = std::fs::read_to_string(d.join("report.txt")).unwrap();
    assert_eq!(txt, stdout(&o));
    assert!(txt.contains("[probe: system]") && txt.contains("throughput:"));
    // Without --timeline, timeline.tsv has its header only.
    assert_eq!(read_tsv(&d.join("timeline.tsv")).rows.len(), 0);

    // The replay config reruns the same grid with the same seeds.
    let again = kvmark(&["--config", d.join("replay.cnf").to_str().unwrap()]);
    assert_exit(&again, 0);
    let dirs = files_in(parent.path());
    assert_eq!(dirs.len(), 2, "the replay wrote a fresh directory");
    let counts = |dir: &Path| -> Vec<(String, String)> {
        read_tsv(&dir.join("points.tsv"))
            .rows
            .iter()
            .map(|r| (r["op"].clone(), r["count"].clone()))
            .collect()
    };
    assert_eq!(counts(&dirs[0]), counts(&dirs[1]));
}

#[test]
fn concurrent_runs_get_their_own_report_dirs() {
    let parent = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_kvmark"))
                .args([
                    "--ops",
                    "50",
                    "--probe",
                    "none",
                    "--report-dir",
                    parent.path().to_str().unwrap(),
                    &workload("ctx.lua"),
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let dirs = files_in(parent.path());
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    for d in &dirs {
        assert_eq!(read_tsv(&d.join("points.tsv")).rows.len(), 1, "{}", d.display());
    }
}

#[test]
fn probes_can_be_chosen() {
    let o = kvmark(&["--ops", "5", "--probe", "none", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    assert!(!stdout(&o).contains("[probe:"), "{}", stdout(&o));
    let o = kvmark(&["--ops", "5", "--probe", "build", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("[probe: build]") && !out.contains("[probe: system]"),
        "{out}"
    );
    for key in [
        "kvmark ",
        "rustc ",
        "profile ",
        "allocator ",
        "lua ",
        "engine.skiplist ",
    ] {
        assert!(out.contains(&format!("  {key}")), "{key} missing:\n{out}");
    }
    assert!(out.contains("mimalloc"), "{out}");
    let o = kvmark(&["--ops", "5", "--probe", "cpu", &workload("ctx.lua")]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--probe: unknown probe 'cpu'"), "{}", stderr(&o));
}

#[test]
fn the_system_probe_describes_the_data_dir() {
    let dir = tempfile::tempdir_in(root()).unwrap();
    let o = kvmark(&[
        "--ops",
        "5",
        "--probe",
        "system",
        "--data-dir",
        dir.path().to_str().unwrap(),
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for key in [
        "host",
        "os",
        "kernel",
        "cpu",
        "cpu_cores",
        "affinity",
        "ram",
        "page_size",
        "data_fs",
        "data_dev",
        "data_disk",
        "data_disk_model",
    ] {
        assert!(out.contains(&format!("  {key} ")), "{key} missing:\n{out}");
    }
    assert!(out.contains(" free of "), "{out}");
}

fn is_tmpfs(path: &str) -> bool {
    let c = std::ffi::CString::new(path).unwrap();
    // SAFETY: statfs is plain old data; the path is NUL-terminated.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers for the call.
    unsafe { libc::statfs(c.as_ptr(), &mut s) == 0 && s.f_type as i64 == 0x0102_1994 }
}

#[test]
fn a_data_dir_in_ram_is_warned_about() {
    assert!(
        is_tmpfs("/dev/shm"),
        "this test needs /dev/shm on tmpfs, as on Linux by default"
    );
    let o = kvmark(&["--ops", "5", "--data-dir", "/dev/shm", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("warning: --data-dir /dev/shm is on tmpfs, a RAM filesystem"),
        "{err}"
    );
    assert!(stdout(&o).contains("(tmpfs)"), "the probe names the filesystem");
    // A disk directory gets no warning.
    let dir = tempfile::tempdir_in(root()).unwrap();
    let o = kvmark(&[
        "--ops",
        "5",
        "--data-dir",
        dir.path().to_str().unwrap(),
        &workload("ctx.lua"),
    ]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("RAM filesystem"), "{}", stderr(&o));
}

#[test]
fn a_sink_that_cannot_write_fails_the_run() {
    // Cannot be created: nothing runs.
    let o = kvmark(&["--ops", "5", "--report", "tsv:/no/such/dir/p.tsv", &workload("ctx.lua")]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("cannot create report file /no/such/dir/p.tsv"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
    // Fails while writing: reported, the run finishes, the exit status says so.
    let o = kvmark(&["--ops", "5", "--report", "console,tsv:/dev/full", &workload("ctx.lua")]);
    assert_exit(&o, 1);
    assert!(stderr(&o).contains("report sink tsv:/dev/full:"), "{}", stderr(&o));
    assert!(stdout(&o).contains("=== ctx ==="), "the other sinks still report");
}

#[test]
fn unknown_sinks_and_bad_intervals_are_usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&["--report", "csv", "x.lua"], "--report: unknown report sink 'csv'"),
        (&["--report", "tsv:", "x.lua"], "give a path after the colon"),
        (
            &["--timeline", "0", "x.lua"],
            "--timeline 0: give the seconds between samples",
        ),
        (&["--timeline", "0.001", "x.lua"], "from 0.01 to 86400"),
        (&["--timeline", "nan", "x.lua"], "--timeline NaN"),
        (
            &["--config", "/no/such.cnf", "x.lua"],
            "/no/such.cnf: cannot read config file",
        ),
    ];
    for (args, msg) in cases {
        let o = kvmark(args);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(msg), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn timeline_flags_without_their_sink_are_flagged() {
    let o = kvmark(&["--ops", "5", "--timeline", "1", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("no sink writes the timeline"), "{}", stderr(&o));
    let o = kvmark(&["--ops", "5", "--report", "timeline", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("only when --timeline S"), "{}", stderr(&o));
}

#[test]
fn histogram_logs_follow_the_timeline_interval() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("h");
    let o = kvmark(&[
        "--secs",
        "1",
        "--timeline",
        "0.1",
        "--report",
        &format!("console,hdr:{}", logs.display()),
        &workload("slow.lua"),
    ]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("warning"), "hdr uses --timeline: {}", stderr(&o));
    let files = files_in(&logs);
    assert_eq!(files.len(), 1);
    let tags = hlog_by_tag(&files[0]);
    let (h, intervals) = &tags["run.get"];
    assert!(*intervals >= 3, "one interval per sample, got {intervals}");
    assert_eq!(Some(h.len()), op_count(&stdout(&o), "get"));
}

#[test]
fn open_loop_response_times_and_the_warm_up_reach_every_sink() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = kvmark(&[
        "--rate",
        "2000",
        "--secs",
        "1.5",
        "--warmup",
        "0.5",
        "--timeline",
        "0.1",
        "--report",
        &format!(
            "console,tsv:{},timeline:{},json:{},hdr:{}",
            d.join("p.tsv").display(),
            d.join("t.tsv").display(),
            d.join("r.json").display(),
            d.join("h").display()
        ),
        &bundled("null.lua"),
    ]);
    assert_exit(&o, 0);
    // tsv: a service row and a response row per kind, tagged, with the rate.
    let tsv = read_tsv(&d.join("p.tsv"));
    let rows: Vec<_> = tsv
        .rows
        .iter()
        .map(|r| (r["op"].as_str(), r["latency"].as_str()))
        .collect();
    assert_eq!(rows, vec![("get", "service"), ("get", "response")]);
    let count = tsv.rows[0]["count"].clone();
    assert_eq!(tsv.rows[1]["count"], count, "one response time per call");
    assert_eq!(
        (tsv.rows[0]["rate"].as_str(), tsv.rows[0]["arrival"].as_str()),
        ("2000", "constant")
    );
    assert!(tsv.rows[0]["warmup_units"].parse::<u64>().unwrap() > 0);
    assert_eq!(op_count(&stdout(&o), "get").map(|c| c.to_string()), Some(count.clone()));
    // hdr: both sets tagged, the warm-up left out, merging back to the counts.
    let logs = files_in(&d.join("h"));
    assert_eq!(logs.len(), 1);
    let tags = hlog_by_tag(&logs[0]);
    assert_eq!(tags.keys().collect::<Vec<_>>(), vec!["run.get", "run.get.response"]);
    assert_eq!(tags["run.get"].0.len().to_string(), count);
    assert_eq!(tags["run.get.response"].0.len().to_string(), count);
    assert_eq!(
        tags["run.get.response"].0.value_at_quantile(0.99).to_string(),
        tsv.rows[1]["p99_ns"]
    );
    // timeline: warm-up samples are marked; the measured ones add up to the counts.
    let tl = read_tsv(&d.join("t.tsv"));
    assert!(tl.rows.iter().any(|r| r["phase"] == "warmup"), "no warm-up samples");
    assert!(tl.rows.iter().any(|r| r["metric"] == "op.get.response.p99_ns"));
    let measured: u64 = tl
        .rows
        .iter()
        .filter(|r| r["phase"] == "run" && r["metric"] == "op.get.count")
        .map(|r| r["value"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(measured.to_string(), count);
    // json: the response distribution beside the service time, the rate and the pace.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(doc["run"]["rates"][0]["per_s"], 2000.0);
    assert_eq!(doc["run"]["arrival"], "constant");
    assert_eq!(doc["run"]["warmup_s"], 0.5);
    let p = &doc["points"][0];
    assert_eq!(p["rate"]["per_s"], 2000.0);
    assert_eq!(p["ops"][0]["response"]["count"].as_u64().unwrap().to_string(), count);
    assert!(p["pace"]["waited"].as_u64().unwrap() + p["pace"]["late"].as_u64().unwrap() > 0);
    assert!(p["warmup_units"].as_u64().unwrap() > 0);
}

#[test]
fn a_run_that_dies_keeps_the_rows_of_its_finished_points() {
    let dir = tempfile::tempdir().unwrap();
    let (tsv, tl) = (dir.path().join("p.tsv"), dir.path().join("t.tsv"));
    // Points of 2 s, so the kill lands in the second however late a loaded machine
    // delivers it.
    let mut child = spawn_kvmark(&[
        "--secs",
        "2",
        "--threads",
        "1,2",
        "--timeline",
        "0.1",
        "--report",
        &format!("tsv:{},timeline:{}", tsv.display(), tl.display()),
        &workload("slow.lua"),
    ]);
    // Wait until the first point's rows are out and the second point has been sampled
    // (a fixed wait could end after it on a loaded machine), then kill the run in its
    // second point: no chance to finish or clean up.
    let lines = |p: &Path| std::fs::read_to_string(p).map_or(0, |t| t.lines().count());
    wait_for("the first point's tsv rows", || lines(&tsv) >= 2);
    wait_for("a sample of the second point", || {
        std::fs::read_to_string(&tl).is_ok_and(|t| t.lines().any(|l| l.split('\t').nth(2) == Some("2")))
    });
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the run was killed before its end");
    let rows = read_tsv(&tsv).rows;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!((rows[0]["threads"].as_str(), rows[0]["op"].as_str()), ("1", "get"));
    // The timeline was written as it was sampled, into the second point too.
    let samples = read_tsv(&tl).rows;
    assert!(samples.iter().any(|r| r["threads"] == "1"), "no samples of point 1");
    assert!(samples.iter().any(|r| r["threads"] == "2"), "no samples of point 2");
}

#[test]
fn ycsb_blocks_over_repeats_are_one_consistent_run() {
    // Three repeats of 500 operations, each call at least 100 us: a block must read as
    // one run of 1500 operations, its RunTime the repeats' summed time (at least
    // 150 ms) and its Throughput those operations over that time, as YCSB prints them.
    let o = kvmark(&[
        &bundled("workloada"),
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=500",
        "--backend",
        "sim",
        "--engine-opt",
        "sim.service=100us",
        "--repeat",
        "3",
        "--report",
        "ycsb",
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let rows = kvmark::report::ycsb::parse(&out);
    let overall = |metric: &str| -> f64 {
        let found = rows.iter().filter(|(s, m, _)| s == "OVERALL" && m == metric);
        let values: Vec<f64> = found.map(|(_, _, v)| v.parse().unwrap()).collect();
        assert_eq!(values.len(), 1, "one timed phase, one [OVERALL], {metric}: {out}");
        values[0]
    };
    let (run_ms, throughput) = (overall("RunTime(ms)"), overall("Throughput(ops/sec)"));
    // workloada's operations are single reads and updates: one call per operation.
    let operations: f64 = rows
        .iter()
        .filter(|(s, m, _)| m == "Operations" && !s.starts_with("Intended-"))
        .map(|(_, _, v)| v.parse::<f64>().unwrap())
        .sum();
    assert_eq!(operations, 1500.0, "every repeat's operations: {out}");
    assert!(run_ms >= 150.0, "RunTime is the sum over repeats, not a mean: {out}");
    // RunTime is rounded to whole milliseconds, so the true time is within 0.5 ms.
    let ratio = operations / run_ms * 1000.0 / throughput;
    assert!(
        (ratio - 1.0).abs() <= 0.5 / run_ms + 1e-9,
        "Operations / RunTime is {} ops/s, Throughput {throughput}: {out}",
        operations / run_ms * 1000.0
    );
}
