//! The human report: a header, a latency table per point, throughput, and a summary
//! table when the grid has more than one point. Open-loop points get two tables,
//! service time and response time, and their schedule figures ([`super::openloop`]).

use std::io::{self, Write};

use super::{RunInfo, Sink};
use super::{epochs, openloop, verify};
use crate::metrics::format::{duration_ns, percent, rate};
use crate::metrics::{LatencySet, LatencySummary, QUANTILES, Recorder};
use crate::result::RunOutcome;
use crate::result::{PointResult, PointStatus, SummaryRow};
use crate::workload::Budget;

/// Writes the human report to any writer (stdout or a file).
pub struct Console {
    out: Box<dyn Write + Send>,
    current_workload: Option<String>,
}

impl Console {
    /// A console report written to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Console {
            out,
            current_workload: None,
        }
    }
}

impl Sink for Console {
    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        let engines: Vec<String> = info.engines.iter().map(|(n, _)| n.clone()).collect();
        let budget = match info.budget {
            Budget::Ops(n) => format!("ops={n}"),
            Budget::Secs(s) => format!("secs={s}"),
        };
        writeln!(
            self.out,
            "kvmark {}: {} workload(s), engine={} seed={} repeat={} {budget} users={} items={}{}{}",
            info.version,
            info.workloads.len(),
            engines.join(","),
            info.seed,
            info.repeat,
            info.users,
            info.items,
            if info.load_once { " seed-once" } else { "" },
            if info.settle { " settle" } else { "" },
        )?;
        let threads: Vec<String> = info.threads.iter().map(usize::to_string).collect();
        let batch = match &info.batch {
            Some(b) => b.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
            None => "1 (or the workload's own sweep)".to_string(),
        };
        let connections = match info.connections.as_slice() {
            [1] => String::new(),
            list => format!(
                "  connections: {}",
                list.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
            ),
        };
        let pipeline = match info.pipeline.as_slice() {
            [1] => String::new(),
            list => format!(
                "  pipeline: {}",
                list.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
            ),
        };
        writeln!(
            self.out,
            "threads: {}{connections}{pipeline}  batch: {batch}",
            threads.join(",")
        )?;
        if let Some(c) = &info.size_classes {
            let names: Vec<String> = (0..c.len()).map(|i| c.name(i)).collect();
            writeln!(self.out, "value-size classes (bytes): {}", names.join(" "))?;
        }
        if let Some(s) = &info.scale {
            writeln!(
                self.out,
                "segment: {} on {}{}  clock: {}",
                s.segment.label(),
                s.host,
                match (s.start_at_unix_ns, &s.job) {
                    (Some(ns), _) => format!("  start at: {:.3} (Unix s)", ns as f64 / 1e9),
                    (None, Some(job)) => format!("  job: {}, start met at the server", job.describe()),
                    (None, None) => String::new(),
                },
                s.clock_sync
            )?;
        }
        openloop::header(&mut self.out, info)?;
        for probe in &info.probes {
            writeln!(self.out, "[probe: {}]", probe.name)?;
            let width = probe.entries.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            for (k, v) in &probe.entries {
                writeln!(self.out, "  {k:<width$}  {v}")?;
            }
        }
        self.out.flush()
    }

    fn point(&mut self, p: &PointResult) -> io::Result<()> {
        let out = &mut self.out;
        let key = &p.key;
        if self.current_workload.as_deref() != Some(key.workload.as_str()) {
            writeln!(out, "\n=== {} ===", key.workload)?;
            self.current_workload = Some(key.workload.clone());
        }
        let mut coords = format!("engine={} {} threads={}", key.engine, key.engine_version, key.threads);
        if key.connections != 1 {
            coords.push_str(&format!(" connections={}", key.connections));
        }
        if key.pipeline != 1 {
            coords.push_str(&format!(" pipeline={}", key.pipeline));
        }
        coords.push_str(&format!(" batch={}", key.batch));
        if let Some((param, value)) = &key.sweep
            && param != "batch"
        {
            coords.push_str(&format!(" {param}={value}"));
        }
        if let Some(r) = &key.rate {
            coords.push_str(&format!(" rate={} {}", r.label(), key.arrival));
        }
        coords.push_str(&epochs::coords(p));
        let runs = p.repeats.len();
        writeln!(
            out,
            "\n{coords} (median of {runs} run{})",
            if runs == 1 { "" } else { "s" }
        )?;

        if let Some(load) = p.load() {
            writeln!(
                out,
                "seed: {} keys in {}, {} keys/s, {} thread{}{}",
                load.keys,
                duration_ns(load.wall_ns as f64),
                rate(load.keys_per_sec()),
                load.threads,
                if load.threads == 1 { "" } else { "s" },
                if load.shared { " (seeded once, shared)" } else { "" },
            )?;
        }
        if p.merged.is_empty() {
            openloop::warmup(out, p)?;
            if let Some(report) = &p.slo {
                openloop::slo_evidence(out, report)?;
            }
            verify::console(out, p)?;
            match &p.status {
                PointStatus::Ok => {}
                PointStatus::Failed(msg) => writeln!(out, "FAILED: {msg}")?,
                PointStatus::Interrupted => {
                    writeln!(out, "INTERRUPTED: stopped by Ctrl-C before anything was measured")?
                }
            }
            return out.flush();
        }
        if runs == 0 {
            writeln!(out, "partial figures, up to the failure:")?;
        }
        if p.phases.len() > 1 {
            for (name, rec) in &p.phases {
                writeln!(out, "phase {name}:")?;
                latency_tables(out, rec)?;
            }
            writeln!(out, "all phases:")?;
        }
        latency_tables(out, &p.merged)?;
        if let Some(hit) = p.merged.hit_rate() {
            writeln!(out, "get hit rate: {}", percent(hit))?;
        }
        for (kind, s) in p.merged.used() {
            if s.errors > 0 {
                writeln!(
                    out,
                    "errors: {} {} of {} ({})",
                    kind.name(),
                    s.errors,
                    s.count(),
                    s.first_error.as_deref().unwrap_or("")
                )?;
            }
            if s.skipped > 0 {
                writeln!(
                    out,
                    "skipped: {} {} (the value would have passed --max-value-bytes)",
                    kind.name(),
                    s.skipped
                )?;
            }
            if s.retries > 0 {
                writeln!(
                    out,
                    "retries: {} {} (busy engine, inside the timed region)",
                    kind.name(),
                    s.retries
                )?;
            }
        }
        if runs > 0 {
            throughput(out, p)?;
            openloop::pace(out, p)?;
            epochs::console(out, p)?;
        }
        openloop::warmup(out, p)?;
        if let Some(report) = &p.slo {
            openloop::slo_evidence(out, report)?;
        }
        verify::console(out, p)?;
        for w in crate::result::checks::warnings(p) {
            writeln!(out, "check {}: {}", w.name(), w.message())?;
        }
        match &p.status {
            PointStatus::Ok => {}
            PointStatus::Failed(msg) => writeln!(out, "FAILED: {msg}")?,
            PointStatus::Interrupted => writeln!(out, "INTERRUPTED: figures cover only what ran before Ctrl-C")?,
        }
        out.flush()
    }

    fn end(&mut self, outcome: &RunOutcome) -> io::Result<()> {
        if outcome.rows.len() > 1 {
            summary(&mut self.out, &outcome.rows)?;
        }
        openloop::slo_summary(&mut self.out, &outcome.rows)?;
        epochs::summary(&mut self.out, &outcome.rows)?;
        for e in &outcome.other_errors {
            writeln!(self.out, "error: {e}")?;
        }
        self.out.flush()
    }
}

