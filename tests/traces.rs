//! Traces recorded elsewhere, replayed by the real binary: Twitter's cache-trace CSV
//! and `redis-cli MONITOR` output, as fast as possible and on the trace's clock
//! (`--speed`), split by line or by client over threads and over segments that
//! `kvmark merge` joins.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::*;
use serde_json::Value;

/// Runs `kvmark ARGS --report-dir DIR/NAME` and returns the exit code, stderr and the
/// first point of results.json.
fn run_json(dir: &Path, name: &str, args: &[&str]) -> (i32, String, Value) {
    let report = dir.join(name);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--report-dir", report.to_str().unwrap()]);
    let o = kvmark(&all);
    let text = std::fs::read_to_string(written(&report).join("results.json"))
        .unwrap_or_else(|e| panic!("{e}\nstdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o)));
    let json: Value = serde_json::from_str(&text).unwrap();
    (o.status.code().unwrap_or(-1), stderr(&o), json["points"][0].clone())
}

/// The directory `--report-dir DIR` wrote (DIR/TIMESTAMP), or DIR when there is none.
fn written(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .ok()
        .and_then(|mut entries| entries.find_map(|e| e.ok().map(|e| e.path()).filter(|p| p.is_dir())))
        .unwrap_or_else(|| dir.to_path_buf())
}

/// A cache trace with known contents: every key set once (sizes 10 to 109), then
/// read, some deleted and read again, appended, counted, and some kinds kvmark has no
/// verb for. Returns the file and the expected per-kind counts, hits and bytes.
fn twitter_trace(dir: &Path) -> (PathBuf, BTreeMap<String, (u64, u64, u64)>) {
    let mut lines = Vec::new();
    let mut put_bytes = 0u64;
    // Second 0: 100 sets by 4 clients, with every set-like kind.
    for i in 0..100u64 {
        let op = ["set", "add", "replace", "cas"][(i % 4) as usize];
        let key = format!("k:{i:03}");
        put_bytes += key.len() as u64 + 10 + i;
        lines.push(format!("0,{key},{},{},{},{op},0", key.len(), 10 + i, i % 4));
    }
    // Second 1: 100 reads (hits), 3 touches (unmapped).
    for i in 0..100u64 {
        let op = if i % 2 == 0 { "get" } else { "gets" };
        lines.push(format!("1,k:{i:03},5,{},{},{op},0", 10 + i, i % 4));
    }
    lines.extend((0..3).map(|i| format!("1,k:{i:03},5,0,1,touch,60")));
    // Second 2: 20 deletes, then 20 reads of the deleted keys (misses), and a key
    // holding a comma.
    for i in 0..20u64 {
        lines.push(format!("2,k:{i:03},5,0,1,delete,0"));
    }
    for i in 0..20u64 {
        lines.push(format!("2,k:{i:03},5,0,1,get,0"));
    }
    lines.push("2,a,b,3,4,0,2,get,0".to_string());
    // Second 3: 10 appends of 7 bytes (prepend is timed as an append), 5 counters.
    let mut append_bytes = 0u64;
    for i in 50..60u64 {
        let op = if i % 2 == 0 { "append" } else { "prepend" };
        append_bytes += 5 + 7;
        lines.push(format!("3,k:{i:03},5,7,2,{op},0"));
    }
    for i in 60..65u64 {
        put_bytes += 5 + 8;
        lines.push(format!("3,k:{i:03},5,8,3,incr,0"));
    }
    let path = dir.join("cache.csv");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let expected = BTreeMap::from([
        ("put".to_string(), (105, 0, put_bytes)),
        // 100 hits, 20 misses, the comma key's miss, 5 counters read (hits).
        ("get".to_string(), (126, 105, 0)),
        ("del".to_string(), (20, 0, 0)),
        ("append".to_string(), (10, 0, append_bytes)),
    ]);
    (path, expected)
}

#[test]
fn a_twitter_trace_replays_every_mapped_request_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, expected) = twitter_trace(dir.path());
    let t = trace.to_str().unwrap();
    let (code, err, point) = run_json(dir.path(), "one", &["replay", "--format", "twitter", t]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("cache.csv: 3 request(s) of kind 'touch' have no kv verb and are skipped"),
        "{err}"
    );
    let got = op_kinds(&point);
    for (kind, (count, hits, bytes)) in &expected {
        let (c, h, b) = got[kind];
        assert_eq!(c, *count, "{kind} count: {got:?}");
        assert_eq!(b, *bytes, "{kind} bytes: {got:?}");
        if kind == "get" {
            assert_eq!(h, *hits, "{kind} hits: {got:?}");
        }
    }
    // Three threads split the requests without losing or repeating one (the hits
    // depend on the interleaving, the counts and bytes do not).
    let (code, err, point) = run_json(
        dir.path(),
        "three",
        &["replay", "--format", "twitter", "--threads", "3", t],
    );
    assert_eq!(code, 0, "{err}");
    let got = op_kinds(&point);
    for (kind, (count, _, bytes)) in &expected {
        assert_eq!((got[kind].0, got[kind].2), (*count, *bytes), "{kind}: {got:?}");
    }
}

