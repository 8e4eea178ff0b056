//! The merged timeline of one point: every segment's intervals aligned by absolute
//! time (to the nearest interval of the run's period, counted from the earliest
//! segment's first interval), rates and counts summed, each interval's percentiles
//! taken from the merge of the segments' interval histograms, other metrics (system
//! and engine probes) the mean over the segments that sampled them. Without a
//! timeline each timed phase is one interval, matched by its order.

use std::collections::BTreeMap;

use super::points::parse_tag;
use super::read::SegmentDir;
use crate::metrics::{LatencySet, Recorder, op_label};
use crate::result::PointResult;
use crate::run::observer::{Observer, Sample};

/// One merged interval.
#[derive(Default)]
struct Bucket {
    repeat: usize,
    start: f64,
    end: f64,
    /// Metric name to (sum, how many segments gave it), in first-seen order.
    metrics: Vec<(String, f64, usize)>,
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

/// Whether a metric adds up over segments (rates and counts) rather than averages
/// (probe readings); latency figures are recomputed from histograms instead.
fn sums(name: &str) -> bool {
    matches!(name, "wu_per_s" | "ops_per_s" | "keys_per_s") || (name.starts_with("op.") && name.ends_with(".count"))
}

fn is_latency(name: &str) -> bool {
    name.starts_with("op.") && (name.ends_with(".p50_ns") || name.ends_with(".p99_ns") || name.ends_with(".max_ns"))
}

/// Sends point `p`'s merged samples to `sink`, in time order.
pub(super) fn send_samples(
    segs: &[SegmentDir],
    p: usize,
    point: &PointResult,
    sink: &dyn Observer,
) -> Result<(), String> {
    let seq = p + 1;
    let period = segs[0]
        .doc
        .pointer("/run/timeline_s")
        .and_then(serde_json::Value::as_f64);
    let origin = segs
        .iter()
        .flat_map(|s| {
            let logs = s.hlogs[p].iter().flatten().map(|i| i.start_unix);
            let rows = s.rows.iter().filter(|r| r.seq == seq).map(|r| r.unix_s - r.interval_s);
            logs.chain(rows)
        })
        .fold(f64::INFINITY, f64::min);
    if !origin.is_finite() {
        return Ok(());
    }
    let slot = |end: f64| period.map(|per| ((end - origin) / per).round() as i64);
    let mut buckets: BTreeMap<(i64, String), Bucket> = BTreeMap::new();
    for s in segs {
        // Without a timeline: the k-th distinct interval start of a segment is its
        // k-th step.
        let mut starts: Vec<f64> = Vec::new();
        for i in s.hlogs[p].iter().flatten() {
            let Some((phase, kind, response)) = parse_tag(&i.tag) else {
                continue;
            };
            let end = i.start_unix + i.length;
            let n = slot(end).unwrap_or_else(|| {
                if starts.last() != Some(&i.start_unix) {
                    starts.push(i.start_unix);
                }
                starts.len() as i64 - 1
            });
            let b = buckets.entry((n, phase.to_string())).or_default();
            b.span(i.start_unix, end);
            let st = b.latency.kind_mut(kind);
            let h = if response {
                st.resp.get_or_insert_with(crate::metrics::new_histogram)
            } else {
                &mut st.hist
            };
            h.add(&i.hist).map_err(|e| format!("{}: {e:?}", s.path.display()))?;
        }
        for r in s.rows.iter().filter(|r| r.seq == seq) {
            let Some(n) = slot(r.unix_s) else { continue };
            let b = buckets.entry((n, r.phase.clone())).or_default();
            b.span(r.unix_s - r.interval_s, r.unix_s);
            b.repeat = b.repeat.max(r.repeat);
            match b.metrics.iter_mut().find(|(m, _, _)| *m == r.metric) {
                Some((_, v, k)) => {
                    *v += r.value;
                    *k += 1;
                }
                None => b.metrics.push((r.metric.clone(), r.value, 1)),
            }
        }
    }
    let mut ordered: Vec<((i64, String), Bucket)> = buckets.into_iter().collect();
    ordered.sort_by(|a, b| a.1.end.total_cmp(&b.1.end).then(a.0.0.cmp(&b.0.0)));
    for ((_, phase), b) in &ordered {
        let metrics = merged_metrics(b);
        let has_latency = b.latency.used().next().is_some();
        sink.sample(&Sample {
            point: &point.key,
            point_seq: seq,
            repeat: b.repeat.max(1),
            phase,
            start_s: b.start - origin,
            elapsed_s: b.end - origin,
            start_unix: b.start,
            metrics: &metrics,
            latency: has_latency.then_some(&b.latency),
        });
    }
    Ok(())
}

/// A bucket's metrics: sums, recomputed percentiles, means.
fn merged_metrics(b: &Bucket) -> Vec<(String, f64)> {
    b.metrics
        .iter()
        .filter_map(|(name, sum, n)| {
            if sums(name) {
                return Some((name.clone(), *sum));
            }
            if is_latency(name) {
                return latency_metric(b, name).map(|v| (name.clone(), v));
            }
            Some((name.clone(), sum / *n as f64))
        })
        .collect()
}

/// `op.LABEL.p50_ns` (or p99, max) from the bucket's merged histogram of LABEL.
fn latency_metric(b: &Bucket, name: &str) -> Option<f64> {
    let body = name.strip_prefix("op.")?;
    let (label, stat) = body.rsplit_once('.')?;
    let (kind, st) = b
        .latency
        .used()
        .find(|(k, _)| op_label(*k, LatencySet::Service) == label || op_label(*k, LatencySet::Response) == label)?;
    let set = if op_label(kind, LatencySet::Service) == label {
        LatencySet::Service
    } else {
        LatencySet::Response
    };
    let h = st.latency(set)?;
    Some(match stat {
        "p50_ns" => h.value_at_quantile(0.50) as f64,
        "p99_ns" => h.value_at_quantile(0.99) as f64,
        _ => h.max() as f64,
    })
}
