//! Reading result directories: whatever of `results.json`, `points.tsv`,
//! `timeline.tsv` and `hdr/` is there. A missing or damaged file is a note naming
//! it, and the rest is still read; only a directory with none of them is an error.

pub mod epoch;
pub mod hlog;
pub mod points;
pub mod timeline;
pub mod tsv;

use std::path::{Path, PathBuf};

use serde_json::Value;

use self::hlog::Hlog;
use self::points::Point;
use self::timeline::Track;
use self::tsv::Table;
use crate::report::bundle::{HDR_DIR, POINTS_TSV, RESULTS_JSON, TIMELINE_TSV};

/// A point's coordinates apart from the engine, as a short label ("t2 b8 @5000",
/// "t2 c4 p16 b1" with connections and a pipeline).
pub fn cell_label(
    threads: usize,
    connections: usize,
    pipeline: usize,
    batch: usize,
    sweep: Option<&(String, String)>,
    rate: Option<&str>,
) -> String {
    let mut parts = vec![format!("t{threads}")];
    if connections != 1 {
        parts.push(format!("c{connections}"));
    }
    if pipeline != 1 {
        parts.push(format!("p{pipeline}"));
    }
    if batch != 1 {
        parts.push(format!("b{batch}"));
    }
    if let Some((p, v)) = sweep {
        parts.push(format!("{p}={v}"));
    }
    if let Some(r) = rate {
        parts.push(format!("@{r}"));
    }
    parts.join(" ")
}

/// Everything read from one result directory.
#[derive(Debug, Default)]
pub struct RunData {
    /// The directory.
    pub path: PathBuf,
    /// Its label in legends (the directory's name).
    pub label: String,
    /// `results.json`'s `run` object (settings), when there.
    pub run: Option<Value>,
    /// `results.json`'s `probes` object, when there.
    pub probes: Option<Value>,
    /// `results.json`'s `summary` object, when there.
    pub summary: Option<Value>,
    /// The grid points.
    pub points: Vec<Point>,
    /// Timeline tracks in the order they ran.
    pub tracks: Vec<Track>,
    /// The sample period of the timeline in seconds, when known.
    pub period: Option<f64>,
    /// Histogram logs.
    pub hlogs: Vec<Hlog>,
    /// What was missing or damaged (each names its file).
    pub notes: Vec<String>,
}

