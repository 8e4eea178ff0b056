//! Helpers for tests that run the real kvmark binary.

#![allow(dead_code)]

pub mod cdp;
pub mod figs;
pub mod parse;
pub mod servers;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root (tests run with it as the working directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A test workload file under tests/workloads.
pub fn workload(name: &str) -> String {
    root().join("tests/workloads").join(name).display().to_string()
}

/// A bundled workload under workloads/.
pub fn bundled(name: &str) -> String {
    root().join("workloads").join(name).display().to_string()
}

/// Runs kvmark with `args` and returns its output.
pub fn kvmark(args: &[&str]) -> Output {
    kvmark_in(&root(), args)
}

/// Runs kvmark in `dir`.
pub fn kvmark_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvmark"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run the kvmark binary")
}

/// Runs kvmark in the repository root with extra environment variables.
pub fn kvmark_env(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvmark"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(root())
        .output()
        .expect("run the kvmark binary")
}

/// Starts kvmark with `args` in the repository root, its output captured, for tests
/// that signal or kill a run.
pub fn spawn_kvmark(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_kvmark"))
        .args(args)
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the kvmark binary")
}

/// Sends Ctrl-C (SIGINT) to a spawned run and collects its output.
pub fn interrupt(child: std::process::Child) -> Output {
    signal(child, libc::SIGINT)
}

/// Sends `sig` to a spawned run and collects its output.
pub fn signal(child: std::process::Child, sig: i32) -> Output {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, sig) };
    child.wait_with_output().expect("wait for kvmark")
}

/// Polls `ready` every 20 ms until it holds, failing the test after a minute.
pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ready() {
        assert!(std::time::Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A timeline file in `dir` and the `--report` value that writes it beside the
/// console: for tests that watch a run's progress with [`timed_for`].
pub fn timeline_report(dir: &Path) -> (PathBuf, String) {
    let path = dir.join("timeline.tsv");
    let report = format!("console,timeline:{}", path.display());
    (path, report)
}

/// Whether the timeline file at `path` (`--timeline` with a `timeline:` sink) has a
/// timed-phase (`run`) sample ending more than `secs` after the measurement began:
/// what a test waits for, with [`wait_for`], before it disturbs a run in its timed
/// phase, since a loaded machine may take seconds to start and load.
pub fn timed_for(path: &Path, secs: f64) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| {
        t.lines().any(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            cols.len() > 6 && cols[5] == "run" && cols[6].parse::<f64>().is_ok_and(|s| s > secs)
        })
    })
}

/// A prerequisite this machine lacks (`why` names it and how to get it): a plain
/// `cargo test` skips, saying so on stderr; under KVMARK_REQUIRE_SERVERS=1
/// (scripts/with-servers, CI) the test fails with `why` instead, since a skip there
/// would pass without checking anything. The caller returns after it.
pub fn skip_or_fail(why: &str) {
    assert!(
        !kvmark::engine::storage::servers_required(),
        "{why}; with KVMARK_REQUIRE_SERVERS=1 a missing prerequisite fails the test"
    );
    eprintln!("skipped: {why}");
}

/// Stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit code, showing both streams on failure.
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit status\n--- stdout ---\n{}\n--- stderr ---\n{}",
        stdout(o),
        stderr(o)
    );
}

/// Where column `name` is in `tsv`'s header line: report files are read by their
/// columns' names, since the grid's axes before them grow.
pub fn tsv_column(tsv: &str, name: &str) -> usize {
    let header = tsv.lines().next().unwrap_or_default();
    header
        .split('\t')
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in: {header}"))
}

/// Parses the summary table: one map of column name to value per row.
pub fn summary_rows(out: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut inside = false;
    for line in out.lines() {
        if line.starts_with("=== summary ===") {
            inside = true;
            continue;
        }
        if inside {
            if line.starts_with("workload ") {
                continue;
            }
            if line.trim().is_empty() || line.starts_with("error") {
                break;
            }
            rows.push(line.split_whitespace().map(str::to_string).collect());
        }
    }
    rows
}

/// The `count` column of the latency row for `op` in the first point of `out`.
pub fn op_count(out: &str, op: &str) -> Option<u64> {
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(op))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
}

/// Every "throughput:" figure (wu/s) in `out`.
pub fn throughputs(out: &str) -> Vec<f64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("throughput: "))
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// Writes `json` as `name` in a fresh directory and returns (dir, path).
pub fn spec_file(name: &str, json: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, json).unwrap();
    (dir, path)
}

/// Per operation kind of a point of results.json: (count, hits, bytes).
pub fn op_kinds(point: &serde_json::Value) -> std::collections::BTreeMap<String, (u64, u64, u64)> {
    point["ops"]
        .as_array()
        .unwrap_or_else(|| panic!("no ops in {point}"))
        .iter()
        .map(|o| {
            let n = |f: &str| o[f].as_u64().unwrap_or(0);
            (
                o["op"].as_str().unwrap().to_string(),
                (n("count"), n("hits"), n("bytes")),
            )
        })
        .collect()
}
