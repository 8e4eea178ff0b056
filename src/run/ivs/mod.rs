//! Growing values in epochs: YCSB-IVS's method as one command on any engine.
//!
//! After the workload loads the store, each epoch runs an extend phase (appends to
//! keys chosen by the extend distribution, planned by the harness from the store's key
//! index so the value cap is exact) and then a measured run phase of the workload. The
//! run phase is measured in up to four modes:
//!
//! - `main`: on the store that lived through every extend;
//! - `clean`: on a fresh store of the same engine loaded from a dump of the main store
//!   taken right after the extend phase (same logical data, no history);
//! - `average`: on a fresh store with the same keys, every value of the average length;
//! - `spread`: on a fresh store of the same volume in records of the initial length,
//!   loaded by the workload itself with its size scaled (many more records).
//!
//! Each epoch's extend phase and each mode's run phase is its own reported point. The
//! dump and the fresh stores' loads are timed and reported with their point (as its
//! seed), never inside the run phase. With `--repeat`, the whole sequence repeats on
//! fresh stores, and each point also gets the mean and 95% interval of its figures
//! over the repeats ([`stats`]).

pub mod data;
pub mod extend;
pub mod sizes;
pub mod stats;
pub mod steps;

mod driver;
mod modes;

use std::fmt;

pub(super) use driver::run_cell;

use self::sizes::SizeSnapshot;
use self::stats::Intervals;
use crate::workload::dist::{Dist, NumExpr};
use crate::workload::{EpochDefaults, Workload};

/// Default extends per epoch (the paper's).
pub const DEFAULT_EXTEND_OPS: u64 = 100_000;
/// Default bytes per extend (the paper's `extendfieldlength`).
pub const DEFAULT_EXTEND_BYTES: u64 = 100;
/// Default run-phase units per epoch of a Lua workload (the paper's operation count).
pub const DEFAULT_RUN_OPS: u64 = 100_000;

/// What a point of an epoch measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IvsMode {
    /// The epoch's extend phase.
    Extend,
    /// The run phase on the store that lived through the extends.
    Main,
    /// The run phase on a fresh copy of the same logical data.
    Clean,
    /// The run phase on the same number of records, all of the average length.
    Average,
    /// The run phase on the same volume in records of the initial length.
    Spread,
}

impl IvsMode {
    /// The run modes, in report order.
    pub const RUN_MODES: [IvsMode; 4] = [IvsMode::Main, IvsMode::Clean, IvsMode::Average, IvsMode::Spread];

    /// Its name in reports and flags.
    pub fn name(self) -> &'static str {
        match self {
            IvsMode::Extend => "extend",
            IvsMode::Main => "main",
            IvsMode::Clean => "clean",
            IvsMode::Average => "average",
            IvsMode::Spread => "spread",
        }
    }

    /// Parses a list of run modes (`all` for every one), in report order.
    pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<IvsMode>, String> {
        let mut out = Vec::new();
        for item in items {
            let item = item.as_ref().trim();
            if item == "all" {
                out.extend(IvsMode::RUN_MODES);
                continue;
            }
            match IvsMode::RUN_MODES.iter().find(|m| m.name() == item) {
                Some(m) => out.push(*m),
                None => {
                    return Err(format!(
                        "unknown mode '{item}' (give main, clean, average, spread, or all)"
                    ));
                }
            }
        }
        if out.is_empty() {
            return Err("give at least one mode (main, clean, average, spread, or all)".to_string());
        }
        out.sort();
        out.dedup();
        Ok(out)
    }
}

impl fmt::Display for IvsMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which epoch and mode a point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochTag {
    /// 1-based epoch.
    pub number: u32,
    /// What it measures.
    pub mode: IvsMode,
}

/// The epoch settings given as flags (or in a config file); each one given overrides
/// the workload's own `epochs` block.
#[derive(Debug, Clone, Default)]
pub struct EpochFlags {
    /// `--epochs`.
    pub count: Option<u32>,
    /// `--extend-ops`.
    pub extend_ops: Option<u64>,
    /// `--extend-bytes`.
    pub extend_bytes: Option<u64>,
    /// `--extend-dist` (Some(None): uniform).
    pub extend_dist: Option<Option<Dist>>,
    /// `--ivs-mode`.
    pub modes: Option<Vec<IvsMode>>,
    /// `--scale`.
    pub scale: Option<f64>,
    /// `--ivs-verify`.
    pub verify: bool,
}

/// Epoch settings of one workload, resolved.
#[derive(Debug, Clone)]
pub struct Epochs {
    /// Number of epochs.
    pub count: u32,
    /// Extends per epoch (already scaled).
    pub extend_ops: u64,
    /// Bytes per extend.
    pub extend_len: NumExpr,
    /// Which keys grow: None for uniform.
    pub extend_selection: Option<Dist>,
    /// Run modes measured.
    pub modes: Vec<IvsMode>,
    /// Size factor for the load, the extends and the run phase.
    pub scale: f64,
    /// Check that each clean store holds exactly the main store's data.
    pub verify: bool,
}

