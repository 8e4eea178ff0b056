//! `timeline.tsv` as tracks: one track per measurement and repeat, each a sequence
//! of samples (the load's, then the timed phases') with the metrics recorded at
//! each. Tracks keep the file's order, which is the order they ran in.

use std::collections::{BTreeMap, HashMap};

use super::tsv::Table;

/// One sample time of a track.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// In the load phase (its clock starts at the load's start; timed phases'
    /// clock at the first timed phase's start).
    pub load: bool,
    /// Index into the track's `phases`.
    pub phase: usize,
    /// Seconds since its clock's start, at the end of the sample's interval.
    pub t: f64,
}

/// The samples of one measurement and repeat.
#[derive(Debug, Clone, Default)]
pub struct Track {
    /// The measurement's number in the run.
    pub measurement: u64,
    /// The 1-based repeat (0: a store loaded once and shared).
    pub repeat: u64,
    /// Workload name.
    pub workload: String,
    /// Engine name.
    pub engine: String,
    /// Worker threads of the timed phases (0 if the track has only a load).
    pub threads: usize,
    /// Loader threads of the load phase.
    pub load_threads: Option<usize>,
    /// Connections per thread of the timed phases.
    pub connections: usize,
    /// Requests in flight per connection of the timed phases.
    pub pipeline: usize,
    /// Batch size.
    pub batch: usize,
    /// The workload's sweep (param, value), other than batch.
    pub sweep: Option<(String, String)>,
    /// The open-loop target as given.
    pub rate: Option<String>,
    /// Phase names, in order of appearance.
    pub phases: Vec<String>,
    /// Sample times in order.
    pub samples: Vec<Sample>,
    /// Metric name to (sample index, value), in sample order.
    pub metrics: BTreeMap<String, Vec<(usize, f64)>>,
}

impl Track {
    /// Seconds the load samples span (0 without a load).
    pub fn load_end(&self) -> f64 {
        self.samples.iter().filter(|s| s.load).map(|s| s.t).fold(0.0, f64::max)
    }

    /// Seconds the timed samples span.
    pub fn timed_end(&self) -> f64 {
        self.samples.iter().filter(|s| !s.load).map(|s| s.t).fold(0.0, f64::max)
    }

    /// True when the track has timed samples.
    pub fn has_timed(&self) -> bool {
        self.samples.iter().any(|s| !s.load)
    }

    /// The (time, value) points of a metric in the timed phases.
    pub fn timed(&self, metric: &str) -> Vec<(f64, f64)> {
        self.points(metric, false)
    }

    /// The (time, value) points of a metric in the load phase.
    pub fn loaded(&self, metric: &str) -> Vec<(f64, f64)> {
        self.points(metric, true)
    }

    fn points(&self, metric: &str, load: bool) -> Vec<(f64, f64)> {
        self.metrics
            .get(metric)
            .into_iter()
            .flatten()
            .filter(|(i, _)| self.samples[*i].load == load)
            .map(|&(i, v)| (self.samples[i].t, v))
            .collect()
    }

    /// The phase changes of the timed samples: (time the new phase's first sample
    /// interval began, phase name). The first phase is included at its start.
    pub fn phase_changes(&self, period: f64) -> Vec<(f64, String)> {
        let mut out: Vec<(f64, String)> = Vec::new();
        let mut last = None;
        for s in self.samples.iter().filter(|s| !s.load) {
            if last != Some(s.phase) {
                out.push(((s.t - period).max(0.0), self.phases[s.phase].clone()));
                last = Some(s.phase);
            }
        }
        out
    }

    /// The point coordinates apart from the engine, as a short label ("t2 b8").
    pub fn cell_label(&self) -> String {
        super::cell_label(
            self.threads,
            self.connections,
            self.pipeline,
            self.batch,
            self.sweep.as_ref(),
            self.rate.as_deref(),
        )
    }
}

/// The columns a timeline needs: keybench's nine.
pub const REQUIRED: &[&str] = crate::report::timeline::COLUMNS.split_at(9).0;

