//! What a run produces: one [`PointResult`] per grid point, reduced over repeats,
//! with its SLO search ([`slo`]) and growing-value figures ([`epochs`]).
//!
//! A leaf below the runner that makes results and the reporters that read them:
//! results name the workload's sweep values and epoch modes and the pacing rate, so
//! they sit above `workload` and `kv`, and nothing here runs anything.

pub mod checks;
pub mod epochs;
pub mod intervals;
pub mod slo;
pub mod trend;

use std::path::PathBuf;

use self::epochs::{EpochInfo, EpochTag};
use self::slo::SloReport;
use crate::kv::pace::{Arrival, Rate};
use crate::metrics::{LatencySet, LatencySummary, OpKind, QUANTILES, Recorder};
use crate::workload::SweepValue;

/// How a whole run went.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// One row per finished point.
    pub rows: Vec<SummaryRow>,
    /// Ctrl-C stopped the run.
    pub interrupted: bool,
    /// Points that failed or saw engine errors.
    pub bad_points: usize,
    /// Points that failed a self-check ([`checks`]).
    pub checked_points: usize,
    /// Errors that happened outside any point (closing or removing a store).
    pub other_errors: Vec<String>,
}

/// Identifies one cell of the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct PointKey {
    /// Workload name (from the file's `name`).
    pub workload: String,
    /// The workload file.
    pub workload_path: PathBuf,
    /// Engine name.
    pub engine: String,
    /// Engine library version.
    pub engine_version: String,
    /// Worker threads.
    pub threads: usize,
    /// Connections per thread (`--connections`), each a worker with its own session.
    pub connections: usize,
    /// Requests in flight on each connection (`--pipeline`), each a worker of its own
    /// sharing the connection.
    pub pipeline: usize,
    /// Batch size (1 for workloads that do not batch).
    pub batch: usize,
    /// Whether the workload sweeps the batch size.
    pub batched: bool,
    /// The workload sweep's parameter and value, if it declares one.
    pub sweep: Option<(String, SweepValue)>,
    /// Open loop: the target rate (None: closed loop).
    pub rate: Option<Rate>,
    /// Open loop: how units arrive on the schedule (meaningful only with a rate).
    pub arrival: Arrival,
    /// Growing values: the epoch and mode this point measures.
    pub epoch: Option<EpochTag>,
}

impl PointKey {
    /// The sweep column pair keybench reports: the workload's own sweep, else the
    /// batch size for batched workloads, else keybench's "no sweep": an empty
    /// parameter and the value 1.
    pub fn sweep_columns(&self) -> (String, String) {
        match (&self.sweep, self.batched) {
            (Some((param, value)), _) => (param.clone(), value.to_string()),
            (None, true) => ("batch".to_string(), self.batch.to_string()),
            (None, false) => (String::new(), "1".to_string()),
        }
    }

    /// A compact label for progress lines and messages: "mixed skiplist t2 b1".
    pub fn label(&self) -> String {
        let mut s = format!("{} {} t{}", self.workload, self.engine, self.threads);
        if self.connections != 1 {
            s.push_str(&format!(" c{}", self.connections));
        }
        if self.pipeline != 1 {
            s.push_str(&format!(" p{}", self.pipeline));
        }
        s.push_str(&format!(" b{}", self.batch));
        if let Some((param, value)) = &self.sweep
            && param != "batch"
        {
            s.push_str(&format!(" {param}={value}"));
        }
        if let Some(rate) = &self.rate {
            s.push_str(&format!(" {}", rate.short()));
        }
        if let Some(tag) = &self.epoch {
            s.push_str(&format!(" e{} {}", tag.number, tag.mode));
        }
        s
    }
}

/// How a point ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PointStatus {
    /// Every repeat completed.
    Ok,
    /// A repeat failed; the message names the file, line and point.
    Failed(String),
    /// Ctrl-C stopped it; figures cover what ran.
    Interrupted,
}

impl PointStatus {
    /// Short word for tables.
    pub fn word(&self) -> &'static str {
        match self {
            PointStatus::Ok => "ok",
            PointStatus::Failed(_) => "failed",
            PointStatus::Interrupted => "interrupted",
        }
    }
}

/// The load phase of a store (its `seed` in reports).
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// Loader threads.
    pub threads: usize,
    /// Wall time of the load, nanoseconds.
    pub wall_ns: u64,
    /// Keys written (put calls plus mput keys plus appends).
    pub keys: u64,
    /// True when the store was seeded once and shared by several points.
    pub shared: bool,
}

impl LoadResult {
    /// Keys written per second.
    pub fn keys_per_sec(&self) -> f64 {
        per_sec(self.keys, self.wall_ns)
    }
}

