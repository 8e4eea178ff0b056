//! From argv to [`Cli`]: a config file's `[bench]` entries become arguments for the
//! same parser, placed ahead of argv so the command line wins (ripgrep's config file
//! works this way), and a complaint about one of them names its FILE:LINE.

use std::ffi::OsString;
use std::fmt;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use super::{Cli, Command};
use crate::config::ini::ConfigError;
use crate::config::{self, ConfigFile};

/// Why a command line was not parsed.
#[derive(Debug)]
pub enum ParseError {
    /// The parser's own error, help or version (print with `exit()`).
    Clap(clap::Error),
    /// A problem in the config file, located.
    Config(ConfigError),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Clap(e) => write!(f, "{e}"),
            ParseError::Config(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Flags that replace more of a config file than their own key (beyond `--no-X`
/// replacing `X` and the other way round): a bound replaces the file's other bound, a
/// rate replaces its SLO search and the other way round, and `--no-rate` drops all of
/// its open-loop settings.
const REPLACES: [(&str, &[&str]); 5] = [
    ("ops", &["secs"]),
    ("secs", &["ops"]),
    ("rate", &["slo", "slo_secs"]),
    ("slo", &["rate"]),
    ("no_rate", &["slo", "arrival", "slo_secs"]),
];

/// True when flag `given` on the command line replaces a config file's flag `file`.
fn replaces(given: &str, file: &str) -> bool {
    given == file
        || given.strip_prefix("no_") == Some(file)
        || file.strip_prefix("no_") == Some(given)
        || REPLACES.iter().any(|(g, fs)| *g == given && fs.contains(&file))
}

/// Parses `argv` (program name first). With `--config FILE`, the file's `[bench]`
/// entries are parsed first on their own (so a bad value names its line), then again
/// ahead of argv, less those the command line replaces; its engine sections become
/// the run's file engine options.
pub fn parse_from<I, T>(argv: I) -> Result<Cli, ParseError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv = ycsb_flags(argv.into_iter().map(Into::into).collect());
    let matches = Cli::command().try_get_matches_from(&argv).map_err(ParseError::Clap)?;
    // Run flags sit after the program name, or after `replay`.
    let (run, at) = match matches.subcommand() {
        None => (&matches, 1),
        Some(("replay", sub)) => (sub, 2),
        Some(_) => return Cli::from_arg_matches(&matches).map_err(ParseError::Clap),
    };
    let Some(path) = run.get_one::<std::path::PathBuf>("config") else {
        return Cli::from_arg_matches(&matches).map_err(ParseError::Clap);
    };
    let file = config::load(path, &Cli::command()).map_err(ParseError::Config)?;
    with_config(&argv, at, run, &file)
}

/// Parses config text as `kvmark --config PATH` with no other argument would, without
/// reading a file (the fuzz targets and property tests call this).
pub fn parse_config_text(text: &str, path: &std::path::Path) -> Result<Cli, ParseError> {
    let file = config::parse(text, path, &Cli::command()).map_err(ParseError::Config)?;
    let argv = [OsString::from("kvmark")];
    let matches = Cli::command().try_get_matches_from(&argv).map_err(ParseError::Clap)?;
    with_config(&argv, 1, &matches, &file)
}

/// Reads YCSB's single-dash client flags as kvmark's: `-load` is `--ycsb-load`,
/// `-threads N` is `--threads N` and `-target N` is `-p target=N`, so a YCSB command
/// line runs as it is (clap would read `-load` as four short flags).
fn ycsb_flags(argv: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(argv.len());
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("-load") => out.push("--ycsb-load".into()),
            Some("-threads") => out.push("--threads".into()),
            Some("-target") => {
                out.push("-p".into());
                let mut v = OsString::from("target=");
                v.push(it.next().unwrap_or_default());
                out.push(v);
            }
            _ => out.push(a),
        }
    }
    out
}

/// Lays `argv`, whose run flags start at index `at` and parsed as `given`, over `file`.
fn with_config(argv: &[OsString], at: usize, given: &ArgMatches, file: &ConfigFile) -> Result<Cli, ParseError> {
    let alone = std::iter::once("kvmark").chain(file.args.iter().map(|a| a.arg.as_str()));
    Cli::command()
        .try_get_matches_from(alone)
        .map_err(|e| ParseError::Config(located(file, &e)))?;
    let on_cli: Vec<&str> = given
        .ids()
        .map(|id| id.as_str())
        .filter(|id| given.value_source(id) == Some(ValueSource::CommandLine))
        .collect();
    let kept: Vec<&config::BenchArg> = file
        .args
        .iter()
        .filter(|a| !on_cli.iter().any(|g| replaces(g, &a.id)))
        .collect();
    let mut merged = argv[..at].to_vec();
    merged.extend(kept.iter().map(|a| OsString::from(&a.arg)));
    merged.extend_from_slice(&argv[at..]);
    let matches = Cli::command().try_get_matches_from(merged).map_err(ParseError::Clap)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(ParseError::Clap)?;
    let run = match &mut cli.command {
        Some(Command::Replay(run)) => run.as_mut(),
        _ => &mut cli.run,
    };
    if run.workloads.is_empty() {
        run.workloads = file.workloads.clone();
    }
    run.file_engine_options = file.engine_options.clone();
    run.file_option_origins = file.option_origins.clone();
    run.file_arg_origins = kept.iter().map(|a| (a.id.clone(), file.at(a.line))).collect();
    Ok(cli)
}

