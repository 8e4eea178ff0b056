//! Command-line flags, keybench-compatible names, and their validation into a [`Plan`].

pub mod epochs;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::size::{looks_like_size, parse_size};
use crate::engine::{self, EngineInfo, EngineOptions};
use crate::kv::pace::{Arrival, Rate};
use crate::probe::ProbeSet;
use crate::report::setup::{self, Outputs};
use crate::result::slo::Slo;
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
/// Default seconds per SLO probe.
pub const DEFAULT_SLO_SECS: f64 = 2.0;

/// kvmark: a benchmark harness for sorted key-value stores.
#[derive(Debug, Parser)]
#[command(
    name = "kvmark",
    version,
    about = "A benchmark harness for sorted key-value stores",
    long_about = "A benchmark harness for sorted key-value stores.\n\n\
        A workload (a Lua script, a declarative JSON spec, or an operation log) runs unchanged \
        against every engine. kvmark sweeps the grid engines x threads x batch sizes x target \
        rates, repeats each cell, times every operation into whole latency histograms, and \
        reports throughput (wu/s: workload units, one per run() call or spec operation; ops/s: \
        primitive key operations) and latency percentiles per operation kind: service time in \
        closed loop, and response time too in open loop (--rate, --slo).",
    after_help = "Examples:\n  \
        kvmark workloads/mixed.lua\n  \
        kvmark --secs 10 --threads 1,2 workloads/mixed.lua workloads/scan.lua\n  \
        kvmark --batch 1,8,64 --repeat 3 workloads/batch.lua\n  \
        kvmark --threads 1,4 specs/ycsb-a.json\n  \
        kvmark gen specs/ycsb-a.json -o ycsb-a.ops && kvmark replay ycsb-a.ops\n  \
        kvmark --rate 1000,5000,20000 --secs 5 --warmup 1 workloads/mixed.lua\n  \
        kvmark --slo 'p99<2ms' --threads 1,2 workloads/mixed.lua\n  \
        kvmark --secs 10 --timeline 0.5 --report-dir results workloads/mixed.lua\n  \
        kvmark --scale 0.1 --ivs-mode all --backend lmdb --data-dir /var/tmp/kvb specs/ivs-a.json\n  \
        kvmark --config samples/skiplist-sweep.cnf --secs 2\n  \
        kvmark --secs 5 --timeline 0.2 --report-dir results --auto-plot workloads/mixed.lua\n  \
        kvmark plot results/20250101-120000 --out figs --html\n  \
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
    /// Write a spec's operation stream as an operation log (Tectonic's line format).
    Gen(GenArgs),
    /// Replay operation logs (written by `gen`, or any log in the same line format)
    /// against the engines, with the same flags and reports as a benchmark run.
    Replay(Box<RunArgs>),
    /// Draw figures (PNG, SVG or PDF) and the interactive HTML report from result
    /// directories written by --report-dir; several directories overlay.
    Plot(PlotArgs),
}

/// Flags of `kvmark plot`.
#[derive(Debug, Args, Clone)]
pub struct PlotArgs {
    /// Result directories written by --report-dir, or a directory holding several
    /// (each is plotted). Several overlay in every figure, labelled by directory.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,

    /// Where to write the figures and figures.json (created if missing).
    #[arg(short, long, value_name = "FIGDIR")]
    pub out: PathBuf,

    /// Figure format: png, svg or pdf. [default: png]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Also write the interactive report, FIGDIR/report.html.
    #[arg(long)]
    pub html: bool,

    /// Engine colours: a file of `engine = #rrggbb` lines, over the bundled palette
    /// (assets/palette.txt).
    #[arg(long, value_name = "FILE")]
    pub palette: Option<PathBuf>,
}

/// Flags of `kvmark gen`.
#[derive(Debug, Args, Clone)]
pub struct GenArgs {
    /// The spec (.json).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,

    /// The log file to write; `-` writes to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Seed of every random choice. [default: 1]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Leave out kvmark's `# phase NAME` lines, for tools that read only Tectonic's
    /// operation lines.
    #[arg(long)]
    pub plain: bool,
}

