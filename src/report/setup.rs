//! From `--report LIST` and `--report-dir DIR` to a [`Reporter`] with open sinks.

use std::path::PathBuf;

// Re-exported so that callers which parse `--report` need one import.
pub use super::sinks::{SINKS, SamplerUse, SinkKind};
use super::{Reporter, bundle};

/// One requested sink: a kind and a destination (None: stdout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkSpec {
    /// Which sink (a row of [`SINKS`]).
    pub kind: &'static SinkKind,
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
        let kind = SinkKind::named(name).ok_or_else(|| {
            format!(
                "unknown report sink '{name}' (known: {}; each as NAME or NAME:PATH)",
                SinkKind::names()
            )
        })?;
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
            None => self.kind.name.to_string(),
            Some(p) => format!(
                "{}:{}",
                self.kind.name,
                std::path::absolute(p).unwrap_or_else(|_| p.clone()).display()
            ),
        }
    }
}

/// Parses a `--report` list.
pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<SinkSpec>, String> {
    if items.is_empty() {
        return Err(format!("give at least one sink ({})", SinkKind::names()));
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
                kind: &SINKS[0], // console
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

/// Opens every sink (files are created now, so a bad path fails before anything
/// runs). With a report directory, creates it and writes `replay` into it first.
pub fn open(outputs: &Outputs, replay: &str) -> Result<Opened, String> {
    let mut reporter = Reporter::new();
    let Some(parent) = &outputs.report_dir else {
        for spec in &outputs.sinks {
            reporter.add(spec.to_item(), (spec.kind.open)(spec.path.as_deref())?);
        }
        return Ok(Opened { reporter, dir: None });
    };
    let dir = bundle::create(parent).map_err(|e| format!("--report-dir: {e}"))?;
    open_bundle(dir, replay)
}

/// Opens every sink's bundle file in `dir` (which exists), after writing `replay`
/// there; the console also goes to stdout. `kvmark merge` writes its report
/// directory this way too.
pub fn open_bundle(dir: PathBuf, replay: &str) -> Result<Opened, String> {
    let mut reporter = Reporter::new();
    let replay_path = dir.join(bundle::REPLAY_CNF);
    std::fs::write(&replay_path, replay).map_err(|e| format!("cannot write {}: {e}", replay_path.display()))?;
    // Each sink writes its bundle file; those that people read also go to stdout.
    let stdout = SINKS
        .iter()
        .filter(|k| k.bundle_stdout)
        .map(|kind| SinkSpec { kind, path: None });
    let files = SINKS.iter().map(|kind| SinkSpec {
        kind,
        path: Some(dir.join(kind.bundle)),
    });
    for spec in stdout.chain(files) {
        reporter.add(spec.to_item(), (spec.kind.open)(spec.path.as_deref())?);
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
                kind: SinkKind::named("tsv").unwrap(),
                path: Some(PathBuf::from("out/points.tsv"))
            })
        );
        assert_eq!(SinkSpec::parse("json:-").unwrap().path, None);
        assert_eq!(SinkSpec::parse(" console ").unwrap().kind.name, "console");
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

    #[test]
    fn a_report_dir_holds_every_sinks_bundle_file_and_the_replay() {
        let parent = tempfile::tempdir().unwrap();
        let outputs = Outputs {
            report_dir: Some(parent.path().to_path_buf()),
            ..Outputs::default()
        };
        let opened = open(&outputs, "[bench]\n").unwrap();
        let dir = opened.dir.unwrap();
        for kind in &SINKS {
            // Directories are made now; files appear with their first content
            // (report::atomic), so a run that dies early leaves no empty report.
            let path = dir.join(kind.bundle);
            if kind.name == "hdr" {
                assert!(path.is_dir(), "{} has no {}", kind.name, kind.bundle);
            } else {
                assert!(
                    !path.exists(),
                    "{}: {} exists before it has content",
                    kind.name,
                    kind.bundle
                );
            }
        }
        drop(opened.reporter);
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "the replay and hdr/, no temporary files: {left:?}");
        assert_eq!(
            std::fs::read_to_string(dir.join(bundle::REPLAY_CNF)).unwrap(),
            "[bench]\n"
        );
    }
}
