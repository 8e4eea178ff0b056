//! Config files: plain INI. `[bench]` sets run knobs (the long flags, with `_` for
//! `-`); a section named after a compiled-in engine holds that engine's options.
//!
//! A file is read into command-line arguments for the same parser as the flags
//! ([`ConfigFile::args`]: `threads = 1,2` is `--threads=1,2`), and each argument
//! remembers its line, so the parser's complaint about it names the file and line.
//! The command line then lays itself over those arguments (`crate::cli::parse_from`).
//! [`replay::render`] writes the effective run back as a config that reruns the same
//! grid with the same seeds.

pub mod ini;
pub mod replay;
pub mod size;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use self::ini::{ConfigError, Entry};
use crate::engine::{self, EngineOptions};

pub use self::size::{normalize_option, parse_size};

/// The run section's name.
pub const BENCH: &str = "bench";

/// The `[bench]` key naming a workload file; it may repeat, and its values are the
/// command line's positional arguments (which, given, replace them).
pub const WORKLOAD: &str = "workload";

/// Flags a config file cannot set: the file itself, where to save the run, and
/// engine options (those go in the engine's own section).
const NOT_IN_FILES: [&str; 3] = ["config", "save_config", "engine_opt"];

/// One `[bench]` entry as a command-line argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchArg {
    /// The key as written (`seed_once`).
    pub key: String,
    /// The id of the flag the argument sets (`no_seed_once` for `seed_once = false`).
    pub id: String,
    /// 1-based line.
    pub line: usize,
    /// The argument: `--threads=1,2`, `--seed-once`, `--no-seed-once`.
    pub arg: String,
}

/// A config file read: its `[bench]` entries as arguments, its engine sections as
/// engine options.
#[derive(Debug, Clone, Default)]
pub struct ConfigFile {
    /// The file, as named.
    pub path: PathBuf,
    /// `[bench]` entries other than `workload`, as arguments, in file order.
    pub args: Vec<BenchArg>,
    /// The `workload` entries, in file order.
    pub workloads: Vec<PathBuf>,
    /// Each engine section's options, sizes normalised to bytes.
    pub engine_options: BTreeMap<String, EngineOptions>,
    /// Where each engine option was set: (engine, key) to "FILE:LINE".
    pub option_origins: BTreeMap<(String, String), String>,
}

impl ConfigFile {
    /// "FILE:LINE" of `line`.
    pub fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.path.display())
    }
}

/// Reads `path`. `flags` is the command line's parser: a `[bench]` key is one of its
/// long flags (see [`bench_keys`]).
pub fn load(path: &Path, flags: &clap::Command) -> Result<ConfigFile, ConfigError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| ConfigError::file(path, format!("cannot read config file: {e}")))?;
    parse(&text, path, flags)
}

/// Parses config text read from `path`.
pub fn parse(text: &str, path: &Path, flags: &clap::Command) -> Result<ConfigFile, ConfigError> {
    let doc = ini::parse(text, path)?;
    let mut file = ConfigFile {
        path: path.to_path_buf(),
        ..ConfigFile::default()
    };
    for section in &doc.sections {
        if section.name == BENCH {
            bench(&mut file, &section.entries, flags)?;
            continue;
        }
        if engine::find(&section.name).is_none() {
            let names: Vec<&str> = engine::registry().iter().map(|e| e.name).collect();
            return Err(ConfigError::at(
                path,
                section.line,
                format!(
                    "unknown section [{}]: sections are [bench] or a compiled-in engine ({})",
                    section.name,
                    names.join(", ")
                ),
            ));
        }
        let opts = file.engine_options.entry(section.name.clone()).or_default();
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &section.entries {
            if let Some(first) = seen.insert(&e.key, e.line) {
                return Err(ConfigError::at(
                    path,
                    e.line,
                    format!("'{}' is set twice in [{}] (first on line {first})", e.key, section.name),
                ));
            }
            let value = normalize_option(&e.value)
                .map_err(|m| ConfigError::at(path, e.line, format!("[{}] {}: {m}", section.name, e.key)))?;
            opts.set(e.key.clone(), value);
            file.option_origins.insert(
                (section.name.clone(), e.key.clone()),
                format!("{}:{}", path.display(), e.line),
            );
        }
    }
    Ok(file)
}

/// The flags a `[bench]` key can set: every long flag that takes a value, and every
/// switch that has a `--no-` partner, bar [`NOT_IN_FILES`].
fn settable(flags: &clap::Command) -> impl Iterator<Item = &clap::Arg> {
    flags.get_arguments().filter(move |a| {
        let id = a.get_id().as_str();
        a.get_long().is_some()
            && !id.starts_with("no_")
            && !NOT_IN_FILES.contains(&id)
            && (a.get_action().takes_values()
                || flags.get_arguments().any(|b| b.get_id().as_str() == format!("no_{id}")))
    })
}

/// Every key `[bench]` accepts, in the order the flags are defined.
pub fn bench_keys(flags: &clap::Command) -> Vec<String> {
    std::iter::once(WORKLOAD.to_string())
        .chain(settable(flags).map(|a| a.get_id().to_string()))
        .collect()
}

/// Turns `[bench]` entries into arguments for `flags`, refusing unknown, repeated and
/// empty keys and malformed switches and lists; the parser checks the values.
fn bench(file: &mut ConfigFile, entries: &[Entry], flags: &clap::Command) -> Result<(), ConfigError> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for e in entries {
        let key = e.key.replace('-', "_");
        let err = |msg: String| ConfigError::at(&file.path, e.line, format!("{}: {msg}", e.key));
        let Some(flag) = settable(flags).find(|a| a.get_id() == key.as_str()) else {
            if key != WORKLOAD {
                return Err(err(format!(
                    "unknown key in [bench] (known: {})",
                    bench_keys(flags).join(", ")
                )));
            }
            if e.value.is_empty() {
                return Err(err("the value is missing".into()));
            }
            file.workloads.push(PathBuf::from(&e.value));
            continue;
        };
        if let Some(first) = seen.insert(key.clone(), e.line) {
            return Err(err(format!("set twice in [bench] (first on line {first})")));
        }
        if e.value.is_empty() {
            return Err(err("the value is missing".into()));
        }
        let long = flag.get_long().unwrap_or(&key);
        let (id, arg) = if !flag.get_action().takes_values() {
            match switch(&e.value).ok_or_else(|| err(format!("'{}' is not a boolean (true or false)", e.value)))? {
                true => (key.clone(), format!("--{long}")),
                false => (format!("no_{key}"), format!("--no-{long}")),
            }
        } else if let Some(delim) = flag.get_value_delimiter() {
            // Items may be spaced in a file (`threads = 1, 2`).
            let items: Vec<&str> = e.value.split(delim).map(str::trim).collect();
            if items.iter().any(|i| i.is_empty()) {
                return Err(err(format!("'{}' has an empty item in its list", e.value)));
            }
            (key.clone(), format!("--{long}={}", items.join(&delim.to_string())))
        } else {
            (key.clone(), format!("--{long}={}", e.value))
        };
        file.args.push(BenchArg {
            key: e.key.clone(),
            id,
            line: e.line,
            arg,
        });
    }
    Ok(())
}

/// A switch's value in a file.
fn switch(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}
