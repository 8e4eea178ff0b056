//! One point's intervals over every segment, streamed: each segment's histogram log
//! and timeline rows are read in time order side by side, intervals aligned by
//! absolute time (to the nearest interval of the run's period, counted from the
//! earliest segment's first interval; without a timeline each timed phase is one
//! interval, matched by its order), and each merged interval is sent as a sample:
//! rates and counts summed, percentiles from the merge of the segments' interval
//! histograms, probe readings (system, engine) the mean over the segments that
//! sampled them. The same pass adds every interval into the point's totals.

use std::collections::BTreeMap;
use std::iter::Peekable;
use std::sync::Arc;

use super::counts::{self, Counts};
use super::decode::Decoder;
use super::points::parse_tag;
use super::read::{Intervals, Rows, SegmentDir};
use crate::metrics::{Histogram, LatencySet, OpKind, Recorder, new_histogram, op_label};
use crate::result::PointKey;
use crate::run::observer::{Observer, Sample};

/// (phase, operation kind, response time) of a histogram.
pub(super) type TagKey = (String, OpKind, bool);

/// A point's histograms over all its intervals.
pub(super) struct Totals {
    /// Merged over every segment, per tag (warm-up intervals filed under the first
    /// timed phase, whose measured part they hold).
    pub(super) merged: BTreeMap<TagKey, Histogram>,
    /// Per segment (in the order given), the calls each tag's log holds.
    pub(super) counts: Vec<BTreeMap<TagKey, u64>>,
    /// Per segment, every service time of the point.
    pub(super) service: Vec<Histogram>,
    /// Per repeat (its index in every segment), operation kind and response time,
    /// merged over segments: each interval goes to the repeat whose measured time it
    /// falls in (by the segment's repeat times in its results.json).
    pub(super) repeats: BTreeMap<(usize, OpKind, bool), Histogram>,
    /// Per segment, the service-time calls each repeat's intervals hold per kind, to
    /// check the attribution against the segment's own per-repeat counts.
    pub(super) repeat_counts: Vec<BTreeMap<(usize, OpKind), u64>>,
}

/// Where segment `s`'s repeats of point `p` divide, Unix seconds: halfway between one
/// repeat's end and the next one's start (an interval starting before the first
/// bound is the first repeat's, and so on). None when a repeat's times are missing.
fn repeat_bounds(s: &SegmentDir, p: usize) -> Option<Vec<f64>> {
    let repeats = s.doc["points"][p]["repeats"].as_array()?;
    let spans: Vec<(f64, f64)> = repeats
        .iter()
        .map(|r| {
            let phases = r["phases"].as_array()?;
            let ns = |f: &'static str| phases.iter().filter_map(move |ph| ph[f].as_u64()).filter(|&t| t > 0);
            Some((
                ns("start_unix_ns").min()? as f64 / 1e9,
                ns("end_unix_ns").max()? as f64 / 1e9,
            ))
        })
        .collect::<Option<_>>()?;
    Some(spans.windows(2).map(|w| (w[0].1 + w[1].0) / 2.0).collect())
}

/// One merged interval of one phase.
struct Bucket {
    phase: String,
    repeat: usize,
    start: f64,
    end: f64,
    /// Metric name, sum, and how many segments gave it, in first-seen order.
    metrics: Vec<(Arc<str>, f64, usize)>,
    /// Per (operation kind, response time), the calls of the segments' intervals,
    /// recorded into `latency` once the bucket is whole.
    counts: Vec<((OpKind, bool), Counts)>,
    latency: Recorder,
}

impl Bucket {
    fn span(&mut self, start: f64, end: f64) {
        if self.end == 0.0 {
            (self.start, self.end) = (start, end);
        } else {
            self.start = self.start.min(start);
            self.end = self.end.max(end);
        }
    }
}

/// One segment's streams.
struct Source {
    intervals: Peekable<Intervals>,
    rows: Peekable<Rows>,
    /// Without a timeline: the last interval start seen and its step number.
    last_start: Option<f64>,
    step: i64,
}

/// Where intervals go: the run's period and the earliest start.
struct Grid {
    period: Option<f64>,
    origin: f64,
}

impl Grid {
    fn slot(&self, end: f64) -> Option<i64> {
        self.period.map(|per| ((end - self.origin) / per).round() as i64)
    }
}

impl Source {
    /// The bucket of the next interval, if any.
    fn next_interval_slot(&mut self, grid: &Grid) -> Result<Option<i64>, String> {
        let (step, last) = (self.step, self.last_start);
        match self.intervals.peek() {
            None => Ok(None),
            Some(Err(e)) => Err(e.clone()),
            Some(Ok(i)) => {
                Ok(Some(grid.slot(i.start_unix + i.length).unwrap_or_else(|| {
                    if last == Some(i.start_unix) { step } else { step + 1 }
                })))
            }
        }
    }

