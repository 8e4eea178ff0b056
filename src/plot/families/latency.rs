//! Latency figures: p50/p99/p99.9/max per operation kind, engine and grid cell,
//! the full percentile spectrum from the stored histogram logs, and the latency
//! heatmap over time from the same logs' intervals.

use super::summary::pick;
use super::{Ctx, DirPoint, PERCENTILES, cell_order, group_by, point_coords};
use crate::plot::data::hlog::{self, Column};
use crate::plot::figure::{Axis, Figure, Heatmap, Mark, Panel, Series, Unit};

/// Columns a heatmap panel shows at most: a longer log's intervals are merged in
/// consecutive groups, so the page stays small and each column a few pixels wide.
pub const HEAT_COLUMNS: usize = 120;

/// (op, set) pairs among `points`, service times first.
fn kinds(points: &[DirPoint<'_>]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, p) in points {
        for l in &p.latency {
            let k = (l.op.clone(), l.set.clone());
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out.sort_by_key(|(_, set)| set != "service");
    out
}

/// Per workload: a panel per operation kind; in each grid cell, each engine's
/// p50, p99, p99.9 and max as markers on a log scale.
pub fn summary(ctx: &Ctx<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for (workload, mut points) in group_by(ctx.points(), |(_, p)| p.workload.clone()) {
        points.sort_by_key(|(_, p)| cell_order(p));
        let kinds = kinds(&points);
        if kinds.is_empty() {
            continue;
        }
        let mut cells: Vec<String> = Vec::new();
        for (_, p) in &points {
            if !cells.contains(&p.cell_label()) {
                cells.push(p.cell_label());
            }
        }
        let keys = Ctx::series_keys(&points);
        let mut fig = Figure::new(
            format!("latency-{workload}"),
            "latency",
            format!("latency per operation: {workload} (p50, p99, p99.9, max)"),
        );
        for (op, set) in kinds {
            let what = if set == "response" {
                format!("{op} response time")
            } else {
                format!("{op} latency")
            };
            let mut panel = Panel::new(
                what,
                Axis::category("threads, batch, rate"),
                Axis::log("latency (log)", Unit::Nanos),
            )
            .metric(&format!("{op}.{set}"));
            panel.categories = cells.clone();
            panel.slots = keys.len();
            for (slot, (d, engine)) in keys.iter().enumerate() {
                for (pct, shape) in PERCENTILES {
                    let mut s = Series::new(
                        format!("{} {pct}", ctx.label(*d, engine)),
                        ctx.color(engine),
                        Mark::Points { shape },
                    )
                    .engine(engine);
                    s.slot = slot;
                    for (_, p) in points.iter().filter(|(pd, p)| pd == d && &p.engine == engine) {
                        let x = cells.iter().position(|c| *c == p.cell_label()).unwrap_or(0) as f64;
                        if let Some(l) = p.latency.iter().find(|l| l.op == op && l.set == set) {
                            s.points.push([x, pick(l, pct)]);
                        }
                    }
                    panel.series.push(s);
                }
            }
            fig.panels.push(panel);
        }
        let wide = cells.len() * keys.len() > 30;
        let fig = fig.fit_width(cells.len() * keys.len());
        out.push(if wide { fig } else { fig.auto_columns() });
    }
    out
}

/// A histogram tag (`run.get`, `run.get.response`) as a panel title.
fn tag_title(tag: &str, one_phase: bool) -> String {
    let mut parts = tag.splitn(2, '.');
    let phase = parts.next().unwrap_or("");
    let rest = parts.next().unwrap_or(tag);
    let (op, response) = match rest.strip_suffix(".response") {
        Some(op) => (op, true),
        None => (rest, false),
    };
    let what = if response { "response time" } else { "latency" };
    if one_phase {
        format!("{op} {what}")
    } else {
        format!("{phase}: {op} {what}")
    }
}

/// Per workload and grid cell: the HdrHistogram percentile plot of every
/// operation kind, one line per engine, from the histogram logs.
pub fn spectrum(ctx: &Ctx<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut points = ctx.points();
    points.sort_by_key(|(_, p)| (p.workload.clone(), cell_order(p)));
    for ((workload, cell), points) in group_by(points, |(_, p)| (p.workload.clone(), p.cell_label())) {
        let logs: Vec<_> = points
            .iter()
            .filter_map(|(d, p)| ctx.runs[*d].hlog_of(p).map(|h| (*d, *p, h)))
            .collect();
        let mut tags: Vec<&String> = logs.iter().flat_map(|(_, _, h)| h.tags.keys()).collect();
        tags.sort_by_key(|t| (t.ends_with(".response"), t.as_str()));
        tags.dedup();
        if tags.is_empty() {
            continue;
        }
        let phases: Vec<&str> = tags.iter().filter_map(|t| t.split('.').next()).collect();
        let one_phase = phases.windows(2).all(|w| w[0] == w[1]);
        let p0 = points[0].1;
        let what = point_coords(p0);
        let mut fig = Figure::new(
            format!("percentiles-{workload}-{}", super::slug(&cell)),
            "percentiles",
            format!("latency by percentile: {workload}, {what}"),
        );
        for tag in tags {
            let mut panel = Panel::new(
                tag_title(tag, one_phase),
                Axis::linear("percentile", Unit::Nines),
                Axis::log("latency (log)", Unit::Nanos),
            )
            .metric(tag);
            for (d, p, h) in &logs {
                let Some(hist) = h.tags.get(tag) else { continue };
                let mut s = Series::new(ctx.label(*d, &p.engine), ctx.color(&p.engine), Mark::line(ctx.dash(*d)))
                    .engine(&p.engine);
                s.points = hlog::spectrum(hist);
                panel.series.push(s);
            }
            fig.panels.push(panel);
        }
        out.push(fig.auto_columns());
    }
    out
}

/// Per point with a histogram log of several intervals (one engine, one directory):
/// a heatmap per tag, time across, latency up (log buckets, five a decade), each
/// cell coloured by how many calls of that interval fell in that bucket. It shows
/// what percentile lines hide: a second mode, a tail that comes and goes, a stall.
pub fn heatmap(ctx: &Ctx<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut points = ctx.points();
    points.sort_by_key(|(_, p)| (p.workload.clone(), cell_order(p)));
    for (d, p) in points {
        let Some(log) = ctx.runs[d].hlog_of(p) else { continue };
        let mut tags: Vec<&String> = log
            .columns
            .iter()
            .filter(|(_, c)| c.len() >= 2)
            .map(|(t, _)| t)
            .collect();
        if tags.is_empty() {
            continue;
        }
        tags.sort_by_key(|t| (t.ends_with(".response"), t.as_str()));
        let phases: Vec<&str> = tags.iter().filter_map(|t| t.split('.').next()).collect();
        let one_phase = phases.windows(2).all(|w| w[0] == w[1]);
        let who = if ctx.multi() {
            format!("{} ({})", p.engine, ctx.runs[d].label)
        } else {
            p.engine.clone()
        };
        let mut fig = Figure::new(
            format!(
                "heatmap-{}-{}-{}{}",
                p.workload,
                super::slug(&p.cell_label()),
                p.engine,
                if ctx.multi() { format!("-{d}") } else { String::new() }
            ),
            "heatmap",
            format!("latency over time: {}, {who}, {}", p.workload, point_coords(p)),
        );
        for tag in tags {
            let columns = merge_columns(&log.columns[tag], HEAT_COLUMNS);
            let max = columns
                .iter()
                .flat_map(|c| c.counts.iter().map(|(_, n)| *n))
                .max()
                .unwrap_or(0);
            let mut panel = Panel::new(
                format!(
                    "{} (calls per interval and bucket, log colour, darkest {max})",
                    tag_title(tag, one_phase)
                ),
                Axis::linear("time (s)", Unit::Seconds),
                Axis::log("latency (log)", Unit::Nanos),
            )
            .metric(tag);
            panel.zoom = true;
            panel.heatmap = Some(Heatmap {
                per_decade: hlog::HEAT_PER_DECADE,
                max,
                // Milliseconds are finer than any column; longer decimals only
                // swell the page.
                x: columns.iter().map(|c| [ms(c.start_s), ms(c.end_s)]).collect(),
                counts: columns
                    .iter()
                    .map(|c| c.counts.iter().flat_map(|&(b, n)| [i64::from(b), n as i64]).collect())
                    .collect(),
            });
            fig.panels.push(panel);
        }
        out.push(fig.auto_columns());
    }
    out
}

/// Seconds rounded to the millisecond.
fn ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

/// `columns` merged in consecutive groups so that at most `max` remain.
fn merge_columns(columns: &[Column], max: usize) -> Vec<Column> {
    if columns.len() <= max || max == 0 {
        return columns.to_vec();
    }
    let per = columns.len().div_ceil(max);
    columns
        .chunks(per)
        .map(|group| {
            let counts = hlog::bucket_counts(group.iter().flat_map(|c| c.counts.iter().copied()));
            Column {
                start_s: group[0].start_s,
                end_s: group[group.len() - 1].end_s,
                counts,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_columns_keep_every_count_and_span_their_group() {
        let col = |i: usize, b: i32| Column {
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            counts: vec![(b, 2), (b + 3, 1)],
        };
        let cols: Vec<Column> = (0..10).map(|i| col(i, (i % 2) as i32)).collect();
        let merged = merge_columns(&cols, 4);
        assert_eq!(merged.len(), 4);
        assert_eq!((merged[0].start_s, merged[0].end_s), (0.0, 3.0));
        assert_eq!(merged[0].counts, vec![(0, 4), (1, 2), (3, 2), (4, 1)]);
        let total = |cs: &[Column]| cs.iter().flat_map(|c| c.counts.iter().map(|(_, n)| n)).sum::<u64>();
        assert_eq!(total(&merged), total(&cols));
        assert_eq!(merge_columns(&cols, 20), cols);
    }

    #[test]
    fn tags_read_as_titles() {
        assert_eq!(tag_title("run.get", true), "get latency");
        assert_eq!(tag_title("load.put.response", false), "load: put response time");
    }
}