#[test]
fn redis_monitor_output_replays_with_its_recorded_values() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("monitor.txt");
    // A value with a quote, an escape and a zero byte; batches; unmapped commands.
    let text = r#"OK
1700000000.000001 [0 127.0.0.1:50001] "SET" "user:1" "a \"quoted\"\\ value\x00" "EX" "60"
1700000000.000002 [0 127.0.0.1:50001] "GET" "user:1"
1700000000.000003 [0 127.0.0.1:50002] "MSET" "a" "1" "b" "22" "c" "333"
1700000000.000004 [0 127.0.0.1:50002] "MGET" "a" "b" "c" "zz"
1700000000.000005 [0 lua] "DEL" "a" "b"
1700000000.000006 [0 127.0.0.1:50002] "GET" "a"
1700000000.000007 [0 127.0.0.1:50003] "APPEND" "c" "4444"
1700000000.000008 [0 127.0.0.1:50003] "INCR" "n"
1700000000.000009 [0 127.0.0.1:50003] "PING"
1700000000.000010 [0 127.0.0.1:50003] "hset" "h" "f" "v"
1700000000.000011 [0 127.0.0.1:50003] "HSET" "h" "g" "v"
"#;
    std::fs::write(&trace, text).unwrap();
    let (code, err, point) = run_json(
        dir.path(),
        "mon",
        &["replay", "--format", "redis-monitor", trace.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    for warning in [
        "1 request(s) of kind 'ping' have no kv verb",
        "2 request(s) of kind 'hset' have no kv verb",
    ] {
        assert!(err.contains(warning), "{err}");
    }
    let got = op_kinds(&point);
    let value_len = r#"a "quoted"\ value"#.len() as u64 + 1;
    // SET user:1 and INCR's write-back (8 bytes).
    assert_eq!(got["put"], (2, 0, 6 + value_len + 1 + 8), "{got:?}");
    // GET user:1 (hit), GET a (miss after the DEL), INCR's read (miss).
    assert_eq!((got["get"].0, got["get"].1), (3, 1), "{got:?}");
    assert_eq!((got["mget"].0, got["mget"].1), (1, 3), "{got:?}");
    assert_eq!(got["mput"].0, 1, "{got:?}");
    assert_eq!(got["mdel"].0, 1, "{got:?}");
    assert_eq!((got["append"].0, got["append"].2), (1, 1 + 4), "{got:?}");
}

#[test]
fn a_monitor_recording_of_a_real_redis_replays_as_the_run_it_recorded() {
    let Ok(url) = std::env::var("KVMARK_REDIS_URL") else {
        skip_or_fail("KVMARK_REDIS_URL is not set (scripts/with-servers starts a private Redis)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("getput.lua");
    std::fs::write(
        &wl,
        r#"local function key(i) return string.format("k:%04d", i) end
return { name = "getput", run = function(ctx)
  local r = math.random()
  if r < 0.5 then kv.get(key(math.random(0, 99)))
  elseif r < 0.9 then kv.put(key(math.random(0, 99)), "v" .. math.random(1, 1000))
  else kv.del(key(math.random(0, 99))) end
end }"#,
    )
    .unwrap();
    let recording = dir.path().join("monitor.txt");
    let mut monitor = std::process::Command::new("redis-cli")
        .args(["-u", &url, "monitor"])
        .stdout(std::fs::File::create(&recording).unwrap())
        .spawn()
        .expect("redis-cli (Debian's redis-tools, which scripts/servers installs with Redis)");
    let read = || std::fs::read_to_string(&recording).unwrap_or_default();
    wait_for("redis-cli monitor's OK", || read().starts_with("OK"));
    let o = kvmark(&["--backend", "redis", "--ops", "500", wl.to_str().unwrap()]);
    assert_exit(&o, 0);
    let live = stdout(&o);
    // The recording holds every request of the run (then the namespace's removal).
    wait_for("the run's 500 requests in the recording", || {
        // Keys are the store's namespace, then ':k:NNNN'.
        read().lines().filter(|l| l.contains(":k:0")).count() >= 500
    });
    let _ = monitor.kill();
    let _ = monitor.wait();
    let o = kvmark(&["replay", "--format", "redis-monitor", recording.to_str().unwrap()]);
    assert_exit(&o, 0);
    let replayed = stdout(&o);
    for kind in ["put", "get"] {
        assert_eq!(
            op_count(&replayed, kind),
            op_count(&live, kind),
            "{kind}\n{live}\n{replayed}"
        );
    }
    // One thread, the same requests in the same order: the same hits.
    let hit_rate = |out: &str| out.lines().find(|l| l.starts_with("get hit rate:")).map(str::to_string);
    assert_eq!(hit_rate(&replayed), hit_rate(&live), "{live}\n{replayed}");
    assert!(hit_rate(&live).is_some(), "{live}");
}

#[test]
fn speed_replays_on_the_trace_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, expected) = twitter_trace(dir.path());
    let t = trace.to_str().unwrap();
    // The trace spans seconds 0 to 3; at 8x its last second's requests are due from
    // 375 ms on, spread over the next 125 ms. A request never starts before it is due,
    // so the run cannot end sooner.
    let began = Instant::now();
    let (code, err, point) = run_json(
        dir.path(),
        "paced",
        &["replay", "--format", "twitter", "--speed", "8", "--threads", "2", t],
    );
    let took = began.elapsed().as_secs_f64();
    assert_eq!(code, 0, "{err}");
    assert!(took >= 0.375 + 0.125 * 14.0 / 15.0, "ran in {took} s");
    // Open loop: every request has a response time, from its due time.
    let got = op_kinds(&point);
    for (kind, (count, _, _)) in &expected {
        let op = point["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"] == *kind)
            .unwrap();
        assert_eq!(got[kind].0, *count, "{kind}");
        assert_eq!(op["response"]["count"].as_u64(), Some(*count), "{op}");
    }
}