/// One latency table, or in an open-loop run two: service time, then response time,
/// each under its heading.
fn latency_tables(out: &mut dyn Write, rec: &Recorder) -> io::Result<()> {
    if !rec.has_response() {
        return latency_table(out, rec, LatencySet::Service);
    }
    for set in LatencySet::ALL {
        writeln!(out, "{}:", set.heading())?;
        latency_table(out, rec, set)?;
    }
    Ok(())
}

/// `op count mean p50 p90 p99 p99.9 p99.99 max`, one row per operation kind used (and
/// per value-size class of it, with `--size-classes`).
fn latency_table(out: &mut dyn Write, rec: &Recorder, set: LatencySet) -> io::Result<()> {
    // Wide enough for a size class's label (`append<=65536`).
    let width = rec.rows().iter().map(|r| r.label.len() + 1).fold(13, usize::max);
    write!(out, "{:<width$}{:>10}{:>11}", "op", "count", "mean")?;
    for (label, _) in QUANTILES {
        write!(out, "{label:>11}")?;
    }
    writeln!(out, "{:>11}", "max")?;
    for row in rec.rows() {
        let Some(hist) = row.stats.latency(set) else { continue };
        let s = LatencySummary::of(hist);
        write!(out, "{:<width$}{:>10}{:>11}", row.label, s.count, duration_ns(s.mean))?;
        for q in s.quantiles {
            write!(out, "{:>11}", duration_ns(q as f64))?;
        }
        writeln!(out, "{:>11}", duration_ns(s.max as f64))?;
    }
    Ok(())
}

