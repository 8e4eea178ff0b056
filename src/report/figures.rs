//! Figures derived from a point for the machine-readable sinks: one view per timed
//! phase (and one over all phases when there are several), with its own throughput.

use crate::metrics::Recorder;
use crate::result::{PointResult, RepeatRun, Spread, per_sec};

/// The rows of one phase of a point (or of all its phases).
#[derive(Debug)]
pub struct PhaseView<'a> {
    /// The phase name, or "all" for the merge of several phases.
    pub name: &'a str,
    /// Its latency histograms and counters, merged over repeats and threads.
    pub rec: &'a Recorder,
    /// Workload units per second over repeats.
    pub wu: Spread,
    /// Primitive operations per second over repeats.
    pub ops: Spread,
    /// Units over all repeats.
    pub units: u64,
    /// Wall time over all repeats, seconds.
    pub wall_s: f64,
}

/// Phase views of a point: one per phase, plus "all" when there are several.
pub fn phase_views(p: &PointResult) -> Vec<PhaseView<'_>> {
    let mut views = Vec::new();
    for (i, (name, rec)) in p.phases.iter().enumerate() {
        let runs: Vec<_> = p.repeats.iter().filter_map(|r| r.phases.get(i)).collect();
        views.push(PhaseView {
            name,
            rec,
            wu: Spread::of(&runs.iter().map(|r| per_sec(r.units, r.wall_ns)).collect::<Vec<_>>()),
            ops: Spread::of(&runs.iter().map(|r| per_sec(r.prim_ops, r.wall_ns)).collect::<Vec<_>>()),
            units: runs.iter().map(|r| r.units).sum(),
            wall_s: seconds(runs.iter().map(|r| r.wall_ns)),
        });
    }
    if views.len() != 1 {
        views.push(PhaseView {
            name: "all",
            rec: &p.merged,
            wu: p.wu_per_sec(),
            ops: p.ops_per_sec(),
            units: p.repeats.iter().map(|r| r.units()).sum(),
            wall_s: seconds(p.repeats.iter().map(RepeatRun::wall_ns)),
        });
    }
    views
}

/// The total of `ns` in seconds. An empty f64 sum is -0.0, which would print as
/// "-0" for a point that never ran; adding 0.0 makes it 0.
fn seconds(ns: impl Iterator<Item = u64>) -> f64 {
    ns.map(|n| n as f64 / 1e9).sum::<f64>() + 0.0
}

/// Hits over lookups for `get`/`mget` rows; None for kinds that do not look keys up.
pub fn hit_rate(hits: u64, misses: u64) -> Option<f64> {
    (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64)
}

/// Errors over calls (0 for no calls).
pub fn err_rate(errors: u64, calls: u64) -> f64 {
    if calls == 0 { 0.0 } else { errors as f64 / calls as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::OpKind;
    use crate::result::{PhaseRun, PointKey, PointStatus, RepeatRun};

    fn phase(name: &str, units: u64, wall_ns: u64) -> PhaseRun {
        PhaseRun {
            name: name.to_string(),
            start_unix_ns: 0,
            wall_ns,
            units,
            prim_ops: units,
            warmup_units: 0,
            bytes: 0,
            trend: Vec::new(),
        }
    }

    #[test]
    fn several_phases_get_their_own_rows_and_all() {
        let mut load = Recorder::new();
        load.record(OpKind::Put, 100, 1);
        let mut read = Recorder::new();
        read.record(OpKind::Get, 50, 1);
        let mut merged = load.clone();
        merged.merge(&read);
        let p = PointResult {
            key: PointKey {
                workload: "w".into(),
                workload_path: "w.json".into(),
                engine: "skiplist".into(),
                engine_version: "1".into(),
                threads: 1,
                connections: 1,
                pipeline: 1,
                batch: 1,
                batched: false,
                sweep: None,
                rate: None,
                arrival: Default::default(),
                epoch: None,
            },
            status: PointStatus::Ok,
            repeats: vec![
                RepeatRun {
                    phases: vec![phase("warm", 100, 1_000_000_000), phase("read", 300, 1_000_000_000)],
                    thread_units: vec![400],
                    load: None,
                    latency: None,
                    client_cpu: None,
                },
                RepeatRun {
                    phases: vec![phase("warm", 200, 1_000_000_000), phase("read", 100, 1_000_000_000)],
                    thread_units: vec![300],
                    load: None,
                    latency: None,
                    client_cpu: None,
                },
            ],
            merged,
            phases: vec![("warm".into(), load), ("read".into(), read)],
            slo: None,
            epoch: None,
            verify: None,
        };
        let views = phase_views(&p);
        let names: Vec<&str> = views.iter().map(|v| v.name).collect();
        assert_eq!(names, vec!["warm", "read", "all"]);
        assert_eq!(views[0].wu.median, 150.0);
        assert_eq!((views[1].wu.min, views[1].wu.max), (100.0, 300.0));
        assert_eq!(views[1].units, 400);
        assert_eq!(views[2].units, 700);
        assert_eq!(views[2].rec.used().count(), 2);
        assert_eq!(
            views[0].rec.used().map(|(k, _)| k).collect::<Vec<_>>(),
            vec![OpKind::Put]
        );
    }

    #[test]
    fn rates() {
        assert_eq!(hit_rate(3, 1), Some(0.75));
        assert_eq!(hit_rate(0, 0), None);
        assert_eq!(err_rate(1, 4), 0.25);
        assert_eq!(err_rate(0, 0), 0.0);
    }
}
