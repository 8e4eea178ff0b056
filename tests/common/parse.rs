//! Parsers for what kvmark writes: TSV files, the console report's latency tables,
//! and HdrHistogram interval logs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

/// A table read from a TSV file: the header and the rows as column -> value maps.
pub struct Tsv {
    /// Column names.
    pub header: Vec<String>,
    /// Rows as column -> value.
    pub rows: Vec<BTreeMap<String, String>>,
}

pub fn read_tsv(path: &Path) -> Tsv {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split('\t')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), header.len(), "column count of {l:?} in {}", path.display());
            header
                .iter()
                .cloned()
                .zip(cols.into_iter().map(str::to_string))
                .collect()
        })
        .collect();
    Tsv { header, rows }
}

/// One point of the console report: its coordinates line and latency rows, each row
/// as (op, [count, mean, p50, p90, p99, p99.9, p99.99, max]) in printed form.
#[derive(Debug)]
pub struct ConsolePoint {
    /// The "engine=... threads=..." line.
    pub coords: String,
    /// (op, printed values).
    pub ops: Vec<(String, Vec<String>)>,
}

pub fn console_points(out: &str) -> Vec<ConsolePoint> {
    let mut points: Vec<ConsolePoint> = Vec::new();
    let mut in_table = false;
    for line in out.lines() {
        if line.starts_with("engine=") {
            points.push(ConsolePoint {
                coords: line.to_string(),
                ops: Vec::new(),
            });
            in_table = false;
            continue;
        }
        if line.starts_with("op ") && line.contains("count") {
            in_table = true;
            continue;
        }
        if in_table {
            let toks: Vec<&str> = line.split_whitespace().collect();
            // op, count, then seven durations of two tokens each.
            if toks.len() == 16 && toks[1].parse::<u64>().is_ok() {
                let mut vals = vec![toks[1].to_string()];
                vals.extend(toks[2..].chunks(2).map(|c| c.join(" ")));
                points.last_mut().unwrap().ops.push((toks[0].to_string(), vals));
            } else {
                in_table = false;
            }
        }
    }
    points
}

/// Decodes one .hlog file into merged histograms per tag.
pub fn hlog_by_tag(path: &Path) -> BTreeMap<String, (Histogram<u64>, usize)> {
    let bytes = std::fs::read(path).unwrap();
    let mut out: BTreeMap<String, (Histogram<u64>, usize)> = BTreeMap::new();
    let mut de = Deserializer::new();
    let mut last_start = None;
    for entry in IntervalLogIterator::new(&bytes) {
        let LogEntry::Interval(ilh) = entry.unwrap_or_else(|e| panic!("{}: {e:?}", path.display())) else {
            continue;
        };
        if let Some(prev) = last_start {
            assert!(
                ilh.start_timestamp() >= prev,
                "intervals out of order in {}",
                path.display()
            );
        }
        last_start = Some(ilh.start_timestamp());
        let raw = base64::engine::general_purpose::STANDARD
            .decode(ilh.encoded_histogram())
            .unwrap();
        let h: Histogram<u64> = de.deserialize(&mut raw.as_slice()).unwrap();
        let tag = ilh.tag().expect("every interval is tagged").as_str().to_string();
        let slot = out.entry(tag).or_insert_with(|| (Histogram::new(3).unwrap(), 0));
        slot.0.add(&h).unwrap();
        slot.1 += 1;
    }
    out
}

pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}