/// One timed phase of one repeat.
#[derive(Debug, Clone)]
pub struct PhaseRun {
    /// Phase name ("run" for Lua workloads).
    pub name: String,
    /// When its measured time began, Unix time in nanoseconds (it ends `wall_ns`
    /// later); 0 when unknown.
    pub start_unix_ns: u64,
    /// Wall time from the common start to the last worker's end, nanoseconds.
    pub wall_ns: u64,
    /// Units (run() calls or spec operations) completed after the warm-up.
    pub units: u64,
    /// Primitive operations completed after the warm-up.
    pub prim_ops: u64,
    /// Units the warm-up excluded (run, not reported, not in `wall_ns`).
    pub warmup_units: u64,
    /// Key and value bytes written after the warm-up (put, mput, append).
    pub bytes: u64,
    /// Its timeline intervals after the warm-up, for the stationarity check (empty
    /// without `--timeline`, and for a merged scale-out run).
    pub trend: Vec<trend::IntervalFigures>,
}

/// One repeat of a point.
#[derive(Debug, Clone)]
pub struct RepeatRun {
    /// Phases in order.
    pub phases: Vec<PhaseRun>,
    /// Units done by each thread (all phases), in thread order.
    pub thread_units: Vec<u64>,
    /// The load of this repeat's store (None without a load phase).
    pub load: Option<LoadResult>,
    /// Each operation kind's latency in this repeat alone, its phases merged: the
    /// per-repeat values `kvmark compare` tests latency changes on. None when not
    /// known: a merged scale-out run whose segments keep none, or whose logs' intervals
    /// could not be given to repeats exactly.
    pub latency: Option<Vec<RepeatLatency>>,
    /// kvmark's own CPU use over this repeat's timed phases (None where not
    /// measured: a merged scale-out run).
    pub client_cpu: Option<ClientCpu>,
}

/// One operation kind's latency in one repeat.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatLatency {
    /// The kind.
    pub kind: OpKind,
    /// Service time (the engine call).
    pub service: LatencySummary,
    /// Response time from each unit's intended start (open loop only).
    pub response: Option<LatencySummary>,
}

impl RepeatLatency {
    /// Every kind used in `recs`, one repeat's recorders (its phases), merged
    /// exactly per kind before the summary is taken.
    pub fn of<'a>(recs: impl IntoIterator<Item = &'a Recorder>) -> Vec<RepeatLatency> {
        let mut all = Recorder::new();
        for rec in recs {
            all.merge(rec);
        }
        all.used()
            .map(|(kind, st)| RepeatLatency {
                kind,
                service: LatencySummary::of(&st.hist),
                response: st.latency(LatencySet::Response).map(LatencySummary::of),
            })
            .collect()
    }
}

impl RepeatRun {
    /// Wall time over all phases.
    pub fn wall_ns(&self) -> u64 {
        self.phases.iter().map(|p| p.wall_ns).sum()
    }

    /// Units over all phases.
    pub fn units(&self) -> u64 {
        self.phases.iter().map(|p| p.units).sum()
    }

    /// Primitive operations over all phases.
    pub fn prim_ops(&self) -> u64 {
        self.phases.iter().map(|p| p.prim_ops).sum()
    }

    /// Workload units per second.
    pub fn wu_per_sec(&self) -> f64 {
        per_sec(self.units(), self.wall_ns())
    }

    /// Primitive operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        per_sec(self.prim_ops(), self.wall_ns())
    }

    /// Units the warm-up excluded, over all phases.
    pub fn warmup_units(&self) -> u64 {
        self.phases.iter().map(|p| p.warmup_units).sum()
    }

    /// Cores' worth of CPU kvmark used per second of this repeat's timed phases.
    pub fn client_cores_used(&self) -> Option<f64> {
        let c = self.client_cpu.filter(|c| c.wall_ns > 0)?;
        Some(c.cpu_ns as f64 / c.wall_ns as f64)
    }

    /// Cores' worth of CPU time kvmark's threads waited for (ready to run, on a run
    /// queue) per second of this repeat's timed phases.
    pub fn client_cores_waited(&self) -> Option<f64> {
        let c = self.client_cpu.filter(|c| c.wall_ns > 0)?;
        Some(c.wait_ns as f64 / c.wall_ns as f64)
    }

    /// Key and value bytes written per second.
    pub fn bytes_per_sec(&self) -> f64 {
        per_sec(self.phases.iter().map(|p| p.bytes).sum(), self.wall_ns())
    }
}

/// kvmark's own CPU use over a stretch of wall time, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClientCpu {
    /// CPU time of every thread of the process.
    pub cpu_ns: u64,
    /// Time its threads waited for a CPU (run queue): demand the machine did not meet.
    pub wait_ns: u64,
    /// The wall time.
    pub wall_ns: u64,
}

impl ClientCpu {
    /// Both added.
    pub fn plus(self, o: ClientCpu) -> ClientCpu {
        ClientCpu {
            cpu_ns: self.cpu_ns + o.cpu_ns,
            wait_ns: self.wait_ns + o.wait_ns,
            wall_ns: self.wall_ns + o.wall_ns,
        }
    }
}

/// A median with its spread.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spread {
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (all zero when empty).
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }
}