#[test]
fn bad_traces_and_flags_are_usage_errors_that_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "0,k,1,5,1,set,0\n1,k,1,five,1,set,0\n").unwrap();
    let b = bad.to_str().unwrap();
    let o = kvmark(&["replay", "--format", "twitter", b]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("bad.csv:2: the value size 'five' is not a whole number"),
        "{}",
        stderr(&o)
    );

    let backwards = dir.path().join("back.csv");
    std::fs::write(&backwards, "5,k,1,5,1,set,0\n4,k,1,5,1,get,0\n").unwrap();
    let back = backwards.to_str().unwrap();
    // As fast as possible the order of times does not matter; on the clock it does.
    assert_exit(&kvmark(&["replay", "--format", "twitter", back]), 0);
    let o = kvmark(&["replay", "--format", "twitter", "--speed", "1", back]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("back.csv:2: the time goes back"), "{}", stderr(&o));

    let cases: &[(&[&str], &str)] = &[
        (&["replay", "--format", "csv", b], "--format 'csv': expected twitter"),
        (&["replay", "--speed", "2", b], "an operation log has none"),
        (
            &["--speed", "2", b],
            "--speed: replays a trace on its own clock: give --format",
        ),
        (
            &["replay", "--format", "twitter", "--speed", "0", b],
            "--speed 0: give a factor above 0",
        ),
        (
            &["replay", "--format", "twitter", "--speed", "2", "--rate", "10", b],
            "cannot be used with",
        ),
        (
            &["replay", "--format", "redis-monitor", b],
            "bad.csv:1: not a MONITOR line",
        ),
        (
            &["replay", "--format", "twitter", "--trace-split", "key", b],
            "--trace-split 'key': expected line",
        ),
        (
            &["--trace-split", "client", b],
            "--trace-split: deals a trace's requests to threads: give --format",
        ),
        (&["replay", "--trace-split", "client", b], "an operation log names none"),
    ];
    for (args, words) in cases {
        let o = kvmark(args);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(words), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_split_by_client_keeps_each_clients_order() {
    let dir = tempfile::tempdir().unwrap();
    // Eight clients, interleaved line by line: each sets its own keys, reads each
    // back, deletes it and reads it again (a miss). Every read's outcome depends on
    // the client's earlier requests, never on another client's.
    let mut lines = Vec::new();
    for round in 0..50 {
        for step in ["set", "get", "delete", "get"] {
            for client in 0..8 {
                let size = if step == "set" { 32 } else { 0 };
                lines.push(format!("{round},c{client}:k{round},6,{size},{client},{step},0"));
            }
        }
    }
    let trace = dir.path().join("clients.csv");
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let t = trace.to_str().unwrap();
    for threads in ["1", "3"] {
        let (code, err, point) = run_json(
            dir.path(),
            &format!("by-client-{threads}"),
            &[
                "replay",
                "--format",
                "twitter",
                "--trace-split",
                "client",
                "--threads",
                threads,
                t,
            ],
        );
        assert_eq!(code, 0, "{err}");
        let got = op_kinds(&point);
        assert_eq!((got["put"].0, got["del"].0), (400, 400), "{got:?}");
        // Half the reads hit (after the set), half miss (after the delete).
        assert_eq!((got["get"].0, got["get"].1), (800, 400), "{threads} threads: {got:?}");
    }
}

#[test]
fn segments_of_a_trace_merge_into_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, expected) = twitter_trace(dir.path());
    let t = trace.to_str().unwrap();
    for split in ["line", "client"] {
        let mut dirs = Vec::new();
        for i in 0..2 {
            let seg = format!("{i}/2");
            let name = format!("{split}-seg{i}");
            let (code, err, _) = run_json(
                dir.path(),
                &name,
                &[
                    "replay",
                    "--format",
                    "twitter",
                    "--trace-split",
                    split,
                    "--threads",
                    "2",
                    "--segment",
                    &seg,
                    t,
                ],
            );
            assert_eq!(code, 0, "{err}");
            dirs.push(written(&dir.path().join(name)));
        }
        let out = dir.path().join(format!("{split}-merged"));
        let o = kvmark(&[
            "merge",
            dirs[0].to_str().unwrap(),
            dirs[1].to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_exit(&o, 0);
        let merged: Value = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
        let got = op_kinds(&merged["points"][0]);
        for (kind, (count, _, bytes)) in &expected {
            assert_eq!((got[kind].0, got[kind].2), (*count, *bytes), "{split}, {kind}: {got:?}");
        }
    }
}
