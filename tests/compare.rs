//! `kvmark compare` on real runs: a planted 20% slowdown (the sim engine's service
//! time raised from 20 ms to 25 ms) is flagged as significant and fails
//! `--fail-if-slower`, in throughput and in latency (`--fail-if-latency-worse`); a
//! rerun of the same config is not significant and passes. A results.json without
//! per-repeat latencies (an older kvmark's) compares with latency significance
//! unknown.
//!
//! Service times of milliseconds are slept, not spun, so the runs hardly depend on how
//! busy the machine's cores are (spun 40 us calls varied by 20% between repeats on a
//! loaded machine, slept 4 ms calls by 10%: a busy machine wakes a sleeper late by a
//! roughly fixed delay, small beside 20 ms), and the three runs go side by side in
//! time. The tests use a significance level of 0.01 over ten repeats a side.

mod common;

use std::path::{Path, PathBuf};

use common::{assert_exit, bundled, kvmark, stderr, stdout};
use serde_json::Value;

/// Runs ten repeats of a short mixed workload on sim with `service`, into a report
/// directory under `parent`, and returns that directory.
fn run(parent: &Path, service: &str) -> PathBuf {
    let opt = format!("sim.service={service}");
    let out = kvmark(&[
        "--backend",
        "sim",
        "--engine-opt",
        &opt,
        "--ops",
        "30",
        "--items",
        "1000",
        "--repeat",
        "10",
        "--report-dir",
        parent.to_str().unwrap(),
        &bundled("mixed.lua"),
    ]);
    assert_exit(&out, 0);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(parent).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.pop().unwrap()
}

fn compare_json(a: &Path, b: &Path, extra: &[&str]) -> (Value, std::process::Output) {
    let mut args = vec![
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
        "--alpha",
        "0.01",
    ];
    args.extend_from_slice(extra);
    let out = kvmark(&args);
    let doc: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("compare did not print JSON ({e}): {}", stderr(&out)));
    (doc, out)
}

