//! Dispatch: turns parsed flags into a run or a subcommand, and a run into an exit
//! status.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cli::{Cli, Command, FitArgs, GenArgs, MergeArgs, PlotArgs, RunArgs};
use crate::engine::net::mask_password;
use crate::plot::{self, PlotError};
use crate::report::RunInfo;
use crate::report::setup::{self, SamplerUse};
use crate::run::{self, Plan};
use crate::workload::spec::emit::{self, GenError, GenRequest, ThreadSlice};
use crate::workload::{Workload, WorkloadError, replay};
use crate::{config, engine, probe};

/// Every point succeeded.
pub const EXIT_OK: u8 = 0;
/// A point failed, saw engine errors, or a report could not be written.
pub const EXIT_FAILED: u8 = 1;
/// Bad flags, config or workload files.
pub const EXIT_USAGE: u8 = 2;
/// Stopped by Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The sample period `--metrics-listen` uses when `--timeline` gives none.
pub const METRICS_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// Runs the parsed command line.
pub fn main(cli: Cli) -> ExitCode {
    match cli.command {
        Some(Command::Engines) => {
            print!("{}", engines_listing());
            ExitCode::from(EXIT_OK)
        }
        Some(Command::Gen(args)) => ExitCode::from(generate(&args)),
        Some(Command::Replay(mut args)) => {
            // So a saved config reruns the file as a log whatever its name.
            args.format.get_or_insert_with(|| "oplog".to_string());
            ExitCode::from(run_benchmark_with(*args, |path, _, _| replay::open_workload(path)))
        }
        Some(Command::Fit(args)) => ExitCode::from(fit_trace(&args)),
        Some(Command::Plot(args)) => ExitCode::from(plot_dirs(&args)),
        Some(Command::Merge(args)) => ExitCode::from(merge_dirs(&args)),
        Some(Command::Compare(args)) => ExitCode::from(compare_runs(&args)),
        Some(Command::Man(args)) => ExitCode::from(ok_or_failed(crate::cli::kit::run_man(&args))),
        Some(Command::Completions(args)) => ExitCode::from(ok_or_failed(crate::cli::kit::run_completions(&args))),
        None => ExitCode::from(run_benchmark(cli.run)),
    }
}

/// `kvmark gen`.
fn generate(args: &GenArgs) -> u8 {
    let env = |name: &str| std::env::var(name).ok();
    let segment = match &args.segment {
        Some(text) => match run::segment::Segment::parse(text, args.segment_count, &env) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("kvmark: error: {e}");
                return EXIT_USAGE;
            }
        },
        None => run::segment::Segment::WHOLE,
    };
    let threads = args.threads.unwrap_or(1);
    if threads == 0 {
        eprintln!("kvmark: error: --threads 0: give at least 1");
        return EXIT_USAGE;
    }
    let req = GenRequest {
        spec: &args.spec,
        output: &args.output,
        seed: args.seed.unwrap_or(crate::cli::DEFAULT_SEED),
        plain: args.plain,
        threads: ThreadSlice {
            first: segment.worker(0, threads),
            count: threads,
            of: segment.workers(threads),
        },
    };
    match emit::generate(&req) {
        Ok(_) => EXIT_OK,
        Err(GenError::Usage(m)) => {
            eprintln!("kvmark: error: {m}");
            EXIT_USAGE
        }
        Err(GenError::Failed(m)) => {
            eprintln!("kvmark: error: {m}");
            EXIT_FAILED
        }
        Err(GenError::Closed) => EXIT_OK,
    }
}

/// `kvmark fit`: the spec to the file (or stdout), the report to stdout (or stderr).
fn fit_trace(args: &FitArgs) -> u8 {
    use crate::workload::trace::{TraceFormat, fit};
    let format = match TraceFormat::parse(&args.format) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("kvmark fit: error: {e}");
            return EXIT_USAGE;
        }
    };
    let req = fit::FitRequest {
        path: &args.trace,
        format,
        windows: args.windows.unwrap_or(10),
        speed: args.speed.unwrap_or(1.0),
    };
    let report = match fit::fit(&req) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kvmark fit: error: {e}");
            return EXIT_USAGE;
        }
    };
    let to_stdout = args.output.as_os_str() == "-";
    let written = if to_stdout {
        println!("{}", report.spec);
        Ok(())
    } else {
        std::fs::write(&args.output, format!("{}\n", report.spec))
    };
    if let Err(e) = written {
        eprintln!("kvmark fit: error: cannot write {}: {e}", args.output.display());
        return EXIT_FAILED;
    }
    if to_stdout {
        eprint!("{}", report.text);
    } else {
        print!("{}", report.text);
        println!(
            "spec: {} (run it with kvmark {})",
            args.output.display(),
            args.output.display()
        );
    }
    EXIT_OK
}

