//! What a figure shows, independent of how it is drawn: panels of series on axes
//! with units. The figure families build these; [`super::render`] draws them with
//! plotters (PNG, SVG, PDF) and [`super::html`] hands the same description to the
//! interactive report, so both always show the same panels.

use serde::Serialize;

/// What the numbers on an axis measure; it picks the tick labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A plain number (counts, thread counts, batch sizes, epochs).
    Count,
    /// Per second (throughput, rates).
    PerSec,
    /// Nanoseconds, labelled with an automatic unit (ns, us, ms, s).
    Nanos,
    /// Seconds of elapsed time.
    Seconds,
    /// Bytes, labelled with binary prefixes.
    Bytes,
    /// Bytes per second.
    BytesPerSec,
    /// Percent.
    Percent,
    /// A percentile axis: the value is the number of nines, -log10(1 - q), so the
    /// tail is spread out; labelled 90%, 99%, 99.9%...
    Nines,
}

/// The scale of an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Evenly spaced values.
    Linear,
    /// Decades evenly spaced (values must be positive).
    Log,
    /// Categories at 0, 1, 2...: the panel's `categories` name them.
    Category,
}

/// One axis: its label (the unit goes in it too) and how values map.
#[derive(Debug, Clone, Serialize)]
pub struct Axis {
    /// The label, unit included, e.g. "throughput (wu/s)".
    pub label: String,
    /// What the values measure.
    pub unit: Unit,
    /// How values map to positions.
    pub scale: Scale,
}

impl Axis {
    /// A linear axis.
    pub fn linear(label: impl Into<String>, unit: Unit) -> Axis {
        Axis {
            label: label.into(),
            unit,
            scale: Scale::Linear,
        }
    }

    /// A logarithmic axis.
    pub fn log(label: impl Into<String>, unit: Unit) -> Axis {
        Axis {
            label: label.into(),
            unit,
            scale: Scale::Log,
        }
    }

    /// A category axis.
    pub fn category(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            unit: Unit::Count,
            scale: Scale::Category,
        }
    }
}

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dash {
    /// A solid line.
    Solid,
    /// Long dashes.
    Dashed,
    /// Dots.
    Dotted,
}

/// A marker drawn at each value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// A filled circle.
    Circle,
    /// A filled triangle.
    Triangle,
    /// A filled square.
    Square,
    /// A cross.
    Cross,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// A line through the points (breaks at NaN values).
    Line {
        /// Stroke width in pixels.
        width: f64,
        /// Stroke pattern.
        dash: Dash,
        /// A marker on each point too.
        marker: Option<Shape>,
    },
    /// Markers only.
    Points {
        /// The marker.
        shape: Shape,
    },
    /// Bars (category panels only), in the series' slot of each category.
    Bar,
}

impl Mark {
    /// A plain line.
    pub fn line(dash: Dash) -> Mark {
        Mark::Line {
            width: 2.0,
            dash,
            marker: None,
        }
    }

    /// A line with a marker on each point.
    pub fn line_marked(dash: Dash, shape: Shape) -> Mark {
        Mark::Line {
            width: 2.0,
            dash,
            marker: Some(shape),
        }
    }
}

/// One series of a panel.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// The legend text.
    pub label: String,
    /// The engine it belongs to (for the report's engine toggles), if any.
    pub engine: Option<String>,
    /// `#rrggbb`.
    pub color: String,
    /// How it is drawn.
    pub mark: Mark,
    /// (x, y) points in x order; a NaN y breaks a line. On a category panel x is
    /// the category's index.
    pub points: Vec<[f64; 2]>,
    /// A shaded interval around the line: (x, low, high) per point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub band: Vec<[f64; 3]>,
    /// Error bars: (x, low, high) per point (category panels).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<[f64; 3]>,
    /// On a category panel: which of the panel's `slots` side-by-side places the
    /// series occupies within each category.
    pub slot: usize,
    /// Shown in the legend (a series that repeats another's legend entry is not).
    pub legend: bool,
}

