//! The scale-out flags (`--segment`, `--segment-count`, `--start-at`), checked
//! together with what they cannot run with.

use std::time::SystemTime;

use super::RunArgs;
use super::plan::UsageError;
use crate::engine::EngineInfo;
use crate::result::slo::Slo;
use crate::run::segment::{self, Segment};
use crate::workload::epochs::EpochFlags;

impl RunArgs {
    /// The segment this process runs and the common start, if any. Refuses what a
    /// segment cannot share out (epochs, whose dumps are one process's; an SLO search,
    /// whose probes each process would choose alone) and a server engine's segments
    /// without a common start, which also names the namespace they share.
    pub(super) fn scale_out(
        &self,
        engines: &[&'static EngineInfo],
        epochs: &EpochFlags,
        slo: &Option<Slo>,
    ) -> Result<(Segment, Option<SystemTime>), UsageError> {
        let env = |name: &str| std::env::var(name).ok();
        let seg = match &self.segment {
            Some(text) => {
                Segment::parse(text, self.segment_count, &env).map_err(|e| self.refused_flag("segment", e))?
            }
            None if self.segment_count.is_some() => {
                return Err(self.together(&["segment_count"], "--segment-count needs --segment auto"));
            }
            None => Segment::WHOLE,
        };
        let start_at = match &self.start_at {
            Some(text) => {
                let (at, passed) =
                    segment::parse_start_at(text, SystemTime::now()).map_err(|e| self.refused_flag("start_at", e))?;
                if passed {
                    eprintln!("kvmark: warning: --start-at {text} has passed; the timed phase starts at once");
                }
                Some(at)
            }
            None => None,
        };
        if !seg.is_part() {
            return Ok((seg, start_at));
        }
        if epochs.count.is_some() {
            return Err(self.together(
                &["segment", "epochs"],
                "--segment cannot run epochs (each epoch dumps and reloads one process's store); run them in one process",
            ));
        }
        if slo.is_some() {
            return Err(self.together(
                &["segment", "slo"],
                "--segment cannot search for an SLO rate (each segment would choose its own); give the rate with --rate",
            ));
        }
        if start_at.is_none()
            && let Some(e) = engines.iter().find(|e| e.storage.server().is_some())
        {
            return Err(self.together(
                &["segment", "backend"],
                format!(
                    "--segment {} on server engine {}: give --start-at TIME too (the segments' common start, which \
                     also names the namespace they share on the server)",
                    seg.label(),
                    e.name
                ),
            ));
        }
        Ok((seg, start_at))
    }
}
