//! The histogram logs under `hdr/`: each point's intervals merged per tag into the
//! point's exact histograms, for the percentile spectrum, and kept per interval in
//! coarse latency buckets, for the heatmap.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

use crate::merge::decode::Decoder;

use crate::plot::figure::to_nines;

/// One point's log.
#[derive(Debug)]
pub struct Hlog {
    /// The file.
    pub path: PathBuf,
    /// `key=value` coordinates from the header comment (workload, engine, threads,
    /// batch, rate, and a sweep parameter).
    pub header: BTreeMap<String, String>,
    /// Tag (`<phase>.<op>` or `<phase>.<op>.response`) to the merge of its intervals.
    pub tags: BTreeMap<String, Histogram<u64>>,
    /// Tag to its intervals in time order, each in [`HEAT_PER_DECADE`] buckets a
    /// decade (the heatmap's cells).
    pub columns: BTreeMap<String, Vec<Column>>,
}

/// Latency buckets per decade in a heatmap column: fine enough to show a second
/// mode, coarse enough that an interval's few hundred samples fill its cells.
pub const HEAT_PER_DECADE: f64 = 5.0;

/// One interval of one tag in heatmap buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Start, seconds after the log's first interval began.
    pub start_s: f64,
    /// End, in the same seconds.
    pub end_s: f64,
    /// (bucket, count) for each non-empty bucket, in bucket order: bucket `b` holds
    /// latencies from 10^(b / HEAT_PER_DECADE) ns up to the next bucket's start.
    pub counts: Vec<(i32, u64)>,
}

/// (bucket, count) pairs summed per bucket, in bucket order.
pub fn bucket_counts(pairs: impl IntoIterator<Item = (i32, u64)>) -> Vec<(i32, u64)> {
    let mut counts: Vec<(i32, u64)> = Vec::new();
    for (b, n) in pairs {
        match counts.iter_mut().find(|(c, _)| *c == b) {
            Some((_, total)) => *total += n,
            None => counts.push((b, n)),
        }
    }
    counts.sort_unstable();
    counts
}

/// The heatmap bucket of a latency in nanoseconds.
pub fn heat_bucket(ns: u64) -> i32 {
    ((ns.max(1) as f64).log10() * HEAT_PER_DECADE).floor() as i32
}

impl Hlog {
    /// Reads and merges one log. A damaged interval (a log cut short) ends the read
    /// with what came before it, and says so in `notes`.
    pub fn read(path: &Path, notes: &mut Vec<String>) -> Result<Hlog, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Hlog::parse(&bytes, path, notes)
    }

    /// [`Hlog::read`] of a log already in memory; `path` names it in notes and errors
    /// (the fuzz targets and property tests call this, with no file).
    pub fn parse(bytes: &[u8], path: &Path, notes: &mut Vec<String>) -> Result<Hlog, String> {
        let text = String::from_utf8_lossy(bytes);
        let header = text
            .lines()
            .find(|l| l.starts_with("#kvmark ") && l.contains(" point "))
            .map(parse_header)
            .unwrap_or_default();
        let mut tags: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
        let mut columns: BTreeMap<String, Vec<Column>> = BTreeMap::new();
        let mut first_start: Option<f64> = None;
        // Each interval's counts are added straight into the tag's histogram: the
        // crate's deserializer allocates and zeroes a full histogram per interval.
        let mut dec = Decoder::default();
        for (n, entry) in IntervalLogIterator::new(bytes).enumerate() {
            let interval = match entry {
                Ok(LogEntry::Interval(i)) => i,
                Ok(_) => continue,
                Err(e) => {
                    notes.push(format!(
                        "{}: entry {} cannot be read ({e:?}); the intervals before it are used",
                        path.display(),
                        n + 1
                    ));
                    break;
                }
            };
            if let Err(e) = dec.decode(interval.encoded_histogram()) {
                notes.push(format!(
                    "{}: interval {} cannot be decoded ({e}); the intervals before it are used",
                    path.display(),
                    n + 1
                ));
                break;
            }
            let tag = interval.tag().map_or("run.all", |t| t.as_str());
            let start = interval.start_timestamp().as_secs_f64();
            let origin = *first_start.get_or_insert(start);
            let counts = bucket_counts(dec.values().map(|(value, n)| (heat_bucket(value), n)));
            columns.entry(tag.to_string()).or_default().push(Column {
                start_s: start - origin,
                end_s: start - origin + interval.duration().as_secs_f64(),
                counts,
            });
            if !tags.contains_key(tag) {
                tags.insert(tag.to_string(), Histogram::new(3).map_err(|e| format!("{e:?}"))?);
            }
            let slot = tags.get_mut(tag).expect("inserted above");
            if dec.add_to(slot).is_err() {
                notes.push(format!(
                    "{}: interval {} does not fit the merge; left out",
                    path.display(),
                    n + 1
                ));
            }
        }
        Ok(Hlog {
            path: path.to_path_buf(),
            header,
            tags,
            columns,
        })
    }
}

