//! `timeline`: the live samples in long format, one row per metric per sample, written
//! as they are taken. Produces rows only when `--timeline S` names an interval.

use std::io::{self, Write};

use super::{RunInfo, Sink, tsv_field};
use crate::result::PointResult;
use crate::result::RunOutcome;
use crate::run::observer::Sample;

/// Every column, in order. The first nine are keybench's.
pub const COLUMNS: [&str; 17] = [
    "workload",
    "engine",
    "threads",
    "sweep_param",
    "sweep_value",
    "phase",
    "elapsed_s",
    "metric",
    "value",
    // kvmark's own, after keybench's.
    "batch",
    "repeat",
    "interval_s",
    "rate",
    "measurement",
    "connections",
    "pipeline",
    // The interval's end as Unix time, which `kvmark merge` aligns segments by.
    "unix_s",
];

/// Writes timeline rows to any writer.
pub struct Timeline {
    out: Box<dyn Write + Send>,
}

impl Timeline {
    /// A timeline sink writing to `out`.
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Timeline { out }
    }
}

/// A metric value: whole numbers without a fraction, others to 3 decimals.
pub fn value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

impl Sink for Timeline {
    fn begin(&mut self, _info: &RunInfo) -> io::Result<()> {
        writeln!(self.out, "{}", COLUMNS.join("\t"))?;
        self.out.flush()
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        if s.metrics.is_empty() {
            return Ok(());
        }
        let key = s.point;
        let (param, sweep_value) = key.sweep_columns();
        let lead = format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.3}",
            tsv_field(&key.workload),
            tsv_field(&key.engine),
            key.threads,
            tsv_field(&param),
            tsv_field(&sweep_value),
            tsv_field(s.phase),
            s.elapsed_s
        );
        let rate = key
            .rate
            .as_ref()
            .map_or_else(|| "-".to_string(), |r| tsv_field(&r.text));
        let tail = format!(
            "{}\t{}\t{:.3}\t{rate}\t{}\t{}\t{}\t{:.6}",
            key.batch,
            s.repeat,
            s.elapsed_s - s.start_s,
            s.point_seq,
            key.connections,
            key.pipeline,
            s.start_unix + (s.elapsed_s - s.start_s)
        );
        for (name, v) in s.metrics {
            writeln!(self.out, "{lead}\t{}\t{}\t{tail}", tsv_field(name), value(*v))?;
        }
        self.out.flush()
    }

    fn point(&mut self, _p: &PointResult) -> io::Result<()> {
        Ok(())
    }

    fn end(&mut self, _outcome: &RunOutcome) -> io::Result<()> {
        self.out.flush()
    }

    fn wants_timeline(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(value(12.0), "12");
        assert_eq!(value(0.456789), "0.457");
        assert_eq!(value(1e16), "10000000000000000.000");
    }
}
