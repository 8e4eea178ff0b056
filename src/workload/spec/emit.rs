//! `kvmark gen`: a spec's operation stream written as an operation log.
//!
//! The log is what one thread would run (thread 0 of 1), generated on the fly into a
//! 1 MiB buffer, so memory stays bounded by the live keys whatever the length. Each
//! phase starts with a `# phase NAME` line unless `--plain` asks for Tectonic's bare
//! format. A time-bounded group writes one pass of its mix (its op_counts).
//!
//! Key lifetimes need a clock, which a log does not have, so gen keeps a virtual one:
//! unit n of a phase with rate r is issued at the phase's start + n / r (constant
//! arrivals, phases back to back, no service time), and the delete of an expired key is
//! written as a `D` line before the first unit due at or after its expiry, which is
//! where a paced run issues it. Every group from the first one with lifetimes on must
//! therefore have a `rate`; gen refuses the spec otherwise.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use super::SpecWorkload;
use super::generator::{Generator, thread_counts};
use super::plan::{Plan, SpecOp};
use crate::kv::expiry::Expiries;
use crate::workload::op::Op;
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
    /// The threads whose streams to write, as global indices `first..first + count`
    /// of `of` (a segment's share of a scaled-out run); `0, 1, 1` is the one stream
    /// of a single thread.
    pub threads: ThreadSlice,
}

/// Threads `first..first + count` of a run of `of` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadSlice {
    /// The first thread's global index.
    pub first: usize,
    /// How many threads.
    pub count: usize,
    /// Threads of the whole run.
    pub of: usize,
}

impl ThreadSlice {
    /// The single stream of thread 0 of 1.
    pub const ONE: ThreadSlice = ThreadSlice {
        first: 0,
        count: 1,
        of: 1,
    };
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
    /// Point deletes of expired keys, written besides the operations.
    pub expired: u64,
}

/// The virtual clock of a spec with key lifetimes and the deletes it owes (see the
/// module notes).
struct Lifetimes {
    expiries: Expiries,
    /// Nanoseconds between units of each phase (every phase from the first with
    /// lifetimes on has a rate; earlier ones owe no deletes, so their time is 0).
    steps: Vec<f64>,
    /// When the current phase started, in nanoseconds.
    start: f64,
    expired: u64,
}

impl Lifetimes {
    /// The clock of `plan`, or an error naming the first group that has no rate but
    /// runs while keys may have lifetimes pending.
    fn new(plan: &Plan) -> Result<Lifetimes, String> {
        let mut first: Option<&str> = None;
        let mut steps = Vec::new();
        for g in plan.sections.iter().flat_map(|s| &s.groups) {
            if first.is_none() && g.ops.iter().any(|o| o.kind == SpecOp::Insert && o.lifetime.is_some()) {
                first = Some(&g.path);
            }
            match (first, &g.rate) {
                (Some(_), Some(r)) if r.wave.is_some() => {
                    return Err(format!(
                        "{}.rate: kvmark gen writes the deletes of key lifetimes on constant rate schedules; \
                         this group's rate is a sine wave (run the spec instead, or give a constant rate)",
                        g.path
                    ));
                }
                (_, Some(r)) => steps.push(1e9 / r.per_sec),
                (None, None) => steps.push(0.0),
                (Some(f), None) => {
                    return Err(format!(
                        "{}: kvmark gen writes the deletes of key lifetimes where they fall due on the groups' \
                         rate schedules (a log has no clock), so every group from {f} on needs a rate",
                        g.path
                    ));
                }
            }
        }
        Ok(Lifetimes {
            expiries: Expiries::default(),
            steps,
            start: 0.0,
            expired: 0,
        })
    }

