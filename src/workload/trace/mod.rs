//! Traces recorded elsewhere, replayed unchanged (`kvmark replay --format FORMAT FILE`):
//! Twitter's open cache traces ([`twitter`]) and the text `redis-cli MONITOR` prints
//! ([`monitor`]). kvmark's own operation log is [`super::replay`].
//!
//! Each request of the trace becomes one unit on the kv verbs; a request kvmark has no
//! verb for is skipped, and the opening pass counts each such kind and warns once per
//! kind. As with operation logs, the i-th request goes to thread i mod T (in a
//! scaled-out run, of every segment's threads), or with `--trace-split client` every
//! request of one client goes to the same thread (its client's hash mod T), which
//! keeps each client's order; each thread streams the file itself, and memory does not
//! grow with the trace (a split by client keeps one count per client).
//!
//! On the trace's clock (`--speed X`) each request is due at its trace time divided by
//! X, counted from the step's start, and its response time is measured from then, as
//! with `--rate`. Twitter's traces give whole seconds, so the requests of one second
//! are spread evenly over it (a table of each second's first request, 8 bytes per
//! second of trace); MONITOR gives microseconds, used as they are.

pub mod fit;
pub mod monitor;
pub mod twitter;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::replay::read_line;
use super::{Budget, PhasePlan, Program, ThreadCtx, Workload, WorkloadError};
use crate::kv::Kv;
use crate::kv::pace::StopSignal;
use crate::kv::values::ValuePool;

/// Read buffer of each reader.
const READ_BUF: usize = 1 << 20;

/// The characters of a value written at a recorded size: the traces hold only the
/// size, so the bytes are random alphanumerics, which do not compress.
const VALUE_CHARS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Keys a batch command keeps on the stack; a longer MGET, MSET or DEL allocates.
const STACK_KEYS: usize = 32;

/// How a trace's requests are dealt to the run's threads (`--trace-split`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceSplit {
    /// The i-th request to thread i mod T: even shares.
    #[default]
    Line,
    /// Every request of a client to one thread: each client's order is kept, the
    /// shares follow the clients' sizes.
    Client,
}

impl TraceSplit {
    /// Parses `--trace-split`.
    pub fn parse(text: &str) -> Result<TraceSplit, String> {
        match text.trim() {
            "line" => Ok(TraceSplit::Line),
            "client" => Ok(TraceSplit::Client),
            other => Err(format!(
                "--trace-split '{other}': expected line (the i-th request to thread i mod T) or client (each client's requests to one thread)"
            )),
        }
    }

    /// The name `--trace-split` takes.
    pub fn name(self) -> &'static str {
        match self {
            TraceSplit::Line => "line",
            TraceSplit::Client => "client",
        }
    }
}

/// How a trace file is written (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// kvmark's operation log.
    Oplog,
    /// Twitter's cache-trace CSV.
    Twitter,
    /// `redis-cli MONITOR` output.
    RedisMonitor,
}

impl TraceFormat {
    /// Parses `--format`.
    pub fn parse(text: &str) -> Result<TraceFormat, String> {
        match text.trim() {
            "oplog" => Ok(TraceFormat::Oplog),
            "twitter" => Ok(TraceFormat::Twitter),
            "redis-monitor" => Ok(TraceFormat::RedisMonitor),
            other => Err(format!(
                "--format '{other}': expected twitter (Twitter's cache-trace CSV), redis-monitor (what redis-cli MONITOR prints) or oplog (kvmark's operation log)"
            )),
        }
    }

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Oplog => "oplog",
            TraceFormat::Twitter => "twitter",
            TraceFormat::RedisMonitor => "redis-monitor",
        }
    }
}

/// Opens `path` as a trace of `format`, replayed as fast as possible or, with
/// `speed`, on the trace's clock sped up `speed` times, its requests dealt to threads
/// by `split`.
pub fn open(
    path: &Path,
    format: TraceFormat,
    speed: Option<f64>,
    split: TraceSplit,
) -> Result<Arc<dyn Workload>, WorkloadError> {
    match format {
        TraceFormat::Oplog if speed.is_some() => Err(WorkloadError::Invalid(format!(
            "{}: --speed replays a trace on its own clock, and an operation log has none; pace it with --rate",
            path.display()
        ))),
        TraceFormat::Oplog if split == TraceSplit::Client => Err(WorkloadError::Invalid(format!(
            "{}: --trace-split client deals a trace's requests by client, and an operation log names none",
            path.display()
        ))),
        TraceFormat::Oplog => super::replay::open_workload(path),
        _ => Ok(Arc::new(TraceWorkload::open(path, format, speed, split)?)),
    }
}

