//! Reading one segment's report directory: `results.json`, the histogram logs under
//! `hdr/` (every interval kept, with its absolute time) and `timeline.tsv`.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::Value;

use crate::metrics::Histogram;
use crate::report::bundle::{HDR_DIR, REPLAY_CNF, RESULTS_JSON, TIMELINE_TSV};

/// One segment's report directory, read.
#[derive(Debug)]
pub struct SegmentDir {
    /// The directory.
    pub path: PathBuf,
    /// `results.json`.
    pub doc: Value,
    /// Its segment index and the run's segment count.
    pub index: usize,
    /// The run's segment count.
    pub count: usize,
    /// Where it ran.
    pub host: String,
    /// Its histogram logs, by measurement number (1-based; a missing log is None).
    pub hlogs: Vec<Option<Vec<Interval>>>,
    /// Its timeline rows.
    pub rows: Vec<Row>,
    /// `replay.cnf`, when there.
    pub replay: Option<String>,
}

/// One interval of a histogram log.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Start, Unix seconds.
    pub start_unix: f64,
    /// Length, seconds.
    pub length: f64,
    /// `<phase>.<op>` or `<phase>.<op>.response`.
    pub tag: String,
    /// The interval's histogram.
    pub hist: Histogram,
}

/// One timeline row.
#[derive(Debug, Clone)]
pub struct Row {
    /// Measurement number.
    pub seq: usize,
    /// Repeat.
    pub repeat: usize,
    /// Phase.
    pub phase: String,
    /// Metric name.
    pub metric: String,
    /// Its value.
    pub value: f64,
    /// The interval's end, Unix seconds.
    pub unix_s: f64,
    /// The interval's length, seconds.
    pub interval_s: f64,
}

impl SegmentDir {
    /// Reads `path`; errors name the directory and the file.
    pub fn read(path: &Path) -> Result<SegmentDir, String> {
        let at = |file: &str| path.join(file).display().to_string();
        let text = std::fs::read_to_string(path.join(RESULTS_JSON)).map_err(|e| {
            format!(
                "{}: cannot read ({e}); give report directories written by --report-dir",
                at(RESULTS_JSON)
            )
        })?;
        let doc: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: not valid JSON: {e}", at(RESULTS_JSON)))?;
        let scale = doc.pointer("/run/scale").filter(|s| !s.is_null()).ok_or_else(|| {
            format!(
                "{}: not a segment's report (its run has no scale section); run each segment with --segment",
                at(RESULTS_JSON)
            )
        })?;
        let num = |key: &str| {
            scale
                .get(key)
                .and_then(Value::as_u64)
                .map(|n| n as usize)
                .ok_or_else(|| format!("{}: run.scale.{key} is missing", at(RESULTS_JSON)))
        };
        let (index, count) = (num("segment")?, num("segments")?);
        let host = scale
            .get("host")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        let points = doc.get("points").and_then(Value::as_array).map_or(0, Vec::len);
        let mut hlogs = vec![None; points];
        let hdr = path.join(HDR_DIR);
        if let Ok(entries) = std::fs::read_dir(&hdr) {
            for entry in entries.flatten() {
                let file = entry.path();
                let Some(seq) = file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .filter(|n| n.ends_with(".hlog"))
                    .and_then(|n| n.split('-').next())
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                if (1..=points).contains(&seq) {
                    hlogs[seq - 1] = Some(read_hlog(&file)?);
                }
            }
        }
        let rows = match std::fs::read_to_string(path.join(TIMELINE_TSV)) {
            Ok(text) => read_timeline(&text).map_err(|e| format!("{}: {e}", at(TIMELINE_TSV)))?,
            Err(_) => Vec::new(),
        };
        Ok(SegmentDir {
            path: path.to_path_buf(),
            doc,
            index,
            count,
            host,
            hlogs,
            rows,
            replay: std::fs::read_to_string(path.join(REPLAY_CNF)).ok(),
        })
    }
}

/// Every interval of a log, with absolute times.
fn read_hlog(path: &Path) -> Result<Vec<Interval>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let mut base = 0.0;
    let mut out = Vec::new();
    let mut de = Deserializer::new();
    for (n, entry) in IntervalLogIterator::new(&bytes).enumerate() {
        let bad = |what: String| format!("{}: entry {}: {what}", path.display(), n + 1);
        match entry.map_err(|e| bad(format!("cannot be read ({e:?})")))? {
            LogEntry::BaseTime(t) => base = t.as_secs_f64(),
            LogEntry::StartTime(_) => {}
            LogEntry::Interval(i) => {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .map_err(|e| bad(e.to_string()))?;
                let hist: Histogram = de.deserialize(&mut raw.as_slice()).map_err(|e| bad(format!("{e:?}")))?;
                out.push(Interval {
                    start_unix: base + i.start_timestamp().as_secs_f64(),
                    length: i.duration().as_secs_f64(),
                    tag: i.tag().map(|t| t.as_str().to_string()).unwrap_or_default(),
                    hist,
                });
            }
        }
    }
    Ok(out)
}

/// The rows of a timeline, by column name.
fn read_timeline(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| format!("no column {name} (written by a kvmark without scale-out?)"))
    };
    let (seq, repeat, phase, metric, value, unix, interval) = (
        col("measurement")?,
        col("repeat")?,
        col("phase")?,
        col("metric")?,
        col("value")?,
        col("unix_s")?,
        col("interval_s")?,
    );
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let get = |i: usize| f.get(i).copied().ok_or_else(|| format!("line {} is short", n + 2));
        let num = |i: usize| -> Result<f64, String> {
            get(i)?
                .parse::<f64>()
                .map_err(|_| format!("line {}: column {} is not a number", n + 2, header[i]))
        };
        rows.push(Row {
            seq: num(seq)? as usize,
            repeat: num(repeat)? as usize,
            phase: get(phase)?.to_string(),
            metric: get(metric)?.to_string(),
            value: num(value)?,
            unix_s: num(unix)?,
            interval_s: num(interval)?,
        });
    }
    Ok(rows)
}
