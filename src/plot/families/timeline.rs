//! Timeline figures from `timeline.tsv`: per grid cell (throughput and interval
//! percentiles, phases and warm-up marked), the system figure and one engine
//! figure per engine over the whole run, and the load's ingest curve.

use super::{Ctx, group_by};
use crate::plot::data::timeline::{Track, run_offsets};
use crate::plot::figure::{Axis, Dash, Figure, Mark, Panel, Series, Shape, Span, Unit, VLine, decimate};

/// Points per line in a figure: more than a panel has pixels.
pub const MAX_POINTS: usize = 2000;

/// The axis of a metric, its unit read from its name.
pub fn metric_axis(name: &str) -> Axis {
    let (label, unit) = if name.ends_with("_pct") {
        ("percent", Unit::Percent)
    } else if name.ends_with("_bytes_per_s") {
        ("bytes per second", Unit::BytesPerSec)
    } else if name.ends_with("_bytes") {
        ("bytes", Unit::Bytes)
    } else if name.ends_with("_per_s") {
        ("per second", Unit::PerSec)
    } else if name.ends_with("_ns") {
        ("latency", Unit::Nanos)
    } else if name == "sys.load1" {
        ("runnable threads (1-min load)", Unit::Count)
    } else if name.ends_with("_files") || name.ends_with(".count") || name.ends_with(".errors") {
        ("count", Unit::Count)
    } else {
        ("value", Unit::Count)
    };
    Axis::linear(label, unit)
}

/// True for a metric of the system figure (the system probe and the store's size).
pub fn is_system(metric: &str) -> bool {
    ["sys.", "proc.", "store."].iter().any(|p| metric.starts_with(p))
}

/// True for an engine-internals metric.
pub fn is_engine(metric: &str) -> bool {
    metric.starts_with("engine.")
}

fn time_axis(label: &str) -> Axis {
    Axis::linear(label, Unit::Seconds)
}

/// Tracks of one grid cell: (directory, track).
type CellTracks<'a> = Vec<(usize, &'a Track)>;

/// The first repeat of each engine's measurement of every grid cell, keyed by
/// (workload, cell label).
fn cells<'a>(ctx: &Ctx<'a>) -> Vec<((String, String), CellTracks<'a>)> {
    let tracks = ctx
        .runs
        .iter()
        .enumerate()
        .flat_map(|(d, r)| r.tracks.iter().map(move |t| (d, t)))
        .filter(|(_, t)| t.has_timed());
    group_by(tracks, |(_, t)| (t.workload.clone(), t.cell_label()))
        .into_iter()
        .map(|(k, ts)| {
            let mut chosen: Vec<(usize, &Track)> = Vec::new();
            for (d, t) in ts {
                match chosen.iter_mut().find(|(cd, c)| *cd == d && c.engine == t.engine) {
                    Some(slot) if slot.1.measurement == t.measurement && t.repeat < slot.1.repeat => *slot = (d, t),
                    Some(_) => {}
                    None => chosen.push((d, t)),
                }
            }
            (k, chosen)
        })
        .collect()
}

fn line_of(points: Vec<(f64, f64)>) -> Vec<[f64; 2]> {
    decimate(&points.into_iter().map(|(x, y)| [x, y]).collect::<Vec<_>>(), MAX_POINTS)
}

