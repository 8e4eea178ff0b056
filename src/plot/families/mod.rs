//! The figure families, each building [`Figure`]s from the loaded result
//! directories: [`summary`] (throughput bars, scalability, batch amortization,
//! latency against target rate), [`latency`] (per-kind percentiles, the
//! percentile spectrum and the latency heatmap), [`timeline`] (per-point timelines, the system figure,
//! engine internals, the ingest curve) and [`epochs`] (growing values).

pub mod epochs;
pub mod latency;
pub mod summary;
pub mod timeline;

use super::data::RunData;
use super::data::points::Point;
use super::figure::{Dash, Figure, Shape};
use super::palette::{Palette, lighten};

/// What every family needs: the data and the colours.
pub struct Ctx<'a> {
    /// The result directories, in the order given.
    pub runs: &'a [RunData],
    /// Engine colours.
    pub palette: &'a Palette,
}

/// A point of one of the directories.
pub type DirPoint<'a> = (usize, &'a Point);

impl<'a> Ctx<'a> {
    /// True when several directories are overlaid.
    pub fn multi(&self) -> bool {
        self.runs.len() > 1
    }

    /// The legend label of an engine's series from directory `dir`.
    pub fn label(&self, dir: usize, engine: &str) -> String {
        if self.multi() {
            format!("{engine} ({})", self.runs[dir].label)
        } else {
            engine.to_string()
        }
    }

    /// The engine's colour.
    pub fn color(&self, engine: &str) -> String {
        self.palette.color(engine)
    }

    /// The engine's colour for bars of directory `dir`: lighter for later
    /// directories, so overlaid runs stay apart and keep the engine's hue.
    pub fn bar_color(&self, dir: usize, engine: &str) -> String {
        lighten(&self.color(engine), 0.3 * (dir % 3) as f64)
    }

    /// The line pattern of directory `dir`.
    pub fn dash(&self, dir: usize) -> Dash {
        [Dash::Solid, Dash::Dashed, Dash::Dotted][dir % 3]
    }

    /// Every ordinary point (not an epoch of a growing-values run), in order.
    pub fn points(&self) -> Vec<DirPoint<'a>> {
        self.runs
            .iter()
            .enumerate()
            .flat_map(|(d, r)| r.points.iter().map(move |p| (d, p)))
            .filter(|(_, p)| p.epoch.is_none())
            .collect()
    }

    /// Workload names in order of first appearance, over points and timelines.
    pub fn workloads(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let names = self.runs.iter().flat_map(|r| {
            r.points
                .iter()
                .map(|p| p.workload.clone())
                .chain(r.tracks.iter().map(|t| t.workload.clone()))
        });
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }

    /// The (directory, engine) pairs among `points`, in order of appearance.
    pub fn series_keys(points: &[DirPoint<'_>]) -> Vec<(usize, String)> {
        let mut out: Vec<(usize, String)> = Vec::new();
        for (d, p) in points {
            let k = (*d, p.engine.clone());
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }
}

/// The markers that tell percentiles apart in latency figures.
pub const PERCENTILES: [(&str, Shape); 4] = [
    ("p50", Shape::Circle),
    ("p99", Shape::Triangle),
    ("p99.9", Shape::Square),
    ("max", Shape::Cross),
];

/// Every figure the data supports.
pub fn all(ctx: &Ctx<'_>) -> Vec<Figure> {
    let mut out = Vec::new();
    out.extend(summary::throughput(ctx));
    out.extend(summary::scaling(ctx));
    out.extend(summary::connections(ctx));
    out.extend(summary::pipeline(ctx));
    out.extend(summary::batch(ctx));
    out.extend(latency::summary(ctx));
    out.extend(latency::spectrum(ctx));
    out.extend(latency::heatmap(ctx));
    out.extend(summary::rate(ctx));
    out.extend(timeline::per_point(ctx));
    out.extend(timeline::system(ctx));
    out.extend(timeline::engines(ctx));
    out.extend(timeline::ingest(ctx));
    out.extend(epochs::figures(ctx));
    out
}

/// Groups items by a key, keeping the order of first appearance.
pub fn group_by<T, K: PartialEq + Clone>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
) -> Vec<(K, Vec<T>)> {
    let mut out: Vec<(K, Vec<T>)> = Vec::new();
    for it in items {
        let k = key(&it);
        match out.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(it),
            None => out.push((k, vec![it])),
        }
    }
    out
}

/// A point's coordinates as a sortable key: threads, connections, pipeline, batch,
/// sweep, rate.
pub fn cell_order(p: &Point) -> (usize, usize, usize, usize, String, u64) {
    let sweep = p.sweep.as_ref().map_or(String::new(), |(k, v)| {
        // Numbers sort as numbers.
        match v.parse::<f64>() {
            Ok(n) => format!("{k}={n:020.6}"),
            Err(_) => format!("{k}={v}"),
        }
    });
    let rate = p.rate.as_ref().map_or(0, |r| r.per_s.max(0.0) as u64);
    (p.threads, p.connections, p.pipeline, p.batch, sweep, rate)
}

/// Title fragments naming a point's coordinates: "threads 2, batch 8, rate 5000".
pub fn coords(
    threads: Option<usize>,
    connections: Option<usize>,
    pipeline: Option<usize>,
    batch: Option<usize>,
    sweep: Option<&(String, String)>,
    rate: Option<&str>,
) -> String {
    let mut parts = Vec::new();
    if let Some(t) = threads {
        parts.push(format!("threads {t}"));
    }
    if let Some(c) = connections.filter(|&c| c != 1) {
        parts.push(format!("connections {c}"));
    }
    if let Some(d) = pipeline.filter(|&d| d != 1) {
        parts.push(format!("pipeline {d}"));
    }
    if let Some(b) = batch {
        parts.push(format!("batch {b}"));
    }
    if let Some((k, v)) = sweep {
        parts.push(format!("{k} {v}"));
    }
    if let Some(r) = rate {
        parts.push(format!("target rate {r}"));
    }
    parts.join(", ")
}

/// A cell label as part of a file name: "t2 b8 @5000" becomes "t2-b8-r5000".
pub fn slug(cell: &str) -> String {
    cell.replace(" @", "-r")
        .replace('@', "r")
        .replace('=', "")
        .replace(' ', "-")
}

/// A point's coordinates for a title.
pub fn point_coords(p: &Point) -> String {
    coords(
        Some(p.threads),
        Some(p.connections),
        Some(p.pipeline),
        Some(p.batch),
        p.sweep.as_ref(),
        p.rate.as_ref().map(|r| r.text.as_str()),
    )
}

/// True when wu/s and ops/s differ for some point (so both get a panel).
pub fn ops_differ(points: &[DirPoint<'_>]) -> bool {
    points
        .iter()
        .any(|(_, p)| (p.wu.median - p.ops.median).abs() > 1e-6 * p.ops.median.abs().max(1.0))
}
