//! Network faults against the server engines, through the real binary (issue 21): a
//! server stopped and started again mid-run, a server paused (SIGSTOP) past the
//! operation timeout and resumed, and connections dropped by the server. Each one
//! gives counted errors naming the engine, a run of `op.<kind>.errors` rows in the
//! timeline where it hit with error-free samples before it and a stretch of them
//! after it (the run goes on once the server is back), the engine's reconnections or timeouts in its
//! statistics, exit status 1 (the errors fail the point), no panic, and an end on time.
//!
//! Every server engine takes each fault: redis, postgres, mariadb and myrocks (one
//! MariaDB server; the restart on mariadb, the pause on myrocks, dropped connections on
//! both), mongodb (on FerretDB), etcd (a 3-member cluster: stopped, restarted and
//! paused as a whole), redis-cluster (3 nodes, likewise) and memcached (mixed.lua's
//! ranges become mgets there, as it keeps no key order). The engines run one after
//! another within a test, so a failure names its engine. Where a server has no command
//! to drop its clients (FerretDB, etcd, memcached), `ss -K` destroys the server's side of each
//! connection, which resets it for the client: that needs root (CAP_NET_ADMIN) and a
//! kernel with CONFIG_INET_DIAG_DESTROY; a dev run not as root skips those two, saying
//! so.
//!
//! Redis Cluster's sessions run on kvmark's own pipes, as a single Redis server's do,
//! so they are held to the same: counted timeouts for a pause, counted errors and
//! reconnections for dropped connections.
//!
//! The stop and restart runs a second time over TLS (the servers started with
//! `--tls`, the runs on their TLS URLs), where each reconnection is a new handshake.
//!
//! Each test starts private servers of its own (scripts/servers with its own state
//! directory), so stopping or pausing one never disturbs another test's. An engine
//! whose server is not installed is skipped in a dev run, saying so, and fails under
//! KVMARK_REQUIRE_SERVERS=1.

#![cfg(all(
    feature = "redis",
    feature = "postgres",
    feature = "mariadb",
    feature = "mongodb",
    feature = "etcd"
))]

mod common;

use std::process::Output;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::parse::read_tsv;
use common::servers::{PrivateServer, can_start, counted_errors};
use common::*;

/// The engines' operation timeout in these runs.
const TIMEOUT: Duration = Duration::from_millis(500);

/// The operation timeout of `engine`'s runs: [`TIMEOUT`], but 2 s for mongodb, whose
/// requests pass through two processes (FerretDB, then its PostgreSQL): under
/// `stress-ng --cpu 2` some took longer than 0.5 s with no fault at all (every sample
/// of one run had errors before the fault came), which is the machine's latency, not
/// a fault these tests inject.
fn timeout(engine: &str) -> Duration {
    match engine {
        "mongodb" => Duration::from_secs(2),
        _ => TIMEOUT,
    }
}
/// The timed phase.
const SECS: f64 = 7.0;

/// What a faulted run left: its output, how long it took, and its timeline's run-phase
/// samples as (elapsed_s, metric, value).
struct Faulted {
    name: &'static str,
    /// The engine's operation timeout in the run.
    timeout: Duration,
    /// Its timed phase, in seconds.
    secs: f64,
    out: Output,
    took: Duration,
    samples: Vec<(f64, String, f64)>,
}

impl Faulted {
    fn stdout(&self) -> String {
        stdout(&self.out)
    }

    /// The sample times with `op.*.errors` rows, and the times with calls and none.
    fn error_times(&self) -> (Vec<f64>, Vec<f64>) {
        let mut bad: Vec<f64> = self
            .samples
            .iter()
            .filter(|(_, m, v)| m.starts_with("op.") && m.ends_with(".errors") && *v > 0.0)
            .map(|(t, _, _)| *t)
            .collect();
        bad.dedup();
        let good = self
            .samples
            .iter()
            .filter(|(t, m, v)| m == "ops_per_s" && *v > 0.0 && !bad.contains(t))
            .map(|(t, _, _)| *t)
            .collect();
        (bad, good)
    }

    /// The last value of the engine statistic `stat` in the timeline.
    fn engine_stat(&self, stat: &str) -> f64 {
        let metric = format!("engine.{stat}");
        self.samples
            .iter()
            .rev()
            .find(|(_, m, _)| *m == metric)
            .map(|(_, _, v)| *v)
            .unwrap_or_else(|| panic!("{}: no {metric} in the timeline", self.name))
    }