/// `kvmark merge`: one report directory from a scaled-out run's segments, with its
/// report page. Exit 1 when a point failed in some segment, 2 for directories that do
/// not belong together.
fn merge_dirs(args: &MergeArgs) -> u8 {
    let merged = match crate::merge::merge(&args.dirs, &args.out) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("kvmark merge: error: {e}");
            return EXIT_USAGE;
        }
    };
    for w in &merged.warnings {
        eprintln!("kvmark merge: warning: {w}");
    }
    print!("{}", merged.table);
    let mut status = if merged.bad_points > 0 { EXIT_FAILED } else { EXIT_OK };
    match plot::after_run(&merged.dir, false) {
        Ok(o) => o.notes.iter().for_each(|n| eprintln!("kvmark merge: warning: {n}")),
        Err(e) => {
            eprintln!("kvmark merge: error: the report page: {e}");
            status = EXIT_FAILED;
        }
    }
    eprintln!("kvmark merge: the merged report is in {}", merged.dir.display());
    status
}

/// `kvmark plot`: figures (and the report with `--html`) from result directories.
/// Exit 1 when an input file was missing or damaged, after plotting what is there.
fn plot_dirs(args: &PlotArgs) -> u8 {
    let format = match plot::Format::parse(args.format.as_deref().unwrap_or("png")) {
        Ok(f) => f,
        Err(m) => {
            eprintln!("kvmark: error: {m}");
            return EXIT_USAGE;
        }
    };
    let req = plot::Request {
        dirs: args.dirs.clone(),
        out: args.out.clone(),
        format,
        figures: true,
        html: args.html.then(|| args.out.join(plot::REPORT_HTML)),
        palette: args.palette.clone(),
    };
    match plot::run(&req) {
        Ok(outcome) => {
            for n in &outcome.notes {
                eprintln!("kvmark: warning: {n}");
            }
            let figures = outcome
                .written
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == format.ext()))
                .count();
            eprintln!(
                "kvmark: wrote {figures} figure(s) to {} (listed in {})",
                args.out.display(),
                plot::MANIFEST
            );
            if args.html {
                eprintln!("kvmark: wrote {}", args.out.join(plot::REPORT_HTML).display());
            }
            if outcome.notes.is_empty() {
                EXIT_OK
            } else {
                eprintln!("kvmark: some input was missing or damaged (see the warnings); plotted what is there");
                EXIT_FAILED
            }
        }
        Err(PlotError::Usage(m)) => {
            eprintln!("kvmark: error: {m}");
            EXIT_USAGE
        }
        Err(PlotError::Failed(m)) => {
            eprintln!("kvmark: error: {m}");
            EXIT_FAILED
        }
    }
}

