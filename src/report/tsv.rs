//! `tsv`: one row per operation kind (and latency set, and value-size class with
//! `--size-classes`: `op` is then `put<=4096`) per phase per grid point,
//! written as each point finishes. keybench's columns come first, in its order and with its
//! meaning, so its scripts keep working: `hit_rate` is the phase's get hit rate and `err_rate`
//! the kind's share of failed calls, both in percent; a point without a sweep has an empty
//! `sweep_param` and `sweep_value` 1. kvmark's own columns follow; the last, `checks`,
//! names the self-checks the point failed (see [`crate::result::checks`]), joined by
//! `,`, and is empty when every check passed.

use std::io::{self, Write};

use super::figures::{err_rate, phase_views};
use super::{RunInfo, Sink, epochs, tsv_field};
use crate::metrics::{LatencySet, LatencySummary};
use crate::result::checks::{self, Warning};
use crate::result::{PointResult, RunOutcome};

/// Every column, in order. The first 15 are keybench's; the growing-value ones
/// ([`epochs::TSV_COLUMNS`]) follow kvmark's own, and `checks` comes last.
pub const COLUMNS: [&str; 66] = concat(concat::<48, 17, 65>(OWN_COLUMNS, epochs::TSV_COLUMNS), ["checks"]);

/// `a` then `b` (a compile error unless `C` is the sum of their lengths).
const fn concat<const A: usize, const B: usize, const C: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
) -> [&'static str; C] {
    assert!(A + B == C, "the column counts do not add up");
    let mut out = [""; C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < C {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

/// The columns before the growing-value ones.
const OWN_COLUMNS: [&str; 48] = [
    "workload",
    "engine",
    "threads",
    "sweep_param",
    "sweep_value",
    "op",
    "count",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "hit_rate",
    "err_rate",
    "wu_per_s",
    "ops_per_s",
    // kvmark's own, after keybench's.
    "phase",
    "batch",
    "connections",
    "pipeline",
    "engine_version",
    "status",
    "repeats",
    "mean_ns",
    "min_ns",
    "p90_ns",
    "p9999_ns",
    "prim_ops",
    "hits",
    "misses",
    "errors",
    "retries",
    "rows",
    "wu_per_s_min",
    "wu_per_s_max",
    "ops_per_s_min",
    "ops_per_s_max",
    "units",
    "wall_s",
    "seed_keys",
    "seed_s",
    "seed_keys_per_s",
    "latency",
    "rate",
    "arrival",
    "achieved",
    "warmup_units",
    "bytes_per_s",
    "skipped",
];

/// Writes point rows to any writer.
pub struct Tsv {
    out: Box<dyn Write + Send>,
}

impl Tsv {
    /// A tsv sink writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Tsv { out }
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

fn dash(n: usize) -> impl Iterator<Item = String> {
    std::iter::repeat_n("-".to_string(), n)
}

impl Sink for Tsv {
    fn begin(&mut self, _info: &RunInfo) -> io::Result<()> {
        writeln!(self.out, "{}", COLUMNS.join("\t"))?;
        self.out.flush()
    }

    fn point(&mut self, p: &PointResult) -> io::Result<()> {
        let key = &p.key;
        let (param, value) = key.sweep_columns();
        let load = p.load();
        // The same on every row of the point.
        let checks: Vec<&str> = checks::warnings(p).iter().map(Warning::name).collect();
        let checks = checks.join(",");
        for view in phase_views(p) {
            // keybench's hit_rate: the phase's get hit rate in percent, on every row
            // (0 without lookups); each kind's own hits and misses are kvmark's columns.
            let phase_hits = 100.0 * view.rec.hit_rate().unwrap_or(0.0);
            // One row per operation kind (and value-size class of it) and latency set
            // (service time; response time too in open-loop runs).
            let rows = view.rec.rows();
            let kinds: Vec<_> = rows
                .iter()
                .flat_map(|row| {
                    (row.stats.latency_sets()).map(move |(set, h)| (row, set, row.stats, LatencySummary::of(h)))
                })
                .collect();
            // A point that recorded nothing (it failed early) still gets a row, so its
            // status is visible.
            let rows: Vec<Option<_>> = if kinds.is_empty() {
                vec![None]
            } else {
                kinds.iter().map(Some).collect()
            };
            for op in rows {
                let mut c: Vec<String> = Vec::with_capacity(COLUMNS.len());
                c.extend([
                    tsv_field(&key.workload),
                    tsv_field(&key.engine),
                    key.threads.to_string(),
                    tsv_field(&param),
                    tsv_field(&value),
                ]);
                match op {
                    Some((row, _, stats, s)) => {
                        c.extend([
                            tsv_field(&row.label),
                            s.count.to_string(),
                            s.p50().to_string(),
                            s.p99().to_string(),
                            s.at("p99.9").unwrap_or(0).to_string(),
                            s.max.to_string(),
                            format!("{:.3}", phase_hits),
                            format!("{:.3}", 100.0 * err_rate(stats.errors, s.count)),
                        ]);
                    }
                    None => {
                        c.extend(["-".to_string(), "0".to_string()]);
                        c.extend(dash(4));
                        c.push(format!("{:.3}", phase_hits));
                        c.push(format!("{:.3}", 0.0));
                    }
                }
                c.extend([
                    format!("{:.3}", view.wu.median),
                    format!("{:.3}", view.ops.median),
                    tsv_field(view.name),
                    key.batch.to_string(),
                    key.connections.to_string(),
                    key.pipeline.to_string(),
                    tsv_field(&key.engine_version),
                    p.status.word().to_string(),
                    p.repeats.len().to_string(),
                ]);
                match op {
                    Some((_, _, stats, s)) => c.extend([
                        format!("{:.1}", s.mean),
                        s.min.to_string(),
                        s.at("p90").unwrap_or(0).to_string(),
                        s.at("p99.99").unwrap_or(0).to_string(),
                        stats.prim_ops.to_string(),
                        stats.hits.to_string(),
                        stats.misses.to_string(),
                        stats.errors.to_string(),
                        stats.retries.to_string(),
                        stats.rows.to_string(),
                    ]),
                    None => c.extend(dash(10)),
                }
                c.extend([
                    format!("{:.3}", view.wu.min),
                    format!("{:.3}", view.wu.max),
                    format!("{:.3}", view.ops.min),
                    format!("{:.3}", view.ops.max),
                    view.units.to_string(),
                    format!("{:.6}", view.wall_s),
                ]);
                match &load {
                    Some(sd) => c.extend([
                        sd.keys.to_string(),
                        format!("{:.6}", sd.wall_ns as f64 / 1e9),
                        format!("{:.3}", sd.keys_per_sec()),
                    ]),
                    None => c.extend(dash(3)),
                }
                c.extend([
                    match op {
                        Some((_, set, _, _)) => set.tag().to_string(),
                        None => "-".to_string(),
                    },
                    key.rate
                        .as_ref()
                        .map_or_else(|| "-".to_string(), |r| tsv_field(&r.text)),
                    if key.rate.is_some() {
                        key.arrival.name().to_string()
                    } else {
                        "-".to_string()
                    },
                    opt(p.achieved().map(|a| a.median), 3),
                    p.warmup_units().to_string(),
                    format!("{:.3}", p.bytes_per_sec().median),
                    match op {
                        Some((_, _, stats, _)) => stats.skipped.to_string(),
                        None => "-".to_string(),
                    },
                ]);
                // A class row leaves its kind's interval figures to the kind's row.
                c.extend(epochs::tsv_cells(
                    p,
                    op.map(|(row, _, _, _)| row.kind),
                    op.is_none_or(|(row, set, _, _)| *set == LatencySet::Service && row.class.is_none()),
                ));
                c.push(checks.clone());
                debug_assert_eq!(c.len(), COLUMNS.len());
                writeln!(self.out, "{}", c.join("\t"))?;
            }
        }
        self.out.flush()
    }

    fn end(&mut self, _outcome: &RunOutcome) -> io::Result<()> {
        self.out.flush()
    }
}
