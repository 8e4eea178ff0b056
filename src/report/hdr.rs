//! `hdr`: HdrHistogram interval logs (the standard `.hlog` text format), one log per
//! grid point, one interval histogram per sample and operation kind, tagged
//! `<phase>.<op>`. Merging every interval of a tag gives the point's exact histogram;
//! merging a time range or several logs is just as exact.
//!
//! With `--timeline S` the intervals are the timeline's; without it, each timed phase
//! of each repeat is one interval. Timestamps count from the point's first interval
//! (its `BaseTime`), so repeats follow one another in one log.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use super::encode::Encoder;
use super::{RunInfo, Sink};
use crate::metrics::op_label;
use crate::result::RunOutcome;
use crate::result::{PointKey, PointResult};
use crate::run::observer::Sample;

/// Where the logs go.
enum Dest {
    /// One `.hlog` file per point in this directory.
    Dir(PathBuf),
    /// Every point's log in sequence on one stream (stdout), each introduced by its
    /// own header.
    Stream(Box<dyn Write + Send>),
}

/// A point's log being written: under a temporary name until the point finishes,
/// so a log under its own name is always a whole point's.
struct PointLog {
    out: BufWriter<File>,
    temp: PathBuf,
    path: PathBuf,
}

impl PointLog {
    /// Flushes the log and gives it its name.
    fn finish(mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()?;
        std::fs::rename(&self.temp, &self.path)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot rename {}: {e}", self.temp.display())))
    }
}

/// Writes interval logs.
pub struct Hdr {
    dest: Dest,
    file: Option<PointLog>,
    current: Option<usize>,
    base_unix: f64,
    version: String,
    encoder: Encoder,
}

impl Hdr {
    /// Logs in `dir` (created if missing), one file per point.
    pub fn to_dir(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(Self::new(Dest::Dir(dir.to_path_buf())))
    }

    /// Every log on one stream.
    pub fn to_stream(out: Box<dyn Write + Send>) -> Self {
        Self::new(Dest::Stream(out))
    }

    fn new(dest: Dest) -> Self {
        Hdr {
            dest,
            file: None,
            current: None,
            base_unix: 0.0,
            version: String::new(),
            encoder: Encoder::default(),
        }
    }

    /// Where the current point's log goes (a function of the two fields, so that the
    /// encoder can be borrowed beside it).
    fn out<'a>(dest: &'a mut Dest, file: &'a mut Option<PointLog>) -> &'a mut dyn Write {
        match (dest, file) {
            (Dest::Dir(_), Some(f)) => &mut f.out,
            (Dest::Stream(s), _) => s.as_mut(),
            (Dest::Dir(_), None) => unreachable!("a point's log is opened before it is written"),
        }
    }

    /// Starts the log of point `seq`.
    fn open(&mut self, seq: usize, key: &PointKey, start_unix: f64) -> io::Result<()> {
        if let Some(f) = self.file.take() {
            f.finish()?;
        }
        if let Dest::Dir(dir) = &self.dest {
            let name = file_name(seq, key);
            let path = dir.join(&name);
            let temp = dir.join(format!(".{name}.partial"));
            let out = BufWriter::new(
                File::create(&temp)
                    .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", temp.display())))?,
            );
            self.file = Some(PointLog { out, temp, path });
        }
        self.current = Some(seq);
        self.base_unix = start_unix;
        let start = UNIX_EPOCH + Duration::from_secs_f64(start_unix.max(0.0));
        let mut sweep = String::new();
        if let Some((param, value)) = &key.sweep {
            sweep = format!(" {param}={value}");
        }
        if let Some(rate) = &key.rate {
            sweep.push_str(&format!(" rate={} ({} arrivals)", rate.text, key.arrival.name()));
        }
        let header = format!(
            "kvmark {} interval histograms, point {seq}: workload={} engine={} ({}) threads={} connections={} pipeline={} batch={}{sweep}\n\
             tags are <phase>.<op>; values are nanoseconds; timestamps are seconds since BaseTime",
            self.version,
            key.workload,
            key.engine,
            key.engine_version,
            key.threads,
            key.connections,
            key.pipeline,
            key.batch
        );
        let mut builder = IntervalLogWriterBuilder::new();
        builder
            .add_comment(&header)
            .with_start_time(start)
            .with_base_time(start);
        let mut out = Self::out(&mut self.dest, &mut self.file);
        builder.begin_log_with(&mut out, &mut self.encoder)?;
        Ok(())
    }
}

/// `003-mixed-skiplist-t2-b1.hlog`, with a sweep value, a rate, an epoch and its mode
/// when the point has them.
pub fn file_name(seq: usize, key: &PointKey) -> String {
    let mut name = format!("{seq:03}-{}-{}-t{}", key.workload, key.engine, key.threads);
    if key.connections != 1 {
        name.push_str(&format!("-c{}", key.connections));
    }
    if key.pipeline != 1 {
        name.push_str(&format!("-p{}", key.pipeline));
    }
    name.push_str(&format!("-b{}", key.batch));
    if let Some((param, value)) = &key.sweep
        && param != "batch"
    {
        name.push_str(&format!("-{param}{value}"));
    }
    if let Some(rate) = &key.rate {
        name.push_str(&format!("-r{}", rate.text));
    }
    if let Some(tag) = &key.epoch {
        name.push_str(&format!("-e{}-{}", tag.number, tag.mode));
    }
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.hlog")
}

impl Sink for Hdr {
    fn begin(&mut self, info: &RunInfo) -> io::Result<()> {
        self.version = info.version.clone();
        Ok(())
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        let Some(rec) = s.latency else {
            return Ok(());
        };
        if rec.is_empty() {
            return Ok(());
        }
        if self.current != Some(s.point_seq) {
            self.open(s.point_seq, s.point, s.start_unix)?;
        }
        let start = Duration::from_secs_f64((s.start_unix - self.base_unix).max(0.0));
        let length = Duration::from_secs_f64((s.elapsed_s - s.start_s).max(0.0));
        // The writer only borrows; building one per sample writes no header.
        let mut out = Self::out(&mut self.dest, &mut self.file);
        let mut log = IntervalLogWriterBuilder::new().begin_log_with(&mut out, &mut self.encoder)?;
        // Tags may not hold spaces or commas.
        let phase = s.phase.replace([' ', ',', '\r', '\n'], "_");
        for (kind, set, hist) in rec
            .used()
            .flat_map(|(kind, stats)| stats.latency_sets().map(move |(set, h)| (kind, set, h)))
        {
            let tag = format!("{phase}.{}", op_label(kind, set));
            let tag = Tag::new(&tag).ok_or_else(|| io::Error::other(format!("bad tag {tag}")))?;
            log.write_histogram(hist, start, length, Some(tag))
                .map_err(|e| io::Error::other(e.to_string()))?;
        }
        Ok(())
    }

    fn point(&mut self, _p: &PointResult) -> io::Result<()> {
        if let Some(f) = self.file.take() {
            f.finish()?;
        }
        // The next sample opens the next point's log.
        self.current = None;
        match &mut self.dest {
            Dest::Stream(s) => s.flush(),
            Dest::Dir(_) => Ok(()),
        }
    }

    fn end(&mut self, _outcome: &RunOutcome) -> io::Result<()> {
        // An interrupted point's log keeps its intervals and its name.
        if let Some(f) = self.file.take() {
            f.finish()?;
        }
        if let Dest::Stream(s) = &mut self.dest {
            s.flush()?;
        }
        Ok(())
    }

    fn wants_intervals(&self) -> bool {
        true
    }
}
