//! The command line: the flags ([`args`]), how argv and a config file become them
//! ([`parse_from`]), and the run plan built from them ([`plan`]).

pub mod args;
pub mod epochs;
mod inputs;
pub mod kit;
mod parse;
pub mod plan;
mod scale;
mod ycsb;

pub use self::args::{Cli, Command, FitArgs, GenArgs, MergeArgs, PlotArgs, RunArgs};
pub use self::parse::{ParseError, parse_config_text, parse_from};
pub use self::plan::{
    DEFAULT_ITEMS, DEFAULT_LOAD_SECS, DEFAULT_OPS, DEFAULT_SEED, DEFAULT_SLO_SECS, DEFAULT_USERS, MAX_TIMELINE,
    MIN_TIMELINE, Opener, UsageError, load_limit, open_workloads, open_workloads_with, parse_engine_opts, timeline_ok,
};
