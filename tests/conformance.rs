//! The engine conformance suite: every compiled engine, the reference skip list
//! included, must keep the contract in ARCHITECTURE.md. Each test runs against every engine
//! through the library API (`kvmark::engine::registry()`), each store in a fresh place
//! made by its storage kind (a temporary directory for a disk engine, a fresh namespace
//! for a server engine), and names the engine in every failure.
//!
//! A server engine whose server does not answer is skipped with a note on stderr,
//! unless `KVMARK_REQUIRE_SERVERS=1` says the servers are started (CI): then it fails.
//!
//! Engines differ only where the contract lets them, and the suite reads those
//! differences from `EngineInfo`: `del` reports existence only where
//! `del_reports_existence` says so (and must then be right), batches are checked for
//! all-or-nothing visibility only where `atomic_batches` promises it, and concurrent
//! appends are checked for lost updates only where the append method is atomic.
//!
//! An engine that pipelines (`--pipeline`, `EngineInfo::pipelines`) runs the suite
//! twice: with sessions of their own, and with every session of a store in one
//! pipeline group sharing a connection. A server engine runs it once more over TLS,
//! on its server's TLS URL (scripts/with-servers starts every server with TLS).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kvmark::engine::storage::{Reach, fresh_namespace, reach, servers_required};
use kvmark::engine::{
    AppendMethod, Appended, EngineInfo, EngineOptions, EngineResult, ErrorKind, Existed, OpenRequest, Pipeline,
    ReadBuf, Rows, Session, StorageKind, Store, StorePlace, Values,
};
use tempfile::TempDir;

/// Every compiled engine the suite can reach: a server engine whose server does not
/// answer is skipped (and said so), or fails the test when servers are required.
fn registry() -> Vec<&'static EngineInfo> {
    let require = servers_required();
    kvmark::engine::registry()
        .into_iter()
        .filter(|info| match reach(info, &contract_options(info), require) {
            Reach::Ready => true,
            Reach::Skip(note) => {
                eprintln!("{note}");
                false
            }
            Reach::Fail(why) => panic!("{why}"),
        })
        .collect()
}

/// The options the suite opens `info` with: the defaults, plus the opt-ins some
/// engines need for every verb of the contract (`KnobSet::contract`).
fn contract_options(info: &EngineInfo) -> EngineOptions {
    info.knobs.contract()
}

/// How deep the pipeline group of a pipelined run of the suite is.
const PIPELINE_DEPTH: usize = 4;

/// How a fixture's sessions reach their store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    /// The depth of the pipeline group every session joins (None: sessions of their own).
    pipeline: Option<usize>,
    /// Over TLS: the server's TLS URL (KVMARK_<NAME>_TLS_URL), trusting KVMARK_TLS_CA.
    tls: bool,
}

const PLAIN: Mode = Mode {
    pipeline: None,
    tls: false,
};

/// Every engine of [`registry`]; a second time as a pipeline group where it pipelines;
/// and a server engine again over TLS, on the TLS URL of its server (twice where it
/// pipelines: sessions of their own, and a pipeline group).
fn variants() -> Vec<(&'static EngineInfo, Mode)> {
    registry()
        .into_iter()
        .flat_map(|info| {
            let piped = info.pipelines().then_some((
                info,
                Mode {
                    pipeline: Some(PIPELINE_DEPTH),
                    tls: false,
                },
            ));
            // Over TLS with sessions of their own, and pipelined where the engine
            // pipelines (TLS records then carry many requests).
            let tls = tls_options(info).into_iter().flat_map(move |_| {
                let depths = [None]
                    .into_iter()
                    .chain(info.pipelines().then_some(Some(PIPELINE_DEPTH)));
                depths.map(move |pipeline| (info, Mode { pipeline, tls: true }))
            });
            std::iter::once((info, PLAIN)).chain(piped).chain(tls)
        })
        .collect()
}

/// The options that put a server engine on its server's TLS URL, trusting its CA:
/// None for an embedded engine. With the servers required (`make test`), a server
/// started without TLS fails the suite, unless KVMARK_SERVERS_TLS=0 says so.
fn tls_options(info: &EngineInfo) -> Option<Vec<(String, String)>> {
    info.storage.server()?;
    let (url, ca) = common::servers::tls_server(info.name)?;
    let knob = common::servers::address_knob(info.name);
    Some(vec![(knob.to_string(), url), ("tls_ca".to_string(), ca)])
}

/// A fresh place for a store of `info`, and the temporary directory behind it.
fn fresh_place(info: &EngineInfo) -> (StorePlace, Option<TempDir>) {
    match info.storage {
        StorageKind::Memory => (StorePlace::Memory, None),
        StorageKind::Disk => {
            let dir = tempfile::tempdir().expect("a temporary directory");
            (StorePlace::Dir(dir.path().to_path_buf()), Some(dir))
        }
        StorageKind::Server(_) => (StorePlace::Namespace(fresh_namespace(info.name)), None),
    }
}

/// One open store of one engine, in its own place (directory or namespace).
struct Fixture {
    info: &'static EngineInfo,
    /// The engine's name, and the pipeline's depth when its sessions share one.
    label: &'static str,
    /// The group every session of the store joins, for a pipelined run.
    group: Option<Arc<Pipeline>>,
    store: Option<Box<dyn Store>>,
    place: StorePlace,
    _dir: Option<TempDir>,
    /// The value cap appends must respect (None: no cap).
    cap: Option<u64>,
    /// What the store opens with: the contract's opt-ins unless a test says otherwise.
    options: EngineOptions,
}

impl Fixture {
    fn open(info: &'static EngineInfo, mode: Mode) -> Fixture {
        Fixture::open_capped(info, mode, None)
    }

    fn open_capped(info: &'static EngineInfo, mode: Mode, cap: Option<u64>) -> Fixture {
        Fixture::open_with(info, mode, cap, contract_options(info))
    }

    fn open_with(info: &'static EngineInfo, mode: Mode, cap: Option<u64>, mut options: EngineOptions) -> Fixture {
        let (place, dir) = fresh_place(info);
        let pipeline = mode.pipeline;
        if mode.tls {
            for (k, v) in tls_options(info).expect("a TLS variant has a TLS server") {
                options.set(k, v);
            }
        }
        let label = match (pipeline, mode.tls) {
            // Leaked once per such fixture: failure messages take a &'static str.
            (Some(depth), false) => &*Box::leak(format!("{} (--pipeline {depth})", info.name).into_boxed_str()),
            (Some(depth), true) => &*Box::leak(format!("{} (TLS, --pipeline {depth})", info.name).into_boxed_str()),
            (None, true) => &*Box::leak(format!("{} (TLS)", info.name).into_boxed_str()),
            (None, false) => info.name,
        };
        let mut fx = Fixture {
            info,
            label,
            group: pipeline.map(Pipeline::new),
            store: None,
            place,
            _dir: dir,
            cap,
            options,
        };
        fx.store = Some(fx.open_store());
        fx
    }

