//! Writes the report directories of a scaled-out run the size bench/merge.sh merges
//! (docs/benchmarks-history.md, "Merging segments"): SEGMENTS segments of one point, each a 1-hour
//! timed phase sampled every second, with four operation kinds (an interval histogram
//! each per second), their timeline metrics and ten probe readings per sample. The
//! directories are written by kvmark's own sinks (`report::setup::open_bundle`), so
//! they are what real segments write.
//!
//! cargo bench --bench merge_input -- DIR [SEGMENTS] [SECONDS]

use std::path::{Path, PathBuf};

use kvmark::kv::pace::Arrival;
use kvmark::metrics::{OpKind, Recorder};
use kvmark::report::{RunInfo, ScaleInfo, setup};
use kvmark::result::{PhaseRun, PointKey, PointResult, PointStatus, RepeatLatency, RepeatRun, RunOutcome, SummaryRow};
use kvmark::run::observer::{Observer, Sample};
use kvmark::run::segment::Segment;
use kvmark::workload::Budget;

const KINDS: [OpKind; 4] = [OpKind::Get, OpKind::Put, OpKind::Del, OpKind::Range];
/// Calls per kind per second per segment (recorded values, spread over a tail).
const CALLS: u64 = 400;
const START: f64 = 1_800_000_000.0;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let dir = PathBuf::from(
        args.first()
            .expect("usage: cargo bench --bench merge_input -- DIR [SEGMENTS] [SECONDS]"),
    );
    let segments: usize = args.get(1).map_or(16, |n| n.parse().unwrap());
    let seconds: usize = args.get(2).map_or(3600, |n| n.parse().unwrap());
    for i in 0..segments {
        let seg_dir = dir.join(format!("segment-{i:02}"));
        std::fs::create_dir_all(&seg_dir).unwrap();
        write_segment(
            &seg_dir,
            Segment {
                index: i,
                count: segments,
            },
            seconds,
        );
    }
}

fn write_segment(dir: &Path, segment: Segment, seconds: usize) {
    let opened = setup::open_bundle(dir.to_path_buf(), "[bench]\n").unwrap();
    let reporter = opened.reporter;
    let info = RunInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        workloads: vec![("mixed".to_string(), PathBuf::from("workloads/mixed.lua"))],
        engines: vec![("redis".to_string(), "7.0".to_string())],
        engine_options: Vec::new(),
        threads: vec![4],
        connections: vec![1],
        pipeline: vec![1],
        size_classes: None,
        batch: None,
        budget: Budget::Secs(seconds as f64),
        repeat: 1,
        seed: 1,
        users: 100_000,
        items: 100_000,
        load_once: false,
        settle: false,
        load_threads: None,
        timeline: Some(1.0),
        data_dir: None,
        started_unix: START,
        command: vec!["kvmark".to_string()],
        probes: Vec::new(),
        rates: Vec::new(),
        arrival: Arrival::Constant,
        warmup: None,
        slo: None,
        scale: Some(ScaleInfo {
            segment,
            start_at_unix_ns: Some((START * 1e9) as u64),
            job: None,
            host: format!("client{}", segment.index),
            clock_sync: "kernel: synchronised".to_string(),
            shared_tag: Some("s16_bench".to_string()),
        }),
    };
    reporter.begin(&info);
    let key = PointKey {
        workload: "mixed".to_string(),
        workload_path: PathBuf::from("workloads/mixed.lua"),
        engine: "redis".to_string(),
        engine_version: "7.0".to_string(),
        threads: 4,
        connections: 1,
        pipeline: 1,
        batch: 1,
        batched: false,
        sweep: None,
        rate: None,
        arrival: Arrival::Constant,
        epoch: None,
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (segment.index as u64 + 1));
    let mut total = Recorder::new();
    let mut interval = Recorder::new();
    // Segments start a few milliseconds apart, as synchronised clocks do.
    let skew = segment.index as f64 * 0.003;
    for s in 0..seconds {
        interval.reset();
        for kind in KINDS {
            let st = interval.kind_mut(kind);
            for _ in 0..CALLS {
                let u = rng.next().max(1e-9);
                st.hist
                    .saturating_record((20_000.0 * (1.0 + (-u.ln()).powf(2.5))) as u64);
            }
            st.prim_ops += CALLS;
        }
        let mut metrics = vec![
            ("wu_per_s".to_string(), (CALLS * 4) as f64),
            ("ops_per_s".to_string(), (CALLS * 4) as f64),
        ];
        for (kind, st) in interval.used() {
            let name = kind.name();
            metrics.push((format!("op.{name}.count"), st.count() as f64));
            metrics.push((format!("op.{name}.p50_ns"), st.hist.value_at_quantile(0.5) as f64));
            metrics.push((format!("op.{name}.p99_ns"), st.hist.value_at_quantile(0.99) as f64));
            metrics.push((format!("op.{name}.max_ns"), st.hist.max() as f64));
        }
        for m in 0..10 {
            metrics.push((format!("sys.metric{m}"), 100.0 * rng.next()));
        }
        reporter.sample(&Sample {
            point: &key,
            point_seq: 1,
            repeat: 1,
            phase: "run",
            start_s: s as f64,
            elapsed_s: s as f64 + 1.0,
            start_unix: START + skew + s as f64,
            metrics: &metrics,
            latency: Some(&interval),
        });
        total.merge(&interval);
    }
    let units = seconds as u64 * CALLS * 4;
    let point = PointResult {
        key,
        status: PointStatus::Ok,
        repeats: vec![RepeatRun {
            phases: vec![PhaseRun {
                name: "run".to_string(),
                start_unix_ns: ((START + skew) * 1e9) as u64,
                wall_ns: seconds as u64 * 1_000_000_000,
                units,
                prim_ops: units,
                warmup_units: 0,
                bytes: 0,
                trend: Vec::new(),
            }],
            thread_units: vec![units / 4; 4],
            load: None,
            latency: Some(RepeatLatency::of([&total])),
            client_cpu: None,
        }],
        merged: total.clone(),
        phases: vec![("run".to_string(), total)],
        slo: None,
        epoch: None,
        verify: None,
    };
    reporter.point(&point);
    reporter.end(&RunOutcome {
        rows: vec![SummaryRow::of(&point)],
        ..RunOutcome::default()
    });
    assert!(reporter.errors().is_empty(), "{:?}", reporter.errors());
}