/// `kvmark compare`: exit 1 when `--fail-if-slower` finds a point slower, or
/// `--fail-if-latency-worse` a latency figure higher, by more than its threshold.
fn compare_runs(args: &crate::cli::kit::CompareArgs) -> u8 {
    use crate::report::compare;
    let format = match compare::Format::parse(args.format.as_deref().unwrap_or("table")) {
        Ok(f) => f,
        Err(m) => {
            eprintln!("kvmark: error: {m}");
            return EXIT_USAGE;
        }
    };
    let req = compare::Request {
        a: args.baseline.clone(),
        b: args.candidate.clone(),
        alpha: args.alpha.unwrap_or(0.05),
        fail_if_slower: args.fail_if_slower,
        fail_if_latency_worse: args.fail_if_latency_worse,
    };
    let c = match compare::compare(&req) {
        Ok(c) => c,
        Err(m) => {
            eprintln!("kvmark: error: {m}");
            return EXIT_USAGE;
        }
    };
    print!("{}", compare::render(&c, format));
    if c.rows.is_empty() {
        eprintln!("kvmark: warning: the two runs have no point in common");
    }
    let slower = c.regressions();
    if !slower.is_empty() {
        eprintln!(
            "kvmark: {} point(s) slower than --fail-if-slower allows: {}",
            slower.len(),
            slower.iter().map(|r| r.label.as_str()).collect::<Vec<_>>().join("; ")
        );
    }
    let worse = c.latency_regressions();
    if !worse.is_empty() {
        eprintln!(
            "kvmark: {} latency figure(s) higher than --fail-if-latency-worse allows: {}",
            worse.len(),
            worse.iter().map(|r| r.label()).collect::<Vec<_>>().join("; ")
        );
    }
    if slower.is_empty() && worse.is_empty() {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

/// Success, or the error on stderr and exit status 1.
fn ok_or_failed(r: Result<(), String>) -> u8 {
    match r {
        Ok(()) => EXIT_OK,
        Err(m) => {
            eprintln!("kvmark: error: {m}");
            EXIT_FAILED
        }
    }
}

/// `kvmark engines`.
pub fn engines_listing() -> String {
    let mut s = String::new();
    for e in engine::registry() {
        s.push_str(&format!("{}\n", e.name));
        s.push_str(&format!("  {}\n", e.description));
        s.push_str(&format!("  storage:  {}\n", e.storage.label()));
        s.push_str(&format!("  library:  {}\n", (e.version)()));
        s.push_str(&format!("  append:   {}\n", e.append.label()));
        let del = if e.del_reports_existence {
            "reports whether the key existed"
        } else {
            "existence unknown (kv.del returns nil; no extra read is added)"
        };
        s.push_str(&format!("  del:      {del}\n"));
        let batches = if e.atomic_batches {
            "mput/mdel commit as one atomic write"
        } else {
            "mput/mdel apply key by key (each key atomic, not the batch)"
        };
        s.push_str(&format!("  batches:  {batches}\n"));
        let pipeline = if e.pipelines() {
            "--pipeline N keeps up to N requests in flight on each connection"
        } else {
            "one request at a time per session (--pipeline 1 only)"
        };
        s.push_str(&format!("  pipeline: {pipeline}\n"));
        if !e.ordered() {
            s.push_str("  order:    none: range, scan and delete_range are refused\n");
        }
        let knobs = e.knobs.list();
        if knobs.is_empty() {
            s.push_str("  knobs:    none\n");
        } else {
            s.push_str("  knobs:\n");
            for k in knobs {
                s.push_str(&format!("    {:<32} default {:<16} {}\n", k.name, k.default, k.help));
            }
        }
    }
    s
}

fn run_benchmark(args: RunArgs) -> u8 {
    run_benchmark_with(args, crate::workload::open_until)
}

/// Opens a workload file, stopped by the run's abort flag or after the limit on a
/// file's top level (`--load-secs`).
type AbortableOpener =
    fn(&std::path::Path, &Arc<AtomicBool>, Option<Duration>) -> Result<Arc<dyn Workload>, WorkloadError>;

fn run_benchmark_with(args: RunArgs, open: AbortableOpener) -> u8 {
    let abort = Arc::new(AtomicBool::new(false));
    // First Ctrl-C (or SIGTERM, as timeout, container stops and CI cancellation send):
    // stop cleanly. A second one while stopping: exit at once.
    let handlers = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM]
        .into_iter()
        .try_for_each(|signal| {
            signal_hook::flag::register_conditional_shutdown(signal, i32::from(EXIT_INTERRUPTED), Arc::clone(&abort))?;
            signal_hook::flag::register(signal, Arc::clone(&abort))?;
            // After the flag is set, so Lua code that the hook stops sees it.
            crate::workload::lua::halt::stop_lua_on(signal)
        });
    if let Err(e) = handlers {
        eprintln!("kvmark: warning: cannot install the Ctrl-C and SIGTERM handlers: {e}");
    }

    // Read before `args` is consumed by the plan.
    let given = Given {
        report: args.report.is_some(),
        bound: args.ops.is_some() || args.secs.is_some(),
        size: args.users.is_some() || args.items.is_some(),
    };
    let save_config = args.save_config.clone();
    let strict = args.strict;
    let metrics_listen = args.metrics_listen.clone();
    let outputs = match args.outputs() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("kvmark: error: {e}");
            return EXIT_USAGE;
        }
    };
    let top_level_limit = crate::cli::load_limit(args.load_secs);
    let mut plan = match args.into_plan_with(&|path| open(path, &abort, top_level_limit)) {
        Ok(plan) => plan,
        // Ctrl-C while a workload file's top level ran.
        Err(_) if abort.load(Ordering::Relaxed) => return EXIT_INTERRUPTED,
        Err(e) => {
            eprintln!("kvmark: error: {e}");
            return EXIT_USAGE;
        }
    };
    for w in warnings(&plan, &outputs, given) {
        eprintln!("kvmark: warning: {w}");
    }
    // The replay config is needed by --save-config and by the report directory.
    let replay_cnf = config::replay::render(&plan, &outputs);
    if let Some(path) = &save_config {
        let written = replay_cnf
            .as_ref()
            .map_err(String::clone)
            .and_then(|text| std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display())));
        if let Err(e) = written {
            eprintln!("kvmark: error: --save-config: {e}");
            return EXIT_USAGE;
        }
        eprintln!("kvmark: saved this run's config to {}", path.display());
    }
    let replay_text = match (&replay_cnf, &outputs.report_dir) {
        (Ok(t), _) => t.clone(),
        (Err(e), Some(_)) => {
            eprintln!("kvmark: error: --report-dir: the replay config cannot be written: {e}");
            return EXIT_USAGE;
        }
        (Err(_), None) => String::new(),
    };
    let opened = match setup::open(&outputs, &replay_text) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("kvmark: error: {e}");
            return EXIT_USAGE;
        }
    };
    if let Some(dir) = &opened.dir {
        eprintln!("kvmark: writing reports to {}", dir.display());
    }
    let mut reporter = opened.reporter;
    if let Some(addr) = &metrics_listen {
        match crate::report::metrics::Metrics::listen(addr) {
            Ok(m) => {
                eprintln!("kvmark: serving metrics at http://{}/metrics", m.addr());
                reporter.add(format!("metrics:{addr}"), Box::new(m));
            }
            Err(e) => {
                eprintln!("kvmark: error: {e}");
                return EXIT_USAGE;
            }
        }
        // Live metrics come from the sampler: sample every second unless --timeline
        // says otherwise (after the replay config, which keeps the run as given).
        plan.timeline = plan.timeline.or(Some(METRICS_PERIOD));
    }
    let mut info = run_info(&plan);
    info.probes = probe::collect(plan.probes, plan.data_dir.as_deref());
    reporter.begin(&info);
    let outcome = run::execute(&plan, &reporter, &abort);
    reporter.end(&outcome);

    for e in reporter.errors() {
        eprintln!("kvmark: error: {e}");
    }
    let mut plot_failed = false;
    if let Some(dir) = &opened.dir {
        // The report page, and with --auto-plot the figures, from what the sinks wrote.
        match plot::after_run(dir, outputs.auto_plot) {
            Ok(o) => {
                for n in &o.notes {
                    eprintln!("kvmark: warning: {n}");
                }
                if outputs.auto_plot {
                    eprintln!("kvmark: figures are in {}", dir.join(plot::AUTO_PLOT_DIR).display());
                }
            }
            Err(e) => {
                eprintln!("kvmark: error: the report page or figures: {e}");
                plot_failed = true;
            }
        }
        eprintln!("kvmark: reports are in {}", dir.display());
    }
    for e in &outcome.other_errors {
        eprintln!("kvmark: error: {e}");
    }
    if outcome.interrupted {
        eprintln!("kvmark: interrupted; finished points were reported");
        return EXIT_INTERRUPTED;
    }
    if outcome.bad_points > 0 {
        eprintln!(
            "kvmark: {} of {} point(s) failed or saw engine errors (see the report)",
            outcome.bad_points,
            outcome.rows.len()
        );
    }
    let strict_failed = strict && outcome.checked_points > 0;
    if strict_failed {
        eprintln!(
            "kvmark: --strict: {} of {} point(s) failed a self-check (the lines starting with \"check\")",
            outcome.checked_points,
            outcome.rows.len()
        );
    }
    if outcome.bad_points > 0
        || strict_failed
        || !reporter.errors().is_empty()
        || !outcome.other_errors.is_empty()
        || plot_failed
    {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// Which flags were given, on the command line or in a config file, for [`warnings`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    /// `--report`.
    pub report: bool,
    /// `--ops` or `--secs`.
    pub bound: bool,
    /// `--users` or `--items`.
    pub size: bool,
}

