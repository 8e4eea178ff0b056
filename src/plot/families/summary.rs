//! Figures of the grid's summary numbers: throughput bars, scalability against
//! threads, connections and pipeline depth, batch amortization, and latency against
//! target rate.

use super::{Ctx, DirPoint, PERCENTILES, cell_order, coords, group_by, ops_differ};
use crate::plot::data::points::{Point, Spread};
use crate::plot::figure::{Axis, Dash, Figure, Mark, Panel, Series, Shape, Unit};

/// Which throughput a panel shows.
#[derive(Clone, Copy)]
enum Tput {
    Wu,
    Ops,
}

impl Tput {
    fn of(self, p: &Point) -> Spread {
        match self {
            Tput::Wu => p.wu,
            Tput::Ops => p.ops,
        }
    }

    fn axis(self) -> &'static str {
        match self {
            Tput::Wu => "throughput (wu/s)",
            Tput::Ops => "throughput (ops/s)",
        }
    }

    fn metric(self) -> &'static str {
        match self {
            Tput::Wu => "wu_per_s",
            Tput::Ops => "ops_per_s",
        }
    }
}

fn tputs(points: &[DirPoint<'_>], both: bool) -> Vec<Tput> {
    if both || ops_differ(points) {
        vec![Tput::Wu, Tput::Ops]
    } else {
        vec![Tput::Wu]
    }
}

/// Throughput bars per workload: a bar per engine (and directory) in each grid
/// cell, the error bar spanning the repeats' minimum to maximum.
pub fn throughput(ctx: &Ctx<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    for (workload, mut points) in group_by(ctx.points(), |(_, p)| p.workload.clone()) {
        points.sort_by_key(|(_, p)| cell_order(p));
        let mut cells: Vec<String> = Vec::new();
        for (_, p) in &points {
            if !cells.contains(&p.cell_label()) {
                cells.push(p.cell_label());
            }
        }
        let keys = Ctx::series_keys(&points);
        let repeats = points.iter().map(|(_, p)| p.repeats).max().unwrap_or(1);
        let mut title = format!("throughput: {workload}");
        if repeats > 1 {
            title.push_str(&format!(" (median of {repeats} repeats; bars span min to max)"));
        }
        let mut fig = Figure::new(format!("throughput-{workload}"), "throughput", title);
        for t in tputs(&points, false) {
            let mut panel = Panel::new(
                t.axis(),
                Axis::category("threads, batch, rate"),
                Axis::linear(t.axis(), Unit::PerSec),
            )
            .metric(t.metric());
            panel.categories = cells.clone();
            panel.slots = keys.len();
            for (slot, (d, engine)) in keys.iter().enumerate() {
                let mut s = Series::new(ctx.label(*d, engine), ctx.bar_color(*d, engine), Mark::Bar).engine(engine);
                s.slot = slot;
                for (_, p) in points.iter().filter(|(pd, p)| pd == d && &p.engine == engine) {
                    let x = cells.iter().position(|c| *c == p.cell_label()).unwrap_or(0) as f64;
                    push_spread(&mut s, x, t.of(p));
                }
                panel.series.push(s);
            }
            fig.panels.push(panel);
        }
        fig.columns = 1;
        out.push(fig.fit_width(cells.len() * keys.len()));
    }
    out
}

/// The coordinates a sweep figure holds fixed, as a key: workload, threads,
/// connections, pipeline, batch, sweep, rate (None: the one the figure sweeps).
type Fixed = (
    String,
    Option<usize>,
    Option<usize>,
    Option<usize>,
    Option<usize>,
    Option<(String, String)>,
    Option<String>,
);

/// Line figures of throughput against one coordinate (threads or batch), one per
/// workload and combination of the other coordinates.
fn sweep_figures(
    ctx: &Ctx<'_>,
    family: &'static str,
    x_of: fn(&Point) -> usize,
    fixed: fn(&Point) -> Fixed,
    x_label: &str,
    both: bool,
) -> Vec<Figure> {
    let mut out = Vec::new();
    for ((workload, threads, connections, pipeline, batch, sweep, rate), points) in
        group_by(ctx.points(), |(_, p)| fixed(p))
    {
        let mut xs: Vec<usize> = points.iter().map(|(_, p)| x_of(p)).collect();
        xs.sort_unstable();
        xs.dedup();
        if xs.len() < 2 {
            continue;
        }
        let spread_wide = xs[xs.len() - 1] >= 16 * xs[0];
        let x_axis = if spread_wide {
            Axis::log(x_label, Unit::Count)
        } else {
            Axis::linear(x_label, Unit::Count)
        };
        let what = coords(threads, connections, pipeline, batch, sweep.as_ref(), rate.as_deref());
        let title = match what.is_empty() {
            true => format!("{family}: {workload}"),
            false => format!("{family}: {workload}, {what}"),
        };
        let mut name = format!("{family}-{workload}");
        for part in [
            threads.map(|t| format!("t{t}")),
            connections.filter(|&c| c != 1).map(|c| format!("c{c}")),
            pipeline.filter(|&d| d != 1).map(|d| format!("p{d}")),
            batch.map(|b| format!("b{b}")),
            sweep.as_ref().map(|(k, v)| format!("{k}{v}")),
            rate.as_ref().map(|r| format!("r{r}")),
        ]
        .into_iter()
        .flatten()
        {
            name.push('-');
            name.push_str(&part);
        }
        let mut fig = Figure::new(name, family, title);
        for t in tputs(&points, both) {
            let mut panel =
                Panel::new(t.axis(), x_axis.clone(), Axis::linear(t.axis(), Unit::PerSec)).metric(t.metric());
            for (d, engine) in Ctx::series_keys(&points) {
                let mut mine: Vec<&Point> = points
                    .iter()
                    .filter(|(pd, p)| *pd == d && p.engine == engine)
                    .map(|(_, p)| *p)
                    .collect();
                mine.sort_by_key(|p| x_of(p));
                let mut s = Series::new(
                    ctx.label(d, &engine),
                    ctx.color(&engine),
                    Mark::line_marked(ctx.dash(d), Shape::Circle),
                )
                .engine(&engine);
                for p in mine {
                    let x = x_of(p) as f64;
                    push_spread(&mut s, x, t.of(p));
                }
                panel.series.push(s);
            }
            fig.panels.push(panel);
        }
        out.push(fig.auto_columns());
    }
    out
}

/// Throughput against threads, one line per engine.
pub fn scaling(ctx: &Ctx<'_>) -> Vec<Figure> {
    sweep_figures(
        ctx,
        "scaling",
        |p| p.threads,
        |p| {
            (
                p.workload.clone(),
                None,
                Some(p.connections),
                Some(p.pipeline),
                Some(p.batch),
                p.sweep.clone(),
                p.rate.as_ref().map(|r| r.text.clone()),
            )
        },
        "threads",
        false,
    )
}

/// Throughput against connections per thread (requests in flight), one line per
/// engine.
pub fn connections(ctx: &Ctx<'_>) -> Vec<Figure> {
    sweep_figures(
        ctx,
        "connections",
        |p| p.connections,
        |p| {
            (
                p.workload.clone(),
                Some(p.threads),
                None,
                Some(p.pipeline),
                Some(p.batch),
                p.sweep.clone(),
                p.rate.as_ref().map(|r| r.text.clone()),
            )
        },
        "connections per thread",
        false,
    )
}

/// Throughput against pipeline depth (requests in flight per connection), one line
/// per engine.
pub fn pipeline(ctx: &Ctx<'_>) -> Vec<Figure> {
    sweep_figures(
        ctx,
        "pipeline",
        |p| p.pipeline,
        |p| {
            (
                p.workload.clone(),
                Some(p.threads),
                Some(p.connections),
                None,
                Some(p.batch),
                p.sweep.clone(),
                p.rate.as_ref().map(|r| r.text.clone()),
            )
        },
        "requests in flight per connection",
        false,
    )
}

/// wu/s and ops/s against batch size: ops/s rises with the batch while wu/s falls.
pub fn batch(ctx: &Ctx<'_>) -> Vec<Figure> {
    sweep_figures(
        ctx,
        "batch",
        |p| p.batch,
        |p| {
            (
                p.workload.clone(),
                Some(p.threads),
                Some(p.connections),
                Some(p.pipeline),
                None,
                p.sweep.clone(),
                p.rate.as_ref().map(|r| r.text.clone()),
            )
        },
        "batch size (keys per call)",
        true,
    )
}

/// Open-loop sweeps: achieved against target rate, and response-time percentiles
/// per operation kind against target rate.
pub fn rate(ctx: &Ctx<'_>) -> Vec<Figure> {
    let paced: Vec<DirPoint<'_>> = ctx.points().into_iter().filter(|(_, p)| p.rate.is_some()).collect();
    let mut out = Vec::new();
    for ((workload, threads, connections, pipeline, batch, sweep), points) in group_by(paced, |(_, p)| {
        (
            p.workload.clone(),
            p.threads,
            p.connections,
            p.pipeline,
            p.batch,
            p.sweep.clone(),
        )
    }) {
        let bytes = points.iter().any(|(_, p)| p.rate.as_ref().is_some_and(|r| r.bytes));
        let unit = if bytes { Unit::BytesPerSec } else { Unit::PerSec };
        let label = if bytes {
            "target rate (bytes/s)"
        } else {
            "target rate (wu/s)"
        };
        let targets: Vec<f64> = points
            .iter()
            .filter_map(|(_, p)| p.rate.as_ref().map(|r| r.per_s))
            .collect();
        let (lo, hi) = targets
            .iter()
            .fold((f64::INFINITY, 0f64), |(a, b), v| (a.min(*v), b.max(*v)));
        let x_axis = if hi >= 10.0 * lo {
            Axis::log(label, unit)
        } else {
            Axis::linear(label, unit)
        };
        let what = coords(
            Some(threads),
            Some(connections),
            Some(pipeline),
            Some(batch),
            sweep.as_ref(),
            None,
        );
        let mut conns = String::new();
        if connections != 1 {
            conns.push_str(&format!("-c{connections}"));
        }
        if pipeline != 1 {
            conns.push_str(&format!("-p{pipeline}"));
        }
        let mut fig = Figure::new(
            format!("rate-{workload}-t{threads}{conns}-b{batch}"),
            "rate",
            format!("latency against target rate: {workload}, {what}"),
        );
        let keys = Ctx::series_keys(&points);
        let mine = |d: usize, engine: &str| -> Vec<&Point> {
            let mut v: Vec<&Point> = points
                .iter()
                .filter(|(pd, p)| *pd == d && p.engine == engine)
                .map(|(_, p)| *p)
                .collect();
            v.sort_by(|a, b| rate_of(a).total_cmp(&rate_of(b)));
            v
        };
        let achieved_label = if bytes { "achieved (bytes/s)" } else { "achieved (wu/s)" };
        let mut achieved =
            Panel::new("achieved rate", x_axis.clone(), Axis::linear(achieved_label, unit)).metric("achieved");
        let mut ideal = Series::new("target", "#999999", Mark::line(Dash::Dotted));
        ideal.points = vec![[lo, lo], [hi, hi]];
        achieved.series.push(ideal);
        for (d, engine) in &keys {
            let mut s = Series::new(
                ctx.label(*d, engine),
                ctx.color(engine),
                Mark::line_marked(ctx.dash(*d), Shape::Circle),
            )
            .engine(engine);
            for p in mine(*d, engine) {
                if let Some(a) = p.achieved {
                    s.points.push([rate_of(p), a.median]);
                }
            }
            achieved.series.push(s);
        }
        fig.panels.push(achieved);
        // Response time where measured (open loop), else service time.
        let mut kinds: Vec<(String, String)> = Vec::new();
        for (_, p) in &points {
            let has_response = p.latency.iter().any(|l| l.set == "response");
            for l in &p.latency {
                let wanted = if has_response { "response" } else { "service" };
                if l.set == wanted && !kinds.contains(&(l.op.clone(), l.set.clone())) {
                    kinds.push((l.op.clone(), l.set.clone()));
                }
            }
        }
        for (op, set) in kinds {
            let what = if set == "response" { "response time" } else { "latency" };
            let mut panel = Panel::new(
                format!("{op} {what}"),
                x_axis.clone(),
                Axis::log(format!("{what} (log)"), Unit::Nanos),
            )
            .metric(&format!("{op}.{set}"));
            for (d, engine) in &keys {
                for (pct, shape) in PERCENTILES {
                    let mut s = Series::new(
                        format!("{} {pct}", ctx.label(*d, engine)),
                        ctx.color(engine),
                        Mark::line_marked(ctx.dash(*d), shape),
                    )
                    .engine(engine);
                    for p in mine(*d, engine) {
                        if let Some(l) = p.latency.iter().find(|l| l.op == op && l.set == set) {
                            s.points.push([rate_of(p), pick(l, pct)]);
                        }
                    }
                    panel.series.push(s);
                }
            }
            fig.panels.push(panel);
        }
        out.push(fig.auto_columns());
    }
    out
}

/// The median as a point, the spread over repeats as an error bar.
fn push_spread(s: &mut Series, x: f64, v: Spread) {
    s.points.push([x, v.median]);
    if v.max > v.min {
        s.errors.push([x, v.min, v.max]);
    }
}

fn rate_of(p: &Point) -> f64 {
    p.rate.as_ref().map_or(f64::NAN, |r| r.per_s)
}

/// A percentile of a latency summary by its label.
pub fn pick(l: &crate::plot::data::points::Latency, pct: &str) -> f64 {
    match pct {
        "p50" => l.p50,
        "p90" => l.p90,
        "p99" => l.p99,
        "p99.9" => l.p999,
        "p99.99" => l.p9999,
        "mean" => l.mean,
        _ => l.max,
    }
}
