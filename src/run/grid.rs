//! The grid loop: workload file, then engine, then the workload's sweep value, then
//! threads, connections and pipeline depth, then batch size, then target rate; each
//! cell measured, searched (SLO) or run in epochs, and each point told to the
//! observer as it finishes.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use quanta::Clock;

use super::meet::Meeting;
use super::observer::Observer;
use super::runner::{Runner, Shared};
use super::{Plan, Sampling, epochs, slo};
use crate::kv::pace::Rate;
use crate::result::{PointStatus, RunOutcome, SummaryRow};
use crate::workload::{SweepValue, Workload};

impl Cell {
    /// Workers of the cell: each pipeline slot of each connection of each thread runs
    /// units with its own program and session.
    pub(in crate::run) fn workers(&self) -> usize {
        self.threads * self.connections * self.pipeline
    }
}

/// One cell's coordinates before the engine version is known.
#[derive(Clone)]
pub(in crate::run) struct Cell {
    pub(in crate::run) threads: usize,
    /// Connections per thread.
    pub(in crate::run) connections: usize,
    /// Requests in flight per connection: the cell has threads x connections x
    /// pipeline workers.
    pub(in crate::run) pipeline: usize,
    pub(in crate::run) batch: usize,
    pub(in crate::run) sweep: SweepPoint,
    pub(in crate::run) rate: Option<Rate>,
}

/// Runs the plan, telling `observer` of each point as it finishes (and of samples
/// while it runs, when it wants them).
pub fn execute(plan: &Plan, observer: &dyn Observer, abort: &Arc<AtomicBool>) -> RunOutcome {
    let clock = Clock::new();
    let mut out = RunOutcome::default();
    // --timeline sets the period for the timeline and for interval histograms alike,
    // and its intervals feed the stationarity check even when no sink writes them.
    let interval = plan.timeline;
    let sampling = (interval.is_some() || observer.wants_intervals()).then_some(Sampling {
        interval,
        system: plan.probes.system,
        sink: observer,
    });
    let seq = std::cell::Cell::new(0usize);
    'all: for wl in &plan.workloads {
        let (batches, sweep_values, batched) = grid_axes(plan, wl.as_ref());
        let epochs = plan.epochs.resolve(wl.as_ref());
        for engine in &plan.engines {
            let options = plan.engine_options.get(engine.name).cloned().unwrap_or_default();
            let meeting = match (&plan.job, plan.start_at, plan.shared_tag()) {
                (Some(job), None, Some(tag)) if engine.storage.server().is_some() => Some(Meeting::new(
                    engine,
                    &options,
                    crate::engine::storage::meeting_namespace(engine.name, &tag),
                    plan.segment,
                    job.clone(),
                )),
                _ => None,
            };
            let runner = Runner {
                plan,
                wl: wl.as_ref(),
                engine,
                options: &options,
                clock: &clock,
                abort,
                sampling,
                seq: &seq,
                meeting: meeting.as_ref(),
            };
            let mut shared: Option<Result<Shared, String>> = None;
            for (si, sweep) in sweep_values.iter().enumerate() {
                if plan.load_once && (si == 0 || wl.sweep().is_some_and(|s| s.load_per_value)) {
                    if let Some(Ok(old)) = shared.take()
                        && let Err(e) = old.store.close()
                    {
                        out.other_errors.push(e);
                    }
                    let load_threads = plan.load_threads.unwrap_or(*plan.threads.iter().max().unwrap_or(&1));
                    let cell = Cell {
                        threads: load_threads,
                        connections: *plan.connections.iter().max().unwrap_or(&1),
                        pipeline: *plan.pipeline.iter().max().unwrap_or(&1),
                        batch: batches[0],
                        sweep: sweep.clone(),
                        rate: None,
                    };
                    shared = Some(runner.open_and_load(&cell, batched, true, seq.get() + 1, 0));
                }
                let rates: Vec<Option<Rate>> = if plan.rates.is_empty() {
                    vec![None]
                } else {
                    plan.rates.iter().cloned().map(Some).collect()
                };
                for (threads, connections, pipeline) in cells(&plan.threads, &plan.connections, &plan.pipeline) {
                    for &batch in &batches {
                        for rate in &rates {
                            let cell = Cell {
                                threads,
                                connections,
                                pipeline,
                                batch,
                                sweep: sweep.clone(),
                                rate: rate.clone(),
                            };
                            let points = match (&epochs, &plan.slo) {
                                (Some(ep), _) => epochs::run_cell(&runner, &cell, batched, ep),
                                (None, Some(objective)) => vec![slo::search(
                                    &runner,
                                    &cell,
                                    batched,
                                    shared.as_ref(),
                                    objective,
                                    plan.slo_secs,
                                )],
                                (None, None) => {
                                    vec![runner.measure(&cell, batched, shared.as_ref(), plan.budget, plan.repeat)]
                                }
                            };
                            let mut interrupted = false;
                            for point in &points {
                                interrupted |= point.status == PointStatus::Interrupted;
                                if point.is_bad() {
                                    out.bad_points += 1;
                                }
                                if !crate::result::checks::warnings(point).is_empty() {
                                    out.checked_points += 1;
                                }
                                observer.point(point);
                                out.rows.push(SummaryRow::of(point));
                            }
                            if interrupted {
                                out.interrupted = true;
                                if let Some(Ok(s)) = shared.take()
                                    && let Err(e) = s.store.close()
                                {
                                    out.other_errors.push(e);
                                }
                                break 'all;
                            }
                        }
                    }
                }
            }
            if let Some(Ok(s)) = shared.take()
                && let Err(e) = s.store.close()
            {
                out.other_errors.push(e);
            }
        }
    }
    out
}

