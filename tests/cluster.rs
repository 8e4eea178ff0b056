//! The clustered server engines through the real binary: an etcd cluster that loses
//! its leader in the middle of a run, and Redis Cluster: a workload with ranges in one
//! slot, a store spread over every primary in even shares, and slots migrated between
//! primaries mid-run with every redirection followed and counted.
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
        // Only a guard against a hang: a loaded machine can be slow to answer.
        .args(["--endpoints", endpoints, "--command-timeout=10s", "endpoint", "status"])
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
    let cluster = PrivateServer::start("etcd");
    let endpoints = format!("etcd.endpoints={}", cluster.url);
    let dir = tempfile::tempdir().unwrap();
    let (timeline, report) = timeline_report(dir.path());
    let secs = SECS.to_string();
    let mixed = bundled("mixed.lua");
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
    // The kill comes a second into the timed phase, however long a loaded machine
    // takes to start and load; the run's end is timed from it.
    wait_for("a second of the timed phase", || timed_for(&timeline, 1.0));
    let started = Instant::now();
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

/// The primaries' node addresses of a cluster URL, each a blocking connection.
fn primaries(url: &str) -> Vec<redis::Connection> {
    url.split(',')
        .map(|node| redis::Client::open(node).unwrap().get_connection().unwrap())
        .collect()
}

