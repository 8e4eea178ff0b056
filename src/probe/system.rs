//! The system probe's static facts: host, OS and kernel, CPU, cores and affinity,
//! memory, page size, and the device behind the data directory.

use std::ffi::CStr;
use std::path::Path;

use super::{device, human_bytes};

/// Facts in report order. Anything unreadable is reported as "unknown", never
/// guessed.
pub fn facts(data_dir: Option<&Path>) -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| f.push((k.to_string(), v));
    put("host", hostname().unwrap_or_else(unknown));
    put("os", os_name().unwrap_or_else(unknown));
    put("kernel", kernel().unwrap_or_else(unknown));
    put("cpu", cpu_model().unwrap_or_else(unknown));
    put("cpu_cores", cpu_cores());
    put("affinity", affinity().unwrap_or_else(unknown));
    put(
        "ram",
        meminfo_kib("MemTotal")
            .map(|k| human_bytes(k * 1024))
            .unwrap_or_else(unknown),
    );
    put("page_size", page_size().to_string());
    match data_dir {
        Some(dir) => {
            for (k, v) in device::facts(dir) {
                f.push((k, v));
            }
        }
        None => f.push(("data_dir".to_string(), "none (in-memory engines only)".to_string())),
    }
    f
}

fn unknown() -> String {
    "unknown".to_string()
}

/// The host name (gethostname), if the system gives one.
pub fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success
    // when the name fits, and the last byte stays 0 otherwise.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return None;
    }
    let name = CStr::from_bytes_until_nul(&buf).ok()?.to_string_lossy().into_owned();
    (!name.is_empty()).then_some(name)
}

/// `PRETTY_NAME` from os-release, e.g. "Debian GNU/Linux 12 (bookworm)".
fn os_name() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
}

/// "Linux 6.2.0-39-generic x86_64".
fn kernel() -> Option<String> {
    // SAFETY: utsname is plain old data; uname fills it on success.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let field = |raw: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = raw.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some(format!(
        "{} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.machine)
    ))
}

/// The CPU model from /proc/cpuinfo (x86 "model name", else the first of
/// "Model", "Hardware" or "cpu model").
fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    for key in ["model name", "Model", "Hardware", "cpu model"] {
        let found = text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        });
        if let Some(v) = found.filter(|v| !v.is_empty()) {
            return Some(v);
        }
    }
    None
}

fn cpu_cores() -> String {
    // SAFETY: sysconf has no memory-safety preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    // SAFETY: as above.
    let configured = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if online == configured {
        format!("{online} logical")
    } else {
        format!("{online} logical online ({configured} configured)")
    }
}

/// The CPUs this process may run on, as a range list: "0-3,8 (5 CPUs)".
fn affinity() -> Option<String> {
    // SAFETY: cpu_set_t is plain old data.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid and its size is passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return None;
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `set` was filled by sched_getaffinity; the index is in range.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    Some(format!("{} ({} CPUs)", range_list(&cpus), cpus.len()))
}

/// "0-3,8,10-11" from sorted CPU numbers.
pub fn range_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// A /proc/meminfo field in KiB.
pub fn meminfo_kib(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text, field)
}

/// A field of /proc/meminfo text, in KiB.
pub fn parse_meminfo(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Bytes this process may still allocate before the system refuses, as far as can be
/// told: the least of the machine's available memory, what its cgroup (v2 or v1)
/// leaves, and what its address-space and data-segment limits leave. None when none
/// of them can be read.
pub fn memory_headroom() -> Option<u64> {
    let machine = meminfo_kib("MemAvailable").map(|kib| kib << 10);
    let cgroup = cgroup_headroom();
    let vm_kib = |field: &str| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|t| parse_meminfo(&t, field))
            .map(|kib| kib << 10)
    };
    let address_space = rlimit_headroom(libc::RLIMIT_AS, vm_kib("VmSize"));
    let data = rlimit_headroom(libc::RLIMIT_DATA, vm_kib("VmData"));
    [machine, cgroup, address_space, data].into_iter().flatten().min()
}

/// What the process's cgroup leaves: `memory.max - memory.current` (v2) or
/// `memory.limit_in_bytes - memory.usage_in_bytes` (v1); None without a limit.
fn cgroup_headroom() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |path: String| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (max, used) = if controllers.is_empty() {
            let dir = format!("/sys/fs/cgroup{path}");
            (read(format!("{dir}/memory.max")), read(format!("{dir}/memory.current")))
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = format!("/sys/fs/cgroup/memory{path}");
            (
                read(format!("{dir}/memory.limit_in_bytes")),
                read(format!("{dir}/memory.usage_in_bytes")),
            )
        } else {
            continue;
        };
        // "max" (v2) does not parse, and v1 writes an unlimited limit as a huge number.
        if let Some(max) = max.filter(|m| *m < 1 << 60) {
            return Some(max.saturating_sub(used.unwrap_or(0)));
        }
    }
    None
}

/// What a resource limit leaves beyond `used` bytes; None when unlimited or unread.
fn rlimit_headroom(resource: libc::__rlimit_resource_t, used: Option<u64>) -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write to.
    if unsafe { libc::getrlimit(resource, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(lim.rlim_cur.saturating_sub(used.unwrap_or(0)))
}

/// The memory page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(range_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(range_list(&[5]), "5");
        assert_eq!(range_list(&[]), "");
    }

    #[test]
    fn meminfo_fields() {
        let text = "MemTotal:       24684084 kB\nMemFree:        23000000 kB\nMemAvailable:   23500000 kB\n";
        assert_eq!(parse_meminfo(text, "MemTotal"), Some(24_684_084));
        assert_eq!(parse_meminfo(text, "MemAvailable"), Some(23_500_000));
        assert_eq!(parse_meminfo(text, "Mem"), None);
    }

    #[test]
    fn facts_cover_the_machine() {
        let f = facts(None);
        let keys: Vec<&str> = f.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "host",
                "os",
                "kernel",
                "cpu",
                "cpu_cores",
                "affinity",
                "ram",
                "page_size",
                "data_dir"
            ]
        );
        assert!(f[7].1.parse::<u64>().unwrap() >= 4096);
    }
}
