//! `--verify` through the real binary: the sim engine's injected faults are each
//! detected and reported as their exact anomaly kind (console, results.json,
//! verify.tsv) with exit status 1, as many as the sim says it injected where that is
//! guaranteed (see `src/engine/embedded/sim/mod.rs`'s module doc for the bounds), and
//! within the bound where it is not; clean runs stay clean at several threads and
//! connections, for Lua workloads, specs and operation logs; and every compiled
//! engine passes a short verify run clean (a server engine whose server does not
//! answer is skipped with a note, or fails with `KVMARK_REQUIRE_SERVERS=1`).

mod common;

use std::path::Path;

use common::{kvmark, tsv_column, workload};
use kvmark::engine::storage::{Reach, reach, servers_required};
use serde_json::Value;

/// The anomaly kinds, in report order.
const KINDS: [&str; 5] = [
    "lost_write",
    "stale_read",
    "foreign_value",
    "corrupt_value",
    "resurrected_delete",
];

/// Runs kvmark with `args` plus a report directory; returns the exit code, the
/// console, and the one point of results.json.
fn run(dir: &Path, args: &[&str]) -> (i32, String, Value) {
    let reports = dir.join("reports");
    let mut all: Vec<&str> = args.to_vec();
    let reports_arg = reports.display().to_string();
    all.extend(["--report-dir", &reports_arg]);
    let out = kvmark(&all);
    let console = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let bundle = std::fs::read_dir(&reports)
        .unwrap_or_else(|e| panic!("no report directory ({e}): {console}"))
        .next()
        .expect("one bundle")
        .unwrap()
        .path();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(bundle.join("results.json")).unwrap()).unwrap();
    let point = json["points"][0].clone();
    let tsv = std::fs::read_to_string(bundle.join("verify.tsv")).unwrap();
    // verify.tsv agrees with results.json: one row per kind, the same counts.
    let (anomaly, count) = (tsv_column(&tsv, "anomaly"), tsv_column(&tsv, "count"));
    let rows: Vec<&str> = tsv.lines().skip(1).collect();
    assert_eq!(rows.len(), KINDS.len(), "{tsv}");
    for (row, kind) in rows.iter().zip(KINDS) {
        let cols: Vec<&str> = row.split('\t').collect();
        assert_eq!(cols[anomaly], kind, "{tsv}");
        assert_eq!(
            cols[count],
            point["verify"]["counts"][kind].to_string(),
            "verify.tsv and results.json disagree on {kind}"
        );
    }
    (out.status.code().unwrap_or(-1), console, point)
}

fn counts(point: &Value) -> Vec<u64> {
    KINDS
        .iter()
        .map(|k| point["verify"]["counts"][k].as_u64().expect("a count per kind"))
        .collect()
}

/// Anomalies of `kind` found.
fn count(point: &Value, kind: &str) -> u64 {
    point["verify"]["counts"][kind].as_u64().expect("a count per kind")
}

/// The faults of knob `fault` that the sim says it injected (results.json's
/// `verify.injected`, read after the final pass, so its reads are included).
fn injected(point: &Value, fault: &str) -> u64 {
    point["verify"]["injected"][fault]
        .as_u64()
        .unwrap_or_else(|| panic!("no verify.injected.{fault} in {point}"))
}

/// A verify run of the test workload on sim with `fault` set.
fn sim_with(fault: &str) -> (i32, String, Value) {
    sim_run(
        fault,
        "verify.lua",
        &["--threads", "2", "--items", "300", "--ops", "6000"],
    )
}

/// A verify run of test workload `wl` on sim with `fault` set and `args`.
fn sim_run(fault: &str, wl: &str, args: &[&str]) -> (i32, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let opt = format!("sim.{fault}");
    let wl = workload(wl);
    let mut all = vec!["--backend", "sim", "--engine-opt", &opt, "--verify"];
    all.extend(args);
    all.push(&wl);
    run(dir.path(), &all)
}

/// Asserts the run failed with anomalies of exactly the kinds in `found`; returns
/// the console and the point.
fn detected(fault: &str, found: &[&str]) -> (String, Value) {
    detected_maybe_with(fault, found, &[])
}

/// Asserts the run failed with anomalies of every kind in `found`, and of no kind
/// outside `found` and `racing` (kinds a race with a concurrent write may turn some of
/// the fault's reads into); returns the console and the point.
fn detected_maybe_with(fault: &str, found: &[&str], racing: &[&str]) -> (String, Value) {
    let (code, console, point) = sim_with(fault);
    assert_eq!(code, 1, "{fault}: anomalies make the exit status 1\n{console}");
    for (kind, n) in KINDS.iter().zip(counts(&point)) {
        if found.contains(kind) {
            assert!(n > 0, "{fault}: {kind} counted 0, expected some\n{console}");
        } else if !racing.contains(kind) {
            assert_eq!(n, 0, "{fault}: {kind} counted {n}, expected only {found:?}\n{console}");
        }
    }
    let first = &point["verify"]["examples"][0];
    let kind = first["kind"].as_str().unwrap();
    assert!(found.contains(&kind) || racing.contains(&kind), "{first}");
    assert!(first["key"].as_str().unwrap().starts_with('k'), "{first}");
    assert!(console.contains("verify: "), "{console}");
    assert!(console.contains(found[0]), "the console names {}\n{console}", found[0]);
    (console, point)
}

