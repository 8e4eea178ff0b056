//! The merged run header and points: counters summed from each segment's
//! `results.json`, latency histograms merged exactly from its histogram logs, phase
//! times spanning every segment's measured interval.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::read::SegmentDir;
use super::timeline::Totals;
use crate::kv::pace::{Arrival, Rate};
use crate::metrics::{KindStats, LatencySummary, OpKind, Recorder, SizeClasses};
use crate::probe::Probe;
use crate::report::RunInfo;
use crate::report::bundle::RESULTS_JSON;
use crate::result::{LoadResult, PhaseRun, PointKey, PointResult, PointStatus, RepeatLatency, RepeatRun};
use crate::workload::{Budget, SweepValue};

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Largest count read from a segment (2^53, past which JSON numbers are not exact):
/// no run gets near it, and sums over segments stay far from overflowing.
const MAX_COUNT: u64 = 1 << 53;

/// A count or size from a segment's results.json: 0 when absent, at most [`MAX_COUNT`]
/// (a damaged file cannot make the merge's sums overflow; its histogram log then
/// disagrees with it, which fails the merge).
fn uint(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0).min(MAX_COUNT)
}

/// The merged run's header: segment 0's settings, with every segment's threads.
pub(super) fn run_info(segs: &[SegmentDir]) -> Result<RunInfo, String> {
    let n = segs.len();
    let doc = &segs[0].doc;
    let run = &doc["run"];
    let list = |v: &Value| -> Vec<usize> {
        v.as_array()
            .map(|a| a.iter().map(|x| uint(x) as usize).collect())
            .unwrap_or_default()
    };
    let engines = run["engines"].as_array().cloned().unwrap_or_default();
    let budget = match (run["budget"].get("ops"), run["budget"].get("secs")) {
        (Some(ops), _) => Budget::Ops(uint(ops)),
        (None, Some(secs)) => Budget::Secs(secs.as_f64().unwrap_or(0.0)),
        _ => return Err(format!("{}: run.budget is missing", segs[0].path.display())),
    };
    let probes = doc["probes"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(name, facts)| Probe {
                    name: name.clone(),
                    entries: facts
                        .as_object()
                        .map(|f| {
                            f.iter()
                                .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    let warmup = match run["warmup_s"].as_f64() {
        None => None,
        Some(s) => Some(Duration::try_from_secs_f64(s).map_err(|_| {
            format!(
                "{}: run.warmup_s is {s}, not a number of seconds",
                segs[0].path.join(RESULTS_JSON).display()
            )
        })?),
    };
    let started = segs
        .iter()
        .filter_map(|s| s.doc.pointer("/run/started_unix").and_then(Value::as_f64))
        .fold(f64::INFINITY, f64::min);
    Ok(RunInfo {
        version: text(&doc["kvmark"]["version"]),
        workloads: run["workloads"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|w| (text(&w["name"]), PathBuf::from(text(&w["path"]))))
                    .collect()
            })
            .unwrap_or_default(),
        engines: engines
            .iter()
            .map(|e| (text(&e["name"]), text(&e["version"])))
            .collect(),
        engine_options: engines
            .iter()
            .filter_map(|e| {
                let o = e["options"].as_object().filter(|o| !o.is_empty())?;
                Some((text(&e["name"]), o.iter().map(|(k, v)| (k.clone(), text(v))).collect()))
            })
            .collect(),
        threads: list(&run["threads"]).into_iter().map(|t| t.saturating_mul(n)).collect(),
        connections: list(&run["connections"]),
        pipeline: match list(&run["pipeline"]) {
            // A segment written before `--pipeline` ran every cell at 1.
            none if none.is_empty() => vec![1],
            depths => depths,
        },
        size_classes: size_classes(&segs[0])?,
        batch: run["batch"].as_array().map(|_| list(&run["batch"])),
        budget,
        repeat: uint(&run["repeat"]) as usize,
        seed: uint(&run["seed"]),
        users: uint(&run["users"]),
        items: uint(&run["items"]),
        load_once: run["seed_once"].as_bool().unwrap_or(false),
        settle: run["settle"].as_bool().unwrap_or(false),
        load_threads: run["seed_threads"].as_u64().map(|t| (t as usize).saturating_mul(n)),
        timeline: run["timeline_s"].as_f64(),
        data_dir: run["data_dir"].as_str().map(PathBuf::from),
        started_unix: if started.is_finite() { started } else { 0.0 },
        command: run["command"]
            .as_array()
            .map(|a| a.iter().map(text).collect())
            .unwrap_or_default(),
        probes,
        rates: run["rates"]
            .as_array()
            .map(|a| a.iter().map(rate).collect())
            .unwrap_or_default(),
        arrival: Arrival::parse(run["arrival"].as_str().unwrap_or("constant")).unwrap_or_default(),
        warmup,
        slo: None,
        scale: None,
    })
}

/// The segment's `--size-classes`, None when it did not split by value size.
pub(super) fn size_classes(s: &SegmentDir) -> Result<Option<Arc<SizeClasses>>, String> {
    let v = &s.doc["run"]["size_classes"];
    if v.is_null() {
        return Ok(None);
    }
    let bounds = v
        .as_array()
        .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>());
    bounds
        .ok_or_else(|| "not a list of byte counts".to_string())
        .and_then(SizeClasses::new)
        .map(|c| Some(Arc::new(c)))
        .map_err(|e| format!("{}: run.size_classes: {e}", s.path.join(RESULTS_JSON).display()))
}

fn rate(v: &Value) -> Rate {
    Rate {
        per_sec: v["per_s"].as_f64().unwrap_or(0.0),
        bytes: v["bytes"].as_bool().unwrap_or(false),
        text: text(&v["text"]),
        // Only pacing reads the wave; a merged report shows its text and mean.
        wave: None,
    }
}

fn sweep_value(v: &Value) -> SweepValue {
    match (v.as_i64(), v.as_f64()) {
        (Some(i), _) => SweepValue::Int(i),
        (None, Some(f)) => SweepValue::Float(f),
        _ => SweepValue::Str(v.as_str().map_or_else(|| v.to_string(), str::to_string)),
    }
}

/// When segment `s` began point `p`'s first timed phase (Unix ns), if recorded.
pub(super) fn first_start_ns(s: &SegmentDir, p: usize) -> Option<u64> {
    s.doc
        .pointer(&format!("/points/{p}/repeats/0/phases/0/start_unix_ns"))
        .and_then(Value::as_u64)
        .filter(|ns| *ns > 0)
}

/// Segment `s`'s units and throughput (median over repeats) of point `p`.
pub(super) fn segment_figures(s: &SegmentDir, p: usize) -> (u64, f64) {
    let point = &s.doc["points"][p];
    let units = point["repeats"]
        .as_array()
        .map_or(0, |r| r.iter().map(|x| uint(&x["units"])).sum());
    (units, point["wu_per_s"]["median"].as_f64().unwrap_or(0.0))
}

/// A tag's phase, operation kind and whether it holds response times.
pub(super) fn parse_tag(tag: &str) -> Option<(&str, OpKind, bool)> {
    let (body, response) = match tag.strip_suffix(".response") {
        Some(b) => (b, true),
        None => (tag, false),
    };
    let (phase, op) = body.rsplit_once('.')?;
    Some((phase, OpKind::from_name(op)?, response))
}

/// Point `p` of every segment as one point: the key with every segment's threads,
/// repeats whose phases span the segments' measured intervals, and recorders whose
/// histograms are merged from the logs and whose counters are summed.
pub(super) fn merge_point(
    segs: &[SegmentDir],
    p: usize,
    key: PointKey,
    totals: &Totals,
) -> Result<PointResult, String> {
    let status = point_status(segs, p);
    let mut repeats = merge_repeats(segs, p);
    for (r, repeat) in repeats.iter_mut().enumerate() {
        repeat.latency = repeat_latency(segs, p, r, totals);
    }
    let phase_names = phase_names(segs, p);
    let mut phases = Vec::with_capacity(phase_names.len());
    let mut merged = Recorder::new();
    for (j, name) in phase_names.iter().enumerate() {
        let rec = merge_phase(segs, p, j, name, totals)?;
        merged.merge(&rec);
        phases.push((name.clone(), rec));
    }
    if let Some(pace) = super::figures::merge_pace(segs, p)? {
        merged.add_pace(&pace);
    }
    Ok(PointResult {
        key,
        status,
        repeats,
        merged,
        phases,
        slo: None,
        epoch: None,
        verify: super::figures::merge_verify(segs, p),
    })
}

/// The merged point's key: segment 0's, with every segment's threads.
pub(super) fn point_key(segs: &[SegmentDir], p: usize) -> PointKey {
    let first = &segs[0].doc["points"][p];
    PointKey {
        workload: text(&first["workload"]),
        workload_path: PathBuf::from(text(&first["workload_path"])),
        engine: text(&first["engine"]),
        engine_version: text(&first["engine_version"]),
        threads: segs.iter().map(|s| uint(&s.doc["points"][p]["threads"]) as usize).sum(),
        connections: uint(&first["connections"]) as usize,
        pipeline: first["pipeline"].as_u64().map_or(1, |d| d.min(MAX_COUNT)) as usize,
        batch: uint(&first["batch"]) as usize,
        batched: !segs[0].doc["run"]["batch"].is_null(),
        sweep: first["sweep"]
            .as_object()
            .map(|s| (text(&s["param"]), sweep_value(&s["value"]))),
        rate: first["rate"].as_object().map(|_| rate(&first["rate"])),
        arrival: Arrival::parse(first["arrival"].as_str().unwrap_or("constant")).unwrap_or_default(),
        epoch: None,
    }
}

/// The worst status of the point over the segments: a failure names its segment.
fn point_status(segs: &[SegmentDir], p: usize) -> PointStatus {
    segs.iter()
        .find_map(|s| {
            let pt = &s.doc["points"][p];
            match pt["status"].as_str() {
                Some("failed") => Some(PointStatus::Failed(format!(
                    "segment {} ({}): {}",
                    s.index,
                    s.path.display(),
                    text(&pt["error"])
                ))),
                _ => None,
            }
        })
        .or_else(|| {
            segs.iter()
                .any(|s| s.doc["points"][p]["status"] == "interrupted")
                .then_some(PointStatus::Interrupted)
        })
        .unwrap_or(PointStatus::Ok)
}

/// The names of the point's timed phases, in order.
pub(super) fn phase_names(segs: &[SegmentDir], p: usize) -> Vec<String> {
    segs[0].doc["points"][p]["phases"]
        .as_array()
        .map(|a| a.iter().map(|v| text(&v["name"])).filter(|n| n != "all").collect())
        .unwrap_or_default()
}

/// The repeats every segment ran, each phase from the earliest start to the latest
/// end with summed units; the load with summed keys and the longest time.
fn merge_repeats(segs: &[SegmentDir], p: usize) -> Vec<RepeatRun> {
    let per_seg: Vec<&Vec<Value>> = segs
        .iter()
        .filter_map(|s| s.doc["points"][p]["repeats"].as_array())
        .collect();
    if per_seg.len() != segs.len() {
        return Vec::new();
    }
    let count = per_seg.iter().map(|r| r.len()).min().unwrap_or(0);
    (0..count)
        .map(|r| {
            let reps: Vec<&Value> = per_seg.iter().map(|s| &s[r]).collect();
            let n_phases = reps
                .iter()
                .map(|x| x["phases"].as_array().map_or(0, Vec::len))
                .min()
                .unwrap_or(0);
            let phases = (0..n_phases)
                .map(|j| {
                    let ph: Vec<&Value> = reps.iter().map(|x| &x["phases"][j]).collect();
                    // Times, not counts: only compared and subtracted.
                    let ns = |v: &Value| v.as_u64().unwrap_or(0);
                    let start = ph.iter().map(|v| ns(&v["start_unix_ns"])).min().unwrap_or(0);
                    let end = ph.iter().map(|v| ns(&v["end_unix_ns"])).max().unwrap_or(0);
                    let sum = |f: &str| ph.iter().map(|v| uint(&v[f])).sum::<u64>();
                    PhaseRun {
                        name: text(&ph[0]["name"]),
                        start_unix_ns: start,
                        wall_ns: end.saturating_sub(start),
                        units: sum("units"),
                        prim_ops: sum("prim_ops"),
                        warmup_units: sum("warmup_units"),
                        bytes: sum("bytes"),
                        // Segments keep no timeline intervals in results.json.
                        trend: Vec::new(),
                    }
                })
                .collect();
            let thread_units = reps
                .iter()
                .flat_map(|x| x["thread_units"].as_array().cloned().unwrap_or_default())
                .map(|v| uint(&v))
                .collect();
            let loads: Vec<&Value> = reps.iter().map(|x| &x["seed"]).filter(|s| s.is_object()).collect();
            let load = (loads.len() == reps.len() && !loads.is_empty()).then(|| LoadResult {
                threads: loads.iter().map(|l| uint(&l["threads"]) as usize).sum(),
                wall_ns: loads
                    .iter()
                    .map(|l| (l["seconds"].as_f64().unwrap_or(0.0) * 1e9) as u64)
                    .max()
                    .unwrap_or(0),
                keys: loads.iter().map(|l| uint(&l["keys"])).sum(),
                shared: loads[0]["shared"].as_bool().unwrap_or(false),
            });
            RepeatRun {
                phases,
                thread_units,
                load,
                // From the histogram logs, by `repeat_latency`.
                latency: None,
                // Each segment's client is its own process: its figure is in its
                // segment's own results.json.
                client_cpu: None,
            }
        })
        .collect()
}

/// Repeat `r`'s latency per kind over every segment, from the intervals the logs hold
/// for it; None unless every segment's results.json keeps that repeat's own counts
/// and they equal what its log holds for the repeat (an interval given to the wrong
/// repeat, or a segment from before per-repeat latencies were kept, leaves the merged
/// repeat's latency unknown rather than wrong).
fn repeat_latency(segs: &[SegmentDir], p: usize, r: usize, totals: &Totals) -> Option<Vec<RepeatLatency>> {
    for (si, s) in segs.iter().enumerate() {
        let ops = s.doc["points"][p]["repeats"][r]["ops"].as_array()?;
        let mut kept = 0;
        for op in ops {
            let kind = OpKind::from_name(op["op"].as_str()?)?;
            let logged = totals.repeat_counts[si].get(&(r, kind)).copied().unwrap_or(0);
            if uint(&op["count"]) != logged {
                return None;
            }
            kept += 1;
        }
        let logged_kinds = totals.repeat_counts[si]
            .iter()
            .filter(|((rep, _), n)| *rep == r && **n > 0)
            .count();
        if logged_kinds != kept {
            return None;
        }
    }
    Some(
        OpKind::ALL
            .into_iter()
            .filter_map(|kind| {
                let service = totals.repeats.get(&(r, kind, false)).filter(|h| !h.is_empty())?;
                Some(RepeatLatency {
                    kind,
                    service: LatencySummary::of(service),
                    response: totals.repeats.get(&(r, kind, true)).map(LatencySummary::of),
                })
            })
            .collect(),
    )
}

/// Phase `j` (`name`) of point `p` over every segment: each operation kind's
/// counters summed from the json, its histograms the merge of the logs (`totals`),
/// each segment's log checked against its json's count.
fn merge_phase(segs: &[SegmentDir], p: usize, j: usize, name: &str, totals: &Totals) -> Result<Recorder, String> {
    let mut rec = Recorder::new();
    let mut kinds: Vec<OpKind> = Vec::new();
    let tag_phase = name.replace([' ', ',', '\r', '\n'], "_");
    for (si, s) in segs.iter().enumerate() {
        let ops = s.doc["points"][p]["phases"][j]["ops"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for op in &ops {
            let op_name = text(&op["op"]);
            let Some(kind) = OpKind::from_name(&op_name) else {
                return Err(format!(
                    "{}: points[{p}].phases[{j}]: unknown operation '{op_name}'",
                    s.path.display()
                ));
            };
            let counted = uint(&op["count"]);
            let logged = totals.counts[si]
                .get(&(tag_phase.clone(), kind, false))
                .copied()
                .unwrap_or(0);
            if counted != logged {
                return Err(format!(
                    "{}: point {} phase {name}: results.json counts {counted} {op_name} calls but the histogram log \
                     under hdr/ holds {logged}; the log is incomplete (was the run stopped?)",
                    s.path.display(),
                    p + 1
                ));
            }
            rec.kind_mut(kind).merge(&counters(op, s));
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
    }
    // The histograms, merged over segments once.
    for ((phase, kind, response), h) in &totals.merged {
        if *phase != tag_phase || !kinds.contains(kind) {
            continue;
        }
        let st = rec.kind_mut(*kind);
        if *response {
            st.resp = Some(h.clone());
        } else {
            st.hist.add(h).map_err(|e| format!("{e:?}"))?;
        }
    }
    if let Some(classes) = size_classes(&segs[0])? {
        merge_classes(segs, p, j, &classes, &mut rec)?;
    }
    Ok(rec)
}

/// An `ops` entry's counters, its histograms empty.
fn counters(op: &Value, s: &SegmentDir) -> KindStats {
    KindStats {
        prim_ops: uint(&op["prim_ops"]),
        hits: uint(&op["hits"]),
        misses: uint(&op["misses"]),
        errors: uint(&op["errors"]),
        retries: uint(&op["retries"]),
        rows: uint(&op["rows"]),
        skipped: uint(&op["skipped"]),
        bytes: uint(&op["bytes"]),
        first_error: op["first_error"].as_str().map(|e| format!("segment {}: {e}", s.index)),
        ..KindStats::new()
    }
}

/// Phase `j`'s value-size classes over every segment (`--size-classes`): counters
/// summed, histograms merged exactly from the encodings each entry carries.
fn merge_classes(
    segs: &[SegmentDir],
    p: usize,
    j: usize,
    classes: &Arc<SizeClasses>,
    rec: &mut Recorder,
) -> Result<(), String> {
    let mut dec = super::decode::Decoder::default();
    for s in segs {
        let entries = s.doc["points"][p]["phases"][j]["ops_by_size"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (e, op) in entries.iter().enumerate() {
            let at = |what: &str| format!("{}: points[{p}].phases[{j}].ops_by_size[{e}]: {what}", s.path.display());
            let kind = OpKind::from_name(&text(&op["kind"])).ok_or_else(|| at("unknown kind"))?;
            let name = text(&op["size_class"]);
            let class = (0..classes.len())
                .find(|&c| classes.name(c) == name)
                .ok_or_else(|| at(&format!("size class '{name}' is not one of the run's")))?;
            let mut st = counters(op, s);
            let n = dec
                .decode(op["hdr"].as_str().ok_or_else(|| at("no hdr"))?)
                .and_then(|n| dec.add_to(&mut st.hist).map(|()| n))
                .map_err(|e| at(&e))?;
            if n != uint(&op["count"]) {
                return Err(at(&format!(
                    "its histogram holds {n} calls, its count is {}",
                    uint(&op["count"])
                )));
            }
            if let Some(encoded) = op["response_hdr"].as_str() {
                let mut resp = crate::metrics::new_histogram();
                dec.decode(encoded)
                    .and_then(|_| dec.add_to(&mut resp))
                    .map_err(|e| at(&e))?;
                st.resp = Some(resp);
            }
            rec.class_mut(classes, class).kind_mut(kind).merge(&st);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn segment(index: usize, point: Value) -> SegmentDir {
        SegmentDir {
            path: PathBuf::from(format!("seg{index}")),
            doc: json!({ "run": { "batch": null }, "points": [point] }),
            index,
            count: 2,
            host: "h".to_string(),
            hlogs: vec![None],
            timeline: None,
            replay: None,
        }
    }

    #[test]
    fn the_merged_point_keeps_its_pipeline_depth_and_an_older_one_is_1() {
        let point = |pipeline: Option<u64>| {
            let mut p = json!({ "workload": "w", "engine": "redis", "threads": 2, "connections": 4, "batch": 1 });
            if let Some(d) = pipeline {
                p["pipeline"] = json!(d);
            }
            p
        };
        let deep = [segment(0, point(Some(16))), segment(1, point(Some(16)))];
        let key = point_key(&deep, 0);
        assert_eq!((key.threads, key.connections, key.pipeline), (4, 4, 16));
        let old = [segment(0, point(None)), segment(1, point(None))];
        assert_eq!(point_key(&old, 0).pipeline, 1);
    }
}