/// Things worth knowing before a run starts: a data directory in RAM, flags that
/// will have no effect.
pub fn warnings(plan: &Plan, outputs: &setup::Outputs, given: Given) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(dir) = &plan.data_dir
        && let Some(msg) = probe::device::ram_fs_warning(dir)
    {
        w.push(msg);
    }
    if outputs.auto_plot && outputs.report_dir.is_none() {
        w.push("--auto-plot draws into the report directory: add --report-dir DIR".to_string());
    }
    for ((engine, key), origin) in &plan.option_origins {
        if origin.starts_with("--engine-opt") && !plan.engines.iter().any(|e| e.name == engine) {
            w.push(format!(
                "--engine-opt {engine}.{key} has no effect: {engine} is not among the engines run (--backend {})",
                plan.engines.iter().map(|e| e.name).collect::<Vec<_>>().join(",")
            ));
        }
    }
    // Only a Lua workload takes its budget from --ops/--secs (a phase without one of its
    // own) and its sizes from --users/--items (ctx); specs and logs carry both.
    let lua_run = plan
        .workloads
        .iter()
        .any(|wl| wl.phases().iter().any(|p| p.budget.is_none()));
    if given.bound && !lua_run {
        w.push(
            "--ops and --secs do not apply to specs and operation logs: each group (each log phase) has \
             its own budget"
                .to_string(),
        );
    }
    if given.size && !lua_run {
        w.push(
            "--users and --items do not apply to specs and operation logs: they size Lua workloads \
             (ctx.users, ctx.items); a spec's key space comes from its operations"
                .to_string(),
        );
    }
    if outputs.report_dir.is_some() {
        if given.report {
            w.push("--report is ignored: --report-dir writes every report".to_string());
        }
        return w;
    }
    if plan.timeline.is_some() && outputs.sinks.iter().all(|s| s.kind.sampler == SamplerUse::None) {
        w.push(
            "--timeline samples, but no sink writes the timeline: add --report timeline:FILE, or use --report-dir"
                .to_string(),
        );
    }
    if plan.timeline.is_none() {
        // Sinks that write only samples write nothing without a sample interval.
        let mut idle: Vec<&str> = Vec::new();
        for spec in &outputs.sinks {
            if spec.kind.sampler == SamplerUse::Timeline && !idle.contains(&spec.kind.name) {
                idle.push(spec.kind.name);
            }
        }
        for name in idle {
            w.push(format!(
                "the {name} sink writes rows only when --timeline S names a sample interval"
            ));
        }
    }
    w
}