/// The kv verb a request becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verb {
    /// A point read of the first argument.
    #[default]
    Get,
    /// A write of the first argument.
    Put,
    /// An append to the first argument.
    Append,
    /// A point delete of the first argument.
    Delete,
    /// A read, then a write of the same key (a counter's increment).
    ReadModifyWrite,
    /// A batch read of every argument.
    MGet,
    /// A batch write of the arguments, in key-value pairs.
    MPut,
    /// A batch delete of every argument.
    MDel,
}

/// What one line of a trace holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// Nothing to replay (an empty line, MONITOR's opening `OK`).
    Blank,
    /// A request kvmark has no verb for, with its kind as the trace names it.
    Unmapped(&'a [u8]),
    /// A request, now in the decoder's [`Request`].
    Request,
}

/// One decoded request; reused line after line, so decoding allocates only while
/// its buffers grow.
#[derive(Debug, Default)]
pub struct Request {
    /// What it does.
    pub verb: Verb,
    /// The arguments' bytes, back to back.
    bytes: Vec<u8>,
    /// Each argument's range in `bytes`.
    args: Vec<(usize, usize)>,
    /// The size of the value to write when the trace records only a size (the value
    /// argument is then absent).
    pub fill: Option<usize>,
    /// When the trace issued it, in nanoseconds on the trace's clock.
    pub ts_ns: u64,
    /// A hash of the client that issued it.
    pub client_hash: u64,
    /// The key's time to live as the trace gives it (0: none). Replay does not apply
    /// it; `kvmark fit` counts it.
    pub ttl: u64,
}

impl Request {
    fn clear(&mut self) {
        self.bytes.clear();
        self.args.clear();
        self.fill = None;
        self.ttl = 0;
    }

    /// How many arguments it has.
    pub fn arg_count(&self) -> usize {
        self.args.len()
    }

    /// The size of the value it writes: the recorded size, or argument `i`'s length.
    pub fn value_len(&self, i: usize) -> usize {
        self.fill.unwrap_or_else(|| self.args.get(i).map_or(0, |&(a, b)| b - a))
    }

    fn push_arg(&mut self, arg: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(arg);
        self.args.push((start, self.bytes.len()));
    }

    /// Keeps only the arguments in `keep`, renumbered from 0.
    fn keep_args(&mut self, keep: Range<usize>) {
        self.args.truncate(keep.end);
        self.args.drain(..keep.start);
    }

    /// Argument `i`.
    pub fn arg(&self, i: usize) -> &[u8] {
        let (a, b) = self.args[i];
        &self.bytes[a..b]
    }

    /// The value to write: argument `i`, or the recorded size's worth of value bytes.
    fn value<'a>(&'a self, i: usize, values: &'a mut Values) -> &'a [u8] {
        match self.fill {
            Some(n) => values.pool.value(n, &mut values.rng, &mut values.spare),
            None => self.arg(i),
        }
    }

    /// Issues the request on `kv`. Engine errors are counted by `kv` itself.
    fn execute(&self, kv: &mut Kv, values: &mut Values) {
        let key = self.arg(0);
        match self.verb {
            Verb::Get => {
                let _ = kv.get(key);
            }
            Verb::Put => {
                let _ = kv.put(key, self.value(1, values));
            }
            Verb::Append => {
                let _ = kv.append(key, self.value(1, values));
            }
            Verb::Delete => {
                let _ = kv.del(key);
            }
            Verb::ReadModifyWrite => {
                let _ = kv.get(key);
                let _ = kv.put(key, self.value(1, values));
            }
            Verb::MGet => {
                self.with_keys(|keys| {
                    let _ = kv.mget(keys);
                });
            }
            Verb::MDel => {
                self.with_keys(|keys| {
                    let _ = kv.mdel(keys);
                });
            }
            Verb::MPut => {
                let n = self.args.len() / 2;
                if n <= STACK_KEYS {
                    let mut pairs = [(&b""[..], &b""[..]); STACK_KEYS];
                    for (i, pair) in pairs.iter_mut().enumerate().take(n) {
                        *pair = (self.arg(2 * i), self.arg(2 * i + 1));
                    }
                    let _ = kv.mput(&pairs[..n]);
                } else {
                    let pairs: Vec<(&[u8], &[u8])> = (0..n).map(|i| (self.arg(2 * i), self.arg(2 * i + 1))).collect();
                    let _ = kv.mput(&pairs);
                }
            }
        }
    }

