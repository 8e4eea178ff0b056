//! The engine contract: every storage engine kvmark can drive implements it.
//!
//! Three layers, after fio's engines and keybench's backends:
//! - [`EngineInfo`] describes an engine and opens stores; one static entry per
//!   engine in [`registry`].
//! - [`Store`] is one open store, shared by every worker of a measurement.
//! - [`Session`] is one worker's handle on a store. Workers own their session, so
//!   per-thread state (connections, transactions, scratch buffers) needs no lock.
//!
//! Keys and values are byte strings; keys order by unsigned bytewise comparison.
//!
//! An engine is one file (or one directory module) declaring its `INFO`: its
//! [`StorageKind`] (memory, a directory on a disk, a namespace on a server), its knob
//! table ([`KnobTable`]: one row per knob, from which `kvmark engines`, validation
//! and the parse at open all derive) and its `open`. Shared helpers own what every
//! engine would repeat: [`OpenRequest::dir`] (the directory check) and [`unshare`]
//! (closing while sessions are open is refused).

pub mod inflight;
#[cfg(any(feature = "kyotocabinet", feature = "tkrzw"))]
mod inplace;
pub mod knobs;
pub mod net;
pub mod options;
pub mod pipeline;
mod readbuf;
pub mod sim;
pub mod skiplist;
pub mod storage;
// Each helper serves the engines compiled in, so some go unused in smaller builds.
#[cfg(all(
    test,
    any(
        feature = "bdb",
        feature = "tokyocabinet",
        feature = "kyotocabinet",
        feature = "tkrzw"
    )
))]
#[allow(dead_code)]
mod testkit;
mod versions;

#[cfg(feature = "bdb")]
pub mod bdb;
#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "kyotocabinet")]
pub mod kyotocabinet;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "lmdb")]
pub mod lmdb;
#[cfg(feature = "mariadb")]
pub mod mariadb;
#[cfg(feature = "mdbx")]
pub mod mdbx;
#[cfg(feature = "mongodb")]
pub mod mongodb;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redb")]
pub mod redb;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "tidesdb")]
pub mod tidesdb;
#[cfg(feature = "tkrzw")]
pub mod tkrzw;
#[cfg(feature = "tokyocabinet")]
pub mod tokyocabinet;
#[cfg(feature = "wiredtiger")]
pub mod wiredtiger;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use knobs::{KnobDef, KnobSet, KnobTable, KnobValue};
pub use options::{EngineOptions, OptionError, OptionOrigins};
pub use pipeline::Pipeline;
pub use readbuf::ReadBuf;
pub use storage::{ServerKind, StorageKind, StorePlace};

/// Why an engine call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A transient "try again" (RocksDB Busy/TryAgain, TidesDB's busy code). The
    /// harness retries it inside the timed region and counts the retries.
    Busy,
    /// Anything else; counted per operation kind and reported.
    Other,
}

/// An error returned by an engine call.
#[derive(Debug, Clone)]
pub struct EngineError {
    /// Whether a retry may succeed.
    pub kind: ErrorKind,
    /// The engine's own message.
    pub message: String,
}
// No more fields: verbs return this by value on the hot path, and an 8-byte field
// cost the null unit about 7 instructions (measured with bench/unit-instructions.sh).
// A refused option is kept as data in [`OptionError`], which [`EngineInfo::validate`]
// returns; the run asks it again when an open fails (`run::Plan::explain_open_error`).

impl EngineError {
    /// A non-transient error with the engine's message.
    pub fn other(message: impl Into<String>) -> Self {
        EngineError {
            kind: ErrorKind::Other,
            message: message.into(),
        }
    }

    /// A transient error the harness should retry.
    pub fn busy(message: impl Into<String>) -> Self {
        EngineError {
            kind: ErrorKind::Busy,
            message: message.into(),
        }
    }