/// The parser's complaint about one of `file`'s arguments, at its line.
fn located(file: &ConfigFile, e: &clap::Error) -> ConfigError {
    // The error names the flag as "--threads <LIST>".
    let long = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.strip_prefix("--").and_then(|s| s.split([' ', '=']).next()),
        _ => None,
    };
    let arg = long.and_then(|long| file.args.iter().find(|a| a.id.replace('_', "-") == long));
    let why = match (e.kind(), std::error::Error::source(e)) {
        (ErrorKind::ValueValidation, Some(source)) => source.to_string(),
        _ => e
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_string(),
    };
    match arg {
        Some(a) => ConfigError::at(&file.path, a.line, format!("{}: {why}", a.key)),
        None => ConfigError::file(&file.path, why),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use super::*;
    use crate::cli::RunArgs;
    use crate::workload::{Workload, WorkloadError};

    /// The run flags of `argv` laid over config `text` read from run.cnf.
    fn over(text: &str, argv: &[&str]) -> Result<RunArgs, String> {
        let file = config::parse(text, Path::new("run.cnf"), &Cli::command()).map_err(|e| e.to_string())?;
        let argv: Vec<OsString> = std::iter::once("kvmark")
            .chain(argv.iter().copied())
            .map(OsString::from)
            .collect();
        let given = Cli::command().try_get_matches_from(&argv).map_err(|e| e.to_string())?;
        Ok(with_config(&argv, 1, &given, &file).map_err(|e| e.to_string())?.run)
    }

    fn p(text: &str) -> Result<RunArgs, String> {
        over(text, &[])
    }

    fn no_workload(_: &Path) -> Result<Arc<dyn Workload>, WorkloadError> {
        Err(WorkloadError::Invalid("these tests open no workload".into()))
    }

    /// The first complaint about a config file alone: reading it, or planning its run.
    fn complaint(text: &str) -> String {
        let args = match p(text) {
            Ok(args) => args,
            Err(e) => return e,
        };
        if let Err(e) = args.outputs() {
            return e.0;
        }
        args.into_plan_with(&no_workload).err().map(|e| e.0).unwrap_or_default()
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
    fn spaced_lists_and_dashed_keys_read() {
        let args = p("[bench]\nthreads = 1, 2 ,4\nseed-once = true\n").unwrap();
        assert_eq!(args.threads, Some(vec![1, 2, 4]));
        assert!(args.seed_once);
        let err = p("[bench]\nthreads = 1,,2\n").unwrap_err();
        assert!(err.starts_with("run.cnf:2: threads: '1,,2' has an empty item"), "{err}");
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
        assert_eq!(
            args.file_option_origins[&("skiplist".to_string(), "compression".to_string())],
            "run.cnf:4"
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let cases = [
            (
                "[bench]\nthreads = 1,x\n",
                2,
                "threads: 'x' is not a positive whole number",
            ),
            (
                "[bench]\nthreads = 2,0\n",
                2,
                "threads: '0' is not a positive whole number",
            ),
            ("[bench]\nops = 1e6\n", 2, "ops: '1e6' is not a whole number"),
            ("[bench]\nops = 0\n", 2, "ops: give a positive number of units"),
            ("[bench]\n\nsecs = -3\n", 3, "secs: '-3' is not a positive number"),
            ("[bench]\nseed_once = maybe\n", 2, "seed_once: 'maybe' is not a boolean"),
            ("[bench]\nthreds = 2\n", 2, "threds: unknown key in [bench]"),
            ("[bench]\nconfig = x.cnf\n", 2, "config: unknown key in [bench]"),
            (
                "[bench]\nno_seed_once = true\n",
                2,
                "no_seed_once: unknown key in [bench]",
            ),
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
                "[bench]\nbackend = rocksdb\ndata_dir = /no/such/dir\n",
                3,
                "data_dir: not an existing directory",
            ),
            (
                "[bench]\ntimeline = 0.001\n",
                2,
                "timeline: 0.001 is not a sample period from 0.01",
            ),
            ("[bench]\nrate = fast\n", 2, "rate: "),
            ("[bench]\narrival = burst\n", 2, "arrival: "),
            ("[bench]\nwarmup = -1\n", 2, "warmup: '-1' is not a number of seconds"),
            ("[bench]\nslo = quick\n", 2, "slo: "),
            ("[bench]\nepochs = 0\n", 2, "epochs: give at least 1 epoch"),
            ("[bench]\nscale = -1\n", 2, "scale: give a positive factor"),
            ("[bench]\nscale = x\n", 2, "scale: 'x' is not a positive factor"),
            (
                "[bench]\nmax_value_bytes = 0\n",
                2,
                "max_value_bytes: give a positive size",
            ),
            (
                "[skiplist]\nwrite_buffer_size = 64MB\n",
                2,
                "write_buffer_size: '64MB': unknown size suffix 'MB'",
            ),
            ("[rocksdbx]\na = 1\n", 1, "unknown section [rocksdbx]"),
        ];
        for (text, line, msg) in cases {
            let shown = complaint(text);
            assert!(shown.starts_with(&format!("run.cnf:{line}: ")), "{text}: {shown}");
            assert!(shown.contains(msg), "{text}: {shown}");
        }
    }

    #[test]
    fn flags_refused_together_note_the_lines_that_set_them() {
        let err = complaint("[bench]\nrate = 100\n\nwarmup = 3\nsecs = 1\n");
        assert_eq!(
            err,
            "--warmup 3 is not shorter than --secs 1: nothing would be measured \
             (warmup is set at run.cnf:4; secs is set at run.cnf:5)"
        );
        let err = complaint("[bench]\narrival = poisson\n");
        assert!(
            err.ends_with("give --rate or --slo too (arrival is set at run.cnf:2)"),
            "{err}"
        );
    }

    #[test]
    fn a_value_the_command_line_gave_is_worded_as_a_flag() {
        let args = over("[bench]\nops = 5\n", &["--secs", "-2"]).unwrap();
        let err = args.into_plan_with(&no_workload).err().map(|e| e.0);
        assert_eq!(err.as_deref(), Some("--secs -2: give a positive number of seconds"));
    }

    #[test]
    fn the_command_line_wins_over_the_file() {
        let file = "[bench]\nworkload = f.lua\nops = 100\nthreads = 1\nseed_once = true\ntimeline = 1\nreport_dir = d\nauto_plot = yes\n";
        let m = over(
            file,
            &[
                "--secs",
                "2",
                "--threads",
                "4",
                "--no-seed-once",
                "--no-timeline",
                "--no-report-dir",
                "--no-auto-plot",
            ],
        )
        .unwrap();
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
        let kept = p(file).unwrap();
        assert_eq!(kept.ops, Some(100));
        assert!(kept.seed_once);
        assert_eq!(kept.timeline, Some(1.0));
        assert!(kept.auto_plot);
        let given = over(file, &["g.lua"]).unwrap();
        assert_eq!(
            given.workloads,
            vec![PathBuf::from("g.lua")],
            "workloads given replace the file's"
        );
    }

    #[test]
    fn a_rate_or_slo_on_the_command_line_replaces_the_files_open_loop_mode() {
        let paced = "[bench]\nrate = 1000\narrival = poisson\n";
        let searching = "[bench]\nslo = p99<1ms\nslo_secs = 3\n";
        let m = over(paced, &["--slo", "p99<2ms"]).unwrap();
        assert_eq!((m.rate, m.slo.as_deref()), (None, Some("p99<2ms")));
        assert_eq!(
            m.arrival.as_deref(),
            Some("poisson"),
            "arrivals apply to SLO probes too"
        );
        let m = over(searching, &["--rate", "500"]).unwrap();
        assert_eq!((m.rate, m.slo, m.slo_secs), (Some(vec!["500".to_string()]), None, None));
        for file in [paced, searching] {
            let m = over(file, &["--no-rate"]).unwrap();
            assert_eq!((m.rate, m.slo, m.arrival, m.slo_secs), (None, None, None, None));
        }
    }

    #[test]
    fn replay_takes_the_file_after_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let cnf = dir.path().join("r.cnf");
        std::fs::write(&cnf, "[bench]\nops = 7\nthreads = 2\nworkload = a.ops\n").unwrap();
        let cnf = cnf.to_str().unwrap();
        let cli = parse_from(["kvmark", "replay", "--config", cnf, "--threads", "3"]).unwrap();
        let Some(Command::Replay(run)) = cli.command else {
            panic!("not a replay")
        };
        assert_eq!((run.ops, run.threads.clone()), (Some(7), Some(vec![3])));
        assert_eq!(run.workloads, vec![PathBuf::from("a.ops")]);
        assert_eq!(run.file_arg_origins["ops"], format!("{cnf}:2"));
        assert!(!run.file_arg_origins.contains_key("threads"), "the command line set it");
    }
}
