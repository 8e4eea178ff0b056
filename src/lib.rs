//! kvmark: a benchmark harness for sorted key-value stores.
//!
//! The data flow: a workload file ([`workload`]) drives a [`kv::Kv`] verb set over an
//! engine's [`engine::Session`]; the runner ([`run`]) sweeps the grid of engines x
//! threads x batch sizes and repeats, recording whole latency histograms ([`metrics`])
//! into point results ([`result`]) that the reporters ([`report`]) turn into output,
//! with the context the probes ([`probe`]) record; [`plot`] draws figures from a
//! result directory. Runs can be written and replayed as config files ([`config`]).
//!
//! The modules are layered, each importing only those of earlier layers (checked by
//! `tests/layers.rs`): [`clock`]; [`engine`]; [`metrics`]; [`probe`]; [`kv`];
//! [`workload`]; [`result`]; [`run`]; [`report`]; [`plot`]; [`cli`] and [`config`];
//! [`app`]. The runner tells the reporters what happens through a trait it owns
//! ([`run::observer::Observer`]), so nothing below `report` knows the reporters.

pub mod app;
pub mod cli;
pub mod clock;
pub mod config;
pub mod engine;
pub mod kv;
pub mod merge;
pub mod metrics;
pub mod plot;
pub mod probe;
pub mod report;
pub mod result;
pub mod run;
pub mod workload;
