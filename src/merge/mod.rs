//! `kvmark merge`: one report directory from the report directories of a scaled-out
//! run's segments (`--segment`), as if one process had run them all.
//!
//! Nothing is averaged that should not be: latency histograms are merged exactly from
//! the segments' HdrHistogram logs (each repeat's own too, its intervals found by time);
//! counts, errors, retries, hits and bytes are summed;
//! a phase's throughput is the summed units over the common measured interval (from
//! the earliest segment's start to the latest one's end, in absolute time); timeline
//! intervals are aligned by absolute time and summed, with each interval's
//! percentiles taken from the merged interval histograms. The result goes through the
//! same sinks as a run (console, tsv, timeline, json, hdr), so `kvmark plot` and the
//! HTML report read it like any run's; `segments.tsv` and the json's `segments` list
//! show each segment beside the merge.

mod counts;
pub(crate) mod decode;
mod figures;
mod points;
mod read;
mod timeline;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use self::read::SegmentDir;
use crate::metrics::format::{duration_ns, rate};
use crate::report::setup;
use crate::result::{PointResult, RunOutcome, SummaryRow};
use crate::run::observer::Observer;

/// The per-segment table's file in a merged report directory.
pub const SEGMENTS_TSV: &str = "segments.tsv";

/// What a merge produced.
#[derive(Debug)]
pub struct Merged {
    /// The report directory written.
    pub dir: PathBuf,
    /// Warnings (segments that started apart).
    pub warnings: Vec<String>,
    /// The per-segment table, as printed.
    pub table: String,
    /// Points that failed or saw engine errors in some segment.
    pub bad_points: usize,
}

/// The fields of `results.json`'s `run` that every segment of one run shares.
const SAME_RUN: [&str; 19] = [
    "engines",
    "size_classes",
    "threads",
    "connections",
    "pipeline",
    "batch",
    "budget",
    "repeat",
    "seed",
    "users",
    "items",
    "seed_threads",
    "seed_once",
    "settle",
    "timeline_s",
    "rates",
    "arrival",
    "warmup_s",
    "slo",
];

/// The fields of each point that every segment shares.
const SAME_POINT: [&str; 8] = [
    "workload",
    "engine",
    "threads",
    "connections",
    "pipeline",
    "batch",
    "sweep",
    "rate",
];

/// Merges the segment directories `dirs` into `out` (created; it must not exist or be
/// empty).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, String> {
    let segs = read_all(dirs)?;
    check(&segs)?;
    if out.exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(format!(
            "--out {}: exists and is not empty; give a new directory",
            out.display()
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("--out {}: cannot create: {e}", out.display()))?;
    // A merge refused part-way (a damaged segment found while streaming it) leaves
    // `out` as empty as it found it, not a report short of that segment's calls.
    write_merged(&segs, out).map_err(|e| match empty_dir(out) {
        Ok(()) => e,
        Err(left) => format!("{e} (and --out {} could not be emptied: {left})", out.display()),
    })
}

