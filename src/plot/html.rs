//! `report.html`: one self-contained page (no network fetch: uPlot and the page's
//! script and style are embedded) with each run's settings and probes, the summary
//! tables, and every figure as interactive charts (hover for values, drag to zoom
//! on timelines, click a legend entry or an engine toggle to hide it).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::data::RunData;
use super::data::points::Point;
use super::figure::{Figure, Mark, decimate};
use super::palette::Palette;

const UPLOT_JS: &str = include_str!("../../vendor/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../vendor/uplot/uPlot.min.css");
const REPORT_JS: &str = include_str!("../../assets/report.js");
const REPORT_CSS: &str = include_str!("../../assets/report.css");

/// Points per line in the report: timelines are downsampled to this (keeping
/// spikes), so a long run's report stays small; the TSV keeps every sample.
pub const MAX_POINTS: usize = 600;

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `v` to about five significant digits, so the embedded data stays small.
fn round(v: f64) -> f64 {
    if !v.is_finite() || v == 0.0 {
        return v;
    }
    let digits = 5 - v.abs().log10().ceil() as i32;
    let scale = 10f64.powi(digits.clamp(-12, 12));
    (v * scale).round() / scale
}

/// A figure for the page: lines downsampled, numbers rounded.
fn compact(fig: &Figure) -> Figure {
    let mut f = fig.clone();
    for s in f.panels.iter_mut().flat_map(|p| p.series.iter_mut()) {
        if matches!(s.mark, Mark::Line { .. }) {
            s.points = decimate(&s.points, MAX_POINTS);
        }
        for p in &mut s.points {
            *p = [round(p[0]), round(p[1])];
        }
        for b in s.band.iter_mut().chain(s.errors.iter_mut()) {
            *b = [round(b[0]), round(b[1]), round(b[2])];
        }
    }
    f
}

/// The whole page.
pub fn document(runs: &[RunData], figs: &[Figure], palette: &Palette) -> String {
    let title = match runs {
        [one] => format!("kvmark report: {}", one.label),
        _ => format!("kvmark report: {} runs", runs.len()),
    };
    let mut engines: Vec<String> = Vec::new();
    for s in figs.iter().flat_map(|f| &f.panels).flat_map(|p| &p.series) {
        if let Some(e) = &s.engine
            && !engines.contains(e)
        {
            engines.push(e.clone());
        }
    }
    let data = json!({
        "figures": figs.iter().map(compact).collect::<Vec<_>>(),
        "engines": engines.iter().map(|e| json!({ "name": e, "color": palette.color(e) })).collect::<Vec<_>>(),
    });
    // Inside <script>, "</" could end the element early.
    let data = serde_json::to_string(&data).unwrap_or_default().replace("</", "<\\/");
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{UPLOT_CSS}\n{REPORT_CSS}\n</style>\n</head>\n<body>\n",
        esc(&title)
    );
    let _ = write!(h, "<header><h1>{}</h1>", esc(&title));
    h.push_str("<div id=\"engines\" class=\"toggles\"></div></header>\n<main>\n");
    for run in runs {
        h.push_str(&run_section(run, runs.len() > 1));
    }
    h.push_str("<section id=\"charts\"><h2>Figures</h2><nav id=\"toc\"></nav><div id=\"figures\"></div></section>\n");
    h.push_str("</main>\n");
    let _ = write!(
        h,
        "<script>\n{UPLOT_JS}\n</script>\n<script>\nconst KVMARK = {data};\n</script>\n<script>\n{REPORT_JS}\n</script>\n</body>\n</html>\n"
    );
    h
}

fn kv_table(rows: &[(String, String)]) -> String {
    let mut t = String::from("<table class=\"kv\">");
    for (k, v) in rows {
        let _ = write!(t, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    t.push_str("</table>");
    t
}

fn val(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        Value::Array(a) => a.iter().map(val).collect::<Vec<_>>().join(", "),
        // A value the run wrote with its own wording (a target rate) shows as written.
        Value::Object(o) if o.get("text").is_some_and(Value::is_string) => val(&o["text"]),
        other => other.to_string(),
    }
}

/// A JSON object's members as rows.
fn object_rows(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), val(v)))
        .collect()
}

