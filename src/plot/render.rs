//! Draws a [`Figure`] as SVG with plotters: a title, one legend for the whole
//! figure, and a grid of panels with labelled axes. Text is measured with the
//! embedded DejaVu Sans, the same font the PNG and PDF conversions use.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::AxisMap;
use super::figure::{Dash, Figure, Mark, PANEL_H, PANEL_W, Panel, Scale, Series, Shape, Unit, heat_color};
use super::palette::rgb;

const TITLE_H: u32 = 40;
const LEGEND_ROW_H: u32 = 22;
const FONT: &str = "sans-serif";

static FONTS: Once = Once::new();

/// Registers the embedded font with plotters (for measuring text).
fn fonts() {
    FONTS.call_once(|| {
        // The bundled font always parses; if it did not, text would only be
        // measured less exactly.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Err = String;

fn e<E: std::fmt::Debug>(err: E) -> Err {
    format!("drawing failed: {err:?}")
}

fn color(hex: &str) -> RGBColor {
    let (r, g, b) = rgb(hex);
    RGBColor(r, g, b)
}

/// One legend entry: what a series looks like and what it is.
#[derive(Clone, PartialEq)]
struct LegendEntry {
    label: String,
    color: String,
    mark: Mark,
}

fn legend_entries(fig: &Figure) -> Vec<LegendEntry> {
    let mut out: Vec<LegendEntry> = Vec::new();
    for s in fig.panels.iter().flat_map(|p| &p.series) {
        if !s.legend || s.is_empty() {
            continue;
        }
        let entry = LegendEntry {
            label: s.label.clone(),
            color: s.color.clone(),
            mark: s.mark,
        };
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    out
}

fn text_width(text: &str, size: u32) -> u32 {
    (FONT, size)
        .into_font()
        .box_size(text)
        .map(|(w, _)| w)
        .unwrap_or(text.len() as u32 * size / 2)
}

/// Lays legend entries out in rows that fit `width`: (row, x) per entry.
fn legend_layout(entries: &[LegendEntry], width: u32) -> (Vec<(u32, u32)>, u32) {
    let mut pos = Vec::new();
    let (mut row, mut x) = (0u32, 10u32);
    for en in entries {
        let w = 34 + text_width(&en.label, 13) + 18;
        if x + w > width && x > 10 {
            row += 1;
            x = 10;
        }
        pos.push((row, x));
        x += w;
    }
    let rows = if entries.is_empty() { 0 } else { row + 1 };
    (pos, rows)
}

/// The figure as an SVG document.
pub fn svg(fig: &Figure) -> Result<String, Err> {
    fonts();
    let columns = fig.columns.max(1);
    let rows = fig.panels.len().div_ceil(columns).max(1) as u32;
    let panel_w = fig.panel_width.unwrap_or(PANEL_W);
    let width = (columns as u32 * panel_w).max(text_width(&fig.title, 20) + 60);
    let entries = legend_entries(fig);
    let (places, legend_rows) = legend_layout(&entries, width);
    let head = TITLE_H + legend_rows * LEGEND_ROW_H + 4;
    let height = head + rows * PANEL_H;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        let title = (FONT, 20).into_font().style(FontStyle::Bold).color(&BLACK);
        let centered = title.pos(Pos::new(HPos::Center, VPos::Center));
        root.draw_text(&fig.title, &centered, (width as i32 / 2, TITLE_H as i32 / 2))
            .map_err(e)?;
        for (en, (row, x)) in entries.iter().zip(&places) {
            let y = (TITLE_H + row * LEGEND_ROW_H + LEGEND_ROW_H / 2) as i32;
            legend_swatch(&root, en, *x as i32, y)?;
            let style = (FONT, 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center));
            root.draw_text(&en.label, &style, (*x as i32 + 34, y)).map_err(e)?;
        }
        let (_, body) = root.split_vertically(head);
        let cells = body.split_evenly((rows as usize, columns));
        for (panel, area) in fig.panels.iter().zip(cells.iter()) {
            draw_panel(area, panel, panel_w)?;
        }
        root.present().map_err(e)?;
    }
    Ok(out)
}

fn legend_swatch(root: &Area<'_>, en: &LegendEntry, x: i32, y: i32) -> Result<(), Err> {
    let c = color(&en.color);
    match en.mark {
        Mark::Bar => root
            .draw(&Rectangle::new([(x + 4, y - 6), (x + 26, y + 6)], c.filled()))
            .map_err(e),
        Mark::Points { shape } => marker(root, shape, (x + 15, y), c),
        Mark::Line { width, dash, marker: m } => {
            let style = c.stroke_width(width.round().max(1.0) as u32);
            let pts = vec![(x, y), (x + 30, y)];
            match dash {
                Dash::Solid => root.draw(&PathElement::new(pts, style)).map_err(e)?,
                Dash::Dashed => root.draw(&DashedPathElement::new(pts, 6, 4, style)).map_err(e)?,
                Dash::Dotted => root.draw(&DashedPathElement::new(pts, 2, 3, style)).map_err(e)?,
            }
            match m {
                Some(shape) => marker(root, shape, (x + 15, y), c),
                None => Ok(()),
            }
        }
    }
}

fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    shape: Shape,
    at: (i32, i32),
    c: RGBColor,
) -> Result<(), Err> {
    match shape {
        Shape::Circle => area.draw(&Circle::new(at, 4, c.filled())).map_err(e),
        Shape::Triangle => area.draw(&TriangleMarker::new(at, 5, c.filled())).map_err(e),
        Shape::Square => area
            .draw(&Rectangle::new(
                [(at.0 - 4, at.1 - 4), (at.0 + 4, at.1 + 4)],
                c.filled(),
            ))
            .map_err(e),
        Shape::Cross => area.draw(&Cross::new(at, 4, c.stroke_width(2))).map_err(e),
    }
}

/// Every value a panel puts on an axis, to fit the axis to.
fn extent(panel: &Panel, y: bool) -> Vec<f64> {
    let mut v = Vec::new();
    for s in &panel.series {
        let i = usize::from(y);
        v.extend(s.points.iter().map(|p| p[i]));
        if y {
            v.extend(s.band.iter().flat_map(|b| [b[1], b[2]]));
            v.extend(s.errors.iter().flat_map(|b| [b[1], b[2]]));
        } else {
            v.extend(s.band.iter().map(|b| b[0]));
        }
    }
    if !y {
        v.extend(panel.spans.iter().flat_map(|s| [s.from, s.to]));
        v.extend(panel.vlines.iter().map(|l| l.x));
        v.extend(panel.heatmap.iter().flat_map(|h| h.cells()).flat_map(|c| [c.0, c.1]));
    } else {
        v.extend(panel.heatmap.iter().flat_map(|h| h.cells()).flat_map(|c| [c.2, c.3]));
    }
    v
}

/// The x position of a category panel's slot.
fn slot_x(x: f64, slot: usize, slots: usize) -> (f64, f64) {
    let w = 0.8 / slots.max(1) as f64;
    let x0 = x - 0.4 + slot as f64 * w;
    (x0, x0 + w)
}

fn draw_panel(area: &Area<'_>, panel: &Panel, width: u32) -> Result<(), Err> {
    let category = panel.x.scale == Scale::Category;
    let xs = extent(panel, false);
    // Time from a start: show the start, unless the data sit far from it.
    let (xlo, xhi) = xs
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
    let x_zero = panel.x.unit == Unit::Seconds && xlo >= 0.0 && xlo <= 0.25 * xhi;
    let xmap = AxisMap::fit(&panel.x, &xs, &panel.categories, x_zero);
    let ymap = AxisMap::fit(&panel.y, &extent(panel, true), &[], true);
    let long_labels = category && panel.categories.iter().map(|c| text_width(c, 12)).sum::<u32>() > width - 120;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 15))
        .margin(8)
        .margin_right(16)
        .x_label_area_size(if long_labels { 70 } else { 42 })
        .y_label_area_size(74)
        .build_cartesian_2d(xmap.clone(), ymap.clone())
        .map_err(e)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(panel.x.label.as_str())
        .y_desc(panel.y.label.as_str())
        .x_labels(if category { panel.categories.len().max(1) } else { 8 })
        .y_labels(8)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 13))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240));
    if category {
        mesh.disable_x_mesh();
    }
    if long_labels {
        mesh.x_label_style((FONT, 11).into_font().transform(FontTransform::Rotate90));
    }
    mesh.draw().map_err(e)?;
    let (ylo, yhi) = (ymap.low(), ymap.high());
    for s in &panel.spans {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(s.from, ylo), (s.to, yhi)],
                RGBColor(120, 120, 120).mix(0.15).filled(),
            )))
            .map_err(e)?;
        let style = (FONT, 11).into_font().color(&RGBColor(90, 90, 90));
        chart
            .draw_series(std::iter::once(Text::new(s.label.clone(), (s.from, yhi), style)))
            .map_err(e)?;
    }
    if let Some(h) = &panel.heatmap {
        chart
            .draw_series(h.cells().map(|c| {
                let fill = color(&heat_color(c.4, h.max)).filled();
                Rectangle::new([(c.0, ymap.clamp(c.2)), (c.1, ymap.clamp(c.3))], fill)
            }))
            .map_err(e)?;
    }
    for s in &panel.series {
        if !s.band.is_empty() {
            band(&mut chart, s, &ymap)?;
        }
    }
    for s in &panel.series {
        series(&mut chart, s, panel.slots, &ymap)?;
    }
    for (i, l) in panel.vlines.iter().enumerate() {
        let style = RGBColor(90, 90, 90).stroke_width(1);
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(l.x, ylo), (l.x, yhi)],
                4,
                4,
                style,
            )))
            .map_err(e)?;
        if !l.label.is_empty() {
            // Stagger labels of close lines a little.
            let y = match panel.y.scale {
                Scale::Log => yhi / 1.3f64.powi((i % 3) as i32),
                _ => yhi - (yhi - ylo) * 0.05 * (i % 3) as f64,
            };
            let st = (FONT, 11).into_font().color(&RGBColor(60, 60, 60));
            chart
                .draw_series(std::iter::once(Text::new(format!(" {}", l.label), (l.x, y), st)))
                .map_err(e)?;
        }
    }
    Ok(())
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<AxisMap, AxisMap>>;