    /// The message with `context` before it (the option to blame is kept).
    pub fn context(self, context: impl fmt::Display) -> Self {
        EngineError {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }
}

impl From<OptionError> for EngineError {
    fn from(e: OptionError) -> Self {
        EngineError {
            kind: ErrorKind::Other,
            message: e.message,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}

/// Result of an engine call.
pub type EngineResult<T> = Result<T, EngineError>;

/// What a delete learned about the key it removed (ARCHITECTURE.md, promise 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existed {
    /// The key was present.
    Yes,
    /// The key was absent.
    No,
    /// The engine cannot tell without an extra read, which the harness does not add.
    Unknown,
}

/// What an append did to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// The value grew by the suffix.
    Yes,
    /// Nothing was written: the value would have exceeded the store's value cap
    /// ([`OpenRequest::max_value_bytes`]).
    Skipped,
    /// The engine cannot tell without an extra read (a native merge operator applies
    /// the cap later, when it merges), which the harness does not add.
    Unknown,
}

/// The default cap on a value grown by appends: 1.6 MB, YCSB-IVS's field limit.
pub const DEFAULT_MAX_VALUE_BYTES: u64 = 1_600_000;

/// How an engine grows a value for `append` / merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendMethod {
    /// A native merge operator: one write, no read.
    NativeMerge,
    /// Read, concatenate and write back inside one transaction.
    ReadModifyWrite,
    /// Read, concatenate and publish with a compare-and-swap on the key's value slot,
    /// retried if another writer got there first (the lock-free in-memory engines).
    CompareAndSwap,
    /// The library's own read-modify-write: it calls kvmark with the current value
    /// under its own lock and stores what kvmark returns (Tokyo Cabinet's
    /// `tcbdbputproc`, Kyoto Cabinet's visitors, Tkrzw's record processors). One call,
    /// atomic; the value cap is checked inside it.
    NativeUpdate,
    /// A read, then a separate write: the engine has neither transactions nor a merge
    /// operator, so two concurrent appends to one key may lose one of them.
    ReadThenWrite,
    /// One update statement that the server applies to the record by itself (MongoDB's
    /// `$push`): atomic where the server makes a single-record update atomic, as
    /// MongoDB does, but not promised for every server that speaks the protocol
    /// (FerretDB 1.24 reads the document, then writes it back, so concurrent appends
    /// to one key can lose some there).
    ServerUpdate,
}

impl AppendMethod {
    /// A short label for `kvmark engines`.
    pub fn label(self) -> &'static str {
        match self {
            AppendMethod::NativeMerge => "native merge operator",
            AppendMethod::ReadModifyWrite => "read-modify-write in one transaction",
            AppendMethod::CompareAndSwap => "read-modify-write with a compare-and-swap of the value (atomic)",
            AppendMethod::NativeUpdate => {
                "the library's update callback under its own lock (atomic, cap checked inside)"
            }
            AppendMethod::ReadThenWrite => "a get, then a put: not atomic (the engine has no transactions)",
            AppendMethod::ServerUpdate => {
                "one server-side update of the record: atomic where the server applies it atomically (MongoDB; not FerretDB 1.24)"
            }
        }
    }

    /// True when concurrent appends to one key never lose an update.
    pub fn atomic(self) -> bool {
        !matches!(self, AppendMethod::ReadThenWrite | AppendMethod::ServerUpdate)
    }
}

/// One tunable of an engine, as listed by `kvmark engines`.
#[derive(Debug, Clone)]
pub struct Knob {
    /// The key as written in `--engine-opt` or a config section.
    pub name: Cow<'static, str>,
    /// The default, read from the linked library where possible.
    pub default: String,
    /// One line saying what it does.
    pub help: Cow<'static, str>,
}

impl Knob {
    /// A knob with a fixed name and help line.
    pub fn new(name: &'static str, default: impl Into<String>, help: &'static str) -> Knob {
        Knob {
            name: Cow::Borrowed(name),
            default: default.into(),
            help: Cow::Borrowed(help),
        }
    }
}

/// Rows returned by a range: one reusable flat buffer, so a range allocates nothing
/// once the buffer has grown to the workload's typical result size.
#[derive(Debug, Default)]
pub struct Rows {
    data: ReadBuf,
    // (key start, key len, value len); the value follows its key in `data`.
    spans: Vec<(usize, usize, usize)>,
}

