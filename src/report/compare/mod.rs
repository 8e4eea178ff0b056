//! `kvmark compare A B`: two runs side by side, from their results.json.
//!
//! Points are matched by what identifies a grid cell (workload, engine, threads,
//! connections, batch, sweep value, target rate, epoch and mode). Per matched point:
//! the median throughput over repeats in each run, the change in percent and a
//! two-sided Mann-Whitney U test on the per-repeat throughputs ([`stats`]); per
//! operation kind, its operations per second and its latency percentiles from each
//! run's exact merge of all repeats, with the change in percent. Latency percentiles
//! get no test: results.json keeps one merged histogram per kind, not one per repeat.

pub mod stats;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use self::stats::Test;
use crate::metrics::format;

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
}

/// The latency figures compared per operation kind: (label, results.json field).
const LATENCY: [(&str, &str); 5] = [
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p99.9", "p99.9"),
    ("max", "max"),
];

/// One point of one run, as read from results.json.
#[derive(Debug, Clone)]
struct Point {
    label: String,
    identity: Value,
    status: String,
    /// Units per second of each repeat.
    repeats: Vec<f64>,
    /// Per operation kind: name, operations per second, and the [`LATENCY`] figures.
    ops: Vec<(String, f64, [f64; LATENCY.len()])>,
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

/// One operation kind of a matched point.
#[derive(Debug, Clone)]
pub struct OpRow {
    /// The kind's name.
    pub op: String,
    /// Its operations per second (its calls over the repeats' wall time).
    pub ops_per_s: Pair,
    /// Latency in nanoseconds, per [`LATENCY`] label.
    pub latency: Vec<(&'static str, Pair)>,
}

/// A matched point.
#[derive(Debug, Clone)]
pub struct Row {
    /// "workload engine t1 b1 ...".
    pub label: String,
    /// Status in each run ("ok", "failed", "interrupted").
    pub status: (String, String),
    /// Median units per second over repeats.
    pub throughput: Pair,
    /// Repeats in each run.
    pub n: (usize, usize),
    /// The test on per-repeat throughputs (None when a run has no repeats).
    pub test: Option<Test>,
    /// Per operation kind present in both runs.
    pub ops: Vec<OpRow>,
}

impl Row {
    /// True when the test says the throughputs differ at `alpha`.
    pub fn significant(&self, alpha: f64) -> bool {
        self.test.is_some_and(|t| t.p < alpha)
    }

    /// True when the repeats are too few for any difference to reach `alpha`.
    pub fn untestable(&self, alpha: f64) -> bool {
        self.test.is_none_or(|t| t.min_p >= alpha)
    }

