//! Per-epoch charts of growing-values runs (issue 8): throughput and per-kind
//! latency (mean and p99) against the epoch number, one line per mode with its
//! 95% interval shaded, and the data volume.

use super::{Ctx, DirPoint, group_by, point_coords};
use crate::plot::data::epoch::{Epoch, Interval};
use crate::plot::data::points::Point;
use crate::plot::figure::{Axis, Dash, Figure, Mark, Panel, Series, Shape, Unit};

/// How a mode's line looks (colour stays the engine's).
fn mode_mark(mode: &str) -> Mark {
    let (dash, shape) = match mode {
        "main" => (Dash::Solid, Shape::Circle),
        "clean" => (Dash::Dashed, Shape::Triangle),
        "average" => (Dash::Dotted, Shape::Square),
        "spread" => (Dash::Solid, Shape::Cross),
        _ => (Dash::Dashed, Shape::Cross),
    };
    Mark::line_marked(dash, shape)
}

/// A figure quantity read from an epoch.
type Pick = Box<dyn Fn(&Epoch) -> Option<Interval>>;

/// Which modes a panel draws: the run modes, or the extend phase (whose throughput is
/// of appends, not of the workload's units, so it gets panels of its own).
#[derive(Clone, Copy)]
enum Modes {
    Run,
    Extend,
    All,
}

impl Modes {
    fn has(self, mode: &str) -> bool {
        match self {
            Modes::Run => mode != "extend",
            Modes::Extend => mode == "extend",
            Modes::All => true,
        }
    }
}

/// Per workload and grid cell (the epoch aside): a panel per figure.
pub fn figures(ctx: &Ctx<'_>) -> Vec<Figure> {
    let epoch_points: Vec<DirPoint<'_>> = ctx
        .runs
        .iter()
        .enumerate()
        .flat_map(|(d, r)| r.points.iter().map(move |p| (d, p)))
        .filter(|(_, p)| p.epoch.is_some())
        .collect();
    let mut out = Vec::new();
    for ((workload, cell), points) in group_by(epoch_points, |(_, p)| (p.workload.clone(), p.cell_label())) {
        let p0 = points[0].1;
        let what = point_coords(p0);
        let mut engines: Vec<&str> = points.iter().map(|(_, p)| p.engine.as_str()).collect();
        engines.dedup();
        let mut fig = Figure::new(
            format!("epochs-{workload}-{}", super::slug(&cell)),
            "epochs",
            format!(
                "per epoch: {workload}, {}, {what} (shaded: 95% interval)",
                engines.join(", ")
            ),
        );
        let mut panels: Vec<(String, String, Axis, Pick, Modes)> = vec![
            (
                "run phase throughput (wu/s)".into(),
                "wu_per_s".into(),
                Axis::linear("throughput (wu/s)", Unit::PerSec),
                Box::new(|e: &Epoch| e.intervals.wu_per_s),
                Modes::Run,
            ),
            (
                "run phase throughput (ops/s)".into(),
                "ops_per_s".into(),
                Axis::linear("throughput (ops/s)", Unit::PerSec),
                Box::new(|e: &Epoch| e.intervals.ops_per_s),
                Modes::Run,
            ),
            (
                "extend phase throughput (appends/s)".into(),
                "extend.wu_per_s".into(),
                Axis::linear("throughput (appends/s)", Unit::PerSec),
                Box::new(|e: &Epoch| e.intervals.wu_per_s),
                Modes::Extend,
            ),
        ];
        let mut ops: Vec<String> = points
            .iter()
            .filter_map(|(_, p)| p.epoch.as_ref())
            .flat_map(|e| e.intervals.ops.keys().cloned())
            .collect();
        ops.sort();
        ops.dedup();
        for op in ops {
            let (a, b) = (op.clone(), op.clone());
            panels.push((
                format!("{op} mean latency"),
                format!("{op}.mean_ns"),
                Axis::linear("latency", Unit::Nanos),
                Box::new(move |e: &Epoch| e.intervals.ops.get(&a).and_then(|o| o.mean_ns)),
                Modes::All,
            ));
            panels.push((
                format!("{op} p99 latency"),
                format!("{op}.p99_ns"),
                Axis::linear("latency", Unit::Nanos),
                Box::new(move |e: &Epoch| e.intervals.ops.get(&b).and_then(|o| o.p99_ns)),
                Modes::All,
            ));
        }
        let has_volume = points
            .iter()
            .any(|(_, p)| p.epoch.as_ref().is_some_and(|e| e.volume_bytes.is_some()));
        if has_volume {
            panels.push((
                "data volume".into(),
                "volume_bytes".into(),
                Axis::linear("bytes stored", Unit::Bytes),
                Box::new(|e: &Epoch| {
                    e.volume_bytes.map(|v| Interval {
                        mean: v,
                        ci95: 0.0,
                        n: 1,
                    })
                }),
                Modes::Run,
            ));
        }
        for (title, metric, y, pick, modes) in panels {
            let mut panel = Panel::new(title, Axis::linear("epoch", Unit::Count), y).metric(&metric);
            for ((d, engine, mode), mut pts) in group_by(points.iter().copied(), |(d, p)| {
                (
                    *d,
                    p.engine.clone(),
                    p.epoch.as_ref().map_or(String::new(), |e| e.mode.clone()),
                )
            }) {
                if !modes.has(&mode) {
                    continue;
                }
                pts.sort_by_key(|(_, p)| epoch_of(p));
                let mut s = Series::new(
                    format!("{} {mode}", ctx.label(d, &engine)),
                    ctx.color(&engine),
                    mode_mark(&mode),
                )
                .engine(&engine);
                for (_, p) in pts {
                    let Some(e) = &p.epoch else { continue };
                    if let Some(i) = pick(e) {
                        let x = e.number as f64;
                        s.points.push([x, i.mean]);
                        if i.ci95 > 0.0 {
                            // Throughput and latency are never negative.
                            s.band.push([x, (i.mean - i.ci95).max(0.0), i.mean + i.ci95]);
                        }
                    }
                }
                if !s.points.is_empty() {
                    panel.series.push(s);
                }
            }
            if !panel.series.is_empty() {
                fig.panels.push(panel);
            }
        }
        if !fig.panels.is_empty() {
            out.push(fig.auto_columns());
        }
    }
    out
}

fn epoch_of(p: &Point) -> u64 {
    p.epoch.as_ref().map_or(0, |e| e.number)
}