#[test]
fn a_redis_cluster_store_spreads_its_keys_over_every_primary_in_even_shares() {
    if !have("redis-server") {
        return;
    }
    const ITEMS: u64 = 6000;
    let cluster = PrivateServer::start("redis-cluster");
    let url = format!("redis-cluster.url={}", cluster.url);
    let items = ITEMS.to_string();
    // batch.lua loads every key with mput and then runs mget and mput of 16 keys, so
    // the batches are split by slot; pipelined sessions share each primary's pipe.
    let o = kvmark(&[
        "--backend",
        "redis-cluster",
        "--engine-opt",
        &url,
        "--threads",
        "2",
        "--connections",
        "4",
        "--pipeline",
        "4",
        "--batch",
        "16",
        "--items",
        &items,
        "--ops",
        "2000",
        "--keep-data",
        &bundled("batch.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("get hit rate: 100.0%"), "{out}");
    let keys: Vec<u64> = primaries(&cluster.url)
        .iter_mut()
        .map(|c| redis::cmd("DBSIZE").query(c).unwrap())
        .collect();
    assert_eq!(keys.iter().sum::<u64>(), ITEMS, "{keys:?}");
    // Each primary serves a third of the slots; 6000 random keys put each share within
    // a few points of it (its standard deviation is 0.6 points).
    for (node, n) in keys.iter().enumerate() {
        let share = *n as f64 / ITEMS as f64;
        assert!(
            (0.30..0.37).contains(&share),
            "primary {node} holds {share:.3} of the keys: {keys:?}"
        );
    }

    // The ordered index cannot live on every primary: refused, naming the way out.
    let o = kvmark(&[
        "--backend",
        "redis-cluster",
        "--engine-opt",
        &url,
        "--engine-opt",
        "redis-cluster.index=zset",
        "--engine-opt",
        "redis-cluster.layout=spread",
        "--ops",
        "10",
        &bundled("mixed.lua"),
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    let said = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        said.contains("layout=spread cannot keep index=zset") && said.contains("layout=slot"),
        "{said}"
    );
}

/// Moves `slots` from the primary at `from` to the one at `to` (positions in
/// `nodes`) as redis-cli's resharding does: both sides marked, the keys MIGRATEd,
/// then, after `hold` (while requests for moved keys are ASKed over), the new owner
/// told to every node.
fn migrate(
    nodes: &mut [redis::Connection],
    ports: &[u16],
    from: usize,
    to: usize,
    slots: std::ops::Range<u16>,
    hold: Duration,
) {
    let id = |c: &mut redis::Connection| -> String { redis::cmd("CLUSTER").arg("MYID").query(c).unwrap() };
    let (from_id, to_id) = (id(&mut nodes[from]), id(&mut nodes[to]));
    for slot in slots.clone() {
        let importing = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg("IMPORTING")
            .arg(&from_id)
            .clone();
        importing.exec(&mut nodes[to]).unwrap();
        let migrating = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg("MIGRATING")
            .arg(&to_id)
            .clone();
        migrating.exec(&mut nodes[from]).unwrap();
    }
    let mut moved = 0;
    for slot in slots.clone() {
        loop {
            let keys: Vec<Vec<u8>> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(100)
                .query(&mut nodes[from])
                .unwrap();
            if keys.is_empty() {
                break;
            }
            moved += keys.len();
            redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(ports[to])
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(&keys)
                .exec(&mut nodes[from])
                .unwrap();
        }
    }
    assert!(moved > 0, "no key in slots {slots:?} to migrate");
    std::thread::sleep(hold);
    for slot in slots {
        for n in [to, from]
            .into_iter()
            .chain((0..nodes.len()).filter(|n| *n != to && *n != from))
        {
            let node = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("NODE")
                .arg(&to_id)
                .clone();
            node.exec(&mut nodes[n]).unwrap();
        }
    }
}

#[test]
fn redis_cluster_slots_migrate_mid_run_without_losing_an_operation() {
    if !have("redis-server") {
        return;
    }
    // Long enough that the migration (about 2 s on a quiet machine, up to several
    // with both cores busy) ends well inside the run.
    const SECS: f64 = 15.0;
    let cluster = PrivateServer::start("redis-cluster");
    let url = format!("redis-cluster.url={}", cluster.url);
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("migrate.lua");
    std::fs::write(
        &workload,
        r#"
local VAL = string.rep("v", 64)
local function key(i) return string.format("k%06d", i) end
local function load(ctx)
  for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(key(i), VAL) end
end
local keys = {}
local function run(ctx)
  local r = math.random(100)
  if r <= 60 then
    kv.get(key(math.random(0, ctx.items - 1)))
  elseif r <= 90 then
    kv.put(key(math.random(0, ctx.items - 1)), VAL)
  else
    for i = 1, 4 do keys[i] = key(math.random(0, ctx.items - 1)) end
    kv.mget(keys)
  end
end
return { name = "migrate", load = load, run = run }
"#,
    )
    .unwrap();
    let (timeline, report) = timeline_report(dir.path());
    let secs = SECS.to_string();
    let child = spawn_kvmark(&[
        "--backend",
        "redis-cluster",
        "--engine-opt",
        &url,
        "--threads",
        "2",
        "--connections",
        "4",
        "--items",
        "400",
        "--secs",
        &secs,
        "--verify",
        "--timeline",
        "0.5",
        "--report",
        &report,
        workload.to_str().unwrap(),
    ]);
    let ports: Vec<u16> = cluster
        .url
        .split(',')
        .map(|u| u.rsplit(':').next().unwrap().parse().unwrap())
        .collect();
    let mut nodes = primaries(&cluster.url);
    // The first primary's first 1500 slots (redis-cli gives it 0-5460), in three
    // steps, each holding its keys on both sides for 300 ms; inside the timed phase
    // however long a loaded machine takes to start and load.
    wait_for("a second of the timed phase", || timed_for(&timeline, 1.0));
    for step in 0..3u16 {
        migrate(
            &mut nodes,
            &ports,
            0,
            1,
            step * 500..(step + 1) * 500,
            Duration::from_millis(300),
        );
    }
    let mut child = child;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before the migration did: nothing was measured across it"
    );
    let o = child.wait_with_output().unwrap();
    let (out, err) = (stdout(&o), stderr(&o));
    // --verify read back every key at the end and checked every read: exit 0 means no
    // operation failed and no write was lost.
    assert_exit(&o, 0);
    assert!(!out.contains("errors:"), "{out}\n{err}");
    let tsv = std::fs::read_to_string(&timeline).unwrap();
    let last = |metric: &str| {
        series(&tsv, metric)
            .last()
            .unwrap_or_else(|| panic!("no {metric} in the timeline\n{tsv}"))
            .1
    };
    let (moved, ask) = (last("engine.cluster_moved"), last("engine.cluster_ask"));
    eprintln!("redirections followed: {moved} MOVED, {ask} ASK");
    assert!(moved > 0.0, "no MOVED followed\n{out}");
    assert!(ask > 0.0, "no ASK followed\n{out}");
    // The slots did move: the second primary serves them now.
    let owner: Vec<redis::Value> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut nodes[2]).unwrap();
    let serves = owner.iter().any(|e| {
        matches!(e, redis::Value::Array(p) if matches!(p.as_slice(),
            [redis::Value::Int(0), redis::Value::Int(end), redis::Value::Array(n), ..]
                if *end >= 1499 && matches!(n.get(1), Some(redis::Value::Int(port)) if *port == i64::from(ports[1]))))
    });
    assert!(serves, "slots 0-1499 are not on the second primary: {owner:?}");
}