impl Series {
    /// A series with no points yet.
    pub fn new(label: impl Into<String>, color: impl Into<String>, mark: Mark) -> Series {
        Series {
            label: label.into(),
            engine: None,
            color: color.into(),
            mark,
            points: Vec::new(),
            band: Vec::new(),
            errors: Vec::new(),
            slot: 0,
            legend: true,
        }
    }

    /// Tags the series with its engine.
    pub fn engine(mut self, engine: &str) -> Series {
        self.engine = Some(engine.to_string());
        self
    }

    /// True when no point has a finite value.
    pub fn is_empty(&self) -> bool {
        !self.points.iter().any(|p| p[0].is_finite() && p[1].is_finite())
    }
}

/// A vertical marker line, e.g. a phase change.
#[derive(Debug, Clone, Serialize)]
pub struct VLine {
    /// Where, in x units.
    pub x: f64,
    /// Its label (may be empty).
    pub label: String,
}

/// A shaded x range, e.g. the warm-up.
#[derive(Debug, Clone, Serialize)]
pub struct Span {
    /// Start, in x units.
    pub from: f64,
    /// End, in x units.
    pub to: f64,
    /// Its label.
    pub label: String,
}

/// One chart of a figure.
#[derive(Debug, Clone, Serialize)]
pub struct Panel {
    /// Panel title.
    pub title: String,
    /// The metric it plots, when it plots one named metric (the manifest lists it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// Category names, for a category x axis.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Side-by-side places per category (category panels).
    pub slots: usize,
    /// The series.
    pub series: Vec<Series>,
    /// Vertical marker lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vlines: Vec<VLine>,
    /// Shaded x ranges.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Span>,
    /// True when the x axis is time, so the report lets the user zoom into it.
    pub zoom: bool,
    /// A heatmap, drawn under the series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heatmap: Option<Heatmap>,
}

/// A heatmap: columns in x, each holding counts in log-spaced y buckets. Kept as
/// bucket numbers and counts, not rectangles, so a long run's report page stays small;
/// the page colours them as [`heat_color`] does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Heatmap {
    /// Buckets per decade of y: bucket `b` spans 10^(b / per_decade) to the next.
    pub per_decade: f64,
    /// The largest count of any cell (the darkest colour).
    pub max: u64,
    /// Each column's x from and to.
    pub x: Vec<[f64; 2]>,
    /// Each column's non-empty buckets, flat: bucket, count, bucket, count...
    pub counts: Vec<Vec<i64>>,
}

impl Heatmap {
    /// Every cell: x from, x to, y from, y to, count.
    pub fn cells(&self) -> impl Iterator<Item = (f64, f64, f64, f64, u64)> + '_ {
        let y = |b: i64| 10f64.powf(b as f64 / self.per_decade);
        self.x.iter().zip(&self.counts).flat_map(move |(x, c)| {
            c.chunks_exact(2)
                .map(move |bn| (x[0], x[1], y(bn[0]), y(bn[0] + 1), bn[1].max(0) as u64))
        })
    }
}

