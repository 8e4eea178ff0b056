//! Pacing's own cost, measured in one process: short measurements of the null workload
//! alternate between closed loop and paced at a rate no engine reaches (so every unit
//! is behind schedule and issued at once), and the result is the median of the ratios
//! of adjacent pairs: the achieved rate as a fraction of the closed-loop rate.
//!
//! cargo bench --bench pacing -- [PAIRS] [SECS] [RATE] [WORKLOAD]
//! (defaults: 200 pairs of 0.3 s, --rate 1e9, workloads/null.lua, one thread)

mod common;

use std::path::PathBuf;

use common::{Pairs, arg, measure};
use kvmark::cli::RunArgs;

fn main() {
    let args = common::args();
    let pairs: usize = arg(&args, 0, 200);
    let secs: f64 = arg(&args, 1, 0.3);
    let rate: String = arg(&args, 2, "1e9".to_string());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let workload = args
        .get(3)
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("workloads/null.lua"));

    let plan_with = |rate: Option<String>| {
        RunArgs {
            workloads: vec![workload.clone()],
            secs: Some(secs),
            threads: Some(vec![1]),
            rate: rate.map(|r| vec![r]),
            probe: Some(vec!["none".to_string()]),
            ..RunArgs::default()
        }
        .into_plan()
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let closed = plan_with(None);
    let paced = plan_with(Some(rate.clone()));

    println!(
        "pacing cost: {pairs} pairs of {secs} s measurements of {} on one thread, closed loop \
         and --rate {rate}",
        workload.display()
    );
    let p = Pairs::run(pairs, || measure(&closed, Vec::new()), || measure(&paced, Vec::new()));
    println!("median wu/s closed {:.0}, paced {:.0}", p.a, p.b);
    println!("median ratio paced/closed {:.4} ({})", p.ratio(), p.spread());
}
