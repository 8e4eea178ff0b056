//! `Kv`: the timed verb set every workload drives (Lua scripts and declarative specs).
//!
//! Each verb reads the clock, makes exactly one engine call (plus busy retries, which
//! stay inside the timed region and are counted), reads the clock again, and files
//! the sample in this worker's recorder: counted in a [`Tallies`] slot, which is added
//! exactly into the recorder's histograms whenever the recorder is looked at or handed
//! over. Nothing else happens between the two clock reads: building Lua tables from
//! results, copying keys out of Lua, and so on stay outside the timed region.
//!
//! In an open-loop run the [`Pacer`] is active (see `kv/open.rs`): every program calls
//! [`Kv::begin_unit`] before each unit, which waits for the unit's intended start and
//! issues due key expiries; each call then also records its response time, the unit's
//! schedule lag plus the call's service time.
//!
//! The verb set sits below workloads (which drive it) and the runner (which hands it
//! to them), with what its verbs use on the hot path beside it: the pacing schedule
//! ([`pace`], [`pacer`]), key lifetimes ([`expiry`]) and the drawn value sizes of an
//! epoch's run phase ([`sizes`], [`values`]).

pub mod expiry;
pub mod pace;
pub mod pacer;
pub mod sizes;
pub mod values;
// `verify` is declared after the macros below, which its checked verbs use.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use quanta::Clock;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use self::expiry::Expiries;
use self::pacer::Pacer;
use self::sizes::SizeSampler;
use self::values::ValuePool;
use crate::engine::inflight;
use crate::engine::{
    Appended, EngineError, EngineResult, ErrorKind, Existed, Limits, ReadBuf, Rows, ScanFn, Session, Values,
};
use crate::metrics::{LatencySet, OpKind, Recorder, SizeClasses, Tallies};

/// Longest pause between two retries of a busy engine.
const MAX_BACKOFF: Duration = Duration::from_millis(1);

/// One worker's timed handle on a store.
pub struct Kv {
    session: Box<dyn Session>,
    clock: Clock,
    rec: Recorder,
    /// Latencies counted since they were last moved into `rec` (which happens whenever
    /// the recorder is looked at or handed over), so that a sample costs an increment.
    tallies: Tallies,
    /// Set when the whole run is being abandoned (Ctrl-C); stops busy retries.
    abort: Arc<AtomicBool>,
    get_buf: ReadBuf,
    rows: Rows,
    values: Values,
    /// Raw clock at creation: the origin of schedule and expiry times.
    origin: u64,
    /// Raw clock at the end of the latest timed call (or wait): the freshest time
    /// known without reading the clock again.
    last_end: u64,
    /// Raw clock at the start of the latest timed call, so that a size class can
    /// record the very sample its kind recorded.
    last_start: u64,
    /// Key and value bytes written since creation (pacing by bytes).
    written: u64,
    /// The schedule, in open-loop runs (inactive otherwise).
    pacer: Pacer,
    /// Deletes owed to key lifetimes.
    expiries: Expiries,
    /// While a sampled seed runs: keys written so far, published for the timeline.
    /// A seed is one long load() call with no chunk boundaries, so this relaxed store
    /// to the thread's own cache line is the only way to see its progress.
    load_progress: Option<(Arc<CachePadded<AtomicU64>>, u64)>,
    /// Epochs: the value sizes written values are drawn from, with this thread's RNG.
    sizer: Option<Box<Sizer>>,
    /// Requests the session's connection has left before it is closed and opened
    /// again (`--reconnect-every`); u64::MAX, never reached, when connections are kept.
    requests_left: u64,
    /// `--reconnect-every`'s N (0: connections are kept).
    reconnect_every: u64,
    /// True with `--verify`, `--reconnect-every` or `--size-classes`: each verb takes
    /// its out-of-line `_slow` form, so the plain path tests this one flag for all.
    slow: bool,
    /// `--size-classes`: the classes, and a tally of each.
    classed: Option<Box<Classed>>,
    /// The key and value sizes the engine takes.
    fits: Fits,
    /// `--verify`: the store's checker; every verb takes its checked twin when set.
    verify: Option<Box<verify::Writer>>,
}

/// The engine's [`Limits`] as the verbs check them: a key fits when its length minus
/// `min_key` (0, or 1 where empty keys are refused) is at most `key_span`, so an empty
/// key wraps around and fails the same compare; one subtraction and one compare per key.
#[derive(Debug, Clone, Copy)]
struct Fits {
    engine: &'static str,
    min_key: usize,
    key_span: usize,
    max_value: usize,
}

