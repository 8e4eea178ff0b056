//! Reading one segment's report directory: `results.json` at once, the histogram logs
//! under `hdr/` and `timeline.tsv` as streams (an hour of intervals from many segments
//! never sits in memory; see docs/benchmarks-history.md, "Merging segments").

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::report::bundle::{HDR_DIR, REPLAY_CNF, RESULTS_JSON, TIMELINE_TSV};

/// One segment's report directory.
#[derive(Debug)]
pub struct SegmentDir {
    /// The directory.
    pub path: PathBuf,
    /// `results.json`.
    pub doc: Value,
    /// Its segment index.
    pub index: usize,
    /// The run's segment count.
    pub count: usize,
    /// Where it ran.
    pub host: String,
    /// Its histogram log per point (by measurement number - 1), where there is one.
    pub hlogs: Vec<Option<PathBuf>>,
    /// `timeline.tsv`, when there.
    pub timeline: Option<PathBuf>,
    /// `replay.cnf`, when there.
    pub replay: Option<String>,
}

/// One interval of a histogram log, its histogram still encoded.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Start, Unix seconds.
    pub start_unix: f64,
    /// Length, seconds.
    pub length: f64,
    /// `<phase>.<op>` or `<phase>.<op>.response`.
    pub tag: String,
    /// The histogram, base64 of its V2 (deflate) encoding.
    pub encoded: String,
}

/// One timeline row.
#[derive(Debug, Clone)]
pub struct Row {
    /// Repeat.
    pub repeat: usize,
    /// Phase.
    pub phase: Arc<str>,
    /// Metric name.
    pub metric: Arc<str>,
    /// Its value.
    pub value: f64,
    /// The interval's end, Unix seconds.
    pub unix_s: f64,
    /// The interval's length, seconds.
    pub interval_s: f64,
}

impl SegmentDir {
    /// Reads `path`'s results.json and finds its logs; errors name the directory and
    /// the file.
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
        if let Ok(entries) = std::fs::read_dir(path.join(HDR_DIR)) {
            for file in entries.flatten().map(|e| e.path()) {
                let seq = file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .filter(|n| n.ends_with(".hlog"))
                    .and_then(|n| n.split('-').next())
                    .and_then(|n| n.parse::<usize>().ok());
                if let Some(seq) = seq.filter(|s| (1..=points).contains(s)) {
                    hlogs[seq - 1] = Some(file);
                }
            }
        }
        let timeline = Some(path.join(TIMELINE_TSV)).filter(|p| p.is_file());
        Ok(SegmentDir {
            path: path.to_path_buf(),
            doc,
            index,
            count,
            host,
            hlogs,
            timeline,
            replay: std::fs::read_to_string(path.join(REPLAY_CNF)).ok(),
        })
    }

    /// The intervals of point `p`'s log, in order (none without a log).
    pub fn intervals(&self, p: usize) -> Result<Intervals, String> {
        let lines = self.hlogs[p].as_deref().map(NumberedLines::open).transpose()?;
        Ok(Intervals { lines, base: 0.0 })
    }

    /// The timeline rows of measurement `seq`, in order.
    pub fn rows(&self, seq: usize) -> Result<Rows, String> {
        let Some(path) = &self.timeline else {
            return Ok(Rows {
                lines: None,
                cols: [0; 8],
                seq,
                names: HashSet::new(),
                fields: Vec::new(),
            });
        };
        let mut lines = NumberedLines::open(path)?;
        lines.next_line().transpose()?;
        let header: Vec<&str> = lines.text().split('\t').collect();
        let mut cols = [0; 8];
        let names = [
            "measurement",
            "repeat",
            "phase",
            "metric",
            "value",
            "unix_s",
            "interval_s",
            "elapsed_s",
        ];
        for (c, name) in cols.iter_mut().zip(names) {
            *c = header.iter().position(|h| *h == name).ok_or_else(|| {
                format!(
                    "{}: no column {name} (written by a kvmark without scale-out?)",
                    path.display()
                )
            })?;
        }
        Ok(Rows {
            lines: Some(lines),
            cols,
            seq,
            names: HashSet::new(),
            fields: Vec::new(),
        })
    }
}

/// The latest Unix time, in seconds, a segment's file may give (about the year 5138):
/// a later one is damage, and would overflow the durations the merged report is
/// written in.
const LATEST_UNIX_S: f64 = 1e11;

/// The longest interval, in seconds, a segment's file may give (about 31 years).
const LONGEST_INTERVAL_S: f64 = 1e9;

/// Whether `start` (Unix seconds) and `length` (seconds) can be a measured interval.
fn plausible(start: f64, length: f64) -> bool {
    (0.0..=LATEST_UNIX_S).contains(&start) && (0.0..=LONGEST_INTERVAL_S).contains(&length)
}

/// A histogram log read interval by interval.
pub struct Intervals {
    lines: Option<NumberedLines>,
    base: f64,
}