    fn open_store(&self) -> Box<dyn Store> {
        let req = OpenRequest {
            max_value_bytes: self.cap,
            ..OpenRequest::new(self.place.clone(), &self.options)
        };
        match (self.info.open)(&req) {
            Ok(s) => s,
            Err(e) => panic!("{}: open failed: {e}", self.info.name),
        }
    }

    fn name(&self) -> &'static str {
        self.label
    }

    fn store(&self) -> &dyn Store {
        self.store.as_deref().expect("the store is open")
    }

    fn session(&self) -> Box<dyn Session> {
        let session = match &self.group {
            Some(group) => self.store().pipelined_session(group),
            None => self.store().session(),
        };
        match session {
            Ok(s) => s,
            Err(e) => panic!("{}: session failed: {e}", self.name()),
        }
    }

    /// Closes the store (every session must be gone) and opens the same directory again.
    fn reopen(&mut self) {
        self.close_store();
        self.store = Some(self.open_store());
    }

    fn close_store(&mut self) {
        if let Some(store) = self.store.take()
            && let Err(e) = store.close()
        {
            panic!("{}: close failed: {e}", self.name());
        }
    }
}

impl Drop for Fixture {
    /// A server engine's namespace outlives its store (so reopening finds the data):
    /// drop it with the fixture, as the run does after the last close.
    fn drop(&mut self) {
        if let (StorePlace::Namespace(name), Some(server)) = (&self.place, self.info.storage.server()) {
            if let Some(store) = self.store.take() {
                let _ = store.close();
            }
            if let Err(e) = (server.remove)(&self.options, name)
                && !std::thread::panicking()
            {
                panic!("{}: removing namespace {name} failed: {e}", self.info.name);
            }
        }
    }
}

/// Runs `test` against a fresh store of every engine, then closes the store.
fn each_engine(test: impl Fn(&mut Fixture)) {
    for (info, mode) in variants() {
        let mut fx = Fixture::open(info, mode);
        test(&mut fx);
        fx.close_store();
    }
}

/// Like [`each_engine`], for the engines that keep their keys in order (all but
/// memcached): the tests of range, scan and delete_range themselves.
fn each_ordered_engine(test: impl Fn(&mut Fixture)) {
    for (info, mode) in variants().into_iter().filter(|(e, _)| e.ordered()) {
        let mut fx = Fixture::open(info, mode);
        test(&mut fx);
        fx.close_store();
    }
}

/// The rows with `lo <= key < hi`: by `range` where the engine keeps its keys in
/// order, else by a get of each of `candidates` (every key the test may have written
/// there), in key order.
fn rows_in(fx: &Fixture, s: &mut dyn Session, lo: &[u8], hi: &[u8], candidates: &[Vec<u8>]) -> Vec<(Vec<u8>, Vec<u8>)> {
    if fx.info.ordered() {
        return range(fx, s, lo, hi, 0);
    }
    let mut keys: Vec<&Vec<u8>> = candidates.iter().filter(|k| lo <= &k[..] && &k[..] < hi).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| get(fx, s, k).map(|v| (k.clone(), v)))
        .collect()
}

/// The keys of [`rows_in`].
fn keys_in(fx: &Fixture, s: &mut dyn Session, lo: &[u8], hi: &[u8], candidates: &[Vec<u8>]) -> Vec<Vec<u8>> {
    rows_in(fx, s, lo, hi, candidates).into_iter().map(|(k, _)| k).collect()
}

/// Unwraps an engine result, retrying transient busy errors as the harness does.
fn ok<T>(name: &str, what: &str, mut call: impl FnMut() -> EngineResult<T>) -> T {
    for _ in 0..1_000_000 {
        match call() {
            Ok(v) => return v,
            Err(e) if e.kind == ErrorKind::Busy => std::thread::yield_now(),
            Err(e) => panic!("{name}: {what} failed: {e}"),
        }
    }
    panic!("{name}: {what} stayed busy for a million retries")
}

fn put(fx: &Fixture, s: &mut dyn Session, k: &[u8], v: &[u8]) {
    ok(fx.name(), "put", || s.put(k, v));
}

fn get(fx: &Fixture, s: &mut dyn Session, k: &[u8]) -> Option<Vec<u8>> {
    let mut out = ReadBuf::new();
    out.set(&[0xAA; 3]); // stale contents the engine must replace
    ok(fx.name(), "get", || s.get(k, &mut out)).then(|| out.to_vec())
}

fn range(fx: &Fixture, s: &mut dyn Session, lo: &[u8], hi: &[u8], limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rows = Rows::default();
    rows.push(b"stale", b"row"); // the engine must clear it
    ok(fx.name(), "range", || s.range(lo, hi, limit, &mut rows));
    rows.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect()
}

fn range_keys(fx: &Fixture, s: &mut dyn Session, lo: &[u8], hi: &[u8], limit: usize) -> Vec<Vec<u8>> {
    range(fx, s, lo, hi, limit).into_iter().map(|(k, _)| k).collect()
}

fn scan_keys(fx: &Fixture, s: &mut dyn Session, lo: &[u8], hi: &[u8], limit: usize) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    let n = ok(fx.name(), "scan", || {
        keys.clear();
        s.scan(lo, hi, limit, &mut |k, _| {
            keys.push(k.to_vec());
            false
        })
    });
    assert_eq!(
        n,
        keys.len(),
        "{}: scan's count differs from the rows it delivered",
        fx.name()
    );
    keys
}

fn key(i: usize) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

fn val(i: usize) -> Vec<u8> {
    format!("value-{i}").into_bytes()
}

/// k00..k{n-1}, each with val(i).
fn fill(fx: &Fixture, s: &mut dyn Session, n: usize) {
    for i in 0..n {
        put(fx, s, &key(i), &val(i));
    }
}

fn keys(range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(key).collect()
}

