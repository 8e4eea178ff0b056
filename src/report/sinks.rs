//! The table of report sinks. `--report` names, the `--report-dir` bundle, the
//! timeline warnings and opening a sink all read [`SINKS`], so adding a sink is one
//! row here plus the file that implements it.

use std::fmt;
use std::io::Write;
use std::path::Path;

use super::atomic::AtomicFile;
use super::console::Console;
use super::hdr::Hdr;
use super::json::Json;
use super::timeline::Timeline;
use super::tsv::Tsv;
use super::verify::VerifyTsv;
use super::ycsb::Ycsb;
use super::{Sink, bundle};

/// What a sink takes from the sampler (`--timeline S`). The sink's own
/// [`Sink::wants_timeline`] and [`Sink::wants_intervals`] say the same (a test holds
/// them together); this column lets the command line be judged before anything opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SamplerUse {
    /// Nothing: it writes finished points only.
    None,
    /// The timeline's metrics: without `--timeline` it writes no rows.
    Timeline,
    /// Interval histograms: the timeline's intervals with `--timeline`, otherwise one
    /// interval per timed step.
    Intervals,
}

/// Opens a sink on a path (a file, or for some sinks a directory), or on stdout when
/// the path is None. Errors name the path.
pub type Opener = fn(Option<&Path>) -> Result<Box<dyn Sink>, String>;

/// One row of the sink table.
pub struct SinkKind {
    /// The name `--report` and the config's `report` use.
    pub name: &'static str,
    /// Its file (or directory) in a `--report-dir` bundle.
    pub bundle: &'static str,
    /// Also written to stdout in a bundle run, so the person who started it sees it.
    pub bundle_stdout: bool,
    /// What it needs from the sampler.
    pub sampler: SamplerUse,
    /// How to open it.
    pub open: Opener,
}

/// Every sink, in the order `--report`'s help and a bundle list them. The first,
/// console, is `--report`'s default.
pub static SINKS: [SinkKind; 7] = [
    SinkKind {
        name: "console",
        bundle: bundle::REPORT_TXT,
        bundle_stdout: true,
        sampler: SamplerUse::None,
        open: |path| Ok(Box::new(Console::new(writer(path)?))),
    },
    SinkKind {
        name: "tsv",
        bundle: bundle::POINTS_TSV,
        bundle_stdout: false,
        sampler: SamplerUse::None,
        open: |path| Ok(Box::new(Tsv::new(writer(path)?))),
    },
    SinkKind {
        name: "timeline",
        bundle: bundle::TIMELINE_TSV,
        bundle_stdout: false,
        sampler: SamplerUse::Timeline,
        open: |path| Ok(Box::new(Timeline::new(writer(path)?))),
    },
    SinkKind {
        name: "json",
        bundle: bundle::RESULTS_JSON,
        bundle_stdout: false,
        sampler: SamplerUse::None,
        open: |path| {
            Ok(Box::new(match path {
                Some(p) => Json::to_file(atomic_file(p)?),
                None => Json::new(writer(None)?),
            }))
        },
    },
    SinkKind {
        name: "hdr",
        bundle: bundle::HDR_DIR,
        bundle_stdout: false,
        sampler: SamplerUse::Intervals,
        open: |path| {
            Ok(match path {
                Some(dir) => Box::new(
                    Hdr::to_dir(dir)
                        .map_err(|e| format!("cannot create histogram log directory {}: {e}", dir.display()))?,
                ),
                None => Box::new(Hdr::to_stream(writer(None)?)),
            })
        },
    },
    SinkKind {
        name: "verify",
        bundle: bundle::VERIFY_TSV,
        bundle_stdout: false,
        sampler: SamplerUse::None,
        open: |path| Ok(Box::new(VerifyTsv::new(writer(path)?))),
    },
    SinkKind {
        name: "ycsb",
        bundle: bundle::YCSB_TXT,
        bundle_stdout: false,
        sampler: SamplerUse::None,
        open: |path| Ok(Box::new(Ycsb::new(writer(path)?))),
    },
];

impl SinkKind {
    /// The row called `name`.
    pub fn named(name: &str) -> Option<&'static SinkKind> {
        SINKS.iter().find(|s| s.name == name)
    }

    /// Every name, comma-separated, for messages.
    pub fn names() -> String {
        SINKS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
    }
}

// A row is identified by its name (an opener is a function pointer, which has no
// meaningful equality).
impl PartialEq for SinkKind {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for SinkKind {}

impl fmt::Debug for SinkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A report file at `path` (whole at every flush, see [`AtomicFile`]), or stdout.
pub fn writer(path: Option<&Path>) -> Result<Box<dyn Write + Send>, String> {
    match path {
        None => Ok(Box::new(std::io::stdout())),
        Some(p) => Ok(Box::new(atomic_file(p)?)),
    }
}

fn atomic_file(p: &Path) -> Result<AtomicFile, String> {
    AtomicFile::create(p).map_err(|e| format!("cannot create report file {}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bundle_files_are_unique() {
        for (i, a) in SINKS.iter().enumerate() {
            for b in &SINKS[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!(a.bundle, b.bundle);
            }
            assert_ne!(a.bundle, bundle::REPLAY_CNF, "{}", a.name);
        }
        assert_eq!(SinkKind::names(), "console, tsv, timeline, json, hdr, verify, ycsb");
    }

    #[test]
    fn the_sampler_column_matches_each_sink() {
        let dir = tempfile::tempdir().unwrap();
        for kind in &SINKS {
            let sink = (kind.open)(Some(&dir.path().join(kind.bundle))).unwrap();
            assert_eq!(
                sink.wants_timeline(),
                kind.sampler == SamplerUse::Timeline,
                "{}",
                kind.name
            );
            assert_eq!(
                sink.wants_intervals(),
                kind.sampler == SamplerUse::Intervals,
                "{}",
                kind.name
            );
        }
    }
}
