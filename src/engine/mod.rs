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
//!
//! The engines live in two rooms: `server/` holds the server engines with the client
//! layer they share (connections, pipeline groups, requests in flight), `embedded/`
//! the engines that run in kvmark's process. Each is re-exported here, so its path
//! stays `engine::NAME`. Beside them sit what every engine uses: the contract (this
//! file, `error.rs`, `rows.rs`, `readbuf.rs`), knob tables (`knobs.rs`, `options.rs`)
//! and storage kinds (`storage.rs`).

mod embedded;
mod error;
pub mod knobs;
pub mod options;
mod readbuf;
mod rows;
mod server;
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

// The engines and the client layer keep their paths as `engine::NAME`.
pub use embedded::{sim, skiplist};
pub use server::{inflight, net, pipeline};

#[cfg(feature = "bdb")]
pub use embedded::bdb;
#[cfg(feature = "fjall")]
pub use embedded::fjall;
#[cfg(feature = "kyotocabinet")]
pub use embedded::kyotocabinet;
#[cfg(feature = "leveldb")]
pub use embedded::leveldb;
#[cfg(feature = "lmdb")]
pub use embedded::lmdb;
#[cfg(feature = "mdbx")]
pub use embedded::mdbx;
#[cfg(feature = "redb")]
pub use embedded::redb;
#[cfg(feature = "rocksdb")]
pub use embedded::rocksdb;
#[cfg(feature = "sqlite")]
pub use embedded::sqlite;
#[cfg(feature = "tidesdb")]
pub use embedded::tidesdb;
#[cfg(feature = "tkrzw")]
pub use embedded::tkrzw;
#[cfg(feature = "tokyocabinet")]
pub use embedded::tokyocabinet;
#[cfg(feature = "wiredtiger")]
pub use embedded::wiredtiger;
#[cfg(feature = "etcd")]
pub use server::etcd;
#[cfg(feature = "mariadb")]
pub use server::mariadb;
#[cfg(feature = "memcached")]
pub use server::memcached;
#[cfg(feature = "mongodb")]
pub use server::mongodb;
#[cfg(feature = "postgres")]
pub use server::postgres;
#[cfg(feature = "redis")]
pub use server::redis;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use error::{EngineError, EngineResult, ErrorKind};
pub use knobs::{KnobDef, KnobSet, KnobTable, KnobValue};
pub use options::{EngineOptions, OptionError, OptionOrigins};
pub use pipeline::Pipeline;
pub use readbuf::ReadBuf;
pub use rows::{Rows, Values};
pub use storage::{ServerKind, StorageKind, StorePlace};

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

    /// Closes this session's connection to the server and opens a new one now, set-up
    /// included (authentication, prepared statements, a TLS handshake): what
    /// `--reconnect-every` times as `connect`. Only server engines' sessions have a
    /// connection; the plan refuses the flag for the others.
    fn reconnect(&mut self) -> EngineResult<()> {
        Err(EngineError::other(
            "this engine keeps no connection to open again (--reconnect-every is for server engines)",
        ))
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

    /// Whether this engine keeps its keys in order, so `range`, `scan` and
    /// `delete_range` can work (every engine but memcached; Redis needs its
    /// `index=zset` for them, which the session asks for by name).
    pub fn ordered(&self) -> bool {
        !matches!(self.storage, StorageKind::Server(kind) if !kind.ordered)
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
        #[cfg(feature = "memcached")]
        &memcached::INFO,
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