#[test]
fn keys_order_bytewise_with_zero_and_ff_bytes_and_prefixes() {
    let written: Vec<Vec<u8>> = vec![
        vec![0x00],
        vec![0x00, 0x00],
        vec![0x00, 0xFF],
        vec![0x01],
        vec![0x7F],
        vec![0x80], // above 0x7F: unsigned comparison, not signed
        b"a".to_vec(),
        b"ab".to_vec(),
        b"ab\x00".to_vec(),
        b"ab\x00\x00".to_vec(),
        b"ab\xff".to_vec(),
        b"abc".to_vec(),
        vec![0xFE, 0xFF],
        vec![0xFF],
        vec![0xFF, 0x00],
        vec![0xFF, 0xFF],
    ];
    // Vec<u8> orders bytewise (unsigned), which is the contract's order.
    let mut sorted = written.clone();
    sorted.sort();
    let value = |k: &[u8]| {
        let i = written.iter().position(|w| w == k).unwrap_or(usize::MAX) as u8;
        vec![i, 0x00, 0xFF]
    };
    each_ordered_engine(|fx| {
        let mut s = fx.session();
        // Written in an order that is not the sorted one: the engine must order them.
        for k in &written {
            put(fx, &mut *s, k, &value(k));
        }
        let everything = range(fx, &mut *s, b"", &[0xFF, 0xFF, 0xFF], 0);
        let got: Vec<Vec<u8>> = everything.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(got, sorted, "{}: range order", fx.name());
        for (k, v) in &everything {
            assert_eq!(v, &value(k), "{}: value of {k:?}", fx.name());
        }
        assert_eq!(
            scan_keys(fx, &mut *s, b"", &[0xFF, 0xFF, 0xFF], 0),
            sorted,
            "{}: scan order",
            fx.name()
        );
        for k in &written {
            assert_eq!(get(fx, &mut *s, k), Some(value(k)), "{}: get {k:?}", fx.name());
        }
        // A prefix bound: [ab, ab\x00) holds exactly "ab".
        assert_eq!(
            range_keys(fx, &mut *s, b"ab", b"ab\x00", 0),
            vec![b"ab".to_vec()],
            "{}",
            fx.name()
        );
        // Keys with the prefix "ab" sort between "ab" and "ab\xff\xff"; 0xFF after 'c'.
        assert_eq!(
            range_keys(fx, &mut *s, b"ab", b"ab\xff\xff", 0),
            vec![
                b"ab".to_vec(),
                b"ab\x00".to_vec(),
                b"ab\x00\x00".to_vec(),
                b"abc".to_vec(),
                b"ab\xff".to_vec()
            ],
            "{}",
            fx.name()
        );
        assert_eq!(get(fx, &mut *s, b"a\x00"), None, "{}: a missing neighbour", fx.name());
    });
    assert_ne!(written, sorted, "the keys are written out of order");
}

#[test]
fn ranges_are_half_open_with_limits_and_empty_or_inverted_bounds() {
    each_ordered_engine(|fx| {
        let mut s = fx.session();
        fill(fx, &mut *s, 20);
        let n = fx.name();
        assert_eq!(range_keys(fx, &mut *s, &key(5), &key(10), 0), keys(5..10), "{n}");
        assert_eq!(range_keys(fx, &mut *s, &key(5), &key(10), 3), keys(5..8), "{n}: limit");
        assert_eq!(
            range_keys(fx, &mut *s, &key(5), &key(10), 100),
            keys(5..10),
            "{n}: big limit"
        );
        assert_eq!(
            range_keys(fx, &mut *s, &key(5), &key(5), 0),
            keys(0..0),
            "{n}: lo == hi"
        );
        assert!(
            range_keys(fx, &mut *s, &key(10), &key(5), 0).is_empty(),
            "{n}: inverted"
        );
        assert!(range_keys(fx, &mut *s, &key(10), b"", 0).is_empty(), "{n}: empty hi");
        assert!(
            range_keys(fx, &mut *s, b"k20", b"k99", 0).is_empty(),
            "{n}: past the end"
        );
        assert!(
            range_keys(fx, &mut *s, b"a", b"b", 0).is_empty(),
            "{n}: before the start"
        );
        assert_eq!(range_keys(fx, &mut *s, b"", &key(2), 0), keys(0..2), "{n}: empty lo");
        let mut just5 = key(5);
        just5.push(0);
        assert_eq!(range_keys(fx, &mut *s, &key(5), &just5, 0), keys(5..6), "{n}: one key");
        assert_eq!(
            range_keys(fx, &mut *s, &just5, &key(7), 0),
            keys(6..7),
            "{n}: lo excludes k05"
        );
        assert_eq!(range_keys(fx, &mut *s, b"k", b"l", 0), keys(0..20), "{n}: all");
        let rows = range(fx, &mut *s, &key(3), &key(5), 0);
        assert_eq!(rows, vec![(key(3), val(3)), (key(4), val(4))], "{n}: values");
        // scan agrees with range.
        assert_eq!(
            scan_keys(fx, &mut *s, &key(5), &key(10), 3),
            keys(5..8),
            "{n}: scan limit"
        );
        assert!(
            scan_keys(fx, &mut *s, &key(10), &key(5), 0).is_empty(),
            "{n}: scan inverted"
        );
        assert_eq!(
            scan_keys(fx, &mut *s, &key(15), b"l", 0),
            keys(15..20),
            "{n}: scan tail"
        );
    });
}

#[test]
fn scan_stops_when_the_callback_says_so() {
    each_ordered_engine(|fx| {
        let mut s = fx.session();
        fill(fx, &mut *s, 10);
        let mut seen = Vec::new();
        let n = ok(fx.name(), "scan", || {
            seen.clear();
            s.scan(b"k", b"l", 0, &mut |k, v| {
                seen.push((k.to_vec(), v.to_vec()));
                seen.len() == 3
            })
        });
        assert_eq!(n, 3, "{}: rows reported after an early stop", fx.name());
        assert_eq!(
            seen,
            vec![(key(0), val(0)), (key(1), val(1)), (key(2), val(2))],
            "{}: rows seen",
            fx.name()
        );
        let mut calls = 0;
        let n = ok(fx.name(), "scan", || {
            calls = 0;
            s.scan(b"k", b"l", 4, &mut |_, _| {
                calls += 1;
                false
            })
        });
        assert_eq!((n, calls), (4, 4), "{}: limit", fx.name());
    });
}

#[test]
fn overwrite_replaces_the_value() {
    each_engine(|fx| {
        let mut s = fx.session();
        put(fx, &mut *s, b"k", b"first");
        put(fx, &mut *s, b"k", b"second, longer");
        put(fx, &mut *s, b"k", b"3rd");
        assert_eq!(get(fx, &mut *s, b"k"), Some(b"3rd".to_vec()), "{}", fx.name());
        assert_eq!(
            rows_in(fx, &mut *s, b"", b"z", &[b"k".to_vec()]),
            vec![(b"k".to_vec(), b"3rd".to_vec())],
            "{}: one row after overwrites",
            fx.name()
        );
        // Another session sees the same.
        let mut t = fx.session();
        assert_eq!(
            get(fx, &mut *t, b"k"),
            Some(b"3rd".to_vec()),
            "{}: second session",
            fx.name()
        );
    });
}