/// The (threads, connections, pipeline) coordinates of a grid, in its order: each
/// thread count over every connection count over every pipeline depth.
fn cells<'a>(
    threads: &'a [usize],
    connections: &'a [usize],
    pipeline: &'a [usize],
) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
    threads.iter().flat_map(move |&t| {
        connections
            .iter()
            .flat_map(move |&c| pipeline.iter().map(move |&p| (t, c, p)))
    })
}

/// A workload sweep coordinate: the ctx parameter and its value, if any.
pub type SweepPoint = Option<(String, SweepValue)>;

/// The batch sizes, sweep values and batched flag of a workload under this plan.
fn grid_axes(plan: &Plan, wl: &dyn Workload) -> (Vec<usize>, Vec<SweepPoint>, bool) {
    match wl.sweep() {
        Some(sweep) if sweep.param == "batch" => {
            // The workload's own batch list, unless --batch overrides it.
            let from_sweep = sweep
                .values
                .iter()
                .map(|v| match v {
                    SweepValue::Int(n) => *n as usize,
                    _ => unreachable!("validated as positive integers"),
                })
                .collect();
            (plan.batch.clone().unwrap_or(from_sweep), vec![None], true)
        }
        Some(sweep) => {
            let batches = if wl.batched() {
                plan.batch.clone().unwrap_or_else(|| vec![1])
            } else {
                vec![1]
            };
            let values = sweep
                .values
                .iter()
                .map(|v| Some((sweep.param.clone(), v.clone())))
                .collect();
            (batches, values, wl.batched())
        }
        None => {
            let batches = if wl.batched() {
                plan.batch.clone().unwrap_or_else(|| vec![1])
            } else {
                vec![1]
            };
            (batches, vec![None], wl.batched())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipeline_depths_are_the_innermost_worker_axis() {
        let got: Vec<_> = cells(&[1, 2], &[1, 8], &[1, 4]).collect();
        assert_eq!(
            got,
            vec![
                (1, 1, 1),
                (1, 1, 4),
                (1, 8, 1),
                (1, 8, 4),
                (2, 1, 1),
                (2, 1, 4),
                (2, 8, 1),
                (2, 8, 4),
            ]
        );
    }

    #[test]
    fn a_cell_has_threads_x_connections_x_pipeline_workers() {
        let cell = Cell {
            threads: 2,
            connections: 3,
            pipeline: 4,
            batch: 1,
            sweep: None,
            rate: None,
        };
        assert_eq!(cell.workers(), 24);
        assert_eq!(Cell { pipeline: 1, ..cell }.workers(), 6);
    }
}