/// Per workload and grid cell: throughput and each operation kind's interval
/// p50, p99 and max over the timed phases, one colour per engine.
pub fn per_point(ctx: &Ctx<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for ((workload, cell), chosen) in cells(ctx) {
        let (d0, t0) = chosen[0];
        let run = &ctx.runs[d0];
        let period = run.period.unwrap_or(0.0);
        let repeats = run
            .tracks
            .iter()
            .filter(|t| t.measurement == t0.measurement && t.repeat > 0)
            .count();
        let mut title = format!(
            "timeline: {workload}, {}",
            super::coords(
                Some(t0.threads),
                Some(t0.connections),
                Some(t0.pipeline),
                Some(t0.batch),
                t0.sweep.as_ref(),
                t0.rate.as_deref()
            )
        );
        if repeats > 1 {
            title.push_str(&format!(" (repeat {} of {repeats})", t0.repeat));
        }
        let mut fig = Figure::new(format!("timeline-{workload}-{}", super::slug(&cell)), "timeline", title);
        let x = "time since the timed phase began (s)";
        let mut metrics: Vec<&String> = chosen.iter().flat_map(|(_, t)| t.metrics.keys()).collect();
        metrics.sort();
        metrics.dedup();
        let ops_differ = chosen.iter().any(|(_, t)| t.timed("wu_per_s") != t.timed("ops_per_s"));
        let mut wanted: Vec<(&str, &str)> = vec![("wu_per_s", "throughput (wu/s)")];
        if ops_differ {
            wanted.push(("ops_per_s", "throughput (ops/s)"));
        }
        for (metric, label) in wanted {
            if !metrics.iter().any(|m| m.as_str() == metric) {
                continue;
            }
            let mut panel = Panel::new(label, time_axis(x), Axis::linear(label, Unit::PerSec)).metric(metric);
            for (d, t) in &chosen {
                let mut s = Series::new(ctx.label(*d, &t.engine), ctx.color(&t.engine), Mark::line(ctx.dash(*d)))
                    .engine(&t.engine);
                s.points = line_of(t.timed(metric));
                panel.series.push(s);
            }
            fig.panels.push(panel);
        }
        // op.<kind>[.response].p50_ns: one panel per kind and latency set.
        let mut kinds: Vec<String> = metrics
            .iter()
            .filter_map(|m| m.strip_prefix("op.")?.strip_suffix(".p50_ns").map(str::to_string))
            .collect();
        kinds.sort_by_key(|k| k.ends_with(".response"));
        for kind in kinds {
            let title = match kind.strip_suffix(".response") {
                Some(op) => format!("{op} response time per interval"),
                None => format!("{kind} latency per interval"),
            };
            let mut panel =
                Panel::new(title, time_axis(x), Axis::log("latency (log)", Unit::Nanos)).metric(&format!("op.{kind}"));
            for (d, t) in &chosen {
                let looks = [
                    (
                        "p50",
                        Mark::Line {
                            width: 1.0,
                            dash: ctx.dash(*d),
                            marker: None,
                        },
                    ),
                    (
                        "p99",
                        Mark::Line {
                            width: 2.5,
                            dash: ctx.dash(*d),
                            marker: None,
                        },
                    ),
                    ("max", Mark::Points { shape: Shape::Cross }),
                ];
                for (pct, mark) in looks {
                    let mut s = Series::new(
                        format!("{} {pct}", ctx.label(*d, &t.engine)),
                        ctx.color(&t.engine),
                        mark,
                    )
                    .engine(&t.engine);
                    s.points = line_of(t.timed(&format!("op.{kind}.{pct}_ns")));
                    panel.series.push(s);
                }
            }
            fig.panels.push(panel);
        }
        if fig.panels.is_empty() {
            continue;
        }
        let (vlines, spans) = phase_marks(t0, period, run.warmup_s());
        for p in &mut fig.panels {
            p.zoom = true;
            p.vlines = vlines.clone();
            p.spans = spans.clone();
        }
        out.push(fig.auto_columns());
    }
    out
}

