//! Key lifetimes in declarative specs, through the real binary: the harness deletes
//! each key when its lifetime ends, the spec's live set learns of it (so live-key
//! operations never pick an expired key), the live set settles at insert rate x
//! lifetime, `kvmark gen` writes the deletes where they fall due on the rate
//! schedule, and bad lifetimes are refused with their JSON path.
//!
//! The timed runs take the SERIAL lock so they do not compete with each other for this
//! machine's cores; their bound is the issue's 5% (widened by what the run's lag
//! explains), and each is explained where it is set.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use common::*;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The count of `op` in the first table of phase `phase` (its service times), if any.
fn phase_count(out: &str, phase: &str, op: &str) -> Option<u64> {
    out.lines()
        .skip_while(|l| *l != format!("phase {phase}:"))
        .skip(1)
        .take_while(|l| !l.starts_with("phase ") && !l.starts_with("all phases"))
        .find(|l| l.split_whitespace().next() == Some(op))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
}

/// Runs a spec whose phase `churn` inserts keys with lifetimes at a rate while point
/// queries pick live keys, and whose phase `count` then point-deletes every key its
/// live set still holds. Checks that every query hit and that both the store's live
/// set at the end of the churn (puts minus expiries) and the spec's own (the deletes
/// of `count`) are within 5% of `want` keys, give or take the inserts (`inserts_per_s`)
/// of the run's largest lag.
fn check_live_set(spec: &Path, threads: &str, want: f64, inserts_per_s: f64) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let report = format!("console,json:{}", json.display());
    let o = kvmark(&["--threads", threads, "--report", &report, spec.to_str().unwrap()]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    // A key lives its lifetime from when its unit ran, so the live set is off from
    // rate x lifetime by the inserts of how much further behind schedule the run was
    // at the end than a lifetime earlier: at most its largest lag, small on a quiet
    // machine, long where a loaded one paused the workers.
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let max_lag_s = doc["points"][0]["pace"]["max_lag_ns"].as_u64().unwrap_or(0) as f64 / 1e9;
    let slack = 0.05 * want + inserts_per_s * max_lag_s;
    let count = |phase: &str, op: &str| phase_count(&out, phase, op).unwrap_or(0) as f64;
    // Every query picked a live key: expired keys left the spec's live set in time.
    assert!(out.contains("get hit rate: 100.0%"), "{out}");
    assert!(count("churn", "get") > 500.0, "{out}");
    let expired = count("churn", "expire");
    assert!(expired > want / 2.0, "expiries were issued: {expired}\n{out}");
    let store = count("churn", "put") - expired;
    assert!(
        (store - want).abs() <= slack,
        "the store holds {store} live keys, want {want} +- {slack}\n{out}"
    );
    // The spec's live set at the end of the churn is what `count` deletes plus the keys
    // that fall due during `count` (those expire between the phases, however long the
    // gap on a loaded machine: expiry ops are counted there). What `count` deletes is
    // never more than what was put and not expired.
    let deleted = count("count", "del");
    let spec_live = deleted + count("count", "expire");
    assert!(
        (spec_live - want).abs() <= slack,
        "the spec's live set held {spec_live} keys, want {want} +- {slack}\n{out}"
    );
    assert!(deleted <= store, "{deleted} deleted, {store} live\n{out}");
}

#[test]
fn a_constant_lifetime_keeps_the_live_set_at_insert_rate_times_lifetime() {
    let _serial = serial();
    // 2000 units/s, 3 inserts to 1 point query: 1500 inserts/s, each key living 2 s,
    // so 3000 live keys from 2 s on. The run takes 3.5 s. The mix is drawn per unit, so
    // the inserts of the last 2 s vary by about 27 (1%); the gap between the phases
    // (tens of ms, each losing 1.5 keys per ms) takes about as much again.
    let (_d, spec) = spec_file(
        "constant.json",
        r#"{"sections": [{"key_len": 12, "val_len": 16, "groups": [
              {"name": "churn", "rate": 2000, "duration": 3.5,
               "inserts": {"op_count": 3, "lifetime": 2}, "point_queries": {"op_count": 1}},
              {"name": "count", "point_deletes": {"op_count": 100000}}]}]}"#,
    );
    check_live_set(&spec, "1", 3000.0, 1500.0);
}

