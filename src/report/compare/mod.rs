//! `kvmark compare A B`: two runs side by side, from their results.json.
//!
//! Points are matched by what identifies a grid cell (workload, engine, threads,
//! connections, pipeline depth, batch, sweep value, target rate, epoch and mode; a
//! results.json from before connections or pipelines has 1 of each). Per matched point:
//! the median throughput over repeats in each run, the change in percent and a
//! two-sided Mann-Whitney U test on the per-repeat throughputs ([`stats`]); per
//! operation kind, its operations per second and its latency percentiles (service
//! time, and response time in open-loop runs) from each run's exact merge of all
//! repeats, with the change in percent and the same test on each percentile's
//! per-repeat values (each repeat's `ops` in results.json). A run without per-repeat
//! latencies (an older kvmark, or a merge of its segments) leaves latency significance
//! unknown. Beside each point's verdict stand the self-checks either run failed there
//! (results.json's `checks.warnings`; none in a file written before the checks), since
//! a verdict between figures that should not be trusted must say so.

pub mod stats;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use self::stats::Test;
use crate::metrics::{LatencySet, format};

/// How `compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns for people.
    Table,
    /// One row per point and figure.
    Tsv,
    /// One document.
    Json,
}

impl Format {
    /// Parses `--format`.
    pub fn parse(text: &str) -> Result<Format, String> {
        match text {
            "table" => Ok(Format::Table),
            "tsv" => Ok(Format::Tsv),
            "json" => Ok(Format::Json),
            _ => Err(format!("--format {text}: give table, tsv or json")),
        }
    }
}

/// What to compare and how.
#[derive(Debug, Clone)]
pub struct Request {
    /// The baseline run.
    pub a: PathBuf,
    /// The run compared with it.
    pub b: PathBuf,
    /// Significance level.
    pub alpha: f64,
    /// `--fail-if-slower`: the largest throughput drop in percent that passes.
    pub fail_if_slower: Option<f64>,
    /// `--fail-if-latency-worse`: the largest latency rise in percent that passes.
    pub fail_if_latency_worse: Option<f64>,
}

/// The latency figures compared per operation kind and latency set, as labelled in
/// every output; each is read from results.json's `percentiles_ns` of the same
/// label, `max` from `max_ns`.
const LATENCY: [&str; 5] = ["p50", "p90", "p99", "p99.9", "max"];

/// One latency set (service or response time) of one operation kind in one run.
#[derive(Debug, Clone)]
struct Latency {
    /// The [`LATENCY`] figures of all repeats merged.
    merged: [f64; LATENCY.len()],
    /// The [`LATENCY`] figures of each repeat with calls of the kind; None when the
    /// run keeps no per-repeat latency (an older kvmark, or a merge of its segments).
    repeats: Option<Vec<[f64; LATENCY.len()]>>,
}

impl Latency {
    /// Figure `i` of every repeat, if known.
    fn per_repeat(&self, i: usize) -> Option<Vec<f64>> {
        self.repeats.as_ref().map(|r| r.iter().map(|f| f[i]).collect())
    }
}

/// One operation kind of one point of one run.
#[derive(Debug, Clone)]
struct Op {
    name: String,
    /// Operations per second.
    per_s: f64,
    /// Service time.
    service: Latency,
    /// Response time (open loop only).
    response: Option<Latency>,
}

/// One point of one run, as read from results.json.
#[derive(Debug, Clone)]
struct Point {
    label: String,
    identity: Value,
    status: String,
    /// Units per second of each repeat.
    repeats: Vec<f64>,
    /// Per operation kind.
    ops: Vec<Op>,
    /// The names of the self-checks it failed.
    checks: Vec<String>,
}

/// One figure in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The baseline's value.
    pub a: f64,
    /// The compared run's value.
    pub b: f64,
}

impl Pair {
    /// (b - a) / a in percent; None when a is 0.
    pub fn change_pct(&self) -> Option<f64> {
        (self.a != 0.0).then(|| (self.b - self.a) / self.a * 100.0)
    }
}

/// A figure in both runs with the Mann-Whitney U test on its per-repeat values.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The figure in each run (a median over repeats, or from the merged histogram).
    pub pair: Pair,
    /// Per-repeat values in each run.
    pub n: (usize, usize),
    /// The test (None when a run has no per-repeat values).
    pub test: Option<Test>,
    /// Which run keeps no per-repeat values ("A", "B" or "A and B"); the
    /// significance is then unknown, not absent.
    pub unknown: Option<&'static str>,
}

