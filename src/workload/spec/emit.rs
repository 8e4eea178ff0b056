//! `kvmark gen`: a spec's operation stream written as an operation log.
//!
//! The log is what one thread would run (thread 0 of 1), generated on the fly into a
//! 1 MiB buffer, so memory stays bounded by the live keys whatever the length. Each
//! phase starts with a `# phase NAME` line unless `--plain` asks for Tectonic's bare
//! format. A time-bounded group writes one pass of its mix (its op_counts).

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use super::SpecWorkload;
use super::generator::Generator;
use crate::workload::oplog;

/// Operations between progress-bar updates.
const TICK: u64 = 1 << 16;

/// What `kvmark gen` was asked to do.
#[derive(Debug, Clone)]
pub struct GenRequest<'a> {
    /// The spec.
    pub spec: &'a Path,
    /// The log file, or `-` for stdout.
    pub output: &'a Path,
    /// The run seed.
    pub seed: u64,
    /// Leave out phase markers.
    pub plain: bool,
}

/// Why `kvmark gen` failed.
#[derive(Debug)]
pub enum GenError {
    /// A bad spec or output path: exit status 2.
    Usage(String),
    /// Generation or writing failed: exit status 1.
    Failed(String),
    /// The reader closed the pipe (`kvmark gen ... -o - | head`): its choice, not a
    /// failure. Never returned by [`generate`].
    Closed,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenSummary {
    /// Operation lines.
    pub ops: u64,
    /// Operations that found no live key and wrote nothing.
    pub skipped: u64,
}

/// Generates the log of `req.spec` into `req.output`.
pub fn generate(req: &GenRequest<'_>) -> Result<GenSummary, GenError> {
    let wl = SpecWorkload::open(req.spec).map_err(|e| GenError::Usage(e.to_string()))?;
    let to_stdout = req.output == Path::new("-");
    let sink: Box<dyn Write> =
        if to_stdout {
            Box::new(io::stdout().lock())
        } else {
            Box::new(File::create(req.output).map_err(|e| {
                GenError::Usage(format!("-o {}: cannot create the log file: {e}", req.output.display()))
            })?)
        };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let plan = Arc::clone(wl.plan());
    let passes: Vec<u64> = plan
        .sections
        .iter()
        .flat_map(|s| &s.groups)
        .map(|g| g.total())
        .collect();
    let bar = if io::stderr().is_terminal() {
        let bar = ProgressBar::new(passes.iter().sum());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ops, {per_sec}, eta {eta}")
                .expect("static template")
                .progress_chars("=> "),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let write_err = |e: io::Error| match e.kind() {
        io::ErrorKind::BrokenPipe => GenError::Closed,
        _ => GenError::Failed(format!("writing {}: {e}", req.output.display())),
    };
    let mut stream = Generator::new(plan, 0, 1, req.seed);
    let mut summary = GenSummary { ops: 0, skipped: 0 };
    let result = (|| -> Result<(), GenError> {
        for (phase, &pass) in passes.iter().enumerate() {
            stream.enter(phase).map_err(GenError::Failed)?;
            bar.set_message(stream.phase_name(phase).to_string());
            if !req.plain {
                oplog::write_phase(&mut out, stream.phase_name(phase)).map_err(write_err)?;
            }
            let mut n = 0;
            while n < pass {
                let Some((op, plain)) = stream.next_op_plain().map_err(GenError::Failed)? else {
                    break;
                };
                oplog::write_op_with(&mut out, &op, plain).map_err(write_err)?;
                n += 1;
                if n % TICK == 0 {
                    bar.inc(TICK);
                }
            }
            bar.inc(n % TICK);
            summary.ops += n;
        }
        out.flush().map_err(write_err)
    })();
    bar.finish_and_clear();
    summary.skipped = stream.skipped();
    summary.ops -= summary.skipped;
    match result {
        Err(GenError::Closed) => return Ok(summary),
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "kvmark gen: {} operations to {} in {secs:.2} s ({:.0} ops/s)",
        summary.ops,
        if to_stdout {
            "stdout".to_string()
        } else {
            req.output.display().to_string()
        },
        summary.ops as f64 / secs.max(1e-9)
    );
    if summary.skipped > 0 {
        eprintln!(
            "kvmark gen: warning: {} operation(s) found no live key and were left out",
            summary.skipped
        );
    }
    Ok(summary)
}