impl Fits {
    fn new(engine: &'static str, limits: Limits) -> Self {
        let min_key = usize::from(!limits.empty_keys);
        Fits {
            engine,
            min_key,
            key_span: limits.max_key_bytes.saturating_sub(min_key),
            max_value: limits.max_value_bytes,
        }
    }

    #[inline(always)]
    fn key(&self, key: &[u8]) -> bool {
        key.len().wrapping_sub(self.min_key) <= self.key_span
    }

    #[inline(always)]
    fn value(&self, val: &[u8]) -> bool {
        val.len() <= self.max_value
    }

    /// Why a key (and value) that failed a check were refused.
    fn why(&self, key: &[u8], val: &[u8]) -> String {
        let engine = self.engine;
        if key.is_empty() && self.min_key == 1 {
            format!("engine {engine}: an empty key, which {engine} does not take (refused before the call)")
        } else if !self.key(key) {
            format!(
                "engine {engine}: a key of {} bytes, longer than {engine} takes ({} bytes; refused before the call)",
                key.len(),
                self.key_span + self.min_key
            )
        } else {
            format!(
                "engine {engine}: a value of {} bytes, longer than {engine} takes ({} bytes; refused before the call)",
                val.len(),
                self.max_value
            )
        }
    }
}

/// The value sizes of a store at the start of an epoch's run phase, which the values
/// its inserts and updates write are drawn from (YCSB-IVS's histogram field lengths).
#[derive(Debug)]
pub struct ValueSizes {
    /// Draws lengths.
    pub sampler: SizeSampler,
    /// Where value bytes come from.
    pub pool: Arc<ValuePool>,
}

/// `--size-classes`: latencies counted per class since the last drain.
struct Classed {
    classes: Arc<SizeClasses>,
    tallies: Vec<Tallies>,
}

/// What a classified call counts besides its latency.
#[derive(Clone, Copy)]
struct Counts {
    /// Primitive operations.
    prim: u64,
    /// Key and value bytes written.
    written: u64,
    /// Keys found.
    found: u64,
}

/// One thread's draws from [`ValueSizes`].
struct Sizer {
    sizes: Arc<ValueSizes>,
    rng: Xoshiro256PlusPlus,
    scratch: Vec<u8>,
}

/// Counts one call of `kind` besides its latency: primitive operations, bytes written,
/// busy retries, and its error (the first message kept). A macro, not a function: as
/// a function it cost the null unit about 1.5% (measured), even inlined.
macro_rules! count_call {
    ($self:ident, $kind:expr, $prim:expr, $bytes:expr, $retries:expr, $result:expr) => {{
        let stats = $self.rec.kind_mut($kind);
        stats.prim_ops += $prim;
        stats.bytes += $bytes;
        $self.written += $bytes;
        stats.retries += $retries;
        if let Err(e) = $result {
            stats.errors += 1;
            if stats.first_error.is_none() {
                stats.first_error = Some(e.message.clone());
            }
        }
    }};
}

/// Times one engine call (busy retries included) between two clock reads and records
/// it (and, when paced, its response time: the unit's lag plus this service time).
/// `$bytes` are the key and value bytes a write hands to the engine (0 for other kinds).
macro_rules! timed {
    ($self:ident, $kind:expr, $prim:expr, $bytes:expr, $call:expr) => {{
        let mut retries = 0u64;
        let start = $self.clock.raw();
        let result = loop {
            match $call {
                Err(e) if e.kind == ErrorKind::Busy && !$self.abort.load(Ordering::Relaxed) => {
                    retries += 1;
                    backoff(retries);
                }
                other => break other,
            }
        };
        let end = $self.clock.raw();
        $self.last_end = end;
        $self.last_start = start;
        let ns = $self.clock.delta_as_nanos(start, end);
        let tally = $self.tallies.kind($kind);
        tally.record(LatencySet::Service, ns);
        if let Some(lag) = $self.pacer.lag(start) {
            tally.record(LatencySet::Response, lag + ns);
        }
        count_call!($self, $kind, $prim, $bytes, retries, &result);
        result
    }};
}

// After the macros above, which they use.
mod open;
pub mod verify;