/// A run's settings as rows.
fn settings(run: &Value) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let mut add = |k: &str, v: String| rows.push((k.to_string(), v));
    if let Some(ws) = run.get("workloads").and_then(Value::as_array) {
        let list: Vec<String> = ws
            .iter()
            .map(|w| format!("{} ({})", val(&w["name"]), val(&w["path"])))
            .collect();
        add("workloads", list.join("; "));
    }
    if let Some(es) = run.get("engines").and_then(Value::as_array) {
        for e in es {
            let opts: Vec<String> = e
                .get("options")
                .and_then(Value::as_object)
                .map(|o| o.iter().map(|(k, v)| format!("{k}={}", val(v))).collect())
                .unwrap_or_default();
            let mut text = val(&e["version"]);
            if !opts.is_empty() {
                text.push_str(&format!("; options: {}", opts.join(", ")));
            }
            add(&format!("engine {}", val(&e["name"])), text);
        }
    }
    for key in [
        "threads",
        "batch",
        "budget",
        "repeat",
        "seed",
        "users",
        "items",
        "seed_threads",
        "seed_once",
        "settle",
        "timeline_s",
        "warmup_s",
        "rates",
        "arrival",
        "data_dir",
    ] {
        if let Some(v) = run.get(key).filter(|v| !v.is_null()) {
            let text = match v {
                Value::Object(o) => o
                    .iter()
                    .map(|(k, v)| format!("{k} {}", val(v)))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => val(other),
            };
            add(key, text);
        }
    }
    if let Some(t) = run.get("started_unix").and_then(Value::as_f64) {
        add("started", format!("{} (Unix time {t:.0})", utc(t)));
    }
    if let Some(c) = run.get("command").and_then(Value::as_array) {
        add("command", c.iter().map(val).collect::<Vec<_>>().join(" "));
    }
    rows
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(t: f64) -> String {
    let secs = t.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn fmt_ns(v: f64) -> String {
    if v.is_finite() {
        crate::metrics::format::duration_ns(v)
    } else {
        "-".to_string()
    }
}

fn fmt_rate(v: f64) -> String {
    if v.is_finite() {
        crate::metrics::format::rate(v)
    } else {
        "-".to_string()
    }
}

/// Settings, probes, notes and the summary tables of one run.
fn run_section(run: &RunData, several: bool) -> String {
    let mut h = String::from("<section class=\"run\">");
    let _ = write!(
        h,
        "<h2>{}</h2><p class=\"path\">{}</p>",
        esc(if several { &run.label } else { "Run" }),
        esc(&run.path.display().to_string())
    );
    if !run.notes.is_empty() {
        h.push_str("<div class=\"notes\"><strong>Incomplete input:</strong><ul>");
        for n in &run.notes {
            let _ = write!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul></div>");
    }
    h.push_str("<div class=\"meta\">");
    if let Some(r) = &run.run {
        let _ = write!(h, "<div><h3>Settings</h3>{}</div>", kv_table(&settings(r)));
    }
    if let Some(s) = &run.summary {
        let _ = write!(h, "<div><h3>Outcome</h3>{}</div>", kv_table(&object_rows(s)));
    }
    if let Some(Value::Object(probes)) = &run.probes {
        for (name, facts) in probes {
            let _ = write!(
                h,
                "<div><h3>Probe: {}</h3>{}</div>",
                esc(name),
                kv_table(&object_rows(facts))
            );
        }
    }
    h.push_str("</div>");
    if !run.points.is_empty() {
        h.push_str(&points_table(run));
        h.push_str(&latency_table(run));
    }
    h.push_str("</section>\n");
    h
}

/// A collapsible table heading, open unless the table is long.
fn details(title: &str, rows: usize) -> String {
    let open = if rows <= 24 { " open" } else { "" };
    format!("<details{open}><summary><h3>{title} ({rows} rows)</h3></summary>")
}

fn points_table(run: &RunData) -> String {
    let mut h = details("Points", run.points.len());
    h.push_str(
        "<table class=\"grid\"><thead><tr><th>workload</th><th>engine</th><th>threads</th>\
         <th>batch</th><th>sweep</th><th>rate</th><th>status</th><th>wu/s</th><th>wu/s min-max</th>\
         <th>ops/s</th><th>repeats</th><th>seed keys/s</th></tr></thead><tbody>",
    );
    for p in &run.points {
        let sweep = p.sweep.as_ref().map_or("-".to_string(), |(k, v)| format!("{k}={v}"));
        let rate = p.rate.as_ref().map_or("-".to_string(), |r| r.text.clone());
        let mut epoch = String::new();
        if let Some(e) = &p.epoch {
            epoch = format!(" (epoch {} {})", e.number, e.mode);
        }
        let _ = write!(
            h,
            "<tr class=\"{}\"><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{} - {}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            if p.status == "ok" { "ok" } else { "bad" },
            esc(&p.workload),
            esc(&epoch),
            esc(&p.engine),
            p.threads,
            p.batch,
            esc(&sweep),
            esc(&rate),
            esc(&p.status),
            fmt_rate(p.wu.median),
            fmt_rate(p.wu.min),
            fmt_rate(p.wu.max),
            fmt_rate(p.ops.median),
            p.repeats,
            p.load.map_or("-".to_string(), |s| fmt_rate(s.keys_per_s)),
        );
        h.push_str(&checks_row(p, POINT_COLUMNS));
    }
    h.push_str("</tbody></table></details>");
    h
}

/// The columns of the points table.
const POINT_COLUMNS: usize = 12;

/// A row under a point's figures listing the self-checks it failed (nothing when it
/// passed them all).
fn checks_row(p: &Point, columns: usize) -> String {
    if p.checks.is_empty() {
        return String::new();
    }
    let mut h = format!("<tr class=\"checks\"><td colspan=\"{columns}\">Failed checks:<ul>");
    for c in &p.checks {
        let _ = write!(h, "<li><code>check {}</code>", esc(&c.name));
        if !c.message.is_empty() {
            let _ = write!(h, ": {}", esc(&c.message));
        }
        h.push_str("</li>");
    }
    h.push_str("</ul></td></tr>");
    h
}

fn latency_table(run: &RunData) -> String {
    let rows = run.points.iter().map(|p| p.latency.len()).sum();
    let mut h = details("Latency", rows);
    h.push_str(
        "<table class=\"grid\"><thead><tr><th>workload</th><th>engine</th><th>point</th>\
         <th>op</th><th>latency</th><th>count</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th>\
         <th>p99.9</th><th>p99.99</th><th>max</th></tr></thead><tbody>",
    );
    for p in &run.points {
        for l in &p.latency {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td>",
                esc(&p.workload),
                esc(&p.engine),
                esc(&p.cell_label()),
                esc(&l.op),
                esc(&l.set),
                l.count
            );
            for v in [l.mean, l.p50, l.p90, l.p99, l.p999, l.p9999, l.max] {
                let _ = write!(h, "<td class=\"n\">{}</td>", fmt_ns(v));
            }
            h.push_str("</tr>");
        }
    }
    h.push_str("</tbody></table></details>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_rounded() {
        assert_eq!(esc("<a href='x'>&</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;");
        assert_eq!(round(123456.789), 123460.0);
        assert_eq!(round(0.000123456), 0.00012346);
        assert!(round(f64::NAN).is_nan());
    }

    #[test]
    fn unix_times_read_as_dates() {
        assert_eq!(utc(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000.0), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn a_points_failed_checks_are_listed_under_its_figures_escaped() {
        let doc = json!({ "points": [
            { "workload": "w", "engine": "e", "status": "ok", "checks": { "warnings": [
                { "check": "rate_missed", "message": "fell <behind> & more" },
            ] } },
            { "workload": "w2", "engine": "e", "status": "ok", "checks": { "warnings": [] } },
            { "workload": "w3", "engine": "e", "status": "ok" },
        ] });
        let run = RunData {
            points: super::super::data::points::from_json(&doc, std::path::Path::new("r.json"), &mut Vec::new()),
            ..RunData::default()
        };
        assert_eq!(run.points.len(), 3);
        let page = document(&[run], &[], &Palette::default());
        assert_eq!(page.matches("<tr class=\"checks\">").count(), 1, "{page}");
        assert!(
            page.contains("<li><code>check rate_missed</code>: fell &lt;behind&gt; &amp; more</li>"),
            "{page}"
        );
    }

    #[test]
    fn the_page_embeds_everything() {
        let page = document(&[RunData::default()], &[], &Palette::default());
        assert!(page.contains("uPlot"));
        assert!(!page.contains("<script src"), "nothing is fetched");
        assert!(!page.contains("<link"), "nothing is fetched");
    }
}
