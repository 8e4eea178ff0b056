//! Command-line flags, keybench-compatible names, and their validation into a [`Plan`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};

use crate::engine::{self, EngineInfo, EngineOptions};
use crate::run::Plan;
use crate::workload::{self, Budget, Params, Workload, WorkloadError};

/// Default unit budget across all threads.
pub const DEFAULT_OPS: u64 = 200_000;
/// Default ctx.users.
pub const DEFAULT_USERS: u64 = 100_000;
/// Default ctx.items.
pub const DEFAULT_ITEMS: u64 = 100_000;
/// Default base seed.
pub const DEFAULT_SEED: u64 = 1;

/// kvmark: a benchmark harness for sorted key-value stores.
#[derive(Debug, Parser)]
#[command(
    name = "kvmark",
    version,
    about = "A benchmark harness for sorted key-value stores",
    long_about = "A benchmark harness for sorted key-value stores.\n\n\
        A workload (a Lua script) runs unchanged against every engine. kvmark sweeps the grid \
        engines x threads x batch sizes, repeats each cell, times every operation into whole \
        latency histograms, and reports throughput (wu/s: workload units, one per run() call; \
        ops/s: primitive key operations) and latency percentiles per operation kind.",
    after_help = "Examples:\n  \
        kvmark workloads/mixed.lua\n  \
        kvmark --secs 10 --threads 1,2 workloads/mixed.lua workloads/scan.lua\n  \
        kvmark --batch 1,8,64 --repeat 3 workloads/batch.lua\n  \
        kvmark engines",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// A subcommand instead of a benchmark run.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Benchmark run options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every compiled-in engine: persistence, library version, how append and
    /// delete work, and every knob with its default.
    Engines,
}

/// Flags of a benchmark run. Every value is optional here so that a config file can
/// supply defaults that the command line then overrides.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Workload files (.lua), run in sequence, each over the whole grid with its own
    /// fresh stores.
    #[arg(value_name = "WORKLOAD", required = true)]
    pub workloads: Vec<PathBuf>,

    /// Total units (run() calls) across all threads, split evenly; then stop.
    /// [default: 200000]
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,

    /// Run each point for S seconds instead of a unit count (clears --ops). Fractions
    /// are allowed.
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub secs: Option<f64>,

    /// Worker thread counts to sweep, comma-separated (e.g. 1,2,4). [default: 1]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub threads: Option<Vec<usize>>,

    /// Batch sizes to sweep for workloads that return `batched = true` (others run once
    /// at batch 1); overrides a workload's own sweep of `batch`. [default: 1]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub batch: Option<Vec<usize>>,

    /// Engines to compare, comma-separated; `kvmark engines` lists them.
    /// [default: skiplist]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub backend: Option<Vec<String>>,

    /// Measure each grid cell N times: throughput is the median (with its min-max),
    /// latency percentiles come from the exact merge of all repeats. [default: 1]
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,

    /// ctx.users: the user population a workload may address. [default: 100000]
    #[arg(long, value_name = "N")]
    pub users: Option<u64>,

    /// ctx.items: the catalog or keyspace size a workload may address. [default: 100000]
    #[arg(long, value_name = "N")]
    pub items: Option<u64>,

    /// Base RNG seed; thread t seeds its Lua state with seed + t. [default: 1]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Threads running the workload's load() (the seed phase). [default: the point's
    /// thread count; with --seed-once, the largest in --threads]
    #[arg(long, value_name = "N")]
    pub seed_threads: Option<usize>,

    /// Seed one store per engine (and per sweep value when the workload sets
    /// seed_per_value) and run every thread count, batch size and repeat against it,
    /// instead of a fresh store per measurement.
    #[arg(long, overrides_with = "no_seed_once")]
    pub seed_once: bool,

    /// Switch --seed-once off (overrides a config file).
    #[arg(long, overrides_with = "seed_once")]
    pub no_seed_once: bool,

    /// Directory on the disk to benchmark; persistent engines create a fresh store
    /// directory in it per measurement. Required by persistent engines (there is no
    /// default: /tmp is often tmpfs, which would benchmark RAM).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Keep store directories under --data-dir instead of removing them after use.
    #[arg(long, overrides_with = "no_keep_data")]
    pub keep_data: bool,

    /// Switch --keep-data off (overrides a config file).
    #[arg(long, overrides_with = "keep_data")]
    pub no_keep_data: bool,

    /// An engine option, ENGINE.KEY=VALUE (repeatable); `kvmark engines` lists the keys.
    #[arg(long, value_name = "ENGINE.KEY=VALUE")]
    pub engine_opt: Vec<String>,
}

/// A problem with the command line or the files it names: exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// Parses `ENGINE.KEY=VALUE` flags into per-engine option sets.
pub fn parse_engine_opts(flags: &[String]) -> Result<BTreeMap<String, EngineOptions>, UsageError> {
    let mut out: BTreeMap<String, EngineOptions> = BTreeMap::new();
    for flag in flags {
        let bad = || {
            usage(format!(
                "--engine-opt '{flag}': expected ENGINE.KEY=VALUE, for example rocksdb.write_buffer_size=64M"
            ))
        };
        let (lhs, value) = flag.split_once('=').ok_or_else(bad)?;
        let (engine_name, key) = lhs.split_once('.').ok_or_else(bad)?;
        if engine_name.is_empty() || key.is_empty() {
            return Err(bad());
        }
        if engine::find(engine_name).is_none() {
            return Err(usage(format!(
                "--engine-opt '{flag}': unknown engine '{engine_name}' (compiled in: {})",
                engine_names()
            )));
        }
        out.entry(engine_name.to_string()).or_default().set(key, value);
    }
    Ok(out)
}