impl Iterator for Intervals {
    type Item = Result<Interval, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let lines = self.lines.as_mut()?;
        loop {
            if let Err(e) = lines.next_line()? {
                return Some(Err(e));
            }
            let line = lines.text();
            if let Some(rest) = line.strip_prefix("#[BaseTime: ") {
                self.base = rest
                    .split_whitespace()
                    .next()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(0.0);
                continue;
            }
            if line.starts_with('#') || line.starts_with('"') || line.trim().is_empty() {
                continue;
            }
            // Tag=TAG,START,LENGTH,MAX,HISTOGRAM (the tag is optional).
            let (tag, rest) = match line.strip_prefix("Tag=") {
                Some(r) => match r.split_once(',') {
                    Some((t, rest)) => (t.to_string(), rest),
                    None => {
                        return Some(Err(lines.damaged("no interval after the tag")));
                    }
                },
                None => (String::new(), line),
            };
            let f: Vec<&str> = rest.splitn(4, ',').collect();
            let num = |i: usize| f.get(i).and_then(|v| v.trim().parse::<f64>().ok());
            let (Some(start), Some(length), Some(encoded)) = (num(0), num(1), f.get(3)) else {
                return Some(Err(lines.damaged("not an interval (the log is damaged)")));
            };
            if !plausible(self.base + start, length) {
                return Some(Err(lines.damaged(&format!(
                    "an interval from {} s for {length} s is no run's (the log is damaged)",
                    self.base + start
                ))));
            }
            return Some(Ok(Interval {
                start_unix: self.base + start,
                length,
                tag,
                encoded: encoded.trim().to_string(),
            }));
        }
    }
}

/// A timeline's rows of one measurement.
pub struct Rows {
    lines: Option<NumberedLines>,
    cols: [usize; 8],
    seq: usize,
    /// Phase and metric names seen, shared by the rows: a timeline repeats a few
    /// dozen names over and over (a 16-segment, one-hour merge reads a million rows).
    names: HashSet<Arc<str>>,
    fields: Vec<(usize, usize)>,
}

/// `name`, shared with the earlier rows that had it.
fn intern(names: &mut HashSet<Arc<str>>, name: &str) -> Arc<str> {
    if let Some(known) = names.get(name) {
        return Arc::clone(known);
    }
    let new: Arc<str> = Arc::from(name);
    names.insert(Arc::clone(&new));
    new
}

impl Iterator for Rows {
    type Item = Result<Row, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let lines = self.lines.as_mut()?;
        loop {
            if let Err(e) = lines.next_line()? {
                return Some(Err(e));
            }
            let line = lines.text();
            // The fields' byte ranges, in a buffer kept from row to row.
            self.fields.clear();
            let mut at = 0;
            for field in line.split('\t') {
                self.fields.push((at, at + field.len()));
                at += field.len() + 1;
            }
            let fields = &self.fields;
            let [seq, repeat, phase, metric, value, unix, interval, _] = self.cols;
            let get = |i: usize| fields.get(i).map(|&(a, b)| &line[a..b]);
            let num = |i: usize| get(i).and_then(|v| v.parse::<f64>().ok());
            let bad = || Some(Err(lines.damaged("damaged")));
            match num(seq) {
                Some(s) if s as usize == self.seq => {}
                Some(s) if (s as usize) > self.seq => {
                    // Measurements are written in order: this one is over.
                    self.lines = None;
                    return None;
                }
                Some(_) => continue,
                None => return bad(),
            }
            let (Some(repeat), Some(phase), Some(metric), Some(value), Some(unix_s), Some(interval_s)) = (
                num(repeat),
                get(phase),
                get(metric),
                num(value),
                num(unix),
                num(interval),
            ) else {
                return bad();
            };
            if !plausible(unix_s - interval_s, interval_s) {
                return Some(Err(lines.damaged(&format!(
                    "a sample at {unix_s} s over {interval_s} s is no run's (the timeline is damaged)"
                ))));
            }
            return Some(Ok(Row {
                repeat: repeat as usize,
                phase: intern(&mut self.names, phase),
                metric: intern(&mut self.names, metric),
                value,
                unix_s,
                interval_s,
            }));
        }
    }
}

/// A text file read line by line into one buffer, counting lines for messages.
struct NumberedLines {
    path: PathBuf,
    reader: BufReader<File>,
    line: String,
    n: usize,
}

impl NumberedLines {
    fn open(path: &Path) -> Result<NumberedLines, String> {
        let file = File::open(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Ok(NumberedLines {
            path: path.to_path_buf(),
            reader: BufReader::new(file),
            line: String::new(),
            n: 0,
        })
    }

    /// Reads the next line into [`NumberedLines::text`]; None at the end of the file.
    fn next_line(&mut self) -> Option<Result<(), String>> {
        self.line.clear();
        self.n += 1;
        match self.reader.read_line(&mut self.line) {
            Ok(0) => None,
            Ok(_) => Some(Ok(())),
            Err(e) => Some(Err(format!("{}: line {}: {e}", self.path.display(), self.n))),
        }
    }

    /// The line read last, without its line ending.
    fn text(&self) -> &str {
        self.line.trim_end_matches(['\n', '\r'])
    }

    /// An error about the current line.
    fn damaged(&self, what: &str) -> String {
        format!("{}: line {}: {what}", self.path.display(), self.n)
    }
}