#[test]
fn delete_and_delete_of_missing_keep_the_existence_contract() {
    each_engine(|fx| {
        let n = fx.name();
        let knows = fx.info.del_reports_existence;
        let expect = |existed: bool| match (knows, existed) {
            (false, _) => Existed::Unknown,
            (true, true) => Existed::Yes,
            (true, false) => Existed::No,
        };
        let mut s = fx.session();
        fill(fx, &mut *s, 5);
        assert_eq!(
            ok(n, "del", || s.del(&key(2))),
            expect(true),
            "{n}: del of a present key"
        );
        assert_eq!(get(fx, &mut *s, &key(2)), None, "{n}: deleted key still readable");
        assert_eq!(ok(n, "del", || s.del(&key(2))), expect(false), "{n}: del again");
        assert_eq!(
            ok(n, "del", || s.del(b"never")),
            expect(false),
            "{n}: del of a missing key"
        );
        assert_eq!(
            keys_in(fx, &mut *s, b"k", b"l", &keys(0..5)),
            vec![key(0), key(1), key(3), key(4)],
            "{n}"
        );
        let batch: Vec<&[u8]> = vec![b"k00", b"nope", b"k01"];
        let existed = ok(n, "mdel", || s.mdel(&batch));
        assert_eq!(existed, knows.then_some(2), "{n}: mdel existence count");
        assert_eq!(
            keys_in(fx, &mut *s, b"k", b"l", &keys(0..5)),
            vec![key(3), key(4)],
            "{n}"
        );
        // A deleted key can come back.
        put(fx, &mut *s, &key(2), b"again");
        assert_eq!(get(fx, &mut *s, &key(2)), Some(b"again".to_vec()), "{n}");
    });
}

#[test]
fn mget_returns_values_in_key_order_with_holes() {
    each_engine(|fx| {
        let n = fx.name();
        let mut s = fx.session();
        put(fx, &mut *s, b"a", b"A");
        put(fx, &mut *s, b"c", b"C");
        let mut out = Values::default();
        out.push_hit(b"stale");
        let ks: Vec<&[u8]> = vec![b"c", b"b", b"a", b"c", b"zz"];
        ok(n, "mget", || s.mget(&ks, &mut out));
        let got: Vec<Option<Vec<u8>>> = (0..out.len()).map(|i| out.get(i).map(<[u8]>::to_vec)).collect();
        assert_eq!(
            got,
            vec![
                Some(b"C".to_vec()),
                None,
                Some(b"A".to_vec()),
                Some(b"C".to_vec()),
                None
            ],
            "{n}"
        );
        ok(n, "mget", || s.mget(&[], &mut out));
        assert!(out.is_empty(), "{n}: an empty mget");
    });
}

#[test]
fn mput_and_mdel_apply_every_key() {
    each_engine(|fx| {
        let n = fx.name();
        let mut s = fx.session();
        let pairs_owned: Vec<(Vec<u8>, Vec<u8>)> = (0..50).map(|i| (key(i), val(i))).collect();
        let pairs: Vec<(&[u8], &[u8])> = pairs_owned.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        ok(n, "mput", || s.mput(&pairs));
        assert_eq!(
            rows_in(fx, &mut *s, b"k", b"l", &keys(0..50)),
            pairs_owned,
            "{n}: after mput"
        );
        let dels_owned: Vec<Vec<u8>> = (0..50).step_by(2).map(key).collect();
        let dels: Vec<&[u8]> = dels_owned.iter().map(|k| &k[..]).collect();
        ok(n, "mdel", || s.mdel(&dels));
        let left: Vec<Vec<u8>> = (1..50).step_by(2).map(key).collect();
        assert_eq!(keys_in(fx, &mut *s, b"k", b"l", &keys(0..50)), left, "{n}: after mdel");
        // A batch that overwrites a key it also wrote earlier keeps the last value.
        let dup: Vec<(&[u8], &[u8])> = vec![(b"d", b"1"), (b"d", b"2")];
        ok(n, "mput", || s.mput(&dup));
        assert_eq!(
            get(fx, &mut *s, b"d"),
            Some(b"2".to_vec()),
            "{n}: last write in a batch wins"
        );
        ok(n, "mput", || s.mput(&[]));
        ok(n, "mdel", || s.mdel(&[]));
    });
}

/// A reader sees a batch whole or not at all, where the engine promises it.
#[test]
fn batches_become_visible_as_a_unit() {
    const KEYS: usize = 8;
    const ROUNDS: u32 = 300;
    // The reader looks at the batch with a range, so the engine must keep key order too.
    for (info, mode) in variants().into_iter().filter(|(e, _)| e.atomic_batches && e.ordered()) {
        let mut fx = Fixture::open(info, mode);
        let n = fx.name();
        let done = Arc::new(AtomicBool::new(false));
        let names: Vec<Vec<u8>> = (0..KEYS).map(|i| format!("b{i}").into_bytes()).collect();
        std::thread::scope(|scope| {
            let mut writer = fx.session();
            let mut reader = fx.session();
            let done_w = Arc::clone(&done);
            let names_w = names.clone();
            scope.spawn(move || {
                for round in 1..=ROUNDS {
                    let v = round.to_be_bytes();
                    let pairs: Vec<(&[u8], &[u8])> = names_w.iter().map(|k| (&k[..], &v[..])).collect();
                    ok(n, "mput", || writer.mput(&pairs));
                    if round % 3 == 0 {
                        let ks: Vec<&[u8]> = names_w.iter().map(|k| &k[..]).collect();
                        ok(n, "mdel", || writer.mdel(&ks));
                    }
                }
                done_w.store(true, Ordering::Release);
            });
            let mut rows = Rows::default();
            let mut reads = 0u64;
            while !done.load(Ordering::Acquire) || reads < 10 {
                ok(n, "range", || reader.range(b"b", b"c", 0, &mut rows));
                reads += 1;
                let count = rows.len();
                assert!(count == 0 || count == KEYS, "{n}: saw {count} of a {KEYS}-key batch");
                if let Some((_, first)) = rows.iter().next() {
                    assert!(
                        rows.iter().all(|(_, v)| v == first),
                        "{n}: one read mixed values from two batches"
                    );
                }
            }
        });
        fx.close_store();
    }
}