/// The colour of a heatmap cell holding `count` of at most `max`: a log scale (one
/// slow call in a thousand must still show) from pale yellow through orange and red
/// to a dark purple. assets/report.js's `heatColor` is the same scale.
pub fn heat_color(count: u64, max: u64) -> String {
    const STOPS: [(f64, [f64; 3]); 5] = [
        (0.0, [255.0, 245.0, 200.0]),
        (0.3, [253.0, 190.0, 90.0]),
        (0.55, [240.0, 100.0, 45.0]),
        (0.8, [180.0, 30.0, 80.0]),
        (1.0, [70.0, 10.0, 90.0]),
    ];
    let t = if max <= 1 {
        1.0
    } else {
        ((count.max(1) as f64).ln() / (max as f64).ln()).clamp(0.0, 1.0)
    };
    let i = STOPS
        .iter()
        .rposition(|(at, _)| *at <= t)
        .unwrap_or(0)
        .min(STOPS.len() - 2);
    let ((a, ca), (b, cb)) = (STOPS[i], STOPS[i + 1]);
    let f = ((t - a) / (b - a)).clamp(0.0, 1.0);
    let c: Vec<u8> = (0..3).map(|k| (ca[k] + (cb[k] - ca[k]) * f).round() as u8).collect();
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

impl Panel {
    /// An empty panel.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Panel {
        Panel {
            title: title.into(),
            metric: None,
            x,
            y,
            categories: Vec::new(),
            slots: 1,
            series: Vec::new(),
            vlines: Vec::new(),
            spans: Vec::new(),
            zoom: false,
            heatmap: None,
        }
    }

    /// Names the metric the panel plots.
    pub fn metric(mut self, metric: &str) -> Panel {
        self.metric = Some(metric.to_string());
        self
    }
}

/// Pixel width of one panel, unless a figure widens its panels.
pub const PANEL_W: u32 = 560;
/// Pixel height of one panel.
pub const PANEL_H: u32 = 360;

/// A figure: a titled grid of panels, written to one file.
#[derive(Debug, Clone, Serialize)]
pub struct Figure {
    /// File name without the extension, unique in the output directory.
    pub name: String,
    /// The family (throughput, scaling, batch, latency, percentiles, heatmap, timeline,
    /// connections, pipeline, system, engine, ingest, rate, epochs).
    pub family: &'static str,
    /// The title: workload, engine, threads, batch as they apply.
    pub title: String,
    /// Panels per row.
    pub columns: usize,
    /// Pixel width of each panel, when wider than usual (many categories).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub panel_width: Option<u32>,
    /// The panels, row by row.
    pub panels: Vec<Panel>,
}

impl Figure {
    /// A figure whose panels are laid out `columns` to a row.
    pub fn new(name: impl Into<String>, family: &'static str, title: impl Into<String>) -> Figure {
        Figure {
            name: sanitize(&name.into()),
            family,
            title: title.into(),
            columns: 1,
            panel_width: None,
            panels: Vec::new(),
        }
    }

    /// Widens the panels so `marks` bars or marker columns side by side stay apart.
    pub fn fit_width(mut self, marks: usize) -> Figure {
        let wanted = (marks as u32).saturating_mul(12).saturating_add(140);
        if wanted > PANEL_W {
            self.panel_width = Some(wanted.min(2400));
        }
        self
    }

    /// Chooses the number of columns for the number of panels.
    pub fn auto_columns(mut self) -> Figure {
        self.columns = match self.panels.len() {
            0..=1 => 1,
            2 | 4 => 2,
            _ => 3,
        };
        self
    }
}

/// A file-name-safe version of a name.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A value for an axis tick: short, with the unit's prefix.
pub fn tick_label(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Nanos => nanos(v),
        Unit::Bytes => bytes(v),
        Unit::BytesPerSec => format!("{}/s", bytes(v)),
        Unit::Percent => format!("{}%", short(v)),
        Unit::Nines => nines(v),
        Unit::Count | Unit::PerSec | Unit::Seconds => short(v),
    }
}

/// 1234567 as "1.23M", 0.5 as "0.5".
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", trim(scaled))
}

/// A number with at most three significant decimals and no trailing zeros.
fn trim(v: f64) -> String {
    let s = if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn nanos(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{} s", trim(v / 1e9))
    } else if a >= 1e6 {
        format!("{} ms", trim(v / 1e6))
    } else if a >= 1e3 {
        format!("{} us", trim(v / 1e3))
    } else {
        format!("{} ns", trim(v))
    }
}

fn bytes(v: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = v;
    let mut i = 0;
    while x.abs() >= 1024.0 && i + 1 < units.len() {
        x /= 1024.0;
        i += 1;
    }
    format!("{} {}", trim(x), units[i])
}

