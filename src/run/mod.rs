//! The runner: expands the grid, manages stores and their loads, runs each
//! measurement and reduces repeats into point results.
//!
//! Grid order (`grid.rs`): workload file, then engine, then the workload's sweep value,
//! then threads, then batch size, then target rate (open loop); each cell is measured
//! `repeat` times by the runner (`runner.rs`). Every measurement gets a fresh store unless
//! `--seed-once` ([`Plan::load_once`]) shares one loaded store per engine (and per
//! sweep value when the workload asks for `seed_per_value`). With an SLO, each cell is
//! an SLO search ([`slo`]) instead; with epochs, an epoch sequence ([`epochs`]).
//! A measurement is a [`crew`] of worker threads moving through steps together.
//!
//! Finished points go to an [`observer::Observer`] (the reporter). When it wants them,
//! measurements are sampled ([`sampler`]): a timeline every `--timeline` seconds, and
//! interval histograms for histogram logs.

pub mod bulk;
pub mod crew;
pub mod epochs;
mod grid;
pub mod live;
pub mod meet;
pub mod observer;
pub mod pin;
mod plan;
pub mod progress;
mod runner;
pub mod sampler;
pub mod segment;
pub mod slo;
pub mod store;

use std::time::Duration;

pub use self::grid::{SweepPoint, execute};
use self::observer::Observer;
pub use self::plan::Plan;

/// How measurements are sampled, when any sink wants samples.
#[derive(Clone, Copy)]
pub struct Sampling<'a> {
    /// Timeline period; None when only whole-step interval histograms are wanted.
    pub interval: Option<Duration>,
    /// Sample the system probe too.
    pub system: bool,
    /// Where samples go.
    pub sink: &'a dyn Observer,
}
