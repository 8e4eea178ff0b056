//! From `--report LIST` and `--report-dir DIR` to a [`Reporter`] with open sinks.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::console::Console;
use super::hdr::Hdr;
use super::json::Json;
use super::timeline::Timeline;
use super::tsv::Tsv;
use super::{Reporter, Sink, bundle};

/// The kinds of sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkKind {
    /// The human report.
    Console,
    /// One row per operation kind per point.
    Tsv,
    /// One row per metric per live sample.
    Timeline,
    /// The whole result as one document.
    Json,
    /// HdrHistogram interval logs.
    Hdr,
}

/// Every sink name, as `--report` spells it.
pub const SINK_NAMES: [&str; 5] = ["console", "tsv", "timeline", "json", "hdr"];

impl SinkKind {
    /// The name `--report` uses.
    pub fn name(self) -> &'static str {
        match self {
            SinkKind::Console => "console",
            SinkKind::Tsv => "tsv",
            SinkKind::Timeline => "timeline",
            SinkKind::Json => "json",
            SinkKind::Hdr => "hdr",
        }
    }
}

/// One requested sink: a kind and a destination (None: stdout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkSpec {
    /// Which sink.
    pub kind: SinkKind,
    /// A file (for `hdr`, a directory), or None for stdout.
    pub path: Option<PathBuf>,
}

impl SinkSpec {
    /// Parses `name` or `name:path` (`-` is stdout).
    pub fn parse(item: &str) -> Result<SinkSpec, String> {
        let item = item.trim();
        let (name, path) = match item.split_once(':') {
            Some((n, p)) => (n.trim(), Some(p.trim())),
            None => (item, None),
        };
        let kind = match name {
            "console" => SinkKind::Console,
            "tsv" => SinkKind::Tsv,
            "timeline" => SinkKind::Timeline,
            "json" => SinkKind::Json,
            "hdr" => SinkKind::Hdr,
            other => {
                return Err(format!(
                    "unknown report sink '{other}' (known: {}; each as NAME or NAME:PATH)",
                    SINK_NAMES.join(", ")
                ));
            }
        };
        let path = match path {
            None | Some("-") => None,
            Some("") => return Err(format!("'{item}': give a path after the colon, or - for stdout")),
            Some(p) => Some(PathBuf::from(p)),
        };
        Ok(SinkSpec { kind, path })
    }

    /// The `--report` item, with an absolute path so a replay writes to the same place
    /// from any directory.
    pub fn to_item(&self) -> String {
        match &self.path {
            None => self.kind.name().to_string(),
            Some(p) => format!(
                "{}:{}",
                self.kind.name(),
                std::path::absolute(p).unwrap_or_else(|_| p.clone()).display()
            ),
        }
    }
}

/// Parses a `--report` list.
pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<SinkSpec>, String> {
    if items.is_empty() {
        return Err(format!("give at least one sink ({})", SINK_NAMES.join(", ")));
    }
    items.iter().map(|i| SinkSpec::parse(i.as_ref())).collect()
}

/// Where a run reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// The sinks of `--report` (console on stdout by default).
    pub sinks: Vec<SinkSpec>,
    /// `--report-dir`: bundle everything in a fresh directory under it (overrides
    /// `--report`, keeping the console on stdout).
    pub report_dir: Option<PathBuf>,
    /// `--auto-plot`: render the figures into the report directory at the end.
    pub auto_plot: bool,
}

impl Default for Outputs {
    fn default() -> Self {
        Outputs {
            sinks: vec![SinkSpec {
                kind: SinkKind::Console,
                path: None,
            }],
            report_dir: None,
            auto_plot: false,
        }
    }
}

/// Open sinks, and the bundle directory when one was made.
pub struct Opened {
    /// Every sink, ready for `begin`.
    pub reporter: Reporter,
    /// The fresh `--report-dir` directory.
    pub dir: Option<PathBuf>,
}

fn create(path: &Path) -> Result<Box<dyn Write + Send>, String> {
    File::create(path)
        .map(|f| Box::new(BufWriter::new(f)) as Box<dyn Write + Send>)
        .map_err(|e| format!("cannot create report file {}: {e}", path.display()))
}

fn open_sink(spec: &SinkSpec) -> Result<Box<dyn Sink>, String> {
    let out = || match &spec.path {
        None => Ok(Box::new(std::io::stdout()) as Box<dyn Write + Send>),
        Some(p) => create(p),
    };
    Ok(match spec.kind {
        SinkKind::Console => Box::new(Console::new(out()?)),
        SinkKind::Tsv => Box::new(Tsv::new(out()?)),
        SinkKind::Timeline => Box::new(Timeline::new(out()?)),
        SinkKind::Json => Box::new(Json::new(out()?)),
        SinkKind::Hdr => match &spec.path {
            Some(dir) => Box::new(
                Hdr::to_dir(dir)
                    .map_err(|e| format!("cannot create histogram log directory {}: {e}", dir.display()))?,
            ),
            None => Box::new(Hdr::to_stream(out()?)),
        },
    })
}

/// Opens every sink (files are created now, so a bad path fails before anything
/// runs). With a report directory, creates it and writes `replay` into it first.
pub fn open(outputs: &Outputs, replay: &str) -> Result<Opened, String> {
    let mut reporter = Reporter::new();
    let Some(parent) = &outputs.report_dir else {
        for spec in &outputs.sinks {
            reporter.add(spec.to_item(), open_sink(spec)?);
        }
        return Ok(Opened { reporter, dir: None });
    };
    let dir = bundle::create(parent).map_err(|e| format!("--report-dir: {e}"))?;
    let replay_path = dir.join(bundle::REPLAY_CNF);
    std::fs::write(&replay_path, replay).map_err(|e| format!("cannot write {}: {e}", replay_path.display()))?;
    let specs = [
        (SinkKind::Console, None),
        (SinkKind::Console, Some(bundle::REPORT_TXT)),
        (SinkKind::Tsv, Some(bundle::POINTS_TSV)),
        (SinkKind::Timeline, Some(bundle::TIMELINE_TSV)),
        (SinkKind::Json, Some(bundle::RESULTS_JSON)),
        (SinkKind::Hdr, Some(bundle::HDR_DIR)),
    ];
    for (kind, file) in specs {
        let spec = SinkSpec {
            kind,
            path: file.map(|f| dir.join(f)),
        };
        reporter.add(spec.to_item(), open_sink(&spec)?);
    }
    Ok(Opened {
        reporter,
        dir: Some(dir),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_items() {
        assert_eq!(
            SinkSpec::parse("tsv:out/points.tsv"),
            Ok(SinkSpec {
                kind: SinkKind::Tsv,
                path: Some(PathBuf::from("out/points.tsv"))
            })
        );
        assert_eq!(SinkSpec::parse("json:-").unwrap().path, None);
        assert_eq!(SinkSpec::parse(" console ").unwrap().kind, SinkKind::Console);
        assert!(
            SinkSpec::parse("csv")
                .unwrap_err()
                .contains("unknown report sink 'csv'")
        );
        assert!(SinkSpec::parse("tsv:").is_err());
        assert!(parse_list::<&str>(&[]).is_err());
        assert_eq!(SinkSpec::parse("hdr").unwrap().to_item(), "hdr");
        assert!(SinkSpec::parse("tsv:x.tsv").unwrap().to_item().starts_with("tsv:/"));
    }
}