    fn next_row_slot(&mut self, grid: &Grid) -> Result<Option<i64>, String> {
        match self.rows.peek() {
            None => Ok(None),
            Some(Err(e)) => Err(e.clone()),
            Some(Ok(r)) => Ok(grid.slot(r.unix_s)),
        }
    }
}

/// Whether a metric adds up over segments (rates and counts) rather than averages
/// (probe readings); latency figures are recomputed from histograms instead.
fn sums(name: &str) -> bool {
    matches!(name, "wu_per_s" | "ops_per_s" | "keys_per_s")
        || (name.starts_with("op.") && (name.ends_with(".count") || name.ends_with(".errors")))
}

fn is_latency(name: &str) -> bool {
    name.starts_with("op.") && (name.ends_with(".p50_ns") || name.ends_with(".p99_ns") || name.ends_with(".max_ns"))
}

/// Streams point `p` of every segment: sends its merged samples to `sink` in time
/// order and returns its totals. `first_phase` is the phase warm-up intervals belong
/// to.
pub(super) fn stream_point(
    segs: &[SegmentDir],
    p: usize,
    key: &PointKey,
    first_phase: &str,
    sink: &dyn Observer,
) -> Result<Totals, String> {
    let seq = p + 1;
    let period = segs[0]
        .doc
        .pointer("/run/timeline_s")
        .and_then(serde_json::Value::as_f64);
    let mut sources: Vec<Source> = segs
        .iter()
        .map(|s| {
            Ok(Source {
                intervals: s.intervals(p)?.peekable(),
                rows: s.rows(seq)?.peekable(),
                last_start: None,
                step: -1,
            })
        })
        .collect::<Result<_, String>>()?;
    let mut origin = f64::INFINITY;
    for s in sources.iter_mut() {
        if let Some(Ok(i)) = s.intervals.peek() {
            origin = origin.min(i.start_unix);
        }
        if let Some(Ok(r)) = s.rows.peek() {
            origin = origin.min(r.unix_s - r.interval_s);
        }
    }
    let mut totals = Totals {
        merged: BTreeMap::new(),
        counts: vec![BTreeMap::new(); segs.len()],
        service: (0..segs.len()).map(|_| new_histogram()).collect(),
        repeats: BTreeMap::new(),
        repeat_counts: vec![BTreeMap::new(); segs.len()],
    };
    let bounds: Vec<Option<Vec<f64>>> = segs.iter().map(|s| repeat_bounds(s, p)).collect();
    if !origin.is_finite() {
        return Ok(totals);
    }
    let grid = Grid { period, origin };
    let mut dec = Decoder::default();
    // Recorders and counts of emitted buckets, kept for reuse (each about 270 KB).
    let mut spare = Spare::default();
    // The totals' counts, made into histograms at the end.
    let mut merged: BTreeMap<TagKey, Counts> = BTreeMap::new();
    let mut service: Vec<Counts> = (0..segs.len()).map(|_| Counts::new()).collect();
    let mut repeats: BTreeMap<(usize, OpKind, bool), Counts> = BTreeMap::new();
    loop {
        let mut next: Option<i64> = None;
        for s in sources.iter_mut() {
            for slot in [s.next_interval_slot(&grid)?, s.next_row_slot(&grid)?]
                .into_iter()
                .flatten()
            {
                next = Some(next.map_or(slot, |n| n.min(slot)));
            }
        }
        let Some(slot) = next else { break };
        let mut filled: Vec<Bucket> = Vec::new();
        for (si, s) in sources.iter_mut().enumerate() {
            while s.next_interval_slot(&grid)? == Some(slot) {
                let i = s.intervals.next().expect("peeked")?;
                if s.last_start != Some(i.start_unix) {
                    s.last_start = Some(i.start_unix);
                    s.step += 1;
                }
                let Some((phase, kind, response)) = parse_tag(&i.tag) else {
                    continue;
                };
                let at = |e: String| format!("{}: point {seq}: {e}", segs[si].path.display());
                let n = dec.decode(&i.encoded).map_err(at)?;
                let b = filled_or(&mut filled, phase, &mut spare.recorders);
                b.span(i.start_unix, i.start_unix + i.length);
                let at_kind = match b.counts.iter().position(|(k, _)| *k == (kind, response)) {
                    Some(k) => k,
                    None => {
                        b.counts
                            .push(((kind, response), spare.counts.pop().unwrap_or_else(Counts::new)));
                        b.counts.len() - 1
                    }
                };
                dec.add_to_counts(&mut b.counts[at_kind].1).map_err(at)?;
                let tag = (total_phase(phase, first_phase).to_string(), kind, response);
                let count = totals.counts[si].entry(tag).or_insert(0);
                *count = count.saturating_add(n);
                if !response {
                    dec.add_to_counts(&mut service[si]).map_err(at)?;
                }
                if let Some(b) = &bounds[si] {
                    let repeat = b.iter().take_while(|&&bound| bound <= i.start_unix).count();
                    dec.add_to_counts(repeats.entry((repeat, kind, response)).or_insert_with(Counts::new))
                        .map_err(at)?;
                    if !response {
                        let count = totals.repeat_counts[si].entry((repeat, kind)).or_insert(0);
                        *count = count.saturating_add(n);
                    }
                }
            }
            while s.next_row_slot(&grid)? == Some(slot) {
                let r = s.rows.next().expect("peeked")?;
                let b = filled_or(&mut filled, &r.phase, &mut spare.recorders);
                b.span(r.unix_s - r.interval_s, r.unix_s);
                b.repeat = b.repeat.max(r.repeat);
                match b.metrics.iter_mut().find(|(m, _, _)| *m == r.metric) {
                    Some((_, v, k)) => {
                        *v += r.value;
                        *k += 1;
                    }
                    None => b.metrics.push((r.metric, r.value, 1)),
                }
            }
        }
        filled.sort_by(|a, b| a.end.total_cmp(&b.end));
        for mut b in filled {
            // Each bucket's calls once into its histograms and the point's totals.
            let values = dec.our_values();
            for ((kind, response), mut c) in b.counts.drain(..) {
                let st = b.latency.kind_mut(kind);
                let into = if response {
                    st.resp.get_or_insert_with(new_histogram)
                } else {
                    &mut st.hist
                };
                let tag = (total_phase(&b.phase, first_phase).to_string(), kind, response);
                let total = merged.entry(tag).or_insert_with(Counts::new);
                c.drain(|at, n| {
                    counts::record(into, values, at, n);
                    total.add(at, n);
                });
                spare.counts.push(c);
            }
            let metrics = merged_metrics(&b);
            let has_latency = b.latency.used().next().is_some();
            sink.sample(&Sample {
                point: key,
                point_seq: seq,
                repeat: b.repeat.max(1),
                phase: &b.phase,
                start_s: b.start - origin,
                elapsed_s: b.end - origin,
                start_unix: b.start,
                metrics: &metrics,
                latency: has_latency.then_some(&b.latency),
            });
            let mut rec = b.latency;
            rec.reset();
            spare.recorders.push(rec);
        }
    }
    let values = dec.our_values();
    totals.merged = merged
        .into_iter()
        .map(|(tag, c)| (tag, c.into_histogram(values)))
        .collect();
    totals.service = service.into_iter().map(|c| c.into_histogram(values)).collect();
    totals.repeats = repeats
        .into_iter()
        .map(|(key, c)| (key, c.into_histogram(values)))
        .collect();
    Ok(totals)
}