#[test]
fn a_lifetime_drawn_from_a_distribution_sets_the_mean_live_set_with_threads() {
    let _serial = serial();
    // 3000 units/s over 2 threads, 2 inserts to 1 query: 2000 inserts/s; lifetimes
    // uniform in [0.5, 1.5) s (inherited from the section) average 1 s, so 2000 live
    // keys from 1.5 s on. Random lifetimes add about 18 keys (1%) of spread.
    let (_d, spec) = spec_file(
        "drawn.json",
        r#"{"sections": [{"key_len": 12, "val_len": 16, "lifetime": {"uniform": {"min": 0.5, "max": 1.5}},
            "groups": [
              {"name": "churn", "rate": 3000, "duration": 2.5,
               "inserts": {"op_count": 2}, "point_queries": {"op_count": 1}},
              {"name": "count", "point_deletes": {"op_count": 100000}}]}]}"#,
    );
    check_live_set(&spec, "2", 2000.0, 2000.0);
}

#[test]
fn expiries_mix_with_the_specs_own_deletes_and_ranges() {
    // Closed loop, short lifetimes: keys expire while point deletes, range deletes and
    // ranges over an ordered index remove and read them. Every get must still hit (a
    // key deleted twice, by the spec and by its expiry, must not be counted twice).
    let (_d, spec) = spec_file(
        "mixed.json",
        r#"{"sections": [{"key": {"segmented": {"segments": ["k", {"uniform": {"len": 10,
            "character_set": "numeric"}}], "separator": ":"}}, "val_len": 8, "selection": {"zipf": {}},
            "groups": [
              {"name": "load", "inserts": {"op_count": 5000}},
              {"name": "mixed", "duration": 1,
               "inserts": {"op_count": 40, "lifetime": {"exponential": {"lambda": 50}}},
               "point_queries": {"op_count": 30}, "updates": {"op_count": 10},
               "point_deletes": {"op_count": 10, "selection": {"latest": {}}},
               "range_deletes": {"op_count": 1, "scan_length": 5},
               "range_queries": {"op_count": 2, "scan_length": 20, "range_format": "StartEnd"}}]}]}"#,
    );
    let o = kvmark(&["--threads", "1,3", spec.to_str().unwrap()]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert_eq!(out.matches("get hit rate: 100.0%").count(), 2, "{out}");
    assert!(phase_count(&out, "mixed", "expire").unwrap_or(0) > 1000, "{out}");
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
}

/// Runs `kvmark gen` and returns the log's lines as text.
fn gen_log(spec: &Path) -> Vec<String> {
    let out = tempfile::NamedTempFile::new().unwrap();
    let o = kvmark(&["gen", spec.to_str().unwrap(), "-o", out.path().to_str().unwrap()]);
    assert_exit(&o, 0);
    std::fs::read_to_string(out.path())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn gen_writes_expiry_deletes_where_they_fall_due_on_the_rate_schedule() {
    // 1000 inserts/s living 0.5 s: the delete of the key inserted at unit i is due at
    // unit i + 500, so once 500 keys were inserted exactly 500 are live before every
    // unit; then queries at 1000/s find the live set draining by one key per unit.
    let (_d, spec) = spec_file(
        "gen.json",
        r#"{"sections": [{"key_len": 10, "val_len": 4, "groups": [
              {"name": "fill", "rate": 1000, "inserts": {"op_count": 2000, "lifetime": 0.5}},
              {"name": "drain", "rate": 1000, "point_queries": {"op_count": 300}}]}]}"#,
    );
    let lines = gen_log(&spec);
    let mut live: HashSet<&str> = HashSet::new();
    let (mut units, mut deletes) = (0u64, 0u64);
    for line in &lines {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "#" => continue,
            "I" => assert!(live.insert(f[1]), "insert of a live key: {line}"),
            "D" => {
                assert!(live.remove(f[1]), "delete of a key that is not live: {line}");
                deletes += 1;
                continue;
            }
            "P" => assert!(live.contains(f[1]), "query of an expired key: {line}"),
            other => panic!("unexpected line kind {other}: {line}"),
        }
        units += 1;
        // After unit u (0-based) the keys of units u-499..=u are live, while filling.
        if (500..=2000).contains(&units) {
            assert_eq!(live.len(), 500, "after {units} units");
        }
        if units > 2000 {
            assert_eq!(live.len() as u64, 500 - (units - 2000), "after {units} units");
        }
    }
    assert_eq!((units, deletes), (2300, 1800));
    assert_eq!(gen_log(&spec), lines, "gen with lifetimes is deterministic");
}