#[test]
fn delete_range_removes_exactly_the_half_open_range() {
    each_ordered_engine(|fx| {
        let n = fx.name();
        let mut s = fx.session();
        fill(fx, &mut *s, 20);
        ok(n, "delete_range", || s.delete_range(&key(5), &key(10)));
        let mut left = keys(0..5);
        left.extend(keys(10..20));
        assert_eq!(range_keys(fx, &mut *s, b"k", b"l", 0), left, "{n}");
        assert_eq!(get(fx, &mut *s, &key(7)), None, "{n}: get inside the deleted range");
        ok(n, "delete_range", || s.delete_range(&key(15), &key(12)));
        ok(n, "delete_range", || s.delete_range(&key(12), &key(12)));
        assert_eq!(
            range_keys(fx, &mut *s, b"k", b"l", 0),
            left,
            "{n}: empty and inverted ranges delete nothing"
        );
        ok(n, "delete_range", || s.delete_range(b"", &key(2)));
        assert_eq!(
            range_keys(fx, &mut *s, b"k", &key(5), 0),
            keys(2..5),
            "{n}: from the first key"
        );
        // Writes after a range delete are visible.
        put(fx, &mut *s, &key(6), b"back");
        assert_eq!(
            get(fx, &mut *s, &key(6)),
            Some(b"back".to_vec()),
            "{n}: rewrite after delete_range"
        );
    });
}

#[test]
fn append_grows_values() {
    each_engine(|fx| {
        let n = fx.name();
        let mut s = fx.session();
        ok(n, "append", || s.append(b"new", b"ab"));
        assert_eq!(
            get(fx, &mut *s, b"new"),
            Some(b"ab".to_vec()),
            "{n}: append to a missing key"
        );
        ok(n, "append", || s.append(b"new", b"\x00\xff"));
        ok(n, "append", || s.append(b"new", b""));
        ok(n, "append", || s.append(b"new", b"c"));
        assert_eq!(
            get(fx, &mut *s, b"new"),
            Some(b"ab\x00\xffc".to_vec()),
            "{n}: appended bytes"
        );
        put(fx, &mut *s, b"old", b"x");
        ok(n, "append", || s.append(b"old", b"y"));
        assert_eq!(
            rows_in(fx, &mut *s, b"old", b"old\x00", &[b"old".to_vec()]),
            vec![(b"old".to_vec(), b"xy".to_vec())],
            "{n}"
        );
        put(fx, &mut *s, b"old", b"reset");
        assert_eq!(
            get(fx, &mut *s, b"old"),
            Some(b"reset".to_vec()),
            "{n}: put after appends"
        );
        ok(n, "del", || s.del(b"new"));
        ok(n, "append", || s.append(b"new", b"z"));
        assert_eq!(
            get(fx, &mut *s, b"new"),
            Some(b"z".to_vec()),
            "{n}: append after delete"
        );
    });
}

#[test]
fn appends_grow_by_exactly_their_bytes_and_respect_the_value_cap() {
    const CAP: u64 = 1000;
    for (info, mode) in variants() {
        let mut fx = Fixture::open_capped(info, mode, Some(CAP));
        let n = fx.name();
        let mut s = fx.session();
        let native = info.append == AppendMethod::NativeMerge;
        put(&fx, &mut *s, b"k", &[b'v'; 900]);
        let mut expect = 900usize;
        // 900 + 60 fits, 960 + 60 does not, 960 + 40 lands exactly on the cap.
        for (len, fits) in [(60usize, true), (60, false), (40, true), (1, false)] {
            let got = ok(n, "append", || s.append(b"k", &vec![b'+'; len]));
            let want = match (native, fits) {
                (true, _) => Appended::Unknown,
                (false, true) => Appended::Yes,
                (false, false) => Appended::Skipped,
            };
            assert_eq!(got, want, "{n}: append of {len} bytes onto {expect}");
            if fits {
                expect += len;
            }
            let v = get(&fx, &mut *s, b"k").unwrap_or_default();
            assert_eq!(v.len(), expect, "{n}: value length after appending {len} bytes");
        }
        assert!(get(&fx, &mut *s, b"k").unwrap_or_default().len() as u64 <= CAP, "{n}");
        // A suffix larger than the cap on its own fits no value: every engine refuses
        // it at once (a merge operator could only leave an empty value behind), on a
        // missing key and on an existing one alike.
        let huge = vec![b'h'; CAP as usize + 1];
        let got = ok(n, "append", || s.append(b"huge", &huge));
        assert_eq!(
            (got, get(&fx, &mut *s, b"huge")),
            (Appended::Skipped, None),
            "{n}: an over-cap append on a missing key"
        );
        let got = ok(n, "append", || s.append(b"k", &huge));
        assert_eq!(got, Appended::Skipped, "{n}: an over-cap append on an existing key");
        assert_eq!(get(&fx, &mut *s, b"k").unwrap_or_default().len(), expect, "{n}");
        drop(s);
        fx.close_store();
    }
}

#[test]
fn concurrent_appends_lose_nothing_where_append_is_atomic() {
    const THREADS: usize = 4;
    for (info, mode) in variants().into_iter().filter(|(e, _)| e.append.atomic()) {
        // In-memory appends are fast enough to contend hard; persistent engines may
        // sync every commit, so they get fewer.
        let each = if info.storage.in_memory() { 5000 } else { 40 };
        let mut fx = Fixture::open(info, mode);
        let n = fx.name();
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let mut s = fx.session();
                scope.spawn(move || {
                    for _ in 0..each {
                        ok(n, "append", || s.append(b"log", &[b'a' + t as u8]));
                    }
                });
            }
        });
        let mut s = fx.session();
        let v = get(&fx, &mut *s, b"log").unwrap_or_default();
        assert_eq!(v.len(), THREADS * each, "{n}: appends were lost");
        for t in 0..THREADS {
            let c = v.iter().filter(|&&b| b == b'a' + t as u8).count();
            assert_eq!(c, each, "{n}: thread {t}'s appends");
        }
        drop(s);
        fx.close_store();
    }
}

