//! `json`: the complete structured result, for programs: the run's settings, the
//! probes, and every point with every percentile, counts, errors, and throughput and
//! latency per repeat. Written as one document when the run ends (also after Ctrl-C); a file is
//! also rewritten whole as each point finishes, marked `"complete": false` in its
//! summary until the run ends, so a run killed halfway leaves a valid document of
//! its finished points.

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use super::atomic::AtomicFile;
use super::figures::{hit_rate, phase_views};
use super::{RunInfo, Sink};
use crate::kv::pace::Rate;
use crate::metrics::{Histogram, KindStats, LatencySet, LatencySummary, PaceStats, QUANTILES, Recorder};
use crate::result::RunOutcome;
use crate::result::slo::SloReport;
use crate::result::{LoadResult, PointResult, PointStatus, RepeatLatency, RepeatRun, Spread};
use crate::workload::{Budget, SweepValue};

/// Version of the document's layout; bumped when a field changes meaning.
pub const FORMAT: u32 = 1;

/// Where the document goes.
enum Out {
    /// A stream, written once at the end.
    Stream(Box<dyn Write + Send>),
    /// A file, rewritten whole as points finish.
    File(AtomicFile),
}

/// Collects the run and writes the document.
pub struct Json {
    out: Out,
    run: Value,
    probes: Value,
    points: Vec<Value>,
}

impl Json {
    /// A json sink writing to `out` when the run ends.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self::with(Out::Stream(out))
    }

    /// A json sink keeping `file` a whole document of the points finished so far.
    pub fn to_file(file: AtomicFile) -> Self {
        Self::with(Out::File(file))
    }

    fn with(out: Out) -> Self {
        Json {
            out,
            run: Value::Null,
            probes: Value::Null,
            points: Vec::new(),
        }
    }

    /// The document so far; `outcome` is None while the run goes on.
    fn document(&self, outcome: Option<&RunOutcome>) -> Value {
        let summary = match outcome {
            Some(o) => json!({
                "points": o.rows.len(),
                "bad_points": o.bad_points,
                "interrupted": o.interrupted,
                "errors": o.other_errors,
                "complete": true,
            }),
            None => json!({ "points": self.points.len(), "complete": false }),
        };
        json!({
            "kvmark": { "version": env!("CARGO_PKG_VERSION"), "format": FORMAT },
            "run": self.run,
            "probes": self.probes,
            "points": self.points,
            "summary": summary,
        })
    }

    /// Writes the document (a file: replacing what it held).
    fn write(&mut self, outcome: Option<&RunOutcome>) -> io::Result<()> {
        let doc = self.document(outcome);
        let out: &mut dyn Write = match &mut self.out {
            Out::Stream(s) => s,
            Out::File(f) => {
                f.restart();
                f
            }
        };
        serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
        writeln!(out)?;
        out.flush()
    }
}

fn rate(r: &Rate) -> Value {
    json!({ "text": r.text, "per_s": r.per_sec, "bytes": r.bytes })
}

fn spread(s: Spread) -> Value {
    json!({ "median": s.median, "min": s.min, "max": s.max })
}

fn sweep_value(v: &SweepValue) -> Value {
    match v {
        SweepValue::Int(i) => json!(i),
        SweepValue::Float(f) => json!(f),
        SweepValue::Str(s) => json!(s),
    }
}

fn load_json(s: &LoadResult) -> Value {
    json!({
        "keys": s.keys,
        "seconds": s.wall_ns as f64 / 1e9,
        "keys_per_s": s.keys_per_sec(),
        "threads": s.threads,
        "shared": s.shared,
    })
}

/// Every reported percentile of a summary, by label.
fn percentiles(s: &LatencySummary) -> Map<String, Value> {
    QUANTILES
        .iter()
        .zip(s.quantiles)
        .map(|((label, _), v)| ((*label).to_string(), json!(v)))
        .collect()
}

/// Count, mean, extremes and every reported percentile of a summary.
fn summary(s: &LatencySummary) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("count".to_string(), json!(s.count));
    m.insert("mean_ns".to_string(), json!(s.mean));
    m.insert("min_ns".to_string(), json!(s.min));
    m.insert("max_ns".to_string(), json!(s.max));
    m.insert("percentiles_ns".to_string(), Value::Object(percentiles(s)));
    m
}

/// Mean, spread and every reported percentile of one histogram.
fn distribution(h: &Histogram) -> Value {
    let s = LatencySummary::of(h);
    let mut m = summary(&s);
    m.insert("stdev_ns".to_string(), json!(if s.count > 0 { h.stdev() } else { 0.0 }));
    Value::Object(m)
}

/// Each kind's latency in one repeat, under the names the point's `ops` use; null
/// when the repeat's latencies are not known (a merge of segments that keep none).
fn repeat_ops(latency: Option<&Vec<RepeatLatency>>) -> Value {
    let Some(kinds) = latency else {
        return Value::Null;
    };
    kinds
        .iter()
        .map(|k| {
            let mut m = Map::new();
            m.insert("op".to_string(), json!(k.kind.name()));
            m.extend(summary(&k.service));
            m.insert(
                "response".to_string(),
                k.response.as_ref().map_or(Value::Null, |r| Value::Object(summary(r))),
            );
            Value::Object(m)
        })
        .collect()
}