fn backoff(attempt: u64) {
    let micros = if attempt < 8 {
        0
    } else {
        10u64.saturating_mul(1 << (attempt - 8).min(7))
    };
    if inflight::in_connection() {
        // The thread serves other connections meanwhile.
        let ns = Duration::from_micros(micros).min(MAX_BACKOFF).as_nanos() as u64;
        inflight::pause(ns, ns);
    } else if micros == 0 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(micros).min(MAX_BACKOFF));
    }
}

impl Kv {
    /// Wraps a session. `abort` stops busy retries when the run is abandoned.
    pub fn new(session: Box<dyn Session>, clock: Clock, abort: Arc<AtomicBool>) -> Self {
        let origin = clock.raw();
        Kv {
            session,
            clock,
            rec: Recorder::new(),
            tallies: Tallies::default(),
            abort,
            get_buf: ReadBuf::new(),
            rows: Rows::default(),
            values: Values::default(),
            origin,
            last_end: origin,
            last_start: origin,
            written: 0,
            pacer: Pacer::default(),
            expiries: Expiries::default(),
            load_progress: None,
            sizer: None,
            requests_left: u64::MAX,
            reconnect_every: 0,
            slow: false,
            classed: None,
            fits: Fits::new("", Limits::NONE),
            verify: None,
        }
    }

    /// Closes the session's connection and opens a new one after every `n` requests
    /// (`--reconnect-every`; 0 keeps it), each time timed and counted as a `connect`.
    pub fn reconnect_every(&mut self, n: u64) {
        self.reconnect_every = n;
        self.requests_left = if n == 0 { u64::MAX } else { n };
        self.refresh_slow();
    }

    /// Whether the verbs take their `_slow` forms: with anything to do per call
    /// besides timing it.
    fn refresh_slow(&mut self) {
        self.slow = self.verify.is_some() || self.reconnect_every > 0 || self.classed.is_some();
    }

    /// Splits the calls that move a value by value size from now on
    /// (`--size-classes`; None: not split). See [`crate::metrics::sizeclass`].
    pub fn split_by_size(&mut self, classes: Option<Arc<SizeClasses>>) {
        self.classed = classes.map(|classes| {
            let tallies = (0..classes.len()).map(|_| Tallies::default()).collect();
            Box::new(Classed { classes, tallies })
        });
        self.refresh_slow();
    }

    /// Records the latest timed call (of `kind`, which moved `value_bytes` per key)
    /// in its size class too: the same service (and response) time its kind recorded,
    /// with its primitive operations, bytes written, keys found and error.
    #[inline(never)]
    fn classify<T>(&mut self, kind: OpKind, value_bytes: u64, counts: Counts, result: &EngineResult<T>) {
        let Some(c) = self.classed.as_deref_mut() else {
            return;
        };
        let class = c.classes.class_of(value_bytes);
        let ns = self.clock.delta_as_nanos(self.last_start, self.last_end);
        let tally = c.tallies[class].kind(kind);
        tally.record(LatencySet::Service, ns);
        // The unit's lag is fixed by its first call, so this is the lag the call had.
        if let Some(lag) = self.pacer.lag(self.last_start) {
            tally.record(LatencySet::Response, lag + ns);
        }
        let st = self.rec.class_mut(&c.classes, class).kind_mut(kind);
        st.prim_ops += counts.prim;
        st.bytes += counts.written;
        st.hits += counts.found;
        if let Err(e) = result {
            st.errors += 1;
            if st.first_error.is_none() {
                st.first_error = Some(e.message.clone());
            }
        }
    }

    /// [`Kv::classify`] for a single-key write of `value_len` bytes to `key`.
    fn classify_write<T>(&mut self, kind: OpKind, key: &[u8], value_len: usize, result: &EngineResult<T>) {
        let counts = Counts {
            prim: 1,
            written: (key.len() + value_len) as u64,
            found: 0,
        };
        self.classify(kind, value_len as u64, counts, result);
    }

    /// Counts a request against the connection's allowance, reconnecting first when it
    /// is spent (the verbs' `_slow` forms and expiry deletes call it). Without
    /// `--reconnect-every` a decrement that never reaches zero.
    #[inline(always)]
    fn before_request(&mut self) {
        if self.requests_left == 0 {
            self.reconnect();
        }
        self.requests_left -= 1;
    }