/// Removes everything in `dir`.
fn empty_dir(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Writes the merged report of `segs` into the empty directory `out`.
fn write_merged(segs: &[SegmentDir], out: &Path) -> Result<Merged, String> {
    let warnings = skew_warnings(segs);
    let info = points::run_info(segs)?;
    let replay = merged_replay(segs);
    let opened = setup::open_bundle(out.to_path_buf(), &replay)?;
    let reporter = opened.reporter;
    reporter.begin(&info);
    let n_points = segs[0].doc["points"].as_array().map_or(0, Vec::len);
    let mut outcome = RunOutcome::default();
    let mut table = Table::default();
    for p in 0..n_points {
        let key = points::point_key(segs, p);
        let first_phase = points::phase_names(segs, p).into_iter().next().unwrap_or_default();
        let totals = timeline::stream_point(segs, p, &key, &first_phase, &reporter)?;
        let point = points::merge_point(segs, p, key, &totals)?;
        reporter.point(&point);
        if point.is_bad() {
            outcome.bad_points += 1;
        }
        outcome.rows.push(SummaryRow::of(&point));
        table.add(segs, p, &point, &totals);
    }
    reporter.end(&outcome);
    if let Some(e) = reporter.errors().first() {
        return Err(e.clone());
    }
    std::fs::write(out.join(SEGMENTS_TSV), &table.tsv)
        .map_err(|e| format!("cannot write {}: {e}", out.join(SEGMENTS_TSV).display()))?;
    add_segments_to_json(out, &Value::Array(table.json))?;
    append_to_report(out, &table.text)?;
    Ok(Merged {
        dir: out.to_path_buf(),
        warnings,
        table: table.text,
        bad_points: outcome.bad_points,
    })
}

fn read_all(dirs: &[PathBuf]) -> Result<Vec<SegmentDir>, String> {
    if dirs.is_empty() {
        return Err("give the segments' report directories".to_string());
    }
    let mut segs: Vec<SegmentDir> = dirs.iter().map(|d| SegmentDir::read(d)).collect::<Result<_, _>>()?;
    segs.sort_by_key(|s| s.index);
    Ok(segs)
}

/// Refuses directories of different runs, and duplicate or missing segments, naming
/// the directory and the field.
fn check(segs: &[SegmentDir]) -> Result<(), String> {
    let first = &segs[0];
    for s in segs {
        if s.count != first.count {
            return Err(format!(
                "{}: run.scale.segments is {} but {} has {}: these are segments of different runs",
                s.path.display(),
                s.count,
                first.path.display(),
                first.count
            ));
        }
    }
    for pair in segs.windows(2) {
        if pair[0].index == pair[1].index {
            return Err(format!(
                "{} and {} are both segment {} of {}: give each segment's directory once",
                pair[0].path.display(),
                pair[1].path.display(),
                pair[0].index,
                first.count
            ));
        }
    }
    for s in segs {
        let points = s.doc["points"].as_array().ok_or_else(|| {
            format!(
                "{}: points is missing or not a list (a damaged file?)",
                s.path.join(crate::report::bundle::RESULTS_JSON).display()
            )
        })?;
        for (p, point) in points.iter().enumerate() {
            if let Some(field) = ["phases", "repeats"].into_iter().find(|f| !point[f].is_array()) {
                return Err(format!(
                    "{}: points[{p}].{field} is missing or not a list (a damaged file?)",
                    s.path.join(crate::report::bundle::RESULTS_JSON).display()
                ));
            }
        }
    }
    let missing: Vec<String> = (0..first.count)
        .filter(|i| !segs.iter().any(|s| s.index == *i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "segment(s) {} of {} missing: give every segment's report directory",
            missing.join(", "),
            first.count
        ));
    }
    let names = |s: &SegmentDir| -> Value {
        s.doc
            .pointer("/run/workloads")
            .and_then(Value::as_array)
            .map(|w| w.iter().map(|x| x["name"].clone()).collect())
            .unwrap_or(Value::Null)
    };
    for s in &segs[1..] {
        let differs = |what: &str, a: &Value, b: &Value| {
            (a != b).then(|| {
                format!(
                    "{}: {what} is {b} but {} has {a}: these are not segments of one run",
                    s.path.display(),
                    first.path.display()
                )
            })
        };
        if let Some(e) = differs("run.workloads", &names(first), &names(s)) {
            return Err(e);
        }
        for field in SAME_RUN.iter().chain(["scale/start_at_unix_ns"].iter()) {
            let ptr = format!("/run/{field}");
            let (a, b) = (
                first.doc.pointer(&ptr).unwrap_or(&Value::Null),
                s.doc.pointer(&ptr).unwrap_or(&Value::Null),
            );
            if let Some(e) = differs(&format!("run.{}", field.replace('/', ".")), a, b) {
                return Err(e);
            }
        }
        let (pa, pb) = (&first.doc["points"], &s.doc["points"]);
        let (na, nb) = (pa.as_array().map_or(0, Vec::len), pb.as_array().map_or(0, Vec::len));
        if na != nb {
            return Err(format!(
                "{}: has {nb} points but {} has {na}: a segment stopped early or ran another grid",
                s.path.display(),
                first.path.display()
            ));
        }
        for p in 0..na {
            for field in SAME_POINT {
                if let Some(e) = differs(&format!("points[{p}].{field}"), &pa[p][field], &pb[p][field]) {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// One warning per point whose segments started more than one timeline interval (or,
/// without a timeline, a second) apart.
fn skew_warnings(segs: &[SegmentDir]) -> Vec<String> {
    let period = segs[0]
        .doc
        .pointer("/run/timeline_s")
        .and_then(Value::as_f64)
        .unwrap_or(1.0);
    let n = segs[0].doc["points"].as_array().map_or(0, Vec::len);
    let mut out = Vec::new();
    for p in 0..n {
        let starts: Vec<(f64, &SegmentDir)> = segs
            .iter()
            .filter_map(|s| points::first_start_ns(s, p).map(|ns| (ns as f64 / 1e9, s)))
            .collect();
        let (Some(lo), Some(hi)) = (
            starts.iter().min_by(|a, b| a.0.total_cmp(&b.0)),
            starts.iter().max_by(|a, b| a.0.total_cmp(&b.0)),
        ) else {
            continue;
        };
        if hi.0 - lo.0 > period {
            out.push(format!(
                "point {}: segment {} ({}) started its timed phase {:.3} s after segment {} ({}), more than one \
                 interval ({period} s); give every segment the same --start-at and keep the clocks synchronised",
                p + 1,
                hi.1.index,
                hi.1.path.display(),
                hi.0 - lo.0,
                lo.1.index,
                lo.1.path.display()
            ));
        }
    }
    out
}

/// The replay config of segment 0, marked as the merge's.
fn merged_replay(segs: &[SegmentDir]) -> String {
    let mut s = format!(
        "# kvmark merge of {} segments; each segment's own replay.cnf reruns it (this one is segment 0's).\n",
        segs.len()
    );
    s.push_str(segs[0].replay.as_deref().unwrap_or(""));
    s
}

/// The per-segment table in three forms: per point, one row per segment and the
/// merged row (host, units, throughput, p99 of every operation kind together).
struct Table {
    text: String,
    tsv: String,
    json: Vec<Value>,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            text: String::from("\n=== segments ===\n"),
            tsv: String::from("point\tsegment\thost\tunits\twu_per_s\tp99_ns\n"),
            json: Vec::new(),
        }
    }
}

impl Table {
    fn add(&mut self, segs: &[SegmentDir], p: usize, point: &PointResult, totals: &timeline::Totals) {
        let _ = writeln!(self.text, "point {}: {}", p + 1, point.key.label());
        let _ = writeln!(
            self.text,
            "  {:<8} {:<24} {:>14} {:>14} {:>10}",
            "segment", "host", "units", "wu/s", "p99"
        );
        for (si, s) in segs.iter().enumerate() {
            let (units, wu) = points::segment_figures(s, p);
            let p99 = totals.service[si].value_at_quantile(0.99);
            self.row(p, s.index.to_string(), &s.host, units, wu, p99);
        }
        let all = totals.service.iter().fold(crate::metrics::new_histogram(), |mut h, s| {
            let _ = h.add(s);
            h
        });
        let units = point.repeats.iter().map(|r| r.units()).sum();
        self.row(
            p,
            "merged".to_string(),
            "-",
            units,
            point.wu_per_sec().median,
            all.value_at_quantile(0.99),
        );
    }

    fn row(&mut self, p: usize, seg: String, host: &str, units: u64, wu: f64, p99: u64) {
        let _ = writeln!(
            self.text,
            "  {seg:<8} {host:<24} {units:>14} {:>14} {:>10}",
            rate(wu),
            duration_ns(p99 as f64)
        );
        let _ = writeln!(self.tsv, "{}\t{seg}\t{host}\t{units}\t{wu:.3}\t{p99}", p + 1);
        self.json.push(serde_json::json!({
            "point": p + 1, "segment": seg, "host": host, "units": units, "wu_per_s": wu, "p99_ns": p99,
        }));
    }
}

fn add_segments_to_json(out: &Path, segments: &Value) -> Result<(), String> {
    let path = out.join(crate::report::bundle::RESULTS_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    doc["segments"] = segments.clone();
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())? + "\n";
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn append_to_report(out: &Path, table: &str) -> Result<(), String> {
    use std::io::Write;
    let path = out.join(crate::report::bundle::REPORT_TXT);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(table.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Segment `index` of 2, its run sweeping `depths` and its one point at `pipeline`.
    fn segment(index: usize, depths: &[u64], pipeline: u64) -> SegmentDir {
        SegmentDir {
            path: PathBuf::from(format!("seg{index}")),
            doc: json!({
                "run": { "threads": [2], "connections": [4], "pipeline": depths },
                "points": [{
                    "workload": "w",
                    "engine": "redis",
                    "threads": 2,
                    "connections": 4,
                    "pipeline": pipeline,
                    "phases": [],
                    "repeats": [],
                }],
            }),
            index,
            count: 2,
            host: "h".to_string(),
            hlogs: vec![None],
            timeline: None,
            replay: None,
        }
    }

    #[test]
    fn segments_of_other_pipeline_depths_are_not_one_run() {
        assert_eq!(check(&[segment(0, &[16], 16), segment(1, &[16], 16)]), Ok(()));
        let err = check(&[segment(0, &[16], 16), segment(1, &[4], 4)]).unwrap_err();
        assert!(
            err.contains("seg1: run.pipeline is [4] but seg0 has [16]: these are not segments of one run"),
            "{err}"
        );
        let err = check(&[segment(0, &[4, 16], 16), segment(1, &[4, 16], 4)]).unwrap_err();
        assert!(err.contains("seg1: points[0].pipeline is 4 but seg0 has 16"), "{err}");
    }
}
