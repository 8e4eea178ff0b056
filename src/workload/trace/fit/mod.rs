//! `kvmark fit`: a spec that reproduces a trace (Twitter's cache traces, `redis-cli
//! MONITOR` output), with how well each part fits and what it could not model.
//!
//! The trace is read twice, streaming: the first pass finds its time span, the second
//! replays it against a model of a fresh store (which keys are live) and sorts every
//! request into one of the spec's operations, as a replay of the trace on a fresh
//! store would meet it:
//!
//! - a write of a key that is not live is an insert, of a live key an update;
//! - a read of a live key is a point query (a hit), of any other key an empty point
//!   query (a miss); a delete likewise a point delete or an empty point delete;
//! - an append is a merge; a counter's increment is a read-modify-write of a live key,
//!   or a missed read and an insert when the key is not live;
//! - batch requests (MGET, MSET, a DEL of several keys) count as their single-key
//!   operations, since a spec has no batch verbs.
//!
//! The spec has one group per time window, with the window's operation counts and its
//! rate, and one key space whose key sizes, value sizes and key popularity are fitted
//! over the whole trace ([`model`]). Memory grows with the trace's distinct keys
//! (a hash table entry each), never with its length.

pub mod model;
mod write;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::io::BufReader;
use std::path::Path;

use super::{Decoded, READ_BUF, Request, TraceFormat, Verb, decode, trim_eol};
use crate::workload::replay::read_line;

pub use self::write::FitReport;

/// What `kvmark fit` is asked to do.
#[derive(Debug, Clone)]
pub struct FitRequest<'a> {
    /// The trace.
    pub path: &'a Path,
    /// How it is written (not `oplog`).
    pub format: TraceFormat,
    /// Time windows, each a group of the spec with its own mix and rate.
    pub windows: usize,
    /// The spec's rates over the trace's (`--speed`).
    pub speed: f64,
}

/// The spec's operations, in the order a group lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitOp {
    /// A write of a key that is not live.
    Insert,
    /// A write of a live key.
    Update,
    /// A read of a live key.
    PointQuery,
    /// A read of a key that is not live.
    EmptyPointQuery,
    /// A delete of a live key.
    PointDelete,
    /// A delete of a key that is not live.
    EmptyPointDelete,
    /// An append.
    Merge,
    /// A counter's read and write of a live key.
    ReadModifyWrite,
}

impl FitOp {
    /// Number of operations.
    pub const COUNT: usize = 8;

    /// Every operation, in group order.
    pub const ALL: [FitOp; FitOp::COUNT] = [
        FitOp::Insert,
        FitOp::Update,
        FitOp::PointQuery,
        FitOp::EmptyPointQuery,
        FitOp::PointDelete,
        FitOp::EmptyPointDelete,
        FitOp::Merge,
        FitOp::ReadModifyWrite,
    ];

    /// The spec's field for it.
    pub fn field(self) -> &'static str {
        match self {
            FitOp::Insert => "inserts",
            FitOp::Update => "updates",
            FitOp::PointQuery => "point_queries",
            FitOp::EmptyPointQuery => "empty_point_queries",
            FitOp::PointDelete => "point_deletes",
            FitOp::EmptyPointDelete => "empty_point_deletes",
            FitOp::Merge => "merges",
            FitOp::ReadModifyWrite => "read_modify_writes",
        }
    }
}

/// What one key has seen, in the model of the store.
#[derive(Debug, Clone, Copy, Default)]
struct KeyState {
    /// Written and not deleted since.
    live: bool,
    /// Ever written (inserted), so part of the key space the spec generates.
    written: bool,
    /// Operations on it while it was live (its popularity).
    accesses: u32,
    /// The order of its first insert among the written keys.
    order: u32,
}