/// What emitted buckets leave for the next ones.
#[derive(Default)]
struct Spare {
    recorders: Vec<Recorder>,
    counts: Vec<Counts>,
}

/// The phase whose totals an interval of `phase` adds to: warm-up intervals go to the
/// first timed phase (`first`), whose measured part they hold.
fn total_phase<'a>(phase: &'a str, first: &'a str) -> &'a str {
    if phase == "warmup" { first } else { phase }
}

/// The bucket of `phase` in `filled`, made when it is the first of its phase.
fn filled_or<'b>(filled: &'b mut Vec<Bucket>, phase: &str, spare: &mut Vec<Recorder>) -> &'b mut Bucket {
    let i = match filled.iter().position(|b| b.phase == phase) {
        Some(i) => i,
        None => {
            filled.push(Bucket {
                phase: phase.to_string(),
                repeat: 0,
                start: 0.0,
                end: 0.0,
                metrics: Vec::new(),
                counts: Vec::new(),
                latency: spare.pop().unwrap_or_default(),
            });
            filled.len() - 1
        }
    };
    &mut filled[i]
}

/// A bucket's metrics: sums, recomputed percentiles, means.
fn merged_metrics(b: &Bucket) -> Vec<(String, f64)> {
    b.metrics
        .iter()
        .filter_map(|(name, sum, n)| {
            if sums(name) {
                return Some((name.to_string(), *sum));
            }
            if is_latency(name) {
                return latency_metric(b, name).map(|v| (name.to_string(), v));
            }
            Some((name.to_string(), sum / *n as f64))
        })
        .collect()
}

/// `op.LABEL.p50_ns` (or p99, max) from the bucket's merged histogram of LABEL.
fn latency_metric(b: &Bucket, name: &str) -> Option<f64> {
    let body = name.strip_prefix("op.")?;
    let (label, stat) = body.rsplit_once('.')?;
    let h = b.latency.used().find_map(|(kind, st)| {
        LatencySet::ALL
            .into_iter()
            .find(|set| op_label(kind, *set) == label)
            .and_then(|set| st.latency(set))
    })?;
    Some(match stat {
        "p50_ns" => h.value_at_quantile(0.50) as f64,
        "p99_ns" => h.value_at_quantile(0.99) as f64,
        _ => h.max() as f64,
    })
}
