//! The system probe, sampled: machine and process CPU, memory, load, faults, context
//! switches and I/O over each timeline interval. Everything comes from /proc and
//! getrusage, a few small reads per sample, on the sampler's thread.

use std::time::Instant;

use super::system::{page_size, parse_meminfo};

/// Every metric [`SystemMeter::sample`] produces, in order. Counters of events are
/// turned into per-second rates over the interval; levels are read as they are.
pub const SYSTEM_METRICS: [&str; 12] = [
    "sys.cpu_pct",
    "proc.cpu_pct",
    "proc.rss_bytes",
    "proc.peak_rss_bytes",
    "sys.mem_available_bytes",
    "sys.load1",
    "proc.minor_faults_per_s",
    "proc.major_faults_per_s",
    "proc.vol_ctx_switches_per_s",
    "proc.invol_ctx_switches_per_s",
    "proc.read_bytes_per_s",
    "proc.write_bytes_per_s",
];

/// Cumulative counters at one moment.
#[derive(Debug, Clone, Copy)]
struct Reading {
    at: Instant,
    /// Machine CPU time busy and total, in clock ticks.
    cpu: Option<(u64, u64)>,
    /// This process's user + system CPU time, microseconds.
    proc_cpu_us: u64,
    minflt: u64,
    majflt: u64,
    nvcsw: u64,
    nivcsw: u64,
    peak_rss: u64,
    /// Storage bytes read and written by this process.
    io: Option<(u64, u64)>,
}

/// Turns successive readings into interval metrics.
#[derive(Debug)]
pub struct SystemMeter {
    prev: Reading,
    page: u64,
    buf: String,
    /// Metrics that could not be read, reported once.
    missing: Vec<&'static str>,
}

impl Default for SystemMeter {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemMeter {
    /// A meter whose first interval starts now.
    pub fn new() -> Self {
        let mut buf = String::with_capacity(4096);
        SystemMeter {
            prev: read(&mut buf),
            page: page_size(),
            buf,
            missing: Vec::new(),
        }
    }

    /// Restarts the interval now (at the start of a step).
    pub fn restart(&mut self) {
        self.prev = read(&mut self.buf);
    }

    /// Appends the metrics of the interval since the previous call and starts the
    /// next one. Unreadable metrics are left out and named by [`Self::take_missing`].
    pub fn sample(&mut self, out: &mut Vec<(String, f64)>) {
        let now = read(&mut self.buf);
        let prev = std::mem::replace(&mut self.prev, now);
        let secs = now.at.duration_since(prev.at).as_secs_f64().max(1e-9);
        let rate = |a: u64, b: u64| b.saturating_sub(a) as f64 / secs;
        let mut put = |name: &'static str, v: Option<f64>| match v {
            Some(v) => out.push((name.to_string(), v)),
            None => {
                if !self.missing.contains(&name) {
                    self.missing.push(name);
                }
            }
        };
        put(
            "sys.cpu_pct",
            match (prev.cpu, now.cpu) {
                (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                    Some(b1.saturating_sub(b0) as f64 * 100.0 / (t1 - t0) as f64)
                }
                (Some(_), Some(_)) => Some(0.0),
                _ => None,
            },
        );
        put(
            "proc.cpu_pct",
            Some(now.proc_cpu_us.saturating_sub(prev.proc_cpu_us) as f64 / 1e4 / secs),
        );
        let rss = statm_rss(&mut self.buf).map(|p| p * self.page);
        put("proc.rss_bytes", rss.map(|r| r as f64));
        // Read a moment apart, the current figure may pass the kernel's peak.
        put("proc.peak_rss_bytes", Some(now.peak_rss.max(rss.unwrap_or(0)) as f64));
        put(
            "sys.mem_available_bytes",
            read_into("/proc/meminfo", &mut self.buf)
                .and_then(|t| parse_meminfo(t, "MemAvailable"))
                .map(|k| (k * 1024) as f64),
        );
        put("sys.load1", load1(&mut self.buf));
        put("proc.minor_faults_per_s", Some(rate(prev.minflt, now.minflt)));
        put("proc.major_faults_per_s", Some(rate(prev.majflt, now.majflt)));
        put("proc.vol_ctx_switches_per_s", Some(rate(prev.nvcsw, now.nvcsw)));
        put("proc.invol_ctx_switches_per_s", Some(rate(prev.nivcsw, now.nivcsw)));
        let io = prev.io.zip(now.io);
        put("proc.read_bytes_per_s", io.map(|((r0, _), (r1, _))| rate(r0, r1)));
        put("proc.write_bytes_per_s", io.map(|((_, w0), (_, w1))| rate(w0, w1)));
    }

    /// Metric names that could not be read since the last call (to warn once).
    pub fn take_missing(&mut self) -> Vec<&'static str> {
        std::mem::take(&mut self.missing)
    }
}

/// CPU time (user + system) of every thread of this process so far, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    // SAFETY: rusage is plain old data, filled by getrusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is writable; RUSAGE_SELF covers every thread of the process.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv_ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime)
}