impl Rows {
    /// Empties the buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    /// Appends one row.
    pub fn push(&mut self, key: &[u8], val: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(val);
        self.spans.push((start, key.len(), val.len()));
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Row `i` as (key, value).
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let (start, klen, vlen) = self.spans[i];
        (
            &self.data[start..start + klen],
            &self.data[start + klen..start + klen + vlen],
        )
    }

    /// Iterates the rows in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// Values returned by a multi-get, in key order, with holes for misses.
#[derive(Debug, Default)]
pub struct Values {
    data: ReadBuf,
    // None for a miss, else (start, len) in `data`.
    spans: Vec<Option<(usize, usize)>>,
}

impl Values {
    /// Empties the buffer, keeping its capacity.
    pub fn clear(&mut self) {
        self.data.clear();
        self.spans.clear();
    }

    /// Appends a hit.
    pub fn push_hit(&mut self, val: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(val);
        self.spans.push(Some((start, val.len())));
    }

    /// Appends a miss.
    pub fn push_miss(&mut self) {
        self.spans.push(None);
    }

    /// Number of entries (hits and misses).
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are no entries.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Entry `i`: the value, or None for a miss.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.spans[i].map(|(start, len)| &self.data[start..start + len])
    }
}

/// A callback receiving scanned rows; returning `true` stops the scan.
pub type ScanFn<'a> = dyn FnMut(&[u8], &[u8]) -> bool + 'a;

/// One worker's handle on an open store. All verbs of the contract.
///
/// Methods take `&mut self` so a session can keep scratch state (buffers, prepared
/// statements) without locking. Provided methods are correct fallbacks built from the
/// single-key verbs; engines override them with native batch or range operations.
pub trait Session: Send {
    /// Insert or overwrite.
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()>;

    /// Copies the value into `out` (cleared first) and returns true, or returns false
    /// when the key is absent.
    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool>;

    /// Deletes the key; reports existence only where the engine knows it for free.
    fn del(&mut self, key: &[u8]) -> EngineResult<Existed>;

    /// Streams rows with `lo <= key < hi` in ascending order to `f`, at most `limit`
    /// rows (0 = no limit), stopping early when `f` returns true. Returns the number
    /// of rows delivered.
    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize>;

    /// Like `scan`, but collects the rows into `out` (cleared first).
    fn range(&mut self, lo: &[u8], hi: &[u8], limit: usize, out: &mut Rows) -> EngineResult<()> {
        out.clear();
        self.scan(lo, hi, limit, &mut |k, v| {
            out.push(k, v);
            false
        })?;
        Ok(())
    }

    /// Looks up every key; `out` (cleared first) receives values in key order.
    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        let mut buf = ReadBuf::new();
        for key in keys {
            if self.get(key, &mut buf)? {
                out.push_hit(&buf);
            } else {
                out.push_miss();
            }
        }
        Ok(())
    }

    /// Writes every pair; engines commit them as one write where they can.
    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        for (k, v) in pairs {
            self.put(k, v)?;
        }
        Ok(())
    }

    /// Deletes every key; returns how many existed, or None where unknown.
    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let mut existed = Some(0usize);
        for key in keys {
            existed = match (existed, self.del(key)?) {
                (Some(n), Existed::Yes) => Some(n + 1),
                (Some(n), Existed::No) => Some(n),
                _ => None,
            };
        }
        Ok(existed)
    }

    /// Appends `suffix` to the value of `key` (a missing key starts empty), unless the
    /// value would then exceed the store's cap ([`OpenRequest::max_value_bytes`]): then
    /// nothing is written and the result is [`Appended::Skipped`]. Engines that append
    /// by a native merge apply the cap when they merge and return [`Appended::Unknown`],
    /// except for a suffix longer than the cap, which fits no value: every engine
    /// refuses it at once with [`Appended::Skipped`].
    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended>;

    /// Deletes every key with `lo <= key < hi`.
    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()>;

    /// The faults injected on purpose into this session's store since it opened, or
    /// None for an engine that injects none (every engine but `sim` with a fault
    /// knob set). `--verify` reads it after its final pass, so a report sets what was
    /// injected beside what was detected.
    fn injected(&self) -> Option<Injected> {
        None
    }
}

