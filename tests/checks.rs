//! Self-checks through the real binary: each is shown on a run made to fail it, its
//! counterpart run stays silent, and `--strict` turns a failed check into exit 1. A
//! failed check is named wherever the point's figures are: points.tsv's `checks`
//! column, the report page and `kvmark compare`.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::{Value, json};

/// Runs kvmark with a JSON report in a fresh directory; returns the exit status, the
/// console and the first point's JSON.
fn run(args: &[&str]) -> (i32, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let report = format!("console,json:{}", json.display());
    let mut all = vec!["--report", report.as_str()];
    all.extend_from_slice(args);
    let o = kvmark(&all);
    let console = format!("{}{}", stdout(&o), stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}\n{console}"))).unwrap();
    (o.status.code().unwrap_or(-1), console, doc["points"][0].clone())
}

/// The names of the checks a point's JSON says it failed.
fn failed(point: &Value) -> Vec<String> {
    point["checks"]["warnings"]
        .as_array()
        .expect("a warnings list")
        .iter()
        .map(|w| w["check"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_short_run_has_uncertain_percentiles_and_strict_fails_it() {
    let wl = bundled("mixed.lua");
    let (code, console, point) = run(&["--ops", "300", &wl]);
    assert_eq!(code, 0, "a check alone does not fail the run\n{console}");
    assert!(console.contains("check uncertain_percentiles: "), "{console}");
    assert!(console.contains("p99.99 ("), "{console}");
    assert_eq!(failed(&point), ["uncertain_percentiles"]);
    // The intervals: p99.99 of a few hundred samples has no upper bound; every bounded
    // interval holds its percentile.
    let get = &point["checks"]["intervals"]["get"];
    assert!(get["p99.99"][1].is_null(), "{get}");
    let ops = point["ops"].as_array().expect("ops");
    let get_op = ops.iter().find(|o| o["op"] == "get").expect("a get op");
    let p50 = get_op["percentiles_ns"]["p50"]
        .as_u64()
        .unwrap_or_else(|| panic!("{get_op}"));
    let (lo, hi) = (get["p50"][0].as_u64().unwrap(), get["p50"][1].as_u64().unwrap());
    assert!(lo <= p50 && p50 <= hi, "{lo} <= {p50} <= {hi}");
    assert_eq!(point["checks"]["confidence"].as_f64(), Some(0.95));

    assert!(
        point["checks"]["throughput_wu_per_s"].is_null(),
        "one repeat: no spread"
    );

    // Over repeats, the throughput's interval holds the repeats' mean.
    let (_, console, point) = run(&["--ops", "300", "--repeat", "3", &wl]);
    let t = &point["checks"]["throughput_wu_per_s"];
    let rates: Vec<f64> = (0..3)
        .map(|r| point["repeats"][r]["wu_per_s"].as_f64().unwrap())
        .collect();
    let mean = rates.iter().sum::<f64>() / 3.0;
    assert_eq!(t["repeats"], 3, "{console}");
    assert!(
        (t["mean"].as_f64().unwrap() - mean).abs() < 1e-6 * mean,
        "{t} {rates:?}"
    );
    assert!(
        t["low"].as_f64().unwrap() <= mean && mean <= t["high"].as_f64().unwrap(),
        "{t}"
    );

    let (code, console, _) = run(&["--ops", "300", "--strict", &wl]);
    assert_eq!(code, 1, "{console}");
    assert!(
        console.contains("--strict: 1 of 1 point(s) failed a self-check"),
        "{console}"
    );
}

#[test]
fn an_open_loop_rate_out_of_reach_is_reported_and_one_within_reach_is_not() {
    // One thread and a 1 ms service time serve at most 1,000 units a second.
    let wl = bundled("mixed.lua");
    let sim = ["--backend", "sim", "--engine-opt", "sim.service=1ms", "--threads", "1"];
    let mut args = sim.to_vec();
    args.extend(["--secs", "1", "--rate", "4000", &wl]);
    let (_, console, point) = run(&args);
    assert!(failed(&point).contains(&"rate_missed".to_string()), "{console}");
    assert!(console.contains("check rate_missed: achieved "), "{console}");
    assert!(console.contains("of the target rate 4000"), "{console}");

    // Units a pause delayed past the end are missing from the achieved rate: 4 s keeps
    // the check's 5% at 200 ms, so a loaded machine's pauses do not trip it.
    let mut args = sim.to_vec();
    args.extend(["--secs", "4", "--rate", "100", &wl]);
    let (_, console, point) = run(&args);
    assert!(!failed(&point).contains(&"rate_missed".to_string()), "{console}");
    assert!(!console.contains("check rate_missed"), "{console}");
}

#[test]
fn a_run_whose_throughput_falls_is_not_stationary_and_a_paced_one_is() {
    // Each unit adds up one number more than the last, so the rate falls steadily
    // across the phase.
    let dir = tempfile::tempdir().unwrap();
    let slowing = dir.path().join("slowing.lua");
    std::fs::write(
        &slowing,
        "local n = 0\nreturn { run = function(ctx) n = n + 1 local x = 0 for i = 1, n * 20 do x = x + i end \
         kv.put('k' .. (n % 100), tostring(x)) end }",
    )
    .unwrap();
    let slowing = slowing.to_str().unwrap();
    // 4 s gives 40 intervals: at 2 s (20), stress-ng's time slicing left the fall
    // short of p < 0.001 in 1 run of 4.
    let base = ["--threads", "1", "--secs", "4", "--timeline", "0.1"];
    let mut args = base.to_vec();
    args.push(slowing);
    let (code, console, point) = run(&args);
    assert_eq!(code, 0, "{console}");
    assert!(failed(&point).contains(&"not_stationary".to_string()), "{console}");
    // The throughput's fall is on the check's line; a machine's noise may list a
    // latency series before it.
    let line = console
        .lines()
        .find(|l| l.starts_with("check not_stationary: "))
        .unwrap_or_else(|| panic!("no not_stationary line: {console}"));
    assert!(line.contains("throughput fell "), "{console}");
    assert!(console.contains("warm up longer (--warmup)"), "{console}");
    let trends = point["checks"]["trends"].as_array().expect("trends");
    let wu = trends
        .iter()
        .find(|t| t["series"] == "throughput")
        .expect("a throughput trend");
    assert_eq!(wu["drifts"], true, "{wu}");
    assert!(wu["change"].as_f64().unwrap() <= -0.1, "{wu}");
    assert!(wu["intervals"].as_u64().unwrap() >= 10, "{wu}");
    assert!(wu["p"].as_f64().unwrap() < 0.001, "{wu}");
    // The busiest kind's p99 is tested too.
    assert!(trends.iter().any(|t| t["series"] == "put p99"), "{point}");

    let mut args = base.to_vec();
    args.extend(["--strict", slowing]);
    let (code, console, _) = run(&args);
    assert_eq!(code, 1, "{console}");

    // Paced at a rate far below what the engine serves, the throughput is the
    // schedule's and nothing drifts.
    let (_, console, point) = run(&[
        "--backend",
        "sim",
        "--threads",
        "1",
        "--secs",
        "2",
        "--timeline",
        "0.1",
        "--rate",
        "500",
        &bundled("mixed.lua"),
    ]);
    // Only the throughput is the schedule's: a latency percentile may still drift on
    // a loaded machine (under stress-ng, get p99 fell 94% over 20 intervals as the
    // scheduler's share settled), which the check rightly reports.
    let trends = point["checks"]["trends"].as_array().expect("trends");
    let wu = trends
        .iter()
        .find(|t| t["series"] == "throughput")
        .expect("a throughput trend");
    assert_eq!(wu["drifts"], false, "{wu}");
    assert!(!console.contains("check not_stationary: throughput"), "{console}");

    // Without --timeline there are no intervals to test.
    let (_, console, point) = run(&["--threads", "1", "--secs", "1", slowing]);
    assert_eq!(point["checks"]["trends"], json!([]), "{console}");
    assert!(!failed(&point).contains(&"not_stationary".to_string()), "{console}");
}

/// A private Redis and the engine option that points at it; None (said on stderr)
/// where Redis cannot start and servers are not required.
#[cfg(feature = "redis")]
fn private_redis() -> Option<(common::servers::PrivateServer, String)> {
    if !common::servers::can_start("redis") {
        return None;
    }
    let redis = common::servers::PrivateServer::start("redis");
    let url = format!("redis.url={}", redis.url);
    Some((redis, url))
}

#[cfg(feature = "redis")]
#[test]
fn a_client_that_spends_its_time_in_lua_is_saturated_and_an_idle_one_is_not() {
    let Some((_redis, url)) = private_redis() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Each unit spins in Lua (about 15 ms) and puts on its first unit and once every
    // 100 after: on a busy machine a request waits for the server's share of the CPU
    // (5 puts in a 2 s run left the client off the CPU a quarter of the time under
    // stress-ng), so more could leave the client idle for as long as it spins. The
    // first put keeps the point from being empty (a point with no operation measured
    // nothing and is not checked) when a loaded machine runs fewer than 100 units.
    let busy = dir.path().join("busy.lua");
    std::fs::write(
        &busy,
        "local n = 0\nreturn { run = function(ctx) local x = 0 for i = 1, 2000000 do x = x + i end \
         n = n + 1 if n % 100 == 1 then kv.put('k', tostring(x)) end end }",
    )
    .unwrap();
    let base = [
        "--backend",
        "redis",
        "--engine-opt",
        url.as_str(),
        "--threads",
        "1",
        "--secs",
        "2",
    ];
    let mut args = base.to_vec();
    args.push(busy.to_str().unwrap());
    let (_, console, point) = run(&args);
    assert!(failed(&point).contains(&"client_saturated".to_string()), "{console}");
    assert!(
        console.contains("check client_saturated: kvmark's threads ran "),
        "{console}"
    );
    // Busy, or starved on a shared machine: either way the client was the limit.
    let demand = |p: &Value| {
        let r = &p["repeats"][0];
        r["client_cores_used"].as_f64().unwrap() + r["client_cores_waited"].as_f64().unwrap()
    };
    assert!(demand(&point) > 0.9, "{point}");

    // Two units a second leave the client idle most of the time: 3% of a core, so
    // even waiting ten times as long as it runs for a CPU stays well under 0.9.
    let mut args = base.to_vec();
    args.extend(["--rate", "2", busy.to_str().unwrap()]);
    let (_, console, point) = run(&args);
    assert!(!failed(&point).contains(&"client_saturated".to_string()), "{console}");
    assert!(demand(&point) < 0.9, "{point}");
}

#[cfg(feature = "redis")]
#[test]
fn connections_sharing_a_thread_count_its_wait_for_a_cpu_once() {
    let Some((_redis, url)) = private_redis() else {
        return;
    };
    // Three shell loops on this machine's cores keep kvmark's one worker thread (and
    // its 16 connections) waiting for a CPU part of the time; they end with the test.
    struct Spinners(Vec<std::process::Child>);
    impl Drop for Spinners {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let spin = || {
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap()
    };
    let _spinners = Spinners(vec![spin(), spin(), spin()]);
    let (_, console, point) = run(&[
        "--backend",
        "redis",
        "--engine-opt",
        url.as_str(),
        "--threads",
        "1",
        "--connections",
        "16",
        "--secs",
        "2",
        &bundled("mixed.lua"),
    ]);
    // A thread waits for a CPU at most all of the time: kvmark has the worker thread,
    // the lead and at most a sampler, so under 3 cores' worth of waiting. Summed once
    // per connection, the worker's wait came to 16 times its share.
    let waited = point["repeats"][0]["client_cores_waited"].as_f64().unwrap();
    assert!(waited < 3.0, "waited {waited} cores\n{console}");
    assert!(waited > 0.0, "no wait measured under load\n{console}");
}

/// Runs kvmark with `--report-dir` under `parent` and returns the run's directory.
fn report_dir(parent: &Path, args: &[&str]) -> PathBuf {
    let mut all = vec!["--report-dir", parent.to_str().unwrap()];
    all.extend_from_slice(args);
    let o = kvmark(&all);
    assert_exit(&o, 0);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(parent).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

/// The `checks` column of every row of a report directory's points.tsv.
fn checks_column(dir: &Path) -> Vec<String> {
    let tsv = std::fs::read_to_string(dir.join("points.tsv")).unwrap();
    let col = tsv_column(&tsv, "checks");
    let rows: Vec<String> = tsv
        .lines()
        .skip(1)
        .map(|l| {
            l.split('\t')
                .nth(col)
                .unwrap_or_else(|| panic!("no checks field: {l:?}"))
                .to_string()
        })
        .collect();
    assert!(!rows.is_empty(), "{tsv}");
    rows
}

fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

fn page(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("report.html")).unwrap()
}

/// A run of null.lua that passes every check: ten million calls bound even p99.99
/// (measured under `stress-ng --cpu 2` on 2 cores: a million failed 10 runs of 10,
/// four million 2 of 10, ten million none of 10; about 2 s a run), and a run a busy
/// machine still stretches is made again (a few times at most).
fn passing_run(parent: &Path) -> PathBuf {
    for attempt in 0..5 {
        let dir = report_dir(
            &parent.join(attempt.to_string()),
            &["--ops", "10000000", &bundled("null.lua")],
        );
        if failed(&results(&dir)["points"][0]).is_empty() {
            return dir;
        }
    }
    panic!("five runs of ten million calls each failed a self-check");
}

#[test]
fn failed_checks_are_named_in_points_tsv_the_report_page_and_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let null = bundled("null.lua");
    // 300 calls cannot bound p99.99 (nor, on some runs, p90: which percentiles are
    // left unbounded depends on the spread of the calls).
    let short = report_dir(&tmp.path().join("short"), &["--ops", "300", &null]);
    assert_eq!(failed(&results(&short)["points"][0]), ["uncertain_percentiles"]);
    for field in checks_column(&short) {
        assert_eq!(field, "uncertain_percentiles");
    }
    let html = page(&short);
    assert!(
        html.contains("<tr class=\"checks\">")
            && html.contains("<code>check uncertain_percentiles</code>: get p")
            && html.contains("p99.99 (300 samples)"),
        "the page lists the failed check with its message"
    );
    assert!(html.contains("not bounded within 50% at 95% confidence"));

    // A run that passes every check has an empty column, and no list on its page.
    let long = passing_run(&tmp.path().join("long"));
    for field in checks_column(&long) {
        assert_eq!(field, "");
    }
    assert!(!page(&long).contains("<tr class=\"checks\">"));

    // compare: beside the point's verdict, the checks each run failed there.
    let o = kvmark(&["compare", short.to_str().unwrap(), long.to_str().unwrap()]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let wu = text
        .lines()
        .find(|l| l.contains(" wu/s "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(wu.ends_with("; checks: A uncertain_percentiles"), "{text}");
    let o = kvmark(&["compare", long.to_str().unwrap(), short.to_str().unwrap()]);
    assert!(
        stdout(&o).contains("; checks: B uncertain_percentiles\n"),
        "{}",
        stdout(&o)
    );
    let o = kvmark(&[
        "compare",
        short.to_str().unwrap(),
        long.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        doc["points"][0]["checks"],
        json!({ "a": ["uncertain_percentiles"], "b": [] })
    );
    let o = kvmark(&["compare", long.to_str().unwrap(), long.to_str().unwrap()]);
    assert!(!stdout(&o).contains("checks:"), "{}", stdout(&o));

    // A results.json written before the checks has none: compared, it claims nothing.
    let mut old = results(&short);
    for p in old["points"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("checks");
    }
    let old_file = tmp.path().join("old.json");
    std::fs::write(&old_file, serde_json::to_string(&old).unwrap()).unwrap();
    let o = kvmark(&["compare", old_file.to_str().unwrap(), short.to_str().unwrap()]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("; checks: B uncertain_percentiles\n"), "{text}");
    assert!(!text.contains("checks: A"), "{text}");

    // Without results.json (a run that died), the page takes the names from points.tsv.
    std::fs::remove_file(short.join("results.json")).unwrap();
    let out = tmp.path().join("figs");
    let o = figs::plot(&[&short], &out, &["--html"]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert!(html.contains("<code>check uncertain_percentiles</code></li>"), "{html}");
}
