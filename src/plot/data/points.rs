//! Grid points of a result directory: from `results.json` when the run finished
//! (it is written at the end), else from `points.tsv` (written point by point, so a
//! run that died still has the points it finished).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::epoch::Epoch;
use super::tsv::Table;

/// Median, minimum and maximum over repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest repeat.
    pub min: f64,
    /// The largest repeat.
    pub max: f64,
}

/// A latency distribution's summary, in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latency {
    /// The operation kind (get, put, ...).
    pub op: String,
    /// `service` (the engine call) or `response` (from the intended start).
    pub set: String,
    /// Calls.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// p50, p90, p99, p99.9, p99.99 (0 when unknown).
    pub p50: f64,
    /// p90.
    pub p90: f64,
    /// p99.
    pub p99: f64,
    /// p99.9.
    pub p999: f64,
    /// p99.99.
    pub p9999: f64,
    /// The largest.
    pub max: f64,
}

impl Latency {
    /// "get", or "get (response)" for response times.
    pub fn label(&self) -> String {
        if self.set == "response" {
            format!("{} (response time)", self.op)
        } else {
            self.op.clone()
        }
    }
}

/// An open-loop target rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// As given (`5000`, `200MB/s`).
    pub text: String,
    /// Per second, in units, or bytes when `bytes`.
    pub per_s: f64,
    /// A bandwidth target.
    pub bytes: bool,
}

/// The load phase of a point (its `seed` in the result files).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Keys written.
    pub keys: u64,
    /// Seconds.
    pub seconds: f64,
    /// Keys per second.
    pub keys_per_s: f64,
}

/// A self-check the point failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The check's name (`uncertain_percentiles`, ...).
    pub name: String,
    /// What failed and what to do; empty when read from `points.tsv`, which keeps
    /// only the names.
    pub message: String,
}

/// One grid point.
#[derive(Debug, Clone)]
pub struct Point {
    /// Workload name.
    pub workload: String,
    /// Engine name.
    pub engine: String,
    /// Engine library version.
    pub engine_version: String,
    /// Worker threads.
    pub threads: usize,
    /// Connections per thread (1 in reports older than `--connections`).
    pub connections: usize,
    /// Requests in flight per connection (1 in reports older than `--pipeline`).
    pub pipeline: usize,
    /// Batch size.
    pub batch: usize,
    /// The workload's own sweep (parameter, value), other than batch.
    pub sweep: Option<(String, String)>,
    /// Open-loop target.
    pub rate: Option<Rate>,
    /// Achieved rate in the target's unit (open loop).
    pub achieved: Option<Spread>,
    /// ok, failed, interrupted.
    pub status: String,
    /// Workload units per second over repeats.
    pub wu: Spread,
    /// Primitive operations per second over repeats.
    pub ops: Spread,
    /// Repeats measured.
    pub repeats: usize,
    /// The load phase.
    pub load: Option<Load>,
    /// Latency per operation kind and latency set, over all phases.
    pub latency: Vec<Latency>,
    /// The growing-values epoch this point measured.
    pub epoch: Option<Epoch>,
    /// The self-checks it failed (none in results written before the checks).
    pub checks: Vec<Check>,
}

impl Point {
    /// The point's coordinates apart from the engine, as a short label ("t2 b8").
    pub fn cell_label(&self) -> String {
        super::cell_label(
            self.threads,
            self.connections,
            self.pipeline,
            self.batch,
            self.sweep.as_ref(),
            self.rate.as_ref().map(|r| r.text.as_str()),
        )
    }
}

fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn spread(v: Option<&Value>) -> Option<Spread> {
    let v = v.filter(|v| v.is_object())?;
    Some(Spread {
        median: f(v, "median"),
        min: f(v, "min"),
        max: f(v, "max"),
    })
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn latency(op: &str, set: &str, v: &Value) -> Latency {
    let pct = v.get("percentiles_ns").cloned().unwrap_or(Value::Null);
    Latency {
        op: op.to_string(),
        set: set.to_string(),
        count: v.get("count").and_then(Value::as_u64).unwrap_or(0),
        mean: f(v, "mean_ns"),
        p50: f(&pct, "p50"),
        p90: f(&pct, "p90"),
        p99: f(&pct, "p99"),
        p999: f(&pct, "p99.9"),
        p9999: f(&pct, "p99.99"),
        max: f(v, "max_ns"),
    }
}

/// The points of a `results.json` document. A point that is not an object is
/// reported in `notes` and left out.
pub fn from_json(doc: &Value, path: &Path, notes: &mut Vec<String>) -> Vec<Point> {
    let Some(list) = doc.get("points").and_then(Value::as_array) else {
        notes.push(format!(
            "{}: no \"points\" list; its points are left out",
            path.display()
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, p) in list.iter().enumerate() {
        if !p.is_object() || p.get("engine").is_none() {
            notes.push(format!(
                "{}: point {} is not a point object; left out",
                path.display(),
                i + 1
            ));
            continue;
        }
        let mut lat = Vec::new();
        let classes: Vec<&Value> = p
            .get("ops_by_size")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        for o in p.get("ops").and_then(Value::as_array).into_iter().flatten() {
            let op = text(o, "op");
            // Each kind, then its value-size classes (`--size-classes`), labelled `put<=4096`.
            let own = classes.iter().copied().filter(|c| text(c, "kind") == op);
            for o in std::iter::once(o).chain(own) {
                let op = text(o, "op");
                lat.push(latency(&op, "service", o));
                if let Some(r) = o.get("response").filter(|r| r.is_object()) {
                    lat.push(latency(&op, "response", r));
                }
            }
        }
        let sweep = p
            .get("sweep")
            .filter(|s| s.is_object())
            .map(|s| (text(s, "param"), text(s, "value")))
            .filter(|(param, _)| param != "batch");
        let rate = p.get("rate").filter(|r| r.is_object()).map(|r| Rate {
            text: text(r, "text"),
            per_s: f(r, "per_s"),
            bytes: r.get("bytes").and_then(Value::as_bool).unwrap_or(false),
        });
        let load = p.get("seed").filter(|s| s.is_object()).map(|s| Load {
            keys: s.get("keys").and_then(Value::as_u64).unwrap_or(0),
            seconds: f(s, "seconds"),
            keys_per_s: f(s, "keys_per_s"),
        });
        let epoch = match p.get("epoch").filter(|e| !e.is_null()) {
            None => None,
            Some(e) => match Epoch::parse(e) {
                Ok(e) => Some(e),
                Err(m) => {
                    notes.push(format!(
                        "{}: point {}: its \"epoch\" object is malformed ({m}); drawn as an ordinary point",
                        path.display(),
                        i + 1
                    ));
                    None
                }
            },
        };
        out.push(Point {
            workload: text(p, "workload"),
            engine: text(p, "engine"),
            engine_version: text(p, "engine_version"),
            threads: p.get("threads").and_then(Value::as_u64).unwrap_or(1) as usize,
            connections: p.get("connections").and_then(Value::as_u64).unwrap_or(1) as usize,
            pipeline: p.get("pipeline").and_then(Value::as_u64).unwrap_or(1) as usize,
            batch: p.get("batch").and_then(Value::as_u64).unwrap_or(1) as usize,
            sweep,
            rate,
            achieved: spread(p.get("achieved")),
            status: text(p, "status"),
            wu: spread(p.get("wu_per_s")).unwrap_or_default(),
            ops: spread(p.get("ops_per_s")).unwrap_or_default(),
            repeats: p.get("repeats").and_then(Value::as_array).map_or(0, Vec::len),
            load,
            latency: lat,
            epoch,
            checks: json_checks(p),
        });
    }
    out
}

/// The failed checks of a results.json point: its `checks.warnings`, none when
/// absent (a file written before the checks).
fn json_checks(p: &Value) -> Vec<Check> {
    let list = p
        .get("checks")
        .and_then(|c| c.get("warnings"))
        .and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|w| {
            Some(Check {
                name: w.get("check")?.as_str()?.to_string(),
                message: text(w, "message"),
            })
        })
        .collect()
}

/// The failed checks in a `points.tsv` row's `checks` column (names only; none
/// without the column, or with `-` or nothing in it).
fn tsv_checks(t: &Table, r: usize) -> Vec<Check> {
    match t.get(r, "checks") {
        None | Some("-") => Vec::new(),
        Some(names) => names
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| Check {
                name: n.to_string(),
                message: String::new(),
            })
            .collect(),
    }
}

/// The points of a `points.tsv` table: its rows grouped by point, using the
/// `all` phase of a point with several phases.
pub fn from_tsv(t: &Table) -> Vec<Point> {
    let key_cols = [
        "workload",
        "engine",
        "threads",
        "connections",
        "pipeline",
        "sweep_param",
        "sweep_value",
        "batch",
        "rate",
    ];
    let mut out: Vec<Point> = Vec::new();
    let mut last_key: Option<Vec<String>> = None;
    // Rows of the current point by phase, in order.
    let mut phases: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let flush = |rows: &[usize], out: &mut Vec<Point>| {
        if let Some(p) = point_of(t, rows) {
            out.push(p);
        }
    };
    for r in 0..t.rows.len() {
        let key: Vec<String> = key_cols
            .iter()
            .map(|c| t.get(r, c).unwrap_or("-").to_string())
            .collect();
        if last_key.as_ref() != Some(&key) {
            if let Some(rows) = pick(&phases, &order) {
                flush(rows, &mut out);
            }
            phases.clear();
            order.clear();
            last_key = Some(key);
        }
        let phase = t.get(r, "phase").unwrap_or("run").to_string();
        if !phases.contains_key(&phase) {
            order.push(phase.clone());
        }
        phases.entry(phase).or_default().push(r);
    }
    if let Some(rows) = pick(&phases, &order) {
        flush(rows, &mut out);
    }
    out
}

fn pick<'a>(phases: &'a BTreeMap<String, Vec<usize>>, order: &[String]) -> Option<&'a Vec<usize>> {
    phases.get("all").or_else(|| order.first().and_then(|p| phases.get(p)))
}

