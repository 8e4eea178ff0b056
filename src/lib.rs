//! kvmark: a benchmark harness for sorted key-value stores.
//!
//! The data flow: a workload file ([`workload`]) drives a [`run::kv::Kv`] verb set
//! over an engine's [`engine::Session`]; the runner ([`run`]) sweeps the grid of
//! engines x threads x batch sizes and repeats, recording whole latency histograms
//! ([`metrics`]) that the reporters ([`report`]) turn into output, with the context
//! the probes ([`probe`]) record. Runs can be written and replayed as config files
//! ([`config`]).

pub mod app;
pub mod cli;
pub mod clock;
pub mod config;
pub mod engine;
pub mod kv;
pub mod metrics;
pub mod plot;
pub mod probe;
pub mod report;
pub mod result;
pub mod run;
pub mod workload;