/// Flags of a benchmark run. Every value is optional here so that a config file can
/// supply defaults that the command line then overrides.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Workload files (.lua scripts, .json specs, .ops operation logs), run in sequence,
    /// each over the whole grid with its own fresh stores. Given here, they replace a
    /// config file's `workload` lines.
    #[arg(value_name = "WORKLOAD")]
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

    /// Before every timed phase (after the seed, and between a spec's phases), wait
    /// until the engine's background flushes and compactions are done (RocksDB);
    /// the wait is part of no phase.
    #[arg(long, overrides_with = "no_settle")]
    pub settle: bool,

    /// Switch --settle off (overrides a config file).
    #[arg(long, overrides_with = "settle")]
    pub no_settle: bool,

    /// An engine option, ENGINE.KEY=VALUE (repeatable); `kvmark engines` lists the keys.
    /// Sizes take K, M, G or T (powers of 1024). Overrides the same key of a config
    /// file's engine section.
    #[arg(long, value_name = "ENGINE.KEY=VALUE")]
    pub engine_opt: Vec<String>,

    /// Sample a live timeline every S seconds (fractions allowed, e.g. 0.1): throughput,
    /// interval latency per operation kind, the system probe, the store's disk bytes and
    /// the engine's stats. Written by the timeline sink and --report-dir.
    #[arg(long, value_name = "S")]
    pub timeline: Option<f64>,

    /// Switch the timeline off (overrides a config file).
    #[arg(long, conflicts_with = "timeline")]
    pub no_timeline: bool,

    /// Probes to record: a comma list of system, build; or all, or none. [default: all]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub probe: Option<Vec<String>>,

    /// Report sinks, a comma list of NAME or NAME:PATH (a bare name or PATH - is
    /// stdout): console, tsv, timeline, json, hdr (PATH is a directory of histogram
    /// logs). [default: console]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub report: Option<Vec<String>>,

    /// Write every report into a fresh directory under DIR (report.txt, points.tsv,
    /// timeline.tsv, results.json, hdr/, replay.cnf); overrides --report, and the
    /// console report still goes to stdout.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,

    /// Switch --report-dir off (overrides a config file).
    #[arg(long, conflicts_with = "report_dir")]
    pub no_report_dir: bool,

    /// At the end of a --report-dir run, also render every figure (PNG) into the
    /// report directory's figures/ (report.html is written either way).
    #[arg(long, overrides_with = "no_auto_plot")]
    pub auto_plot: bool,

    /// Switch --auto-plot off (overrides a config file).
    #[arg(long, overrides_with = "auto_plot")]
    pub no_auto_plot: bool,

    /// Load run settings from an INI file: [bench] holds the flags, a section named
    /// after an engine holds its options. Every flag given here overrides the file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Write the effective run to FILE as a config that `--config FILE` replays
    /// (same grid, same seeds), then run it.
    #[arg(long, value_name = "FILE")]
    pub save_config: Option<PathBuf>,

    /// Open loop: target rates to sweep, for the whole run (split evenly over its
    /// threads). Units per second (5000), or a bandwidth of written key and value bytes
    /// (200MB/s; KB, MB, GB are powers of 1000, KiB, MiB, GiB of 1024). Units start on
    /// their intended schedule; latency is also measured from the intended start
    /// (response time) beside the engine call alone (service time).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub rate: Option<Vec<String>>,

    /// Run closed loop: drop a config file's rate, slo, arrival and slo_secs.
    #[arg(long, conflicts_with_all = ["rate", "slo", "arrival", "slo_secs"])]
    pub no_rate: bool,

    /// How paced units arrive: constant (evenly spaced) or poisson (exponential gaps,
    /// seeded with seed + thread). [default: constant]
    #[arg(long, value_name = "KIND")]
    pub arrival: Option<String>,

    /// Exclude the first S seconds of each measurement's timed phase from its
    /// histograms and throughput (the units still run; the report says how many).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub warmup: Option<f64>,

    /// Find the highest rate meeting a response-time objective, per grid point, by a
    /// short closed-loop run then a bounded search of open-loop probes:
    /// [KIND:]pN<LIMIT, for example 'p99<2ms' or 'get:p99.9<500us' (ns, us, ms, s).
    #[arg(long, value_name = "OBJECTIVE")]
    pub slo: Option<String>,

    /// Seconds each SLO probe (and the capacity run) lasts. [default: 2]
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub slo_secs: Option<f64>,

    /// Growing values (YCSB-IVS): after the load, run N epochs, each an extend phase
    /// (appends to existing keys) and then the workload's run phase, each reported as
    /// its own point. A spec's own `epochs` block sets this too.
    #[arg(long, value_name = "N")]
    pub epochs: Option<u32>,

    /// Extends per epoch. [default: 100000, or the spec's]
    #[arg(long, value_name = "M")]
    pub extend_ops: Option<u64>,

    /// Bytes each extend appends. [default: 100, or the spec's]
    #[arg(long, value_name = "B")]
    pub extend_bytes: Option<u64>,

    /// Which keys the extends grow: zipfian (YCSB's, scrambled, 0.99) or uniform.
    /// [default: zipfian, or the spec's]
    #[arg(long, value_name = "DIST")]
    pub extend_dist: Option<String>,

    /// Run modes per epoch, a comma list of main (the store that lived through the
    /// extends), clean (a fresh store loaded from a dump of it), average (the same
    /// records, all of the average length), spread (the same volume in records of the
    /// initial length), or all; main always runs (its run phases are the main store's
    /// history). [default: main, or the spec's]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub ivs_mode: Option<Vec<String>>,

    /// Multiply the load, the extends per epoch and the run phase by F (0.1 makes a
    /// paper-scale run about ten times quicker). [default: 1]
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,

    /// Check that every clean store holds exactly the main store's data (a hash of
    /// every key and value; it reads the store before the run phase, warming caches).
    #[arg(long, overrides_with = "no_ivs_verify")]
    pub ivs_verify: bool,

    /// Switch --ivs-verify off (overrides a config file).
    #[arg(long, overrides_with = "ivs_verify")]
    pub no_ivs_verify: bool,

    /// Appends never grow a value past this many bytes; one that would is skipped and
    /// counted. A size (K, M, G: powers of 1024) or `none`. [default: 1600000, 1.6 MB
    /// as in YCSB-IVS]
    #[arg(long, value_name = "SIZE")]
    pub max_value_bytes: Option<String>,

    /// Engine options from a config file's engine sections (the command line's
    /// --engine-opt overrides them key by key).
    #[arg(skip)]
    pub file_engine_options: BTreeMap<String, EngineOptions>,

    /// Where each engine option of a config file was set: (engine, key) to
    /// "FILE:LINE", so an engine's complaint about a key can point at the line.
    #[arg(skip)]
    pub file_option_origins: BTreeMap<(String, String), String>,
}

