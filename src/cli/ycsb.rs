//! YCSB's command line in kvmark's: `-P FILE`, `-p NAME=VALUE`, `-load`, `-t`, and
//! the `threadcount` property as the thread count when `--threads` is not given.

use std::path::Path;

use super::RunArgs;
use super::plan::{UsageError, usage};
use crate::workload::ycsb::{self, props};

impl RunArgs {
    /// The YCSB options the flags give.
    pub(super) fn ycsb_options(&self) -> Result<ycsb::Options, UsageError> {
        let overrides = self
            .property
            .iter()
            .map(|a| props::split_override(a).map_err(usage))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ycsb::Options {
            overrides,
            load: self.ycsb_load,
            run: self.ycsb_run,
        })
    }

    /// Whether `path` runs as a YCSB workload file: given with `-P`, or a WORKLOAD
    /// that is not a script, spec or log and reads as YCSB properties.
    pub(super) fn is_ycsb_file(&self, path: &Path) -> bool {
        self.ycsb_file.iter().any(|f| f == path)
            || (!matches!(path.extension().and_then(|e| e.to_str()), Some("lua" | "json" | "ops"))
                && props::looks_like(path))
    }

    /// The first YCSB file's `threadcount` (with the `-p` overrides), if any.
    pub(super) fn ycsb_threadcount(&self, opts: &ycsb::Options) -> Option<usize> {
        self.workloads
            .iter()
            .chain(&self.ycsb_file)
            .filter(|p| self.is_ycsb_file(p))
            .find_map(|p| {
                let p = props::read(p, &opts.overrides).ok()?;
                p.count("threadcount", 0).ok().filter(|&n| n > 0).map(|n| n as usize)
            })
    }
}