    /// Calls `f` with every argument as a key.
    fn with_keys(&self, f: impl FnOnce(&[&[u8]])) {
        let n = self.args.len();
        if n <= STACK_KEYS {
            let mut keys = [&b""[..]; STACK_KEYS];
            for (i, k) in keys.iter_mut().enumerate().take(n) {
                *k = self.arg(i);
            }
            f(&keys[..n]);
        } else {
            let keys: Vec<&[u8]> = (0..n).map(|i| self.arg(i)).collect();
            f(&keys);
        }
    }
}

/// A client's id as a number, the same in every process (so segments agree).
fn hash(client: &[u8]) -> u64 {
    super::dist::fnv1a(client)
}

/// Value bytes for requests that record only a size.
struct Values {
    pool: Arc<ValuePool>,
    rng: Xoshiro256PlusPlus,
    /// Holds a value longer than half the pool.
    spare: Vec<u8>,
}

/// Decodes one line of `format`.
fn decode<'a>(format: TraceFormat, line: &'a [u8], req: &mut Request) -> Result<Decoded<'a>, String> {
    match format {
        TraceFormat::Twitter => twitter::decode(line, req),
        TraceFormat::RedisMonitor => monitor::decode(line, req),
        TraceFormat::Oplog => Err("an operation log is not read as a trace".to_string()),
    }
}

/// The trace's clock, for `--speed`.
#[derive(Debug)]
struct TraceClock {
    speed: f64,
    /// The first request's time.
    first_ns: u64,
    /// Twitter's whole seconds: the index of the first request of each second since
    /// the first, and the request count after the last.
    second_starts: Option<Vec<u64>>,
}

impl TraceClock {
    /// When request `index` (0-based, of the whole trace), issued at `ts_ns`, is due,
    /// in nanoseconds from the start.
    fn offset_ns(&self, ts_ns: u64, index: u64) -> u64 {
        let since = ts_ns.saturating_sub(self.first_ns);
        let at = match &self.second_starts {
            Some(starts) => {
                let s = (since / 1_000_000_000) as usize;
                match (starts.get(s), starts.get(s + 1)) {
                    (Some(&first), Some(&next)) if next > first => {
                        since as f64 + (index.saturating_sub(first)) as f64 * 1e9 / (next - first) as f64
                    }
                    _ => since as f64,
                }
            }
            None => since as f64,
        };
        (at / self.speed) as u64
    }
}

/// A trace file, checked line by line when it is opened.
#[derive(Debug)]
pub struct TraceWorkload {
    path: PathBuf,
    name: String,
    format: TraceFormat,
    /// Requests kvmark replays (unmapped ones left out).
    requests: u64,
    split: TraceSplit,
    /// Split by client: each client's hash and its request count.
    clients: Vec<(u64, u64)>,
    clock: Option<Arc<TraceClock>>,
    pool: Arc<ValuePool>,
}

