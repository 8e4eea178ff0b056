//! The timeline sampler's cost to the workers, measured in one process: short
//! measurements of the same point alternate between unsampled and sampled (with
//! the timeline and histogram logs written), and the result is the median of the
//! ratios of adjacent pairs. Alternating every fraction of a second cancels the
//! drift of a shared machine far better than comparing whole runs.
//!
//! cargo bench --bench sampler -- [PAIRS] [SECS] [INTERVAL] [THREADS] [WORKLOAD] [SINKS]
//! (defaults: 60 pairs of 0.5 s at --timeline 0.1, one thread, workloads/null.lua,
//! sinks `timeline,hdr`; give `timeline` or `hdr` alone to see what each costs)

mod common;

use std::path::PathBuf;

use common::{Pairs, arg, measure};
use kvmark::cli::RunArgs;
use kvmark::probe::ProbeSet;
use kvmark::report::setup::{SamplerUse, SinkKind, SinkSpec};

fn main() {
    let args = common::args();
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
    let sampled_sinks = || {
        sink_names
            .split(',')
            .map(|name| match SinkKind::named(name) {
                Some(kind) if kind.sampler != SamplerUse::None => SinkSpec {
                    kind,
                    path: Some(out.path().join(kind.bundle)),
                },
                _ => panic!("sinks are timeline and/or hdr, not {name}"),
            })
            .collect::<Vec<_>>()
    };

    println!(
        "sampler cost: {pairs} pairs of {secs} s measurements of {} on {threads} thread(s), \
         without and with --timeline {interval} (sinks: {sink_names})",
        workload.display()
    );
    let p = Pairs::run(
        pairs,
        || measure(&plain, Vec::new()),
        || measure(&sampled, sampled_sinks()),
    );
    let samples = std::fs::read_to_string(out.path().join("timeline.tsv"))
        .map(|t| t.lines().filter(|l| l.split('\t').nth(7) == Some("wu_per_s")).count())
        .unwrap_or(0);
    let m = p.ratio();
    println!(
        "median wu/s without {:.0}, with {:.0}; {samples} timeline samples in the last sampled measurement",
        p.a, p.b
    );
    println!(
        "median ratio with/without {m:.4} ({}): cost {:.2}%",
        p.spread(),
        (1.0 - m) * 100.0
    );
}