/// The header's point coordinates; any other `key=value` is the workload's sweep.
const COORDINATES: [&str; 7] = [
    "workload",
    "engine",
    "threads",
    "connections",
    "pipeline",
    "batch",
    "rate",
];

/// `key=value` tokens of the header comment line.
fn parse_header(line: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let body = line.split_once(": ").map_or(line, |(_, b)| b);
    for token in body.split_whitespace() {
        if let Some((k, v)) = token.split_once('=') {
            // The sweep of a batched workload repeats batch=; the first one is the
            // point's batch either way.
            out.entry(k.to_string()).or_insert_with(|| v.to_string());
            if !COORDINATES.contains(&k) {
                out.insert("sweep_param".to_string(), k.to_string());
                out.insert("sweep_value".to_string(), v.to_string());
            }
        }
    }
    out
}

/// The percentile spectrum of a histogram: (nines, value in ns) points, the classic
/// HdrHistogram percentile plot with its tail spread out.
pub fn spectrum(h: &Histogram<u64>) -> Vec<[f64; 2]> {
    let count = h.len();
    if count == 0 {
        return Vec::new();
    }
    // The last quantile of a histogram is 1.0; show it at the resolution the
    // sample count supports.
    let limit = (count as f64).log10().max(1.0);
    let mut out: Vec<[f64; 2]> = Vec::new();
    for v in h.iter_quantiles(5) {
        let x = to_nines(v.quantile_iterated_to()).min(limit);
        let y = h.highest_equivalent(v.value_iterated_to()) as f64;
        if out.last().is_some_and(|p| p[0] >= x) {
            continue;
        }
        out.push([x, y]);
    }
    if let Some(last) = out.last_mut() {
        last[1] = last[1].max(h.max() as f64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_name_the_point() {
        let h = parse_header(
            "#kvmark 0.1.0 interval histograms, point 3: workload=batch engine=sim (kvmark sim 0.1.0) threads=2 batch=8 batch=8 rate=5000 (constant arrivals)",
        );
        assert_eq!(h["workload"], "batch");
        assert_eq!(h["engine"], "sim");
        assert_eq!(h["threads"], "2");
        assert_eq!(h["batch"], "8");
        assert_eq!(h["rate"], "5000");
        assert!(!h.contains_key("sweep_param"));
        let s = parse_header("#kvmark x, point 1: workload=v engine=e threads=1 batch=1 valuebytes=4096");
        assert_eq!(
            (s["sweep_param"].as_str(), s["sweep_value"].as_str()),
            ("valuebytes", "4096")
        );
    }

    #[test]
    fn the_spectrum_rises_to_the_maximum() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v).unwrap();
        }
        let s = spectrum(&h);
        assert!(s.len() > 10);
        assert!(s.windows(2).all(|w| w[0][0] < w[1][0] && w[0][1] <= w[1][1]));
        assert_eq!(s.last().unwrap()[1], h.max() as f64);
        assert!(s.last().unwrap()[0] <= 4.0);
    }
}
