//! Scale-out through the real binary: segments do exactly one process's work
//! (`kvmark gen` logs as multisets of lines; a Lua workload's per-kind counts and the
//! keys it inserted), `kvmark merge` is exact (counts summed, histograms equal to an
//! independent merge of the segments' logs) and refuses directories that do not
//! belong together, three segments started by Open MPI's mpirun against Redis merge
//! into one report, and the Kubernetes Indexed Job manifest is well formed.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use common::*;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::Value;

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn failed_with(o: &Output, code: i32, words: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    for w in words {
        assert!(err.contains(w), "'{w}' not in: {err}");
    }
}

/// A spec with a growing key space (inserts in two groups) and reads and updates of
/// it, in two sections.
const SPEC: &str = r#"{"sections": [
  {"key_len": 12, "val_len": 16, "groups": [
    {"name": "fill", "inserts": {"op_count": 1001}},
    {"name": "mix", "inserts": {"op_count": 307}, "point_queries": {"op_count": 499},
     "updates": {"op_count": 211}, "range_queries": {"op_count": 50, "selectivity": 0.01}}]},
  {"key_len": 10, "val_len": 8, "groups": [
    {"name": "second", "inserts": {"op_count": 400}, "point_deletes": {"op_count": 90}}]}]}"#;

fn gen_log(spec: &Path, extra: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let out = kvmark_env(
        env,
        &[&["gen", spec.to_str().unwrap(), "-o", "-", "--seed", "7"], extra].concat(),
    );
    ok(&out).lines().map(str::to_string).collect()
}

/// The `# phase` lines in order, and every other line counted.
fn split(lines: &[String]) -> (Vec<String>, BTreeMap<String, usize>) {
    let mut phases = Vec::new();
    let mut ops = BTreeMap::new();
    for l in lines {
        if l.starts_with('#') {
            phases.push(l.clone());
        } else {
            *ops.entry(l.clone()).or_insert(0) += 1;
        }
    }
    (phases, ops)
}