    /// Like [`write_units`], with the deletes that fall due before each unit, and the
    /// clock moved past the phase.
    fn write_units(
        &mut self,
        phase: usize,
        stream: &mut Generator,
        out: &mut impl Write,
        pass: u64,
        bar: &ProgressBar,
        write_err: &impl Fn(io::Error) -> GenError,
    ) -> Result<u64, GenError> {
        let mut n = 0;
        while n < pass {
            let now = (self.start + n as f64 * self.steps[phase]) as u64;
            self.expire(now, out, stream).map_err(write_err)?;
            let Some((op, plain)) = stream.next_op_plain().map_err(GenError::Failed)? else {
                break;
            };
            oplog::write_op_with(out, &op, plain).map_err(write_err)?;
            self.schedule(now, stream);
            n += 1;
            if n % TICK == 0 {
                bar.inc(TICK);
            }
        }
        self.start += n as f64 * self.steps[phase];
        Ok(n)
    }

    /// Writes the deletes due at `now` and takes their keys out of the live set.
    fn expire(&mut self, now: u64, out: &mut impl Write, stream: &mut Generator) -> io::Result<()> {
        while let Some((key, slot, _)) = self.expiries.pop_due(now) {
            let written = oplog::write_op(out, &Op::Delete { key: &key });
            self.expiries.release(slot, key);
            written?;
            self.expired += 1;
        }
        for tag in self.expiries.drain_expired() {
            stream.expired(tag);
        }
        Ok(())
    }

    /// Schedules the delete of the key the last operation inserted, if it has a lifetime.
    fn schedule(&mut self, now: u64, stream: &mut Generator) {
        if let Some((key, after, tag)) = stream.take_lifetime() {
            let due = now.saturating_add(u64::try_from(after.as_nanos()).unwrap_or(u64::MAX));
            self.expiries.schedule(key, due, Some(tag));
        }
    }
}

/// `kvmark gen --threads T` (and `--segment I/N`): the streams of the requested
/// threads, each phase's `# phase NAME` line followed by every thread's operations of
/// that phase in thread order. Together the slices of all segments hold exactly the
/// lines one process of all their threads writes, so a scaled-out run's work can be
/// checked as a multiset of lines.
fn generate_threads(req: &GenRequest<'_>, wl: &SpecWorkload) -> Result<GenSummary, GenError> {
    let plan = Arc::clone(wl.plan());
    if plan.has_lifetimes() {
        return Err(GenError::Usage(format!(
            "{}: gen writes a spec with key lifetimes as one stream only (its expiries follow one virtual clock); \
             leave out --threads and --segment",
            req.spec.display()
        )));
    }
    let write_err = |e: io::Error| match e.kind() {
        io::ErrorKind::BrokenPipe => GenError::Closed,
        _ => GenError::Failed(format!("writing {}: {e}", req.output.display())),
    };
    let sink: Box<dyn Write> =
        if req.output == Path::new("-") {
            Box::new(io::stdout().lock())
        } else {
            Box::new(File::create(req.output).map_err(|e| {
                GenError::Usage(format!("-o {}: cannot create the log file: {e}", req.output.display()))
            })?)
        };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let t = req.threads;
    let mut streams: Vec<Generator> = (t.first..t.first + t.count)
        .map(|g| Generator::new(Arc::clone(&plan), g, t.of, req.seed))
        .collect();
    // Each thread's share of every group's counts (of one pass of a time-bounded
    // group's mix, as the single stream writes).
    let groups: Vec<Vec<u64>> = plan
        .sections
        .iter()
        .flat_map(|s| &s.groups)
        .map(|g| g.ops.iter().map(|o| o.count).collect())
        .collect();
    let bar = ProgressBar::hidden();
    let mut summary = GenSummary {
        ops: 0,
        skipped: 0,
        expired: 0,
    };
    let result = (|| -> Result<(), GenError> {
        for (phase, counts) in groups.iter().enumerate() {
            if !req.plain {
                oplog::write_phase(&mut out, streams[0].phase_name(phase)).map_err(write_err)?;
            }
            for (i, stream) in streams.iter_mut().enumerate() {
                stream.enter(phase).map_err(GenError::Failed)?;
                let pass = thread_counts(counts, t.first + i, t.of).iter().sum();
                summary.ops += write_units(stream, &mut out, pass, &bar, &write_err)?;
            }
        }
        out.flush().map_err(write_err)
    })();
    summary.skipped = streams.iter().map(Generator::skipped).sum();
    summary.ops -= summary.skipped;
    match result {
        Err(GenError::Closed) | Ok(()) => Ok(summary),
        Err(e) => Err(e),
    }
}