/// Every count a fit is made from.
#[derive(Debug, Default)]
pub struct TraceStats {
    /// Requests decoded (unmapped ones left out).
    pub requests: u64,
    /// Unmapped request kinds and their counts.
    pub unmapped: BTreeMap<String, u64>,
    /// The first request's time, in nanoseconds on the trace's clock.
    pub first_ns: u64,
    /// The span the windows divide, in nanoseconds (0: the trace has no clock).
    pub span_ns: u64,
    /// Operations per window.
    pub windows: Vec<[u64; FitOp::COUNT]>,
    /// Requests per window (a missed increment is two operations but one request).
    pub window_requests: Vec<u64>,
    /// Sizes of written values (inserts and updates), size -> count.
    pub put_sizes: BTreeMap<u64, u64>,
    /// Sizes of appended bytes.
    pub append_sizes: BTreeMap<u64, u64>,
    /// Sizes of counters written back.
    pub rmw_sizes: BTreeMap<u64, u64>,
    /// Sizes of the written keys, one per key.
    pub key_sizes: BTreeMap<u64, u64>,
    /// Accesses of each written key while live, with its insert order.
    pub popularity: Vec<(u32, u32)>,
    /// Distinct keys the trace names.
    pub distinct_keys: u64,
    /// Batch requests counted as their single-key operations.
    pub batches: u64,
    /// Appends to keys that were not live (modelled as appends to live keys).
    pub appends_to_absent: u64,
    /// Requests with a TTL (the spec's keys live until deleted).
    pub ttls: u64,
    /// Whether the trace's time ever goes back.
    pub time_goes_back: bool,
}

/// Fits a spec to the trace `req.path`: the spec's JSON text and the report of how
/// well it fits. Errors name the file and line.
pub fn fit(req: &FitRequest<'_>) -> Result<FitReport, String> {
    if req.format == TraceFormat::Oplog {
        return Err(format!(
            "{}: kvmark fit reads traces recorded elsewhere (--format twitter or redis-monitor); an operation log \
             replays as it is (kvmark replay)",
            req.path.display()
        ));
    }
    if req.windows == 0 {
        return Err("--windows 0: give at least 1".to_string());
    }
    if !(req.speed.is_finite() && req.speed > 0.0) {
        return Err(format!(
            "--speed {}: give a factor above 0 (1 keeps the trace's rates, 10 runs its span ten times as fast)",
            req.speed
        ));
    }
    let stats = scan(req)?;
    if stats.requests == 0 {
        return Err(format!(
            "{}: the trace holds no request kvmark can replay, so there is nothing to fit",
            req.path.display()
        ));
    }
    Ok(write::report(req, &stats))
}

/// Streams the trace, calling `each` with every decoded request, or with the kind of a
/// request that has no kv verb.
fn stream(
    req: &FitRequest<'_>,
    mut each: impl FnMut(&Request, Option<&[u8]>) -> Result<(), String>,
) -> Result<(), String> {
    let path = req.path;
    let file = File::open(path).map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
    let mut reader = BufReader::with_capacity(READ_BUF, file);
    let (mut buf, mut request, mut lineno) = (Vec::new(), Request::default(), 0u64);
    loop {
        buf.clear();
        if read_line(&mut reader, &mut buf).map_err(|e| format!("{}: {e}", path.display()))? == 0 {
            return Ok(());
        }
        lineno += 1;
        let at = |e: String| format!("{}:{lineno}: {e}", path.display());
        let line = trim_eol(&buf);
        match decode(req.format, line, &mut request).map_err(at)? {
            Decoded::Blank => {}
            Decoded::Unmapped(kind) => each(&request, Some(kind)).map_err(at)?,
            Decoded::Request => each(&request, None).map_err(at)?,
        }
    }
}

/// Both passes: the time span, then every request into the model.
fn scan(req: &FitRequest<'_>) -> Result<TraceStats, String> {
    let mut st = TraceStats::default();
    let (mut first, mut last, mut prev) = (u64::MAX, 0u64, 0u64);
    stream(req, |r, unmapped| {
        if let Some(kind) = unmapped {
            *st.unmapped
                .entry(String::from_utf8_lossy(kind).to_ascii_lowercase())
                .or_default() += 1;
        } else {
            st.requests += 1;
            first = first.min(r.ts_ns);
            last = last.max(r.ts_ns);
            st.time_goes_back |= r.ts_ns < prev;
            prev = r.ts_ns;
        }
        Ok(())
    })?;
    if st.requests == 0 {
        return Ok(st);
    }
    st.first_ns = first;
    st.span_ns = match req.format {
        // Whole seconds: the last second lasts a second too.
        TraceFormat::Twitter => last - first + 1_000_000_000,
        // Microseconds: one mean gap past the last request.
        _ if st.requests > 1 && last > first => last - first + (last - first) / (st.requests - 1),
        _ => 0,
    };
    let windows = if st.span_ns == 0 { 1 } else { req.windows };
    st.windows = vec![[0; FitOp::COUNT]; windows];
    st.window_requests = vec![0; windows];
    let mut model = Model {
        keys: HashMap::default(),
        written: 0,
        st: &mut st,
        window: 0,
    };
    let ttl_field = req.format == TraceFormat::Twitter;
    stream(req, |r, unmapped| {
        if unmapped.is_some() {
            return Ok(());
        }
        let w = if model.st.span_ns == 0 {
            0
        } else {
            let since = u128::from(r.ts_ns - model.st.first_ns);
            ((since * windows as u128 / u128::from(model.st.span_ns)) as usize).min(windows - 1)
        };
        model.window = w;
        model.st.window_requests[w] += 1;
        if ttl_field && r.ttl > 0 {
            model.st.ttls += 1;
        }
        model.request(r);
        Ok(())
    })?;
    let Model { keys, .. } = model;
    st.distinct_keys = keys.len() as u64;
    st.popularity = keys
        .values()
        .filter(|k| k.written)
        .map(|k| (k.accesses, k.order))
        .collect();
    Ok(st)
}