/// Time each thread of this process now alive has spent waiting for a CPU (on a run
/// queue), in nanoseconds, by kernel thread id (the second field of each thread's
/// schedstat; empty where the kernel does not keep it). A thread that exits takes its
/// figure with it, so a thread that may end before the next reading reports its own
/// ([`thread_run_wait_ns`]).
pub fn run_wait_by_thread() -> Vec<(u64, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| {
            let tid = t.file_name().to_str()?.parse::<u64>().ok()?;
            Some((
                tid,
                schedstat_wait(&std::fs::read_to_string(t.path().join("schedstat")).ok()?)?,
            ))
        })
        .collect()
}

/// Time the calling thread has spent waiting for a CPU, in nanoseconds (0 where the
/// kernel does not keep it).
pub fn thread_run_wait_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| schedstat_wait(&s))
        .unwrap_or(0)
}

/// The calling thread's kernel thread id.
pub fn thread_id() -> u64 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u64
}

/// The run-queue wait of a schedstat line: "cpu_ns wait_ns timeslices".
fn schedstat_wait(line: &str) -> Option<u64> {
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The run-queue wait of the threads of this process between two
/// [`run_wait_by_thread`] readings, leaving out the threads in `own` (which report
/// their own): a thread that started between the two counts whole, one that exited
/// counts nothing (its share is lost, hence `own` for threads that may exit).
pub fn run_wait_between(before: &[(u64, u64)], after: &[(u64, u64)], own: &[u64]) -> u64 {
    after
        .iter()
        .filter(|(tid, _)| !own.contains(tid))
        .map(|(tid, w)| {
            let was = before.iter().find(|(t, _)| t == tid).map_or(0, |(_, w0)| *w0);
            w.saturating_sub(was)
        })
        .sum()
}

fn read(buf: &mut String) -> Reading {
    // SAFETY: rusage is plain old data, filled by getrusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is writable; RUSAGE_SELF covers every thread of the process.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv_us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    let cpu = read_into("/proc/stat", buf).and_then(parse_cpu_line);
    let io = read_into("/proc/self/io", buf).and_then(parse_io);
    Reading {
        at: Instant::now(),
        cpu,
        proc_cpu_us: tv_us(ru.ru_utime) + tv_us(ru.ru_stime),
        minflt: ru.ru_minflt as u64,
        majflt: ru.ru_majflt as u64,
        nvcsw: ru.ru_nvcsw as u64,
        nivcsw: ru.ru_nivcsw as u64,
        // Linux reports ru_maxrss in KiB.
        peak_rss: ru.ru_maxrss as u64 * 1024,
        io,
    }
}

/// Reads a small /proc file into the reused buffer.
fn read_into<'b>(path: &str, buf: &'b mut String) -> Option<&'b str> {
    use std::io::Read;
    buf.clear();
    std::fs::File::open(path).ok()?.read_to_string(buf).ok()?;
    Some(buf.as_str())
}

/// (busy, total) ticks from the aggregate "cpu" line of /proc/stat. Idle and iowait
/// are idle; guest time is already inside user and nice.
pub fn parse_cpu_line(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 4 {
        return None;
    }
    let field = |i: usize| v.get(i).copied().unwrap_or(0);
    let idle = field(3) + field(4);
    let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
    Some((busy, busy + idle))
}

/// (read_bytes, write_bytes) from /proc/self/io.
pub fn parse_io(text: &str) -> Option<(u64, u64)> {
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.trim().parse::<u64>().ok())
    };
    Some((get("read_bytes")?, get("write_bytes")?))
}

fn statm_rss(buf: &mut String) -> Option<u64> {
    read_into("/proc/self/statm", buf)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn load1(buf: &mut String) -> Option<f64> {
    read_into("/proc/loadavg", buf)?.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_line() {
        let text = "cpu  100 5 20 800 50 1 2 3 0 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_cpu_line(text), Some((131, 981)));
        assert_eq!(parse_cpu_line("intr 5\n"), None);
    }

    #[test]
    fn run_wait_counts_new_threads_whole_and_leaves_out_those_reporting_their_own() {
        assert_eq!(schedstat_wait("123 456 7\n"), Some(456));
        assert_eq!(schedstat_wait("123\n"), None);
        let before = [(10, 100), (11, 50), (12, 1_000)];
        // 10 waited 20 more, 12 exited, 13 is new, 11 reports its own.
        let after = [(10, 120), (11, 900), (13, 30)];
        assert_eq!(run_wait_between(&before, &after, &[11]), 20 + 30);
        assert_eq!(run_wait_between(&before, &after, &[]), 20 + 850 + 30);
        let me = thread_id();
        assert!(run_wait_by_thread().iter().any(|(t, _)| *t == me));
    }

    #[test]
    fn io_fields() {
        let text = "rchar: 6976\nwchar: 0\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(text), Some((4096, 8192)));
    }

    #[test]
    fn every_metric_is_sampled_here() {
        let mut m = SystemMeter::new();
        // Burn a little CPU so the process figure moves.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let mut out = Vec::new();
        m.sample(&mut out);
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        let missing = m.take_missing();
        for want in SYSTEM_METRICS {
            assert!(
                names.contains(&want) || missing.contains(&want),
                "{want} neither sampled nor reported missing"
            );
        }
        let get = |n: &str| out.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert!(get("proc.rss_bytes").unwrap() > 0.0);
        assert!(get("proc.peak_rss_bytes").unwrap() >= get("proc.rss_bytes").unwrap() / 2.0);
        assert!(get("proc.cpu_pct").unwrap() >= 0.0);
    }
}
