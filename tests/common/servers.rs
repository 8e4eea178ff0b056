//! Private servers for the server engines' tests, started by scripts/servers in a
//! state directory of their own, so stopping, pausing or restarting one never
//! disturbs the shared ones (`make test`'s) or another test's.

use std::path::Path;
use std::process::{Command, Output};

use super::{root, stderr, stdout};

/// A private server started by scripts/servers in a state directory of its own,
/// stopped (and its directory removed) when dropped.
pub struct PrivateServer {
    /// The server's name in scripts/servers.d.
    pub name: &'static str,
    state: tempfile::TempDir,
    /// Its URL (KVMARK_<NAME>_URL's value).
    pub url: String,
    /// Started with TLS: its TLS URL and the CA that signed its certificate, which
    /// the runs it spawns use instead of `url`.
    pub tls: Option<(String, String)>,
}

impl PrivateServer {
    /// Starts `name` (panics saying why when it cannot).
    pub fn start(name: &'static str) -> PrivateServer {
        PrivateServer::start_with(name, false)
    }

    /// Starts `name` serving TLS too (`scripts/servers start --tls`); the runs it
    /// spawns go over TLS.
    pub fn start_tls(name: &'static str) -> PrivateServer {
        PrivateServer::start_with(name, true)
    }

    fn start_with(name: &'static str, tls: bool) -> PrivateServer {
        let state = tempfile::tempdir().unwrap();
        // As root, PostgreSQL runs as the 'postgres' user inside the directory.
        let open = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
        std::fs::set_permissions(state.path(), open).unwrap();
        let args: &[&str] = if tls {
            &["start", "--tls", name]
        } else {
            &["start", name]
        };
        let out = servers(state.path(), args);
        let url = stdout(&out)
            .lines()
            .find_map(|l| l.split_once("_URL=").map(|(_, u)| u.to_string()))
            .unwrap_or_else(|| {
                // The state directory goes with the panic: show its log's errors (a
                // failed mariadb-install-db ends with advice, its cause far above) and
                // the end of it.
                let log = std::fs::read_to_string(state.path().join(name).join("log")).unwrap_or_default();
                let errors: Vec<&str> = log
                    .lines()
                    .filter(|l| l.contains("ERROR") || l.contains("[Warning]") || l.contains("FATAL"))
                    .take(30)
                    .collect();
                let tail: Vec<&str> = log.lines().rev().take(20).collect();
                panic!(
                    "scripts/servers start {name}: {}\nerrors and warnings in its log:\n{}\nits log's end:\n{}",
                    stderr(&out),
                    errors.join("\n"),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            });
        let value = |key: &str| {
            stdout(&out)
                .lines()
                .find_map(|l| l.split_once(key).map(|(_, v)| v.to_string()))
                .unwrap_or_else(|| panic!("scripts/servers start --tls {name} printed no {key}"))
        };
        let tls = tls.then(|| (value("_TLS_URL="), value("KVMARK_TLS_CA=")));
        PrivateServer { name, state, url, tls }
    }

    /// Stops it for good.
    pub fn stop(&self) {
        self.control("stop");
    }

    /// Stops it for good while `child` (a kvmark run against it) goes on, and waits for
    /// that run: its output and the seconds from the stop to its end. The server's own
    /// shutdown, which may take seconds on a loaded machine, is not counted against
    /// kvmark's.
    pub fn stop_awaiting(&self, child: std::process::Child) -> (std::process::Output, f64) {
        let began = std::time::Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| self.stop());
            let o = child.wait_with_output().unwrap();
            (o, began.elapsed().as_secs_f64())
        })
    }

    /// Runs `mixed.lua` against it (as [`spawn_mixed`](Self::spawn_mixed)), stops the
    /// server a second into the timed phase, however long a loaded machine takes to
    /// start and load, and returns the run's output and the seconds from the stop to
    /// its end.
    pub fn stop_mid_run(&self, timeout: std::time::Duration, secs: f64) -> (Output, f64) {
        let dir = tempfile::tempdir().unwrap();
        let (timeline, report) = super::timeline_report(dir.path());
        let child = self.spawn_mixed(timeout, secs, &["--timeline", "0.2", "--report", &report]);
        super::wait_for("a second of the timed phase", || super::timed_for(&timeline, 1.0));
        self.stop_awaiting(child)
    }

    /// Stops its processes as a crash would for its clients, keeping its port and data.
    pub fn down(&self) {
        self.control("down");
    }

    /// Starts it again after [`down`](Self::down), on the same port.
    pub fn up(&self) {
        self.control("up");
    }

    fn control(&self, what: &str) {
        let out = servers(self.state.path(), &[what, self.name]);
        assert!(
            out.status.success(),
            "scripts/servers {what} {}: {}",
            self.name,
            stderr(&out)
        );
    }

    /// Spawns kvmark running workloads/mixed.lua on this server's engine (of the same
    /// name) at 2 threads over 300 items for `secs`, with the engine's per-operation
    /// `timeout`, and `extra` flags.
    pub fn spawn_mixed(&self, timeout: std::time::Duration, secs: f64, extra: &[&str]) -> std::process::Child {
        self.spawn_mixed_as(self.name, timeout, secs, extra)
    }

    /// [`spawn_mixed`](Self::spawn_mixed) with engine `name`, one this server serves
    /// (myrocks on the mariadb server).
    pub fn spawn_mixed_as(
        &self,
        name: &str,
        timeout: std::time::Duration,
        secs: f64,
        extra: &[&str],
    ) -> std::process::Child {
        let knob = address_knob(name);
        let url = format!("{name}.{knob}={}", self.tls.as_ref().map_or(&self.url, |(u, _)| u));
        let ca = self.tls.as_ref().map(|(_, ca)| format!("{name}.tls_ca={ca}"));
        let timeout = format!("{name}.timeout={}ms", timeout.as_millis());
        let secs = secs.to_string();
        let mixed = super::bundled("mixed.lua");
        let mut args = vec![
            "--backend",
            name,
            "--engine-opt",
            &url,
            "--engine-opt",
            &timeout,
            "--threads",
            "2",
            "--items",
            "300",
            "--secs",
            &secs,
        ];
        if let Some(ca) = &ca {
            args.extend(["--engine-opt", ca]);
        }
        args.extend(engine_args(name));
        args.extend(extra);
        args.push(&mixed);
        super::spawn_kvmark(&args)
    }

    /// The process ids of its pid file, in order (one per member for a cluster).
    pub fn pids(&self) -> Vec<i32> {
        let file = self.state.path().join(self.name).join("pid");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        text.split_whitespace()
            .map(|p| p.parse().unwrap_or_else(|e| panic!("{}: {p:?}: {e}", file.display())))
            .collect()
    }

    /// Its processes: those of its pid file and every descendant of theirs
    /// (PostgreSQL's backends are children of the postmaster).
    pub fn processes(&self) -> Vec<i32> {
        with_descendants(self.pids())
    }

    /// Sends `sig` to every one of its processes.
    pub fn signal(&self, sig: i32) {
        for pid in self.processes() {
            // SAFETY: a plain system call on a process of this test's server.
            unsafe { libc::kill(pid, sig) };
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        // A paused server would not stop within scripts/servers' wait; one the test
        // stopped already has no pid file left.
        if self.state.path().join(self.name).join("pid").exists() {
            self.signal(libc::SIGCONT);
        }
        let _ = servers(self.state.path(), &["stop", self.name]);
    }
}

