//! The growing-value flags (`--epochs` and friends, `--max-value-bytes`), checked.

use std::sync::Arc;

use super::RunArgs;
use super::plan::{UsageError, usage};
use crate::config::size::parse_size;
use crate::workload::Workload;
use crate::workload::epochs::{self, EpochFlags, EpochMode};

impl RunArgs {
    /// `--max-value-bytes`: None for no cap.
    pub(super) fn max_value_bytes(&self) -> Result<Option<u64>, UsageError> {
        match self.max_value_bytes.as_deref() {
            None => Ok(Some(crate::engine::DEFAULT_MAX_VALUE_BYTES)),
            Some(text) => parse_value_cap(text).map_err(|e| self.refused_value("max_value_bytes", text.trim(), e)),
        }
    }

    /// `--size-classes`: the value-size classes, or None when not split.
    pub(super) fn size_classes(&self) -> Result<Option<std::sync::Arc<crate::metrics::SizeClasses>>, UsageError> {
        let Some(text) = self.size_classes.as_deref() else {
            return Ok(None);
        };
        crate::config::size::parse_size_classes(text)
            .map(|c| Some(std::sync::Arc::new(c)))
            .map_err(|e| self.refused_value("size_classes", text.trim(), e))
    }

    /// The epoch flags, checked one by one.
    pub(super) fn epoch_flags(&self) -> Result<EpochFlags, UsageError> {
        if self.epochs == Some(0) {
            return Err(self.refused_value("epochs", 0, "give at least 1 epoch"));
        }
        if self.extend_ops == Some(0) {
            return Err(self.refused_value("extend_ops", 0, "give at least 1 extend per epoch"));
        }
        let scale = match self.scale {
            Some(f) if !(f.is_finite() && f > 0.0) => {
                return Err(self.refused_value("scale", f, "give a positive factor, e.g. 0.1"));
            }
            other => other,
        };
        Ok(EpochFlags {
            count: self.epochs,
            extend_ops: self.extend_ops,
            extend_bytes: self.extend_bytes,
            extend_dist: self
                .extend_dist
                .as_deref()
                .map(epochs::parse_extend_dist)
                .transpose()
                .map_err(|e| self.refused_flag("extend_dist", e))?,
            modes: self
                .ivs_mode
                .as_deref()
                .map(EpochMode::parse_list)
                .transpose()
                .map_err(|e| self.refused_flag("ivs_mode", e))?,
            scale,
            verify: self.ivs_verify && !self.no_ivs_verify,
        })
    }
}

/// A value cap as written on the command line or in a config file: a positive size, or
/// `none` for no cap.
pub fn parse_value_cap(text: &str) -> Result<Option<u64>, String> {
    match text.trim() {
        "none" => Ok(None),
        t => match parse_size(t) {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(
                "give a positive size in bytes (K, M, G are powers of 1024, e.g. 1600000 or 2M), \
                      or none for no cap"
                    .to_string(),
            ),
        },
    }
}

/// Refuses epoch flags that nothing uses, and flags that epochs cannot honour.
pub(super) fn check(
    flags: &EpochFlags,
    workloads: &[Arc<dyn Workload>],
    seed_once: bool,
    open_loop_flags: &[&str],
) -> Result<(), UsageError> {
    let with: Vec<&Arc<dyn Workload>> = workloads
        .iter()
        .filter(|w| flags.resolve(w.as_ref()).is_some())
        .collect();
    if with.is_empty() {
        if flags.any() {
            return Err(usage(
                "--extend-ops, --extend-bytes, --extend-dist, --ivs-mode, --scale and --ivs-verify apply to epochs: \
                 give --epochs N (or run a spec with an epochs block)",
            ));
        }
        return Ok(());
    }
    for wl in &with {
        wl.epoch_layout().map_err(usage)?;
    }
    let refuse = |flag: &str| {
        Err(usage(format!(
            "{flag} does not apply to epochs (each epoch's phases run closed loop on their own stores): drop it \
             (a config file's rate or SLO: --no-rate turns it off; its seed_once: --no-seed-once)"
        )))
    };
    if let Some(flag) = open_loop_flags.first() {
        return refuse(flag);
    }
    if seed_once {
        return refuse("--seed-once");
    }
    Ok(())
}