#[test]
fn empty_and_large_values_round_trip() {
    each_engine(|fx| {
        let n = fx.name();
        // 4 MiB, or the longest value the engine takes (etcd's is 1.5 MiB less the key's
        // share), less one byte for the append below.
        let len = ((4 << 20) + 3).min(fx.info.limits.max_value_bytes - 1);
        let big: Vec<u8> = (0..len).map(|i: usize| (i * 7 + i / 251) as u8).collect();
        let mut s = fx.session();
        put(fx, &mut *s, b"empty", b"");
        assert_eq!(
            get(fx, &mut *s, b"empty"),
            Some(Vec::new()),
            "{n}: an empty value is not a missing key"
        );
        assert_eq!(
            rows_in(fx, &mut *s, b"e", b"f", &[b"empty".to_vec()]),
            vec![(b"empty".to_vec(), Vec::new())],
            "{n}"
        );
        let mut out = Values::default();
        ok(n, "mget", || s.mget(&[b"empty"], &mut out));
        assert_eq!(out.get(0), Some(&b""[..]), "{n}: mget of an empty value");
        put(fx, &mut *s, b"big", &big);
        assert!(get(fx, &mut *s, b"big") == Some(big.clone()), "{n}: a 4 MiB value");
        let rows = rows_in(fx, &mut *s, b"big", b"big\x00", &[b"big".to_vec()]);
        assert!(rows.len() == 1 && rows[0].1 == big, "{n}: a 4 MiB value by range");
        let pairs: Vec<(&[u8], &[u8])> = vec![(b"big2", &big), (b"small", b"s")];
        ok(n, "mput", || s.mput(&pairs));
        assert!(
            get(fx, &mut *s, b"big2") == Some(big.clone()),
            "{n}: a 4 MiB value by mput"
        );
        ok(n, "append", || s.append(b"big2", b"!"));
        let grown = get(fx, &mut *s, b"big2").unwrap_or_default();
        assert!(
            grown.len() == big.len() + 1 && grown.ends_with(b"!"),
            "{n}: append to a 4 MiB value"
        );
    });
}

#[test]
fn concurrent_writers_lose_no_acknowledged_write() {
    const THREADS: usize = 4;
    const EACH: usize = 150;
    const SHARED: usize = 10;
    each_engine(|fx| {
        let n = fx.name();
        // Each thread's last value for every shared key, to check the winner.
        let lasts: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let mut s = fx.session();
                    scope.spawn(move || {
                        let mut last = BTreeMap::new();
                        for i in 0..EACH {
                            let own = format!("own-{t}-{i:04}").into_bytes();
                            let shared = format!("shared-{:02}", i % SHARED).into_bytes();
                            let v = format!("t{t}-i{i}").into_bytes();
                            if i % 5 == 0 {
                                let pairs: Vec<(&[u8], &[u8])> = vec![(&own, &v), (&shared, &v)];
                                ok(n, "mput", || s.mput(&pairs));
                            } else {
                                ok(n, "put", || s.put(&own, &v));
                                ok(n, "put", || s.put(&shared, &v));
                            }
                            last.insert(shared, v);
                        }
                        last
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a writer thread"))
                .collect()
        });
        let mut s = fx.session();
        for t in 0..THREADS {
            for i in 0..EACH {
                let own = format!("own-{t}-{i:04}").into_bytes();
                assert_eq!(
                    get(fx, &mut *s, &own),
                    Some(format!("t{t}-i{i}").into_bytes()),
                    "{n}: thread {t}'s write {i}"
                );
            }
        }
        let own_keys: Vec<Vec<u8>> = (0..THREADS)
            .flat_map(|t| (0..EACH).map(move |i| format!("own-{t}-{i:04}").into_bytes()))
            .collect();
        let own_rows = keys_in(fx, &mut *s, b"own-", b"own.", &own_keys);
        assert_eq!(own_rows.len(), THREADS * EACH, "{n}: rows of disjoint keys");
        for k in 0..SHARED {
            let shared = format!("shared-{k:02}").into_bytes();
            let v = get(fx, &mut *s, &shared);
            let finals: BTreeSet<&Vec<u8>> = lasts.iter().filter_map(|m| m.get(&shared)).collect();
            assert!(
                v.as_ref().is_some_and(|v| finals.contains(v)),
                "{n}: shared key {k} holds {v:?}, not the last write of any thread"
            );
        }
    });
}

/// Point verbs and batches with the engine's default options, for the engines that
/// pipeline: without the contract's opt-ins a server engine may take a leaner path
/// (Redis without its index encodes these verbs itself; Redis Cluster spreads the
/// store over every primary and splits batches by slot), which must keep the same
/// contract, with sessions of their own and in a pipeline group.
#[test]
fn point_verbs_and_batches_keep_the_contract_with_default_options() {
    for (info, mode) in variants().into_iter().filter(|(e, _)| e.pipelines()) {
        let mut fx = Fixture::open_with(info, mode, None, EngineOptions::new());
        let n = fx.name();
        let mut s = fx.session();
        let mut t = fx.session();
        assert_eq!(get(&fx, &mut *s, b"k"), None, "{n}: a missing key");
        put(&fx, &mut *s, b"k", b"first");
        put(&fx, &mut *s, b"k", b"second");
        assert_eq!(
            get(&fx, &mut *t, b"k"),
            Some(b"second".to_vec()),
            "{n}: another session reads"
        );
        assert_eq!(ok(n, "del", || t.del(b"k")), Existed::Yes, "{n}: del of a present key");
        assert_eq!(ok(n, "del", || s.del(b"k")), Existed::No, "{n}: del again");
        assert_eq!(get(&fx, &mut *s, b"k"), None, "{n}: a deleted key");
        let owned: Vec<(Vec<u8>, Vec<u8>)> = (0..50).map(|i| (key(i), val(i))).collect();
        let pairs: Vec<(&[u8], &[u8])> = owned.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        ok(n, "mput", || s.mput(&pairs));
        let asked: Vec<Vec<u8>> = vec![key(7), b"nope".to_vec(), key(0), key(49), key(7)];
        let asked: Vec<&[u8]> = asked.iter().map(|k| &k[..]).collect();
        let mut out = Values::default();
        ok(n, "mget", || t.mget(&asked, &mut out));
        let got: Vec<Option<Vec<u8>>> = (0..out.len()).map(|i| out.get(i).map(<[u8]>::to_vec)).collect();
        assert_eq!(
            got,
            vec![Some(val(7)), None, Some(val(0)), Some(val(49)), Some(val(7))],
            "{n}: mget"
        );
        let dels: Vec<&[u8]> = vec![&pairs[1].0, b"nope", &pairs[2].0];
        assert_eq!(
            ok(n, "mdel", || s.mdel(&dels)),
            Some(2),
            "{n}: mdel counts what existed"
        );
        assert_eq!(get(&fx, &mut *t, &key(1)), None, "{n}: after mdel");
        put(&fx, &mut *s, b"empty", b"");
        assert_eq!(get(&fx, &mut *t, b"empty"), Some(Vec::new()), "{n}: an empty value");
        assert_eq!(
            ok(n, "append", || t.append(b"empty", b"+x")),
            Appended::Yes,
            "{n}: append"
        );
        assert_eq!(
            get(&fx, &mut *s, b"empty"),
            Some(b"+x".to_vec()),
            "{n}: an appended value"
        );
        // Larger than a read of the connection: the reply arrives in pieces. 4 MiB, or
        // the longest value the engine takes (memcached's 1,000,000 bytes).
        let len = (4usize << 20).min(info.limits.max_value_bytes);
        let big: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        put(&fx, &mut *s, b"big", &big);
        assert!(
            get(&fx, &mut *t, b"big") == Some(big.clone()),
            "{n}: a {len}-byte value"
        );
        drop((s, t));
        fx.close_store();
    }
}