/// A finished grid point.
#[derive(Debug, Clone)]
pub struct PointResult {
    /// Which cell.
    pub key: PointKey,
    /// How it ended.
    pub status: PointStatus,
    /// Each repeat that ran (a failed repeat is not included).
    pub repeats: Vec<RepeatRun>,
    /// Every repeat's, thread's and phase's recorder merged exactly.
    pub merged: Recorder,
    /// Per phase, merged over repeats and threads (same order as the phases).
    pub phases: Vec<(String, Recorder)>,
    /// The SLO search that chose this point's rate, with its evidence (`--slo`).
    pub slo: Option<SloReport>,
    /// Growing values: the epoch's figures (records, volume, value sizes, intervals
    /// over repeats).
    pub epoch: Option<Box<EpochInfo>>,
    /// `--verify`: what the checks found over its repeats (None: not a verify run).
    pub verify: Option<crate::kv::verify::VerifyReport>,
}

impl PointResult {
    /// Workload units per second over repeats.
    pub fn wu_per_sec(&self) -> Spread {
        Spread::of(&self.repeats.iter().map(RepeatRun::wu_per_sec).collect::<Vec<_>>())
    }

    /// Primitive operations per second over repeats.
    pub fn ops_per_sec(&self) -> Spread {
        Spread::of(&self.repeats.iter().map(RepeatRun::ops_per_sec).collect::<Vec<_>>())
    }

    /// Bytes written per second over repeats.
    pub fn bytes_per_sec(&self) -> Spread {
        Spread::of(&self.repeats.iter().map(RepeatRun::bytes_per_sec).collect::<Vec<_>>())
    }

    /// The achieved rate in the target's own unit (units or bytes per second), over
    /// repeats; None in closed loop.
    pub fn achieved(&self) -> Option<Spread> {
        let rate = self.key.rate.as_ref()?;
        Some(if rate.bytes {
            self.bytes_per_sec()
        } else {
            self.wu_per_sec()
        })
    }

    /// Units the warm-up excluded, over every repeat.
    pub fn warmup_units(&self) -> u64 {
        self.repeats.iter().map(RepeatRun::warmup_units).sum()
    }

    /// Response-time p50, p99 and p99.9 over every kind merged (open loop only).
    pub fn response_summary(&self) -> Option<[u64; 3]> {
        let all = self.merged.response(None)?;
        let at = |label: &str| {
            let q = QUANTILES
                .iter()
                .find(|(l, _)| *l == label)
                .expect("a reported quantile")
                .1;
            all.value_at_quantile(q)
        };
        Some([at("p50"), at("p99"), at("p99.9")])
    }

    /// The load, summarised over repeats: median wall time. None without a load phase.
    pub fn load(&self) -> Option<LoadResult> {
        let loads: Vec<&LoadResult> = self.repeats.iter().filter_map(|r| r.load.as_ref()).collect();
        let first = *loads.first()?;
        let wall = Spread::of(&loads.iter().map(|s| s.wall_ns as f64).collect::<Vec<_>>()).median;
        Some(LoadResult {
            wall_ns: wall as u64,
            ..first.clone()
        })
    }

    /// Total engine errors.
    pub fn errors(&self) -> u64 {
        self.merged.errors()
    }

    /// True when the point failed, was interrupted, or saw engine errors.
    pub fn is_bad(&self) -> bool {
        self.status != PointStatus::Ok || self.errors() > 0 || self.verify.as_ref().is_some_and(|v| v.anomalies() > 0)
    }
}

/// A compact line per point, kept for the end-of-run summary.
#[derive(Debug, Clone)]
pub struct SummaryRow {
    /// Which cell.
    pub key: PointKey,
    /// How it ended.
    pub status: PointStatus,
    /// Workload units per second.
    pub wu: Spread,
    /// Primitive operations per second.
    pub ops: Spread,
    /// Engine errors.
    pub errors: u64,
    /// Repeats that ran.
    pub repeats: usize,
    /// Open loop: the achieved rate in the target's unit.
    pub achieved: Option<Spread>,
    /// Open loop: response-time p50, p99 and p99.9, all kinds merged.
    pub response: Option<[u64; 3]>,
    /// The SLO search behind this point, if any.
    pub slo: Option<SloReport>,
    /// Growing values: the epoch's figures.
    pub epoch: Option<Box<EpochInfo>>,
}

impl SummaryRow {
    /// Summarises a point.
    pub fn of(p: &PointResult) -> Self {
        SummaryRow {
            key: p.key.clone(),
            status: p.status.clone(),
            wu: p.wu_per_sec(),
            ops: p.ops_per_sec(),
            errors: p.errors(),
            repeats: p.repeats.len(),
            achieved: p.achieved(),
            response: p.response_summary(),
            slo: p.slo.clone(),
            epoch: p.epoch.clone(),
        }
    }
}

/// `count` per second over `ns` nanoseconds (0 when no time passed).
pub fn per_sec(count: u64, ns: u64) -> f64 {
    if ns == 0 { 0.0 } else { count as f64 * 1e9 / ns as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_median_odd_and_even() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert_eq!(Spread::of(&[]), Spread::default());
    }

    #[test]
    fn per_sec_handles_zero_time() {
        assert_eq!(per_sec(10, 0), 0.0);
        assert_eq!(per_sec(10, 1_000_000_000), 10.0);
    }
}
