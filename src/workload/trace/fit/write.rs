//! The fitted spec as JSON, and the report of how well each part fits.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::model::{self, GOOD_FIT, Histogram, Placement, Popularity, PopularityFit, SizeFit};
use super::{FitOp, FitRequest, TraceStats};

/// A fit: the spec and what to tell the user about it.
#[derive(Debug)]
pub struct FitReport {
    /// The spec, as JSON text.
    pub spec: String,
    /// How well each part fits and what was not modelled, one line each.
    pub text: String,
}

fn histogram(h: &Histogram) -> Value {
    json!({"histogram": {"bounds": h.bounds, "weights": h.weights}})
}

/// The report's line about a size fit.
fn sizes_line(what: &str, f: &SizeFit) -> String {
    let shape = if f.exact {
        format!(
            "{} distinct sizes, written exactly",
            f.hist.weights.iter().filter(|w| **w > 0.0).count()
        )
    } else {
        format!(
            "a histogram of {} bins of about equal mass (a size as common as a bin has its own)",
            f.hist.weights.iter().filter(|w| **w > 0.0).count()
        )
    };
    format!(
        "{what}: {} sizes from {} to {} bytes, mean {:.1}; {shape}, KS distance {:.4}",
        f.count, f.min, f.max, f.mean, f.ks
    )
}

/// The spec and report for `st`.
pub fn report(req: &FitRequest<'_>, st: &TraceStats) -> FitReport {
    let mut text = String::new();
    let path = req.path.display();
    let secs = st.span_ns as f64 / 1e9;
    let windows = st.windows.len();
    let _ = writeln!(
        text,
        "trace: {path} ({}), {} requests kvmark can replay{}",
        req.format.name(),
        st.requests,
        if st.span_ns > 0 {
            format!(
                " over {secs:.3} s, in {windows} window(s) of {:.3} s",
                secs / windows as f64
            )
        } else {
            " with no time span: one group, no rate".to_string()
        }
    );
    let mut section = Map::new();
    section.insert("name".into(), json!("trace"));
    // Keys: the written keys' sizes; alphanumeric, as random as the trace's anonymized keys.
    let keys = (!st.key_sizes.is_empty()).then(|| model::fit_sizes(&st.key_sizes));
    if let Some(k) = &keys {
        section.insert(
            "key".into(),
            json!({"uniform": {"len": histogram(&k.hist), "character_set": "alphanumeric"}}),
        );
        let _ = writeln!(text, "{}", sizes_line("key sizes of the written keys", k));
    }
    let _ = writeln!(
        text,
        "key space: {} distinct keys, {} of them written (the spec's keys; the rest are only read or deleted, and miss)",
        st.distinct_keys,
        st.popularity.len()
    );
    let puts = (!st.put_sizes.is_empty()).then(|| model::fit_sizes(&st.put_sizes));
    if let Some(p) = &puts {
        section.insert("val_len".into(), histogram(&p.hist));
        let _ = writeln!(text, "{}", sizes_line("written values", p));
    }
    let appends = (!st.append_sizes.is_empty()).then(|| model::fit_sizes(&st.append_sizes));
    if let Some(a) = &appends {
        let _ = writeln!(text, "{}", sizes_line("appended bytes", a));
    }
    let counters = (!st.rmw_sizes.is_empty()).then(|| model::fit_sizes(&st.rmw_sizes));
    if let Some(c) = &counters {
        let _ = writeln!(text, "{}", sizes_line("counters written back", c));
    }
    match &model::fit_popularity(&st.popularity) {
        Some(p) => {
            let (selection, line) = selection(p);
            if let Some(sel) = selection {
                section.insert("selection".into(), sel);
            }
            let _ = writeln!(text, "{line}");
        }
        None => {
            let _ = writeln!(
                text,
                "key popularity: no written key was used again, so keys are chosen uniformly"
            );
        }
    }
    let mut groups = Vec::new();
    let sped = if req.speed == 1.0 {
        String::new()
    } else {
        format!(", rates {} times the trace's (--speed)", req.speed)
    };
    let _ = writeln!(
        text,
        "operations per window (a group each{sped}):\n  {:>6} {:>12} {}",
        "window",
        "rate/s",
        FitOp::ALL
            .iter()
            .map(|o| format!("{:>10}", short(*o)))
            .collect::<String>()
    );
    for (w, counts) in st.windows.iter().enumerate() {
        let ops: u64 = counts.iter().sum();
        let rate = (st.span_ns > 0).then(|| ops as f64 / (secs / windows as f64) * req.speed);
        let _ = writeln!(
            text,
            "  {:>6} {:>12} {}",
            w + 1,
            rate.map_or("-".to_string(), |r| format!("{r:.1}")),
            counts.iter().map(|c| format!("{c:>10}")).collect::<String>()
        );
        if ops == 0 {
            continue;
        }
        let mut g = Map::new();
        g.insert("name".into(), json!(format!("window{}", w + 1)));
        if let Some(r) = rate {
            g.insert("rate".into(), json!(r));
        }
        for op in FitOp::ALL {
            let n = counts[op as usize];
            if n == 0 {
                continue;
            }
            let mut o = Map::new();
            o.insert("op_count".into(), json!(n));
            match op {
                FitOp::Merge => {
                    if let Some(a) = &appends {
                        o.insert("val_len".into(), histogram(&a.hist));
                    }
                }
                FitOp::ReadModifyWrite => {
                    if let Some(c) = &counters {
                        o.insert("val_len".into(), histogram(&c.hist));
                    }
                }
                _ => {}
            }
            g.insert(op.field().into(), Value::Object(o));
        }
        groups.push(Value::Object(g));
    }
    let empty = st.windows.iter().filter(|c| c.iter().sum::<u64>() == 0).count();
    if empty > 0 {
        let _ = writeln!(
            text,
            "{empty} window(s) held no request and are left out: the spec runs the next window straight on"
        );
    }
    section.insert("groups".into(), Value::Array(groups));
    let name = req
        .path
        .file_stem()
        .map_or_else(|| "trace".to_string(), |s| s.to_string_lossy().into_owned());
    let spec = json!({"name": format!("fit-{name}"), "sections": [Value::Object(section)]});
    let mut missing = Vec::new();
    for (kind, n) in &st.unmapped {
        missing.push(format!(
            "{n} request(s) of kind '{kind}' (no kv verb; a replay skips them too)"
        ));
    }
    if st.ttls > 0 {
        missing.push(format!(
            "{} request(s) set a TTL: the spec's keys live until deleted",
            st.ttls
        ));
    }
    if st.batches > 0 {
        missing.push(format!(
            "{} batch request(s) (MGET, MSET, DEL of several keys) are counted as their single-key operations",
            st.batches
        ));
    }
    if st.appends_to_absent > 0 {
        missing.push(format!(
            "{} append(s) to keys that were not live are appends to live keys in the spec",
            st.appends_to_absent
        ));
    }
    if st.time_goes_back {
        missing.push("the trace's time goes back: requests were put in windows by their time, not their order".into());
    }
    missing.push("the order of operations inside a window (the spec interleaves them at random)".into());
    missing.push("which key gets which size (each write of the spec draws a size)".into());
    missing.push("clients (a run's threads share the spec's operations evenly)".into());
    let _ = writeln!(text, "not modelled:");
    for m in missing {
        let _ = writeln!(text, "  - {m}");
    }
    FitReport {
        spec: serde_json::to_string_pretty(&spec).expect("a JSON value serialises"),
        text,
    }
}

