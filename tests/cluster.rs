//! The clustered server engines through the real binary: an etcd cluster that loses
//! its leader in the middle of a run, and a workload on Redis Cluster.
//!
//! The etcd test starts a private 3-member cluster of its own (scripts/servers with
//! its own state directory), kills the member that leads while kvmark runs against
//! all three, and checks that the run goes on against the two left: errors and
//! retries counted and shown in the timeline, the election visible there (fewer
//! members answering, a new Raft term), operations done after the loss, no panic and
//! an end on time. Without etcd installed a dev run skips it, saying why, unless
//! KVMARK_REQUIRE_SERVERS=1.

#![cfg(all(feature = "etcd", feature = "redis"))]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::servers::PrivateServer;
use common::*;
use kvmark::engine::storage::servers_required;

/// Whether `program` is installed; when not, a dev run skips (saying so) and a run
/// that requires the servers goes on and fails where it needs it.
fn have(program: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && !servers_required() {
        eprintln!("{program} is not installed (scripts/servers installs it): skipped");
    }
    found || servers_required()
}

/// The position in `endpoints` of the member that leads, as etcdctl sees it.
fn leader_of(endpoints: &str) -> Option<usize> {
    let out = Command::new("etcdctl")
        .args(["--endpoints", endpoints, "--command-timeout=2s", "endpoint", "status"])
        .output()
        .ok()?;
    // endpoint, ID, version, db size, is leader, is learner, raft term, ...
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let leader = text.lines().find(|l| l.split(", ").nth(4) == Some("true"))?;
    let endpoint = leader.split(", ").next()?;
    endpoints.split(',').position(|e| e == endpoint)
}

/// Timeline rows of `metric`: (elapsed seconds, value), in the order written.
fn series(tsv: &str, metric: &str) -> Vec<(f64, f64)> {
    tsv.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.get(7) == Some(&metric)).then(|| (f[6].parse().unwrap(), f[8].parse().unwrap()))
        })
        .collect()
}

#[test]
fn etcd_goes_on_against_the_quorum_when_its_leader_is_killed_mid_run() {
    if !have("etcd") {
        return;
    }
    const SECS: f64 = 8.0;
    const KILL_AT: Duration = Duration::from_millis(2500);
    let cluster = PrivateServer::start("etcd");
    let endpoints = format!("etcd.endpoints={}", cluster.url);
    let dir = tempfile::tempdir().unwrap();
    let timeline = dir.path().join("timeline.tsv");
    let report = format!("console,timeline:{}", timeline.display());
    let secs = SECS.to_string();
    let mixed = bundled("mixed.lua");
    let started = Instant::now();
    let child = spawn_kvmark(&[
        "--backend",
        "etcd",
        "--engine-opt",
        &endpoints,
        "--engine-opt",
        "etcd.timeout=1s",
        "--threads",
        "2",
        "--connections",
        "3",
        "--items",
        "300",
        "--secs",
        &secs,
        "--timeline",
        "0.25",
        "--report",
        &report,
        &mixed,
    ]);
    std::thread::sleep(KILL_AT);
    let leader = leader_of(&cluster.url).expect("a leader before the kill");
    let pid = cluster.pids()[leader];
    // SIGKILL: no leadership transfer, so the others must notice and elect.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill the leader");
    let o = child.wait_with_output().unwrap();
    let took = started.elapsed().as_secs_f64();
    let out = stdout(&o);
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    // A run with counted errors fails its point (exit 1); one whose every operation
    // got through after retries passes (exit 0). Either way it ended, on time.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{:?}\n{out}\n{err}", o.status);
    assert!(took < SECS + 8.0, "took {took:.1} s\n{out}");
    for line in out.lines().filter(|l| l.starts_with("errors: ")) {
        assert!(line.contains("(engine etcd: "), "{line}");
    }

    let tsv = std::fs::read_to_string(&timeline).unwrap();
    let last = |metric: &str| {
        series(&tsv, metric)
            .last()
            .unwrap_or_else(|| panic!("no {metric} in the timeline"))
            .1
    };
    let first = |metric: &str| series(&tsv, metric)[0].1;
    // The election is in the timeline: three members answered, then two, under a new
    // term, with a leader among them.
    assert_eq!(first("engine.members_up"), 3.0, "{tsv}");
    assert_eq!(last("engine.members_up"), 2.0);
    assert!(last("engine.raft_term") > first("engine.raft_term"), "no new term");
    assert!(last("engine.leader") > 0.0, "no leader after the election");
    // The faults are counted: requests that lost their member (or waited out the
    // timeout), and the sessions that moved to another member.
    let faults = last("engine.member_errors") + last("engine.leader_errors") + last("engine.timeouts");
    assert!(faults > 0.0, "no fault counted");
    assert!(last("engine.reconnects") > 0.0, "no session moved to another member");
    // The run went on: operations in the last second, well after the election.
    let end = series(&tsv, "engine.members_up").last().unwrap().0;
    let done_late: f64 = tsv
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let late = f.get(6)?.parse::<f64>().ok()? > end - 1.0;
            (late && f[7].starts_with("op.") && f[7].ends_with(".count")).then(|| f[8].parse::<f64>().unwrap())
        })
        .sum();
    assert!(done_late > 0.0, "no operation in the last second\n{tsv}");
}

#[test]
fn redis_cluster_runs_a_workload_with_ranges_on_one_slot() {
    if !have("redis-server") {
        return;
    }
    let cluster = PrivateServer::start("redis-cluster");
    let url = format!("redis-cluster.url={}", cluster.url);
    let mixed = bundled("mixed.lua");
    let o = kvmark(&[
        "--backend",
        "redis-cluster",
        "--engine-opt",
        &url,
        "--engine-opt",
        "redis-cluster.index=zset",
        "--threads",
        "2",
        "--connections",
        "2",
        "--items",
        "300",
        "--ops",
        "600",
        &mixed,
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let counts: Vec<u64> = ["put", "get", "del", "range"]
        .iter()
        .map(|op| op_count(&out, op).unwrap_or_else(|| panic!("no {op} row\n{out}")))
        .collect();
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}\n{out}");
    // mixed.lua's run() makes exactly one of the four calls per unit, and --ops is the
    // run's units over all threads.
    assert_eq!(counts.iter().sum::<u64>(), 600, "{counts:?}\n{out}");
    // The store's keys and index, on the primary that owns its slot, were removed
    // after the run: no primary holds a key.
    let mut keys = 0;
    for node in cluster.url.split(',') {
        let mut c = redis::Client::open(node).unwrap().get_connection().unwrap();
        let n: u64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
        keys += n;
    }
    assert_eq!(keys, 0, "keys left on the cluster");
}
