//! The plan built from the flags: every value checked and converted into a
//! [`run::Plan`](Plan). A refused value is worded for where it was given: the command
//! line's flag, or the config file's line and key ([`RunArgs::file_arg_origins`]).

use std::collections::BTreeMap;
use std::fmt::Display;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::RunArgs;
use super::epochs;
use crate::config::normalize_option;
use crate::engine::{self, EngineInfo, EngineOptions};
use crate::kv::pace::{Arrival, Rate};
use crate::probe::ProbeSet;
use crate::report::setup::{self, Outputs};
use crate::result::slo::Slo;
use crate::run::Plan;
use crate::workload::{self, Budget, Params, Workload, WorkloadError};

/// The most connections one worker thread may drive: far beyond what a client core
/// keeps busy, low enough that a typo (64000) is caught before it opens that many
/// server connections.
const MAX_CONNECTIONS: usize = 4096;

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

pub(super) fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

impl RunArgs {
    /// `arg`'s value refused: `on_cli` as the command line words it or, when a config
    /// file set it, "FILE:LINE: KEY: {in_file}".
    pub(super) fn refused(&self, arg: &str, on_cli: impl Into<String>, in_file: impl Display) -> UsageError {
        match self.file_arg_origins.get(arg) {
            Some(at) => usage(format!("{at}: {arg}: {in_file}")),
            None => usage(on_cli),
        }
    }

    /// "--FLAG VALUE: MSG" on the command line, "KEY: MSG" in a config file.
    pub(super) fn refused_value(&self, arg: &str, value: impl Display, msg: impl Display) -> UsageError {
        self.refused(arg, format!("--{} {value}: {msg}", arg.replace('_', "-")), msg)
    }

    /// A complaint about flags taken together, noting where a config file set any of
    /// `args`: "MSG (KEY is set at FILE:LINE)".
    pub(super) fn together(&self, args: &[&str], msg: impl Into<String>) -> UsageError {
        let set: Vec<String> = args
            .iter()
            .filter_map(|a| self.file_arg_origins.get(*a).map(|at| format!("{a} is set at {at}")))
            .collect();
        match set.is_empty() {
            true => usage(msg),
            false => usage(format!("{} ({})", msg.into(), set.join("; "))),
        }
    }

    /// "--FLAG: MSG" on the command line, "KEY: MSG" in a config file.
    pub(super) fn refused_flag(&self, arg: &str, msg: impl Display) -> UsageError {
        self.refused(arg, format!("--{}: {msg}", arg.replace('_', "-")), msg)
    }
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

impl RunArgs {
    /// The engines named by `--backend` (default: the reference engine).
    pub fn engines(&self) -> Result<Vec<&'static EngineInfo>, UsageError> {
        let default = [engine::DEFAULT_ENGINE.to_string()];
        let names = self.backend.as_deref().unwrap_or(&default);
        if names.is_empty() {
            return Err(usage("--backend needs at least one engine name"));
        }
        names
            .iter()
            .map(|n| {
                engine::find(n.trim()).ok_or_else(|| {
                    self.refused_flag(
                        "backend",
                        format!(
                            "unknown engine '{n}' (compiled in: {}; see `kvmark engines`)",
                            engine_names()
                        ),
                    )
                })
            })
            .collect()
    }
}

/// How long a workload file's top level and each load() may run by default
/// (`--load-secs`): far past any load a benchmark on one machine makes, so only code
/// that never returns reaches it.
pub const DEFAULT_LOAD_SECS: f64 = 600.0;

/// The limit `--load-secs` gives (None: no limit); a value the plan refuses (negative,
/// NaN) reads as the default, for the opener that runs before the plan checks it.
pub fn load_limit(load_secs: Option<f64>) -> Option<Duration> {
    match load_secs.filter(|s| s.is_finite() && *s >= 0.0) {
        Some(0.0) => None,
        s => Some(Duration::from_secs_f64(s.unwrap_or(DEFAULT_LOAD_SECS))),
    }
}