fn throughput(out: &mut dyn Write, p: &PointResult) -> io::Result<()> {
    let wu = p.wu_per_sec();
    let ops = p.ops_per_sec();
    let units: u64 = p.repeats.iter().map(|r| r.units()).sum();
    let prim: u64 = p.repeats.iter().map(|r| r.prim_ops()).sum();
    let spread = if p.repeats.len() > 1 {
        format!(
            ", min {} max {} over {} runs",
            rate(wu.min),
            rate(wu.max),
            p.repeats.len()
        )
    } else {
        String::new()
    };
    if units == prim {
        writeln!(out, "throughput: {} wu/s (1 op per unit{spread})", rate(wu.median))
    } else {
        let per_unit = if units > 0 { prim as f64 / units as f64 } else { 0.0 };
        writeln!(
            out,
            "throughput: {} wu/s{}",
            rate(wu.median),
            if spread.is_empty() {
                String::new()
            } else {
                format!(" ({})", &spread[2..])
            }
        )?;
        writeln!(
            out,
            "            {} ops/s ({per_unit:.2} ops per unit)",
            rate(ops.median)
        )
    }
}

fn summary(out: &mut dyn Write, rows: &[SummaryRow]) -> io::Result<()> {
    let open = rows.iter().any(|r| r.key.rate.is_some());
    writeln!(out, "\n=== summary ===")?;
    write!(
        out,
        "{:<14} {:<10} {:>7} {:>6} {:<16} {:>12} {:>23} {:>12} {:>7}",
        "workload", "engine", "threads", "batch", "sweep", "wu/s", "wu/s min-max", "ops/s", "errors"
    )?;
    if open {
        openloop::summary_heads(out)?;
    }
    writeln!(out, "  status")?;
    for r in rows {
        let (param, value) = r.key.sweep_columns();
        let mut sweep = if param.is_empty() {
            String::new()
        } else {
            format!("{param}={value}")
        };
        if let Some(t) = &r.key.epoch {
            sweep = format!(
                "{sweep}{}e{} {}",
                if sweep.is_empty() { "" } else { " " },
                t.number,
                t.mode
            );
        }
        if sweep.is_empty() {
            sweep.push('-');
        }
        let range = if r.repeats > 1 {
            format!("{}-{}", rate(r.wu.min), rate(r.wu.max))
        } else {
            "-".to_string()
        };
        write!(
            out,
            "{:<14} {:<10} {:>7} {:>6} {:<16} {:>12} {:>23} {:>12} {:>7}",
            r.key.workload,
            r.key.engine,
            // TxC, or TxCxP with a pipeline: workers in flight at a glance.
            match (r.key.connections, r.key.pipeline) {
                (1, 1) => r.key.threads.to_string(),
                (c, 1) => format!("{}x{c}", r.key.threads),
                (c, p) => format!("{}x{c}x{p}", r.key.threads),
            },
            r.key.batch,
            sweep,
            rate(r.wu.median),
            range,
            rate(r.ops.median),
            r.errors,
        )?;
        if open {
            openloop::summary_cells(out, r)?;
        }
        writeln!(out, "  {}", r.status.word())?;
    }
    Ok(())
}