/// The options an engine needs to run every verb of mixed.lua (Redis keeps no key
/// order without its index).
pub fn engine_args(name: &str) -> Vec<&'static str> {
    match name {
        "redis" => vec!["--engine-opt", "redis.index=zset"],
        "redis-cluster" => vec!["--engine-opt", "redis-cluster.index=zset"],
        _ => Vec::new(),
    }
}

/// The engine errors a console report counts ("errors: OP N of M (engine NAME: ...)"
/// lines), after checking that every such line names `engine`.
pub fn counted_errors(out: &str, engine: &str) -> u64 {
    let errors: Vec<&str> = out.lines().filter(|l| l.starts_with("errors: ")).collect();
    let named = format!("(engine {engine}: ");
    assert!(errors.iter().all(|l| l.contains(&named)), "{engine}: {errors:?}");
    errors
        .iter()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum()
}

/// `pids` and every descendant of theirs.
pub fn with_descendants(mut pids: Vec<i32>) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The parent is the second field after the parenthesised command name.
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut i = 0;
    while i < pids.len() {
        let parent = pids[i];
        pids.extend(parents.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    pids
}

/// Runs scripts/servers with `state` as its state directory.
pub fn servers(state: &Path, args: &[&str]) -> Output {
    Command::new(root().join("scripts/servers"))
        .args(args)
        .env("KVMARK_SERVERS_DIR", state)
        .output()
        .expect("run scripts/servers")
}

/// Whether this machine can start Redis and PostgreSQL (see [`can_start`]).
pub fn can_start_servers() -> bool {
    can_start("redis") && can_start("postgres")
}

/// Whether this machine can start scripts/servers.d's `server` (its program is
/// installed, or for mongodb FerretDB is built or Go can build it): in a dev run
/// without it, skip (saying so); with KVMARK_REQUIRE_SERVERS=1 the test goes on and
/// fails.
pub fn can_start(server: &str) -> bool {
    let probe = match server {
        "redis" | "redis-cluster" => "command -v redis-server",
        "postgres" => "ls /usr/lib/postgresql/*/bin/initdb",
        "mariadb" => "test -x /usr/sbin/mariadbd",
        // FerretDB (cached, or Go to build it) over a PostgreSQL backend of its own.
        "mongodb" => {
            "(ls ${XDG_CACHE_HOME:-$HOME/.cache}/kvmark-tools/ferretdb-*-postgresql/ferretdb || command -v go) \
             && ls /usr/lib/postgresql/*/bin/initdb"
        }
        "etcd" => "command -v etcd",
        "memcached" => "command -v memcached",
        other => panic!("no server {other} in scripts/servers.d"),
    };
    let have = Command::new("sh")
        .arg("-c")
        .arg(probe)
        .output()
        .is_ok_and(|o| o.status.success());
    let required = kvmark::engine::storage::servers_required();
    if !have && !required {
        eprintln!("{server}: its server is not installed (scripts/servers installs it): skipped");
    }
    have || required
}

/// The engine's address knob: etcd's names its members.
pub fn address_knob(engine: &str) -> &'static str {
    if engine == "etcd" { "endpoints" } else { "url" }
}