#[test]
fn gen_with_drawn_lifetimes_never_queries_an_expired_key() {
    let (_d, spec) = spec_file(
        "gendrawn.json",
        r#"{"sections": [{"key_len": 10, "val_len": 4, "groups": [
              {"rate": 2000, "inserts": {"op_count": 3000,
               "lifetime": {"normal": {"mean": 0.3, "std_dev": 0.2}}},
               "point_queries": {"op_count": 3000}, "updates": {"op_count": 500}}]}]}"#,
    );
    let lines = gen_log(&spec);
    let mut live: HashSet<&str> = HashSet::new();
    let mut deletes = 0;
    for line in lines.iter().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "I" => assert!(live.insert(f[1]), "{line}"),
            "D" => {
                assert!(live.remove(f[1]), "{line}");
                deletes += 1;
            }
            _ => assert!(live.contains(f[1]), "an expired key was picked: {line}"),
        }
    }
    // 6500 units at 2000/s last 3.25 s: nearly every key (mean 0.3 s) expired in time.
    assert!(deletes > 2500, "{deletes} deletes");
}

#[test]
fn gen_refuses_lifetimes_without_a_rate_to_place_their_deletes() {
    let (_d, spec) = spec_file(
        "norate.json",
        r#"{"sections": [{"key_len": 10, "val_len": 4, "groups": [
              {"inserts": {"op_count": 10}},
              {"rate": 100, "inserts": {"op_count": 10, "lifetime": 1}},
              {"point_queries": {"op_count": 10}}]}]}"#,
    );
    let o = kvmark(&["gen", spec.to_str().unwrap(), "-o", "/dev/null"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    for needle in [
        "norate.json",
        "sections[0].groups[2]",
        "sections[0].groups[1]",
        "needs a rate",
    ] {
        assert!(err.contains(needle), "'{needle}' missing from {err}");
    }
    // The same spec runs: a run has a clock.
    let o = kvmark(&[spec.to_str().unwrap()]);
    assert_exit(&o, 0);
}

#[test]
fn bad_lifetimes_name_their_path_and_exit_2() {
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"inserts": {"op_count": 1, "lifetime": -1}}"#,
            &["sections[0].groups[0].inserts.lifetime", "from 0 to", "-1"],
        ),
        (
            r#"{"inserts": {"op_count": 1, "lifetime": 1e300}}"#,
            &["sections[0].groups[0].inserts.lifetime", "from 0 to"],
        ),
        (
            r#"{"lifetime": "2s", "inserts": {"op_count": 1}}"#,
            &["sections[0].groups[0].lifetime", "distribution"],
        ),
        (
            r#"{"inserts": {"op_count": 1, "lifetime": {"uniform": {"min": 3, "max": 1}}}}"#,
            &["sections[0].groups[0].inserts.lifetime", "min <= max"],
        ),
        (
            r#"{"inserts": {"op_count": 1, "lifetime": {"exponential": {"lambda": 1, "mean": 2}}}}"#,
            &["inserts.lifetime.exponential", "mean"],
        ),
        (
            r#"{"lifetime": {"latest": {}}, "point_queries": {"op_count": 1}, "inserts": {"op_count": 1}}"#,
            &["sections[0].groups[0].lifetime", "latest"],
        ),
        (
            r#"{"inserts": {"op_count": 1, "lifetime": {"zipf": {"s": 1}}}}"#,
            &["inserts.lifetime", "needs `n`"],
        ),
    ];
    for (i, (group, needles)) in cases.iter().enumerate() {
        let json = format!(r#"{{"sections": [{{"key_len": 8, "val_len": 4, "groups": [{group}]}}]}}"#);
        let (_d, path) = spec_file(&format!("life{i}.json"), &json);
        for args in [
            vec![path.to_str().unwrap()],
            vec!["gen", path.to_str().unwrap(), "-o", "/dev/null"],
        ] {
            let o = kvmark(&args);
            assert_exit(&o, 2);
            let err = stderr(&o);
            assert!(
                err.contains(&format!("life{i}.json")),
                "case {i}: no file name in {err}"
            );
            for n in *needles {
                assert!(err.contains(n), "case {i} ({json}): '{n}' missing from {err}");
            }
            assert!(!err.contains("panicked"), "{err}");
        }
    }
    // A section's lifetime is checked where it is written, even when no group inserts.
    let (_d, path) = spec_file(
        "sectionlife.json",
        r#"{"sections": [{"key_len": 8, "val_len": 4, "lifetime": -2, "groups": [
              {"empty_point_queries": {"op_count": 1}}]}]}"#,
    );
    let o = kvmark(&[path.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("sections[0].lifetime: give a lifetime"),
        "{}",
        stderr(&o)
    );
}