/// Splits a series' points into runs of finite values (a NaN breaks the line).
fn runs(points: &[[f64; 2]], y: &AxisMap) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    for p in points {
        let ok = p[0].is_finite() && p[1].is_finite() && (y.scale != Scale::Log || p[1] > 0.0);
        if ok {
            out.last_mut().expect("non-empty").push((p[0], y.clamp(p[1])));
        } else if !out.last().expect("non-empty").is_empty() {
            out.push(Vec::new());
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

fn band(chart: &mut Chart<'_, '_>, s: &Series, y: &AxisMap) -> Result<(), Err> {
    let ok: Vec<&[f64; 3]> = s.band.iter().filter(|b| b.iter().all(|v| v.is_finite())).collect();
    if ok.len() < 2 {
        return Ok(());
    }
    let mut poly: Vec<(f64, f64)> = ok.iter().map(|b| (b[0], y.clamp(b[2]))).collect();
    poly.extend(ok.iter().rev().map(|b| (b[0], y.clamp(b[1]))));
    chart
        .draw_series(std::iter::once(Polygon::new(poly, color(&s.color).mix(0.18).filled())))
        .map_err(e)?;
    Ok(())
}

fn series(chart: &mut Chart<'_, '_>, s: &Series, slots: usize, y: &AxisMap) -> Result<(), Err> {
    let c = color(&s.color);
    let ylo = y.low();
    match s.mark {
        Mark::Bar => {
            for p in s.points.iter().filter(|p| p[1].is_finite()) {
                let (x0, x1) = slot_x(p[0], s.slot, slots);
                let top = y.clamp(p[1]);
                chart
                    .draw_series(std::iter::once(Rectangle::new([(x0, ylo), (x1, top)], c.filled())))
                    .map_err(e)?;
            }
        }
        Mark::Points { shape } => {
            for p in s.points.iter().filter(|p| p[1].is_finite()) {
                if y.scale == Scale::Log && p[1] <= 0.0 {
                    continue;
                }
                let x = if slots > 1 || s.slot > 0 {
                    let (a, b) = slot_x(p[0], s.slot, slots);
                    (a + b) / 2.0
                } else {
                    p[0]
                };
                draw_marker(chart, shape, (x, y.clamp(p[1])), c)?;
            }
        }
        Mark::Line { width, dash, marker: m } => {
            let style = c.stroke_width(width.round().max(1.0) as u32);
            for run in runs(&s.points, y) {
                match dash {
                    Dash::Solid => chart.draw_series(std::iter::once(PathElement::new(run.clone(), style))),
                    Dash::Dashed => {
                        chart.draw_series(std::iter::once(DashedPathElement::new(run.clone(), 7, 5, style)))
                    }
                    Dash::Dotted => {
                        chart.draw_series(std::iter::once(DashedPathElement::new(run.clone(), 2, 4, style)))
                    }
                }
                .map_err(e)?;
                if let Some(shape) = m {
                    for p in &run {
                        draw_marker(chart, shape, *p, c)?;
                    }
                }
            }
        }
    }
    for b in s.errors.iter().filter(|b| b.iter().all(|v| v.is_finite())) {
        let x = if matches!(s.mark, Mark::Bar) {
            let (a, z) = slot_x(b[0], s.slot, slots);
            (a + z) / 2.0
        } else {
            b[0]
        };
        let (lo, hi) = (y.clamp(b[1]), y.clamp(b[2]));
        let dark = BLACK.stroke_width(1);
        chart
            .draw_series(std::iter::once(PathElement::new(vec![(x, lo), (x, hi)], dark)))
            .map_err(e)?;
        let cap = 0.12 / slots.max(1) as f64;
        for v in [lo, hi] {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x - cap, v), (x + cap, v)],
                    dark,
                )))
                .map_err(e)?;
        }
    }
    Ok(())
}