/// Shortest timeline period: shorter ones would make the sampler a busy thread.
pub const MIN_TIMELINE: f64 = 0.01;
/// Longest timeline period (a day).
pub const MAX_TIMELINE: f64 = 86_400.0;

/// True for a usable `--timeline` period in seconds.
pub fn timeline_ok(secs: f64) -> bool {
    secs.is_finite() && (MIN_TIMELINE..=MAX_TIMELINE).contains(&secs)
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
        let value = normalize_option(value).map_err(|e| usage(format!("--engine-opt '{flag}': {e}")))?;
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

/// An engine option value as engines receive it: a value written like a size with a
/// unit (`64M`) must be a valid size and becomes bytes; anything else is unchanged.
pub fn normalize_option(value: &str) -> Result<String, String> {
    if looks_like_size(value) {
        parse_size(value).map(|n| n.to_string()).map_err(|e| e.to_string())
    } else {
        Ok(value.to_string())
    }
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

/// Opens one workload file.
pub type Opener = fn(&std::path::Path) -> Result<Arc<dyn Workload>, WorkloadError>;

impl RunArgs {
    /// Validates the flags and opens the workload files.
    pub fn into_plan(self) -> Result<Plan, UsageError> {
        self.into_plan_with(workload::open)
    }

    /// Like [`RunArgs::into_plan`], opening each workload file with `open`.
    pub fn into_plan_with(self, open: Opener) -> Result<Plan, UsageError> {
        let default_ops = if self.epochs.is_some() {
            crate::workload::epochs::DEFAULT_RUN_OPS
        } else {
            DEFAULT_OPS
        };
        let budget = match (self.secs, self.ops) {
            (Some(s), _) if !(s.is_finite() && s > 0.0) => {
                return Err(usage(format!("--secs {s}: give a positive number of seconds")));
            }
            (Some(s), _) => Budget::Secs(s),
            (None, Some(0)) => return Err(usage("--ops 0: give a positive number of units")),
            (None, ops) => Budget::Ops(ops.unwrap_or(default_ops)),
        };
        let open_loop = OpenLoop::parse(&self, budget, self.repeat.unwrap_or(1))?;
        let epochs = self.epoch_flags()?;
        let max_value_bytes = self.max_value_bytes()?;
        let seed_once = self.seed_once && !self.no_seed_once;
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
        let mut engine_options = self.file_engine_options.clone();
        let mut option_origins = self.file_option_origins.clone();
        for (name, opts) in parse_engine_opts(&self.engine_opt)? {
            let merged = engine_options.entry(name.clone()).or_default();
            for (k, v) in opts.iter() {
                merged.set(k, v);
                option_origins.insert((name.clone(), k.to_string()), format!("--engine-opt {name}.{k}"));
            }
        }
        engine::validate_options(&engine_options).map_err(|e| {
            // Trace each option the message quotes to where it was set (a config
            // file's line or the flag).
            let origins: Vec<String> = option_origins
                .iter()
                .filter(|((_, k), origin)| !origin.starts_with("--") && e.message.contains(&format!("'{k}'")))
                .map(|((_, k), origin)| format!("{k} is set at {origin}"))
                .collect();
            match origins.is_empty() {
                true => usage(e.message),
                false => usage(format!("{} ({})", e.message, origins.join("; "))),
            }
        })?;
        let timeline = match (self.timeline, self.no_timeline) {
            (_, true) | (None, _) => None,
            (Some(s), false) if timeline_ok(s) => Some(Duration::from_secs_f64(s)),
            (Some(s), false) => {
                return Err(usage(format!(
                    "--timeline {s}: give the seconds between samples, from {MIN_TIMELINE} to {MAX_TIMELINE}, e.g. 0.5"
                )));
            }
        };
        let probes = match &self.probe {
            Some(list) => ProbeSet::parse(list).map_err(|e| usage(format!("--probe: {e}")))?,
            None => ProbeSet::ALL,
        };
        let workloads = open_workloads_with(&self.workloads, open)?;
        epochs::check(&epochs, &workloads, seed_once, &open_loop.refused_by_epochs())?;
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
            load_threads: self.seed_threads,
            load_once: seed_once,
            data_dir: self.data_dir,
            keep_data: self.keep_data && !self.no_keep_data,
            settle: self.settle && !self.no_settle,
            timeline,
            probes,
            option_origins,
            rates: open_loop.rates,
            arrival: open_loop.arrival,
            warmup: open_loop.warmup,
            slo: open_loop.slo,
            slo_secs: open_loop.slo_secs,
            max_value_bytes,
            epochs,
        })
    }

    /// Where the run reports: `--report` and `--report-dir`.
    pub fn outputs(&self) -> Result<Outputs, UsageError> {
        let mut out = Outputs::default();
        if let Some(list) = &self.report {
            out.sinks = setup::parse_list(list).map_err(|e| usage(format!("--report: {e}")))?;
        }
        if !self.no_report_dir {
            out.report_dir = self.report_dir.clone();
        }
        out.auto_plot = self.auto_plot && !self.no_auto_plot;
        Ok(out)
    }
}

