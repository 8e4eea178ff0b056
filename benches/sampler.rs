//! The timeline sampler's cost to the workers, measured in one process: short
//! measurements of the same point alternate between unsampled and sampled (with
//! the timeline and histogram logs written), and the result is the median of the
//! ratios of adjacent pairs. Alternating every fraction of a second cancels the
//! drift of a shared machine far better than comparing whole runs.
//!
//! cargo bench --bench sampler -- [PAIRS] [SECS] [INTERVAL] [THREADS] [WORKLOAD] [SINKS]
//! (defaults: 60 pairs of 0.5 s at --timeline 0.1, one thread, workloads/null.lua,
//! sinks `timeline,hdr`; give `timeline` or `hdr` alone to see what each costs)

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use kvmark::cli::RunArgs;
use kvmark::probe::ProbeSet;
use kvmark::report::setup::{self, Outputs, SinkKind, SinkSpec};
use kvmark::run;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    // `cargo bench` passes --bench; everything else is positional.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let pairs: usize = arg(&args, 0, 60);
    let secs: f64 = arg(&args, 1, 0.5);
    let interval: f64 = arg(&args, 2, 0.1);
    let threads: usize = arg(&args, 3, 1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let workload = args
        .get(4)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("workloads/null.lua"));
    let sink_names = args.get(5).cloned().unwrap_or_else(|| "timeline,hdr".to_string());
    let out = tempfile::tempdir().expect("a temporary directory");

    let plan_with = |timeline: Option<f64>| {
        RunArgs {
            workloads: vec![workload.clone()],
            secs: Some(secs),
            threads: Some(vec![threads]),
            timeline,
            probe: Some(vec!["system".to_string()]),
            ..RunArgs::default()
        }
        .into_plan()
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let plain = plan_with(None);
    let sampled = plan_with(Some(interval));
    assert_eq!(
        sampled.probes,
        ProbeSet {
            system: true,
            build: false
        }
    );
    let abort = Arc::new(AtomicBool::new(false));

    let measure = |plan: &run::Plan, sinks: Vec<SinkSpec>| -> f64 {
        let outputs = Outputs {
            sinks,
            ..Outputs::default()
        };
        let opened = setup::open(&outputs, "").unwrap_or_else(|e| panic!("{e}"));
        let outcome = run::execute(plan, &opened.reporter, &abort);
        assert!(opened.reporter.errors().is_empty(), "{:?}", opened.reporter.errors());
        assert_eq!(outcome.bad_points, 0);
        outcome.rows[0].wu.median
    };
    let sampled_sinks = || {
        sink_names
            .split(',')
            .map(|name| match name {
                "timeline" => SinkSpec {
                    kind: SinkKind::Timeline,
                    path: Some(out.path().join("timeline.tsv")),
                },
                "hdr" => SinkSpec {
                    kind: SinkKind::Hdr,
                    path: Some(out.path().join("hdr")),
                },
                other => panic!("sinks are timeline and/or hdr, not {other}"),
            })
            .collect::<Vec<_>>()
    };

    println!(
        "sampler cost: {pairs} pairs of {secs} s measurements of {} on {threads} thread(s), \
         without and with --timeline {interval} (sinks: {sink_names})",
        workload.display()
    );
    // Warm up both paths once (page cache, allocator, CPU frequency).
    measure(&plain, Vec::new());
    measure(&sampled, sampled_sinks());
    let mut ratios = Vec::with_capacity(pairs);
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        // Alternate the order so a trend inside a pair cancels out.
        let (a, b) = if i % 2 == 0 {
            let a = measure(&plain, Vec::new());
            (a, measure(&sampled, sampled_sinks()))
        } else {
            let b = measure(&sampled, sampled_sinks());
            (measure(&plain, Vec::new()), b)
        };
        ratios.push(b / a);
        without.push(a);
        with.push(b);
    }
    let samples = std::fs::read_to_string(out.path().join("timeline.tsv"))
        .map(|t| t.lines().filter(|l| l.split('\t').nth(7) == Some("wu_per_s")).count())
        .unwrap_or(0);
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    let m = median(&mut ratios);
    println!(
        "median wu/s without {:.0}, with {:.0}; {samples} timeline samples in the last sampled measurement",
        median(&mut without),
        median(&mut with)
    );
    println!(
        "median ratio with/without {m:.4} (quartiles {:.4} .. {:.4}, min {:.4}, max {:.4}): cost {:.2}%",
        q(0.25),
        q(0.75),
        sorted[0],
        sorted[sorted.len() - 1],
        (1.0 - m) * 100.0
    );
}
