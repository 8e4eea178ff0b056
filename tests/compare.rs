//! `kvmark compare` on real runs: a planted 20% slowdown (the sim engine's service
//! time raised from 20 ms to 25 ms) is flagged as significant and fails
//! `--fail-if-slower`; a rerun of the same config is not significant and passes.
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
    let get = point["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "get")
        .unwrap();
    assert!(get["p50_ns"]["change_pct"].as_f64().unwrap() > 10.0, "{get}");
    assert_eq!(doc["regressions"].as_array().unwrap().len(), 1);

    let (doc, out) = compare_json(&base, &rerun, &["--fail-if-slower", "10"]);
    assert_exit(&out, 0);
    let point = &doc["points"][0];
    assert_eq!(point["significant"], false, "{point}");
    let change = point["wu_per_s"]["change_pct"].as_f64().unwrap();
    assert!(change.abs() < 10.0, "a rerun changed by {change}%: {point}");

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
    let tsv = kvmark(&[
        "compare",
        base.to_str().unwrap(),
        slow.to_str().unwrap(),
        "--format",
        "tsv",
    ]);
    let rows = stdout(&tsv);
    let header: Vec<&str> = rows.lines().next().unwrap().split('\t').collect();
    assert_eq!(header[..4], ["point", "op", "figure", "a"]);
    let wu = rows.lines().find(|l| l.contains("\twu_per_s\t")).unwrap();
    assert!(wu.ends_with("\ttrue"), "{wu}");
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
}
