//! The epoch vocabulary (growing values, YCSB-IVS's method): what a workload can
//! declare about epochs, the settings flags give, and how the two resolve into the
//! epochs a workload runs. The runner's side (extend phases, modes, fresh stores)
//! is `run::epochs`.

use std::fmt;

use super::dist::{Dist, NumExpr};
use super::{Workload, scaled};

/// Default extends per epoch (the paper's).
pub const DEFAULT_EXTEND_OPS: u64 = 100_000;
/// Default bytes per extend (the paper's `extendfieldlength`).
pub const DEFAULT_EXTEND_BYTES: u64 = 100;
/// Default run-phase units per epoch of a Lua workload (the paper's operation count).
pub const DEFAULT_RUN_OPS: u64 = 100_000;

/// What a point of an epoch measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EpochMode {
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

impl EpochMode {
    /// The run modes, in report order.
    pub const RUN_MODES: [EpochMode; 4] = [EpochMode::Main, EpochMode::Clean, EpochMode::Average, EpochMode::Spread];

    /// Its name in reports and flags.
    pub fn name(self) -> &'static str {
        match self {
            EpochMode::Extend => "extend",
            EpochMode::Main => "main",
            EpochMode::Clean => "clean",
            EpochMode::Average => "average",
            EpochMode::Spread => "spread",
        }
    }

    /// Parses a list of run modes (`all` for every one), in report order.
    pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<EpochMode>, String> {
        let mut out = Vec::new();
        for item in items {
            let item = item.as_ref().trim();
            if item == "all" {
                out.extend(EpochMode::RUN_MODES);
                continue;
            }
            match EpochMode::RUN_MODES.iter().find(|m| m.name() == item) {
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

impl fmt::Display for EpochMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Epochs a workload declares itself (a spec's `epochs` block); a flag given on the
/// command line overrides each field.
#[derive(Debug, Clone, Default)]
pub struct EpochDefaults {
    /// Number of epochs.
    pub count: Option<u32>,
    /// Extends per epoch.
    pub extend_ops: Option<u64>,
    /// Bytes per extend.
    pub extend_len: Option<NumExpr>,
    /// Which keys grow (Some(None): uniformly).
    pub extend_selection: Option<Option<Dist>>,
    /// Run modes.
    pub modes: Option<Vec<EpochMode>>,
}

/// How a workload's phases serve epochs: what loads the store, and which phase each
/// epoch runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochLayout {
    /// The store is loaded by load() (Lua) rather than by timed phases.
    pub load_fn: bool,
    /// Timed phases that load the store, in order (a spec's groups before the last).
    pub load_phases: Vec<usize>,
    /// The phase each epoch runs.
    pub run_phase: usize,
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
    pub modes: Option<Vec<EpochMode>>,
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
    pub modes: Vec<EpochMode>,
    /// Size factor for the load, the extends and the run phase.
    pub scale: f64,
    /// Check that each clean store holds exactly the main store's data.
    pub verify: bool,
}

/// `modes` with `main` among them: the main store's run phases are part of its
/// history, so they always run, and they are always reported.
fn with_main(mut modes: Vec<EpochMode>) -> Vec<EpochMode> {
    modes.push(EpochMode::Main);
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
            extend_ops: scaled(extend_ops, scale),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse() {
        assert_eq!(EpochMode::parse_list(&["all"]).unwrap(), EpochMode::RUN_MODES.to_vec());
        assert_eq!(
            EpochMode::parse_list(&["spread", "main", "main"]).unwrap(),
            vec![EpochMode::Main, EpochMode::Spread]
        );
        assert!(
            EpochMode::parse_list(&["mian"])
                .unwrap_err()
                .contains("unknown mode 'mian'")
        );
        assert!(EpochMode::parse_list::<&str>(&[]).is_err());
        assert!(parse_extend_dist("uniform").unwrap().is_none());
        assert!(parse_extend_dist("zipfian").unwrap().is_some());
        assert!(parse_extend_dist("normal").is_err());
        assert_eq!(
            with_main(vec![EpochMode::Clean]),
            vec![EpochMode::Main, EpochMode::Clean]
        );
        assert_eq!(with_main(Vec::new()), vec![EpochMode::Main]);
    }
}