impl TraceWorkload {
    /// Reads the whole trace once: checks every line, counts the requests and the
    /// unmapped kinds (a warning for each), and with `speed` notes its clock.
    pub fn open(
        path: &Path,
        format: TraceFormat,
        speed: Option<f64>,
        split: TraceSplit,
    ) -> Result<TraceWorkload, WorkloadError> {
        if let Some(x) = speed
            && !(x.is_finite() && x > 0.0)
        {
            return Err(WorkloadError::Invalid(format!(
                "--speed {x}: give a factor above 0 (1 replays at the trace's own pace, 2 twice as fast)"
            )));
        }
        let file = File::open(path)
            .map_err(|e| WorkloadError::Invalid(format!("cannot read trace {}: {e}", path.display())))?;
        let mut reader = BufReader::with_capacity(READ_BUF, file);
        let mut buf = Vec::new();
        let mut req = Request::default();
        let mut unmapped: BTreeMap<String, u64> = BTreeMap::new();
        let (mut requests, mut lineno) = (0u64, 0u64);
        let (mut first_ns, mut last_ns) = (None, 0u64);
        let mut second_starts = Vec::new();
        let mut clients: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
        let whole_seconds = speed.is_some() && format == TraceFormat::Twitter;
        loop {
            buf.clear();
            let n = read_line(&mut reader, &mut buf)
                .map_err(|e| WorkloadError::Invalid(format!("{}: {e}", path.display())))?;
            if n == 0 {
                break;
            }
            lineno += 1;
            let text = trim_eol(&buf);
            let at = |e: String| WorkloadError::Invalid(format!("{}:{lineno}: {e}", path.display()));
            match decode(format, text, &mut req).map_err(at)? {
                Decoded::Blank => {}
                Decoded::Unmapped(kind) => {
                    *unmapped
                        .entry(String::from_utf8_lossy(kind).to_ascii_lowercase())
                        .or_default() += 1;
                }
                Decoded::Request => {
                    let first = *first_ns.get_or_insert(req.ts_ns);
                    if speed.is_some() && req.ts_ns < last_ns {
                        return Err(at(format!(
                            "the time goes back (to {} s from {} s); --speed replays a trace in time order",
                            req.ts_ns as f64 / 1e9,
                            last_ns as f64 / 1e9
                        )));
                    }
                    last_ns = req.ts_ns;
                    if whole_seconds {
                        let s = ((req.ts_ns - first) / 1_000_000_000) as usize;
                        while second_starts.len() <= s {
                            second_starts.push(requests);
                        }
                    }
                    if split == TraceSplit::Client {
                        *clients.entry(req.client_hash).or_default() += 1;
                    }
                    requests += 1;
                }
            }
        }
        for (kind, n) in &unmapped {
            eprintln!(
                "kvmark: warning: {}: {n} request(s) of kind '{kind}' have no kv verb and are skipped",
                path.display()
            );
        }
        if requests == 0 {
            return Err(WorkloadError::Invalid(format!(
                "{}: the trace holds no request kvmark can replay (is it a {} trace? see --format)",
                path.display(),
                format.name()
            )));
        }
        second_starts.push(requests);
        Ok(TraceWorkload {
            path: path.to_path_buf(),
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            format,
            requests,
            split,
            clients: clients.into_iter().collect(),
            clock: speed.map(|speed| {
                Arc::new(TraceClock {
                    speed,
                    first_ns: first_ns.unwrap_or(0),
                    second_starts: whole_seconds.then_some(second_starts),
                })
            }),
            pool: Arc::new(ValuePool::new(VALUE_CHARS, 1.0, 1)),
        })
    }
}

/// A line without its line end (`\n` or `\r\n`).
fn trim_eol(buf: &[u8]) -> &[u8] {
    let text = buf.strip_suffix(b"\n").unwrap_or(buf);
    text.strip_suffix(b"\r").unwrap_or(text)
}

impl Workload for TraceWorkload {
    fn name(&self) -> &str {
        &self.name
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn has_load(&self) -> bool {
        false
    }

    fn epoch_layout(&self) -> Result<super::epochs::EpochLayout, String> {
        Err(format!(
            "{}: a trace replays as recorded and cannot run in epochs",
            self.path.display()
        ))
    }

    fn phases(&self) -> Vec<PhasePlan> {
        vec![PhasePlan {
            name: "replay".to_string(),
            budget: Some(Budget::Ops(self.requests)),
            rate: None,
        }]
    }

    fn quota(&self, _phase: usize, total: u64, workers: usize, worker: usize) -> u64 {
        match self.split {
            TraceSplit::Line => super::share(total, workers, worker),
            TraceSplit::Client => self
                .clients
                .iter()
                .filter(|(hash, _)| hash % workers as u64 == worker as u64)
                .map(|(_, n)| n)
                .sum(),
        }
    }

    fn program(&self, ctx: &ThreadCtx, kv: Kv) -> Result<Box<dyn Program>, WorkloadError> {
        let file = File::open(&self.path)
            .map_err(|e| WorkloadError::Runtime(format!("cannot read trace {}: {e}", self.path.display())))?;
        Ok(Box::new(TraceProgram {
            path: self.path.clone(),
            format: self.format,
            reader: BufReader::with_capacity(READ_BUF, file),
            buf: Vec::new(),
            req: Request::default(),
            lineno: 0,
            index: 0,
            split: self.split,
            thread: ctx.thread as u64,
            threads: ctx.threads as u64,
            clock: self.clock.clone(),
            stop: None,
            values: Values {
                pool: Arc::clone(&self.pool),
                rng: Xoshiro256PlusPlus::seed_from_u64(ctx.params.seed.wrapping_add(ctx.thread as u64)),
                spare: Vec::new(),
            },
            kv,
        }))
    }
}

/// One thread's reader.
struct TraceProgram {
    path: PathBuf,
    format: TraceFormat,
    reader: BufReader<File>,
    buf: Vec<u8>,
    req: Request,
    lineno: u64,
    /// Requests read so far (all threads').
    index: u64,
    split: TraceSplit,
    thread: u64,
    threads: u64,
    clock: Option<Arc<TraceClock>>,
    /// The current step's stop signal, which ends a wait for a request's time.
    stop: Option<StopSignal>,
    values: Values,
    kv: Kv,
}

impl Program for TraceProgram {
    fn load(&mut self) -> Result<(), WorkloadError> {
        Ok(())
    }

