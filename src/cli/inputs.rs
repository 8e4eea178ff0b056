//! Where a run's data comes from beside its workload files: traces recorded elsewhere
//! (`--format`, `--trace-split`, `--speed`) and a store an earlier run kept
//! (`--use-existing`), checked as the plan is built.

use std::path::PathBuf;

use super::RunArgs;
use super::plan::UsageError;
use crate::engine::{EngineInfo, StorageKind, StorePlace};
use crate::workload::trace::{TraceFormat, TraceSplit};

impl RunArgs {
    /// `--format` and `--trace-split`, and `--speed`'s need of a format.
    pub(super) fn trace_options(&self) -> Result<(Option<TraceFormat>, TraceSplit), UsageError> {
        let format = match &self.format {
            Some(text) => Some(TraceFormat::parse(text).map_err(|m| self.refused("format", m.clone(), m))?),
            None => None,
        };
        if self.speed.is_some() && format.is_none() {
            return Err(self.refused_flag(
                "speed",
                "replays a trace on its own clock: give --format twitter or redis-monitor with it",
            ));
        }
        let split = match &self.trace_split {
            Some(_) if format.is_none() => {
                return Err(self.refused_flag(
                    "trace_split",
                    "deals a trace's requests to threads: give --format twitter or redis-monitor with it",
                ));
            }
            Some(text) => TraceSplit::parse(text).map_err(|m| self.refused("trace_split", m.clone(), m))?,
            None => TraceSplit::Line,
        };
        Ok((format, split))
    }

    /// `--use-existing`: the store to reopen, checked against the run's one engine.
    pub(super) fn use_existing(&self, engines: &[&'static EngineInfo]) -> Result<Option<StorePlace>, UsageError> {
        let Some(text) = &self.use_existing else {
            return Ok(None);
        };
        let [engine] = engines else {
            let names: Vec<&str> = engines.iter().map(|e| e.name).collect();
            return Err(self.together(
                &["use_existing", "backend"],
                format!(
                    "--use-existing opens one engine's store: give one --backend (this run compares {})",
                    names.join(", ")
                ),
            ));
        };
        let bad = |why: String| self.refused_value("use_existing", text, why);
        match engine.storage {
            StorageKind::Memory => Err(bad(format!(
                "engine {} keeps its store in memory, so no run leaves one to reopen; give a disk or server engine",
                engine.name
            ))),
            StorageKind::Disk => {
                let dir = PathBuf::from(text);
                crate::engine::storage::check_existing_dir(&dir, engine.name).map_err(bad)?;
                Ok(Some(StorePlace::Dir(dir)))
            }
            StorageKind::Server(_) => {
                crate::engine::storage::check_existing_namespace(text).map_err(bad)?;
                Ok(Some(StorePlace::Namespace(text.clone())))
            }
        }
    }
}
