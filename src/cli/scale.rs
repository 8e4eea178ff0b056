//! The scale-out flags (`--segment`, `--segment-count`, `--start-at`), checked
//! together with what they cannot run with.

use std::time::SystemTime;

use super::RunArgs;
use super::plan::UsageError;
use crate::engine::EngineInfo;
use crate::result::slo::Slo;
use crate::run::segment::{self, Job, Segment};
use crate::workload::epochs::EpochFlags;

impl RunArgs {
    /// The segment this process runs, the common start if given, and the launcher's
    /// job identity where a server engine's segments meet without one. Refuses what a
    /// segment cannot share out (epochs, whose dumps are one process's; an SLO search,
    /// whose probes each process would choose alone) and a server engine's segments
    /// with neither a common start nor a job identity, one of which names the
    /// namespace they share.
    pub(super) fn scale_out(
        &self,
        engines: &[&'static EngineInfo],
        epochs: &EpochFlags,
        slo: &Option<Slo>,
    ) -> Result<(Segment, Option<SystemTime>, Option<Job>), UsageError> {
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
            return Ok((seg, start_at, None));
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
        let server = engines.iter().find(|e| e.storage.server().is_some());
        let job = match (start_at, server) {
            (None, Some(e)) => match Job::from_env(&env) {
                Some(job) => Some(job),
                None => {
                    return Err(self.together(
                        &["segment", "backend"],
                        format!(
                            "--segment {} on server engine {}: the segments need a common start, which also names                              the namespace they share: give --start-at TIME, or start them under a launcher that                              names the job (mpirun, srun, a Kubernetes Indexed Job) or with {}=NAME set alike in                              every segment, and they meet at the server",
                            seg.label(),
                            e.name,
                            segment::JOB_ENV
                        ),
                    ));
                }
            },
            _ => None,
        };
        Ok((seg, start_at, job))
    }
}
