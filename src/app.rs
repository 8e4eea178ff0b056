//! Dispatch: turns parsed flags into a run or a subcommand, and a run into an exit
//! status.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::cli::{Cli, Command, RunArgs};
use crate::engine;
use crate::report::console::Console;
use crate::report::{Reporter, RunInfo};
use crate::run::{self, Plan};

/// Every point succeeded.
pub const EXIT_OK: u8 = 0;
/// A point failed, saw engine errors, or a report could not be written.
pub const EXIT_FAILED: u8 = 1;
/// Bad flags, config or workload files.
pub const EXIT_USAGE: u8 = 2;
/// Stopped by Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs the parsed command line.
pub fn main(cli: Cli) -> ExitCode {
    match cli.command {
        Some(Command::Engines) => {
            print!("{}", engines_listing());
            ExitCode::from(EXIT_OK)
        }
        None => ExitCode::from(run_benchmark(cli.run)),
    }
}

/// `kvmark engines`.
pub fn engines_listing() -> String {
    let mut s = String::new();
    for e in engine::registry() {
        let kind = if e.persistent {
            "persistent (needs --data-dir)"
        } else {
            "in-memory"
        };
        s.push_str(&format!("{}\n", e.name));
        s.push_str(&format!("  {}\n", e.description));
        s.push_str(&format!("  storage:  {kind}\n"));
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
        let knobs = (e.knobs)();
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
    let abort = Arc::new(AtomicBool::new(false));
    // First Ctrl-C: stop cleanly. A second one while stopping: exit at once.
    let handlers = signal_hook::flag::register_conditional_shutdown(
        signal_hook::consts::SIGINT,
        i32::from(EXIT_INTERRUPTED),
        Arc::clone(&abort),
    )
    .and_then(|_| signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&abort)));
    if let Err(e) = handlers {
        eprintln!("kvmark: warning: cannot install the Ctrl-C handler: {e}");
    }

    let plan = match args.into_plan() {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("kvmark: error: {e}");
            return EXIT_USAGE;
        }
    };
    let mut reporter = Reporter::new();
    reporter.add("console", Box::new(Console::new(Box::new(std::io::stdout()))));
    reporter.begin(&run_info(&plan));
    let outcome = run::execute(&plan, &mut reporter, &abort);
    reporter.end(&outcome);

    for e in reporter.errors() {
        eprintln!("kvmark: error: {e}");
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
    if outcome.bad_points > 0 || !reporter.errors().is_empty() || !outcome.other_errors.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// The report header for a plan.
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
        batch: plan.batch.clone(),
        budget: plan.budget,
        repeat: plan.repeat,
        seed: plan.params.seed,
        users: plan.params.users,
        items: plan.params.items,
        seed_once: plan.seed_once,
    }
}