fn draw_marker(chart: &mut Chart<'_, '_>, shape: Shape, at: (f64, f64), c: RGBColor) -> Result<(), Err> {
    match shape {
        Shape::Circle => chart.draw_series(std::iter::once(Circle::new(at, 4, c.filled()))),
        Shape::Triangle => chart.draw_series(std::iter::once(TriangleMarker::new(at, 5, c.filled()))),
        Shape::Square => chart.draw_series(std::iter::once(
            EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], c.filled()),
        )),
        Shape::Cross => chart.draw_series(std::iter::once(Cross::new(at, 4, c.stroke_width(2)))),
    }
    .map(|_| ())
    .map_err(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::figure::{Axis, Series};

    #[test]
    fn a_figure_draws_its_panels_and_legend() {
        let mut fig = Figure::new("f", "test", "a title");
        let mut p = Panel::new(
            "panel one",
            Axis::linear("time (s)", Unit::Seconds),
            Axis::log("latency", Unit::Nanos),
        );
        let mut s = Series::new("engine-a", "#d62728", Mark::line(Dash::Dashed));
        s.points = vec![[0.0, 100.0], [1.0, f64::NAN], [2.0, 1e4], [3.0, 2e4]];
        p.series.push(s);
        fig.panels.push(p);
        let svg = svg(&fig).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        assert!(svg.contains("a title") && svg.contains("panel one") && svg.contains("engine-a"));
        assert!(svg.contains("10 us"), "log ticks carry units");
    }
}
