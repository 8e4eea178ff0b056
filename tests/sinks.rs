//! Snapshot tests of every report sink, in process: one fixed run (fixed numbers, fixed
//! machine and build facts, no clock read) is sent through each row of the sink table
//! (`kvmark::report::sinks::SINKS`), opened on its bundle file in a temporary
//! directory, and the output is compared with `tests/fixtures/sinks/NAME.expected`.
//! A sink that writes a directory is snapshotted as its files in name order, each
//! under a `=== FILE ===` line.
//!
//! After an intended change of a sink's output, regenerate the expected files and
//! review their diff:
//!
//! ```text
//! KVMARK_BLESS=1 cargo test --release --test sinks
//! ```
//!
//! A new row in the table fails here until its expected file is blessed. The
//! end-to-end checks of real runs live in `tests/reports.rs`.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use kvmark::kv::pace::{Arrival, Rate};
use kvmark::kv::sizes::SizeSnapshot;
use kvmark::kv::verify::{Anomaly, Example, VerifyReport};
use kvmark::metrics::{LatencySummary, OpKind, PaceStats, Recorder, new_histogram};
use kvmark::probe::Probe;
use kvmark::report::RunInfo;
use kvmark::report::sinks::{SINKS, SinkKind};
use kvmark::result::epochs::{EpochInfo, EpochTag};
use kvmark::result::intervals::{Intervals, RepeatFigures};
use kvmark::result::slo::{self, Slo, SloReport};
use kvmark::result::{
    LoadResult, PhaseRun, PointKey, PointResult, PointStatus, RepeatLatency, RepeatRun, RunOutcome, SummaryRow,
};
use kvmark::run::observer::Sample;
use kvmark::workload::epochs::EpochMode;
use kvmark::workload::{Budget, SweepValue};

/// The environment variable that rewrites the expected files from the actual output.
const BLESS: &str = "KVMARK_BLESS";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sinks")
}

// ---- the fixture: one run of five points --------------------------------------------

/// Start of the fixture run, Unix seconds (a fixed instant, not the clock).
const T0: f64 = 1_700_000_000.25;

/// Records `n` calls of `kind` spread deterministically over [base, 4 * base).
fn calls(rec: &mut Recorder, kind: OpKind, n: u64, base: u64) {
    let stats = rec.kind_mut(kind);
    for i in 0..n {
        stats.hist.record(base + (i * 7919) % (3 * base)).unwrap();
    }
    stats.prim_ops += n;
}

/// Records `n` response times of `kind`, each `queue` ns above a service time.
fn responses(rec: &mut Recorder, kind: OpKind, n: u64, base: u64, queue: u64) {
    let resp = rec.kind_mut(kind).resp.get_or_insert_with(new_histogram);
    for i in 0..n {
        resp.record(base + queue + (i * 7919) % (3 * base)).unwrap();
    }
}

fn phase(name: &str, units: u64, prim_ops: u64, wall_ns: u64, bytes: u64) -> PhaseRun {
    PhaseRun {
        name: name.to_string(),
        start_unix_ns: 0,
        wall_ns,
        units,
        prim_ops,
        warmup_units: 0,
        bytes,
        trend: Vec::new(),
    }
}

fn key(workload: &str, engine: &str, threads: usize) -> PointKey {
    let path = if workload == "mixed" {
        "workloads/mixed.lua"
    } else {
        "specs/fill-read.json"
    };
    PointKey {
        workload: workload.to_string(),
        workload_path: PathBuf::from(path),
        engine: engine.to_string(),
        engine_version: if engine == "sim" { "sim-2" } else { "builtin-1" }.to_string(),
        threads,
        connections: if engine == "sim" { 16 } else { 1 },
        pipeline: if engine == "sim" { 4 } else { 1 },
        batch: 1,
        batched: false,
        sweep: None,
        rate: None,
        arrival: Arrival::Constant,
        epoch: None,
    }
}

fn point(key: PointKey, status: PointStatus, repeats: Vec<RepeatRun>, phases: Vec<(String, Recorder)>) -> PointResult {
    let mut merged = Recorder::new();
    for (_, rec) in &phases {
        merged.merge(rec);
    }
    PointResult {
        key,
        status,
        repeats,
        merged,
        phases,
        slo: None,
        epoch: None,
        verify: None,
    }
}