/// Faults an engine injected into one store on purpose (the `sim` engine's fault
/// knobs), named and counted per knob. Each counts only where it changed what the store
/// holds or answers: a dropped write of the bytes already stored, a skipped delete of
/// an absent key or a "stale" read of a key with no older value is no fault.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Injected {
    /// Writes (puts, appends, a batch's pairs) acknowledged but not applied.
    pub drop_writes: u64,
    /// Gets answered with the key's value before its latest put.
    pub stale_reads: u64,
    /// Gets answered with the value's last byte flipped.
    pub corrupt_reads: u64,
    /// Deletes acknowledged but skipped while the key held a value.
    pub resurrect: u64,
    /// Calls failed with an error before they ran.
    pub fail: u64,
}

impl Injected {
    /// Each count with its knob's name, in the knobs' order.
    pub fn named(&self) -> [(&'static str, u64); 5] {
        [
            ("drop_writes", self.drop_writes),
            ("stale_reads", self.stale_reads),
            ("corrupt_reads", self.corrupt_reads),
            ("resurrect", self.resurrect),
            ("fail", self.fail),
        ]
    }

    /// Each count, mutable, with its knob's name (to read counts back by name).
    pub fn named_mut(&mut self) -> [(&'static str, &mut u64); 5] {
        [
            ("drop_writes", &mut self.drop_writes),
            ("stale_reads", &mut self.stale_reads),
            ("corrupt_reads", &mut self.corrupt_reads),
            ("resurrect", &mut self.resurrect),
            ("fail", &mut self.fail),
        ]
    }

    /// What was injected after `earlier`, an earlier reading of the same store.
    pub fn since(&self, earlier: &Injected) -> Injected {
        let mut out = *self;
        for ((_, n), (_, e)) in out.named_mut().into_iter().zip(earlier.named()) {
            *n = n.saturating_sub(e);
        }
        out
    }

    /// Adds `other`'s counts (another store's, or a later share of the same one).
    pub fn add(&mut self, other: &Injected) {
        for ((_, n), (_, o)) in self.named_mut().into_iter().zip(other.named()) {
            *n = n.saturating_add(o);
        }
    }
}

/// One open store, shared by every worker of a measurement.
pub trait Store: Send + Sync {
    /// A handle for one worker thread.
    fn session(&self) -> EngineResult<Box<dyn Session>>;

    /// A handle for one session of a pipeline group (`--pipeline N`): it shares one
    /// connection with the group's other sessions. Only engines whose server kind says
    /// `pipeline` implement it; the plan refuses `--pipeline` above 1 for the others.
    fn pipelined_session(&self, _group: &Pipeline) -> EngineResult<Box<dyn Session>> {
        Err(EngineError::other(
            "this engine cannot pipeline requests; run it with --pipeline 1",
        ))
    }

    /// Engine internals as name/value pairs, for the timeline. Every metric the
    /// engine reports, even when it stays flat.
    fn stats(&self) -> Vec<(String, f64)> {
        Vec::new()
    }

    /// Waits until the background work the engine does on its own (flushes,
    /// compactions) is done, so that a timed phase starts on a quiet store
    /// (`--settle`). Engines without such work, or without a way to wait for it,
    /// return at once.
    fn settle(&self) -> EngineResult<()> {
        Ok(())
    }

    /// Flushes and closes the store. Errors here are reported, not swallowed.
    fn close(self: Box<Self>) -> EngineResult<()>;
}

/// Where and how to open a store.
#[derive(Debug, Clone)]
pub struct OpenRequest<'a> {
    /// Where the store lives, made fresh for it by the engine's [`StorageKind`]: a
    /// directory for a disk engine, a namespace name for a server engine.
    pub place: StorePlace,
    /// Options for this engine, from `--engine-opt` or its config section.
    pub options: &'a EngineOptions,
    /// The longest value an append may make (`--max-value-bytes`); None: no cap.
    pub max_value_bytes: Option<u64>,
}

impl<'a> OpenRequest<'a> {
    /// A request for a store at `place` with `options` and the default value cap.
    pub fn new(place: StorePlace, options: &'a EngineOptions) -> Self {
        OpenRequest {
            place,
            options,
            max_value_bytes: Some(DEFAULT_MAX_VALUE_BYTES),
        }
    }

