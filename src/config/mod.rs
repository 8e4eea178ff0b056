//! Config files: plain INI. `[bench]` sets run knobs (the long flags, with `_` for
//! `-`); a section named after a compiled-in engine holds that engine's options.
//! `--config FILE` loads one; every command-line flag then overrides it
//! ([`apply`]). [`replay::render`] writes the effective run back as a config that
//! reruns the same grid with the same seeds.
//!
//! Values are checked when the file is read, and a bad one is an error naming the
//! file, the line and the key, never a silent default.

pub mod ini;
pub mod replay;
pub mod size;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use self::ini::{ConfigError, Entry};
use crate::cli::{RunArgs, UsageError, normalize_option};
use crate::engine;
use crate::kv::pace::{Arrival, Rate};
use crate::probe::ProbeSet;
use crate::report::setup;
use crate::result::slo::Slo;

pub use self::size::parse_size;

/// Every key `[bench]` accepts. `workload` may repeat; the others appear once.
/// Engine options go in the engine's own section.
pub const BENCH_KEYS: [&str; 33] = [
    "workload",
    "backend",
    "threads",
    "batch",
    "ops",
    "secs",
    "repeat",
    "users",
    "items",
    "seed",
    "seed_threads",
    "seed_once",
    "keep_data",
    "settle",
    "data_dir",
    "timeline",
    "probe",
    "report",
    "report_dir",
    "auto_plot",
    "rate",
    "arrival",
    "warmup",
    "slo",
    "slo_secs",
    "epochs",
    "extend_ops",
    "extend_bytes",
    "extend_dist",
    "ivs_mode",
    "scale",
    "ivs_verify",
    "max_value_bytes",
];

/// The run section's name.
pub const BENCH: &str = "bench";

/// Reads `path` into run arguments (the file's layer, before the command line).
pub fn load(path: &Path) -> Result<RunArgs, ConfigError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| ConfigError::file(path, format!("cannot read config file: {e}")))?;
    parse(&text, path)
}

/// Parses config text read from `path`.
pub fn parse(text: &str, path: &Path) -> Result<RunArgs, ConfigError> {
    let doc = ini::parse(text, path)?;
    let mut args = RunArgs::default();
    for section in &doc.sections {
        if section.name == BENCH {
            bench(&mut args, &section.entries, path)?;
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
        let opts = args.file_engine_options.entry(section.name.clone()).or_default();
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
            args.file_option_origins.insert(
                (section.name.clone(), e.key.clone()),
                format!("{}:{}", path.display(), e.line),
            );
        }
    }
    Ok(args)
}

/// Reads one `[bench]` entry's value.
struct Val<'a> {
    e: &'a Entry,
    path: &'a Path,
}

impl Val<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> ConfigError {
        ConfigError::at(self.path, self.e.line, format!("{}: {msg}", self.e.key))
    }

    fn text(&self) -> Result<&str, ConfigError> {
        if self.e.value.is_empty() {
            return Err(self.err("the value is missing"));
        }
        Ok(&self.e.value)
    }

    fn int<T: std::str::FromStr>(&self) -> Result<T, ConfigError> {
        let t = self.text()?;
        if !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.err(format!("'{t}' is not a whole number")));
        }
        t.parse().map_err(|_| self.err(format!("'{t}' is out of range")))
    }

    fn float(&self) -> Result<f64, ConfigError> {
        let t = self.text()?;
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
            _ => Err(self.err(format!("'{t}' is not a positive number of seconds"))),
        }
    }

    fn boolean(&self) -> Result<bool, ConfigError> {
        match self.text()?.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            other => Err(self.err(format!("'{other}' is not a boolean (true or false)"))),
        }
    }

    fn list(&self) -> Result<Vec<String>, ConfigError> {
        let items: Vec<String> = self.text()?.split(',').map(|s| s.trim().to_string()).collect();
        if items.iter().any(String::is_empty) {
            return Err(self.err(format!("'{}' has an empty item in its list", self.e.value)));
        }
        Ok(items)
    }

    fn positive_list(&self) -> Result<Vec<usize>, ConfigError> {
        self.list()?
            .iter()
            .map(|item| match item.parse::<usize>() {
                Ok(n) if n > 0 && item.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
                _ => Err(self.err(format!("'{item}' is not a positive whole number"))),
            })
            .collect()
    }

    fn path(&self) -> Result<PathBuf, ConfigError> {
        Ok(PathBuf::from(self.text()?))
    }
}