    /// The `connect` the allowance called for: timed like any call, its failure counted
    /// (the next request then connects, or fails, on its own).
    #[cold]
    #[inline(never)]
    fn reconnect(&mut self) {
        self.requests_left = self.reconnect_every;
        let session = &mut self.session;
        let _ = timed!(self, OpKind::Connect, 0, 0, session.reconnect());
    }

    /// Refuses, from now on, keys and values that `engine` does not take: each such
    /// call fails with a counted error before it reaches the engine.
    pub fn limit_sizes(&mut self, engine: &'static str, limits: Limits) {
        self.fits = Fits::new(engine, limits);
    }

    /// Records a call of `kind` refused for its sizes as a call that failed at once
    /// (timed and counted like an engine's error, so it shows in every report and
    /// fails the point), and returns its error.
    #[cold]
    #[inline(never)]
    fn refuse(&mut self, kind: OpKind, key: &[u8], val: &[u8]) -> EngineError {
        let why = self.fits.why(key, val);
        self.fail_call(kind, why)
    }

    /// Records a call of `kind` that kvmark refused before the engine saw it, failed
    /// with `message`, and returns its error.
    #[cold]
    #[inline(never)]
    fn fail_call(&mut self, kind: OpKind, message: String) -> EngineError {
        let e = EngineError::other(message);
        let result: EngineResult<()> = timed!(self, kind, 1, 0, Err(e.clone()));
        result.err().unwrap_or(e)
    }