    /// A request for an in-memory store with `options` and the default value cap.
    pub fn memory(options: &'a EngineOptions) -> Self {
        OpenRequest::new(StorePlace::Memory, options)
    }

    /// The store's directory, or the error a disk engine gives when it has none.
    pub fn dir(&self, engine: &str) -> EngineResult<&Path> {
        match &self.place {
            StorePlace::Dir(dir) => Ok(dir),
            _ => Err(EngineError::other(format!(
                "engine {engine} stores data on disk and needs a directory"
            ))),
        }
    }

    /// The store's namespace name, or the error a server engine gives when it has none.
    pub fn namespace(&self, engine: &str) -> EngineResult<&str> {
        match &self.place {
            StorePlace::Namespace(name) => Ok(name),
            _ => Err(EngineError::other(format!(
                "engine {engine} stores data on a server and needs a namespace name"
            ))),
        }
    }
}

/// Takes an engine's shared state back from its `Arc` when the store closes; refuses,
/// naming the engine, while any session still holds a reference.
pub fn unshare<T>(engine: &str, shared: Arc<T>) -> EngineResult<T> {
    Arc::try_unwrap(shared).map_err(|s| {
        EngineError::other(format!(
            "{engine}: cannot close, {} session(s) still open",
            Arc::strong_count(&s) - 1
        ))
    })
}

/// Whether a value of `current` bytes may grow by `suffix` bytes under `cap`.
#[inline]
pub fn fits_cap(cap: Option<u64>, current: usize, suffix: usize) -> bool {
    cap.is_none_or(|cap| (current as u64).saturating_add(suffix as u64) <= cap)
}

/// Static description of an engine and its constructor.
pub struct EngineInfo {
    /// Name used by `--backend`.
    pub name: &'static str,
    /// Where the engine keeps its data: memory, a directory on a disk (`--data-dir`),
    /// or a namespace on a server.
    pub storage: StorageKind,
    /// One line for `kvmark engines`.
    pub description: &'static str,
    /// How `append` is implemented.
    pub append: AppendMethod,
    /// Whether `del` can report existence without an extra read.
    pub del_reports_existence: bool,
    /// Whether `mput`/`mdel` become visible all at once: a concurrent reader sees the
    /// whole batch or none of it. False for engines that apply batches key by key.
    pub atomic_batches: bool,
    /// The key and value sizes the engine takes: the verb set refuses others before
    /// the call, with a counted error ([`crate::kv::Kv`]), the same way for every
    /// engine (fjall panicked on an empty key and on one past 65,535 bytes).
    pub limits: Limits,
    /// The linked library's version.
    pub version: fn() -> String,
    /// The engine's knobs: its static [`KnobTable`] (or, for an engine whose library
    /// parses its own options, its own [`KnobSet`]). Lists them for `kvmark engines`
    /// and checks options before a run, refusing bad keys and values with an
    /// [`OptionError`] naming the engine and the key.
    pub knobs: &'static dyn KnobSet,
    /// Opens a store at `req.place`. Options are parsed by the same knob table, so
    /// they are refused at open as they are by validation.
    pub open: fn(&OpenRequest<'_>) -> EngineResult<Box<dyn Store>>,
}

/// The key and value sizes an engine takes ([`EngineInfo::limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Whether a key may be empty.
    pub empty_keys: bool,
    /// The longest key, in bytes.
    pub max_key_bytes: usize,
    /// The longest value, in bytes.
    pub max_value_bytes: usize,
}

impl Limits {
    /// Any key (the empty one too) and any value.
    pub const NONE: Limits = Limits {
        empty_keys: true,
        max_key_bytes: usize::MAX,
        max_value_bytes: usize::MAX,
    };
}

impl EngineInfo {
    /// Whether this engine's sessions can share a connection several requests deep
    /// (`--pipeline` above 1).
    pub fn pipelines(&self) -> bool {
        matches!(self.storage, StorageKind::Server(kind) if kind.pipeline)
    }