/// Many sessions of one pipeline group, each a connection of one thread (as a crew
/// runs them), with their requests in flight together: every reply reaches the
/// session that asked.
#[test]
fn a_pipeline_group_hands_every_reply_to_its_own_session() {
    const SESSIONS: usize = 8;
    const ROUNDS: usize = 300;
    for info in registry().into_iter().filter(|e| e.pipelines()) {
        let mut fx = Fixture::open_with(
            info,
            Mode {
                pipeline: Some(SESSIONS),
                tls: false,
            },
            None,
            EngineOptions::new(),
        );
        let n = fx.name();
        let group = fx.group.clone().expect("a pipelined fixture");
        let store = fx.store();
        kvmark::engine::inflight::run_connections(SESSIONS, |c| {
            let mut s = ok(n, "session", || store.pipelined_session(&group));
            let mut out = ReadBuf::new();
            for round in 0..ROUNDS {
                let k = format!("s{c}-{}", round % 17).into_bytes();
                let v = format!("{c}:{round}:{}", "x".repeat(round % 40)).into_bytes();
                ok(n, "put", || s.put(&k, &v));
                assert!(ok(n, "get", || s.get(&k, &mut out)), "{n}: session {c} lost {k:?}");
                assert_eq!(&out[..], &v[..], "{n}: session {c} got another's reply");
            }
        })
        .expect("connections start");
        fx.close_store();
    }
}

#[test]
fn data_survives_close_and_reopen() {
    for (info, mode) in variants().into_iter().filter(|(e, _)| !e.storage.in_memory()) {
        let mut fx = Fixture::open(info, mode);
        let n = fx.name();
        {
            let mut s = fx.session();
            fill(&fx, &mut *s, 30);
            ok(n, "del", || s.del(&key(3)));
            match info.ordered() {
                true => ok(n, "delete_range", || s.delete_range(&key(10), &key(20))),
                // Without key order, the same keys one by one.
                false => {
                    let doomed = keys(10..20);
                    let doomed: Vec<&[u8]> = doomed.iter().map(|k| &k[..]).collect();
                    ok(n, "mdel", || s.mdel(&doomed));
                }
            }
            ok(n, "append", || s.append(&key(4), b"+more"));
            let pairs: Vec<(&[u8], &[u8])> = vec![(b"m1", b"one"), (b"m2", b"")];
            ok(n, "mput", || s.mput(&pairs));
        }
        fx.reopen();
        {
            let mut s = fx.session();
            let mut expect: Vec<Vec<u8>> = keys(0..3);
            expect.extend(keys(4..10));
            expect.extend(keys(20..30));
            assert_eq!(
                keys_in(&fx, &mut *s, b"k", b"l", &keys(0..30)),
                expect,
                "{n}: keys after reopening"
            );
            assert_eq!(
                get(&fx, &mut *s, &key(4)),
                Some(b"value-4+more".to_vec()),
                "{n}: appended value"
            );
            assert_eq!(get(&fx, &mut *s, &key(29)), Some(val(29)), "{n}");
            assert_eq!(get(&fx, &mut *s, b"m1"), Some(b"one".to_vec()), "{n}");
            assert_eq!(
                get(&fx, &mut *s, b"m2"),
                Some(Vec::new()),
                "{n}: empty value after reopening"
            );
            // The reopened store takes writes too.
            put(&fx, &mut *s, &key(3), b"new");
        }
        fx.reopen();
        let mut s = fx.session();
        assert_eq!(get(&fx, &mut *s, &key(3)), Some(b"new".to_vec()), "{n}: second reopen");
        drop(s);
        fx.close_store();
    }
}

#[test]
fn unknown_options_are_refused_naming_engine_and_key() {
    for info in registry() {
        let mut o = EngineOptions::new();
        o.set("kvmark_no_such_knob", "1");
        let e = info.validate(&o).expect_err(info.name);
        assert!(
            e.message.contains(info.name) && e.message.contains("kvmark_no_such_knob"),
            "{}: {}",
            info.name,
            e.message
        );
        // The engine and the key are data, for tracing the option to where it was set.
        assert_eq!(
            (e.engine.as_str(), e.key.as_deref()),
            (info.name, Some("kvmark_no_such_knob")),
            "{}",
            info.name
        );
        let (place, _dir) = fresh_place(info);
        let req = OpenRequest::new(place, &o);
        match (info.open)(&req) {
            Ok(_) => panic!("{}: opened with an unknown option", info.name),
            Err(e) => assert!(
                e.message.contains("kvmark_no_such_knob"),
                "{}: the refusal names the key: {}",
                info.name,
                e.message
            ),
        }
    }
}

#[test]
fn listed_knob_defaults_are_accepted_values() {
    for info in registry() {
        let mut o = EngineOptions::new();
        // RocksDB's table options are listed as block_based_table_factory={name};
        // they are set inside that one nested option, not as keys of their own.
        for k in info.knobs.list().into_iter().filter(|k| !k.name.contains('{')) {
            o.set(k.name.to_string(), k.default.clone());
        }
        if let Err(e) = info.validate(&o) {
            panic!("{}: its own listed defaults were refused: {e}", info.name);
        }
    }
}

#[test]
fn every_knob_refuses_a_nonsense_value_naming_engine_and_key() {
    for info in registry() {
        let knobs = info.knobs.list();
        let mut names: Vec<&str> = knobs.iter().map(|k| k.name.as_ref()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), knobs.len(), "{}: a knob is listed twice", info.name);
        for knob in knobs.iter().filter(|k| !k.name.contains('{')) {
            let mut o = EngineOptions::new();
            o.set(knob.name.to_string(), "kvmark-not-a-value");
            match info.validate(&o) {
                Err(e) => {
                    assert_eq!(
                        (e.engine.as_str(), e.key.as_deref()),
                        (info.name, Some(knob.name.as_ref())),
                        "{e}"
                    );
                    assert!(
                        e.message.starts_with(&format!("engine {}: ", info.name))
                            && e.message.contains(knob.name.as_ref()),
                        "{}",
                        e.message
                    );
                }
                // RocksDB takes some free-form strings (paths, ids) for options it
                // parses itself; every knob of a kvmark table has a closed syntax.
                Ok(()) => assert_eq!(
                    info.name, "rocksdb",
                    "{}: {} took a nonsense value",
                    info.name, knob.name
                ),
            }
        }
    }
}

