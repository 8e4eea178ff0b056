//! Operation logs as workloads (`kvmark replay FILE`, or any `.ops` file): a trace
//! replayer with the same metrics as every other workload.
//!
//! The log is checked line by line when it is opened, so a bad line stops the run
//! before anything is timed (naming the file and line). Each `# phase NAME` marker
//! starts a phase; a log without markers is one phase, `replay`.
//!
//! Threads: within each phase, the i-th operation goes to thread i mod T. That split
//! is deterministic and matches the runner's even split of the phase's budget, but
//! with more than one thread an operation may overtake an earlier one on the same key
//! (a read before the insert it followed); per-key order holds with one thread. Each
//! thread streams the file itself, so memory does not grow with the log.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::oplog::{Entry, Line};
use super::{Budget, PhasePlan, Program, ThreadCtx, Workload, WorkloadError};
use crate::kv::Kv;

/// Read buffer of each reader.
const READ_BUF: usize = 1 << 20;

/// A validated operation log.
#[derive(Debug)]
pub struct ReplayWorkload {
    path: PathBuf,
    name: String,
    /// Phase names and their operation counts.
    phases: Vec<(String, u64)>,
    /// True when the first phase is opened by a marker (not implicit).
    starts_with_marker: bool,
}

/// Opens `path` as an operation log, whatever its extension.
pub fn open_workload(path: &Path) -> Result<Arc<dyn Workload>, WorkloadError> {
    Ok(Arc::new(ReplayWorkload::open(path)?))
}

impl ReplayWorkload {
    /// Reads the whole log once, checking every line and counting each phase.
    pub fn open(path: &Path) -> Result<ReplayWorkload, WorkloadError> {
        let file = File::open(path)
            .map_err(|e| WorkloadError::Invalid(format!("cannot read operation log {}: {e}", path.display())))?;
        let mut reader = BufReader::with_capacity(READ_BUF, file);
        let mut buf = Vec::new();
        let mut line = Line::default();
        let mut phases: Vec<(String, u64)> = Vec::new();
        let mut starts_with_marker = false;
        let mut lineno = 0u64;
        loop {
            buf.clear();
            let n = read_line(&mut reader, &mut buf)
                .map_err(|e| WorkloadError::Invalid(format!("{}: {e}", path.display())))?;
            if n == 0 {
                break;
            }
            lineno += 1;
            let text = buf.strip_suffix(b"\n").unwrap_or(&buf);
            let entry = line
                .parse(text)
                .map_err(|e| WorkloadError::Invalid(format!("{}:{lineno}: {e}", path.display())))?;
            match entry {
                Entry::Blank => {}
                Entry::Phase => {
                    if phases.is_empty() {
                        starts_with_marker = true;
                    }
                    phases.push((line.name.clone(), 0));
                }
                _ => {
                    if phases.is_empty() {
                        phases.push(("replay".to_string(), 0));
                    }
                    phases.last_mut().expect("a phase is open").1 += 1;
                }
            }
        }
        if phases.iter().all(|p| p.1 == 0) {
            return Err(WorkloadError::Invalid(format!(
                "{}: the operation log holds no operations",
                path.display()
            )));
        }
        Ok(ReplayWorkload {
            path: path.to_path_buf(),
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            phases,
            starts_with_marker,
        })
    }
}