    /// Checks options without opening anything ([`KnobSet::validate`]).
    pub fn validate(&self, options: &EngineOptions) -> Result<(), OptionError> {
        self.knobs.validate(options)
    }
}

impl fmt::Debug for EngineInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineInfo").field("name", &self.name).finish()
    }
}

/// Every engine compiled into this binary, the reference engine first.
pub fn registry() -> Vec<&'static EngineInfo> {
    vec![
        &skiplist::INFO,
        &sim::INFO,
        #[cfg(feature = "rocksdb")]
        &rocksdb::INFO,
        #[cfg(feature = "tidesdb")]
        &tidesdb::INFO,
        #[cfg(feature = "lmdb")]
        &lmdb::INFO,
        #[cfg(feature = "sqlite")]
        &sqlite::INFO,
        #[cfg(feature = "leveldb")]
        &leveldb::INFO,
        #[cfg(feature = "redb")]
        &redb::INFO,
        #[cfg(feature = "fjall")]
        &fjall::INFO,
        #[cfg(feature = "bdb")]
        &bdb::INFO,
        #[cfg(feature = "tokyocabinet")]
        &tokyocabinet::INFO,
        #[cfg(feature = "kyotocabinet")]
        &kyotocabinet::INFO,
        #[cfg(feature = "tkrzw")]
        &tkrzw::INFO,
        #[cfg(feature = "mdbx")]
        &mdbx::INFO,
        #[cfg(feature = "wiredtiger")]
        &wiredtiger::INFO,
        #[cfg(feature = "redis")]
        &redis::INFO,
        #[cfg(feature = "postgres")]
        &postgres::INFO,
        #[cfg(feature = "mariadb")]
        &mariadb::INFO,
        #[cfg(feature = "mariadb")]
        &mariadb::MYROCKS_INFO,
        #[cfg(feature = "mongodb")]
        &mongodb::INFO,
        #[cfg(feature = "etcd")]
        &etcd::INFO,
        #[cfg(feature = "redis")]
        &redis::CLUSTER_INFO,
    ]
}

/// Validates every engine's options (from `--engine-opt` or config sections) before a
/// run, so a typo stops kvmark at once instead of failing every point. Options for an
/// engine that is not compiled in are refused too.
pub fn validate_options(options: &BTreeMap<String, EngineOptions>) -> Result<(), OptionError> {
    for (name, opts) in options {
        match find(name) {
            Some(engine) => engine.validate(opts)?,
            None => {
                let names: Vec<&str> = registry().iter().map(|e| e.name).collect();
                return Err(OptionError {
                    engine: name.clone(),
                    key: None,
                    message: format!(
                        "options given for unknown engine '{name}' (compiled in: {})",
                        names.join(", ")
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Looks an engine up by name.
pub fn find(name: &str) -> Option<&'static EngineInfo> {
    registry().into_iter().find(|e| e.name == name)
}

/// The engine used when `--backend` is not given.
pub const DEFAULT_ENGINE: &str = "skiplist";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_results_stay_small() {
        // Verbs return these by value on the hot path: a larger error costs every call.
        assert!(std::mem::size_of::<EngineResult<bool>>() <= 32);
    }

    #[test]
    fn rows_round_trip() {
        let mut rows = Rows::default();
        rows.push(b"a", b"1");
        rows.push(b"", b"");
        rows.push(b"\x00\xff", b"xyz");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows.get(0), (&b"a"[..], &b"1"[..]));
        assert_eq!(rows.get(1), (&b""[..], &b""[..]));
        assert_eq!(rows.get(2), (&b"\x00\xff"[..], &b"xyz"[..]));
        rows.clear();
        assert!(rows.is_empty());
    }

    #[test]
    fn values_keep_holes() {
        let mut vals = Values::default();
        vals.push_hit(b"x");
        vals.push_miss();
        vals.push_hit(b"");
        assert_eq!(vals.get(0), Some(&b"x"[..]));
        assert_eq!(vals.get(1), None);
        assert_eq!(vals.get(2), Some(&b""[..]));
    }
}