/// Keys by a 64-bit hash of their bytes: the same for every run, and a collision
/// among even billions of keys is unlikely enough not to change a fitted figure.
type KeyHash = BuildHasherDefault<DefaultHasher>;

/// The store as a replay on a fresh one would leave it.
struct Model<'a> {
    keys: HashMap<u64, KeyState>,
    written: u32,
    st: &'a mut TraceStats,
    window: usize,
}

impl Model<'_> {
    fn count(&mut self, op: FitOp) {
        self.st.windows[self.window][op as usize] += 1;
    }

    /// Meets `key`: returns whether it was live, counting an access if it was, and
    /// leaves it live or not as `then` says (None: as it was). A key's first time live
    /// is its insert: it joins the key space, in order.
    fn visit(&mut self, key: &[u8], then: Option<bool>) -> bool {
        let written = self.written;
        let k = self.keys.entry(KeyHash::default().hash_one(key)).or_default();
        let was = k.live;
        if was {
            k.accesses = k.accesses.saturating_add(1);
        }
        k.live = then.unwrap_or(was);
        if k.live && !k.written {
            k.written = true;
            k.order = written;
            self.written = written.saturating_add(1);
            *self.st.key_sizes.entry(key.len() as u64).or_default() += 1;
        }
        was
    }

    /// A write of `key` with a value of `size` bytes.
    fn write(&mut self, key: &[u8], size: u64) {
        let op = if self.visit(key, Some(true)) {
            FitOp::Update
        } else {
            FitOp::Insert
        };
        self.count(op);
        *self.st.put_sizes.entry(size).or_default() += 1;
    }

    fn read(&mut self, key: &[u8]) {
        let op = if self.visit(key, None) {
            FitOp::PointQuery
        } else {
            FitOp::EmptyPointQuery
        };
        self.count(op);
    }

    fn delete(&mut self, key: &[u8]) {
        let op = if self.visit(key, Some(false)) {
            FitOp::PointDelete
        } else {
            FitOp::EmptyPointDelete
        };
        self.count(op);
    }

    fn request(&mut self, r: &Request) {
        let key = r.arg(0);
        match r.verb {
            Verb::Get => self.read(key),
            Verb::Put => self.write(key, r.value_len(1) as u64),
            Verb::Delete => self.delete(key),
            Verb::Append => {
                let live = self.visit(key, Some(true));
                self.st.appends_to_absent += u64::from(!live);
                self.count(FitOp::Merge);
                *self.st.append_sizes.entry(r.value_len(1) as u64).or_default() += 1;
            }
            Verb::ReadModifyWrite => {
                let size = r.value_len(1) as u64;
                if self.visit(key, None) {
                    self.count(FitOp::ReadModifyWrite);
                    *self.st.rmw_sizes.entry(size).or_default() += 1;
                } else {
                    self.count(FitOp::EmptyPointQuery);
                    self.write(key, size);
                }
            }
            Verb::MGet | Verb::MDel => {
                self.st.batches += 1;
                for i in 0..r.arg_count() {
                    if r.verb == Verb::MGet {
                        self.read(r.arg(i));
                    } else {
                        self.delete(r.arg(i));
                    }
                }
            }
            Verb::MPut => {
                self.st.batches += 1;
                for i in 0..r.arg_count() / 2 {
                    self.write(r.arg(2 * i), r.arg(2 * i + 1).len() as u64);
                }
            }
        }
    }
}