#[test]
fn gen_segments_together_write_one_processs_lines() {
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("grow.json");
    std::fs::write(&spec, SPEC).unwrap();
    let (one_phases, one) = split(&gen_log(&spec, &["--threads", "6"], &[]));
    assert_eq!(one.values().sum::<usize>(), 1001 + 307 + 499 + 211 + 50 + 400 + 90);
    let mut together: BTreeMap<String, usize> = BTreeMap::new();
    let mut parts = Vec::new();
    for i in 0..3 {
        // Segment 1 as Open MPI would start it, the others by hand.
        let lines = if i == 1 {
            let env = [("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "3")];
            gen_log(&spec, &["--threads", "2", "--segment", "auto"], &env)
        } else {
            gen_log(&spec, &["--threads", "2", "--segment", &format!("{i}/3")], &[])
        };
        let (phases, ops) = split(&lines);
        assert_eq!(phases, one_phases, "segment {i} has the same phases");
        for (l, n) in &ops {
            *together.entry(l.clone()).or_insert(0) += n;
        }
        parts.push(ops);
    }
    assert_eq!(together, one, "the segments' lines together are the one process's");
    assert_ne!(parts[0], parts[1], "segments write different shares");
    // A different split of the same 6 threads gives the same lines too.
    let mut halves: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..2 {
        let (_, ops) = split(&gen_log(
            &spec,
            &["--threads", "3", "--segment", &format!("{i}/2")],
            &[],
        ));
        for (l, n) in ops {
            *halves.entry(l).or_insert(0) += n;
        }
    }
    assert_eq!(halves, one);
    let o = kvmark(&["gen", spec.to_str().unwrap(), "-o", "-", "--segment", "3/3"]);
    failed_with(&o, 2, &["--segment '3/3'", "I must be below N"]);
}

/// Per operation kind, the calls of point 0 in a results.json.
fn kind_counts(doc: &Value) -> BTreeMap<String, u64> {
    doc["points"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["op"].as_str().unwrap().to_string(), o["count"].as_u64().unwrap()))
        .collect()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every key in the sqlite stores kept under `data`.
#[cfg(feature = "sqlite")]
fn stored_keys(data: &Path) -> Vec<Vec<u8>> {
    use kvmark::engine::{EngineOptions, OpenRequest, StorePlace};
    let info = kvmark::engine::find("sqlite").unwrap();
    let opts = EngineOptions::new();
    let mut keys = Vec::new();
    for entry in std::fs::read_dir(data).unwrap() {
        let dir = entry.unwrap().path();
        let store = (info.open)(&OpenRequest::new(StorePlace::Dir(dir), &opts)).unwrap();
        let mut session = store.session().unwrap();
        session
            .scan(b"", &[0xff; 16], 0, &mut |k, _| {
                keys.push(k.to_vec());
                false
            })
            .unwrap();
        drop(session);
        store.close().unwrap();
    }
    keys.sort();
    keys
}

#[cfg(feature = "sqlite")]
#[test]
fn lua_segments_run_one_processs_operations_and_insert_its_keys() {
    let d = tempfile::tempdir().unwrap();
    let wl = workload("segment_keys.lua");
    let run = |data: &Path, json: &Path, extra: &[&str]| {
        std::fs::create_dir_all(data).unwrap();
        let sink = format!("json:{}", json.display());
        let base = [
            "--backend",
            "sqlite",
            "--data-dir",
            data.to_str().unwrap(),
            "--keep-data",
            "--ops",
            "3001",
            "--items",
            "200",
            "--seed",
            "11",
            "--report",
            &sink,
        ];
        ok(&kvmark(&[&base[..], extra, &[&wl]].concat()));
        read_json(json)
    };
    let one = run(&d.path().join("one"), &d.path().join("one.json"), &["--threads", "3"]);
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..3 {
        let seg = run(
            &d.path().join("segs"),
            &d.path().join(format!("seg{i}.json")),
            &["--threads", "1", "--segment", &format!("{i}/3")],
        );
        assert_eq!(seg["run"]["scale"]["segment"], i);
        for (k, n) in kind_counts(&seg) {
            *counts.entry(k).or_insert(0) += n;
        }
    }
    assert_eq!(counts, kind_counts(&one), "per-kind counts match");
    assert_eq!(counts.values().sum::<u64>(), 3001);
    let (one_keys, seg_keys) = (stored_keys(&d.path().join("one")), stored_keys(&d.path().join("segs")));
    assert!(one_keys.len() > 1000, "{} keys", one_keys.len());
    assert_eq!(
        seg_keys, one_keys,
        "the segments' stores together hold the one store's keys"
    );
}

/// Every interval of every log under `dir/hdr`, merged per tag.
fn hlog_tags(dir: &Path) -> BTreeMap<String, Histogram<u64>> {
    let mut tags: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut de = Deserializer::new();
    for entry in std::fs::read_dir(dir.join("hdr")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for e in IntervalLogIterator::new(&bytes) {
            if let Ok(LogEntry::Interval(i)) = e {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .unwrap();
                let h: Histogram<u64> = de.deserialize(&mut raw.as_slice()).unwrap();
                let tag = i.tag().unwrap().as_str().to_string();
                match tags.get_mut(&tag) {
                    Some(t) => t.add(&h).unwrap(),
                    None => {
                        tags.insert(tag, h);
                    }
                }
            }
        }
    }
    tags
}

fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// The segments' directories: the report directories under `parent`.
fn report_dirs(parent: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("results.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Merges `dirs` into `out` and checks it is exact: counts, errors and units summed,
/// every histogram equal to an independent merge of the segments' logs, the
/// per-segment table there. Returns the merged results.json.
fn merge_and_check(dirs: &[PathBuf], out: &Path) -> Value {
    let stdout = ok(&merge_cmd(dirs, out));
    assert!(stdout.contains("=== segments ==="), "{stdout}");
    let merged = read_json(&out.join("results.json"));
    let segs: Vec<Value> = dirs.iter().map(|d| read_json(&d.join("results.json"))).collect();
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for s in &segs {
        for (k, n) in kind_counts(s) {
            *want.entry(k).or_insert(0) += n;
        }
    }
    assert_eq!(kind_counts(&merged), want, "merged counts are the sum");
    let sum = |field: &str| {
        segs.iter()
            .map(|s| s["points"][0][field].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(merged["points"][0]["errors"].as_u64(), Some(sum("errors")));
    let units = |d: &Value| d["points"][0]["repeats"][0]["units"].as_u64().unwrap();
    assert_eq!(units(&merged), segs.iter().map(units).sum::<u64>());
    let threads: u64 = segs.iter().map(|s| s["points"][0]["threads"].as_u64().unwrap()).sum();
    assert_eq!(merged["points"][0]["threads"].as_u64(), Some(threads));
    // The merged logs against an independent merge of the segments' logs.
    let mut independent: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for d in dirs {
        for (tag, h) in hlog_tags(d) {
            match independent.get_mut(&tag) {
                Some(t) => t.add(&h).unwrap(),
                None => {
                    independent.insert(tag, h);
                }
            }
        }
    }
    let mine = hlog_tags(out);
    assert_eq!(mine.keys().collect::<Vec<_>>(), independent.keys().collect::<Vec<_>>());
    for (tag, h) in &independent {
        assert_eq!(buckets(&mine[tag]), buckets(h), "tag {tag}");
    }
    // The json's percentiles come from the same merged histograms.
    for op in merged["points"][0]["ops"].as_array().unwrap() {
        let name = op["op"].as_str().unwrap();
        let h = independent
            .iter()
            .filter(|(t, _)| t.rsplit_once('.').map(|(_, o)| o) == Some(name))
            .fold(Histogram::<u64>::new(3).unwrap(), |mut a, (_, h)| {
                a.add(h).unwrap();
                a
            });
        assert_eq!(
            op["percentiles_ns"]["p99"].as_u64(),
            Some(h.value_at_quantile(0.99)),
            "{name}"
        );
    }
    // Each merged repeat's own latency per kind comes from the intervals of that
    // repeat in every segment's log: its calls are the segments' calls in that
    // repeat, and its median lies between theirs.
    for (r, rep) in merged["points"][0]["repeats"].as_array().unwrap().iter().enumerate() {
        let ops = rep["ops"].as_array().unwrap_or_else(|| panic!("repeat {r}: {rep}"));
        assert!(!ops.is_empty());
        for op in ops {
            let name = op["op"].as_str().unwrap();
            let theirs: Vec<&Value> = segs
                .iter()
                .filter_map(|s| {
                    s["points"][0]["repeats"][r]["ops"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|o| o["op"] == name)
                })
                .collect();
            let calls: u64 = theirs.iter().map(|o| o["count"].as_u64().unwrap()).sum();
            assert_eq!(op["count"].as_u64(), Some(calls), "repeat {r} {name}");
            let p50 = |o: &Value| o["percentiles_ns"]["p50"].as_u64().unwrap();
            let (lo, hi) = (theirs.iter().map(|o| p50(o)).min(), theirs.iter().map(|o| p50(o)).max());
            assert!(
                (lo.unwrap()..=hi.unwrap()).contains(&p50(op)),
                "repeat {r} {name}: merged p50 {} outside the segments' {lo:?}..{hi:?}",
                p50(op)
            );
        }
    }
    let table = std::fs::read_to_string(out.join("segments.tsv")).unwrap();
    assert_eq!(table.lines().count(), 1 + dirs.len() + 1, "{table}");
    assert_eq!(merged["segments"].as_array().unwrap().len(), dirs.len() + 1);
    merged
}

#[test]
fn merge_is_exact_and_refuses_what_does_not_belong_together() {
    let d = tempfile::tempdir().unwrap();
    let parent = d.path().join("runs");
    let mixed = bundled("mixed.lua");
    let segment = |i: usize, seed: &str, parent: &Path| {
        let args = [
            "--threads",
            "2",
            "--ops",
            "20000",
            "--items",
            "500",
            "--seed",
            seed,
            "--repeat",
            "2",
            "--timeline",
            "0.05",
            "--segment",
            &format!("{i}/3"),
            "--report-dir",
            parent.to_str().unwrap(),
            &mixed,
        ];
        ok(&kvmark(&args));
    };
    for i in 0..3 {
        segment(i, "5", &parent);
    }
    let dirs = report_dirs(&parent);
    assert_eq!(dirs.len(), 3);
    let merged = merge_and_check(&dirs, &d.path().join("merged"));
    assert!(merged["points"][0]["phases"][0]["ops"].as_array().is_some());
    let timeline = std::fs::read_to_string(d.path().join("merged/timeline.tsv")).unwrap();
    assert!(timeline.lines().count() > 2, "a merged timeline: {timeline}");

    // The merged directory plots like any run's.
    ok(&kvmark(&[
        "plot",
        d.path().join("merged").to_str().unwrap(),
        "--out",
        d.path().join("figs").to_str().unwrap(),
        "--html",
    ]));

    let merge = |dirs: &[&Path], out: &str| {
        let mut args = vec!["merge".to_string()];
        args.extend(dirs.iter().map(|p| p.display().to_string()));
        args.extend(["--out".to_string(), d.path().join(out).display().to_string()]);
        kvmark(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let o = merge(&[&dirs[0], &dirs[1], &dirs[1]], "dup");
    failed_with(&o, 2, &["are both segment 1 of 3"]);
    let o = merge(&[&dirs[0], &dirs[2]], "missing");
    failed_with(&o, 2, &["segment(s) 1 of 3 missing"]);
    let other = d.path().join("other");
    segment(1, "6", &other);
    let odd = &report_dirs(&other)[0];
    let o = merge(&[&dirs[0], odd, &dirs[2]], "seed");
    failed_with(&o, 2, &["run.seed", &odd.display().to_string()]);
    let whole = d.path().join("whole");
    ok(&kvmark(&[
        "--ops",
        "100",
        "--report-dir",
        whole.to_str().unwrap(),
        &mixed,
    ]));
    let o = merge(&[&report_dirs(&whole)[0]], "whole-out");
    failed_with(&o, 2, &["not a segment's report"]);
    // A segment whose histogram log lost its later intervals, as a run stopped while
    // writing it leaves it (cut at a line's end, so every line left reads), is refused
    // naming the segment, rather than merged into figures short of its calls.
    let cut = d.path().join("cut-segment");
    ok(&Command::new("cp").arg("-r").arg(&dirs[1]).arg(&cut).output().unwrap());
    let hlogs: Vec<PathBuf> = std::fs::read_dir(cut.join("hdr"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlog"))
        .collect();
    assert_eq!(hlogs.len(), 1, "one point, one log: {hlogs:?}");
    let log = std::fs::read_to_string(&hlogs[0]).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let intervals = lines.iter().filter(|l| l.starts_with("Tag=")).count();
    assert!(intervals > 4, "{log}");
    let keep = lines.len() - intervals / 2;
    std::fs::write(&hlogs[0], lines[..keep].join("\n") + "\n").unwrap();
    let o = merge(&[&dirs[0], &cut, &dirs[2]], "cut-out");
    failed_with(
        &o,
        2,
        &[
            &cut.display().to_string(),
            "the histogram log under hdr/ holds",
            "the log is incomplete",
        ],
    );
    // Refused part-way, the merge leaves --out as empty as it found it: no report short
    // of a segment's calls for a later step to pick up.
    let left: Vec<_> =
        std::fs::read_dir(d.path().join("cut-out")).map_or(Vec::new(), |r| r.flatten().map(|e| e.path()).collect());
    assert!(left.is_empty(), "a refused merge left {left:?}");
    let o = merge(&[&dirs[0], &dirs[1], &dirs[2]], "merged");
    failed_with(&o, 2, &["exists and is not empty"]);

    // `compare` tests a merged run's latency on its repeats.
    let judged = |dir: &Path| {
        let dir = dir.to_str().unwrap();
        let doc: Value = serde_json::from_str(&ok(&kvmark(&["compare", dir, dir, "--format", "json"]))).unwrap();
        let point = doc["points"][0].clone();
        assert!(point["p_value"].as_f64().is_some(), "{point}");
        point["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op["p50_ns"]["significant"].clone())
            .collect::<Vec<_>>()
    };
    assert!(judged(&d.path().join("merged")).iter().all(|s| *s == false));
    // A segment without per-repeat latencies (an older kvmark's) makes the merged
    // repeats' latency unknown, not made up; compare then says so.
    let seg0 = dirs[0].join("results.json");
    let mut doc = read_json(&seg0);
    for r in doc["points"][0]["repeats"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("ops");
    }
    std::fs::write(&seg0, serde_json::to_string(&doc).unwrap()).unwrap();
    ok(&merge(&[&dirs[0], &dirs[1], &dirs[2]], "unknown"));
    let unknown = read_json(&d.path().join("unknown/results.json"));
    for r in unknown["points"][0]["repeats"].as_array().unwrap() {
        assert!(r["ops"].is_null(), "{r}");
    }
    assert!(judged(&d.path().join("unknown")).iter().all(Value::is_null));
}

#[test]
fn segment_flags_are_checked() {
    let mixed = bundled("mixed.lua");
    let o = kvmark_env(&[("SLURM_PROCID", "2")], &["--segment", "auto", "--ops", "10", &mixed]);
    failed_with(&o, 2, &["SLURM_NTASKS is not"]);
    let o = kvmark_env(
        &[("JOB_COMPLETION_INDEX", "0")],
        &["--segment", "auto", "--ops", "10", &mixed],
    );
    failed_with(&o, 2, &["--segment-count"]);
    let o = kvmark(&["--start-at", "2099-01-01T00:00:00Z", "--ops", "10", &mixed]);
    failed_with(&o, 2, &["more than a day"]);
    let o = kvmark(&["--segment", "0/2", "--epochs", "1", "--ops", "10", &bundled("ivs.lua")]);
    failed_with(&o, 2, &["cannot run epochs"]);
    // A passed start warns and runs at once; the report records it.
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("r.json");
    let o = kvmark(&[
        "--start-at",
        "1000000000",
        "--segment",
        "1/2",
        "--ops",
        "10",
        "--report",
        &format!("json:{}", json.display()),
        &mixed,
    ]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("has passed"));
    let doc = read_json(&json);
    let scale = &doc["run"]["scale"];
    assert_eq!(
        (scale["segment"].as_u64(), scale["segments"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(scale["start_at_unix_ns"].as_u64(), Some(1_000_000_000_000_000_000));
    assert!(scale["clock_sync"].as_str().unwrap().starts_with("kernel: "));
    assert!(!scale["host"].as_str().unwrap().is_empty());
    let phase = &doc["points"][0]["repeats"][0]["phases"][0];
    let (start, end) = (
        phase["start_unix_ns"].as_u64().unwrap(),
        phase["end_unix_ns"].as_u64().unwrap(),
    );
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
    assert!(
        start <= end && end <= now && now - start < 120_000_000_000,
        "{start} {end} {now}"
    );
}

/// Whether the Redis server of the launcher tests answers: false (said on stderr) when
/// it is not there and servers are not required; a failure when they are.
#[cfg(feature = "redis")]
fn redis_ready() -> bool {
    use kvmark::engine::storage::{Reach, reach, servers_required};
    let info = kvmark::engine::find("redis").unwrap();
    match reach(info, &kvmark::engine::EngineOptions::new(), servers_required()) {
        Reach::Ready => true,
        Reach::Skip(note) => {
            eprintln!("{note}");
            false
        }
        Reach::Fail(why) => panic!("{why}"),
    }
}

/// The segment index each of `dirs` recorded (`run.scale.segment`).
fn segment_indexes(dirs: &[PathBuf]) -> BTreeSet<u64> {
    dirs.iter()
        .map(|d| {
            read_json(&d.join("results.json"))["run"]["scale"]["segment"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

/// The size of every launcher test's run (segment_keys.lua over 6 threads in all).
const SEGMENT_BENCH: [&str; 8] = ["--ops", "6000", "--items", "300", "--seed", "3", "--timeline", "0.1"];

/// `mpirun`, or None (said on stderr) where Open MPI is not installed and servers are
/// not required.
fn mpirun() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("mpirun"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        skip_or_fail("mpirun is not installed (scripts/setup installs openmpi-bin)");
    }
    found
}

/// mpirun starting three kvmark segments (`--segment auto`) against the Redis at `url`;
/// the caller adds kvmark's other arguments.
#[cfg(feature = "redis")]
fn mpirun_segments(mpirun: &Path, url: &str) -> Command {
    let mut cmd = Command::new(mpirun);
    cmd.args(["--oversubscribe", "-np", "3"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("KVMARK_REDIS_URL", url)
        .arg(env!("CARGO_BIN_EXE_kvmark"))
        .args(["--segment", "auto"])
        .current_dir(root());
    cmd
}

#[cfg(feature = "redis")]
#[test]
fn mpirun_starts_three_segments_against_redis_and_they_merge_exactly() {
    let Some(mpirun) = redis_ready().then(mpirun).flatten() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let parent = d.path().join("segments");
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 4;
    let start = start.to_string();
    let url = std::env::var("KVMARK_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string());
    let wl = workload("segment_keys.lua");
    let bench = [&["--backend", "redis"][..], &SEGMENT_BENCH].concat();
    let mut cmd = mpirun_segments(&mpirun, &url);
    cmd.args([
        "--start-at",
        &start,
        "--threads",
        "2",
        "--report-dir",
        parent.to_str().unwrap(),
    ])
    .args(&bench)
    .arg(&wl);
    let o = cmd.output().expect("run mpirun");
    ok(&o);
    let dirs = report_dirs(&parent);
    assert_eq!(dirs.len(), 3, "one report directory per segment");
    let indexes = segment_indexes(&dirs);
    assert_eq!(indexes, BTreeSet::from([0, 1, 2]), "mpirun's ranks are the segments");
    let merged = merge_and_check(&dirs, &d.path().join("merged"));
    assert_eq!(merged["points"][0]["threads"].as_u64(), Some(6));
    assert_eq!(merged["points"][0]["repeats"][0]["units"].as_u64(), Some(6000));

    // The segments shared one namespace on the server: it holds exactly the keys one
    // process of 6 threads inserts.
    let tag = read_json(&dirs[0].join("results.json"))["run"]["scale"]["shared_tag"]
        .as_str()
        .unwrap()
        .to_string();
    let one = spawn_kvmark(&[&bench[..], &["--threads", "6", "--keep-data", &wl]].concat());
    let pid = one.id();
    ok(&one.wait_with_output().unwrap());
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut keys_of = |prefix: String| -> BTreeSet<String> {
        let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query(&mut c).unwrap();
        let set: BTreeSet<String> = keys
            .iter()
            .filter_map(|k| k.split_once(':').map(|(_, key)| key.to_string()))
            .collect();
        let _: () = redis::cmd("DEL").arg(&keys).query(&mut c).unwrap();
        set
    };
    let shared = keys_of(format!("kvmark_redis_{tag}_"));
    let single = keys_of(format!("kvmark_redis_{pid}_"));
    assert!(single.len() > 3000, "{} keys", single.len());
    assert_eq!(shared, single, "the segments inserted one process's keys");
}

/// The launcher variables a job identity is read from, removed so a test's segments
/// see only the ones it sets.
const LAUNCHER_VARS: [&str; 8] = [
    "KVMARK_JOB_ID",
    "PMIX_NAMESPACE",
    "OMPI_MCA_ess_base_jobid",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "JOB_COMPLETION_INDEX",
    "OMPI_COMM_WORLD_RANK",
    "SLURM_PROCID",
];

/// kvmark with `args`, its output captured, no launcher variables but `env`.
#[cfg(feature = "redis")]
fn segment_command(env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvmark"));
    for v in LAUNCHER_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied())
        .args(args)
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// The arrivals (Unix ns) the segments of run `tag` wrote where they met on Redis,
/// by segment; the meeting's and the shared namespaces' keys are removed.
#[cfg(feature = "redis")]
fn met_at_redis(url: &str, tag: &str) -> BTreeMap<String, u64> {
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("kvmark_redis_{tag}_meet:*"))
        .query(&mut c)
        .unwrap();
    let mut arrivals = BTreeMap::new();
    for k in &keys {
        let v: String = redis::cmd("GET").arg(k).query(&mut c).unwrap();
        arrivals.insert(k.split_once(':').unwrap().1.to_string(), v.parse().unwrap());
    }
    let all: Vec<String> = redis::cmd("KEYS")
        .arg(format!("kvmark_redis_{tag}_*"))
        .query(&mut c)
        .unwrap();
    if !all.is_empty() {
        let _: () = redis::cmd("DEL").arg(&all).query(&mut c).unwrap();
    }
    arrivals
}

/// The start of the first timed phase each of `dirs` ran (Unix ns).
fn first_timed_starts(dirs: &[PathBuf]) -> Vec<u64> {
    dirs.iter()
        .map(|d| {
            read_json(&d.join("results.json"))["points"][0]["repeats"][0]["phases"][0]["start_unix_ns"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[cfg(feature = "redis")]
#[test]
fn mpirun_segments_without_a_start_meet_at_redis_and_merge_exactly() {
    let Some(mpirun) = redis_ready().then(mpirun).flatten() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let parent = d.path().join("segments");
    let url = std::env::var("KVMARK_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string());
    let mut cmd = mpirun_segments(&mpirun, &url);
    for v in LAUNCHER_VARS {
        cmd.env_remove(v);
    }
    cmd.args(["--backend", "redis", "--threads", "2", "--report-dir"])
        .arg(&parent)
        .args(SEGMENT_BENCH)
        .arg(workload("segment_keys.lua"));
    let o = cmd.output().expect("run mpirun");
    let said = ok(&o);
    let dirs = report_dirs(&parent);
    assert_eq!(dirs.len(), 3, "one report directory per segment\n{said}");
    let merged = merge_and_check(&dirs, &d.path().join("merged"));
    assert_eq!(merged["points"][0]["repeats"][0]["units"].as_u64(), Some(6000));

    // Every segment took the same job from mpirun, and so the same namespace.
    let runs: Vec<Value> = dirs
        .iter()
        .map(|d| read_json(&d.join("results.json"))["run"].clone())
        .collect();
    let jobs: BTreeSet<String> = runs.iter().map(|r| r["scale"]["job"].to_string()).collect();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let from = runs[0]["scale"]["job"]["from"].as_str().unwrap();
    assert!(from == "PMIX_NAMESPACE" || from == "OMPI_MCA_ess_base_jobid", "{from}");
    assert!(runs.iter().all(|r| r["scale"]["start_at_unix_ns"].is_null()));
    let tag = runs[0]["scale"]["shared_tag"].as_str().unwrap().to_string();
    // Each wrote its arrival where they met; none began its timed phase before the
    // last had arrived and the margin had passed.
    let arrivals = met_at_redis(&url, &tag);
    assert_eq!(
        arrivals.keys().cloned().collect::<Vec<_>>(),
        ["arrived/00000", "arrived/00001", "arrived/00002"]
    );
    let last = *arrivals.values().max().unwrap();
    for start in first_timed_starts(&dirs) {
        assert!(start >= last + 2_000_000_000, "started at {start}, last arrival {last}");
    }
}

#[cfg(feature = "redis")]
#[test]
fn a_segment_waits_for_a_late_one_and_a_reused_or_missing_job_is_refused() {
    if !redis_ready() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let url = std::env::var("KVMARK_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string());
    let job = format!("kvmark-test-{}-{}", std::process::id(), d.path().display());
    let wl = workload("segment_keys.lua");
    let segment = |i: usize| {
        let dir = d.path().join(format!("seg{i}"));
        let label = format!("{i}/2");
        let args = [
            &["--segment", label.as_str(), "--backend", "redis", "--threads", "1"][..],
            &["--report-dir", dir.to_str().unwrap()],
            &SEGMENT_BENCH,
            &[wl.as_str()],
        ]
        .concat();
        segment_command(&[("KVMARK_JOB_ID", &job), ("KVMARK_REDIS_URL", &url)], &args)
    };
    let first = segment(0).spawn().unwrap();
    // The second segment starts a second later: the first must wait for it.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let second_started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
    let second = segment(1).spawn().unwrap();
    let (o0, o1) = (first.wait_with_output().unwrap(), second.wait_with_output().unwrap());
    ok(&o1);
    let said = ok(&o0);
    assert!(
        String::from_utf8_lossy(&o0.stderr).contains("of job kvmark-test-"),
        "{said}\n{}",
        String::from_utf8_lossy(&o0.stderr)
    );
    let dirs = [report_dirs(&d.path().join("seg0")), report_dirs(&d.path().join("seg1"))].concat();
    let starts = first_timed_starts(&dirs);
    assert!(
        starts[0] > second_started,
        "segment 0 began at {} before segment 1 was started",
        starts[0]
    );
    merge_and_check(&dirs, &d.path().join("merged"));

    // The same job again: the meeting place already holds segment 0's arrival.
    let again = segment(0).output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(again.status.code(), Some(1), "{said}");
    for w in ["already holds segment 0/2's arrival", "KVMARK_JOB_ID=NAME"] {
        assert!(said.contains(w), "'{w}' not in: {said}");
    }
    let tag = read_json(&dirs[0].join("results.json"))["run"]["scale"]["shared_tag"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(met_at_redis(&url, &tag).len(), 2);

    // No launcher and no --start-at: refused before anything runs.
    let alone = segment_command(
        &[("KVMARK_REDIS_URL", &url)],
        &["--segment", "0/2", "--backend", "redis", "--ops", "10", &wl],
    )
    .output()
    .unwrap();
    failed_with(&alone, 2, &["--start-at TIME", "KVMARK_JOB_ID=NAME", "redis"]);
}

/// The manifest as Kubernetes would read it (parsed only: no cluster runs it here).
#[test]
fn the_indexed_job_manifest_declares_one_segment_per_completion_index() {
    let text = std::fs::read_to_string(root().join("deploy/k8s/kvmark-job.yaml")).unwrap();
    let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    let job = docs.iter().find(|d| d["kind"].as_str() == Some("Job")).expect("a Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let n = spec["completions"].as_u64().expect("completions");
    assert_eq!(spec["parallelism"].as_u64(), Some(n), "all segments run at once");
    let pod = &spec["template"]["spec"];
    let container = &pod["containers"][0];
    let words: Vec<String> = container["command"]
        .as_sequence()
        .into_iter()
        .chain(container["args"].as_sequence())
        .flatten()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    let after = |flag: &str| {
        words
            .iter()
            .position(|w| w == flag)
            .and_then(|i| words.get(i + 1))
            .unwrap_or_else(|| panic!("{flag} missing in {words:?}"))
            .clone()
    };
    assert_eq!(after("--segment"), "auto");
    let count_env = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str() == Some("KVMARK_SEGMENT_COUNT"))
        .and_then(|e| e["value"].as_str())
        .map(str::to_string);
    let count = words
        .iter()
        .position(|w| w == "--segment-count")
        .map(|i| words[i + 1].clone())
        .or(count_env)
        .expect("the segment count, by flag or KVMARK_SEGMENT_COUNT");
    assert_eq!(
        count.parse::<u64>().unwrap(),
        n,
        "the segment count is the Job's completions"
    );
    // The pods start together: at --start-at, or where they meet on the server under
    // the Job's uid, which every pod of one Job shares and no other Job has.
    let job_id = container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str() == Some("KVMARK_JOB_ID"))
        .and_then(|e| e["valueFrom"]["fieldRef"]["fieldPath"].as_str());
    assert!(
        words.iter().any(|w| w == "--start-at")
            || job_id == Some("metadata.labels['batch.kubernetes.io/controller-uid']"),
        "{words:?} {job_id:?}"
    );
    let dir = after("--report-dir");
    let mounts = container["volumeMounts"].as_sequence().unwrap();
    assert!(
        mounts.iter().any(|m| dir.starts_with(m["mountPath"].as_str().unwrap())),
        "--report-dir {dir} is on a mounted volume"
    );
    assert!(pod["volumes"].as_sequence().is_some_and(|v| !v.is_empty()));
    let redis_url = words.iter().find(|w| w.starts_with("redis.url="));
    assert!(redis_url.is_some(), "the engine's url points at the service: {words:?}");
}

/// Runs `kvmark merge` of `dirs` into `out`.
fn merge_cmd(dirs: &[PathBuf], out: &Path) -> Output {
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    kvmark(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Runs `kvmark merge` of `dirs` into `out`; its exit code (1 when a point failed).
fn merge_code(dirs: &[PathBuf], out: &Path) -> i32 {
    let o = merge_cmd(dirs, out);
    assert!(
        out.join("results.json").is_file(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.status.code().unwrap()
}

/// Two open-loop segments at a target rate: the merged point carries the schedule
/// figures (waits and late starts summed, lags the largest, the start accuracy merged
/// exactly), the target and the achieved rate, and the console prints them.
#[test]
fn merged_open_loop_runs_carry_the_schedule_figures() {
    let d = tempfile::tempdir().unwrap();
    let parent = d.path().join("runs");
    let mixed = bundled("mixed.lua");
    for i in 0..2 {
        ok(&kvmark(&[
            "--threads",
            "2",
            "--ops",
            "1200",
            "--items",
            "300",
            "--rate",
            "4000",
            "--segment",
            &format!("{i}/2"),
            "--report-dir",
            parent.to_str().unwrap(),
            &mixed,
        ]));
    }
    let dirs = report_dirs(&parent);
    let out = d.path().join("merged");
    assert_eq!(merge_code(&dirs, &out), 0);
    let merged = read_json(&out.join("results.json"));
    let segs: Vec<Value> = dirs.iter().map(|d| read_json(&d.join("results.json"))).collect();
    let pace = |v: &Value, f: &str| v["points"][0]["pace"][f].as_u64().unwrap();
    for f in ["waited", "late"] {
        assert_eq!(pace(&merged, f), segs.iter().map(|s| pace(s, f)).sum::<u64>(), "{f}");
    }
    for f in ["max_lag_ns", "final_lag_ns"] {
        assert_eq!(pace(&merged, f), segs.iter().map(|s| pace(s, f)).max().unwrap(), "{f}");
    }
    assert_eq!(pace(&merged, "waited") + pace(&merged, "late"), 1200);
    let decode = |v: &Value| {
        let text = v["points"][0]["pace"]["start_accuracy_hdr"].as_str().unwrap();
        let raw = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
        Deserializer::new().deserialize::<u64, _>(&mut raw.as_slice()).unwrap()
    };
    let mut independent = decode(&segs[0]);
    independent.add(decode(&segs[1])).unwrap();
    assert_eq!(buckets(&decode(&merged)), buckets(&independent));
    assert_eq!(merged["points"][0]["rate"], segs[0]["points"][0]["rate"]);
    assert!(merged["points"][0]["achieved"]["median"].as_f64().unwrap() > 0.0);
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("rate: target") && report.contains("schedule: "),
        "{report}"
    );
}

/// Two `--verify` segments on sim dropping writes: the merged point's counts are the
/// segments' sums, its examples come from them, and verify.tsv has the merged rows.
#[test]
fn merged_verify_runs_sum_the_anomalies() {
    let d = tempfile::tempdir().unwrap();
    let parent = d.path().join("runs");
    let wl = workload("verify.lua");
    for i in 0..2 {
        let o = kvmark(&[
            "--backend",
            "sim",
            "--engine-opt",
            "sim.drop_writes=50",
            "--verify",
            "--threads",
            "2",
            "--items",
            "300",
            "--ops",
            "6000",
            "--segment",
            &format!("{i}/2"),
            "--report-dir",
            parent.to_str().unwrap(),
            &wl,
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let dirs = report_dirs(&parent);
    let out = d.path().join("merged");
    assert_eq!(merge_code(&dirs, &out), 1, "anomalies fail the merged point too");
    let merged = &read_json(&out.join("results.json"))["points"][0]["verify"];
    let segs: Vec<Value> = dirs
        .iter()
        .map(|d| read_json(&d.join("results.json"))["points"][0]["verify"].clone())
        .collect();
    let lost = |v: &Value| v["counts"]["lost_write"].as_u64().unwrap();
    assert!(segs.iter().all(|s| lost(s) > 0), "{segs:?}");
    for f in ["reads_checked", "keys_read_back", "anomalies"] {
        let sum: u64 = segs.iter().map(|s| s[f].as_u64().unwrap()).sum();
        assert_eq!(merged[f].as_u64(), Some(sum), "{f}");
    }
    for (kind, n) in merged["counts"].as_object().unwrap() {
        let sum: u64 = segs.iter().map(|s| s["counts"][kind].as_u64().unwrap()).sum();
        assert_eq!(n.as_u64(), Some(sum), "{kind}");
    }
    let examples = merged["examples"].as_array().unwrap();
    assert!(!examples.is_empty());
    assert!(
        examples
            .iter()
            .all(|e| segs.iter().any(|s| s["examples"].as_array().unwrap().contains(e)))
    );
    let tsv = std::fs::read_to_string(out.join("verify.tsv")).unwrap();
    let (anomaly, count) = (tsv_column(&tsv, "anomaly"), tsv_column(&tsv, "count"));
    let row = tsv
        .lines()
        .find(|l| l.split('\t').nth(anomaly) == Some("lost_write"))
        .unwrap_or_else(|| panic!("no lost_write row: {tsv}"));
    assert_eq!(
        row.split('\t').nth(count),
        Some(lost(merged).to_string().as_str()),
        "{row}"
    );
}

/// A private sshd on a free loopback port, with its own host key, client key and an
/// ssh config naming `hosts` (all of them this machine), for the ssh and pdsh recipes.
/// Killed on drop.
struct PrivateSshd {
    child: std::process::Child,
    /// The ssh client config to pass as `ssh -F`.
    config: PathBuf,
}

impl PrivateSshd {
    /// None (said on stderr) where sshd is not installed and servers are not required.
    fn start(dir: &Path, hosts: &[&str]) -> Option<PrivateSshd> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !sshd.is_file() {
            skip_or_fail("sshd is not installed (scripts/setup installs openssh-server)");
            return None;
        }
        // Run as root, sshd chroots its unprivileged child into this directory, which
        // only an init system would otherwise create.
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        for key in ["host_key", "client_key"] {
            let o = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key))
                .output()
                .expect("run ssh-keygen");
            ok(&o);
        }
        std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_kvmark")).parent().unwrap();
        let d = dir.display();
        let sshd_config = format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {d}/host_key\n\
             AuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\nStrictModes no\n\
             UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\nSetEnv PATH={}:/usr/local/bin:/usr/bin:/bin\n",
            bin_dir.display()
        );
        std::fs::write(dir.join("sshd_config"), sshd_config).unwrap();
        let host_key = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
        let host_key: Vec<&str> = host_key.split_whitespace().take(2).collect();
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", host_key.join(" ")),
        )
        .unwrap();
        let user = Command::new("id").arg("-un").output().expect("run id -un");
        let user = ok(&user).trim().to_string();
        let config = dir.join("ssh_config");
        std::fs::write(
            &config,
            format!(
                "Host {}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {d}/client_key\n  \
                 IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking yes\n  \
                 BatchMode yes\n",
                hosts.join(" ")
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
        let child = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(dir.join("sshd_config"))
            .stderr(log)
            .spawn()
            .expect("start sshd");
        let server = PrivateSshd { child, config };
        wait_for("the private sshd", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Some(server)
    }

    /// Runs `ssh -F config host command` and returns its stdout.
    fn run(&self, host: &str, command: &str) -> String {
        let o = Command::new("ssh")
            .arg("-F")
            .arg(&self.config)
            .args([host, command])
            .output()
            .unwrap();
        ok(&o)
    }
}

impl Drop for PrivateSshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The arguments every segment of the ssh and pdsh recipe tests runs with.
fn recipe_bench() -> Vec<String> {
    let mut args: Vec<String> = ["--threads", "2"]
        .iter()
        .chain(&SEGMENT_BENCH)
        .map(|s| s.to_string())
        .collect();
    args.push(workload("segment_keys.lua"));
    args
}

/// Checks a recipe's merged report: the three segments are there, and a second,
/// independent merge of their directories is exact.
fn check_recipe_merge(dirs: &[PathBuf], out: &Path) {
    assert_eq!(dirs.len(), 3, "one report directory per segment: {dirs:?}");
    let merged = merge_and_check(dirs, out);
    assert_eq!(merged["points"][0]["threads"].as_u64(), Some(6));
    assert_eq!(merged["points"][0]["repeats"][0]["units"].as_u64(), Some(6000));
}

#[test]
fn the_ssh_and_pdsh_recipes_run_segments_on_hosts_and_merge_them() {
    let d = tempfile::tempdir().unwrap();
    let Some(sshd) = PrivateSshd::start(d.path(), &["seg-a", "seg-b", "seg-c"]) else {
        return;
    };
    // The hosts run this build's kvmark, not another one on their PATH.
    let found = sshd.run("seg-a", "command -v kvmark");
    assert_eq!(found.trim(), env!("CARGO_BIN_EXE_kvmark"));

    // deploy/ssh/run-segments.sh: two segments over ssh, one on `localhost`.
    let hosts = d.path().join("hosts.txt");
    std::fs::write(&hosts, "# clients\nseg-a\n\nseg-b\nlocalhost\n").unwrap();
    let results = d.path().join("results");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kvmark")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new(root().join("deploy/ssh/run-segments.sh"))
        .arg(&hosts)
        .arg(&results)
        .arg("--")
        .args(recipe_bench())
        .env("PATH", &path)
        .env("START_DELAY", "3")
        .env("SSH_OPTIONS", format!("-F {}", sshd.config.display()))
        .env("REMOTE_DIR", d.path().join("remote"))
        .current_dir(root())
        .output()
        .expect("run deploy/ssh/run-segments.sh");
    ok(&o);
    let dirs: Vec<PathBuf> = (0..3)
        .flat_map(|i| report_dirs(&results.join(format!("segment-{i}"))))
        .collect();
    for (i, dir) in dirs.iter().enumerate() {
        let scale = &read_json(&dir.join("results.json"))["run"]["scale"];
        assert_eq!(scale["segment"].as_u64(), Some(i as u64), "{}", dir.display());
    }
    check_recipe_merge(&dirs, &d.path().join("ssh-merged"));
    let theirs = read_json(&results.join("merged/results.json"));
    assert_eq!(theirs["points"][0]["repeats"][0]["units"].as_u64(), Some(6000));

    // docs/scale-out.md's pdsh line: pdsh's exec module gives each host its rank as %n.
    let Some(pdsh) = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("pdsh"))
            .find(|p| p.is_file())
    }) else {
        return skip_or_fail("pdsh is not installed (scripts/setup installs it): the pdsh recipe");
    };
    let start = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 3).to_string();
    let shared = d.path().join("shared-run");
    let o = Command::new(pdsh)
        .args(["-R", "exec", "-w", "seg-a,seg-b,seg-c", "ssh", "-F"])
        .arg(&sshd.config)
        .args([
            "%h",
            "kvmark",
            "--segment",
            "%n/3",
            "--start-at",
            &start,
            "--report-dir",
        ])
        .arg(&shared)
        .args(recipe_bench())
        .current_dir(root())
        .output()
        .expect("run pdsh");
    ok(&o);
    check_recipe_merge(&report_dirs(&shared), &d.path().join("pdsh-merged"));
}

/// A private single-node Slurm (`scripts/private-slurm`): its own munged, slurmctld and
/// slurmd on loopback ports, all files in one directory. Stopped on drop.
struct PrivateSlurm {
    dir: PathBuf,
    /// Its slurm.conf, for SLURM_CONF.
    conf: PathBuf,
}

impl PrivateSlurm {
    /// None (said on stderr) where Slurm cannot run here: not installed, or not root
    /// (Slurm's daemons run as root to start tasks); either is a failure when servers
    /// are required.
    fn start(dir: &Path) -> Option<PrivateSlurm> {
        let installed = Command::new("sh")
            .args(["-c", "command -v slurmctld && command -v slurmd && command -v munged"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            skip_or_fail("Slurm is not installed (scripts/setup installs slurm-wlm and munge)");
            return None;
        }
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            skip_or_fail("a private Slurm needs root (its daemons start tasks as their user)");
            return None;
        }
        let o = Command::new(root().join("scripts/private-slurm"))
            .arg("start")
            .arg(dir)
            .output()
            .expect("run scripts/private-slurm");
        let slurm = PrivateSlurm {
            dir: dir.to_path_buf(),
            conf: dir.join("slurm.conf"),
        };
        ok(&o);
        Some(slurm)
    }
}

impl Drop for PrivateSlurm {
    fn drop(&mut self) {
        let _ = Command::new(root().join("scripts/private-slurm"))
            .arg("stop")
            .arg(&self.dir)
            .output();
    }
}

#[cfg(feature = "redis")]
#[test]
fn the_slurm_batch_script_runs_three_segments_and_merges_them() {
    if !redis_ready() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let Some(slurm) = PrivateSlurm::start(&d.path().join("slurm")) else {
        return;
    };
    let url = std::env::var("KVMARK_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string());
    let results = d.path().join("results");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_kvmark")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    // The batch script as a user submits it; --chdir and --output keep the job's own
    // output file out of the repository.
    let o = Command::new("timeout")
        .args(["300", "sbatch", "--wait", "--nodes=1", "--ntasks=3", "--chdir"])
        .arg(d.path())
        .arg("--output")
        .arg(d.path().join("job.out"))
        .arg(root().join("deploy/slurm/kvmark.sbatch"))
        .arg(bundled("null.lua"))
        .env("SLURM_CONF", &slurm.conf)
        .env("PATH", &path)
        .env("REDIS_URL", &url)
        .env("RESULTS", &results)
        .env("THREADS", "2")
        .env("SECS", "2")
        .env("START_DELAY", "4")
        .output()
        .expect("run sbatch");
    let job = std::fs::read_to_string(d.path().join("job.out")).unwrap_or_default();
    assert!(
        o.status.success(),
        "sbatch: {}\njob output:\n{job}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dirs = report_dirs(&results.join("segments"));
    assert_eq!(dirs.len(), 3, "one report directory per task: {dirs:?}\n{job}");
    let indexes = segment_indexes(&dirs);
    assert_eq!(indexes, BTreeSet::from([0, 1, 2]), "SLURM_PROCID is the segment");
    // The script's own merge, and an independent one that checks it is exact.
    let theirs = read_json(&results.join("merged/results.json"));
    let merged = merge_and_check(&dirs, &d.path().join("merged"));
    assert_eq!(merged["points"][0]["threads"].as_u64(), Some(6));
    assert_eq!(
        theirs["points"][0]["repeats"][0]["units"],
        merged["points"][0]["repeats"][0]["units"]
    );
}