    /// True when this point fails `--fail-if-slower pct`: slower by more than `pct`
    /// and significantly so (or, when the repeats cannot show significance, slower
    /// by more than `pct` alone).
    pub fn slower_than(&self, pct: f64, alpha: f64) -> bool {
        self.throughput
            .change_pct()
            .is_some_and(|c| c < -pct && (self.significant(alpha) || self.untestable(alpha)))
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
}

impl Comparison {
    /// The points that fail `--fail-if-slower`.
    pub fn regressions(&self) -> Vec<&Row> {
        match self.fail_if_slower {
            Some(pct) => self.rows.iter().filter(|r| r.slower_than(pct, self.alpha)).collect(),
            None => Vec::new(),
        }
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
    let identity = json!({
        "workload": p.get("workload")?,
        "engine": p.get("engine")?,
        "threads": p.get("threads")?,
        "connections": p.get("connections"),
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
    if let Some(c) = p.get("connections").and_then(Value::as_u64).filter(|&c| c != 1) {
        label.push_str(&format!(" c{c}"));
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
    let ops = p
        .get("ops")?
        .as_array()?
        .iter()
        .filter_map(|o| {
            let name = o.get("op")?.as_str()?.to_string();
            let count = num(o, "count")?;
            let pct = o.get("percentiles_ns")?;
            let figs: [f64; LATENCY.len()] = std::array::from_fn(|i| match LATENCY[i].1 {
                "max" => num(o, "max_ns").unwrap_or(f64::NAN),
                field => num(pct, field).unwrap_or(f64::NAN),
            });
            let per_s = if wall > 0.0 { count / wall } else { 0.0 };
            Some((name, per_s, figs))
        })
        .collect();
    Some(Point {
        label,
        identity,
        status: text("status").unwrap_or_default(),
        repeats,
        ops,
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
        let throughput = Pair {
            a: stats::median(&pa.repeats).unwrap_or(0.0),
            b: stats::median(&pb.repeats).unwrap_or(0.0),
        };
        let ops = pa
            .ops
            .iter()
            .filter_map(|(op, per_s_a, lat_a)| {
                let (_, per_s_b, lat_b) = pb.ops.iter().find(|(o, _, _)| o == op)?;
                Some(OpRow {
                    op: op.clone(),
                    ops_per_s: Pair {
                        a: *per_s_a,
                        b: *per_s_b,
                    },
                    latency: LATENCY
                        .iter()
                        .enumerate()
                        .map(|(i, (label, _))| {
                            (
                                *label,
                                Pair {
                                    a: lat_a[i],
                                    b: lat_b[i],
                                },
                            )
                        })
                        .collect(),
                })
            })
            .collect();
        rows.push(Row {
            label: pa.label.clone(),
            status: (pa.status.clone(), pb.status.clone()),
            throughput,
            n: (pa.repeats.len(), pb.repeats.len()),
            test: stats::mann_whitney(&pa.repeats, &pb.repeats),
            ops,
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
    })
}

/// The method, as every output states it.
pub const METHOD: &str = "throughput: median over repeats; significance: two-sided Mann-Whitney U test on the \
                          per-repeat throughputs (exact for up to 10 repeats a side, else normal approximation); \
                          latency: percentiles of all repeats merged, no test";

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

fn verdict(row: &Row, alpha: f64) -> String {
    match row.test {
        None => "no repeats".to_string(),
        Some(t) if t.min_p >= alpha => format!(
            "too few repeats to judge (n={}+{}: p cannot go below {:.3})",
            row.n.0, row.n.1, t.min_p
        ),
        Some(t) if t.p < alpha => format!("significant ({}, n={}+{})", p_text(t.p), row.n.0, row.n.1),
        Some(t) => format!("not significant ({}, n={}+{})", p_text(t.p), row.n.0, row.n.1),
    }
}

/// The table for people.
pub fn table(c: &Comparison) -> String {
    let mut lines: Vec<[String; 5]> = vec![[
        "point / op".to_string(),
        "figure".to_string(),
        "A".to_string(),
        "B".to_string(),
        "change".to_string(),
    ]];
    let mut verdicts = Vec::new();
    for row in &c.rows {
        let status = if row.status.0 == "ok" && row.status.1 == "ok" {
            String::new()
        } else {
            format!(" [status {} / {}]", row.status.0, row.status.1)
        };
        lines.push([
            format!("{}{status}", row.label),
            "wu/s".to_string(),
            format::rate(row.throughput.a),
            format::rate(row.throughput.b),
            change(&row.throughput),
        ]);
        verdicts.push((lines.len() - 1, verdict(row, c.alpha)));
        for op in &row.ops {
            lines.push([
                format!("  {}", op.op),
                "ops/s".to_string(),
                format::rate(op.ops_per_s.a),
                format::rate(op.ops_per_s.b),
                change(&op.ops_per_s),
            ]);
            for (label, pair) in &op.latency {
                lines.push([
                    String::new(),
                    (*label).to_string(),
                    format::duration_ns(pair.a),
                    format::duration_ns(pair.b),
                    change(pair),
                ]);
            }
        }
    }
    let widths: [usize; 5] = std::array::from_fn(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0));
    let mut out = format!("A: {}\nB: {}\n\n", c.files.0.display(), c.files.1.display());
    for (i, l) in lines.iter().enumerate() {
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
        if let Some((_, v)) = verdicts.iter().find(|(at, _)| *at == i) {
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
        let bad = c.regressions();
        if bad.is_empty() {
            out.push_str(&format!(
                "--fail-if-slower {pct}: no point is slower by more than {pct}%\n"
            ));
        } else {
            for r in bad {
                out.push_str(&format!(
                    "--fail-if-slower {pct}: {} is {} slower\n",
                    r.label,
                    change(&r.throughput).trim_start_matches('-')
                ));
            }
        }
    }
    out
}

fn num(v: f64) -> String {
    if v.is_finite() { format!("{v}") } else { String::new() }
}

/// One row per point and figure: point, op, figure, a, b, change_pct, p_value,
/// significant.
pub fn tsv(c: &Comparison) -> String {
    let mut out = String::from("point\top\tfigure\ta\tb\tchange_pct\tp_value\tsignificant\n");
    for row in &c.rows {
        let label = super::tsv_field(&row.label);
        let (p, sig) = match row.test {
            Some(t) => (num(t.p), row.significant(c.alpha).to_string()),
            None => (String::new(), String::new()),
        };
        out.push_str(&format!(
            "{label}\t-\twu_per_s\t{}\t{}\t{}\t{p}\t{sig}\n",
            num(row.throughput.a),
            num(row.throughput.b),
            row.throughput.change_pct().map(num).unwrap_or_default()
        ));
        for op in &row.ops {
            let figures = std::iter::once(("ops_per_s".to_string(), &op.ops_per_s))
                .chain(op.latency.iter().map(|(l, pair)| (format!("{l}_ns"), pair)));
            for (figure, pair) in figures {
                out.push_str(&format!(
                    "{label}\t{}\t{figure}\t{}\t{}\t{}\t\t\n",
                    op.op,
                    num(pair.a),
                    num(pair.b),
                    pair.change_pct().map(num).unwrap_or_default()
                ));
            }
        }
    }
    out
}

fn pair_json(p: &Pair) -> Value {
    json!({ "a": p.a, "b": p.b, "change_pct": p.change_pct() })
}

/// The comparison as one JSON document.
pub fn to_json(c: &Comparison) -> Value {
    let regressions: Vec<&str> = c.regressions().iter().map(|r| r.label.as_str()).collect();
    json!({
        "a": c.files.0.display().to_string(),
        "b": c.files.1.display().to_string(),
        "method": METHOD,
        "alpha": c.alpha,
        "fail_if_slower_pct": c.fail_if_slower,
        "regressions": regressions,
        "points": c.rows.iter().map(|r| json!({
            "point": r.label,
            "status": { "a": r.status.0, "b": r.status.1 },
            "wu_per_s": pair_json(&r.throughput),
            "repeats": { "a": r.n.0, "b": r.n.1 },
            "p_value": r.test.map(|t| t.p),
            "min_p_value": r.test.map(|t| t.min_p),
            "exact": r.test.map(|t| t.exact),
            "significant": r.significant(c.alpha),
            "ops": r.ops.iter().map(|o| {
                let mut m = serde_json::Map::new();
                m.insert("op".to_string(), json!(o.op));
                m.insert("ops_per_s".to_string(), pair_json(&o.ops_per_s));
                for (l, pair) in &o.latency {
                    m.insert(format!("{l}_ns"), pair_json(pair));
                }
                Value::Object(m)
            }).collect::<Vec<_>>(),
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

    fn row(a: &[f64], b: &[f64]) -> Row {
        Row {
            label: "w e t1 b1".to_string(),
            status: ("ok".to_string(), "ok".to_string()),
            throughput: Pair {
                a: stats::median(a).unwrap(),
                b: stats::median(b).unwrap(),
            },
            n: (a.len(), b.len()),
            test: stats::mann_whitney(a, b),
            ops: Vec::new(),
        }
    }

    #[test]
    fn the_gate_needs_a_significant_drop_past_the_threshold() {
        let slower = row(&[100.0, 101.0, 99.0, 100.5, 100.2], &[80.0, 81.0, 79.0, 80.5, 80.2]);
        assert!(slower.significant(0.05) && slower.slower_than(10.0, 0.05));
        assert!(!slower.slower_than(25.0, 0.05), "a 20% drop passes a 25% gate");
        let noisy = row(&[100.0, 60.0, 140.0, 90.0, 110.0], &[95.0, 70.0, 120.0, 85.0, 100.0]);
        assert!(!noisy.significant(0.05) && !noisy.slower_than(1.0, 0.05));
        let faster = row(&[80.0, 81.0, 79.0, 80.5, 80.2], &[100.0, 101.0, 99.0, 100.5, 100.2]);
        assert!(faster.significant(0.05) && !faster.slower_than(1.0, 0.05));
        // One repeat a side: the threshold alone decides.
        let single = row(&[100.0], &[80.0]);
        assert!(single.untestable(0.05) && single.slower_than(10.0, 0.05));
    }

    #[test]
    fn formats_parse() {
        assert_eq!(Format::parse("tsv"), Ok(Format::Tsv));
        assert!(Format::parse("csv").unwrap_err().contains("table, tsv or json"));
    }
}
