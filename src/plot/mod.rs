//! `kvmark plot`: figures and the interactive HTML report from result directories.
//!
//! [`data`] reads what a run wrote (tolerating a run that died), the [`families`]
//! turn it into [`figure::Figure`] descriptions, [`render`] draws those as SVG with
//! plotters and [`convert`] makes PNG or PDF of them, and [`html`] writes
//! `report.html`, which draws the same descriptions interactively. A manifest,
//! `figures.json`, lists every figure with its panels and series.

pub mod axis;
pub mod convert;
pub mod data;
pub mod families;
pub mod figure;
pub mod html;
pub mod palette;
pub mod render;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

pub use self::convert::Format;
use self::data::RunData;
use self::families::Ctx;
use self::figure::Figure;
use self::palette::Palette;

/// The manifest of the figures written.
pub const MANIFEST: &str = "figures.json";
/// The interactive report's file name.
pub const REPORT_HTML: &str = "report.html";
/// Where `--auto-plot` puts figures inside a report directory.
pub const AUTO_PLOT_DIR: &str = "figures";

/// What to plot and where.
#[derive(Debug, Clone)]
pub struct Request {
    /// Result directories (or parents of result directories).
    pub dirs: Vec<PathBuf>,
    /// Where figures go.
    pub out: PathBuf,
    /// Figure file format.
    pub format: Format,
    /// Write the figures (and their manifest).
    pub figures: bool,
    /// Where to write the HTML report, if anywhere.
    pub html: Option<PathBuf>,
    /// A palette file over the bundled colours.
    pub palette: Option<PathBuf>,
}

/// What was written, and what was wrong with the input.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Files written.
    pub written: Vec<PathBuf>,
    /// Missing or damaged inputs, each naming its file.
    pub notes: Vec<String>,
}

/// Why plotting stopped.
#[derive(Debug)]
pub enum PlotError {
    /// Bad flags or arguments (exit 2).
    Usage(String),
    /// Nothing could be plotted or written (exit 1).
    Failed(String),
}

/// Reads the directories and writes the figures, the manifest and the report.
pub fn run(req: &Request) -> Result<Outcome, PlotError> {
    let palette = Palette::with_file(req.palette.as_deref()).map_err(PlotError::Usage)?;
    let dirs = data::expand(&req.dirs).map_err(PlotError::Usage)?;
    let mut runs: Vec<RunData> = dirs.iter().map(|d| data::load(d)).collect();
    distinct_labels(&mut runs);
    let notes: Vec<String> = runs.iter().flat_map(|r| r.notes.iter().cloned()).collect();
    if runs
        .iter()
        .all(|r| r.points.is_empty() && r.tracks.is_empty() && r.hlogs.is_empty())
    {
        return Err(PlotError::Failed(format!(
            "nothing to plot: {}",
            if notes.is_empty() {
                "the directories hold no results".to_string()
            } else {
                notes.join("; ")
            }
        )));
    }
    let ctx = Ctx {
        runs: &runs,
        palette: &palette,
    };
    let figs = families::all(&ctx);
    let mut outcome = Outcome {
        notes,
        ..Outcome::default()
    };
    // The page is built while the figures render.
    std::thread::scope(|s| -> Result<(), PlotError> {
        let page = req.html.as_ref().map(|path| {
            let (runs, figs, palette) = (&runs, &figs, &palette);
            s.spawn(move || write_html(path, runs, figs, palette))
        });
        if req.figures {
            std::fs::create_dir_all(&req.out)
                .map_err(|e| PlotError::Failed(format!("cannot create {}: {e}", req.out.display())))?;
            outcome.written = write_figures(&figs, &req.out, req.format).map_err(PlotError::Failed)?;
            let manifest = req.out.join(MANIFEST);
            let doc = manifest_json(&figs, req.format, &runs, &outcome.notes);
            write(
                &manifest,
                serde_json::to_string_pretty(&doc).unwrap_or_default().as_bytes(),
            )
            .map_err(PlotError::Failed)?;
            outcome.written.push(manifest);
        }
        if let Some(page) = page {
            let path = page
                .join()
                .map_err(|_| PlotError::Failed("building report.html panicked".to_string()))?
                .map_err(PlotError::Failed)?;
            outcome.written.push(path);
        }
        Ok(())
    })?;
    Ok(outcome)
}

/// What a finished `--report-dir` run gets: `report.html` in the directory, and
/// with `--auto-plot` the figures in its `figures/`.
pub fn after_run(dir: &Path, auto_plot: bool) -> Result<Outcome, String> {
    run(&Request {
        dirs: vec![dir.to_path_buf()],
        out: dir.join(AUTO_PLOT_DIR),
        format: Format::Png,
        figures: auto_plot,
        html: Some(dir.join(REPORT_HTML)),
        palette: None,
    })
    .map_err(|(PlotError::Usage(m) | PlotError::Failed(m))| m)
}

/// Overlaid directories with the same name are labelled by parent/name.
fn distinct_labels(runs: &mut [RunData]) {
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    for r in runs.iter_mut() {
        if labels.iter().filter(|l| **l == r.label).count() > 1 {
            let parent = r
                .path
                .parent()
                .and_then(Path::file_name)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            r.label = format!("{parent}/{}", r.label);
        }
    }
}

fn write_html(path: &Path, runs: &[RunData], figs: &[Figure], palette: &Palette) -> Result<PathBuf, String> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    write(path, html::document(runs, figs, palette).as_bytes())?;
    Ok(path.to_path_buf())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Renders every figure, on as many threads as there are CPUs (at most 4).
fn write_figures(figs: &[Figure], out: &Path, format: Format) -> Result<Vec<PathBuf>, String> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<PathBuf, String>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(fig) = figs.get(i) else { break };
                    let path = out.join(format!("{}.{}", fig.name, format.ext()));
                    let r = render::svg(fig)
                        .and_then(|svg| convert::encode(&svg, format))
                        .map_err(|e| format!("{}: {e}", path.display()))
                        .and_then(|bytes| write(&path, &bytes))
                        .map(|()| path);
                    results.lock().unwrap_or_else(|p| p.into_inner()).push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// `figures.json`: every figure's file, family, title and panels (with the metric
/// each plots and its series; a heatmap's panel also its columns, cells and the
/// calls they hold), so scripts and tests can check what was drawn.
pub fn manifest_json(figs: &[Figure], format: Format, runs: &[RunData], notes: &[String]) -> Value {
    let figures: Vec<Value> = figs
        .iter()
        .map(|f| {
            let panels: Vec<Value> = f
                .panels
                .iter()
                .map(|p| {
                    let series: Vec<&str> = p
                        .series
                        .iter()
                        .filter(|s| !s.is_empty())
                        .map(|s| s.label.as_str())
                        .collect();
                    let mut panel = json!({ "title": p.title, "metric": p.metric, "series": series });
                    if let Some(h) = &p.heatmap {
                        panel["heatmap"] = json!({
                            "columns": h.x.len(),
                            "cells": h.cells().count(),
                            "calls": h.cells().map(|c| c.4).sum::<u64>(),
                        });
                    }
                    panel
                })
                .collect();
            json!({
                "file": format!("{}.{}", f.name, format.ext()),
                "family": f.family,
                "title": f.title,
                "panels": panels,
            })
        })
        .collect();
    json!({
        "kvmark": { "version": env!("CARGO_PKG_VERSION") },
        "format": format.ext(),
        "dirs": runs.iter().map(|r| json!({ "path": r.path.display().to_string(), "label": r.label })).collect::<Vec<_>>(),
        "figures": figures,
        "notes": notes,
    })
}