fn nines(v: f64) -> String {
    // v nines: q = 1 - 10^-v.
    let q = (1.0 - 10f64.powf(-v)) * 100.0;
    if v < 0.5 {
        return format!("{}%", trim(q));
    }
    let decimals = (v.round() as usize).saturating_sub(2);
    format!("{q:.decimals$}%")
}

/// At most about `max` of `points`, keeping each bucket's lowest and highest value
/// (so spikes survive) and every NaN break.
pub fn decimate(points: &[[f64; 2]], max: usize) -> Vec<[f64; 2]> {
    if points.len() <= max || max < 4 {
        return points.to_vec();
    }
    let bucket = points.len().div_ceil(max / 2);
    let mut out = Vec::with_capacity(max + 8);
    for chunk in points.chunks(bucket) {
        let mut lo: Option<[f64; 2]> = None;
        let mut hi: Option<[f64; 2]> = None;
        let flush = |lo: &mut Option<[f64; 2]>, hi: &mut Option<[f64; 2]>, out: &mut Vec<[f64; 2]>| match (
            lo.take(),
            hi.take(),
        ) {
            (Some(a), Some(b)) if a[0] < b[0] => out.extend([a, b]),
            (Some(a), Some(b)) if a[0] > b[0] => out.extend([b, a]),
            (Some(a), _) => out.push(a),
            _ => {}
        };
        for p in chunk {
            if !p[1].is_finite() {
                flush(&mut lo, &mut hi, &mut out);
                out.push(*p);
                continue;
            }
            if lo.is_none_or(|l| p[1] < l[1]) {
                lo = Some(*p);
            }
            if hi.is_none_or(|h| p[1] > h[1]) {
                hi = Some(*p);
            }
        }
        flush(&mut lo, &mut hi, &mut out);
    }
    out
}

/// The number of nines of quantile `q` (0 <= q < 1).
pub fn to_nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-12).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_carry_their_unit() {
        assert_eq!(tick_label(Unit::Nanos, 1500.0), "1.5 us");
        assert_eq!(tick_label(Unit::Nanos, 2e6), "2 ms");
        assert_eq!(tick_label(Unit::Nanos, 800.0), "800 ns");
        assert_eq!(tick_label(Unit::Bytes, 3.0 * 1024.0 * 1024.0), "3 MiB");
        assert_eq!(tick_label(Unit::PerSec, 125_000.0), "125k");
        assert_eq!(tick_label(Unit::PerSec, 2_500_000.0), "2.5M");
        assert_eq!(tick_label(Unit::Count, 0.25), "0.25");
        assert_eq!(tick_label(Unit::Percent, 50.0), "50%");
    }

    #[test]
    fn nines_read_as_percentiles() {
        assert_eq!(tick_label(Unit::Nines, 0.0), "0%");
        assert_eq!(tick_label(Unit::Nines, 1.0), "90%");
        assert_eq!(tick_label(Unit::Nines, 2.0), "99%");
        assert_eq!(tick_label(Unit::Nines, 3.0), "99.9%");
        assert_eq!(tick_label(Unit::Nines, 5.0), "99.999%");
        assert!((to_nines(0.999) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn decimation_keeps_spikes_and_breaks() {
        let mut pts: Vec<[f64; 2]> = (0..10_000).map(|i| [i as f64, 1.0]).collect();
        pts[5_000][1] = 99.0;
        pts[7_000][1] = f64::NAN;
        let d = decimate(&pts, 400);
        assert!(d.len() <= 420, "{}", d.len());
        assert!(d.iter().any(|p| p[1] == 99.0));
        assert!(d.iter().any(|p| p[1].is_nan()));
        assert!(d.windows(2).all(|w| w[0][0] <= w[1][0]));
        assert_eq!(decimate(&pts[..10], 400).len(), 10);
    }

    #[test]
    fn names_are_file_safe() {
        assert_eq!(sanitize("timeline-ycsb a/t2"), "timeline-ycsb_a_t2");
    }
}