/// Keys with any bytes go through the point verbs and batches of every engine (the
/// ordered engines also meet them in the order test); an engine that keeps no key
/// order refuses range, scan and delete_range, naming itself, and carries on.
#[test]
fn any_bytes_make_a_key_and_unordered_engines_refuse_ordered_verbs() {
    let odd: Vec<Vec<u8>> = vec![
        vec![0x00],
        vec![0xFF, 0x00],
        b"a b".to_vec(),
        b"line\r\nbreak".to_vec(),
        b"tab\there".to_vec(),
        "caf\u{e9}".as_bytes().to_vec(),
        (0..100u8).collect(),
    ];
    each_engine(|fx| {
        let n = fx.name();
        let mut s = fx.session();
        for (i, k) in odd.iter().enumerate() {
            put(fx, &mut *s, k, &[i as u8, 0xFF]);
        }
        for (i, k) in odd.iter().enumerate() {
            assert_eq!(get(fx, &mut *s, k), Some(vec![i as u8, 0xFF]), "{n}: get {k:?}");
        }
        let all: Vec<&[u8]> = odd.iter().map(|k| &k[..]).collect();
        let mut out = Values::default();
        ok(n, "mget", || s.mget(&all, &mut out));
        assert_eq!(out.len(), odd.len(), "{n}: mget of odd keys");
        for (i, k) in odd.iter().enumerate() {
            assert_eq!(out.get(i), Some(&[i as u8, 0xFF][..]), "{n}: mget {k:?}");
        }
        assert_eq!(
            ok(n, "mdel", || s.mdel(&all)),
            fx.info.del_reports_existence.then_some(odd.len()),
            "{n}"
        );
        assert_eq!(get(fx, &mut *s, &odd[0]), None, "{n}: deleted");
        if fx.info.ordered() {
            return;
        }
        let mut rows = Rows::default();
        let refusals = [
            ("range", s.range(b"a", b"z", 0, &mut rows).err()),
            ("scan", s.scan(b"a", b"z", 0, &mut |_, _| false).err()),
            ("delete_range", s.delete_range(b"a", b"z").err()),
        ];
        for (verb, e) in refusals {
            let e = e.unwrap_or_else(|| panic!("{n}: {verb} on an engine without key order did not fail"));
            assert!(
                e.message.contains(fx.info.name) && e.message.contains("no key order") && e.kind != ErrorKind::Busy,
                "{n}: {verb} refused with '{}'",
                e.message
            );
        }
        put(fx, &mut *s, b"after", b"refusals");
        assert_eq!(
            get(fx, &mut *s, b"after"),
            Some(b"refusals".to_vec()),
            "{n}: the session carries on"
        );
    });
}

#[test]
fn versions_and_stats_are_reported() {
    each_engine(|fx| {
        let n = fx.name();
        let version = (fx.info.version)();
        assert!(
            !version.is_empty() && !version.contains("failed") && !version.contains("not recorded"),
            "{n}: version '{version}'"
        );
        let mut s = fx.session();
        fill(fx, &mut *s, 100);
        drop(s);
        let stats = fx.store().stats();
        assert!(!stats.is_empty(), "{n}: no stats");
        for (name, v) in &stats {
            assert!(!name.is_empty() && v.is_finite(), "{n}: stat '{name}' = {v}");
        }
        let names: BTreeSet<&str> = stats.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names.len(), stats.len(), "{n}: a stat is reported twice");
        let required: &[&str] = match fx.info.name {
            "rocksdb" => &[
                "estimate-pending-compaction-bytes",
                "num-running-compactions",
                "num-running-flushes",
                "is-write-stopped",
                "actual-delayed-write-rate",
                "cur-size-active-mem-table",
                "cur-size-all-mem-tables",
                "num-files-at-level0",
                "block-cache-usage",
                "write-stall-micros",
            ],
            "tidesdb" => &[
                "immutable_memtable_count",
                "write_stall_us",
                "cache.hits",
                "cf.total_keys",
            ],
            "lmdb" => &["map_size", "last_page_number", "entries"],
            "sqlite" => &["page_count", "freelist_count", "page_size"],
            "leveldb" => &["num-files-at-level0", "approximate-memory-usage"],
            "redb" => &["entries", "tree_height", "stored_bytes"],
            "fjall" => &["journal_count", "l0_tables", "active_compactions"],
            "bdb" => &[
                "cache_hit",
                "cache_miss",
                "pages",
                "lock_waits",
                "deadlocks",
                "txn_commits",
            ],
            "tokyocabinet" => &["records", "file_size", "leaf_pages"],
            "kyotocabinet" => &["count", "size"],
            "tkrzw" => &["count", "file_size"],
            "redis" => &[
                "instantaneous_ops_per_sec",
                "total_commands_processed",
                "used_memory",
                "keyspace_hits",
                "keyspace_misses",
                "evicted_keys",
                "connected_clients",
                "reconnects",
            ],
            "postgres" => &[
                "xact_commit",
                "tup_inserted",
                "tup_fetched",
                "blks_hit",
                "blks_read",
                "checkpoints_timed",
                "checkpoints_req",
                "wal_bytes",
                "reconnects",
            ],
            "mariadb" => &[
                "innodb_buffer_pool_read_requests",
                "innodb_buffer_pool_reads",
                "innodb_os_log_written",
                "handler_write",
                "threads_connected",
                "reconnects",
            ],
            "myrocks" => &[
                "rocksdb_rows_inserted",
                "rocksdb_block_cache_hit",
                "rocksdb_wal_bytes",
                "rocksdb_stall_micros",
                "threads_connected",
                "reconnects",
            ],
            // What FerretDB's serverStatus and collStats have (a real MongoDB has more).
            "mongodb" => &["uptime", "cmd.find", "documents", "data_bytes", "reconnects"],
            "etcd" => &[
                "members_up",
                "leader",
                "raft_term",
                "raft_index",
                "db_size",
                "append_retries",
                "leader_errors",
                "member_errors",
                "reconnects",
            ],
            "memcached" => &["curr_items", "bytes", "evictions", "get_hits", "reconnects"],
            "redis-cluster" => &[
                "total_commands_processed",
                "used_memory",
                "connected_clients",
                "reconnects",
            ],
            _ => &[],
        };
        for r in required {
            assert!(names.contains(r), "{n}: stat '{r}' missing from {names:?}");
        }
    });
}