/// The report header for a plan (probes are added by the caller).
pub fn run_info(plan: &Plan) -> RunInfo {
    RunInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        workloads: plan
            .workloads
            .iter()
            .map(|w| (w.name().to_string(), w.path().to_path_buf()))
            .collect(),
        engines: plan
            .engines
            .iter()
            .map(|e| (e.name.to_string(), (e.version)()))
            .collect(),
        threads: plan.threads.clone(),
        connections: plan.connections.clone(),
        pipeline: plan.pipeline.clone(),
        size_classes: plan.size_classes.clone(),
        batch: plan.batch.clone(),
        budget: plan.budget,
        repeat: plan.repeat,
        seed: plan.params.seed,
        users: plan.params.users,
        items: plan.params.items,
        load_once: plan.load_once,
        settle: plan.settle,
        load_threads: plan.load_threads,
        timeline: plan.timeline.map(|t| t.as_secs_f64()),
        data_dir: plan.data_dir.clone(),
        engine_options: plan
            .engine_options
            .iter()
            .filter(|(_, o)| !o.is_empty())
            .map(|(n, o)| {
                (
                    n.clone(),
                    // Passwords in server URLs never reach a report.
                    o.iter()
                        .map(|(k, v)| (k.to_string(), mask_password(v).into_owned()))
                        .collect(),
                )
            })
            .collect(),
        started_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64(),
        command: std::env::args().map(|a| mask_password(&a).into_owned()).collect(),
        probes: Vec::new(),
        rates: plan.rates.clone(),
        arrival: plan.arrival,
        warmup: plan.warmup,
        slo: plan.slo.clone().map(|s| (s, plan.slo_secs)),
        scale: (plan.segment.is_part() || plan.start_at.is_some()).then(|| crate::report::ScaleInfo {
            segment: plan.segment,
            start_at_unix_ns: plan.start_at.map(crate::run::segment::unix_ns),
            job: plan.job.clone(),
            host: probe::system::hostname().unwrap_or_else(|| "unknown".to_string()),
            clock_sync: probe::clocksync::clock_sync(),
            shared_tag: plan.shared_tag(),
        }),
    }
}