fn engine_names() -> String {
    engine::registry().iter().map(|e| e.name).collect::<Vec<_>>().join(", ")
}

fn positive_list(name: &str, list: Option<Vec<usize>>, default: Vec<usize>) -> Result<Vec<usize>, UsageError> {
    let list = list.unwrap_or(default);
    if list.is_empty() || list.contains(&0) {
        return Err(usage(format!(
            "--{name} needs positive integers, for example --{name} 1,2,4"
        )));
    }
    Ok(list)
}

/// Resolves the engines named by `--backend` (default: the reference engine).
pub fn resolve_engines(names: Option<&[String]>) -> Result<Vec<&'static EngineInfo>, UsageError> {
    let default = [engine::DEFAULT_ENGINE.to_string()];
    let names = names.unwrap_or(&default);
    if names.is_empty() {
        return Err(usage("--backend needs at least one engine name"));
    }
    names
        .iter()
        .map(|n| {
            engine::find(n.trim()).ok_or_else(|| {
                usage(format!(
                    "--backend: unknown engine '{n}' (compiled in: {}; see `kvmark engines`)",
                    engine_names()
                ))
            })
        })
        .collect()
}

impl RunArgs {
    /// Validates the flags and opens the workload files.
    pub fn into_plan(self) -> Result<Plan, UsageError> {
        let budget = match (self.secs, self.ops) {
            (Some(s), _) if !(s.is_finite() && s > 0.0) => {
                return Err(usage(format!("--secs {s}: give a positive number of seconds")));
            }
            (Some(s), _) => Budget::Secs(s),
            (None, Some(0)) => return Err(usage("--ops 0: give a positive number of units")),
            (None, ops) => Budget::Ops(ops.unwrap_or(DEFAULT_OPS)),
        };
        let threads = positive_list("threads", self.threads, vec![1])?;
        let batch = match self.batch {
            Some(b) => Some(positive_list("batch", Some(b), vec![1])?),
            None => None,
        };
        let repeat = self.repeat.unwrap_or(1);
        if repeat == 0 {
            return Err(usage("--repeat 0: give at least 1"));
        }
        if self.seed_threads == Some(0) {
            return Err(usage("--seed-threads 0: give at least 1"));
        }
        let engines = resolve_engines(self.backend.as_deref())?;
        if let Some(dir) = &self.data_dir
            && !dir.is_dir()
        {
            return Err(usage(format!(
                "--data-dir {}: not an existing directory (create it on the disk you mean to benchmark)",
                dir.display()
            )));
        }
        if self.data_dir.is_none()
            && let Some(e) = engines.iter().find(|e| e.persistent)
        {
            return Err(usage(format!(
                "engine {} stores data on disk: give --data-dir DIR on the disk you mean to benchmark \
                 (there is no default, since /tmp is often tmpfs and would benchmark RAM)",
                e.name
            )));
        }
        let engine_options = parse_engine_opts(&self.engine_opt)?;
        engine::validate_options(&engine_options).map_err(|e| usage(e.message))?;
        let workloads = open_workloads(&self.workloads)?;
        let params = Params {
            users: self.users.unwrap_or(DEFAULT_USERS),
            items: self.items.unwrap_or(DEFAULT_ITEMS),
            ops: match budget {
                Budget::Ops(n) => n,
                Budget::Secs(_) => 0,
            },
            secs: match budget {
                Budget::Secs(s) => s,
                Budget::Ops(_) => 0.0,
            },
            seed: self.seed.unwrap_or(DEFAULT_SEED),
        };
        Ok(Plan {
            workloads,
            engines,
            engine_options,
            threads,
            batch,
            budget,
            repeat,
            params,
            seed_threads: self.seed_threads,
            seed_once: self.seed_once && !self.no_seed_once,
            data_dir: self.data_dir,
            keep_data: self.keep_data && !self.no_keep_data,
        })
    }
}

/// Opens every workload file; any problem is a usage error naming the file.
pub fn open_workloads(paths: &[PathBuf]) -> Result<Vec<Arc<dyn Workload>>, UsageError> {
    if paths.is_empty() {
        return Err(usage(
            "no workload file given (for example: kvmark workloads/mixed.lua)",
        ));
    }
    paths
        .iter()
        .map(|p| {
            workload::open(p).map_err(|e| match e {
                WorkloadError::Invalid(m) | WorkloadError::Runtime(m) => usage(m),
                WorkloadError::Interrupted => usage("interrupted"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_opts_parse_and_reject() {
        let opts = parse_engine_opts(&["skiplist.a=1".into(), "skiplist.b=x=y".into()]).unwrap();
        assert_eq!(opts["skiplist"].get("b"), Some("x=y"));
        assert!(parse_engine_opts(&["nodot=1".into()]).is_err());
        assert!(parse_engine_opts(&["skiplist.k".into()]).is_err());
        let err = parse_engine_opts(&["nosuch.k=1".into()]).unwrap_err();
        assert!(err.0.contains("unknown engine 'nosuch'"), "{err}");
    }

    #[test]
    fn lists_must_be_positive() {
        assert!(positive_list("threads", Some(vec![1, 0]), vec![1]).is_err());
        assert_eq!(positive_list("threads", None, vec![1]).unwrap(), vec![1]);
    }
}