/// An operation kind: its counters, its service-time distribution at the top level
/// (the engine call; the only latency of a closed-loop run), and `response` (from each
/// unit's intended start) in open-loop runs.
fn op(name: &str, st: &KindStats) -> Value {
    let s = LatencySummary::of(&st.hist);
    let pct = percentiles(&s);
    json!({
        "op": name,
        "count": s.count,
        "prim_ops": st.prim_ops,
        "hits": st.hits,
        "misses": st.misses,
        "hit_rate": hit_rate(st.hits, st.misses),
        "errors": st.errors,
        "first_error": st.first_error,
        "retries": st.retries,
        "rows": st.rows,
        "skipped": st.skipped,
        "mean_ns": s.mean,
        "stdev_ns": if s.count > 0 { st.hist.stdev() } else { 0.0 },
        "min_ns": s.min,
        "max_ns": s.max,
        "percentiles_ns": pct,
        "bytes": st.bytes,
        "response": st.latency(LatencySet::Response).map(distribution),
    })
}

fn ops(rec: &Recorder) -> Value {
    Value::Array(rec.used().map(|(k, st)| op(k.name(), st)).collect())
}

/// `--size-classes`: each kind's value-size classes with calls, as `ops` entries
/// labelled `put<=4096` with the kind, the class and its byte range; null when the
/// run does not split by size. With `hdr`, each carries its histograms encoded as a
/// histogram log's interval does (`hdr`, `response_hdr`), for `kvmark merge`.
fn ops_by_size(rec: &Recorder, hdr: bool) -> Value {
    let Some(by) = rec.by_size() else {
        return Value::Null;
    };
    let rows = rec.rows().into_iter().filter_map(|row| {
        let class = row.class?;
        let (min, max) = by.classes.range(class);
        let mut v = op(&row.label, row.stats);
        let m = v.as_object_mut().expect("op() makes an object");
        m.insert("kind".to_string(), json!(row.kind.name()));
        m.insert("size_class".to_string(), json!(by.classes.name(class)));
        m.insert("value_bytes_min".to_string(), json!(min));
        m.insert("value_bytes_max".to_string(), json!(max));
        if hdr {
            m.insert("hdr".to_string(), json!(encoded(&row.stats.hist)));
            m.insert(
                "response_hdr".to_string(),
                row.stats.resp.as_ref().map_or(Value::Null, |h| json!(encoded(h))),
            );
        }
        Some(v)
    });
    Value::Array(rows.collect())
}

fn pace(p: &PaceStats) -> Value {
    json!({
        "waited": p.waited,
        "late": p.late,
        "max_lag_ns": p.max_lag_ns,
        "final_lag_ns": p.final_lag_ns,
        "start_accuracy": distribution(&p.accuracy),
        // The histogram itself (base64 of its V2 deflate encoding), for `kvmark merge`.
        "start_accuracy_hdr": encoded(&p.accuracy),
    })
}

/// A histogram as a histogram log's interval holds it: base64 of its V2 deflate
/// encoding.
fn encoded(h: &crate::metrics::Histogram) -> String {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .expect("a histogram serializes into memory");
    base64::engine::general_purpose::STANDARD.encode(buf)
}

fn slo(r: &SloReport) -> Value {
    json!({
        "objective": r.slo.text,
        "probe_secs": r.probe_secs,
        "capacity_wu_per_s": r.capacity,
        "best_wu_per_s": r.best,
        "probes": r.probes.iter().map(|p| json!({
            "target": p.target,
            "achieved": p.achieved,
            "value_ns": p.value_ns,
            "final_lag_ns": p.final_lag_ns,
            "pass": p.pass,
        })).collect::<Vec<_>>(),
    })
}

fn repeat(r: &RepeatRun) -> Value {
    let phases: Vec<Value> = r
        .phases
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "start_unix_ns": p.start_unix_ns,
                "end_unix_ns": p.start_unix_ns + p.wall_ns,
                "wall_s": p.wall_ns as f64 / 1e9,
                "units": p.units,
                "prim_ops": p.prim_ops,
                "wu_per_s": crate::result::per_sec(p.units, p.wall_ns),
                "ops_per_s": crate::result::per_sec(p.prim_ops, p.wall_ns),
                "warmup_units": p.warmup_units,
                "bytes": p.bytes,
            })
        })
        .collect();
    json!({
        "wall_s": r.wall_ns() as f64 / 1e9,
        "units": r.units(),
        "prim_ops": r.prim_ops(),
        "wu_per_s": r.wu_per_sec(),
        "ops_per_s": r.ops_per_sec(),
        "thread_units": r.thread_units,
        "phases": phases,
        "seed": r.load.as_ref().map(load_json),
        "ops": repeat_ops(r.latency.as_ref()),
        "client_cores_used": r.client_cores_used(),
        "client_cores_waited": r.client_cores_waited(),
    })
}