/// A closed-loop Lua point: two repeats, a seed, get/put/scan.
fn closed_loop() -> PointResult {
    let mut rec = Recorder::new();
    calls(&mut rec, OpKind::Get, 600, 900);
    calls(&mut rec, OpKind::Put, 300, 2_100);
    calls(&mut rec, OpKind::Scan, 100, 15_000);
    let get = rec.kind_mut(OpKind::Get);
    (get.hits, get.misses) = (540, 60);
    rec.kind_mut(OpKind::Put).bytes = 300 * 132;
    rec.kind_mut(OpKind::Scan).rows = 100 * 20;
    let seed = |wall_ns| LoadResult {
        threads: 2,
        wall_ns,
        keys: 1000,
        shared: false,
    };
    // Each repeat's own latency: half the calls, the second repeat a little slower.
    let half = |scale: u64| {
        let mut r = Recorder::new();
        calls(&mut r, OpKind::Get, 300, 900 * scale / 10);
        calls(&mut r, OpKind::Put, 150, 2_100 * scale / 10);
        calls(&mut r, OpKind::Scan, 50, 15_000 * scale / 10);
        Some(RepeatLatency::of([&r]))
    };
    let repeats = vec![
        RepeatRun {
            phases: vec![phase("run", 500, 500, 1_250_000_000, 19_800)],
            thread_units: vec![500],
            load: Some(seed(40_000_000)),
            latency: half(10),
            client_cpu: None,
        },
        RepeatRun {
            phases: vec![phase("run", 500, 500, 1_000_000_000, 19_800)],
            thread_units: vec![500],
            load: Some(seed(50_000_000)),
            latency: half(11),
            client_cpu: None,
        },
    ];
    point(
        key("mixed", "skiplist", 1),
        PointStatus::Ok,
        repeats,
        vec![("run".to_string(), rec)],
    )
}

/// A batched spec point with two phases, engine errors, retries, and a failure.
fn two_phases_failed() -> PointResult {
    let mut fill = Recorder::new();
    calls(&mut fill, OpKind::Mput, 250, 8_000);
    fill.kind_mut(OpKind::Mput).prim_ops = 1000;
    fill.kind_mut(OpKind::Mput).bytes = 1000 * 116;
    let mut read = Recorder::new();
    calls(&mut read, OpKind::Mget, 250, 6_000);
    let mget = read.kind_mut(OpKind::Mget);
    mget.prim_ops = 1000;
    (mget.hits, mget.misses) = (990, 10);
    (mget.errors, mget.retries) = (2, 3);
    mget.first_error = Some("engine: busy\tretry later".to_string());
    let mut key = key("fill-read", "skiplist", 2);
    (key.batch, key.batched) = (4, true);
    let repeats = vec![RepeatRun {
        phases: vec![
            phase("fill", 250, 1000, 500_000_000, 116_000),
            phase("read", 250, 1000, 250_000_000, 0),
        ],
        thread_units: vec![260, 240],
        load: None,
        latency: Some(RepeatLatency::of([&fill, &read])),
        client_cpu: None,
    }];
    point(
        key,
        PointStatus::Failed("specs/fill-read.json:12: mget failed: engine: busy".to_string()),
        repeats,
        vec![("fill".to_string(), fill), ("read".to_string(), read)],
    )
}

/// An open-loop point found by an SLO search: response times, a schedule, a warm-up.
fn open_loop() -> PointResult {
    let mut rec = Recorder::new();
    calls(&mut rec, OpKind::Get, 400, 200_000);
    responses(&mut rec, OpKind::Get, 400, 200_000, 50_000);
    rec.kind_mut(OpKind::Get).hits = 400;
    let mut pace = PaceStats::default();
    for i in 0..380 {
        pace.accuracy.record(2_000 + i * 13).unwrap();
    }
    (pace.waited, pace.late, pace.max_lag_ns, pace.final_lag_ns) = (380, 20, 900_000, 12_000);
    rec.add_pace(&pace);
    let mut key = key("mixed", "sim", 1);
    key.rate = Some(Rate::units(400.0));
    key.arrival = Arrival::Poisson;
    let mut p = point(
        key,
        PointStatus::Ok,
        vec![RepeatRun {
            phases: vec![PhaseRun {
                warmup_units: 37,
                ..phase("run", 400, 400, 1_010_000_000, 0)
            }],
            thread_units: vec![437],
            load: None,
            latency: Some(RepeatLatency::of([&rec])),
            client_cpu: None,
        }],
        vec![("run".to_string(), rec)],
    );
    let probe = |target: f64, achieved: f64, value_ns: Option<u64>, pass: bool| slo::Probe {
        target,
        achieved,
        value_ns,
        final_lag_ns: if pass { 12_000 } else { 40_000_000 },
        pass,
    };
    p.slo = Some(SloReport {
        slo: Slo::parse("get:p99<2ms").unwrap(),
        probe_secs: 1.0,
        capacity: 4_000.0,
        probes: vec![
            probe(4_000.0, 3_100.0, Some(9_000_000), false),
            probe(2_000.0, 1_990.0, Some(3_000_000), false),
            probe(1_000.0, 998.0, Some(1_500_000), true),
            probe(400.0, 399.5, None, true),
        ],
        best: Some(1_000.0),
    });
    p
}

