//! Network faults against the server engines, through the real binary (issue 21): a
//! server stopped and started again mid-run, a server paused (SIGSTOP) past the
//! operation timeout and resumed, and connections dropped by the server. Each one
//! gives counted errors naming the engine, a run of `op.<kind>.errors` rows in the
//! timeline where it hit with error-free samples before and after it (the run goes on
//! once the server is back), the engine's reconnections or timeouts in its
//! statistics, exit status 1 (the errors fail the point), no panic, and an end on time.
//!
//! Each test starts private servers of its own (scripts/servers with its own state
//! directory), so stopping or pausing one never disturbs another test's.

#![cfg(all(feature = "redis", feature = "postgres"))]

mod common;

use std::process::Output;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::parse::read_tsv;
use common::servers::{PrivateServer, can_start_servers, counted_errors};
use common::*;

/// The engines' operation timeout in these runs.
const TIMEOUT: Duration = Duration::from_millis(500);
/// The timed phase.
const SECS: f64 = 7.0;

/// What a faulted run left: its output, how long it took, and its timeline's run-phase
/// samples as (elapsed_s, metric, value).
struct Faulted {
    name: &'static str,
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
        // The budget, a timeout or two for operations caught by the fault, and a
        // margin for start-up, the load and removing the namespace.
        let bound = Duration::from_secs_f64(SECS) + 2 * TIMEOUT + Duration::from_secs(8);
        assert!(self.took < bound, "{name}: took {:?}\n{out}", self.took);
        let (bad, good) = self.error_times();
        assert!(
            !bad.is_empty(),
            "{name}: no op.<kind>.errors rows in the timeline\n{out}"
        );
        let (first, last) = (bad[0], bad[bad.len() - 1]);
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
        assert!(
            good.iter().any(|&t| t > last),
            "{name}: the run went on after it: {bad:?} {good:?}"
        );
    }
}

/// The options each engine needs for mixed.lua (ranges): Redis's index.
/// Runs mixed.lua on `server` at 2 threads for SECS with a timeline every 0.2 s, and
/// calls `fault` once the timed phase has run for a second; a run that outlasts its
/// bound by far is killed and fails the test as a hang.
fn run_with_fault(server: &PrivateServer, fault: impl FnOnce(&PrivateServer)) -> Faulted {
    let name = server.name;
    let dir = tempfile::tempdir().unwrap();
    let timeline = dir.path().join("timeline.tsv");
    let report = format!("console,timeline:{}", timeline.display());
    let started = Instant::now();
    let child = server.spawn_mixed(TIMEOUT, SECS, &["--timeline", "0.2", "--report", &report]);
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
    fault(server);
    let out = match rx.recv_timeout(Duration::from_secs_f64(SECS) + Duration::from_secs(60)) {
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
        out,
        took,
        samples,
    }
}

#[test]
fn a_server_stopped_and_started_again_mid_run_leaves_a_gap_of_errors_and_the_run_recovers() {
    if !can_start_servers() {
        return;
    }
    for name in ["redis", "postgres"] {
        let server = PrivateServer::start(name);
        let run = run_with_fault(&server, |s| {
            s.down();
            std::thread::sleep(Duration::from_millis(1500));
            s.up();
        });
        run.check();
        // The sessions connected again to the new server.
        assert!(run.engine_stat("reconnects") >= 2.0, "{name}: {}", run.stdout());
        assert!(run.engine_stat("connect_failures") > 0.0, "{name}: {}", run.stdout());
    }
}

#[test]
fn a_server_paused_past_the_timeout_gives_counted_timeouts_and_the_run_recovers() {
    if !can_start_servers() {
        return;
    }
    for name in ["redis", "postgres"] {
        let server = PrivateServer::start(name);
        let run = run_with_fault(&server, |s| {
            s.signal(libc::SIGSTOP);
            std::thread::sleep(3 * TIMEOUT);
            s.signal(libc::SIGCONT);
        });
        run.check();
        let out = run.stdout();
        assert!(run.engine_stat("timeouts") >= 2.0, "{name}: {out}");
        assert!(run.engine_stat("reconnects") >= 2.0, "{name}: {out}");
    }
}

/// Makes the server close every client connection but the caller's.
fn drop_connections(server: &PrivateServer) {
    match server.name {
        "redis" => {
            let mut c = redis::Client::open(server.url.as_str())
                .unwrap()
                .get_connection()
                .unwrap();
            // SKIPME yes: the caller's own connection is spared.
            let killed: u64 = redis::cmd("CLIENT")
                .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
                .query(&mut c)
                .unwrap();
            assert!(killed >= 2, "redis: {killed} connections killed");
        }
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
            assert!(rows.len() >= 2, "postgres: {} backends ended", rows.len());
        }),
        other => panic!("not a server engine: {other}"),
    }
}

#[test]
fn connections_dropped_by_the_server_are_counted_errors_and_reconnected() {
    if !can_start_servers() {
        return;
    }
    for name in ["redis", "postgres"] {
        let server = PrivateServer::start(name);
        let run = run_with_fault(&server, |s| {
            // Twice, so connections made again after the first are dropped too.
            drop_connections(s);
            std::thread::sleep(Duration::from_millis(500));
            drop_connections(s);
        });
        run.check();
        assert!(run.engine_stat("reconnects") >= 2.0, "{name}: {}", run.stdout());
    }
}