impl RunData {
    /// The warm-up excluded from each measurement, in seconds (0 without one).
    pub fn warmup_s(&self) -> f64 {
        self.run
            .as_ref()
            .and_then(|r| r.get("warmup_s"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    }

    /// The histogram log of a point, matched on its coordinates.
    pub fn hlog_of(&self, p: &Point) -> Option<&Hlog> {
        self.hlogs.iter().find(|h| {
            let g = |k: &str| h.header.get(k).map(String::as_str);
            g("workload") == Some(p.workload.as_str())
                && g("engine") == Some(p.engine.as_str())
                && g("threads") == Some(p.threads.to_string().as_str())
                && g("connections").unwrap_or("1") == p.connections.to_string()
                && g("pipeline").unwrap_or("1") == p.pipeline.to_string()
                && g("batch") == Some(p.batch.to_string().as_str())
                && g("rate") == p.rate.as_ref().map(|r| r.text.as_str())
                && match &p.sweep {
                    Some((param, value)) => {
                        g("sweep_param") == Some(param.as_str()) && g("sweep_value") == Some(value.as_str())
                    }
                    None => true,
                }
        })
    }
}

/// True when `dir` holds at least one of the files a run writes.
pub fn is_result_dir(dir: &Path) -> bool {
    [RESULTS_JSON, POINTS_TSV, TIMELINE_TSV, HDR_DIR]
        .iter()
        .any(|f| dir.join(f).exists())
}

/// The result directories named by `dirs`: each is a result directory itself, or a
/// `--report-dir` parent whose subdirectories are (taken in name order).
pub fn expand(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for d in dirs {
        if !d.is_dir() {
            return Err(format!(
                "{}: not a directory (give a result directory that --report-dir wrote)",
                d.display()
            ));
        }
        if is_result_dir(d) {
            out.push(d.clone());
            continue;
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|e| format!("{}: cannot list: {e}", d.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir() && is_result_dir(p))
            .collect();
        if subs.is_empty() {
            return Err(format!(
                "{}: no result files here ({RESULTS_JSON}, {POINTS_TSV}, {TIMELINE_TSV}, {HDR_DIR}/) nor in its subdirectories",
                d.display()
            ));
        }
        subs.sort();
        out.extend(subs);
    }
    Ok(out)
}

/// Reads one result directory (the histogram logs on a second thread).
pub fn load(dir: &Path) -> RunData {
    std::thread::scope(|s| {
        let logs = s.spawn(|| read_hlogs(dir));
        let mut data = load_tables(dir);
        let (hlogs, notes) = logs.join().unwrap_or_else(|_| {
            let hdr = dir.join(HDR_DIR);
            (
                Vec::new(),
                vec![format!("{}: the histogram logs could not be read", hdr.display())],
            )
        });
        data.hlogs = hlogs;
        data.notes.extend(notes);
        data
    })
}

/// Reads everything but the histogram logs.
fn load_tables(dir: &Path) -> RunData {
    let mut data = RunData {
        path: dir.to_path_buf(),
        label: dir
            .file_name()
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned()),
        ..RunData::default()
    };
    let mut notes = Vec::new();
    let json_path = dir.join(RESULTS_JSON);
    match std::fs::read_to_string(&json_path) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(doc) => {
                data.points = points::from_json(&doc, &json_path, &mut notes);
                data.run = doc.get("run").cloned();
                data.probes = doc.get("probes").cloned();
                data.summary = doc.get("summary").cloned();
                if data.summary.as_ref().and_then(|s| s.get("complete")) == Some(&Value::Bool(false)) {
                    notes.push(format!(
                        "{}: the run did not finish (killed or still going); these are the {} points it finished",
                        json_path.display(),
                        data.points.len()
                    ));
                }
            }
            Err(e) => notes.push(format!(
                "{}: not valid JSON ({e}); the points come from {POINTS_TSV}",
                json_path.display()
            )),
        },
        Err(e) => notes.push(format!(
            "{}: cannot read ({e}; a run that died writes none); the points come from {POINTS_TSV}",
            json_path.display()
        )),
    }
    let tsv_path = dir.join(POINTS_TSV);
    if data.points.is_empty() {
        match read_table(&tsv_path, &["workload", "engine", "threads", "op"], &mut notes) {
            Some(t) => data.points = points::from_tsv(&t),
            None => notes.push("no grid points: the throughput and latency figures are left out".to_string()),
        }
    }
    let tl_path = dir.join(TIMELINE_TSV);
    if let Some(t) = read_table(&tl_path, timeline::REQUIRED, &mut notes) {
        data.period = (0..t.rows.len()).find_map(|r| t.num(r, "interval_s"));
        data.period = data
            .run
            .as_ref()
            .and_then(|r| r.get("timeline_s"))
            .and_then(Value::as_f64)
            .or(data.period);
        data.tracks = timeline::tracks(&t);
    }
    data.notes = notes;
    data
}

/// Reads every histogram log under `hdr/`, in name order.
fn read_hlogs(dir: &Path) -> (Vec<Hlog>, Vec<String>) {
    let mut notes = Vec::new();
    let mut hlogs = Vec::new();
    let hdr = dir.join(HDR_DIR);
    match std::fs::read_dir(&hdr) {
        Ok(entries) => {
            let mut files: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "hlog"))
                .collect();
            files.sort();
            for f in files {
                match Hlog::read(&f, &mut notes) {
                    Ok(h) => hlogs.push(h),
                    Err(e) => notes.push(e),
                }
            }
        }
        Err(e) => notes.push(format!(
            "{}: cannot read ({e}); the percentile spectra are left out",
            hdr.display()
        )),
    }
    (hlogs, notes)
}

fn read_table(path: &Path, required: &[&str], notes: &mut Vec<String>) -> Option<Table> {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            notes.push(format!("{}: cannot read ({e})", path.display()));
            return None;
        }
    };
    match Table::parse(&text, path, required, notes) {
        Ok(t) => Some(t),
        Err(e) => {
            notes.push(e);
            None
        }
    }
}