/// A growing-values point: epoch 2 in main mode over two repeats.
fn epoch() -> PointResult {
    let mut recs = [Recorder::new(), Recorder::new()];
    calls(&mut recs[0], OpKind::Get, 200, 1_500);
    calls(&mut recs[1], OpKind::Get, 200, 1_700);
    calls(&mut recs[0], OpKind::Append, 100, 3_000);
    calls(&mut recs[1], OpKind::Append, 100, 3_300);
    let figures: Vec<RepeatFigures> = recs
        .iter()
        .zip([400_000_000, 450_000_000])
        .map(|(rec, wall)| RepeatFigures::of(rec, 300, wall))
        .collect();
    let mut rec = Recorder::new();
    for r in &recs {
        rec.merge(r);
    }
    let mut key = key("mixed", "skiplist", 1);
    let tag = EpochTag {
        number: 2,
        mode: EpochMode::Main,
    };
    key.epoch = Some(tag);
    key.sweep = Some(("value_kb".to_string(), SweepValue::Float(1.5)));
    let repeats = [400_000_000, 450_000_000]
        .into_iter()
        .zip(&recs)
        .map(|(wall, rec)| RepeatRun {
            phases: vec![phase("run", 300, 300, wall, 0)],
            thread_units: vec![300],
            load: None,
            latency: Some(RepeatLatency::of([rec])),
            client_cpu: None,
        })
        .collect();
    let mut p = point(key, PointStatus::Ok, repeats, vec![("run".to_string(), rec)]);
    p.epoch = Some(Box::new(EpochInfo {
        tag,
        records: 1000,
        volume_bytes: 2_400_000,
        value_sizes: SizeSnapshot {
            count: 1000,
            total: 2_384_000,
            min: 100,
            max: 9_000,
            p50: 2_000,
            p90: 4_500,
            p99: 8_100,
            bins: vec![(100, 200), (2_000, 600), (4_500, 190), (9_000, 10)],
        },
        skipped_extends: 7,
        target_records: None,
        dump: None,
        data_hash: Some(0x5eed_cafe),
        intervals: Intervals::of(&figures),
    }));
    p
}

/// A `--verify` point whose checks found a lost write (twice) and a stale read.
fn verified() -> PointResult {
    let mut p = closed_loop();
    p.key = key("verify", "sim", 2);
    let example = |kind, final_pass, expected: &str, got: &str| Example {
        kind,
        key: "user\\x0012".to_string(),
        expected: expected.to_string(),
        got: got.to_string(),
        final_pass,
    };
    p.verify = Some(VerifyReport {
        reads: 1_200,
        final_keys: 1_000,
        counts: [2, 1, 0, 0, 0],
        examples: vec![
            example(Anomaly::LostWrite, true, "w1.5", "absent"),
            example(Anomaly::StaleRead, false, "w2.9 or w3.1", "w1.5"),
        ],
        injected: None,
    });
    p
}

/// A point Ctrl-C stopped before it measured anything.
fn interrupted() -> PointResult {
    point(key("mixed", "sim", 2), PointStatus::Interrupted, Vec::new(), Vec::new())
}