/// The environment variable scripts/with-servers exports for the server of `engine`
/// (myrocks is served by mariadb's): `KVMARK_<SERVER>_<WHAT>`, WHAT being `URL` or
/// `TLS_URL`.
pub fn server_var(engine: &str, what: &str) -> String {
    let server = if engine == "myrocks" { "mariadb" } else { engine };
    format!("KVMARK_{}_{what}", server.to_uppercase().replace('-', "_"))
}

/// The TLS URL of `engine`'s server and the CA that signed its certificate
/// (KVMARK_<SERVER>_TLS_URL and KVMARK_TLS_CA, which scripts/with-servers exports).
/// None, said on stderr, when they are not set; a failure when the servers are
/// required, unless KVMARK_SERVERS_TLS=0 says they were started without TLS.
pub fn tls_server(engine: &str) -> Option<(String, String)> {
    let var = server_var(engine, "TLS_URL");
    match (std::env::var(&var), std::env::var("KVMARK_TLS_CA")) {
        (Ok(url), Ok(ca)) if !url.is_empty() && !ca.is_empty() => Some((url, ca)),
        _ if kvmark::engine::storage::servers_required()
            && std::env::var("KVMARK_SERVERS_TLS").as_deref() != Ok("0") =>
        {
            panic!("{engine}: {var} or KVMARK_TLS_CA is not set: scripts/with-servers starts the servers with TLS")
        }
        _ => {
            eprintln!("{engine}: no TLS server ({var} is not set): skipped");
            None
        }
    }
}