/// The open-loop flags, validated together.
struct OpenLoop {
    rates: Vec<Rate>,
    arrival: Arrival,
    warmup: Option<Duration>,
    slo: Option<Slo>,
    slo_secs: f64,
}

impl OpenLoop {
    /// The open-loop flags given, which epochs refuse.
    fn refused_by_epochs(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if !self.rates.is_empty() {
            given.push("--rate");
        }
        if self.slo.is_some() {
            given.push("--slo");
        }
        if self.warmup.is_some() {
            given.push("--warmup");
        }
        given
    }

    fn parse(args: &RunArgs, budget: Budget, repeat: usize) -> Result<OpenLoop, UsageError> {
        let rates = match &args.rate {
            None => Vec::new(),
            Some(list) if list.is_empty() => {
                return Err(usage("--rate needs at least one rate, for example --rate 5000"));
            }
            Some(list) => list
                .iter()
                .map(|r| Rate::parse(r))
                .collect::<Result<_, _>>()
                .map_err(usage)?,
        };
        let slo = args.slo.as_deref().map(Slo::parse).transpose().map_err(usage)?;
        if slo.is_some() && !rates.is_empty() {
            return Err(usage(
                "--slo searches for the rate itself: drop --rate (or drop --slo to measure the given rates)",
            ));
        }
        if slo.is_some() && repeat > 1 {
            return Err(usage("--slo runs each probe once: drop --repeat"));
        }
        let arrival = match &args.arrival {
            None => Arrival::Constant,
            Some(_) if rates.is_empty() && slo.is_none() => {
                return Err(usage("--arrival applies to paced runs: give --rate or --slo too"));
            }
            Some(a) => Arrival::parse(a).map_err(usage)?,
        };
        let slo_secs = match args.slo_secs {
            None => DEFAULT_SLO_SECS,
            Some(_) if slo.is_none() => return Err(usage("--slo-secs applies to an SLO search: give --slo too")),
            Some(s) if !(s.is_finite() && s > 0.0) => {
                return Err(usage(format!("--slo-secs {s}: give a positive number of seconds")));
            }
            Some(s) => s,
        };
        let warmup = match args.warmup {
            None => None,
            Some(w) if !(w.is_finite() && w >= 0.0) => {
                return Err(usage(format!(
                    "--warmup {w}: give a number of seconds, 0 or more (for example --warmup 2)"
                )));
            }
            Some(w) => {
                let phase = if slo.is_some() {
                    Some(("--slo-secs", slo_secs))
                } else {
                    match budget {
                        Budget::Secs(s) => Some(("--secs", s)),
                        Budget::Ops(_) => None,
                    }
                };
                if let Some((flag, secs)) = phase
                    && w >= secs
                {
                    return Err(usage(format!(
                        "--warmup {w} is not shorter than {flag} {secs}: nothing would be measured"
                    )));
                }
                (w > 0.0).then(|| Duration::from_secs_f64(w))
            }
        };
        Ok(OpenLoop {
            rates,
            arrival,
            warmup,
            slo,
            slo_secs,
        })
    }
}

/// Opens every workload file; any problem is a usage error naming the file.
pub fn open_workloads(paths: &[PathBuf]) -> Result<Vec<Arc<dyn Workload>>, UsageError> {
    open_workloads_with(paths, workload::open)
}

/// Opens every workload file with `open`.
pub fn open_workloads_with(paths: &[PathBuf], open: Opener) -> Result<Vec<Arc<dyn Workload>>, UsageError> {
    if paths.is_empty() {
        return Err(usage(
            "no workload file given (for example: kvmark workloads/mixed.lua)",
        ));
    }
    paths
        .iter()
        .map(|p| {
            open(p).map_err(|e| match e {
                WorkloadError::Invalid(m) | WorkloadError::Runtime(m) => usage(m),
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