    /// One line on what the run showed, for the test's log.
    fn summary(&self) {
        let stat = |s: &str| {
            let metric = format!("engine.{s}");
            self.samples
                .iter()
                .rev()
                .find(|(_, m, _)| *m == metric)
                .map_or(-1.0, |(_, _, v)| *v)
        };
        let (bad, _) = self.error_times();
        eprintln!(
            "{}: {} errors counted, error samples {:?}..{:?} s, reconnects {}, connect_failures {}, timeouts {}, took {:.1} s",
            self.name,
            counted_errors(&self.stdout(), self.name),
            bad.first(),
            bad.last(),
            stat("reconnects"),
            stat("connect_failures"),
            stat("timeouts"),
            self.took.as_secs_f64()
        );
    }

    /// No panic, and an end on time: from the fault (a second into the timed phase),
    /// the rest of the budget, a timeout or two for operations caught by the fault, and
    /// a margin for removing the namespace.
    fn check_on_time(&self) {
        self.summary();
        let name = self.name;
        assert!(!stderr(&self.out).contains("panicked"), "{name}: {}", stderr(&self.out));
        let bound = Duration::from_secs_f64(self.secs) + 2 * self.timeout + Duration::from_secs(8);
        assert!(self.took < bound, "{name}: took {:?}\n{}", self.took, self.stdout());
    }

    /// The checks every fault shares: exit 1 with counted errors naming the engine,
    /// no panic, on time, and a gap of errors in the timeline with healthy samples
    /// before and after it.
    fn check(&self) {
        let name = self.name;
        let out = self.stdout();
        let err = stderr(&self.out);
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert_exit(&self.out, 1);
        let counted = counted_errors(&out, name);
        assert!(counted > 0, "{name}: no counted errors\n{out}");
        // The server came back, so the point ran to its end; its errors made the exit 1.
        self.check_on_time();
        let (bad, good) = self.error_times();
        assert!(
            !bad.is_empty(),
            "{name}: no op.<kind>.errors rows in the timeline\n{out}"
        );
        let first = bad[0];
        let timeline: u64 = self
            .samples
            .iter()
            .filter(|(_, m, _)| m.starts_with("op.") && m.ends_with(".errors"))
            .map(|(_, _, v)| *v as u64)
            .sum();
        assert_eq!(timeline, counted, "{name}: the timeline's errors are the report's");
        assert!(
            good.iter().any(|&t| t < first),
            "{name}: healthy before the fault: {bad:?} {good:?}"
        );
        // Recovery: a stretch of three healthy samples (0.6 s) after the fault's
        // first error. One later request past the 0.5 s timeout, once the server is
        // back, does not undo it (FerretDB under stress-ng, after a restart over TLS,
        // gave one at the run's last sample after 3 s of healthy ones).
        let mut times: Vec<(f64, bool)> = bad
            .iter()
            .map(|&t| (t, false))
            .chain(good.iter().map(|&t| (t, true)))
            .collect();
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let after: Vec<bool> = times.iter().filter(|(t, _)| *t > first).map(|(_, ok)| *ok).collect();
        assert!(
            after.windows(3).any(|w| w.iter().all(|&ok| ok)),
            "{name}: the run went on after it: {bad:?} {good:?}"
        );
    }
}

/// The server engines and the server of scripts/servers.d each runs on.
const ENGINES: [(&str, &str); 8] = [
    ("redis", "redis"),
    ("postgres", "postgres"),
    ("mariadb", "mariadb"),
    ("myrocks", "mariadb"),
    ("mongodb", "mongodb"),
    ("etcd", "etcd"),
    ("redis-cluster", "redis-cluster"),
    ("memcached", "memcached"),
];

/// Starts the server of each of `engines` that this machine can start, in turn, and
/// calls `test` with it and the engine's name.
fn each_engine(engines: &[&'static str], test: impl Fn(&PrivateServer, &'static str)) {
    each_engine_with(engines, PrivateServer::start, test);
}