/// Phase changes as lines and the warm-up as a shaded span.
fn phase_marks(t: &Track, period: f64, warmup_s: f64) -> (Vec<VLine>, Vec<Span>) {
    let changes = t.phase_changes(period);
    let mut spans = Vec::new();
    let mut warm_end = warmup_s;
    if let Some(i) = changes.iter().position(|(_, p)| p == "warmup") {
        warm_end = warm_end.max(changes.get(i + 1).map_or(t.timed_end(), |c| c.0));
    }
    if warm_end > 0.0 {
        spans.push(Span {
            from: 0.0,
            to: warm_end,
            label: "warm-up".to_string(),
        });
    }
    let named: Vec<&(f64, String)> = changes.iter().filter(|(_, p)| p != "warmup").collect();
    let vlines = if named.len() > 1 {
        named
            .iter()
            .map(|(x, p)| VLine {
                x: *x,
                label: p.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    (vlines, spans)
}

/// A metric of a run's tracks on the run's own clock (tracks end to end, load
/// samples included), with a break between tracks; `keep` picks the tracks.
fn run_series(tracks: &[Track], metric: &str, keep: impl Fn(&Track) -> bool) -> Vec<[f64; 2]> {
    let offsets = run_offsets(tracks);
    let mut pts: Vec<[f64; 2]> = Vec::new();
    for (t, (load_off, timed_off)) in tracks.iter().zip(offsets) {
        if !keep(t) {
            continue;
        }
        let Some(values) = t.metrics.get(metric) else { continue };
        let x_of = |i: usize| {
            let s = t.samples[i];
            (if s.load { load_off } else { timed_off }) + s.t
        };
        if let (Some(last), Some(&(first, _))) = (pts.last(), values.first()) {
            // A break between measurements, half way between them.
            pts.push([(last[0] + x_of(first)) / 2.0, f64::NAN]);
        }
        for &(i, v) in values {
            pts.push([x_of(i), v]);
        }
    }
    decimate(&pts, MAX_POINTS)
}

/// Where each measurement starts on the run's clock, labelled when few.
fn track_marks(tracks: &[Track], keep: impl Fn(&Track) -> bool) -> Vec<VLine> {
    let offsets = run_offsets(tracks);
    let kept: Vec<(&Track, f64)> = tracks
        .iter()
        .zip(&offsets)
        .filter(|(t, _)| keep(t))
        .map(|(t, o)| (t, o.0))
        .collect();
    let few = kept.len() <= 8;
    let mut out: Vec<VLine> = Vec::new();
    let mut last: Option<(&str, &str)> = None;
    for (t, x) in kept {
        let here = (t.workload.as_str(), t.engine.as_str());
        if few {
            let r = if t.repeat > 1 {
                format!(" r{}", t.repeat)
            } else {
                String::new()
            };
            out.push(VLine {
                x,
                label: format!("{} {}{r}", t.engine, t.cell_label()),
            });
        } else if last != Some(here) {
            out.push(VLine {
                x,
                label: format!("{}/{}", t.workload, t.engine),
            });
        }
        last = Some(here);
    }
    out
}

/// A figure with one panel per metric over the whole run, series per directory
/// and engine.
fn run_figure(ctx: &Ctx<'_>, mut fig: Figure, metrics: &[String], engine: Option<&str>) -> Figure {
    let keep = |t: &Track| engine.is_none_or(|e| t.engine == e);
    for m in metrics {
        let mut panel = Panel::new(m.clone(), time_axis("run time (s)"), metric_axis(m)).metric(m);
        panel.zoom = true;
        for (d, run) in ctx.runs.iter().enumerate() {
            let mut engines: Vec<&str> = run.tracks.iter().map(|t| t.engine.as_str()).collect();
            engines.dedup();
            let mut seen = Vec::new();
            for e in engines.into_iter().filter(|e| engine.is_none_or(|x| x == *e)) {
                if seen.contains(&e) {
                    continue;
                }
                seen.push(e);
                let mut s = Series::new(ctx.label(d, e), ctx.color(e), Mark::line(ctx.dash(d))).engine(e);
                s.points = run_series(&run.tracks, m, |t| t.engine == e && keep(t));
                if !s.points.is_empty() {
                    panel.series.push(s);
                }
            }
        }
        if let Some(first) = ctx.runs.first() {
            panel.vlines = track_marks(&first.tracks, keep);
        }
        fig.panels.push(panel);
    }
    fig.auto_columns()
}

/// Metric names of every run's tracks that pass `filter`, sorted.
fn metric_names(ctx: &Ctx<'_>, engine: Option<&str>, filter: fn(&str) -> bool) -> Vec<String> {
    let mut names: Vec<String> = ctx
        .runs
        .iter()
        .flat_map(|r| &r.tracks)
        .filter(|t| engine.is_none_or(|e| t.engine == e))
        .flat_map(|t| t.metrics.keys())
        .filter(|m| filter(m))
        .cloned()
        .collect();
    names.sort_by_key(|m| {
        (
            ["sys.", "proc.", "store."].iter().position(|p| m.starts_with(p)),
            m.clone(),
        )
    });
    names.dedup();
    names
}

/// The system figure: a panel for every system metric recorded.
pub fn system(ctx: &Ctx<'_>) -> Vec<Figure> {
    let metrics = metric_names(ctx, None, is_system);
    if metrics.is_empty() {
        return Vec::new();
    }
    let fig = Figure::new(
        "system",
        "system",
        "system metrics over the run (engines in their colours)",
    );
    vec![run_figure(ctx, fig, &metrics, None)]
}

/// One figure per engine: a panel for every engine metric it emitted, flat ones
/// included.
pub fn engines(ctx: &Ctx<'_>) -> Vec<Figure> {
    let mut names: Vec<&str> = ctx
        .runs
        .iter()
        .flat_map(|r| &r.tracks)
        .map(|t| t.engine.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::new();
    for engine in names {
        let metrics = metric_names(ctx, Some(engine), is_engine);
        if metrics.is_empty() {
            continue;
        }
        let fig = Figure::new(
            format!("engine-{engine}"),
            "engine",
            format!("{engine} internals over the run"),
        );
        out.push(run_figure(ctx, fig, &metrics, Some(engine)));
    }
    out
}

/// Per workload: the load phase's keys/s over time, one line per engine, a panel
/// per loader thread count.
pub fn ingest(ctx: &Ctx<'_>) -> Vec<Figure> {
    let loaded = ctx
        .runs
        .iter()
        .enumerate()
        .flat_map(|(d, r)| r.tracks.iter().map(move |t| (d, t)))
        .filter(|(_, t)| t.metrics.contains_key("keys_per_s") && t.samples.iter().any(|s| s.load));
    let mut out = Vec::new();
    for (workload, tracks) in group_by(loaded, |(_, t)| t.workload.clone()) {
        let mut fig = Figure::new(
            format!("ingest-{workload}"),
            "ingest",
            format!("seed phase ingest: {workload}"),
        );
        let mut by_threads = group_by(tracks, |(_, t)| t.load_threads.unwrap_or(1));
        by_threads.sort_by_key(|(n, _)| *n);
        for (n, tracks) in by_threads {
            let title = format!("seed with {n} loader thread{}", if n == 1 { "" } else { "s" });
            let mut panel = Panel::new(
                title,
                time_axis("time since the seed began (s)"),
                Axis::linear("keys written per second", Unit::PerSec),
            )
            .metric("keys_per_s");
            panel.zoom = true;
            let mut seen: Vec<(usize, &str)> = Vec::new();
            for (d, t) in tracks {
                if seen.contains(&(d, t.engine.as_str())) {
                    continue;
                }
                seen.push((d, t.engine.as_str()));
                let mut s = Series::new(
                    ctx.label(d, &t.engine),
                    ctx.color(&t.engine),
                    Mark::line(if ctx.multi() { ctx.dash(d) } else { Dash::Solid }),
                )
                .engine(&t.engine);
                s.points = line_of(t.loaded("keys_per_s"));
                panel.series.push(s);
            }
            fig.panels.push(panel);
        }
        out.push(fig.auto_columns());
    }
    out
}