impl Judged {
    /// `pair` judged on the per-repeat values `a` and `b` (None: not kept).
    fn new(pair: Pair, a: Option<&[f64]>, b: Option<&[f64]>) -> Judged {
        let unknown = match (a.is_none(), b.is_none()) {
            (true, true) => Some("A and B"),
            (true, false) => Some("A"),
            (false, true) => Some("B"),
            (false, false) => None,
        };
        let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
        Judged {
            pair,
            n: (a.len(), b.len()),
            test: stats::mann_whitney(a, b),
            unknown,
        }
    }

    /// True when the test says the figure differs at `alpha`.
    pub fn significant(&self, alpha: f64) -> bool {
        self.test.is_some_and(|t| t.p < alpha)
    }

    /// Whether the figure differs at `alpha`; None when unknown.
    pub fn significance(&self, alpha: f64) -> Option<bool> {
        self.unknown.is_none().then(|| self.significant(alpha))
    }

    /// True when the values are too few (or unknown) for any difference to reach
    /// `alpha`.
    pub fn untestable(&self, alpha: f64) -> bool {
        self.test.is_none_or(|t| t.min_p >= alpha)
    }

    /// True when the figure changed by more than `pct` percent the bad way (down
    /// when `higher_is_better`, else up) and significantly so, or, when the values
    /// cannot show significance, by more than `pct` alone.
    pub fn worse_than(&self, pct: f64, higher_is_better: bool, alpha: f64) -> bool {
        self.pair.change_pct().is_some_and(|c| {
            let worse = if higher_is_better { c < -pct } else { c > pct };
            worse && (self.significant(alpha) || self.untestable(alpha))
        })
    }
}

/// One latency figure of one operation kind.
#[derive(Debug, Clone)]
pub struct LatencyRow {
    /// Service or response time.
    pub set: LatencySet,
    /// The figure's label, from [`LATENCY`].
    pub figure: &'static str,
    /// In nanoseconds, with the test on per-repeat values.
    pub judged: Judged,
}

/// One operation kind of a matched point.
#[derive(Debug, Clone)]
pub struct OpRow {
    /// The kind's name.
    pub op: String,
    /// Its operations per second (its calls over the repeats' wall time).
    pub ops_per_s: Pair,
    /// Its latency figures: service time, then response time in open-loop runs.
    pub latency: Vec<LatencyRow>,
}

impl OpRow {
    /// How reports name this kind's latency `set` ("get", "get.response").
    pub fn label(&self, set: LatencySet) -> String {
        match set {
            LatencySet::Service => self.op.clone(),
            other => format!("{}.{}", self.op, other.tag()),
        }
    }
}

/// A matched point.
#[derive(Debug, Clone)]
pub struct Row {
    /// "workload engine t1 b1 ...".
    pub label: String,
    /// Status in each run ("ok", "failed", "interrupted").
    pub status: (String, String),
    /// Median units per second over repeats, judged on the per-repeat throughputs.
    pub throughput: Judged,
    /// Per operation kind present in both runs.
    pub ops: Vec<OpRow>,
    /// The names of the self-checks the point failed in each run.
    pub checks: (Vec<String>, Vec<String>),
}

impl Row {
    /// "checks: A NAME; B NAME,NAME" for the runs where the point failed a
    /// self-check; None when it passed them all in both.
    pub fn checks_text(&self) -> Option<String> {
        let sides: Vec<String> = [("A", &self.checks.0), ("B", &self.checks.1)]
            .into_iter()
            .filter(|(_, names)| !names.is_empty())
            .map(|(run, names)| format!("{run} {}", names.join(",")))
            .collect();
        (!sides.is_empty()).then(|| format!("checks: {}", sides.join("; ")))
    }

    /// True when this point fails `--fail-if-slower pct`: slower by more than `pct`
    /// and significantly so (or, when the repeats cannot show significance, slower
    /// by more than `pct` alone).
    pub fn slower_than(&self, pct: f64, alpha: f64) -> bool {
        self.throughput.worse_than(pct, true, alpha)
    }
}

/// A latency figure that fails `--fail-if-latency-worse`.
#[derive(Debug, Clone, Copy)]
pub struct LatencyRegression<'c> {
    /// The point.
    pub row: &'c Row,
    /// The operation kind.
    pub op: &'c OpRow,
    /// The figure.
    pub latency: &'c LatencyRow,
}

impl LatencyRegression<'_> {
    /// "POINT get p99" (or "get.response p99").
    pub fn label(&self) -> String {
        format!(
            "{} {} {}",
            self.row.label,
            self.op.label(self.latency.set),
            self.latency.figure
        )
    }
}

