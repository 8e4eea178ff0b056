//! What the in-process benchmarks share: positional arguments, and measuring two
//! configurations of a point in alternating short measurements, summarised by the
//! median of the ratios of adjacent pairs. Alternating every fraction of a second
//! cancels the drift of a shared machine far better than comparing whole runs.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use kvmark::report::setup::{self, Outputs, SinkSpec};
use kvmark::run;

/// The positional arguments (`cargo bench` adds `--bench`, which is dropped).
pub fn args() -> Vec<String> {
    std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect()
}

/// Argument `i`, or `default` when absent; an argument that does not parse ends the
/// bench with a message (a typo must not run the default silently).
pub fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    let Some(a) = args.get(i) else { return default };
    a.parse().unwrap_or_else(|_| {
        eprintln!(
            "bench: argument {} '{a}' is not valid here (see the usage at the top of the bench)",
            i + 1
        );
        std::process::exit(2)
    })
}

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Runs `plan` once with `sinks` and returns its median wu/s.
pub fn measure(plan: &run::Plan, sinks: Vec<SinkSpec>) -> f64 {
    let abort = Arc::new(AtomicBool::new(false));
    let outputs = Outputs {
        sinks,
        ..Outputs::default()
    };
    let opened = setup::open(&outputs, "").unwrap_or_else(|e| panic!("{e}"));
    let outcome = run::execute(plan, &opened.reporter, &abort);
    assert!(opened.reporter.errors().is_empty(), "{:?}", opened.reporter.errors());
    assert_eq!(outcome.bad_points, 0);
    outcome.rows[0].wu.median
}

/// Medians of `pairs` alternating measurements of a baseline `a` and a variant `b`
/// (each measured once first, as a warm-up), as wu/s of each and of the ratios b/a.
pub struct Pairs {
    pub a: f64,
    pub b: f64,
    /// Sorted ratios b/a.
    pub ratios: Vec<f64>,
}

impl Pairs {
    /// Measures; the order inside a pair alternates so a trend within a pair cancels.
    pub fn run(pairs: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> Pairs {
        if pairs == 0 {
            eprintln!("bench: give at least 1 pair");
            std::process::exit(2);
        }
        a();
        b();
        let (mut av, mut bv, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..pairs {
            let (x, y) = if i % 2 == 0 {
                let x = a();
                (x, b())
            } else {
                let y = b();
                (a(), y)
            };
            av.push(x);
            bv.push(y);
            ratios.push(y / x);
        }
        ratios.sort_by(f64::total_cmp);
        Pairs {
            a: median(&mut av),
            b: median(&mut bv),
            ratios,
        }
    }

    /// The median ratio b/a.
    pub fn ratio(&self) -> f64 {
        median(&mut self.ratios.clone())
    }

    /// "(quartiles q1 .. q3, min m, max M)" of the ratios.
    pub fn spread(&self) -> String {
        let r = &self.ratios;
        let q = |p: f64| r[((r.len() - 1) as f64 * p).round() as usize];
        format!(
            "quartiles {:.4} .. {:.4}, min {:.4}, max {:.4}",
            q(0.25),
            q(0.75),
            r[0],
            r[r.len() - 1]
        )
    }
}