fn bench(args: &mut RunArgs, entries: &[Entry], path: &Path) -> Result<(), ConfigError> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for e in entries {
        let key = e.key.replace('-', "_");
        let v = Val { e, path };
        if !BENCH_KEYS.contains(&key.as_str()) {
            return Err(v.err(format!("unknown key in [bench] (known: {})", BENCH_KEYS.join(", "))));
        }
        if key != "workload"
            && let Some(first) = seen.insert(key.clone(), e.line)
        {
            return Err(v.err(format!("set twice in [bench] (first on line {first})")));
        }
        match key.as_str() {
            "workload" => args.workloads.push(v.path()?),
            "backend" => {
                let names = v.list()?;
                crate::cli::resolve_engines(Some(&names)).map_err(|u| v.err(u.0))?;
                args.backend = Some(names);
            }
            "threads" => args.threads = Some(v.positive_list()?),
            "batch" => args.batch = Some(v.positive_list()?),
            "ops" => {
                let n: u64 = v.int()?;
                if n == 0 {
                    return Err(v.err("give a positive number of units"));
                }
                args.ops = Some(n);
            }
            "secs" => args.secs = Some(v.float()?),
            "repeat" => {
                let n: usize = v.int()?;
                if n == 0 {
                    return Err(v.err("give at least 1"));
                }
                args.repeat = Some(n);
            }
            "users" => args.users = Some(v.int()?),
            "items" => args.items = Some(v.int()?),
            "seed" => args.seed = Some(v.int()?),
            "seed_threads" => {
                let n: usize = v.int()?;
                if n == 0 {
                    return Err(v.err("give at least 1"));
                }
                args.seed_threads = Some(n);
            }
            "seed_once" => {
                let b = v.boolean()?;
                (args.seed_once, args.no_seed_once) = (b, !b);
            }
            "keep_data" => {
                let b = v.boolean()?;
                (args.keep_data, args.no_keep_data) = (b, !b);
            }
            "settle" => {
                let b = v.boolean()?;
                (args.settle, args.no_settle) = (b, !b);
            }
            "data_dir" => args.data_dir = Some(v.path()?),
            "timeline" => {
                let s = v.float()?;
                if !crate::cli::timeline_ok(s) {
                    return Err(v.err(format!(
                        "{s} is not a sample period from {} to {} seconds",
                        crate::cli::MIN_TIMELINE,
                        crate::cli::MAX_TIMELINE
                    )));
                }
                args.timeline = Some(s);
            }
            "probe" => {
                let list = v.list()?;
                ProbeSet::parse(&list).map_err(|m| v.err(m))?;
                args.probe = Some(list);
            }
            "report" => {
                let list = v.list()?;
                setup::parse_list(&list).map_err(|m| v.err(m))?;
                args.report = Some(list);
            }
            "report_dir" => args.report_dir = Some(v.path()?),
            "auto_plot" => {
                let b = v.boolean()?;
                (args.auto_plot, args.no_auto_plot) = (b, !b);
            }
            "rate" => {
                let list = v.list()?;
                for r in &list {
                    Rate::parse(r).map_err(|m| v.err(m))?;
                }
                args.rate = Some(list);
            }
            "arrival" => {
                let text = v.text()?.to_string();
                Arrival::parse(&text).map_err(|m| v.err(m))?;
                args.arrival = Some(text);
            }
            "warmup" => {
                let t = v.text()?;
                match t.parse::<f64>() {
                    Ok(w) if w.is_finite() && w >= 0.0 => args.warmup = Some(w),
                    _ => return Err(v.err(format!("'{t}' is not a number of seconds, 0 or more"))),
                }
            }
            "slo" => {
                let text = v.text()?.to_string();
                Slo::parse(&text).map_err(|m| v.err(m))?;
                args.slo = Some(text);
            }
            "slo_secs" => args.slo_secs = Some(v.float()?),
            "epochs" => {
                let n: u32 = v.int()?;
                if n == 0 {
                    return Err(v.err("give at least 1 epoch"));
                }
                args.epochs = Some(n);
            }
            "extend_ops" => {
                let n: u64 = v.int()?;
                if n == 0 {
                    return Err(v.err("give at least 1 extend per epoch"));
                }
                args.extend_ops = Some(n);
            }
            "extend_bytes" => args.extend_bytes = Some(v.int()?),
            "extend_dist" => {
                let text = v.text()?.to_string();
                crate::workload::epochs::parse_extend_dist(&text).map_err(|m| v.err(m))?;
                args.extend_dist = Some(text);
            }
            "ivs_mode" => {
                let list = v.list()?;
                crate::workload::epochs::EpochMode::parse_list(&list).map_err(|m| v.err(m))?;
                args.ivs_mode = Some(list);
            }
            "scale" => {
                let t = v.text()?;
                match t.parse::<f64>() {
                    Ok(f) if f.is_finite() && f > 0.0 => args.scale = Some(f),
                    _ => return Err(v.err(format!("'{t}' is not a positive factor"))),
                }
            }
            "ivs_verify" => {
                let b = v.boolean()?;
                (args.ivs_verify, args.no_ivs_verify) = (b, !b);
            }
            "max_value_bytes" => {
                let t = v.text()?.to_string();
                crate::cli::epochs::parse_value_cap(&t).map_err(|e| v.err(e))?;
                args.max_value_bytes = Some(t);
            }
            other => unreachable!("{other} is in BENCH_KEYS"),
        }
    }
    Ok(())
}

