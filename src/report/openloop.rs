//! The console report's open-loop parts: the target beside the achieved rate, how far
//! behind schedule a run fell, the warm-up, the latency-vs-load summary columns, and
//! the SLO search's evidence.

use std::io::{self, Write};

use super::RunInfo;
use crate::metrics::LatencySummary;
use crate::metrics::format::{duration_ns, rate};
use crate::result::slo::SloReport;
use crate::result::{PointResult, SummaryRow};

/// The header line of an open-loop run (nothing for a closed-loop one).
pub fn header(out: &mut dyn Write, info: &RunInfo) -> io::Result<()> {
    let mut parts = Vec::new();
    if !info.rates.is_empty() {
        let rates: Vec<&str> = info.rates.iter().map(|r| r.text.as_str()).collect();
        parts.push(format!(
            "open loop: rate {} ({} arrivals)",
            rates.join(","),
            info.arrival
        ));
    }
    if let Some((slo, secs)) = &info.slo {
        parts.push(format!(
            "SLO search: {} on response time, {secs} s probes ({} arrivals)",
            slo.text, info.arrival
        ));
    }
    if let Some(w) = info.warmup {
        parts.push(format!("warm-up {} s excluded", w.as_secs_f64()));
    }
    if !parts.is_empty() {
        writeln!(out, "{}", parts.join("  "))?;
    }
    Ok(())
}

/// Target and achieved rate, and the schedule figures, of a paced point.
pub fn pace(out: &mut dyn Write, p: &PointResult) -> io::Result<()> {
    let (Some(target), Some(achieved)) = (&p.key.rate, p.achieved()) else {
        return Ok(());
    };
    let share = if target.per_sec > 0.0 {
        achieved.median / target.per_sec * 100.0
    } else {
        0.0
    };
    if target.bytes {
        writeln!(
            out,
            "rate: target {}, achieved {} ({share:.1}% of target, {} wu/s), {} arrivals",
            target.text,
            target.bandwidth(achieved.median),
            rate(p.wu_per_sec().median),
            p.key.arrival
        )?;
        if p.merged.write_bytes() == 0 {
            writeln!(
                out,
                "warning: the units wrote no bytes, so a bandwidth target could not space them"
            )?;
        }
    } else {
        writeln!(
            out,
            "rate: target {}, achieved {} wu/s ({share:.1}% of target), {} arrivals",
            target.label(),
            rate(achieved.median),
            p.key.arrival
        )?;
    }
    if let Some(s) = p.merged.pace() {
        let acc = LatencySummary::of(&s.accuracy);
        let accuracy = if s.waited > 0 {
            format!(
                " (start accuracy p50 {}, p99 {}, max {})",
                duration_ns(acc.p50() as f64),
                duration_ns(acc.p99() as f64),
                duration_ns(acc.max as f64)
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "schedule: {} units waited for their start{accuracy}; {} started behind schedule; \
             lag max {}, final {}",
            s.waited,
            s.late,
            duration_ns(s.max_lag_ns as f64),
            duration_ns(s.final_lag_ns as f64)
        )?;
    }
    Ok(())
}

/// How many units the warm-up excluded.
pub fn warmup(out: &mut dyn Write, p: &PointResult) -> io::Result<()> {
    let excluded = p.warmup_units();
    let measured: u64 = p.repeats.iter().map(|r| r.units()).sum();
    if excluded == 0 && measured > 0 {
        return Ok(());
    }
    if excluded > 0 {
        writeln!(
            out,
            "warm-up: excluded {excluded} units (run, not in the figures above); measured {measured} units"
        )?;
    }
    if measured == 0 && excluded > 0 {
        writeln!(out, "warning: the phase ended within the warm-up; nothing was measured")?;
    }
    Ok(())
}

/// The SLO search's result and every probe.
pub fn slo_evidence(out: &mut dyn Write, r: &SloReport) -> io::Result<()> {
    let scope = match r.slo.kind {
        Some(k) => format!("{} response time", k.name()),
        None => "response time, all kinds".to_string(),
    };
    let verdict = match r.best {
        Some(best) => format!("highest passing rate {} wu/s", rate(best)),
        None if r.probes.is_empty() => "not searched (the capacity run failed or did nothing)".to_string(),
        None => "no probed rate met it".to_string(),
    };
    writeln!(
        out,
        "slo {} ({scope}): {verdict}; closed-loop capacity {} wu/s, {} s probes",
        r.slo.text,
        rate(r.capacity),
        r.probe_secs
    )?;
    if r.probes.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  {:>5} {:>12} {:>12} {:>12} {:>12}  result",
        "probe", "target wu/s", "achieved", r.slo.percentile, "final lag"
    )?;
    for (i, p) in r.probes.iter().enumerate() {
        let value = p.value_ns.map_or("-".to_string(), |v| duration_ns(v as f64));
        writeln!(
            out,
            "  {:>5} {:>12} {:>12} {:>12} {:>12}  {}",
            i + 1,
            rate(p.target),
            rate(p.achieved),
            value,
            duration_ns(p.final_lag_ns as f64),
            if p.pass { "pass" } else { "fail" }
        )?;
    }
    Ok(())
}

/// A duration without a space, for whitespace-separated tables: "1.23ms".
fn compact_ns(ns: u64) -> String {
    duration_ns(ns as f64).replace(' ', "")
}

/// The latency-vs-load column heads of the summary table.
pub fn summary_heads(out: &mut dyn Write) -> io::Result<()> {
    write!(
        out,
        " {:>12} {:>12} {:>10} {:>10} {:>10}",
        "rate", "achieved", "resp-p50", "resp-p99", "resp-p99.9"
    )
}

/// One row's latency-vs-load cells: target, achieved, response-time p50/p99/p99.9.
pub fn summary_cells(out: &mut dyn Write, r: &SummaryRow) -> io::Result<()> {
    let (target, achieved) = match (&r.key.rate, r.achieved) {
        (Some(t), Some(a)) if t.bytes => (t.text.clone(), t.bandwidth(a.median)),
        (Some(t), Some(a)) => (rate(t.per_sec), rate(a.median)),
        _ => ("-".to_string(), "-".to_string()),
    };
    let [p50, p99, p999] = r
        .response
        .map(|q| q.map(compact_ns))
        .unwrap_or_else(|| ["-".to_string(), "-".to_string(), "-".to_string()]);
    write!(out, " {target:>12} {achieved:>12} {p50:>10} {p99:>10} {p999:>10}")
}

/// The SLO search's result per point, when the run searched.
pub fn slo_summary(out: &mut dyn Write, rows: &[SummaryRow]) -> io::Result<()> {
    let searched: Vec<(&SummaryRow, &SloReport)> = rows.iter().filter_map(|r| r.slo.as_ref().map(|s| (r, s))).collect();
    let Some((_, first)) = searched.first() else {
        return Ok(());
    };
    writeln!(out, "\n=== SLO search: {} ===", first.slo.text)?;
    writeln!(
        out,
        "{:<14} {:<10} {:>7} {:>6} {:>12} {:>12} {:>6}",
        "workload", "engine", "threads", "batch", "capacity", "slo-rate", "probes"
    )?;
    for (r, s) in searched {
        let best = s.best.map_or("none".to_string(), rate);
        writeln!(
            out,
            "{:<14} {:<10} {:>7} {:>6} {:>12} {:>12} {:>6}",
            r.key.workload,
            r.key.engine,
            r.key.threads,
            r.key.batch,
            rate(s.capacity),
            best,
            s.probes.len()
        )?;
    }
    Ok(())
}