/// The whole comparison.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Where A and B were read from.
    pub files: (PathBuf, PathBuf),
    /// Matched points, in A's order.
    pub rows: Vec<Row>,
    /// Labels of points only A has.
    pub only_a: Vec<String>,
    /// Labels of points only B has.
    pub only_b: Vec<String>,
    /// The significance level.
    pub alpha: f64,
    /// `--fail-if-slower`, if given.
    pub fail_if_slower: Option<f64>,
    /// `--fail-if-latency-worse`, if given.
    pub fail_if_latency_worse: Option<f64>,
}

impl Comparison {
    /// The points that fail `--fail-if-slower`.
    pub fn regressions(&self) -> Vec<&Row> {
        match self.fail_if_slower {
            Some(pct) => self.rows.iter().filter(|r| r.slower_than(pct, self.alpha)).collect(),
            None => Vec::new(),
        }
    }

    /// The latency figures that fail `--fail-if-latency-worse`: higher by more than
    /// its percentage and significantly so (or, when significance cannot be judged,
    /// higher by more than the percentage alone).
    pub fn latency_regressions(&self) -> Vec<LatencyRegression<'_>> {
        let Some(pct) = self.fail_if_latency_worse else {
            return Vec::new();
        };
        let mut bad = Vec::new();
        for row in &self.rows {
            for op in &row.ops {
                for latency in &op.latency {
                    if latency.judged.worse_than(pct, false, self.alpha) {
                        bad.push(LatencyRegression { row, op, latency });
                    }
                }
            }
        }
        bad
    }
}

/// The results.json of a report directory, or the file itself.
fn results_file(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(super::bundle::RESULTS_JSON)
    } else {
        path.to_path_buf()
    }
}