fn point_of(t: &Table, rows: &[usize]) -> Option<Point> {
    let r0 = *rows.first()?;
    let s = |c: &str| t.get(r0, c).unwrap_or("-").to_string();
    let n = |r: usize, c: &str| t.num(r, c).unwrap_or(f64::NAN);
    let sweep = match (s("sweep_param").as_str(), s("sweep_value")) {
        ("-" | "" | "batch", _) => None,
        (p, v) => Some((p.to_string(), v)),
    };
    let rate = match s("rate").as_str() {
        "-" => None,
        text => Some(Rate {
            text: text.to_string(),
            per_s: text.parse().unwrap_or(f64::NAN),
            bytes: text.ends_with("/s"),
        }),
    };
    let mut latency = Vec::new();
    for &r in rows {
        let op = t.get(r, "op").unwrap_or("-");
        if op == "-" {
            continue;
        }
        latency.push(Latency {
            op: op.to_string(),
            set: t.get(r, "latency").unwrap_or("service").to_string(),
            count: t.num(r, "count").unwrap_or(0.0) as u64,
            mean: n(r, "mean_ns"),
            p50: n(r, "p50_ns"),
            p90: n(r, "p90_ns"),
            p99: n(r, "p99_ns"),
            p999: n(r, "p999_ns"),
            p9999: n(r, "p9999_ns"),
            max: n(r, "max_ns"),
        });
    }
    let load = t.num(r0, "seed_keys").map(|keys| Load {
        keys: keys as u64,
        seconds: n(r0, "seed_s"),
        keys_per_s: n(r0, "seed_keys_per_s"),
    });
    Some(Point {
        workload: s("workload"),
        engine: s("engine"),
        engine_version: s("engine_version"),
        threads: t.num(r0, "threads").unwrap_or(1.0) as usize,
        connections: t.num(r0, "connections").unwrap_or(1.0) as usize,
        pipeline: t.num(r0, "pipeline").unwrap_or(1.0) as usize,
        batch: t.num(r0, "batch").unwrap_or(1.0) as usize,
        sweep,
        achieved: t.num(r0, "achieved").map(|a| Spread {
            median: a,
            min: a,
            max: a,
        }),
        rate,
        status: s("status"),
        wu: Spread {
            median: n(r0, "wu_per_s"),
            min: t.num(r0, "wu_per_s_min").unwrap_or(n(r0, "wu_per_s")),
            max: t.num(r0, "wu_per_s_max").unwrap_or(n(r0, "wu_per_s")),
        },
        ops: Spread {
            median: n(r0, "ops_per_s"),
            min: t.num(r0, "ops_per_s_min").unwrap_or(n(r0, "ops_per_s")),
            max: t.num(r0, "ops_per_s_max").unwrap_or(n(r0, "ops_per_s")),
        },
        repeats: t.num(r0, "repeats").unwrap_or(1.0) as usize,
        load,
        latency,
        epoch: None,
        checks: tsv_checks(t, r0),
    })
}