/// Writes up to `pass` operations of the current phase (fewer when the stream ends);
/// returns how many. A spec without lifetimes needs nothing else per operation.
fn write_units(
    stream: &mut Generator,
    out: &mut impl Write,
    pass: u64,
    bar: &ProgressBar,
    write_err: &impl Fn(io::Error) -> GenError,
) -> Result<u64, GenError> {
    let mut n = 0;
    while n < pass {
        let Some((op, plain)) = stream.next_op_plain().map_err(GenError::Failed)? else {
            break;
        };
        oplog::write_op_with(out, &op, plain).map_err(write_err)?;
        n += 1;
        if n % TICK == 0 {
            bar.inc(TICK);
        }
    }
    Ok(n)
}

/// Generates the log of `req.spec` into `req.output`.
pub fn generate(req: &GenRequest<'_>) -> Result<GenSummary, GenError> {
    let wl = SpecWorkload::open(req.spec).map_err(|e| GenError::Usage(e.to_string()))?;
    if req.threads != ThreadSlice::ONE {
        return generate_threads(req, &wl);
    }
    let to_stdout = req.output == Path::new("-");
    let sink: Box<dyn Write> =
        if to_stdout {
            Box::new(io::stdout().lock())
        } else {
            Box::new(File::create(req.output).map_err(|e| {
                GenError::Usage(format!("-o {}: cannot create the log file: {e}", req.output.display()))
            })?)
        };
    let plan = Arc::clone(wl.plan());
    let mut lifetimes = if plan.has_lifetimes() {
        let l = Lifetimes::new(&plan).map_err(|m| GenError::Usage(format!("{}: {m}", req.spec.display())))?;
        Some(l)
    } else {
        None
    };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let passes: Vec<u64> = plan
        .sections
        .iter()
        .flat_map(|s| &s.groups)
        .map(|g| g.total())
        .collect();
    let bar = if io::stderr().is_terminal() {
        let bar = ProgressBar::new(passes.iter().sum());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:40}] {human_pos}/{human_len} ops, {per_sec:0}, eta {eta}")
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
    let mut summary = GenSummary {
        ops: 0,
        skipped: 0,
        expired: 0,
    };
    let result = (|| -> Result<(), GenError> {
        for (phase, &pass) in passes.iter().enumerate() {
            let section = stream.section();
            stream.enter(phase).map_err(GenError::Failed)?;
            if let Some(l) = &mut lifetimes
                && stream.section() != section
            {
                // A new live set: the old section's keys still expire, but untracked.
                l.expiries.forget_tags();
            }
            bar.set_message(stream.phase_name(phase).to_string());
            if !req.plain {
                oplog::write_phase(&mut out, stream.phase_name(phase)).map_err(write_err)?;
            }
            let n = match &mut lifetimes {
                None => write_units(&mut stream, &mut out, pass, &bar, &write_err)?,
                Some(l) => l.write_units(phase, &mut stream, &mut out, pass, &bar, &write_err)?,
            };
            bar.inc(n % TICK);
            summary.ops += n;
        }
        out.flush().map_err(write_err)
    })();
    bar.finish_and_clear();
    summary.skipped = stream.skipped();
    summary.ops -= summary.skipped;
    summary.expired = lifetimes.as_ref().map_or(0, |l| l.expired);
    match result {
        Err(GenError::Closed) => return Ok(summary),
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    let secs = started.elapsed().as_secs_f64();
    let expired = match summary.expired {
        0 => String::new(),
        n => format!(" and {n} deletes of expired keys"),
    };
    eprintln!(
        "kvmark gen: {} operations{expired} to {} in {secs:.2} s ({:.0} ops/s)",
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
