//! Growing values in the reports: each epoch point's records, volume, value sizes,
//! skipped extends and, over repeats, the mean and 95% interval of its figures
//! (console lines, tsv columns, the json `epoch` object), and the console's table of
//! epochs against modes.

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use crate::metrics::OpKind;
use crate::metrics::format::{bytes, duration_ns, rate};
use crate::result::epochs::EpochInfo;
use crate::result::intervals::{Interval, LATENCY_FIGURES, MEAN, P99};
use crate::result::{PointResult, SummaryRow};
use crate::workload::epochs::EpochMode;

/// " epoch=3 mode=clean" for a point's coordinates line.
pub fn coords(p: &PointResult) -> String {
    p.key
        .epoch
        .map(|t| format!(" epoch={} mode={}", t.number, t.mode))
        .unwrap_or_default()
}

/// The console lines of an epoch point, after its throughput.
pub fn console(out: &mut dyn Write, p: &PointResult) -> io::Result<()> {
    let Some(info) = p.epoch.as_deref() else {
        return Ok(());
    };
    let v = &info.value_sizes;
    writeln!(
        out,
        "epoch {} {}: {} records, {} of keys and values; value sizes mean {}, p50 {}, p99 {}, max {}",
        info.tag.number,
        info.tag.mode,
        info.records,
        bytes(info.volume_bytes as f64),
        bytes(v.mean()),
        bytes(v.p50 as f64),
        bytes(v.p99 as f64),
        bytes(v.max as f64),
    )?;
    if info.tag.mode == EpochMode::Extend {
        writeln!(
            out,
            "extends skipped by the value cap (--max-value-bytes): {}",
            info.skipped_extends
        )?;
    }
    if let Some(target) = info.target_records {
        writeln!(
            out,
            "spread: the load was asked for {target} records of the initial size (the main store's volume)"
        )?;
    }
    if let Some((ns, file)) = info.dump {
        writeln!(
            out,
            "dump of the main store: {} in {} ({}/s); the seed line above is the restore",
            bytes(file as f64),
            duration_ns(ns as f64),
            bytes(file as f64 * 1e9 / ns.max(1) as f64),
        )?;
    }
    let iv = &info.intervals;
    if iv.wu_per_s.n > 1 {
        let mut line = format!(
            "over {} repeats, mean +- 95% interval: {} wu/s",
            iv.wu_per_s.n,
            interval(&iv.wu_per_s, &rate)
        );
        for (kind, figs) in &iv.ops {
            line.push_str(&format!(
                "; {} mean {}, p99 {}",
                kind.name(),
                interval(&figs[MEAN], &duration_ns),
                interval(&figs[P99], &duration_ns),
            ));
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn interval(i: &Interval, show: &dyn Fn(f64) -> String) -> String {
    format!("{} +- {}", show(i.mean), show(i.ci95))
}

/// The epoch points of `rows`, as a table: one line per epoch and mode.
pub fn summary(out: &mut dyn Write, rows: &[SummaryRow]) -> io::Result<()> {
    let epoch_rows: Vec<(&SummaryRow, &EpochInfo)> =
        rows.iter().filter_map(|r| r.epoch.as_deref().map(|e| (r, e))).collect();
    if epoch_rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n=== epochs ===")?;
    writeln!(
        out,
        "{:<14} {:<10} {:>7} {:>5} {:<8} {:>9} {:>10} {:>10} {:>10} {:>9} {:>12} {:>10}  latency (mean / p99)",
        "workload",
        "engine",
        "threads",
        "epoch",
        "mode",
        "records",
        "volume",
        "val-mean",
        "val-max",
        "skipped",
        "wu/s",
        "+-95%"
    )?;
    for (r, e) in epoch_rows {
        let mut lat = String::new();
        for (kind, figs) in &e.intervals.ops {
            lat.push_str(&format!(
                "  {} {} / {}",
                kind.name(),
                duration_ns(figs[MEAN].mean),
                duration_ns(figs[P99].mean)
            ));
        }
        writeln!(
            out,
            "{:<14} {:<10} {:>7} {:>5} {:<8} {:>9} {:>10} {:>10} {:>10} {:>9} {:>12} {:>10}{lat}",
            r.key.workload,
            r.key.engine,
            r.key.threads,
            e.tag.number,
            e.tag.mode.name(),
            e.records,
            bytes(e.volume_bytes as f64),
            bytes(e.value_sizes.mean()),
            bytes(e.value_sizes.max as f64),
            e.skipped_extends,
            rate(e.intervals.wu_per_s.mean),
            rate(e.intervals.wu_per_s.ci95),
        )?;
    }
    Ok(())
}

/// The tsv columns this module fills: the last ones of the tsv sink's.
pub const TSV_COLUMNS: [&str; 17] = [
    "epoch",
    "ivs_mode",
    "records",
    "volume_bytes",
    "value_mean_bytes",
    "value_p50_bytes",
    "value_p99_bytes",
    "value_max_bytes",
    "skipped_extends",
    "wu_per_s_mean",
    "wu_per_s_ci95",
    "mean_ns_mean",
    "mean_ns_ci95",
    "p99_ns_mean",
    "p99_ns_ci95",
    "dump_s",
    "dump_bytes",
];

/// The tsv cells of [`TSV_COLUMNS`] for a row of `kind` (None: a point's empty row),
/// `-` outside epochs. Latency intervals are of service time.
pub fn tsv_cells(p: &PointResult, kind: Option<OpKind>, service: bool) -> Vec<String> {
    let Some(e) = p.epoch.as_deref() else {
        return vec!["-".to_string(); TSV_COLUMNS.len()];
    };
    let v = &e.value_sizes;
    let mut c = vec![
        e.tag.number.to_string(),
        e.tag.mode.name().to_string(),
        e.records.to_string(),
        e.volume_bytes.to_string(),
        format!("{:.1}", v.mean()),
        v.p50.to_string(),
        v.p99.to_string(),
        v.max.to_string(),
        e.skipped_extends.to_string(),
        format!("{:.3}", e.intervals.wu_per_s.mean),
        format!("{:.3}", e.intervals.wu_per_s.ci95),
    ];
    match kind.and_then(|k| e.intervals.ops.get(&k)).filter(|_| service) {
        Some(figs) => c.extend([
            format!("{:.1}", figs[MEAN].mean),
            format!("{:.1}", figs[MEAN].ci95),
            format!("{:.1}", figs[P99].mean),
            format!("{:.1}", figs[P99].ci95),
        ]),
        None => c.extend(std::iter::repeat_n("-".to_string(), 4)),
    }
    match e.dump {
        Some((ns, b)) => c.extend([format!("{:.6}", ns as f64 / 1e9), b.to_string()]),
        None => c.extend(["-".to_string(), "-".to_string()]),
    }
    c
}

fn interval_json(i: &Interval) -> Value {
    json!({ "mean": i.mean, "ci95": i.ci95, "n": i.n })
}

/// The json `epoch` object of a point, or null outside epochs.
pub fn json(p: &PointResult) -> Value {
    let Some(e) = p.epoch.as_deref() else {
        return Value::Null;
    };
    let v = &e.value_sizes;
    let mut ops = Map::new();
    for (kind, figs) in &e.intervals.ops {
        let mut m = Map::new();
        for (name, i) in LATENCY_FIGURES.iter().zip(figs) {
            m.insert((*name).to_string(), interval_json(i));
        }
        ops.insert(kind.name().to_string(), Value::Object(m));
    }
    json!({
        "number": e.tag.number,
        "mode": e.tag.mode.name(),
        "records": e.records,
        "volume_bytes": e.volume_bytes,
        "skipped_extends": e.skipped_extends,
        "target_records": e.target_records,
        "dump": e.dump.map(|(ns, b)| json!({ "seconds": ns as f64 / 1e9, "bytes": b })),
        "data_hash": e.data_hash.map(|h| format!("{h:016x}")),
        "value_sizes": {
            "count": v.count,
            "mean": v.mean(),
            "min": v.min,
            "max": v.max,
            "p50": v.p50,
            "p90": v.p90,
            "p99": v.p99,
            "bin_bytes": crate::kv::sizes::BIN_BYTES,
            "bins": v.bins.iter().map(|(s, n)| json!([s, n])).collect::<Vec<_>>(),
        },
        "intervals": {
            "wu_per_s": interval_json(&e.intervals.wu_per_s),
            "ops_per_s": interval_json(&e.intervals.ops_per_s),
            "ops": ops,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_columns_are_the_last_of_the_tsv() {
        assert_eq!(TSV_COLUMNS.first(), Some(&"epoch"));
        assert_eq!(TSV_COLUMNS.last(), Some(&"dump_bytes"));
    }
}