/// The spec's selection for a fitted popularity, and the report's line about it.
fn selection(p: &PopularityFit) -> (Option<Value>, String) {
    let figures = format!(
        "{} accesses over {} keys; KS distance: uniform {:.4}, zipf(s = {:.3}) {:.4}, rank histogram {:.4}",
        p.accesses, p.keys, p.ks_uniform, p.zipf_s, p.ks_zipf, p.ks_ranks
    );
    // A spec's ranks count from the oldest live key (`latest`: the newest), so the fit
    // places the hot keys where the trace's are by age.
    let placement = p.placement();
    let (hot_old, hot_new) = (placement == Placement::Oldest, placement == Placement::Newest);
    let age = format!(
        "the accesses' mean age is {:.3} of the key space from the oldest (hottest oldest would give {:.3}, \
         spread 0.5, hottest newest {:.3})",
        p.age_trace,
        p.age_oldest,
        1.0 - p.age_oldest
    );
    match &p.chosen {
        Popularity::Uniform => (
            None,
            format!("key popularity: uniform (within {GOOD_FIT} of the trace); {figures}"),
        ),
        Popularity::Zipf { s } => {
            let (sel, placed) = if hot_new {
                (json!({"latest": {"s": s}}), "the newest keys hottest (latest)")
            } else {
                (
                    json!({"zipf": {"s": s, "scrambled": !hot_old}}),
                    if hot_old {
                        "the oldest keys hottest"
                    } else {
                        "hot keys spread over the key space (scrambled)"
                    },
                )
            };
            (
                Some(sel),
                format!("key popularity: zipf s = {s:.3} (within {GOOD_FIT} of the trace), {placed}; {figures}; {age}"),
            )
        }
        Popularity::Ranks(h) => {
            let mut h = h.clone();
            let placed = if hot_new {
                // Mirror the fractions, so the hottest ranks are the newest keys.
                h.bounds = h.bounds.iter().rev().map(|b| 1.0 - b).collect();
                h.weights.reverse();
                "the newest keys hottest"
            } else if hot_old {
                "the oldest keys hottest"
            } else {
                "the oldest keys hottest (the trace's hot keys are not its oldest, and a rank histogram cannot \
                 scramble: the hot keys' age is not modelled)"
            };
            (
                Some(histogram(&h)),
                format!(
                    "key popularity: an empirical rank histogram of {} bins (no law within {GOOD_FIT}), {placed}; {figures}; {age}",
                    h.weights.len()
                ),
            )
        }
    }
}

/// A column heading for an operation.
fn short(op: FitOp) -> &'static str {
    match op {
        FitOp::Insert => "insert",
        FitOp::Update => "update",
        FitOp::PointQuery => "get-hit",
        FitOp::EmptyPointQuery => "get-miss",
        FitOp::PointDelete => "del",
        FitOp::EmptyPointDelete => "del-miss",
        FitOp::Merge => "append",
        FitOp::ReadModifyWrite => "counter",
    }
}