/// Loads `--config` (if given) and lays the command line over it: any flag given on
/// the command line wins, booleans included (`--no-seed-once` switches off a file's
/// `seed_once = true`). A bound given on the command line (`--ops` or `--secs`)
/// replaces the file's bound entirely.
pub fn apply(cli: RunArgs) -> Result<RunArgs, UsageError> {
    let Some(path) = cli.config.clone() else {
        return Ok(cli);
    };
    let file = load(&path).map_err(|e| UsageError(e.to_string()))?;
    Ok(overlay(file, cli))
}

/// `cli` over `file`.
pub fn overlay(file: RunArgs, cli: RunArgs) -> RunArgs {
    let bound_on_cli = cli.ops.is_some() || cli.secs.is_some();
    let (seed_once, no_seed_once) = if cli.seed_once || cli.no_seed_once {
        (cli.seed_once, cli.no_seed_once)
    } else {
        (file.seed_once, file.no_seed_once)
    };
    let (keep_data, no_keep_data) = if cli.keep_data || cli.no_keep_data {
        (cli.keep_data, cli.no_keep_data)
    } else {
        (file.keep_data, file.no_keep_data)
    };
    let (settle, no_settle) = if cli.settle || cli.no_settle {
        (cli.settle, cli.no_settle)
    } else {
        (file.settle, file.no_settle)
    };
    let (auto_plot, no_auto_plot) = if cli.auto_plot || cli.no_auto_plot {
        (cli.auto_plot, cli.no_auto_plot)
    } else {
        (file.auto_plot, file.no_auto_plot)
    };
    let (ivs_verify, no_ivs_verify) = if cli.ivs_verify || cli.no_ivs_verify {
        (cli.ivs_verify, cli.no_ivs_verify)
    } else {
        (file.ivs_verify, file.no_ivs_verify)
    };
    // Open loop has two modes that exclude each other: a rate given on the command line
    // replaces the file's SLO search and the other way round; --no-rate drops both.
    let (rate, slo, arrival, slo_secs) = if cli.no_rate {
        (None, None, None, None)
    } else if cli.rate.is_some() && cli.slo.is_none() {
        (cli.rate, None, cli.arrival.or(file.arrival), cli.slo_secs)
    } else if cli.slo.is_some() && cli.rate.is_none() {
        (
            None,
            cli.slo,
            cli.arrival.or(file.arrival),
            cli.slo_secs.or(file.slo_secs),
        )
    } else {
        (
            cli.rate.or(file.rate),
            cli.slo.or(file.slo),
            cli.arrival.or(file.arrival),
            cli.slo_secs.or(file.slo_secs),
        )
    };
    RunArgs {
        workloads: if cli.workloads.is_empty() {
            file.workloads
        } else {
            cli.workloads
        },
        ops: if bound_on_cli { cli.ops } else { file.ops },
        secs: if bound_on_cli { cli.secs } else { file.secs },
        threads: cli.threads.or(file.threads),
        batch: cli.batch.or(file.batch),
        backend: cli.backend.or(file.backend),
        repeat: cli.repeat.or(file.repeat),
        users: cli.users.or(file.users),
        items: cli.items.or(file.items),
        seed: cli.seed.or(file.seed),
        seed_threads: cli.seed_threads.or(file.seed_threads),
        seed_once,
        no_seed_once,
        data_dir: cli.data_dir.or(file.data_dir),
        keep_data,
        no_keep_data,
        settle,
        no_settle,
        engine_opt: cli.engine_opt,
        timeline: if cli.no_timeline {
            None
        } else {
            cli.timeline.or(file.timeline)
        },
        no_timeline: cli.no_timeline,
        probe: cli.probe.or(file.probe),
        report: cli.report.or(file.report),
        report_dir: if cli.no_report_dir {
            None
        } else {
            cli.report_dir.or(file.report_dir)
        },
        no_report_dir: cli.no_report_dir,
        auto_plot,
        no_auto_plot,
        config: cli.config,
        save_config: cli.save_config,
        rate,
        no_rate: cli.no_rate,
        arrival,
        warmup: cli.warmup.or(file.warmup),
        slo,
        slo_secs,
        epochs: cli.epochs.or(file.epochs),
        extend_ops: cli.extend_ops.or(file.extend_ops),
        extend_bytes: cli.extend_bytes.or(file.extend_bytes),
        extend_dist: cli.extend_dist.or(file.extend_dist),
        ivs_mode: cli.ivs_mode.or(file.ivs_mode),
        scale: cli.scale.or(file.scale),
        ivs_verify,
        no_ivs_verify,
        max_value_bytes: cli.max_value_bytes.or(file.max_value_bytes),
        file_engine_options: file.file_engine_options,
        file_option_origins: file.file_option_origins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<RunArgs, ConfigError> {
        parse(text, Path::new("run.cnf"))
    }

    #[test]
    fn every_bench_key_reads() {
        let args = p("[bench]\n\
            workload = a.lua\nworkload = b.lua\nbackend = skiplist\nthreads = 1,2\nbatch = 4\n\
            ops = 500\nsecs = 1.5\nrepeat = 3\nusers = 7\nitems = 9\nseed = 42\nseed_threads = 2\n\
            seed_once = yes\nkeep_data = false\ndata_dir = /tmp\ntimeline = 0.2\nprobe = build\n\
            report = console,tsv:x.tsv\nreport_dir = out\nauto_plot = on\nrate = 5000,200MB/s\narrival = poisson\n\
            warmup = 0.5\nslo = p99<2ms\nslo_secs = 3\n")
        .unwrap();
        assert_eq!(args.workloads, vec![PathBuf::from("a.lua"), PathBuf::from("b.lua")]);
        assert_eq!(args.threads, Some(vec![1, 2]));
        assert_eq!(args.batch, Some(vec![4]));
        assert_eq!((args.ops, args.secs, args.repeat), (Some(500), Some(1.5), Some(3)));
        assert_eq!((args.users, args.items, args.seed), (Some(7), Some(9), Some(42)));
        assert_eq!(args.seed_threads, Some(2));
        assert!(args.seed_once && !args.no_seed_once);
        assert!(!args.keep_data && args.no_keep_data);
        assert_eq!(args.timeline, Some(0.2));
        assert_eq!(args.probe, Some(vec!["build".to_string()]));
        assert_eq!(args.report.as_ref().unwrap().len(), 2);
        assert_eq!(args.report_dir, Some(PathBuf::from("out")));
        assert!(args.auto_plot && !args.no_auto_plot);
        assert_eq!(args.rate, Some(vec!["5000".to_string(), "200MB/s".to_string()]));
        assert_eq!(args.arrival.as_deref(), Some("poisson"));
        assert_eq!((args.warmup, args.slo_secs), (Some(0.5), Some(3.0)));
        assert_eq!(args.slo.as_deref(), Some("p99<2ms"));
    }

    #[test]
    fn engine_sections_keep_option_strings_and_normalise_sizes() {
        let args = p("[skiplist]\nwrite_buffer_size = 64M\n\
            block_based_table_factory = {block_cache=64M;filter_policy=bloomfilter:10:false} ; parity\n\
            compression = kNoCompression\n")
        .unwrap();
        let o = &args.file_engine_options["skiplist"];
        assert_eq!(o.get("write_buffer_size"), Some("67108864"));
        assert_eq!(
            o.get("block_based_table_factory"),
            Some("{block_cache=64M;filter_policy=bloomfilter:10:false}")
        );
        assert_eq!(o.get("compression"), Some("kNoCompression"));
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let cases = [
            (
                "[bench]\nthreads = 1,x\n",
                2,
                "threads: 'x' is not a positive whole number",
            ),
            ("[bench]\nops = 1e6\n", 2, "ops: '1e6' is not a whole number"),
            ("[bench]\n\nsecs = -3\n", 3, "secs: '-3' is not a positive number"),
            ("[bench]\nseed_once = maybe\n", 2, "seed_once: 'maybe' is not a boolean"),
            ("[bench]\nthreds = 2\n", 2, "threds: unknown key in [bench]"),
            (
                "[bench]\nops = 1\nops = 2\n",
                3,
                "ops: set twice in [bench] (first on line 2)",
            ),
            ("[bench]\nbackend = nosuch\n", 2, "unknown engine 'nosuch'"),
            ("[bench]\nreport = csv\n", 2, "unknown report sink 'csv'"),
            ("[bench]\nprobe = gpu\n", 2, "unknown probe 'gpu'"),
            ("[bench]\ndata_dir =\n", 2, "data_dir: the value is missing"),
            (
                "[bench]\ntimeline = 0.001\n",
                2,
                "timeline: 0.001 is not a sample period from 0.01",
            ),
            ("[bench]\nrate = fast\n", 2, "rate: "),
            ("[bench]\narrival = burst\n", 2, "arrival: "),
            ("[bench]\nwarmup = -1\n", 2, "warmup: '-1' is not a number of seconds"),
            ("[bench]\nslo = quick\n", 2, "slo: "),
            (
                "[skiplist]\nwrite_buffer_size = 64MB\n",
                2,
                "write_buffer_size: '64MB': unknown size suffix 'MB'",
            ),
            ("[rocksdbx]\na = 1\n", 1, "unknown section [rocksdbx]"),
        ];
        for (text, line, msg) in cases {
            let err = p(text).unwrap_err();
            assert_eq!(err.line, Some(line), "{text}: {err}");
            let shown = err.to_string();
            assert!(shown.starts_with(&format!("run.cnf:{line}: ")), "{shown}");
            assert!(shown.contains(msg), "{text}: {shown}");
        }
    }

    #[test]
    fn the_command_line_wins_over_the_file() {
        let file =
            p("[bench]\nworkload = f.lua\nops = 100\nthreads = 1\nseed_once = true\ntimeline = 1\nreport_dir = d\nauto_plot = yes\n")
                .unwrap();
        let cli = RunArgs {
            secs: Some(2.0),
            threads: Some(vec![4]),
            no_seed_once: true,
            no_timeline: true,
            no_report_dir: true,
            no_auto_plot: true,
            ..RunArgs::default()
        };
        let m = overlay(file.clone(), cli);
        assert_eq!(m.workloads, vec![PathBuf::from("f.lua")]);
        assert_eq!(
            (m.ops, m.secs),
            (None, Some(2.0)),
            "a bound on the command line replaces the file's"
        );
        assert_eq!(m.threads, Some(vec![4]));
        assert!(!m.seed_once && m.no_seed_once);
        assert_eq!(m.timeline, None);
        assert_eq!(m.report_dir, None);
        assert!(!m.auto_plot && m.no_auto_plot, "--no-auto-plot switches the file's off");
        let kept = overlay(file, RunArgs::default());
        assert_eq!(kept.ops, Some(100));
        assert!(kept.seed_once);
        assert_eq!(kept.timeline, Some(1.0));
        assert!(kept.auto_plot);
    }

    #[test]
    fn a_rate_or_slo_on_the_command_line_replaces_the_files_open_loop_mode() {
        let paced = p("[bench]\nrate = 1000\narrival = poisson\n").unwrap();
        let searching = p("[bench]\nslo = p99<1ms\nslo_secs = 3\n").unwrap();
        let m = overlay(
            paced.clone(),
            RunArgs {
                slo: Some("p99<2ms".into()),
                ..RunArgs::default()
            },
        );
        assert_eq!((m.rate, m.slo.as_deref()), (None, Some("p99<2ms")));
        assert_eq!(
            m.arrival.as_deref(),
            Some("poisson"),
            "arrivals apply to SLO probes too"
        );
        let m = overlay(
            searching.clone(),
            RunArgs {
                rate: Some(vec!["500".into()]),
                ..RunArgs::default()
            },
        );
        assert_eq!((m.rate, m.slo, m.slo_secs), (Some(vec!["500".to_string()]), None, None));
        for file in [paced, searching] {
            let m = overlay(
                file,
                RunArgs {
                    no_rate: true,
                    ..RunArgs::default()
                },
            );
            assert_eq!((m.rate, m.slo, m.arrival, m.slo_secs), (None, None, None, None));
        }
    }
}