    fn stop_on(&mut self, stop: StopSignal) {
        self.stop = Some(stop);
    }

    fn enter(&mut self, _phase: usize) -> Result<(), WorkloadError> {
        if let (Some(_), Some(stop)) = (&self.clock, &self.stop) {
            self.kv.start_trace_clock(stop.clone());
        }
        Ok(())
    }

    fn run(&mut self, _phase: usize, _first_iter: u64, n: u64) -> Result<u64, WorkloadError> {
        let mut done = 0;
        while done < n {
            self.buf.clear();
            let got = read_line(&mut self.reader, &mut self.buf)
                .map_err(|e| WorkloadError::Runtime(format!("{}: {e}", self.path.display())))?;
            if got == 0 {
                break;
            }
            self.lineno += 1;
            let decoded = decode(self.format, trim_eol(&self.buf), &mut self.req)
                .map_err(|e| WorkloadError::Runtime(format!("{}:{}: {e}", self.path.display(), self.lineno)))?;
            if decoded != Decoded::Request {
                continue;
            }
            let index = self.index;
            self.index += 1;
            let owner = match self.split {
                TraceSplit::Line => index,
                TraceSplit::Client => self.req.client_hash,
            };
            if owner % self.threads != self.thread {
                continue;
            }
            if let Some(clock) = &self.clock {
                self.kv.set_upcoming(clock.offset_ns(self.req.ts_ns, index));
            }
            // The unit boundary: when paced, the wait for the request's time.
            if !self.kv.begin_unit() {
                break;
            }
            self.req.execute(&mut self.kv, &mut self.values);
            done += 1;
        }
        Ok(done)
    }

    fn kv(&mut self) -> &mut Kv {
        &mut self.kv
    }

    fn finish(self: Box<Self>) -> Kv {
        self.kv
    }
}

/// Decodes one line of `format` into a fresh request (the decoders' tests).
#[cfg(test)]
fn decode_one(format: TraceFormat, line: &str) -> Result<(Decoded<'_>, Request), String> {
    let mut req = Request::default();
    let d = decode(format, line.as_bytes(), &mut req)?;
    Ok((d, req))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_are_spread_and_sped_up() {
        // Second 0 holds requests 0..4, second 1 none, second 2 requests 4..5.
        let clock = TraceClock {
            speed: 2.0,
            first_ns: 10_000_000_000,
            second_starts: Some(vec![0, 4, 4, 5]),
        };
        let at = |s: u64, i: u64| clock.offset_ns(10_000_000_000 + s * 1_000_000_000, i);
        assert_eq!([at(0, 0), at(0, 1), at(0, 3)], [0, 125_000_000, 375_000_000]);
        assert_eq!(at(2, 4), 1_000_000_000);
        // Microsecond clocks are taken as they are.
        let clock = TraceClock {
            speed: 0.5,
            first_ns: 1_000,
            second_starts: None,
        };
        assert_eq!(clock.offset_ns(4_000, 9), 6_000);
    }

    #[test]
    fn formats_parse_by_name() {
        for f in [TraceFormat::Oplog, TraceFormat::Twitter, TraceFormat::RedisMonitor] {
            assert_eq!(TraceFormat::parse(f.name()), Ok(f));
        }
        assert!(TraceFormat::parse("csv").unwrap_err().contains("expected twitter"));
    }
}
