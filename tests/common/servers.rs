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
}

impl PrivateServer {
    /// Starts `name` (panics saying why when it cannot).
    pub fn start(name: &'static str) -> PrivateServer {
        let state = tempfile::tempdir().unwrap();
        // As root, PostgreSQL runs as the 'postgres' user inside the directory.
        let open = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
        std::fs::set_permissions(state.path(), open).unwrap();
        let out = servers(state.path(), &["start", name]);
        let url = stdout(&out)
            .lines()
            .find_map(|l| l.split_once("_URL=").map(|(_, u)| u.to_string()))
            .unwrap_or_else(|| panic!("scripts/servers start {name}: {}", stderr(&out)));
        PrivateServer { name, state, url }
    }

    /// Stops it for good.
    pub fn stop(&self) {
        self.control("stop");
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

    /// Its processes: those of its pid file and every descendant of theirs
    /// (PostgreSQL's backends are children of the postmaster).
    pub fn processes(&self) -> Vec<i32> {
        let file = self.state.path().join(self.name).join("pid");
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut pids: Vec<i32> = text.split_whitespace().filter_map(|p| p.parse().ok()).collect();
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
        // A paused server would not stop within scripts/servers' wait.
        self.signal(libc::SIGCONT);
        let _ = servers(self.state.path(), &["stop", self.name]);
    }
}

/// Runs scripts/servers with `state` as its state directory.
pub fn servers(state: &Path, args: &[&str]) -> Output {
    Command::new(root().join("scripts/servers"))
        .args(args)
        .env("KVMARK_SERVERS_DIR", state)
        .output()
        .expect("run scripts/servers")
}

/// Whether this machine can start Redis and PostgreSQL: in a dev run without them,
/// skip (saying so); with KVMARK_REQUIRE_SERVERS=1 the test goes on and fails.
pub fn can_start_servers() -> bool {
    let have = Command::new("sh")
        .arg("-c")
        .arg("command -v redis-server && ls /usr/lib/postgresql/*/bin/initdb")
        .output()
        .is_ok_and(|o| o.status.success());
    let required = kvmark::engine::storage::servers_required();
    if !have && !required {
        eprintln!("redis-server or PostgreSQL is not installed (scripts/servers installs them): skipped");
    }
    have || required
}