/// Groups a timeline table's rows into tracks.
pub fn tracks(t: &Table) -> Vec<Track> {
    let mut out: Vec<Track> = Vec::new();
    let mut index: HashMap<(String, u64), usize> = HashMap::new();
    for r in 0..t.rows.len() {
        let (Some(elapsed), Some(value)) = (t.num(r, "elapsed_s"), t.num(r, "value")) else {
            continue;
        };
        let g = |c: &str| t.get(r, c).unwrap_or("-");
        // Without the measurement column (a keybench timeline), the coordinates
        // name the measurement.
        let measurement = match t.num(r, "measurement") {
            Some(m) => m.to_string(),
            None => [
                g("workload"),
                g("engine"),
                g("sweep_param"),
                g("sweep_value"),
                g("batch"),
                g("rate"),
            ]
            .join("\u{1f}"),
        };
        let repeat = t.num(r, "repeat").unwrap_or(1.0) as u64;
        let i = *index.entry((measurement, repeat)).or_insert_with(|| {
            out.push(Track {
                measurement: t.num(r, "measurement").unwrap_or(out.len() as f64 + 1.0) as u64,
                repeat,
                workload: g("workload").to_string(),
                engine: g("engine").to_string(),
                batch: t.num(r, "batch").unwrap_or(1.0) as usize,
                sweep: match (g("sweep_param"), g("sweep_value")) {
                    ("-" | "" | "batch", _) => None,
                    (p, v) => Some((p.to_string(), v.to_string())),
                },
                rate: Some(g("rate")).filter(|r| *r != "-").map(str::to_string),
                ..Track::default()
            });
            out.len() - 1
        });
        let track = &mut out[i];
        let phase_name = g("phase");
        let load = phase_name == "seed";
        let threads = t.num(r, "threads").unwrap_or(1.0) as usize;
        if load {
            track.load_threads = Some(threads);
        } else {
            // Load rows carry no rate; the timed rows say which point this is.
            track.threads = threads;
            track.connections = t.num(r, "connections").unwrap_or(1.0) as usize;
            track.pipeline = t.num(r, "pipeline").unwrap_or(1.0) as usize;
            track.rate = Some(g("rate")).filter(|r| *r != "-").map(str::to_string);
        }
        let phase = match track.phases.iter().position(|p| p == phase_name) {
            Some(p) => p,
            None => {
                track.phases.push(phase_name.to_string());
                track.phases.len() - 1
            }
        };
        let sample = Sample {
            load,
            phase,
            t: elapsed,
        };
        if track.samples.last() != Some(&sample) {
            track.samples.push(sample);
        }
        let at = track.samples.len() - 1;
        track
            .metrics
            .entry(g("metric").to_string())
            .or_default()
            .push((at, value));
    }
    for track in &mut out {
        if track.threads == 0 {
            track.threads = track.load_threads.unwrap_or(1);
        }
        track.connections = track.connections.max(1);
        track.pipeline = track.pipeline.max(1);
    }
    out
}

/// Where each track sits on the run's own clock: (offset of its load samples,
/// offset of its timed samples), laying the tracks end to end in the order they ran.
pub fn run_offsets(tracks: &[Track]) -> Vec<(f64, f64)> {
    let mut at = 0.0;
    tracks
        .iter()
        .map(|t| {
            let load_off = at;
            let timed_off = at + t.load_end();
            at = timed_off + t.timed_end();
            (load_off, timed_off)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const TL: &str = "workload\tengine\tthreads\tsweep_param\tsweep_value\tphase\telapsed_s\tmetric\tvalue\tbatch\trepeat\tinterval_s\trate\tmeasurement\n\
        w\ts\t4\t-\t-\tseed\t0.5\tkeys_per_s\t100\t1\t1\t0.5\t-\t1\n\
        w\ts\t4\t-\t-\tseed\t1.0\tkeys_per_s\t120\t1\t1\t0.5\t-\t1\n\
        w\ts\t2\t-\t-\tload\t0.5\twu_per_s\t10\t1\t1\t0.5\t-\t1\n\
        w\ts\t2\t-\t-\tload\t0.5\tsys.cpu_pct\t50\t1\t1\t0.5\t-\t1\n\
        w\ts\t2\t-\t-\trun\t1.0\twu_per_s\t20\t1\t1\t0.5\t-\t1\n\
        w\ts\t2\t-\t-\trun\t0.5\twu_per_s\t30\t1\t2\t0.5\t-\t1\n";

    #[test]
    fn rows_group_into_tracks_and_samples() {
        let t = Table::parse(TL, Path::new("t.tsv"), REQUIRED, &mut Vec::new()).unwrap();
        let tracks = tracks(&t);
        assert_eq!(tracks.len(), 2);
        let a = &tracks[0];
        assert_eq!((a.threads, a.load_threads, a.repeat), (2, Some(4), 1));
        assert_eq!(a.samples.len(), 4);
        assert_eq!(a.loaded("keys_per_s"), vec![(0.5, 100.0), (1.0, 120.0)]);
        assert_eq!(a.timed("wu_per_s"), vec![(0.5, 10.0), (1.0, 20.0)]);
        assert_eq!(a.phases, vec!["seed", "load", "run"]);
        assert_eq!(
            a.phase_changes(0.5),
            vec![(0.0, "load".to_string()), (0.5, "run".to_string())]
        );
        assert_eq!(run_offsets(&tracks), vec![(0.0, 1.0), (2.0, 2.0)]);
    }
}
