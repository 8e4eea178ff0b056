//! The figures a point's results.json holds beside its operations, merged over the
//! segments: the open-loop schedule (`pace`: waits and late starts summed, lags the
//! largest, the start-accuracy histogram merged exactly from its encoding) and the
//! `--verify` counts (summed per anomaly kind, the first examples kept up to the
//! per-kind limit, as repeats of one run merge).

use serde_json::Value;

use super::decode::Decoder;
use super::read::SegmentDir;
use crate::engine::Injected;
use crate::kv::verify::{Anomaly, Example, VerifyReport};
use crate::metrics::PaceStats;

fn uint(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Point `p`'s schedule statistics over the segments that ran it paced; None in
/// closed loop.
pub(super) fn merge_pace(segs: &[SegmentDir], p: usize) -> Result<Option<PaceStats>, String> {
    let mut out: Option<PaceStats> = None;
    let mut dec = Decoder::default();
    for s in segs {
        let v = &s.doc["points"][p]["pace"];
        if !v.is_object() {
            continue;
        }
        let mut one = PaceStats {
            waited: uint(&v["waited"]),
            late: uint(&v["late"]),
            max_lag_ns: uint(&v["max_lag_ns"]),
            final_lag_ns: uint(&v["final_lag_ns"]),
            ..PaceStats::default()
        };
        if let Some(encoded) = v["start_accuracy_hdr"].as_str() {
            dec.decode(encoded)
                .and_then(|_| dec.add_to(&mut one.accuracy))
                .map_err(|e| format!("{}: points[{p}].pace.start_accuracy_hdr: {e}", s.path.display()))?;
        } else if one.waited > 0 {
            return Err(format!(
                "{}: points[{p}].pace has no start_accuracy_hdr (written by an older kvmark); rerun the segment",
                s.path.display()
            ));
        }
        out.get_or_insert_with(PaceStats::default).merge(&one);
    }
    Ok(out)
}

/// Point `p`'s `--verify` counts over the segments; None for a plain run.
pub(super) fn merge_verify(segs: &[SegmentDir], p: usize) -> Option<VerifyReport> {
    let mut out: Option<VerifyReport> = None;
    for s in segs {
        let v = &s.doc["points"][p]["verify"];
        if !v.is_object() {
            continue;
        }
        let mut one = VerifyReport {
            reads: uint(&v["reads_checked"]),
            final_keys: uint(&v["keys_read_back"]),
            ..VerifyReport::default()
        };
        for (n, kind) in one.counts.iter_mut().zip(Anomaly::ALL) {
            *n = uint(&v["counts"][kind.name()]);
        }
        if v["injected"].is_object() {
            let mut injected = Injected::default();
            for (name, n) in injected.named_mut() {
                *n = uint(&v["injected"][name]);
            }
            one.injected = Some(injected);
        }
        let text = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_string();
        one.examples = v["examples"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| {
                        let kind = Anomaly::ALL.into_iter().find(|k| e["kind"] == k.name())?;
                        Some(Example {
                            kind,
                            key: text(e, "key"),
                            expected: text(e, "expected"),
                            got: text(e, "got"),
                            final_pass: e["final_pass"].as_bool().unwrap_or(false),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.get_or_insert_with(VerifyReport::default).merge(&one);
    }
    out
}