/// `modes` with `main` among them: the main store's run phases are part of its
/// history, so they always run, and they are always reported.
fn with_main(mut modes: Vec<IvsMode>) -> Vec<IvsMode> {
    modes.push(IvsMode::Main);
    modes.sort();
    modes.dedup();
    modes
}

/// The default extend distribution: YCSB's scrambled zipfian with constant 0.99.
pub fn default_extend_dist() -> Dist {
    Dist::zipf(None, Some(0.99), true).expect("static parameters are valid")
}

/// Parses `--extend-dist`: `uniform` or `zipfian` (YCSB's, scrambled, 0.99).
pub fn parse_extend_dist(text: &str) -> Result<Option<Dist>, String> {
    match text.trim() {
        "uniform" => Ok(None),
        "zipfian" | "zipf" => Ok(Some(default_extend_dist())),
        other => Err(format!(
            "unknown extend distribution '{other}' (give uniform or zipfian)"
        )),
    }
}

impl EpochFlags {
    /// True when some flag asks for epochs or changes them.
    pub fn any(&self) -> bool {
        self.count.is_some()
            || self.extend_ops.is_some()
            || self.extend_bytes.is_some()
            || self.extend_dist.is_some()
            || self.modes.is_some()
            || self.scale.is_some()
            || self.verify
    }

    /// The epochs `wl` runs, if any: these flags over the workload's own block.
    pub fn resolve(&self, wl: &dyn Workload) -> Option<Epochs> {
        let own = wl.epoch_defaults();
        let none = EpochDefaults::default();
        let own = own.unwrap_or(&none);
        let count = self.count.or(own.count)?;
        let scale = self.scale.unwrap_or(1.0);
        let extend_ops = self.extend_ops.or(own.extend_ops).unwrap_or(DEFAULT_EXTEND_OPS);
        Some(Epochs {
            count,
            extend_ops: crate::workload::spec::plan::scaled(extend_ops, scale),
            extend_len: match self.extend_bytes {
                Some(b) => NumExpr::Const(b as f64),
                None => own
                    .extend_len
                    .clone()
                    .unwrap_or(NumExpr::Const(DEFAULT_EXTEND_BYTES as f64)),
            },
            extend_selection: match &self.extend_dist {
                Some(d) => d.clone(),
                None => own
                    .extend_selection
                    .clone()
                    .unwrap_or_else(|| Some(default_extend_dist())),
            },
            modes: with_main(self.modes.clone().or_else(|| own.modes.clone()).unwrap_or_default()),
            scale,
            verify: self.verify,
        })
    }
}

/// Growing-value figures of one point.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochInfo {
    /// Which epoch and mode.
    pub tag: EpochTag,
    /// Records in the store the point measured.
    pub records: u64,
    /// Key and value bytes in it.
    pub volume_bytes: u64,
    /// Its value sizes (the main store's at the end of the extend phase, for extend,
    /// main and clean points).
    pub value_sizes: SizeSnapshot,
    /// Extends of the epoch that the value cap turned away (extend and main points).
    pub skipped_extends: u64,
    /// Spread: the records the load was asked for (the volume over the initial record
    /// size).
    pub target_records: Option<u64>,
    /// Clean: the dump of the main store, as (wall ns, file bytes), median over repeats.
    pub dump: Option<(u64, u64)>,
    /// Hash of the store's logical contents, with `--ivs-verify` (main: after the
    /// extend phase; clean: after the restore).
    pub data_hash: Option<u64>,
    /// Figures over repeats: mean and 95% interval.
    pub intervals: Intervals,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse() {
        assert_eq!(IvsMode::parse_list(&["all"]).unwrap(), IvsMode::RUN_MODES.to_vec());
        assert_eq!(
            IvsMode::parse_list(&["spread", "main", "main"]).unwrap(),
            vec![IvsMode::Main, IvsMode::Spread]
        );
        assert!(
            IvsMode::parse_list(&["mian"])
                .unwrap_err()
                .contains("unknown mode 'mian'")
        );
        assert!(IvsMode::parse_list::<&str>(&[]).is_err());
        assert!(parse_extend_dist("uniform").unwrap().is_none());
        assert!(parse_extend_dist("zipfian").unwrap().is_some());
        assert!(parse_extend_dist("normal").is_err());
        assert_eq!(with_main(vec![IvsMode::Clean]), vec![IvsMode::Main, IvsMode::Clean]);
        assert_eq!(with_main(Vec::new()), vec![IvsMode::Main]);
    }
}