#[test]
fn dropped_writes_are_lost_writes() {
    // Reads during the run may also see the value before a dropped overwrite. One
    // dropped write may be read many times, or overwritten before any read, so the
    // count bounds nothing here (see the write-once test for an exact one).
    let (console, point) = detected("drop_writes=40", &["lost_write", "stale_read"]);
    assert!(injected(&point, "drop_writes") > 0, "{console}");
}

#[test]
fn stale_values_are_stale_reads() {
    // Only an injected read answers wrong, and each read is judged once, so there are
    // at most as many anomalies as injected stale reads; fewer where a concurrent
    // write made the older value acceptable.
    let (console, point) = detected("stale_reads=40", &["stale_read"]);
    let anomalies: u64 = counts(&point).iter().sum();
    let stale = injected(&point, "stale_reads");
    assert!(
        anomalies <= stale,
        "{anomalies} anomalies, {stale} stale reads injected\n{console}"
    );
}

#[test]
fn stale_values_on_one_thread_are_each_one_stale_read() {
    // No write is in flight during a read, so every injected older value is wrong.
    let (code, console, point) = sim_run(
        "stale_reads=40",
        "verify.lua",
        &["--threads", "1", "--items", "300", "--ops", "6000"],
    );
    assert_eq!(code, 1, "{console}");
    let stale = injected(&point, "stale_reads");
    assert!(stale > 0, "{console}");
    assert_eq!(counts(&point), vec![0, stale, 0, 0, 0], "{console}");
}

#[test]
fn flipped_bytes_are_corrupt_values() {
    // Every get is checked and a flipped bit always fails the tag's CRC-32: each
    // corrupted read is exactly one corrupt_value, whatever the concurrency.
    let (console, point) = detected("corrupt_reads=40", &["corrupt_value"]);
    let corrupt = injected(&point, "corrupt_reads");
    assert!(corrupt > 0, "{console}");
    assert_eq!(count(&point, "corrupt_value"), corrupt, "{console}");
    assert!(
        console.contains(&format!("faults the engine injected: corrupt_reads {corrupt}\n")),
        "{console}"
    );
}

#[test]
fn skipped_deletes_are_resurrected_deletes() {
    // A value back from under a delete while a put of the key is in flight is a
    // stale_read by definition: the put is acceptable too, so not only a delete is.
    let (console, point) = detected_maybe_with("resurrect=10", &["resurrected_delete"], &["stale_read"]);
    assert!(injected(&point, "resurrect") > 0, "{console}");
}

#[test]
fn each_write_dropped_from_a_write_once_run_is_one_lost_write() {
    // Each key is written once and read only by the final pass, which finds every
    // dropped write absent.
    let (code, console, point) = sim_run("drop_writes=40", "write_once.lua", &["--threads", "2", "--ops", "2000"]);
    assert_eq!(code, 1, "{console}");
    let dropped = injected(&point, "drop_writes");
    assert!(dropped > 0, "{console}");
    assert_eq!(counts(&point), vec![dropped, 0, 0, 0, 0], "{console}");
}

#[test]
fn each_delete_skipped_from_a_delete_once_run_is_one_resurrected_delete() {
    // Each loaded key is deleted once and read only by the final pass, which finds
    // every skipped delete's value still there.
    let (code, console, point) = sim_run(
        "resurrect=10",
        "delete_once.lua",
        &["--threads", "2", "--items", "300", "--ops", "400"],
    );
    assert_eq!(code, 1, "{console}");
    let skipped = injected(&point, "resurrect");
    assert!(skipped > 0, "{console}");
    assert_eq!(counts(&point), vec![0, 0, 0, 0, skipped], "{console}");
}

#[test]
fn failed_calls_are_counted_errors_and_never_anomalies() {
    // 1 in 500 calls per session: the load (150 puts a thread) and the final pass
    // (about 330 reads) are spared, so every failure is a timed call's error.
    let (code, console, point) = sim_with("fail=500");
    assert_eq!(code, 1, "{console}");
    let errors = point["errors"].as_u64().unwrap();
    assert!(errors > 0, "{console}");
    assert_eq!(errors, injected(&point, "fail"), "{console}");
    assert_eq!(
        counts(&point),
        vec![0; 5],
        "a failed write may or may not land\n{console}"
    );
    assert!(console.contains("injected fault (fail=500)"), "{console}");
}

