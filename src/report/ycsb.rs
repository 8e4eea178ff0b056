//! `ycsb`: YCSB's own output layout, so scripts that parse YCSB's results read
//! kvmark's. Per timed phase of each point, an `[OVERALL]` block (RunTime(ms),
//! Throughput(ops/sec)), then per operation kind `Operations`, `AverageLatency(us)`,
//! `MinLatency(us)`, `MaxLatency(us)`, `95thPercentileLatency(us)`,
//! `99thPercentileLatency(us)` and `Return=STATUS` counts, as
//! `[SECTION], METRIC, VALUE` lines.
//!
//! A block is one consistent set, as YCSB prints for one run, also with `--repeat`
//! above 1: the repeats count as one run laid end to end. `RunTime(ms)` is the sum of
//! the repeats' wall times, every section's counts and latencies are over all repeats
//! (the histograms are merged, never averaged), and `Throughput(ops/sec)` is the
//! units of all repeats over that summed time: YCSB's operations per second, a
//! read-modify-write counting once, so with one call per unit it is the sections'
//! `Operations` over `RunTime(ms)` (to RunTime's rounding to whole milliseconds). It
//! is the pooled rate, not the median of the repeats' rates that the console shows;
//! the spread over repeats is in the other reports.
//!
//! Operation names are YCSB's: get is READ, put is UPDATE (INSERT in a phase named
//! `load`, YCSB's load), scan is SCAN, del is DELETE, append is EXTEND (YCSB-IVS);
//! kvmark's other verbs keep their names in capitals. A get that found nothing is
//! `Return=NOT_FOUND`, an engine error `Return=ERROR`, the rest `Return=OK`. In open
//! loop the response times (from each operation's intended start) follow as
//! `[Intended-READ]`, ... as YCSB names them. With `--size-classes` each kind's
//! value-size classes follow it as `[UPDATE<=4096]`, `[READ>65536]`, ... A point's
//! header line starts with `#`, which YCSB's own parsers skip like its other
//! non-bracket lines.

use std::io::{self, Write};

use super::{RunInfo, Sink};
use crate::metrics::{LatencySet, LatencySummary, OpKind};
use crate::result::{PointResult, RunOutcome, per_sec};
use crate::workload::ycsb::LOAD_PHASE;

/// Writes YCSB-format blocks to any writer.
pub struct Ycsb {
    out: Box<dyn Write + Send>,
}

impl Ycsb {
    /// A ycsb sink writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Ycsb { out }
    }
}

/// YCSB's name for the operations of `kind` in phase `phase`.
pub fn op_name(kind: OpKind, phase: &str) -> String {
    match kind {
        OpKind::Get => "READ".into(),
        OpKind::Put if phase == LOAD_PHASE => "INSERT".into(),
        OpKind::Put => "UPDATE".into(),
        OpKind::Scan => "SCAN".into(),
        OpKind::Del => "DELETE".into(),
        OpKind::Append => "EXTEND".into(),
        other => other.name().to_ascii_uppercase(),
    }
}

/// Nanoseconds as YCSB's whole microseconds.
fn us(ns: u64) -> u64 {
    ns / 1000
}

impl Sink for Ycsb {
    fn begin(&mut self, _info: &RunInfo) -> io::Result<()> {
        Ok(())
    }

    fn point(&mut self, p: &PointResult) -> io::Result<()> {
        for (i, (phase, rec)) in p.phases.iter().enumerate() {
            // Sums over the repeats, like the sections' counts below, so that the
            // block reads as one run (see the module doc).
            let runs = p.repeats.iter().filter_map(|r| r.phases.get(i));
            let (units, wall_ns) = runs.fold((0u64, 0u64), |(u, w), r| {
                (u.saturating_add(r.units), w.saturating_add(r.wall_ns))
            });
            writeln!(
                self.out,
                "# kvmark {} phase {} status {}",
                p.key.label(),
                phase,
                p.status.word()
            )?;
            writeln!(
                self.out,
                "[OVERALL], RunTime(ms), {}",
                (wall_ns as f64 / 1e6).round() as u64
            )?;
            writeln!(self.out, "[OVERALL], Throughput(ops/sec), {}", per_sec(units, wall_ns))?;
            for set in [LatencySet::Service, LatencySet::Response] {
                for row in rec.rows() {
                    let (kind, st) = (row.kind, row.stats);
                    let Some(h) = st.latency(set) else {
                        continue;
                    };
                    let s = LatencySummary::of(h);
                    // A value-size class follows its kind as `[UPDATE<=4096]`.
                    let class = row.label.strip_prefix(kind.name()).unwrap_or("");
                    let name = match set {
                        LatencySet::Service => format!("{}{class}", op_name(kind, phase)),
                        LatencySet::Response => format!("Intended-{}{class}", op_name(kind, phase)),
                    };
                    // Only a get is one lookup per call (an mget's misses count keys);
                    // a class holds only reads that found their value.
                    let not_found = if kind == OpKind::Get { st.misses } else { 0 };
                    let ok = s.count.saturating_sub(st.errors + not_found);
                    let o = &mut self.out;
                    writeln!(o, "[{name}], Operations, {}", s.count)?;
                    writeln!(o, "[{name}], AverageLatency(us), {}", s.mean / 1000.0)?;
                    writeln!(o, "[{name}], MinLatency(us), {}", us(s.min))?;
                    writeln!(o, "[{name}], MaxLatency(us), {}", us(s.max))?;
                    writeln!(
                        o,
                        "[{name}], 95thPercentileLatency(us), {}",
                        us(h.value_at_quantile(0.95))
                    )?;
                    writeln!(o, "[{name}], 99thPercentileLatency(us), {}", us(s.p99()))?;
                    if set == LatencySet::Response {
                        continue;
                    }
                    writeln!(o, "[{name}], Return=OK, {ok}")?;
                    if not_found > 0 {
                        writeln!(o, "[{name}], Return=NOT_FOUND, {not_found}")?;
                    }
                    if st.errors > 0 {
                        writeln!(o, "[{name}], Return=ERROR, {}", st.errors)?;
                    }
                }
            }
        }
        self.out.flush()
    }

    fn end(&mut self, _outcome: &RunOutcome) -> io::Result<()> {
        self.out.flush()
    }
}

/// Reads YCSB's output layout, as a user's script does: every `[SECTION], METRIC,
/// VALUE` line in order; other lines are skipped. Shared by the tests that check that
/// kvmark's output and a sample of YCSB's parse alike.
pub fn parse(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('[')?;
            let (section, rest) = rest.split_once("], ")?;
            let (metric, value) = rest.split_once(", ")?;
            Some((section.to_string(), metric.to_string(), value.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_ycsb() {
        assert_eq!(op_name(OpKind::Put, "load"), "INSERT");
        assert_eq!(op_name(OpKind::Put, "run"), "UPDATE");
        assert_eq!(op_name(OpKind::Get, "run"), "READ");
        assert_eq!(op_name(OpKind::Append, "run"), "EXTEND");
        assert_eq!(op_name(OpKind::DeleteRange, "run"), "DELETE_RANGE");
    }

    #[test]
    fn lines_parse() {
        let rows = parse("Loading workload...\n[OVERALL], RunTime(ms), 10\n[READ], Return=OK, 5\n");
        assert_eq!(
            rows,
            [
                ("OVERALL".into(), "RunTime(ms)".into(), "10".into()),
                ("READ".into(), "Return=OK".into(), "5".into())
            ]
        );
    }
}