/// The json form of a point.
pub fn point(p: &PointResult) -> Value {
    let key = &p.key;
    let phases: Vec<Value> = phase_views(p)
        .into_iter()
        .map(|v| {
            json!({
                "name": v.name,
                "wu_per_s": spread(v.wu),
                "ops_per_s": spread(v.ops),
                "units": v.units,
                "wall_s": v.wall_s,
                "ops": ops(v.rec),
                "ops_by_size": ops_by_size(v.rec, true),
            })
        })
        .collect();
    json!({
        "workload": key.workload,
        "workload_path": key.workload_path.display().to_string(),
        "engine": key.engine,
        "engine_version": key.engine_version,
        "threads": key.threads,
        "connections": key.connections,
        "pipeline": key.pipeline,
        "batch": key.batch,
        "sweep": key.sweep.as_ref().map(|(param, v)| json!({ "param": param, "value": sweep_value(v) })),
        "status": p.status.word(),
        "error": match &p.status { PointStatus::Failed(m) => Some(m.as_str()), _ => None },
        "wu_per_s": spread(p.wu_per_sec()),
        "ops_per_s": spread(p.ops_per_sec()),
        "rate": key.rate.as_ref().map(rate),
        "arrival": key.rate.as_ref().map(|_| key.arrival.name()),
        "achieved": p.achieved().map(spread),
        "bytes_per_s": spread(p.bytes_per_sec()),
        "warmup_units": p.warmup_units(),
        "pace": p.merged.pace().map(pace),
        "slo": p.slo.as_ref().map(slo),
        "hit_rate": p.merged.hit_rate(),
        "errors": p.errors(),
        "retries": p.merged.retries(),
        "seed": p.load().as_ref().map(load_json),
        "ops": ops(&p.merged),
        "ops_by_size": ops_by_size(&p.merged, false),
        "phases": phases,
        "repeats": p.repeats.iter().map(repeat).collect::<Vec<_>>(),
        "epoch": super::epochs::json(p),
        "verify": super::verify::json(p),
        "checks": {
            "confidence": crate::result::checks::CONFIDENCE,
            "intervals": crate::result::checks::intervals_json(p),
            "throughput_wu_per_s": crate::result::checks::throughput_json(p),
            "trends": crate::result::checks::trends_json(p),
            "warnings": crate::result::checks::warnings_json(p),
        },
    })
}

/// The json form of the run's settings.
pub fn run_info(info: &RunInfo) -> Value {
    let engines: Vec<Value> = info
        .engines
        .iter()
        .map(|(name, version)| {
            let options: Map<String, Value> = info
                .engine_options
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, o)| o.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
                .unwrap_or_default();
            json!({ "name": name, "version": version, "options": options })
        })
        .collect();
    json!({
        "workloads": info.workloads.iter().map(|(n, p)| json!({ "name": n, "path": p.display().to_string() })).collect::<Vec<_>>(),
        "engines": engines,
        "threads": info.threads,
        "connections": info.connections,
        "pipeline": info.pipeline,
        "size_classes": info.size_classes.as_ref().map(|c| c.bounds()),
        "batch": info.batch,
        "budget": match info.budget { Budget::Ops(n) => json!({ "ops": n }), Budget::Secs(s) => json!({ "secs": s }) },
        "repeat": info.repeat,
        "seed": info.seed,
        "users": info.users,
        "items": info.items,
        "seed_threads": info.load_threads,
        "seed_once": info.load_once,
        "settle": info.settle,
        "timeline_s": info.timeline,
        "data_dir": info.data_dir.as_ref().map(|d| d.display().to_string()),
        "started_unix": info.started_unix,
        "command": info.command,
        "rates": info.rates.iter().map(rate).collect::<Vec<_>>(),
        "arrival": (!info.rates.is_empty() || info.slo.is_some()).then(|| info.arrival.name()),
        "warmup_s": info.warmup.map(|w| w.as_secs_f64()),
        "slo": info.slo.as_ref().map(|(s, secs)| json!({ "objective": s.text, "probe_secs": secs })),
        "scale": info.scale.as_ref().map(|s| json!({
            "segment": s.segment.index,
            "segments": s.segment.count,
            "start_at_unix_ns": s.start_at_unix_ns,
            "job": s.job.as_ref().map(|j| json!({ "id": j.id, "from": j.from })),
            "host": s.host,
            "clock_sync": s.clock_sync,
            "shared_tag": s.shared_tag,
        })),
    })
}

impl Sink for Json {
    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        self.run = run_info(info);
        let mut probes = Map::new();
        for p in &info.probes {
            let facts: Map<String, Value> = p.entries.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            probes.insert(p.name.clone(), Value::Object(facts));
        }
        self.probes = Value::Object(probes);
        match self.out {
            Out::File(_) => self.write(None),
            Out::Stream(_) => Ok(()),
        }
    }

    fn point(&mut self, p: &PointResult) -> io::Result<()> {
        self.points.push(point(p));
        match self.out {
            Out::File(_) => self.write(None),
            Out::Stream(_) => Ok(()),
        }
    }

    fn end(&mut self, outcome: &RunOutcome) -> io::Result<()> {
        self.write(Some(outcome))
    }
}
