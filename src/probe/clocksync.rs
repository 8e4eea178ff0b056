//! Whether the system clock is synchronised, for scaled-out runs whose segments start
//! at one absolute time on different machines: the kernel's NTP state (adjtimex, read
//! only), and chrony's or systemd's own word where those tools are installed.

use std::process::Command;

/// The clock's synchronisation state in one line: "synchronised (kernel: offset 12 us,
/// max error 20 us; chrony: ...)" or "not synchronised (...)". Never fails: what
/// cannot be read says so.
pub fn clock_sync() -> String {
    let mut parts = vec![kernel()];
    if let Some(c) = tool("chronyc", &["-n", "tracking"]) {
        let lines: Vec<&str> = c
            .lines()
            .filter(|l| l.starts_with("Leap status") || l.starts_with("System time") || l.starts_with("Reference ID"))
            .map(str::trim)
            .collect();
        if !lines.is_empty() {
            parts.push(format!("chrony: {}", lines.join(", ")));
        }
    }
    if let Some(t) = tool("timedatectl", &["show", "-p", "NTPSynchronized", "-p", "NTP"]) {
        let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
        if !t.is_empty() {
            parts.push(format!("timedatectl: {t}"));
        }
    }
    parts.join("; ")
}

/// The kernel's view (adjtimex with no modes set only reads).
fn kernel() -> String {
    // SAFETY: timex is plain old data; zeroed means modes = 0, a read-only query.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: tx is a valid, writable timex for the call.
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return format!("kernel: cannot read ({})", std::io::Error::last_os_error());
    }
    let unsynced = state == libc::TIME_ERROR || tx.status & libc::STA_UNSYNC != 0;
    // The offset is in microseconds unless STA_NANO says nanoseconds.
    let offset_us = if tx.status & libc::STA_NANO != 0 {
        tx.offset as f64 / 1e3
    } else {
        tx.offset as f64
    };
    format!(
        "kernel: {} (offset {offset_us:.0} us, max error {} us)",
        if unsynced { "not synchronised" } else { "synchronised" },
        tx.maxerror
    )
}

/// A tool's standard output, when it is installed and succeeds.
fn tool(name: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(name).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_kernel_state_is_read() {
        let s = super::clock_sync();
        assert!(s.starts_with("kernel: "), "{s}");
        assert!(s.contains("synchronised") || s.contains("cannot read"), "{s}");
    }
}