    /// The first key of `keys` the engine does not take, refused as a call of `kind`.
    #[inline]
    fn check_keys<'k>(&mut self, kind: OpKind, mut keys: impl Iterator<Item = &'k [u8]>) -> EngineResult<()> {
        match keys.find(|k| !self.fits.key(k)) {
            None => Ok(()),
            Some(k) => Err(self.refuse(kind, k, b"")),
        }
    }

    /// Draws the lengths of written values from `sizes` from now on (None: values
    /// keep the lengths the workload gives them), with an RNG seeded by `seed`.
    pub fn set_value_sizes(&mut self, sizes: Option<Arc<ValueSizes>>, seed: u64) {
        self.sizer = sizes.map(|sizes| {
            Box::new(Sizer {
                sizes,
                rng: Xoshiro256PlusPlus::seed_from_u64(seed),
                scratch: Vec::new(),
            })
        });
    }

    /// A value length drawn from the epoch's value sizes, or None outside epochs.
    pub fn value_size(&mut self) -> Option<usize> {
        self.sizer.as_mut().map(|s| s.sizes.sampler.draw(&mut s.rng))
    }

    /// put(key, val) of an insert or update: in an epoch's run phase the value is
    /// replaced by one of a length drawn from the epoch's value sizes.
    #[inline]
    pub fn put_sized(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let Some(mut s) = self.sizer.take() else {
            return self.put(key, val);
        };
        let Sizer { sizes, rng, scratch } = &mut *s;
        let len = sizes.sampler.draw(rng);
        // `s` is out of `self`, so the pool is borrowed, not cloned (no shared count).
        let r = self.put(key, sizes.pool.value(len, rng, scratch));
        self.sizer = Some(s);
        r
    }

    /// Publishes the count of keys written (put, mput keys, append) to `counter` after
    /// every write, or stops publishing with None. Used only around a sampled seed.
    pub fn publish_writes(&mut self, counter: Option<Arc<CachePadded<AtomicU64>>>) {
        self.load_progress = counter.map(|c| (c, 0));
    }

    #[inline]
    fn wrote(&mut self, keys: u64) {
        if let Some((counter, n)) = &mut self.load_progress {
            *n += keys;
            counter.store(*n, Ordering::Relaxed);
        }
    }

    /// The run's abort flag (set by Ctrl-C).
    pub fn abort_flag(&self) -> &Arc<AtomicBool> {
        &self.abort
    }

    /// True once the run is being abandoned (Ctrl-C).
    #[inline]
    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// Moves the latencies counted since the last drain into the recorder.
    fn drain_tallies(&mut self) {
        let response = self.pacer.is_active();
        self.tallies.drain_into(&mut self.rec, response);
        if let Some(c) = self.classed.as_deref_mut() {
            for (class, tallies) in c.tallies.iter_mut().enumerate() {
                tallies.drain_into(self.rec.class_mut(&c.classes, class), response);
            }
        }
    }

    /// The recorder so far.
    pub fn recorder(&mut self) -> &Recorder {
        self.drain_tallies();
        &self.rec
    }

    /// Takes the recorder, leaving an empty one (phase and interval boundaries). When
    /// paced, the schedule statistics gathered since the last take go with it.
    pub fn take_recorder(&mut self) -> Recorder {
        self.drain_tallies();
        let mut rec = std::mem::take(&mut self.rec);
        if self.pacer.is_active() {
            let stats = self.pacer.take_stats();
            if stats.units() > 0 {
                rec.add_pace(&stats);
            }
        }
        rec
    }

    /// Swaps in `fresh` (an emptied recorder) and returns the one recorded so far: an
    /// interval hand-over that allocates nothing.
    pub fn replace_recorder(&mut self, fresh: Recorder) -> Recorder {
        self.drain_tallies();
        std::mem::replace(&mut self.rec, fresh)
    }

    /// The clock used for timing (shared calibration, cheap raw reads).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// put(key, val).
    #[inline]
    pub fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        if self.slow {
            return self.put_slow(key, val);
        }
        self.put_timed(key, val)
    }

    /// put with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn put_slow(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        self.before_request();
        let r = if self.verify.is_some() {
            self.put_checked(key, val)
        } else {
            self.put_timed(key, val)
        };
        self.classify_write(OpKind::Put, key, val.len(), &r);
        r
    }

    /// put without the verify branch: the timed call.
    #[inline(always)]
    fn put_timed(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        if !(self.fits.key(key) && self.fits.value(val)) {
            return Err(self.refuse(OpKind::Put, key, val));
        }
        let session = &mut self.session;
        let r = timed!(
            self,
            OpKind::Put,
            1,
            (key.len() + val.len()) as u64,
            session.put(key, val)
        );
        self.wrote(1);
        r
    }

    /// get(key): the value, borrowed until the next call.
    #[inline(always)]
    pub fn get(&mut self, key: &[u8]) -> EngineResult<Option<&[u8]>> {
        if self.slow {
            return self.get_slow(key);
        }
        self.get_timed(key)
    }

    /// get with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn get_slow(&mut self, key: &[u8]) -> EngineResult<Option<&[u8]>> {
        self.before_request();
        let found = if self.verify.is_some() {
            self.get_checked(key)
        } else {
            self.get_timed(key)
        }
        .map(|v| v.is_some());
        // A read that found nothing moved no value: it is in no class.
        if let Ok(true) = found {
            let counts = Counts {
                prim: 1,
                written: 0,
                found: 1,
            };
            self.classify(OpKind::Get, self.get_buf.len() as u64, counts, &found);
        }
        match found {
            Ok(true) => Ok(Some(&self.get_buf)),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// get without the verify branch: the timed call.
    // Always: since the verb set became its own module, LLVM kept `get` out of line in
    // the Lua bridge's `kv_get` (+8 instructions per null unit, measured with
    // bench/unit-instructions.sh).
    #[inline(always)]
    fn get_timed(&mut self, key: &[u8]) -> EngineResult<Option<&[u8]>> {
        if !self.fits.key(key) {
            return Err(self.refuse(OpKind::Get, key, b""));
        }
        let session = &mut self.session;
        let buf = &mut self.get_buf;
        let found = timed!(self, OpKind::Get, 1, 0, session.get(key, buf));
        let stats = self.rec.kind_mut(OpKind::Get);
        match found {
            Ok(true) => {
                stats.hits += 1;
                Ok(Some(&self.get_buf))
            }
            Ok(false) => {
                stats.misses += 1;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// del(key).
    #[inline]
    pub fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        if self.slow {
            return self.del_slow(key);
        }
        self.del_timed(key)
    }

    /// del with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn del_slow(&mut self, key: &[u8]) -> EngineResult<Existed> {
        self.before_request();
        if self.verify.is_some() {
            return self.del_checked(key);
        }
        self.del_timed(key)
    }

    /// del without the verify branch: the timed call.
    #[inline(always)]
    fn del_timed(&mut self, key: &[u8]) -> EngineResult<Existed> {
        if !self.fits.key(key) {
            return Err(self.refuse(OpKind::Del, key, b""));
        }
        let session = &mut self.session;
        timed!(self, OpKind::Del, 1, 0, session.del(key))
    }

    /// range(lo, hi, limit): rows borrowed until the next call.
    #[inline]
    pub fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<&Rows> {
        if self.slow {
            return self.range_slow(lo, hi, limit);
        }
        self.range_timed(lo, hi, limit)
    }

    /// range with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn range_slow(&mut self, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<&Rows> {
        self.before_request();
        if self.verify.is_some() {
            return self.range_checked(lo, hi, limit);
        }
        self.range_timed(lo, hi, limit)
    }

    /// range without the verify branch: the timed call.
    #[inline(always)]
    fn range_timed(&mut self, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<&Rows> {
        let session = &mut self.session;
        let rows = &mut self.rows;
        timed!(self, OpKind::Range, 1, 0, session.range(lo, hi, limit, rows))?;
        self.rec.kind_mut(OpKind::Range).rows += self.rows.len() as u64;
        Ok(&self.rows)
    }

    /// scan(lo, hi, limit, f): the callback runs inside the timed region, necessarily.
    #[inline]
    pub fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if self.slow {
            return self.scan_slow(lo, hi, limit, f);
        }
        self.scan_timed(lo, hi, limit, f)
    }

    /// scan with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn scan_slow(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        self.before_request();
        if self.verify.is_some() {
            return self.scan_checked(lo, hi, limit, f);
        }
        self.scan_timed(lo, hi, limit, f)
    }

    /// scan without the verify branch: the timed call.
    #[inline(always)]
    fn scan_timed(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        let session = &mut self.session;
        let n = timed!(self, OpKind::Scan, 1, 0, session.scan(lo, hi, limit, f))?;
        self.rec.kind_mut(OpKind::Scan).rows += n as u64;
        Ok(n)
    }

    /// mget(keys): values in key order, borrowed until the next call.
    #[inline]
    pub fn mget(&mut self, keys: &[&[u8]]) -> EngineResult<&Values> {
        if self.slow {
            return self.mget_slow(keys);
        }
        self.mget_timed(keys)
    }

    /// mget with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn mget_slow(&mut self, keys: &[&[u8]]) -> EngineResult<&Values> {
        self.before_request();
        let done = if self.verify.is_some() {
            self.mget_checked(keys)
        } else {
            self.mget_timed(keys)
        }
        .map(|_| ());
        if done.is_ok() {
            let (found, bytes) = (0..self.values.len())
                .filter_map(|i| self.values.get(i))
                .fold((0u64, 0u64), |(n, b), v| (n + 1, b + v.len() as u64));
            if found > 0 {
                let counts = Counts {
                    prim: keys.len() as u64,
                    written: 0,
                    found,
                };
                self.classify(OpKind::Mget, bytes / found, counts, &done);
            }
        }
        done.map(|()| &self.values)
    }

    /// mget without the verify branch: the timed call.
    #[inline(always)]
    fn mget_timed(&mut self, keys: &[&[u8]]) -> EngineResult<&Values> {
        self.check_keys(OpKind::Mget, keys.iter().copied())?;
        let session = &mut self.session;
        let values = &mut self.values;
        timed!(self, OpKind::Mget, keys.len() as u64, 0, session.mget(keys, values))?;
        let hits = (0..self.values.len()).filter(|&i| self.values.get(i).is_some()).count() as u64;
        let stats = self.rec.kind_mut(OpKind::Mget);
        stats.hits += hits;
        stats.misses += self.values.len() as u64 - hits;
        Ok(&self.values)
    }

    /// mput(pairs), committed as one engine write where the engine can.
    #[inline]
    pub fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if self.slow {
            return self.mput_slow(pairs);
        }
        self.mput_timed(pairs)
    }

    /// mput with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn mput_slow(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        self.before_request();
        let r = if self.verify.is_some() {
            self.mput_checked(pairs)
        } else {
            self.mput_timed(pairs)
        };
        if !pairs.is_empty() {
            let values: u64 = pairs.iter().map(|(_, v)| v.len() as u64).sum();
            let keys: u64 = pairs.iter().map(|(k, _)| k.len() as u64).sum();
            let n = pairs.len() as u64;
            let counts = Counts {
                prim: n,
                written: keys + values,
                found: 0,
            };
            self.classify(OpKind::Mput, values / n, counts, &r);
        }
        r
    }

    /// mput without the verify branch: the timed call.
    #[inline(always)]
    fn mput_timed(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if let Some((k, v)) = pairs.iter().find(|(k, v)| !(self.fits.key(k) && self.fits.value(v))) {
            return Err(self.refuse(OpKind::Mput, k, v));
        }
        let bytes: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
        let session = &mut self.session;
        let r = timed!(
            self,
            OpKind::Mput,
            pairs.len() as u64,
            bytes as u64,
            session.mput(pairs)
        );
        self.wrote(pairs.len() as u64);
        r
    }

    /// mdel(keys): how many existed, or None where unknown.
    #[inline]
    pub fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        if self.slow {
            return self.mdel_slow(keys);
        }
        self.mdel_timed(keys)
    }

    /// mdel with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn mdel_slow(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        self.before_request();
        if self.verify.is_some() {
            return self.mdel_checked(keys);
        }
        self.mdel_timed(keys)
    }

    /// mdel without the verify branch: the timed call.
    #[inline(always)]
    fn mdel_timed(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        self.check_keys(OpKind::Mdel, keys.iter().copied())?;
        let session = &mut self.session;
        timed!(self, OpKind::Mdel, keys.len() as u64, 0, session.mdel(keys))
    }

    /// append(key, suffix): skipped (and counted) when the value would pass the
    /// store's value cap, where the engine can tell.
    #[inline]
    pub fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        if self.slow {
            return self.append_slow(key, suffix);
        }
        self.append_timed(key, suffix)
    }

    /// append with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn append_slow(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        self.before_request();
        let r = if self.verify.is_some() {
            self.append_checked(key, suffix)
        } else {
            self.append_timed(key, suffix)
        };
        self.classify_write(OpKind::Append, key, suffix.len(), &r);
        r
    }

    /// append without the verify branch: the timed call.
    #[inline(always)]
    fn append_timed(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        if !(self.fits.key(key) && self.fits.value(suffix)) {
            return Err(self.refuse(OpKind::Append, key, suffix));
        }
        let session = &mut self.session;
        let r = timed!(
            self,
            OpKind::Append,
            1,
            (key.len() + suffix.len()) as u64,
            session.append(key, suffix)
        );
        if let Ok(Appended::Skipped) = r {
            self.rec.kind_mut(OpKind::Append).skipped += 1;
        }
        self.wrote(1);
        r
    }

    /// delete_range(lo, hi).
    #[inline]
    pub fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if self.slow {
            return self.delete_range_slow(lo, hi);
        }
        self.delete_range_timed(lo, hi)
    }

    /// delete_range with `--verify`, `--reconnect-every` or `--size-classes`: out of
    /// line, so the plain path pays one flag test for all.
    #[inline(never)]
    fn delete_range_slow(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        self.before_request();
        if self.verify.is_some() {
            return self.delete_range_checked(lo, hi);
        }
        self.delete_range_timed(lo, hi)
    }

    /// delete_range without the verify branch: the timed call.
    #[inline(always)]
    fn delete_range_timed(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        let session = &mut self.session;
        timed!(self, OpKind::DeleteRange, 1, 0, session.delete_range(lo, hi))
    }
}

