//! `--verify` in the reports: the console's lines, results.json's `verify` object, and
//! the `verify` sink (verify.tsv): one row per anomaly kind per verify point, its count
//! and its first example, zeros included so a clean run shows what was checked.
//! Plain runs write no rows (the file holds its header only).

use std::io::{self, Write};

use serde_json::{Value, json};

use super::{RunInfo, Sink, tsv_field};
use crate::kv::verify::{Anomaly, Example, VerifyReport};
use crate::result::{PointResult, RunOutcome};

/// verify.tsv's columns.
pub const COLUMNS: [&str; 17] = [
    "workload",
    "engine",
    "threads",
    "connections",
    "pipeline",
    "batch",
    "sweep_param",
    "sweep_value",
    "rate",
    "status",
    "reads_checked",
    "keys_read_back",
    "anomaly",
    "count",
    "first_key",
    "first_expected",
    "first_got",
];

/// The console's lines for a verify point (nothing for a plain one).
pub fn console(out: &mut dyn Write, p: &PointResult) -> io::Result<()> {
    let Some(v) = &p.verify else { return Ok(()) };
    writeln!(
        out,
        "verify: {} ({} reads checked, {} keys read back; a verify run: its figures include the checks and \
         are not comparable with a plain run's)",
        v.summary(),
        v.reads,
        v.final_keys
    )?;
    for e in &v.examples {
        writeln!(out, "  {}", example(e))?;
    }
    if let Some(injected) = &v.injected {
        let done: Vec<String> = (injected.named().iter())
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let done = if done.is_empty() {
            "none".to_string()
        } else {
            done.join(", ")
        };
        writeln!(out, "  faults the engine injected: {done}")?;
    }
    Ok(())
}

/// "lost_write (final pass): key user7, expected w1.3, got absent".
fn example(e: &Example) -> String {
    format!(
        "{}{}: key {}, expected {}, got {}",
        e.kind.name(),
        if e.final_pass { " (final pass)" } else { "" },
        e.key,
        e.expected,
        e.got
    )
}

/// results.json's `verify` of a point: null for a plain run. `injected` (the engine's
/// own count of the faults it injected, per fault knob) is there only for an engine
/// that injects faults.
pub fn json(p: &PointResult) -> Value {
    let Some(v) = &p.verify else { return Value::Null };
    let counts: serde_json::Map<String, Value> = Anomaly::ALL
        .iter()
        .map(|k| (k.name().to_string(), json!(v.count(*k))))
        .collect();
    let mut out = json!({
        "mode": "verify",
        "reads_checked": v.reads,
        "keys_read_back": v.final_keys,
        "anomalies": v.anomalies(),
        "counts": counts,
        "examples": v.examples.iter().map(|e| json!({
            "kind": e.kind.name(),
            "key": e.key,
            "expected": e.expected,
            "got": e.got,
            "final_pass": e.final_pass,
        })).collect::<Vec<_>>(),
    });
    if let (Some(injected), Some(obj)) = (&v.injected, out.as_object_mut()) {
        let named: serde_json::Map<String, Value> = (injected.named().iter())
            .map(|(name, n)| (name.to_string(), json!(n)))
            .collect();
        obj.insert("injected".to_string(), Value::Object(named));
    }
    out
}

/// The `verify` sink.
pub struct VerifyTsv<W: Write + Send> {
    out: W,
}

impl<W: Write + Send> VerifyTsv<W> {
    /// A sink writing to `out`.
    pub fn new(out: W) -> Self {
        VerifyTsv { out }
    }
}

fn rows(p: &PointResult, v: &VerifyReport) -> Vec<Vec<String>> {
    let key = &p.key;
    let (param, value) = key.sweep_columns();
    Anomaly::ALL
        .iter()
        .map(|kind| {
            let first = v.examples.iter().find(|e| e.kind == *kind);
            let text = |f: fn(&Example) -> &str| first.map_or("-".to_string(), |e| tsv_field(f(e)));
            vec![
                tsv_field(&key.workload),
                tsv_field(&key.engine),
                key.threads.to_string(),
                key.connections.to_string(),
                key.pipeline.to_string(),
                key.batch.to_string(),
                tsv_field(&param),
                tsv_field(&value),
                key.rate.as_ref().map_or("-".to_string(), |r| tsv_field(&r.label())),
                p.status.word().to_string(),
                v.reads.to_string(),
                v.final_keys.to_string(),
                kind.name().to_string(),
                v.count(*kind).to_string(),
                text(|e| &e.key),
                text(|e| &e.expected),
                text(|e| &e.got),
            ]
        })
        .collect()
}

impl<W: Write + Send> Sink for VerifyTsv<W> {
    fn begin(&mut self, _info: &RunInfo) -> io::Result<()> {
        writeln!(self.out, "{}", COLUMNS.join("\t"))?;
        self.out.flush()
    }

    fn point(&mut self, p: &PointResult) -> io::Result<()> {
        if let Some(v) = &p.verify {
            for row in rows(p, v) {
                writeln!(self.out, "{}", row.join("\t"))?;
            }
        }
        self.out.flush()
    }

    fn end(&mut self, _outcome: &RunOutcome) -> io::Result<()> {
        self.out.flush()
    }
}