fn load(path: &Path) -> Result<(PathBuf, Vec<Point>), String> {
    let file = results_file(path);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!(
            "cannot read {}: {e} (give a report directory written by --report-dir, or a results.json)",
            file.display()
        )
    })?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not a kvmark results.json: {e}", file.display()))?;
    let points = doc.get("points").and_then(Value::as_array).ok_or_else(|| {
        format!(
            "{}: not a kvmark results.json (it has no \"points\" list)",
            file.display()
        )
    })?;
    let points = points
        .iter()
        .enumerate()
        .map(|(i, p)| point(p).ok_or_else(|| format!("{}: point {} lacks its fields", file.display(), i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((file, points))
}

fn point(p: &Value) -> Option<Point> {
    let text = |k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64);
    // 1 where an older kvmark wrote none, so its points match a new run's.
    let count = |k: &str| p.get(k).and_then(Value::as_u64).unwrap_or(1);
    let identity = json!({
        "workload": p.get("workload")?,
        "engine": p.get("engine")?,
        "threads": p.get("threads")?,
        "connections": count("connections"),
        "pipeline": count("pipeline"),
        "batch": p.get("batch")?,
        "sweep": p.get("sweep"),
        "rate": p.get("rate").and_then(|r| r.get("text")),
        "epoch": p.get("epoch").map(|e| json!([e.get("number"), e.get("mode")])),
    });
    let mut label = format!(
        "{} {} t{}",
        text("workload")?,
        text("engine")?,
        p.get("threads")?.as_u64()?
    );
    for (field, short) in [("connections", "c"), ("pipeline", "p")] {
        if count(field) != 1 {
            label.push_str(&format!(" {short}{}", count(field)));
        }
    }
    label.push_str(&format!(" b{}", p.get("batch")?.as_u64()?));
    if let Some(s) = p.get("sweep").filter(|s| !s.is_null()) {
        let value = match s.get("value") {
            Some(Value::String(v)) => v.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        label.push_str(&format!(
            " {}={value}",
            s.get("param").and_then(Value::as_str).unwrap_or("?")
        ));
    }
    if let Some(r) = p.get("rate").and_then(|r| r.get("text")).and_then(Value::as_str) {
        label.push_str(&format!(" rate={r}"));
    }
    if let Some(e) = p.get("epoch").filter(|e| !e.is_null()) {
        label.push_str(&format!(
            " e{} {}",
            e.get("number").and_then(Value::as_u64).unwrap_or(0),
            e.get("mode").and_then(Value::as_str).unwrap_or("?")
        ));
    }
    let repeats_v = p.get("repeats")?.as_array()?;
    let repeats: Vec<f64> = repeats_v.iter().filter_map(|r| num(r, "wu_per_s")).collect();
    let wall: f64 = repeats_v.iter().filter_map(|r| num(r, "wall_s")).sum();
    // Each repeat's own latency per kind (results.json from before they were kept, and
    // merges of such segments, have none: then nothing is known per repeat).
    let repeat_ops: Option<Vec<&Vec<Value>>> = repeats_v.iter().map(|r| r.get("ops")?.as_array()).collect();
    // Each kind, then (`--size-classes`) its value-size classes, as `put<=4096`.
    let classes = p.get("ops_by_size").and_then(Value::as_array).into_iter().flatten();
    let ops = p
        .get("ops")?
        .as_array()?
        .iter()
        .chain(classes)
        .filter_map(|o| {
            let name = o.get("op")?.as_str()?.to_string();
            let count = num(o, "count")?;
            let per_s = if wall > 0.0 { count / wall } else { 0.0 };
            // The kind's entry in each repeat that called it (repeats keep no classes).
            let per_repeat: Option<Vec<&Value>> = (o.get("size_class").is_none())
                .then_some(())
                .and(repeat_ops.as_ref())
                .map(|reps| {
                    reps.iter()
                        .filter_map(|r| {
                            r.iter()
                                .find(|x| x.get("op").and_then(Value::as_str) == Some(name.as_str()))
                        })
                        .collect()
                });
            let latency = |of: &dyn Fn(&Value) -> Option<&Value>| {
                Some(Latency {
                    merged: figures(of(o)?),
                    repeats: per_repeat
                        .as_ref()
                        .map(|reps| reps.iter().filter_map(|r| of(r).map(figures)).collect()),
                })
            };
            Some(Op {
                service: latency(&|v| Some(v))?,
                response: latency(&|v| v.get("response").filter(|r| r.is_object())),
                name,
                per_s,
            })
        })
        .collect();
    // A file written before the checks has none: nothing failed that is known.
    let checks = p
        .get("checks")
        .and_then(|c| c.get("warnings"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|w| w.get("check")?.as_str().map(str::to_string))
        .collect();
    Some(Point {
        label,
        identity,
        status: text("status").unwrap_or_default(),
        repeats,
        ops,
        checks,
    })
}

/// The [`LATENCY`] figures of an operation kind's entry (or its `response`); NaN
/// where one is missing.
fn figures(o: &Value) -> [f64; LATENCY.len()] {
    let num = |v: Option<&Value>| v.and_then(Value::as_f64).unwrap_or(f64::NAN);
    std::array::from_fn(|i| match LATENCY[i] {
        "max" => num(o.get("max_ns")),
        label => num(o.get("percentiles_ns").and_then(|p| p.get(label))),
    })
}

/// One latency set of a kind in both runs, figure by figure.
fn latency_rows(set: LatencySet, a: &Latency, b: &Latency) -> impl Iterator<Item = LatencyRow> {
    (0..LATENCY.len()).map(move |i| LatencyRow {
        set,
        figure: LATENCY[i],
        judged: Judged::new(
            Pair {
                a: a.merged[i],
                b: b.merged[i],
            },
            a.per_repeat(i).as_deref(),
            b.per_repeat(i).as_deref(),
        ),
    })
}

/// Reads both runs and compares them.
pub fn compare(req: &Request) -> Result<Comparison, String> {
    let (file_a, a) = load(&req.a)?;
    let (file_b, b) = load(&req.b)?;
    let mut rows = Vec::new();
    let mut only_a = Vec::new();
    for pa in &a {
        let Some(pb) = b.iter().find(|pb| pb.identity == pa.identity) else {
            only_a.push(pa.label.clone());
            continue;
        };
        let throughput = Judged::new(
            Pair {
                a: stats::median(&pa.repeats).unwrap_or(0.0),
                b: stats::median(&pb.repeats).unwrap_or(0.0),
            },
            Some(&pa.repeats),
            Some(&pb.repeats),
        );
        let ops = pa
            .ops
            .iter()
            .filter_map(|oa| {
                let ob = pb.ops.iter().find(|o| o.name == oa.name)?;
                let mut latency: Vec<LatencyRow> =
                    latency_rows(LatencySet::Service, &oa.service, &ob.service).collect();
                if let (Some(ra), Some(rb)) = (&oa.response, &ob.response) {
                    latency.extend(latency_rows(LatencySet::Response, ra, rb));
                }
                Some(OpRow {
                    op: oa.name.clone(),
                    ops_per_s: Pair {
                        a: oa.per_s,
                        b: ob.per_s,
                    },
                    latency,
                })
            })
            .collect();
        rows.push(Row {
            label: pa.label.clone(),
            status: (pa.status.clone(), pb.status.clone()),
            throughput,
            ops,
            checks: (pa.checks.clone(), pb.checks.clone()),
        });
    }
    let only_b = b
        .iter()
        .filter(|pb| !a.iter().any(|pa| pa.identity == pb.identity))
        .map(|p| p.label.clone())
        .collect();
    Ok(Comparison {
        files: (file_a, file_b),
        rows,
        only_a,
        only_b,
        alpha: req.alpha,
        fail_if_slower: req.fail_if_slower,
        fail_if_latency_worse: req.fail_if_latency_worse,
    })
}

/// The method, as every output states it.
pub const METHOD: &str = "throughput: median over repeats; latency: percentiles of all repeats merged; \
                          significance: two-sided Mann-Whitney U test on the per-repeat values (throughputs, and \
                          each latency figure of each repeat; exact for up to 10 repeats a side, else normal \
                          approximation)";

fn change(p: &Pair) -> String {
    p.change_pct().map_or("-".to_string(), |c| format!("{c:+.1}%"))
}

/// "p=0.042", or "p<0.001" below what three decimals show.
fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p<0.001".to_string()
    } else {
        format!("p={p:.3}")
    }
}

fn verdict(j: &Judged, alpha: f64) -> String {
    if let Some(run) = j.unknown {
        let keep = if run.contains(" and ") { "keep" } else { "keeps" };
        return format!("n/a: {run} {keep} no per-repeat latency");
    }
    match j.test {
        None => "no repeats".to_string(),
        Some(t) if t.min_p >= alpha => format!(
            "too few repeats to judge (n={}+{}: p cannot go below {:.3})",
            j.n.0, j.n.1, t.min_p
        ),
        Some(t) if t.p < alpha => format!("significant ({}, n={}+{})", p_text(t.p), j.n.0, j.n.1),
        Some(t) => format!("not significant ({}, n={}+{})", p_text(t.p), j.n.0, j.n.1),
    }
}

/// The table for people.
pub fn table(c: &Comparison) -> String {
    let mut lines: Vec<([String; 5], Option<String>)> = vec![(
        [
            "point / op".to_string(),
            "figure".to_string(),
            "A".to_string(),
            "B".to_string(),
            "change".to_string(),
        ],
        None,
    )];
    for row in &c.rows {
        let status = if row.status.0 == "ok" && row.status.1 == "ok" {
            String::new()
        } else {
            format!(" [status {} / {}]", row.status.0, row.status.1)
        };
        let t = &row.throughput;
        let mut judged = verdict(t, c.alpha);
        if let Some(checks) = row.checks_text() {
            judged.push_str("; ");
            judged.push_str(&checks);
        }
        lines.push((
            [
                format!("{}{status}", row.label),
                "wu/s".to_string(),
                format::rate(t.pair.a),
                format::rate(t.pair.b),
                change(&t.pair),
            ],
            Some(judged),
        ));
        for op in &row.ops {
            lines.push((
                [
                    format!("  {}", op.op),
                    "ops/s".to_string(),
                    format::rate(op.ops_per_s.a),
                    format::rate(op.ops_per_s.b),
                    change(&op.ops_per_s),
                ],
                None,
            ));
            for (i, l) in op.latency.iter().enumerate() {
                // A set's first figure names it when it is not the service time.
                let first = i == 0 || op.latency[i - 1].set != l.set;
                let name = if first && l.set != LatencySet::Service {
                    format!("  {}", op.label(l.set))
                } else {
                    String::new()
                };
                lines.push((
                    [
                        name,
                        l.figure.to_string(),
                        format::duration_ns(l.judged.pair.a),
                        format::duration_ns(l.judged.pair.b),
                        change(&l.judged.pair),
                    ],
                    Some(verdict(&l.judged, c.alpha)),
                ));
            }
        }
    }
    let widths: [usize; 5] =
        std::array::from_fn(|i| lines.iter().map(|(l, _)| l[i].chars().count()).max().unwrap_or(0));
    let mut out = format!("A: {}\nB: {}\n\n", c.files.0.display(), c.files.1.display());
    for (l, v) in &lines {
        let mut line = format!(
            "{:<w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {:>w4$}",
            l[0],
            l[1],
            l[2],
            l[3],
            l[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4]
        );
        if let Some(v) = v {
            line.push_str("  ");
            line.push_str(v);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for l in &c.only_a {
        out.push_str(&format!("only in A: {l}\n"));
    }
    for l in &c.only_b {
        out.push_str(&format!("only in B: {l}\n"));
    }
    out.push_str(&format!("\n{METHOD}; alpha {}\n", c.alpha));
    if let Some(pct) = c.fail_if_slower {
        let bad = c.regressions().into_iter().map(|r| {
            let by = change(&r.throughput.pair);
            format!("{} is {} slower", r.label, by.trim_start_matches('-'))
        });
        gate_lines(&mut out, "--fail-if-slower", pct, "no point is slower", bad);
    }
    if let Some(pct) = c.fail_if_latency_worse {
        let bad = c.latency_regressions().into_iter().map(|r| {
            let by = change(&r.latency.judged.pair);
            format!("{} is {} higher", r.label(), by.trim_start_matches('+'))
        });
        gate_lines(
            &mut out,
            "--fail-if-latency-worse",
            pct,
            "no latency figure is higher",
            bad,
        );
    }
    out
}

/// What a gate found: a line per failure, or one saying nothing failed.
fn gate_lines(out: &mut String, flag: &str, pct: f64, none: &str, bad: impl Iterator<Item = String>) {
    let mut any = false;
    for line in bad {
        out.push_str(&format!("{flag} {pct}: {line}\n"));
        any = true;
    }
    if !any {
        out.push_str(&format!("{flag} {pct}: {none} by more than {pct}%\n"));
    }
}

fn num(v: f64) -> String {
    if v.is_finite() { format!("{v}") } else { String::new() }
}

/// One row per point and figure: point, op, figure, a, b, change_pct, p_value,
/// significant (empty where nothing was tested: no per-repeat values).
pub fn tsv(c: &Comparison) -> String {
    let mut out = String::from("point\top\tfigure\ta\tb\tchange_pct\tp_value\tsignificant\n");
    for row in &c.rows {
        let label = super::tsv_field(&row.label);
        let line = |op: &str, figure: &str, pair: &Pair, judged: Option<&Judged>| {
            let (p, sig) = match judged.and_then(|j| j.test.map(|t| (t, j.significant(c.alpha)))) {
                Some((t, sig)) => (num(t.p), sig.to_string()),
                None => (String::new(), String::new()),
            };
            format!(
                "{label}\t{op}\t{figure}\t{}\t{}\t{}\t{p}\t{sig}\n",
                num(pair.a),
                num(pair.b),
                pair.change_pct().map(num).unwrap_or_default()
            )
        };
        out.push_str(&line("-", "wu_per_s", &row.throughput.pair, Some(&row.throughput)));
        for op in &row.ops {
            out.push_str(&line(&op.op, "ops_per_s", &op.ops_per_s, None));
            for l in &op.latency {
                out.push_str(&line(
                    &op.label(l.set),
                    &format!("{}_ns", l.figure),
                    &l.judged.pair,
                    Some(&l.judged),
                ));
            }
        }
    }
    out
}

fn pair_json(p: &Pair) -> Value {
    json!({ "a": p.a, "b": p.b, "change_pct": p.change_pct() })
}

/// A latency figure: its pair, the test on its per-repeat values, and whether it is
/// significant (null when a run keeps no per-repeat latency).
fn latency_json(j: &Judged, alpha: f64) -> Value {
    json!({
        "a": j.pair.a,
        "b": j.pair.b,
        "change_pct": j.pair.change_pct(),
        "repeats": { "a": j.n.0, "b": j.n.1 },
        "p_value": j.test.map(|t| t.p),
        "min_p_value": j.test.map(|t| t.min_p),
        "significant": j.significance(alpha),
    })
}

fn op_json(o: &OpRow, alpha: f64) -> Value {
    let figures = |set: LatencySet| {
        let m: serde_json::Map<String, Value> = o
            .latency
            .iter()
            .filter(|l| l.set == set)
            .map(|l| (format!("{}_ns", l.figure), latency_json(&l.judged, alpha)))
            .collect();
        m
    };
    let mut m = figures(LatencySet::Service);
    m.insert("op".to_string(), json!(o.op));
    m.insert("ops_per_s".to_string(), pair_json(&o.ops_per_s));
    let response = figures(LatencySet::Response);
    m.insert(
        "response".to_string(),
        if response.is_empty() {
            Value::Null
        } else {
            Value::Object(response)
        },
    );
    Value::Object(m)
}

/// The comparison as one JSON document.
pub fn to_json(c: &Comparison) -> Value {
    let regressions: Vec<&str> = c.regressions().iter().map(|r| r.label.as_str()).collect();
    let latency_regressions: Vec<Value> = c
        .latency_regressions()
        .iter()
        .map(|r| {
            json!({
                "point": r.row.label,
                "op": r.op.label(r.latency.set),
                "figure": format!("{}_ns", r.latency.figure),
                "change_pct": r.latency.judged.pair.change_pct(),
            })
        })
        .collect();
    json!({
        "a": c.files.0.display().to_string(),
        "b": c.files.1.display().to_string(),
        "method": METHOD,
        "alpha": c.alpha,
        "fail_if_slower_pct": c.fail_if_slower,
        "regressions": regressions,
        "fail_if_latency_worse_pct": c.fail_if_latency_worse,
        "latency_regressions": latency_regressions,
        "points": c.rows.iter().map(|r| json!({
            "point": r.label,
            "status": { "a": r.status.0, "b": r.status.1 },
            "wu_per_s": pair_json(&r.throughput.pair),
            "repeats": { "a": r.throughput.n.0, "b": r.throughput.n.1 },
            "p_value": r.throughput.test.map(|t| t.p),
            "min_p_value": r.throughput.test.map(|t| t.min_p),
            "exact": r.throughput.test.map(|t| t.exact),
            "significant": r.throughput.significant(c.alpha),
            "checks": { "a": r.checks.0, "b": r.checks.1 },
            "ops": r.ops.iter().map(|o| op_json(o, c.alpha)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "only_in_a": c.only_a,
        "only_in_b": c.only_b,
    })
}

/// Renders `c` in `format`.
pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Table => table(c),
        Format::Tsv => tsv(c),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&to_json(c)).unwrap_or_default();
            s.push('\n');
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(a: &[f64], b: &[f64]) -> Judged {
        let pair = Pair {
            a: stats::median(a).unwrap(),
            b: stats::median(b).unwrap(),
        };
        Judged::new(pair, Some(a), Some(b))
    }

    fn row(a: &[f64], b: &[f64]) -> Row {
        Row {
            label: "w e t1 b1".to_string(),
            status: ("ok".to_string(), "ok".to_string()),
            throughput: judged(a, b),
            ops: Vec::new(),
            checks: (Vec::new(), Vec::new()),
        }
    }

    #[test]
    fn the_gate_needs_a_significant_drop_past_the_threshold() {
        let slower = row(&[100.0, 101.0, 99.0, 100.5, 100.2], &[80.0, 81.0, 79.0, 80.5, 80.2]);
        assert!(slower.throughput.significant(0.05) && slower.slower_than(10.0, 0.05));
        assert!(!slower.slower_than(25.0, 0.05), "a 20% drop passes a 25% gate");
        let noisy = row(&[100.0, 60.0, 140.0, 90.0, 110.0], &[95.0, 70.0, 120.0, 85.0, 100.0]);
        assert!(!noisy.throughput.significant(0.05) && !noisy.slower_than(1.0, 0.05));
        let faster = row(&[80.0, 81.0, 79.0, 80.5, 80.2], &[100.0, 101.0, 99.0, 100.5, 100.2]);
        assert!(faster.throughput.significant(0.05) && !faster.slower_than(1.0, 0.05));
        // One repeat a side: the threshold alone decides.
        let single = row(&[100.0], &[80.0]);
        assert!(single.throughput.untestable(0.05) && single.slower_than(10.0, 0.05));
    }

    #[test]
    fn the_latency_gate_needs_a_significant_rise_past_the_threshold() {
        let base = [100.0, 101.0, 99.0, 100.5, 100.2];
        let higher = [125.0, 126.0, 124.0, 125.5, 125.2];
        let comparison = |b: &[f64], pct: f64, b_known: bool| {
            let latency = LatencyRow {
                set: LatencySet::Service,
                figure: "p99",
                judged: Judged::new(
                    Pair {
                        a: stats::median(&base).unwrap(),
                        b: stats::median(b).unwrap(),
                    },
                    Some(&base),
                    b_known.then_some(b),
                ),
            };
            Comparison {
                files: (PathBuf::from("a"), PathBuf::from("b")),
                rows: vec![Row {
                    ops: vec![OpRow {
                        op: "get".to_string(),
                        ops_per_s: Pair { a: 1.0, b: 1.0 },
                        latency: vec![latency],
                    }],
                    ..row(&base, &base)
                }],
                only_a: Vec::new(),
                only_b: Vec::new(),
                alpha: 0.05,
                fail_if_slower: None,
                fail_if_latency_worse: Some(pct),
            }
        };
        let c = comparison(&higher, 10.0, true);
        let bad = c.latency_regressions();
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].label(), "w e t1 b1 get p99");
        assert!(comparison(&higher, 30.0, true).latency_regressions().is_empty());
        // Lower latency never fails the gate; a noisy rise is not significant.
        assert!(
            comparison(&[80.0, 81.0, 79.0, 80.5, 80.2], 1.0, true)
                .latency_regressions()
                .is_empty()
        );
        let noisy = comparison(&[160.0, 60.0, 140.0, 90.0, 115.0], 1.0, true);
        assert_eq!(noisy.rows[0].ops[0].latency[0].judged.significance(0.05), Some(false));
        assert!(noisy.latency_regressions().is_empty());
        // B keeps no per-repeat latency: significance is unknown, and the rise alone
        // decides the gate, as with too few repeats.
        let unknown = comparison(&higher, 10.0, false);
        let j = &unknown.rows[0].ops[0].latency[0].judged;
        assert_eq!((j.unknown, j.significance(0.05)), (Some("B"), None));
        assert_eq!(verdict(j, 0.05), "n/a: B keeps no per-repeat latency");
        assert_eq!(unknown.latency_regressions().len(), 1);
        // The outputs say unknown, not "not significant".
        let doc = to_json(&unknown);
        assert_eq!(doc["points"][0]["ops"][0]["p99_ns"]["significant"], Value::Null);
        let tsv = tsv(&unknown);
        let p99 = tsv.lines().find(|l| l.contains("\tp99_ns\t")).unwrap();
        assert!(p99.ends_with("\t\t"), "{p99}");
        assert!(table(&unknown).contains("n/a: B keeps no per-repeat latency"));
    }

    #[test]
    fn points_match_on_pipeline_depth_and_an_older_file_has_depth_1() {
        let doc = |extra: Value| {
            let mut p = json!({
                "workload": "w",
                "engine": "redis",
                "threads": 2,
                "batch": 1,
                "repeats": [{ "wu_per_s": 100.0, "wall_s": 1.0 }],
                "ops": [],
            });
            p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            point(&p).unwrap()
        };
        // Written before --connections and --pipeline existed.
        let old = doc(json!({}));
        let one = doc(json!({ "connections": 1, "pipeline": 1 }));
        let deep = doc(json!({ "connections": 1, "pipeline": 16 }));
        assert_eq!(old.identity, one.identity);
        assert_ne!(one.identity, deep.identity);
        assert_eq!(one.label, "w redis t2 b1");
        assert_eq!(deep.label, "w redis t2 p16 b1");
        let wide = doc(json!({ "connections": 4, "pipeline": 16 }));
        assert_eq!(wide.label, "w redis t2 c4 p16 b1");
    }

    #[test]
    fn failed_checks_stand_beside_the_verdict_and_an_older_file_has_none() {
        let read = |extra: Value| {
            let mut p = json!({
                "workload": "w",
                "engine": "redis",
                "threads": 1,
                "batch": 1,
                "repeats": [{ "wu_per_s": 100.0, "wall_s": 1.0 }],
                "ops": [],
            });
            p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            point(&p).unwrap()
        };
        assert!(read(json!({})).checks.is_empty(), "written before the checks");
        assert!(read(json!({ "checks": { "confidence": 0.95 } })).checks.is_empty());
        let warned = read(json!({ "checks": { "warnings": [
            { "check": "client_saturated", "message": "m" },
            { "check": "rate_missed", "message": "m" },
        ] } }));
        assert_eq!(warned.checks, ["client_saturated", "rate_missed"]);

        let mut r = row(&[100.0], &[100.0]);
        assert_eq!(r.checks_text(), None);
        r.checks = (
            vec!["client_saturated".to_string()],
            vec!["uncertain_percentiles".to_string(), "rate_missed".to_string()],
        );
        assert_eq!(
            r.checks_text().as_deref(),
            Some("checks: A client_saturated; B uncertain_percentiles,rate_missed")
        );
        r.checks.0.clear();
        let c = Comparison {
            files: (PathBuf::from("a"), PathBuf::from("b")),
            rows: vec![r],
            only_a: Vec::new(),
            only_b: Vec::new(),
            alpha: 0.05,
            fail_if_slower: None,
            fail_if_latency_worse: None,
        };
        let text = table(&c);
        let wu = text.lines().find(|l| l.contains("wu/s")).unwrap();
        assert!(wu.ends_with("; checks: B uncertain_percentiles,rate_missed"), "{text}");
        let doc = to_json(&c);
        assert_eq!(
            doc["points"][0]["checks"],
            json!({ "a": [], "b": ["uncertain_percentiles", "rate_missed"] })
        );
    }

    #[test]
    fn formats_parse() {
        assert_eq!(Format::parse("tsv"), Ok(Format::Tsv));
        assert!(Format::parse("csv").unwrap_err().contains("table, tsv or json"));
    }
}