#[test]
fn clean_runs_are_clean_at_several_threads_and_connections() {
    let dir = tempfile::tempdir().unwrap();
    let wl = workload("verify.lua");
    let (code, console, point) = run(
        dir.path(),
        &[
            "--backend",
            "sim",
            "--engine-opt",
            "sim.remote=true",
            "--engine-opt",
            "sim.service=2us",
            "--verify",
            "--threads",
            "3",
            "--connections",
            "4",
            "--items",
            "200",
            "--ops",
            "6000",
            &wl,
        ],
    );
    assert_eq!(code, 0, "{console}");
    assert_eq!(counts(&point), vec![0; 5]);
    assert_eq!(point["verify"]["mode"], "verify");
    assert!(point["verify"]["reads_checked"].as_u64().unwrap() > 3000, "{point}");
    assert!(point["verify"]["keys_read_back"].as_u64().unwrap() >= 200, "{point}");
    assert!(console.contains("verify: clean"), "{console}");
    assert!(console.contains("not comparable with a plain run's"), "{console}");
}

#[test]
fn specs_and_operation_logs_are_checked_too() {
    let dir = tempfile::tempdir().unwrap();
    let spec = workload("verify.json");
    let log = dir.path().join("verify.ops").display().to_string();
    let out = kvmark(&["gen", &spec, "-o", &log]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (what, args) in [("spec", spec.as_str()), ("operation log", log.as_str())] {
        let sub = tempfile::tempdir().unwrap();
        let mut clean: Vec<&str> = vec!["--backend", "sim", "--verify", "--threads", "2"];
        clean.push(args);
        let (code, console, point) = run(sub.path(), &clean);
        assert_eq!(code, 0, "{what}: {console}");
        assert!(
            point["verify"]["reads_checked"].as_u64().unwrap() > 0,
            "{what}: {point}"
        );
        let sub = tempfile::tempdir().unwrap();
        let mut faulty = clean.clone();
        faulty.extend(["--engine-opt", "sim.drop_writes=20"]);
        let (code, console, point) = run(sub.path(), &faulty);
        assert_eq!(code, 1, "{what}: {console}");
        assert!(counts(&point)[0] > 0, "{what}: dropped writes are lost: {console}");
    }
}

#[test]
fn values_too_short_for_the_tag_are_refused() {
    let out = kvmark(&[
        "--backend",
        "skiplist",
        "--verify",
        "--ops",
        "1",
        &workload("engine_verbs.lua"),
    ]);
    let err = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("shorter than the 20-byte verify tag"), "{err}");
}

#[test]
fn plain_runs_carry_no_verify_figures() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("r").display().to_string();
    let out = kvmark(&["--ops", "100", "--report-dir", &reports, &workload("verify.lua")]);
    assert!(out.status.success());
    let bundle = std::fs::read_dir(&reports).unwrap().next().unwrap().unwrap().path();
    let json: Value = serde_json::from_str(&std::fs::read_to_string(bundle.join("results.json")).unwrap()).unwrap();
    assert!(json["points"][0]["verify"].is_null());
    let tsv = std::fs::read_to_string(bundle.join("verify.tsv")).unwrap();
    assert_eq!(tsv.lines().count(), 1, "a header only: {tsv}");
}

#[test]
fn every_engine_passes_a_short_verify_run_clean() {
    let require = servers_required();
    let data = tempfile::tempdir().unwrap();
    let wl = workload("verify.lua");
    for info in kvmark::engine::registry() {
        let contract = info.knobs.contract();
        match reach(info, &contract, require) {
            Reach::Ready => {}
            Reach::Skip(note) => {
                eprintln!("{note}");
                continue;
            }
            Reach::Fail(why) => panic!("{why}"),
        }
        let opts: Vec<String> = contract.iter().map(|(k, v)| format!("{}.{k}={v}", info.name)).collect();
        let dir = tempfile::tempdir().unwrap();
        let data_dir = data.path().display().to_string();
        let mut args = vec![
            "--backend",
            info.name,
            "--data-dir",
            &data_dir,
            "--verify",
            "--threads",
            "2",
            "--items",
            "200",
            "--ops",
            "2000",
        ];
        for o in &opts {
            args.extend(["--engine-opt", o.as_str()]);
        }
        args.push(&wl);
        let (code, console, point) = run(dir.path(), &args);
        assert_eq!(code, 0, "engine {}: {console}", info.name);
        assert_eq!(counts(&point), vec![0; 5], "engine {}: {console}", info.name);
        assert!(
            point["verify"]["keys_read_back"].as_u64().unwrap() >= 200,
            "engine {}: {point}",
            info.name
        );
    }
}