impl std::fmt::Debug for Kv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kv").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, OpenRequest, skiplist};

    /// A verb set over a fresh in-memory store (also used by `open.rs`'s tests).
    pub(super) fn kv() -> Kv {
        let opts = EngineOptions::new();
        let store = (skiplist::INFO.open)(&OpenRequest::memory(&opts)).unwrap();
        Kv::new(store.session().unwrap(), Clock::new(), Arc::new(AtomicBool::new(false)))
    }

    /// Fails `busy_first` times with Busy, then every call with `fail` (if set).
    struct Flaky {
        busy_left: u32,
        fail: Option<&'static str>,
    }

    impl Session for Flaky {
        fn put(&mut self, _: &[u8], _: &[u8]) -> EngineResult<()> {
            if self.busy_left > 0 {
                self.busy_left -= 1;
                return Err(crate::engine::EngineError::busy("busy"));
            }
            match self.fail {
                Some(m) => Err(crate::engine::EngineError::other(m)),
                None => Ok(()),
            }
        }
        fn get(&mut self, _: &[u8], _: &mut ReadBuf) -> EngineResult<bool> {
            Err(crate::engine::EngineError::other("disk on fire"))
        }
        fn del(&mut self, _: &[u8]) -> EngineResult<Existed> {
            Ok(Existed::Unknown)
        }
        fn scan(&mut self, _: &[u8], _: &[u8], _: usize, _: &mut ScanFn<'_>) -> EngineResult<usize> {
            Ok(0)
        }
        fn append(&mut self, _: &[u8], _: &[u8]) -> EngineResult<Appended> {
            Ok(Appended::Yes)
        }
        fn delete_range(&mut self, _: &[u8], _: &[u8]) -> EngineResult<()> {
            Ok(())
        }
    }

    #[test]
    fn busy_is_retried_inside_the_timed_call_and_counted() {
        let abort = Arc::new(AtomicBool::new(false));
        let mut kv = Kv::new(
            Box::new(Flaky {
                busy_left: 3,
                fail: None,
            }),
            Clock::new(),
            abort,
        );
        kv.put(b"k", b"v").unwrap();
        let put = kv.recorder().kind(OpKind::Put).unwrap();
        assert_eq!((put.count(), put.retries, put.errors), (1, 3, 0));
    }

    #[test]
    fn engine_errors_are_counted_with_the_first_message() {
        let abort = Arc::new(AtomicBool::new(false));
        let mut kv = Kv::new(
            Box::new(Flaky {
                busy_left: 0,
                fail: Some("no space"),
            }),
            Clock::new(),
            abort,
        );
        assert!(kv.put(b"k", b"v").is_err());
        assert!(kv.put(b"k", b"v").is_err());
        assert!(kv.get(b"k").is_err());
        let rec = kv.recorder();
        let put = rec.kind(OpKind::Put).unwrap();
        assert_eq!((put.count(), put.errors), (2, 2));
        assert_eq!(put.first_error.as_deref(), Some("no space"));
        let get = rec.kind(OpKind::Get).unwrap();
        assert_eq!(
            (get.errors, get.hits, get.misses),
            (1, 0, 0),
            "a failed get is neither hit nor miss"
        );
        assert_eq!(rec.errors(), 3);
        assert_eq!(kv.del(b"k").unwrap(), Existed::Unknown);
    }

    #[test]
    fn busy_retries_stop_when_the_run_is_abandoned() {
        let abort = Arc::new(AtomicBool::new(true));
        let mut kv = Kv::new(
            Box::new(Flaky {
                busy_left: u32::MAX,
                fail: None,
            }),
            Clock::new(),
            abort,
        );
        let err = kv.put(b"k", b"v").unwrap_err();
        assert_eq!(err.kind, ErrorKind::Busy);
        assert_eq!(kv.recorder().kind(OpKind::Put).unwrap().errors, 1);
    }

    #[test]
    fn handed_over_recorders_hold_exactly_the_calls_since_the_last() {
        let mut kv = kv();
        for _ in 0..10 {
            kv.get(b"k").unwrap();
        }
        let first = kv.replace_recorder(Recorder::new());
        assert_eq!(first.kind(OpKind::Get).map(|s| s.hist.len()), Some(10));
        for _ in 0..5 {
            kv.put(b"k", b"v").unwrap();
        }
        assert_eq!(kv.recorder().kind(OpKind::Put).map(|s| s.count()), Some(5));
        kv.put(b"k", b"v").unwrap();
        let second = kv.take_recorder();
        assert!(second.kind(OpKind::Get).is_none(), "already handed over");
        assert_eq!(second.kind(OpKind::Put).map(|s| s.count()), Some(6));
        assert!(kv.take_recorder().is_empty());
    }

    #[test]
    fn verbs_record_counts_and_hits() {
        let mut kv = kv();
        kv.put(b"a", b"1").unwrap();
        assert_eq!(kv.get(b"a").unwrap(), Some(&b"1"[..]));
        assert_eq!(kv.get(b"b").unwrap(), None);
        kv.mput(&[(b"x", b"1"), (b"y", b"2")]).unwrap();
        let vals = kv.mget(&[b"x", b"nope", b"y"]).unwrap();
        assert_eq!(vals.get(1), None);
        let rec = kv.recorder();
        let get = rec.kind(OpKind::Get).unwrap();
        assert_eq!((get.count(), get.hits, get.misses), (2, 1, 1));
        assert_eq!(rec.kind(OpKind::Mput).unwrap().prim_ops, 2);
        assert_eq!(rec.kind(OpKind::Mget).unwrap().prim_ops, 3);
        assert_eq!(rec.kind(OpKind::Mget).unwrap().count(), 1);
        assert_eq!(rec.hit_rate(), Some(3.0 / 5.0));
    }
}