fn run_info() -> RunInfo {
    RunInfo {
        version: "9.8.7-fixture".to_string(),
        workloads: vec![
            ("mixed".to_string(), PathBuf::from("workloads/mixed.lua")),
            ("fill-read".to_string(), PathBuf::from("specs/fill-read.json")),
        ],
        engines: vec![
            ("skiplist".to_string(), "builtin-1".to_string()),
            ("sim".to_string(), "sim-2".to_string()),
        ],
        engine_options: vec![(
            "sim".to_string(),
            vec![("service".to_string(), "exp:200us".to_string())],
        )],
        threads: vec![1, 2],
        connections: vec![1, 16],
        pipeline: vec![1, 4],
        size_classes: None,
        batch: None,
        budget: Budget::Ops(1000),
        repeat: 2,
        seed: 42,
        users: 100,
        items: 1000,
        load_once: false,
        settle: true,
        load_threads: Some(2),
        timeline: Some(0.5),
        data_dir: Some(PathBuf::from("/data/kvmark")),
        started_unix: T0,
        scale: None,
        command: ["kvmark", "--ops", "1000", "--timeline", "0.5", "workloads/mixed.lua"]
            .map(String::from)
            .to_vec(),
        probes: vec![
            Probe {
                name: "system".to_string(),
                entries: vec![
                    ("cpu".to_string(), "Fixture CPU 3000 @ 3.00GHz".to_string()),
                    ("cores".to_string(), "8".to_string()),
                    ("memory".to_string(), "16.0 GiB".to_string()),
                ],
            },
            Probe {
                name: "build".to_string(),
                entries: vec![
                    ("profile".to_string(), "release".to_string()),
                    ("rustc".to_string(), "rustc 1.87.0 (fixture)".to_string()),
                ],
            },
        ],
        rates: vec![Rate::units(400.0)],
        arrival: Arrival::Poisson,
        warmup: Some(Duration::from_millis(100)),
        slo: Some((Slo::parse("get:p99<2ms").unwrap(), 1.0)),
    }
}

/// What a [`Sample`] borrows, owned.
struct FixtureSample {
    phase: String,
    metrics: Vec<(String, f64)>,
    latency: Option<Recorder>,
    start_s: f64,
    elapsed_s: f64,
}

/// The live samples of one point: a seed sample (no latency), then two intervals of
/// its first phase, each with half of the phase's calls (and response times, when the
/// point has them).
fn samples_of(seq: usize, p: &PointResult) -> Vec<FixtureSample> {
    let mut out = Vec::new();
    if p.load().is_some() {
        out.push(FixtureSample {
            phase: "seed".to_string(),
            metrics: vec![("seed_keys_per_s".to_string(), 25_000.0)],
            latency: None,
            start_s: 0.0,
            elapsed_s: 0.04,
        });
    }
    let Some((name, rec)) = p.phases.first() else {
        return out;
    };
    for half in 0..2u64 {
        let mut part = Recorder::new();
        for (kind, stats) in rec.used() {
            let (n, base) = (stats.count() / 2, 1_000 * (seq as u64 + half + 1));
            calls(&mut part, kind, n, base);
            if stats.resp.is_some() {
                responses(&mut part, kind, n, base, 50_000);
            }
        }
        let start = 0.5 * half as f64;
        out.push(FixtureSample {
            phase: name.clone(),
            metrics: vec![
                ("wu_per_s".to_string(), 400.0 + 25.5 * half as f64),
                ("get_p99_ns".to_string(), 5_100.0),
                ("rss_bytes".to_string(), 1e16),
            ],
            latency: Some(part),
            start_s: start,
            elapsed_s: start + 0.5,
        });
    }
    out
}

fn points() -> Vec<PointResult> {
    vec![
        closed_loop(),
        two_phases_failed(),
        open_loop(),
        epoch(),
        interrupted(),
        verified(),
    ]
}

fn outcome(points: &[PointResult]) -> RunOutcome {
    RunOutcome {
        rows: points.iter().map(SummaryRow::of).collect(),
        interrupted: true,
        bad_points: points.iter().filter(|p| p.is_bad()).count(),
        checked_points: 0,
        other_errors: vec!["engine sim: closing the store: 1 session(s) still open".to_string()],
    }
}

/// Opens `kind` on its bundle file in `dir` and sends it the whole fixture run.
fn render(kind: &SinkKind, dir: &Path) -> PathBuf {
    let path = dir.join(kind.bundle);
    let mut sink = (kind.open)(Some(&path)).unwrap();
    sink.begin(&run_info()).unwrap();
    let points = points();
    for (i, p) in points.iter().enumerate() {
        let seq = i + 1;
        for s in samples_of(seq, p) {
            let sample = Sample {
                point: &p.key,
                point_seq: seq,
                repeat: 1,
                phase: &s.phase,
                start_s: s.start_s,
                elapsed_s: s.elapsed_s,
                start_unix: T0 + 10.0 * seq as f64 + s.start_s,
                metrics: &s.metrics,
                latency: s.latency.as_ref(),
            };
            sink.sample(&sample).unwrap();
        }
        sink.point(p).unwrap();
    }
    sink.end(&outcome(&points)).unwrap();
    drop(sink);
    path
}