/// Refuses a workload that says it needs the keys in order (range, scan,
/// delete_range) on an engine that keeps none, naming both.
fn ordered_check(workloads: &[Arc<dyn Workload>], engines: &[&'static EngineInfo]) -> Result<(), UsageError> {
    let Some(engine) = engines.iter().find(|e| !e.ordered()) else {
        return Ok(());
    };
    for wl in workloads {
        let needs = wl.ordered_needs();
        if !needs.is_empty() {
            return Err(usage(format!(
                "{}: {} needs the keys in order (range, scan or delete_range), but engine {} keeps no key order; \
                 run this workload on another engine, or drop those operations from it",
                wl.path().display(),
                needs.join(", "),
                engine.name
            )));
        }
    }
    Ok(())
}

/// Opens one workload file.
pub type Opener<'a> = &'a dyn Fn(&std::path::Path) -> Result<Arc<dyn Workload>, WorkloadError>;

impl RunArgs {
    /// Validates the flags and opens the workload files.
    pub fn into_plan(self) -> Result<Plan, UsageError> {
        self.into_plan_with(&workload::open)
    }

    /// Like [`RunArgs::into_plan`], opening each workload file with `open`.
    pub fn into_plan_with(self, open: Opener<'_>) -> Result<Plan, UsageError> {
        let default_ops = if self.epochs.is_some() {
            crate::workload::epochs::DEFAULT_RUN_OPS
        } else {
            DEFAULT_OPS
        };
        let budget = match (self.secs, self.ops) {
            (Some(s), _) if !(s.is_finite() && s > 0.0) => {
                return Err(self.refused(
                    "secs",
                    format!("--secs {s}: give a positive number of seconds"),
                    format!("'{s}' is not a positive number of seconds"),
                ));
            }
            (Some(s), _) => Budget::Secs(s),
            (None, Some(0)) => return Err(self.refused_value("ops", 0, "give a positive number of units")),
            (None, ops) => Budget::Ops(ops.unwrap_or(default_ops)),
        };
        let load_limit = match self.load_secs {
            Some(s) if !(s.is_finite() && s >= 0.0) => {
                return Err(self.refused_value("load_secs", s, "give a number of seconds, 0 (no limit) or more"));
            }
            s => load_limit(s),
        };
        let open_loop = OpenLoop::parse(&self, budget, self.repeat.unwrap_or(1))?;
        let epochs = self.epoch_flags()?;
        let max_value_bytes = self.max_value_bytes()?;
        let size_classes = self.size_classes()?;
        let seed_once = self.seed_once && !self.no_seed_once;
        let sweep = |name: &str, list: &Option<Vec<usize>>| {
            positive_list(name, list.clone(), vec![1])
                .map_err(|e| self.refused(name, e.0, "'0' is not a positive whole number"))
        };
        let ycsb = self.ycsb_options()?;
        let ycsb_threads = self.ycsb_threadcount(&ycsb);
        let threads = match ycsb_threads {
            Some(n) if self.threads.is_none() && n > super::args::MAX_THREADS => {
                return Err(usage(format!(
                    "YCSB property threadcount={n}: kvmark runs at most {} threads; give fewer, or --threads",
                    super::args::MAX_THREADS
                )));
            }
            Some(n) if self.threads.is_none() => vec![n],
            _ => sweep("threads", &self.threads)?,
        };
        let connections = sweep("connections", &self.connections)?;
        if let Some(&c) = connections.iter().find(|&&c| c > MAX_CONNECTIONS) {
            return Err(self.refused_value(
                "connections",
                c,
                format!("at most {MAX_CONNECTIONS} per thread (each holds a server connection and a 1 MiB stack)"),
            ));
        }
        let batch = match &self.batch {
            Some(_) => Some(sweep("batch", &self.batch)?),
            None => None,
        };
        let repeat = self.repeat.unwrap_or(1);
        if repeat == 0 {
            return Err(self.refused_value("repeat", 0, "give at least 1"));
        }
        if self.seed_threads == Some(0) {
            return Err(self.refused_value("seed_threads", 0, "give at least 1"));
        }
        let engines = self.engines()?;
        let pipeline = self.pipeline(sweep("pipeline", &self.pipeline)?, &connections, &engines)?;
        let reconnect_every = self.reconnect_every(&pipeline, &engines)?;
        let use_existing = self.use_existing(&engines)?;
        let mut data_dir = self.data_dir.clone();
        if let Some(dir) = &self.data_dir
            && !dir.is_dir()
        {
            if engines.iter().any(|e| e.storage.on_disk()) {
                return Err(self.refused_value(
                    "data_dir",
                    dir.display(),
                    "not an existing directory (create it on the disk you mean to benchmark)",
                ));
            }
            // Only in-memory engines run: the directory is never used (keybench
            // accepts such a config too).
            eprintln!(
                "kvmark: warning: data_dir {} does not exist; unused, since no engine of this run stores data on disk",
                dir.display()
            );
            data_dir = None;
        }
        if self.data_dir.is_none()
            && use_existing.is_none()
            && let Some(e) = engines.iter().find(|e| e.storage.on_disk())
        {
            return Err(self.together(
                &["backend"],
                format!(
                    "engine {} stores data on disk: give --data-dir DIR on the disk you mean to benchmark \
                     (there is no default, since /tmp is often tmpfs and would benchmark RAM)",
                    e.name
                ),
            ));
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
        // A refused option is traced to where it was set (a config file's line or
        // the flag).
        engine::validate_options(&engine_options).map_err(|e| usage(e.traced(&e.message, &option_origins)))?;
        let timeline = match (self.timeline, self.no_timeline) {
            (_, true) | (None, _) => None,
            (Some(s), false) if timeline_ok(s) => Some(Duration::from_secs_f64(s)),
            (Some(s), false) => {
                return Err(self.refused(
                    "timeline",
                    format!(
                        "--timeline {s}: give the seconds between samples, from {MIN_TIMELINE} to {MAX_TIMELINE}, e.g. 0.5"
                    ),
                    format!("{s} is not a sample period from {MIN_TIMELINE} to {MAX_TIMELINE} seconds"),
                ));
            }
        };
        let probes = match &self.probe {
            Some(list) => ProbeSet::parse(list).map_err(|e| self.refused_flag("probe", e))?,
            None => ProbeSet::ALL,
        };
        let (segment, start_at, job) = self.scale_out(&engines, &epochs, &open_loop.slo)?;
        let mut paths = self.workloads.clone();
        paths.extend(self.ycsb_file.iter().cloned());
        let (trace_format, trace_split) = self.trace_options()?;
        let open_one = |p: &std::path::Path| match trace_format {
            Some(format) => workload::trace::open(p, format, self.speed, trace_split),
            None if self.is_ycsb_file(p) => workload::ycsb::open(p, &ycsb),
            None => open(p),
        };
        workload::spec::set_strict(self.strict_spec);
        let workloads = open_workloads_with(&paths, &open_one)?;
        ordered_check(&workloads, &engines)?;
        if self.pin && !self.no_pin {
            crate::run::pin::enable().map_err(usage)?;
        }
        epochs::check(&epochs, &workloads, seed_once, &open_loop.refused_by_epochs())?;
        let verify = self.verify && !self.no_verify;
        if use_existing.is_some() {
            if let Some(wl) = workloads.iter().find(|wl| epochs.resolve(wl.as_ref()).is_some()) {
                return Err(self.refused_flag(
                    "use_existing",
                    format!(
                        "{} runs in epochs, which load a fresh store and grow its values; run it without \
                         --use-existing, or without epochs",
                        wl.name()
                    ),
                ));
            }
            if verify {
                return Err(self.refused_flag(
                    "use_existing",
                    "--verify checks every read against what the run wrote, and an existing store holds values \
                     this run did not write; run it without --verify",
                ));
            }
        }
        if verify && let Some(wl) = workloads.iter().find(|wl| epochs.resolve(wl.as_ref()).is_some()) {
            return Err(self.refused(
                "verify",
                format!(
                    "--verify does not check runs in epochs ({} grows values in epochs, whose stores are copied \
                     outside the checked verbs); run it without --verify or without epochs",
                    wl.name()
                ),
                "runs in epochs cannot be verified",
            ));
        }
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
            connections,
            pipeline,
            reconnect_every,
            batch,
            budget,
            load_limit,
            repeat,
            params,
            load_threads: self.seed_threads,
            // One store for every point, as under --seed-once: the existing one.
            load_once: seed_once || use_existing.is_some(),
            use_existing,
            data_dir,
            keep_data: self.keep_data && !self.no_keep_data,
            settle: self.settle && !self.no_settle,
            timeline,
            probes,
            option_origins,
            trace_format,
            trace_split,
            speed: self.speed,
            rates: open_loop.rates,
            arrival: open_loop.arrival,
            warmup: open_loop.warmup,
            slo: open_loop.slo,
            slo_secs: open_loop.slo_secs,
            max_value_bytes,
            size_classes,
            epochs,
            verify,
            segment,
            start_at,
            job,
            pin: self.pin && !self.no_pin,
            ycsb,
        })
    }

    /// The pipeline depths (`--pipeline`), already positive: above 1 only when every
    /// engine of the plan can pipeline requests, and no thread made to run more workers
    /// than [`MAX_CONNECTIONS`].
    fn pipeline(
        &self,
        depths: Vec<usize>,
        connections: &[usize],
        engines: &[&'static EngineInfo],
    ) -> Result<Vec<usize>, UsageError> {
        if let Some(&deep) = depths.iter().find(|&&d| d > 1)
            && let Some(e) = engines.iter().find(|e| !e.pipelines())
        {
            let can: Vec<&str> = engine::registry()
                .iter()
                .filter(|e| e.pipelines())
                .map(|e| e.name)
                .collect();
            let can = match can.is_empty() {
                true => "none compiled in".to_string(),
                false => can.join(", "),
            };
            return Err(self.refused_value(
                "pipeline",
                deep,
                format!("engine {} cannot pipeline requests (engines that can: {can})", e.name),
            ));
        }
        // Every worker of a thread, pipelined or not, is a connection's coroutine with
        // its own stack: the cap on connections holds for their product.
        let deepest = depths.iter().max().copied().unwrap_or(1);
        let widest = connections.iter().max().copied().unwrap_or(1);
        if widest.saturating_mul(deepest) > MAX_CONNECTIONS {
            return Err(self.refused_value(
                "pipeline",
                deepest,
                format!(
                    "with --connections {widest}, {} workers per thread; at most {MAX_CONNECTIONS} \
                     (connections x pipeline, each with a 1 MiB stack)",
                    widest.saturating_mul(deepest)
                ),
            ));
        }
        Ok(depths)
    }

    /// `--reconnect-every N` (0 when not given): only for server engines, whose
    /// sessions have a connection to close, and only one request deep, since a
    /// pipeline group's sessions share their connection.
    fn reconnect_every(&self, pipeline: &[usize], engines: &[&'static EngineInfo]) -> Result<u64, UsageError> {
        let Some(n) = self.reconnect_every else {
            return Ok(0);
        };
        if n == 0 {
            return Err(self.refused_value(
                "reconnect_every",
                n,
                "give the requests per connection, 1 or more (leave the flag out to keep connections)",
            ));
        }
        if let Some(e) = engines.iter().find(|e| e.storage.server().is_none()) {
            return Err(self.refused_value(
                "reconnect_every",
                n,
                format!(
                    "engine {} runs in this process and has no connection to close; server engines only",
                    e.name
                ),
            ));
        }
        if let Some(&deep) = pipeline.iter().find(|&&d| d > 1) {
            return Err(self.together(
                &["reconnect_every", "pipeline"],
                format!(
                    "--reconnect-every with --pipeline {deep}: a pipeline group's requests share one connection, \
                     which one of them cannot close alone; give --pipeline 1"
                ),
            ));
        }
        Ok(n)
    }

    /// Where the run reports: `--report` and `--report-dir`.
    pub fn outputs(&self) -> Result<Outputs, UsageError> {
        let mut out = Outputs::default();
        if let Some(list) = &self.report {
            out.sinks = setup::parse_list(list).map_err(|e| self.refused_flag("report", e))?;
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
                .map_err(|m| args.refused("rate", m.clone(), m))?,
        };
        let slo = args
            .slo
            .as_deref()
            .map(Slo::parse)
            .transpose()
            .map_err(|m| args.refused("slo", m.clone(), m))?;
        if slo.is_some() && !rates.is_empty() {
            return Err(args.together(
                &["slo", "rate"],
                "--slo searches for the rate itself: drop --rate (or drop --slo to measure the given rates)",
            ));
        }
        if slo.is_some() && repeat > 1 {
            return Err(args.together(&["slo", "repeat"], "--slo runs each probe once: drop --repeat"));
        }
        let arrival = match &args.arrival {
            None => Arrival::Constant,
            Some(a) => {
                let arrival = Arrival::parse(a).map_err(|m| args.refused("arrival", m.clone(), m))?;
                if rates.is_empty() && slo.is_none() {
                    return Err(args.together(
                        &["arrival"],
                        "--arrival applies to paced runs: give --rate or --slo too",
                    ));
                }
                arrival
            }
        };
        let slo_secs = match args.slo_secs {
            None => DEFAULT_SLO_SECS,
            Some(_) if slo.is_none() => {
                return Err(args.together(&["slo_secs"], "--slo-secs applies to an SLO search: give --slo too"));
            }
            Some(s) if !(s.is_finite() && s > 0.0) => {
                return Err(args.refused_value("slo_secs", s, "give a positive number of seconds"));
            }
            Some(s) => s,
        };
        let warmup = match args.warmup {
            None => None,
            Some(w) if !(w.is_finite() && w >= 0.0) => {
                return Err(args.refused(
                    "warmup",
                    format!("--warmup {w}: give a number of seconds, 0 or more (for example --warmup 2)"),
                    format!("'{w}' is not a number of seconds, 0 or more"),
                ));
            }
            Some(w) => {
                let phase = if slo.is_some() {
                    Some(("slo_secs", slo_secs))
                } else {
                    match budget {
                        Budget::Secs(s) => Some(("secs", s)),
                        Budget::Ops(_) => None,
                    }
                };
                if let Some((arg, secs)) = phase
                    && w >= secs
                {
                    let flag = arg.replace('_', "-");
                    return Err(args.together(
                        &["warmup", arg],
                        format!("--warmup {w} is not shorter than --{flag} {secs}: nothing would be measured"),
                    ));
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
    open_workloads_with(paths, &workload::open)
}

/// Opens every workload file with `open`.
pub fn open_workloads_with(paths: &[PathBuf], open: Opener<'_>) -> Result<Vec<Arc<dyn Workload>>, UsageError> {
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
