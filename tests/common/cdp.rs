//! A small Chrome DevTools Protocol client for tests: it launches headless Chromium
//! with `--remote-debugging-pipe` (commands on the child's fd 3, replies and events
//! on its fd 4, each message a JSON text ended by a NUL byte), so no port is opened.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The Chromium binary: `$KVMARK_CHROMIUM`, else `chromium` (Debian's package,
/// installed by scripts/setup) or `chromium-browser` on PATH.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KVMARK_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A running headless Chromium.
pub struct Browser {
    child: Child,
    commands: File,
    replies: Receiver<Value>,
    next_id: u64,
    /// Every event received so far, in order.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

fn pipe() -> (i32, i32) {
    let mut fds = [0i32; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

impl Browser {
    /// Starts Chromium with a fresh profile and every background fetch switched off.
    pub fn launch() -> Result<Browser, String> {
        let exe = chromium().ok_or("chromium not found: install Debian's chromium (scripts/setup does)")?;
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let (cmd_read, cmd_write) = pipe();
        let (ev_read, ev_write) = pipe();
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: between fork and exec the closure only calls fcntl and dup2, which
        // are async-signal-safe. Moving both ends above 10 first keeps one dup2 from
        // overwriting the other when a pipe end already is fd 3 or 4.
        unsafe {
            cmd.pre_exec(move || {
                let a = libc::fcntl(cmd_read, libc::F_DUPFD, 10);
                let b = libc::fcntl(ev_write, libc::F_DUPFD, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        // SAFETY: the child has its own copies; these ends are ours alone and closed once.
        unsafe {
            libc::close(cmd_read);
            libc::close(ev_write);
        }
        // SAFETY: each descriptor is open, owned by nobody else, and wrapped once.
        let (commands, events) = unsafe { (File::from_raw_fd(cmd_write), File::from_raw_fd(ev_read)) };
        let (tx, replies) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(events);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if buf.last() == Some(&0) {
                            buf.pop();
                        }
                        if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                            && tx.send(v).is_err()
                        {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Browser {
            child,
            commands,
            replies,
            next_id: 0,
            events: Vec::new(),
            _profile: profile,
        })
    }

    /// Sends a command (to a page's session, or to the browser) and waits for its
    /// result, keeping the events that arrive meanwhile.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .map_err(|e| format!("{method}: cannot send: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.replies.recv_timeout(left) {
                Ok(v) if v.get("id").and_then(Value::as_u64) == Some(id) => {
                    if let Some(err) = v.get("error") {
                        return Err(format!("{method}: {err}"));
                    }
                    return Ok(v.get("result").cloned().unwrap_or(Value::Null));
                }
                Ok(v) => self.events.push(v),
                Err(RecvTimeoutError::Timeout) => return Err(format!("{method}: no reply within 60 s")),
                Err(RecvTimeoutError::Disconnected) => return Err(format!("{method}: chromium closed the pipe")),
            }
        }
    }

    /// Waits for an event named `method` (one already received counts).
    pub fn wait_event(&mut self, method: &str, timeout: Duration) -> Result<Value, String> {
        if let Some(e) = self.events.iter().find(|e| e["method"] == method) {
            return Ok(e.clone());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.replies.recv_timeout(left) {
                Ok(v) => {
                    let hit = v["method"] == method;
                    self.events.push(v.clone());
                    if hit {
                        return Ok(v);
                    }
                }
                Err(_) => return Err(format!("no {method} event within {timeout:?}")),
            }
        }
    }

    /// Evaluates a JavaScript expression in a page and returns its value.
    pub fn eval(&mut self, session: &str, expr: &str) -> Result<Value, String> {
        let r = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("{expr}: {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