// ---- reading the output back -----------------------------------------------------------

/// The text of a file, or of every file in a directory under `=== NAME ===` lines.
fn snapshot(path: &Path) -> String {
    if !path.is_dir() {
        return normalise(&std::fs::read_to_string(path).unwrap());
    }
    let mut names: Vec<String> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = String::new();
    for name in names {
        out.push_str(&format!("=== {name} ===\n"));
        out.push_str(&normalise(&std::fs::read_to_string(path.join(&name)).unwrap()));
    }
    out
}

/// Makes output comparable across builds: kvmark's own version (from Cargo.toml) becomes
/// `@VERSION@`, and each compressed histogram of an interval log becomes what it
/// decodes to, since the compressed bytes depend on the zlib in use and the figures
/// do not.
fn normalise(text: &str) -> String {
    let text = text.replace(
        &format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION")),
        "\"version\": \"@VERSION@\"",
    );
    let mut out = String::new();
    for line in text.lines() {
        match line.rsplit_once(',') {
            Some((head, payload)) if !line.starts_with('#') && payload.starts_with("HISTF") => {
                out.push_str(&format!("{head},[{}]\n", decode(payload)));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// A base64 V2-deflate histogram as "count=N min=.. p50=.. p99=.. max=..".
fn decode(payload: &str) -> String {
    let bytes = base64::engine::general_purpose::STANDARD.decode(payload).unwrap();
    let h: hdrhistogram::Histogram<u64> = Deserializer::new().deserialize(&mut Cursor::new(bytes)).unwrap();
    let s = LatencySummary::of(&h);
    format!(
        "count={} min={} p50={} p99={} max={}",
        s.count,
        s.min,
        s.p50(),
        s.p99(),
        s.max
    )
}

/// Where two texts first part, for the failure message.
fn first_difference(expected: &str, actual: &str) -> String {
    let (mut e, mut a) = (expected.lines(), actual.lines());
    for n in 1.. {
        match (e.next(), a.next()) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                return format!(
                    "at line {n}:\n  expected: {}\n  actual:   {}\n",
                    x.unwrap_or("(end)"),
                    y.unwrap_or("(end)")
                );
            }
        }
    }
    unreachable!("the texts differ")
}

// ---- the tests -------------------------------------------------------------------------

#[test]
fn each_sink_matches_its_snapshot() {
    let bless = std::env::var_os(BLESS).is_some_and(|v| v == "1");
    let mut mismatched = Vec::new();
    for kind in &SINKS {
        let dir = tempfile::tempdir().unwrap();
        let actual = snapshot(&render(kind, dir.path()));
        let expected_path = fixtures().join(format!("{}.expected", kind.name));
        if bless {
            std::fs::create_dir_all(fixtures()).unwrap();
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; write it with {BLESS}=1 cargo test --release --test sinks",
                expected_path.display()
            )
        });
        if actual != expected {
            let actual_path = std::env::temp_dir().join(format!("kvmark-sink-{}.actual", kind.name));
            std::fs::write(&actual_path, &actual).unwrap();
            mismatched.push(format!(
                "{}: differs from {} {} (actual output in {}; diff them, and if the change is \
                 intended, rerun with {BLESS}=1)",
                kind.name,
                expected_path.display(),
                first_difference(&expected, &actual),
                actual_path.display()
            ));
        }
    }
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
}

#[test]
fn every_snapshot_belongs_to_a_sink() {
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let sink = name.strip_suffix(".expected");
        assert!(
            sink.is_some_and(|s| SinkKind::named(s).is_some()),
            "tests/fixtures/sinks/{name} is no sink's snapshot"
        );
    }
}

#[test]
fn the_report_flags_name_every_sink_and_bundle_file() {
    use clap::CommandFactory;
    let cmd = kvmark::cli::Cli::command();
    let help = |long: &str| {
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .unwrap_or_else(|| panic!("no --{long}"));
        arg.get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default()
    };
    let (report, report_dir) = (help("report"), help("report-dir"));
    for kind in &SINKS {
        assert!(
            report.contains(kind.name),
            "--report's help leaves out {}: {report}",
            kind.name
        );
        assert!(
            report_dir.contains(kind.bundle),
            "--report-dir's help leaves out {}: {report_dir}",
            kind.bundle
        );
    }
}
