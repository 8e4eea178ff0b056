//! Live progress on stderr, once a second, only when stderr is a terminal.
//!
//! Each update is its own line, so a long point scrolls like a log; nothing is
//! written when stderr is piped or redirected, so it never mixes into saved output.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use super::crew::{Live, Monitor, Step, StepOutcome};
use crate::workload::Budget;

/// The progress monitor for one seed or one measurement.
pub struct Progress {
    enabled: bool,
    label: String,
    last_units: u64,
    last_elapsed: Duration,
}

impl Progress {
    fn new(label: String) -> Self {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            label,
            last_units: 0,
            last_elapsed: Duration::ZERO,
        }
    }

    /// Progress of a seed phase: "seeding mixed on skiplist with 2 threads ... done (1.8s)".
    pub fn loading(workload: &str, engine: &str, threads: usize) -> Self {
        let plural = if threads == 1 { "" } else { "s" };
        Progress::new(format!("seeding {workload} on {engine} with {threads} thread{plural}"))
    }

    /// Progress of a timed measurement, labelled like "mixed skiplist t2 b1".
    pub fn running(label: &str) -> Self {
        Progress::new(label.to_string())
    }
}

impl Monitor for Progress {
    fn step_started(&mut self, step: &Step, _live: &Live) {
        self.last_units = 0;
        self.last_elapsed = Duration::ZERO;
        if self.enabled && matches!(step, Step::Load) {
            eprint!("{} ... ", self.label);
            let _ = std::io::stderr().flush();
        }
    }

    fn tick(&mut self, step: &Step, elapsed: Duration, live: &Live) {
        let Step::Run { budget, name, .. } = step else {
            return;
        };
        if !self.enabled {
            return;
        }
        let units = live.units();
        let dt = (elapsed - self.last_elapsed).as_secs_f64();
        let rate = if dt > 0.0 {
            (units - self.last_units) as f64 / dt
        } else {
            0.0
        };
        self.last_units = units;
        self.last_elapsed = elapsed;
        let phase = if name == "run" {
            String::new()
        } else {
            format!(" [{name}]")
        };
        let secs = elapsed.as_secs_f64();
        match budget {
            Budget::Secs(total) => {
                eprintln!("{}{phase} {secs:.1}/{total}s {rate:.0} wu/s", self.label)
            }
            Budget::Ops(total) => {
                let pct = if *total > 0 {
                    units as f64 * 100.0 / *total as f64
                } else {
                    100.0
                };
                eprintln!(
                    "{}{phase} {secs:.1}s {rate:.0} wu/s {pct:.0}% ({units}/{total})",
                    self.label
                );
            }
        }
    }

    fn step_finished(&mut self, step: &Step, elapsed: Duration, _outcome: &StepOutcome) {
        if self.enabled && matches!(step, Step::Load) {
            eprintln!("done ({:.1}s)", elapsed.as_secs_f64());
        }
    }
}
