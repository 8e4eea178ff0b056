//! Probes record the context a benchmark does not produce itself: the machine and
//! the disk behind `--data-dir` (`system`), and how kvmark was built (`build`). The
//! system probe is also sampled live for the timeline ([`live`]).

pub mod build;
pub mod clocksync;
pub mod device;
pub mod du;
pub mod live;
pub mod system;

use std::path::Path;

/// The probes to run (`--probe LIST|all|none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeSet {
    /// Machine, OS, CPU, memory and the data directory's device; live system samples.
    pub system: bool,
    /// kvmark's version and commit, compiler, profile, allocator, Lua, engine versions.
    pub build: bool,
}

/// Every probe name, in report order.
pub const PROBE_NAMES: [&str; 2] = ["system", "build"];

impl Default for ProbeSet {
    fn default() -> Self {
        ProbeSet::ALL
    }
}

impl ProbeSet {
    /// Every probe (the default).
    pub const ALL: ProbeSet = ProbeSet {
        system: true,
        build: true,
    };
    /// No probe.
    pub const NONE: ProbeSet = ProbeSet {
        system: false,
        build: false,
    };

    /// Parses a list of probe names, or `all`, or `none`.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<ProbeSet, String> {
        let mut set = ProbeSet::NONE;
        let names: Vec<&str> = items.iter().map(|s| s.as_ref().trim()).collect();
        if names.is_empty() || names.iter().any(|n| n.is_empty()) {
            return Err("give probe names (system, build), all, or none".to_string());
        }
        if names.len() > 1 && names.iter().any(|n| *n == "none" || *n == "all") {
            return Err("'all' and 'none' stand alone; otherwise list probes: system,build".to_string());
        }
        for name in names {
            match name {
                "all" => set = ProbeSet::ALL,
                "none" => set = ProbeSet::NONE,
                "system" => set.system = true,
                "build" => set.build = true,
                other => {
                    return Err(format!(
                        "unknown probe '{other}' (known: {}, or all, or none)",
                        PROBE_NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(set)
    }

    /// The canonical list form, as a config file writes it.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.system {
            v.push("system");
        }
        if self.build {
            v.push("build");
        }
        if v.is_empty() {
            v.push("none");
        }
        v
    }
}

/// What one probe found: ordered name/value pairs, printed in the console header and
/// stored in the json report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// `system` or `build`.
    pub name: String,
    /// Facts in report order.
    pub entries: Vec<(String, String)>,
}

/// Runs the selected probes. `data_dir` is the disk the run exercises, if any.
pub fn collect(set: ProbeSet, data_dir: Option<&Path>) -> Vec<Probe> {
    let mut out = Vec::new();
    if set.system {
        out.push(Probe {
            name: "system".to_string(),
            entries: system::facts(data_dir),
        });
    }
    if set.build {
        out.push(Probe {
            name: "build".to_string(),
            entries: build::facts(),
        });
    }
    out
}

/// Bytes in binary units: "23.5 GiB".
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_lists() {
        assert_eq!(ProbeSet::parse(&["all"]), Ok(ProbeSet::ALL));
        assert_eq!(ProbeSet::parse(&["none"]), Ok(ProbeSet::NONE));
        assert_eq!(
            ProbeSet::parse(&["build"]),
            Ok(ProbeSet {
                system: false,
                build: true
            })
        );
        assert_eq!(ProbeSet::parse(&["system", "build"]), Ok(ProbeSet::ALL));
        assert!(ProbeSet::parse(&["cpu"]).unwrap_err().contains("unknown probe 'cpu'"));
        assert!(ProbeSet::parse(&["none", "build"]).is_err());
        assert!(ProbeSet::parse::<&str>(&[]).is_err());
        assert_eq!(ProbeSet::NONE.names(), vec!["none"]);
        assert_eq!(ProbeSet::ALL.names(), vec!["system", "build"]);
    }

    #[test]
    fn binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(64 << 30), "64.0 GiB");
    }
}