#[test]
fn a_planted_slowdown_is_significant_and_a_rerun_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    // The three runs go at once, so a change in how busy the machine is reaches all
    // of them alike instead of passing for a difference between them.
    let (base, rerun, slow) = std::thread::scope(|s| {
        let base = s.spawn(|| run(&tmp.path().join("a"), "20ms"));
        let rerun = s.spawn(|| run(&tmp.path().join("a2"), "20ms"));
        let slow = s.spawn(|| run(&tmp.path().join("b"), "25ms"));
        (base.join().unwrap(), rerun.join().unwrap(), slow.join().unwrap())
    });

    let (doc, out) = compare_json(&base, &slow, &["--fail-if-slower", "10"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("slower than --fail-if-slower allows"),
        "{}",
        stderr(&out)
    );
    let point = &doc["points"][0];
    let change = point["wu_per_s"]["change_pct"].as_f64().unwrap();
    assert!(
        (-30.0..=-10.0).contains(&change),
        "a 20% slowdown measured as {change}%: {point}"
    );
    assert_eq!(point["significant"], true, "{point}");
    assert_eq!(point["repeats"]["a"], 10);
    assert!(point["p_value"].as_f64().unwrap() < 0.01);
    // Latency per operation kind rises with the service time.
    let get = op(point, "get");
    assert!(get["p50_ns"]["change_pct"].as_f64().unwrap() > 10.0, "{get}");
    assert_eq!(doc["regressions"].as_array().unwrap().len(), 1);
    // ... and significantly so, judged on each repeat's own latencies.
    assert_eq!(get["p50_ns"]["significant"], true, "{get}");
    assert!(get["p50_ns"]["p_value"].as_f64().unwrap() < 0.01, "{get}");
    assert_eq!(get["p50_ns"]["repeats"]["a"], 10, "{get}");
    assert!(
        doc["latency_regressions"].as_array().unwrap().is_empty(),
        "no latency gate given"
    );

    // The latency gate fails the slowdown on its own.
    let (doc, out) = compare_json(&base, &slow, &["--fail-if-latency-worse", "10"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("higher than --fail-if-latency-worse allows"),
        "{}",
        stderr(&out)
    );
    let bad = doc["latency_regressions"].as_array().unwrap();
    assert!(
        bad.iter().any(|r| r["op"] == "get" && r["figure"] == "p50_ns"),
        "{bad:?}"
    );
    assert!(
        doc["regressions"].as_array().unwrap().is_empty(),
        "no throughput gate given"
    );

    let (doc, out) = compare_json(
        &base,
        &rerun,
        &["--fail-if-slower", "10", "--fail-if-latency-worse", "10"],
    );
    assert_exit(&out, 0);
    let point = &doc["points"][0];
    assert_eq!(point["significant"], false, "{point}");
    let change = point["wu_per_s"]["change_pct"].as_f64().unwrap();
    assert!(change.abs() < 10.0, "a rerun changed by {change}%: {point}");
    let get = op(point, "get");
    assert_eq!(get["p50_ns"]["significant"], false, "{get}");

    // The table and TSV say the same; results.json files work as well as directories.
    let table = kvmark(&[
        "compare",
        base.join("results.json").to_str().unwrap(),
        slow.to_str().unwrap(),
        "--alpha",
        "0.01",
    ]);
    assert_exit(&table, 0);
    let text = stdout(&table);
    assert!(text.contains("  significant (p<0.001, n=10+10)"), "{text}");
    assert!(text.contains("Mann-Whitney U"), "the table states its method: {text}");
    let rows = compare_tsv(&base, &slow);
    let header: Vec<&str> = rows.lines().next().unwrap().split('\t').collect();
    assert_eq!(header[..4], ["point", "op", "figure", "a"]);
    let wu = rows.lines().find(|l| l.contains("\twu_per_s\t")).unwrap();
    assert!(wu.ends_with("\ttrue"), "{wu}");
    let p50 = rows.lines().find(|l| l.contains("\tget\tp50_ns\t")).unwrap();
    assert!(p50.ends_with("\ttrue"), "{p50}");

    // Each repeat keeps its own latency per kind: the repeats' calls add up to the
    // point's.
    let doc = results(&base);
    let point = &doc["points"][0];
    for kind in point["ops"].as_array().unwrap() {
        let name = kind["op"].as_str().unwrap();
        let per_repeat: u64 = point["repeats"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["ops"].as_array().unwrap().iter().find(|o| o["op"] == name))
            .map(|o| o["count"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(per_repeat), kind["count"].as_u64(), "{name}");
    }

    // An older results.json, without per-repeat latencies: throughput is still judged,
    // latency significance is unknown (not "not significant").
    let mut old = doc.clone();
    for r in old["points"][0]["repeats"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("ops");
    }
    let old_file = tmp.path().join("old.json");
    std::fs::write(&old_file, serde_json::to_string(&old).unwrap()).unwrap();
    let (doc, out) = compare_json(&old_file, &slow, &[]);
    assert_exit(&out, 0);
    let point = &doc["points"][0];
    assert_eq!(point["significant"], true, "{point}");
    let get = op(point, "get");
    assert_eq!(get["p50_ns"]["significant"], Value::Null, "{get}");
    assert_eq!(get["p50_ns"]["p_value"], Value::Null, "{get}");
    assert!(get["p50_ns"]["change_pct"].as_f64().unwrap() > 10.0, "{get}");
    let table = kvmark(&["compare", old_file.to_str().unwrap(), slow.to_str().unwrap()]);
    assert_exit(&table, 0);
    assert!(
        stdout(&table).contains("n/a: A keeps no per-repeat latency"),
        "{}",
        stdout(&table)
    );
    let rows = compare_tsv(&old_file, &slow);
    let p50 = rows.lines().find(|l| l.contains("\tget\tp50_ns\t")).unwrap();
    assert!(p50.ends_with("\t\t"), "no p-value, no verdict: {p50}");
}

fn compare_tsv(a: &Path, b: &Path) -> String {
    let out = kvmark(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--format", "tsv"]);
    assert_exit(&out, 0);
    stdout(&out)
}

fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

/// The entry of operation kind `name` in a compared point.
fn op<'v>(point: &'v Value, name: &str) -> &'v Value {
    point["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == name)
        .unwrap_or_else(|| panic!("no {name} in {point}"))
}

#[test]
fn bad_inputs_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    let out = kvmark(&["compare", missing.to_str().unwrap(), missing.to_str().unwrap()]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("nowhere/results.json") || stderr(&out).contains("nowhere"));
    let junk = tmp.path().join("junk.json");
    std::fs::write(&junk, "{\"x\": 1}").unwrap();
    let out = kvmark(&["compare", junk.to_str().unwrap(), junk.to_str().unwrap()]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("has no \"points\" list"), "{}", stderr(&out));
    let out = kvmark(&["compare", "a", "b", "--format", "csv"]);
    assert_exit(&out, 2);
    let out = kvmark(&["compare", "a", "b", "--fail-if-slower", "-3"]);
    assert_exit(&out, 2);
    let out = kvmark(&["compare", "a", "b", "--fail-if-latency-worse", "x"]);
    assert_exit(&out, 2);
}