impl Workload for ReplayWorkload {
    fn name(&self) -> &str {
        &self.name
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn has_load(&self) -> bool {
        false
    }

    fn epoch_layout(&self) -> Result<super::epochs::EpochLayout, String> {
        Err(format!(
            "{}: an operation log replays as written and cannot run in epochs",
            self.path.display()
        ))
    }

    fn phases(&self) -> Vec<PhasePlan> {
        self.phases
            .iter()
            .map(|(name, n)| PhasePlan {
                rate: None,
                name: name.clone(),
                budget: Some(Budget::Ops(*n)),
            })
            .collect()
    }

    fn program(&self, ctx: &ThreadCtx, kv: Kv) -> Result<Box<dyn Program>, WorkloadError> {
        let file = File::open(&self.path)
            .map_err(|e| WorkloadError::Runtime(format!("cannot read operation log {}: {e}", self.path.display())))?;
        Ok(Box::new(ReplayProgram {
            path: self.path.clone(),
            reader: BufReader::with_capacity(READ_BUF, file),
            buf: Vec::new(),
            line: Line::default(),
            lineno: 0,
            phase: if self.starts_with_marker { -1 } else { 0 },
            index: 0,
            thread: ctx.thread as u64,
            threads: ctx.threads as u64,
            kv,
        }))
    }
}

/// One thread's reader.
struct ReplayProgram {
    path: PathBuf,
    reader: BufReader<File>,
    buf: Vec<u8>,
    line: Line,
    lineno: u64,
    /// The phase the reader is in (-1 before the first marker).
    phase: i64,
    /// Operations of the current phase read so far (all threads').
    index: u64,
    thread: u64,
    threads: u64,
    kv: Kv,
}

/// What the next line holds, for the reader.
enum Next {
    End,
    Marker,
    Op,
}

/// Appends the next line, newline included, to `buf` and returns its length (0 at the
/// end), as `read_until(b'\n')` does, finding the newline with memchr: std's portable
/// search cost a replayed operation about 200 instructions (bench/callgrind.sh).
pub(super) fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut n = 0;
    loop {
        let avail = match reader.fill_buf() {
            Ok(avail) => avail,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let (used, done) = match memchr::memchr(b'\n', avail) {
            Some(i) => (i + 1, true),
            None => (avail.len(), avail.is_empty()),
        };
        buf.extend_from_slice(&avail[..used]);
        reader.consume(used);
        n += used;
        if done {
            return Ok(n);
        }
    }
}

impl ReplayProgram {
    fn read(&mut self) -> Result<Next, WorkloadError> {
        loop {
            self.buf.clear();
            let n = read_line(&mut self.reader, &mut self.buf)
                .map_err(|e| WorkloadError::Runtime(format!("{}: {e}", self.path.display())))?;
            if n == 0 {
                return Ok(Next::End);
            }
            self.lineno += 1;
            match self.buf.first() {
                Some(b'\n') | Some(b'\r') => continue,
                Some(b'#') if self.buf.starts_with(b"# phase ") => return Ok(Next::Marker),
                Some(b'#') => continue,
                _ => return Ok(Next::Op),
            }
        }
    }
}

impl Program for ReplayProgram {
    fn load(&mut self) -> Result<(), WorkloadError> {
        Ok(())
    }

    fn run(&mut self, phase: usize, _first_iter: u64, n: u64) -> Result<u64, WorkloadError> {
        let phase = phase as i64;
        // Skip what is left of earlier phases (other threads' operations).
        while self.phase < phase {
            match self.read()? {
                Next::End => return Ok(0),
                Next::Marker => {
                    self.phase += 1;
                    self.index = 0;
                }
                Next::Op => {}
            }
        }
        let mut done = 0;
        while done < n {
            match self.read()? {
                Next::End => break,
                Next::Marker => {
                    self.phase += 1;
                    self.index = 0;
                    break;
                }
                Next::Op => {
                    let mine = self.index % self.threads == self.thread;
                    self.index += 1;
                    if !mine {
                        continue;
                    }
                    // The unit boundary: expiries and, when paced, the wait for the intended start.
                    if !self.kv.begin_unit() {
                        break;
                    }
                    let text = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
                    let entry = self
                        .line
                        .parse(text)
                        .map_err(|e| WorkloadError::Runtime(format!("{}:{}: {e}", self.path.display(), self.lineno)))?;
                    if let Some(op) = self.line.op(entry) {
                        op.execute(&mut self.kv);
                    }
                    done += 1;
                }
            }
        }
        Ok(done)
    }

    fn kv(&mut self) -> &mut Kv {
        &mut self.kv
    }

    fn finish(self: Box<Self>) -> Kv {
        self.kv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_line_reads_what_read_until_reads() {
        let text: &[u8] = b"P a\n\nI key value\nlast without newline";
        // A buffer smaller than a line makes lines span refills.
        for cap in [1, 3, 64] {
            let (mut ours, mut std_) = (BufReader::with_capacity(cap, text), BufReader::with_capacity(cap, text));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            loop {
                a.clear();
                b.clear();
                let n = read_line(&mut ours, &mut a).unwrap();
                assert_eq!(n, std_.read_until(b'\n', &mut b).unwrap(), "capacity {cap}");
                assert_eq!(a, b, "capacity {cap}");
                if n == 0 {
                    break;
                }
            }
        }
    }
}