/// [`each_engine`] with the servers started by `start` (over TLS, for one).
fn each_engine_with(
    engines: &[&'static str],
    start: fn(&'static str) -> PrivateServer,
    test: impl Fn(&PrivateServer, &'static str),
) {
    for &engine in engines {
        let (_, server) = ENGINES.iter().find(|(e, _)| *e == engine).unwrap();
        if can_start(server) {
            eprintln!("{engine}");
            test(&start(server), engine);
        }
    }
}

/// Runs mixed.lua with `engine` on `server` at 2 threads for `secs` with a timeline every 0.2 s, and
/// calls `fault` once the timed phase has run for a second; a run that outlasts its
/// bound by far is killed and fails the test as a hang.
fn run_with_fault(
    server: &PrivateServer,
    engine: &'static str,
    secs: f64,
    fault: impl FnOnce(&PrivateServer),
) -> Faulted {
    let name = engine;
    let dir = tempfile::tempdir().unwrap();
    let timeline = dir.path().join("timeline.tsv");
    let report = format!("console,timeline:{}", timeline.display());
    let child = server.spawn_mixed_as(
        engine,
        timeout(engine),
        secs,
        &["--timeline", "0.2", "--report", &report],
    );
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    // A second of healthy samples first.
    wait_for("a second of the timed phase", || {
        std::fs::read_to_string(&timeline).is_ok_and(|t| {
            t.lines().any(|l| {
                let cols: Vec<&str> = l.split('\t').collect();
                cols.len() > 6 && cols[5] == "run" && cols[6].parse::<f64>().is_ok_and(|s| s > 1.0)
            })
        })
    });
    // Timed from here: start-up and the load, which a loaded machine stretches by
    // seconds, say nothing about ending on time.
    let started = Instant::now();
    fault(server);
    let out = match rx.recv_timeout(Duration::from_secs_f64(secs) + Duration::from_secs(60)) {
        Ok(out) => out.expect("wait for kvmark"),
        Err(_) => {
            // SAFETY: killing our own child process, which hung.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{name}: kvmark hung after the fault");
        }
    };
    let took = started.elapsed();
    let samples = read_tsv(&timeline)
        .rows
        .into_iter()
        .filter(|r| r["phase"] == "run")
        .map(|r| {
            (
                r["elapsed_s"].parse().unwrap(),
                r["metric"].clone(),
                r["value"].parse().unwrap(),
            )
        })
        .collect();
    Faulted {
        name,
        timeout: timeout(engine),
        secs,
        out,
        took,
        samples,
    }
}

#[test]
fn a_server_stopped_and_started_again_mid_run_leaves_a_gap_of_errors_and_the_run_recovers() {
    stopped_and_started_again(PrivateServer::start);
}

/// The same over TLS: every reconnection is a new handshake with the restarted server.
#[test]
fn over_tls_a_server_stopped_and_started_again_mid_run_leaves_a_gap_of_errors_and_the_run_recovers() {
    stopped_and_started_again(PrivateServer::start_tls);
}

fn stopped_and_started_again(start: fn(&'static str) -> PrivateServer) {
    let engines = [
        "redis",
        "postgres",
        "mariadb",
        "mongodb",
        "etcd",
        "redis-cluster",
        "memcached",
    ];
    each_engine_with(&engines, start, |server, name| {
        // Stopping and starting a server takes seconds on a loaded machine (the gap
        // ended near 6 s of 7 for postgres, mongodb and etcd), and Redis Cluster's nodes
        // must also agree again that the cluster is whole, and its client route again:
        // longer runs, so healthy samples follow. Under stress-ng FerretDB's
        // requests still failed 8.8 s into a 9 s run, the restart at 1.4 s, and etcd's
        // 8.6 s into one while the whole suite ran beside it.
        let secs = match name {
            "redis-cluster" => 12.0,
            "mongodb" | "etcd" => SECS + 5.0,
            _ => SECS + 2.0,
        };
        let run = run_with_fault(server, name, secs, |s| {
            s.down();
            std::thread::sleep(Duration::from_millis(1500));
            s.up();
        });
        run.check();
        // The sessions connected again to the new server.
        assert!(run.engine_stat("reconnects") >= 2.0, "{name}: {}", run.stdout());
        assert!(run.engine_stat("connect_failures") > 0.0, "{name}: {}", run.stdout());
    });
}

#[test]
fn a_server_paused_past_the_timeout_gives_counted_timeouts_and_the_run_recovers() {
    let engines = [
        "redis",
        "postgres",
        "myrocks",
        "mongodb",
        "etcd",
        "redis-cluster",
        "memcached",
    ];
    each_engine(&engines, |server, name| {
        // Two seconds past the pause's end and more: under stress-ng FerretDB (with its
        // PostgreSQL) answered its first requests 3.5 s after SIGCONT, and the check
        // needs healthy samples after that. The pause is three of the engine's timeouts.
        let pause = 3 * timeout(name);
        let secs = SECS + 2.0 + (pause - 3 * TIMEOUT).as_secs_f64();
        let run = run_with_fault(server, name, secs, |s| {
            s.signal(libc::SIGSTOP);
            std::thread::sleep(pause);
            s.signal(libc::SIGCONT);
        });
        run.check();
        let out = run.stdout();
        assert!(run.engine_stat("timeouts") >= 2.0, "{name}: {out}");
        assert!(run.engine_stat("reconnects") >= 2.0, "{name}: {out}");
    });
}

/// Makes the server close every client connection but the caller's; returns how many
/// it closed.
fn drop_connections(server: &PrivateServer) -> u64 {
    let name = server.name;
    match name {
        "redis" | "redis-cluster" => server
            .url
            .split(',')
            .map(|url| {
                let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                // SKIPME yes: the caller's own connection is spared.
                redis::cmd("CLIENT")
                    .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
                    .query::<u64>(&mut c)
                    .unwrap()
            })
            .sum(),
        "postgres" => kvmark::engine::inflight::block_on(async {
            let (c, connection) = tokio_postgres::connect(&server.url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            let rows = c
                .query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
                    &[],
                )
                .await
                .unwrap();
            rows.len() as u64
        }),
        "mariadb" => kvmark::engine::inflight::block_on(async {
            use mysql_async::prelude::Queryable;
            let url = server.url.replacen("mariadb://", "mysql://", 1);
            let mut c = mysql_async::Conn::new(mysql_async::Opts::from_url(&url).unwrap())
                .await
                .unwrap();
            let ids: Vec<u64> = c
                .query("SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND USER = 'kvmark'")
                .await
                .unwrap();
            let mut killed = 0;
            for id in ids {
                // A thread that ended meanwhile is "unknown": not one dropped here.
                killed += u64::from(c.query_drop(format!("KILL CONNECTION {id}")).await.is_ok());
            }
            c.disconnect().await.unwrap();
            killed
        }),
        // No command ends another client's connection: the kernel destroys the
        // server's side of each one (SOCK_DESTROY), which resets it for the client.
        "mongodb" | "etcd" | "memcached" => server
            .url
            .split(',')
            .map(|url| {
                let port = url.rsplit(':').next().unwrap();
                let out = std::process::Command::new("ss")
                    .args([
                        "-K",
                        "-t",
                        "-n",
                        "state",
                        "established",
                        &format!("( sport = :{port} )"),
                    ])
                    .output()
                    .expect("run ss");
                assert!(out.status.success(), "{name}: ss -K: {}", stderr(&out));
                // A header line, then one line per socket destroyed.
                stdout(&out).lines().count().saturating_sub(1) as u64
            })
            .sum(),
        other => panic!("not a server engine: {other}"),
    }
}

#[test]
fn connections_dropped_by_the_server_are_counted_errors_and_reconnected() {
    let engines = [
        "redis",
        "postgres",
        "mariadb",
        "myrocks",
        "mongodb",
        "etcd",
        "redis-cluster",
        "memcached",
    ];
    each_engine(&engines, |server, name| {
        // SAFETY: a plain system call.
        let root = unsafe { libc::geteuid() } == 0;
        if matches!(name, "mongodb" | "etcd" | "memcached") && !root && !kvmark::engine::storage::servers_required() {
            eprintln!("{name}: dropping its connections needs ss -K as root: skipped");
            return;
        }
        let run = run_with_fault(server, name, SECS, |s| {
            let dropped = drop_connections(s);
            assert!(
                dropped >= 2,
                "{name}: {dropped} connections dropped (ss -K needs CAP_NET_ADMIN and CONFIG_INET_DIAG_DESTROY)"
            );
            // Again, so connections made again after the first are dropped too: polled,
            // as a loaded machine may take longer than a fixed wait to reconnect.
            let mut again = 0;
            wait_for(&format!("{name}: connections made again"), || {
                std::thread::sleep(Duration::from_millis(100));
                again += drop_connections(s);
                again >= 2
            });
        });
        run.check();
        assert!(run.engine_stat("reconnects") >= 2.0, "{name}: {}", run.stdout());
    });
}

impl Faulted {}
