//! The command line's definitions: the flags and subcommands (keybench-compatible
//! names), and the parsers of their values. A config file's `[bench]` keys are these
//! flags too (`crate::config`); [`super::plan`] turns them into a run.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::engine::EngineOptions;

/// kvmark: a benchmark harness for sorted key-value stores.
#[derive(Debug, Parser)]
#[command(
    name = "kvmark",
    version,
    about = "A benchmark harness for sorted key-value stores",
    long_about = "A benchmark harness for sorted key-value stores.\n\n\
        A workload (a Lua script, a declarative JSON spec, or an operation log) runs unchanged \
        against every engine. kvmark sweeps the grid engines x threads x batch sizes x target \
        rates, repeats each cell, times every operation into whole latency histograms, and \
        reports throughput (wu/s: workload units, one per run() call or spec operation; ops/s: \
        primitive key operations) and latency percentiles per operation kind: service time in \
        closed loop, and response time too in open loop (--rate, --slo).",
    after_help = "Examples:\n  \
        kvmark workloads/mixed.lua\n  \
        kvmark --secs 10 --threads 1,2 workloads/mixed.lua workloads/scan.lua\n  \
        kvmark --batch 1,8,64 --repeat 3 workloads/batch.lua\n  \
        kvmark --threads 1,4 specs/ycsb-a.json\n  \
        kvmark gen specs/ycsb-a.json -o ycsb-a.ops && kvmark replay ycsb-a.ops\n  \
        kvmark --rate 1000,5000,20000 --secs 5 --warmup 1 workloads/mixed.lua\n  \
        kvmark --slo 'p99<2ms' --threads 1,2 workloads/mixed.lua\n  \
        kvmark --secs 10 --timeline 0.5 --report-dir results workloads/mixed.lua\n  \
        kvmark --scale 0.1 --ivs-mode all --backend lmdb --data-dir /var/tmp/kvb specs/ivs-a.json\n  \
        kvmark --config samples/skiplist-sweep.cnf --secs 2\n  \
        kvmark --secs 5 --timeline 0.2 --report-dir results --auto-plot workloads/mixed.lua\n  \
        kvmark plot results/20250101-120000 --out figs --html\n  \
        kvmark engines\n  \
        kvmark --secs 30 --metrics-listen 127.0.0.1:9464 workloads/mixed.lua\n  \
        kvmark compare results/before results/after --fail-if-slower 5\n  \
        kvmark completions bash > /etc/bash_completion.d/kvmark",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    /// A subcommand instead of a benchmark run.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Benchmark run options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every compiled-in engine: persistence, library version, how append and
    /// delete work, and every knob with its default.
    Engines,
    /// Write a spec's operation stream as an operation log (Tectonic's line format).
    Gen(GenArgs),
    /// Replay operation logs (written by `gen`, or any log in the same line format)
    /// against the engines, with the same flags and reports as a benchmark run.
    Replay(Box<RunArgs>),
    /// Fit a spec to a trace recorded elsewhere: its operation mix and rate per time
    /// window, key popularity, key and value sizes and key space, with how well each
    /// part fits and what could not be modelled.
    Fit(FitArgs),
    /// Draw figures (PNG, SVG or PDF) and the interactive HTML report from result
    /// directories written by --report-dir; several directories overlay.
    Plot(PlotArgs),
    /// Merge the report directories of a scaled-out run's segments (--segment) into
    /// one, exactly: histograms merged from the logs, counts summed, timelines aligned
    /// by absolute time, and a per-segment table beside the merge.
    Merge(MergeArgs),
    /// Compare two runs (report directories or results.json files): throughput and
    /// latency per point and operation kind side by side, the change in percent, and
    /// whether a throughput change is significant over the repeats (Mann-Whitney U).
    Compare(super::kit::CompareArgs),
    /// Write kvmark's man pages (roff), generated from these flag definitions.
    Man(super::kit::ManArgs),
    /// Write a shell completion script (bash, zsh or fish) to stdout.
    Completions(super::kit::CompletionsArgs),
}

/// Flags of `kvmark merge`.
#[derive(Debug, Args, Clone)]
pub struct MergeArgs {
    /// The segments' report directories (written by --report-dir), one per segment.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,

    /// The merged report directory to write (new, or empty).
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Flags of `kvmark plot`.
#[derive(Debug, Args, Clone)]
pub struct PlotArgs {
    /// Result directories written by --report-dir, or a directory holding several
    /// (each is plotted). Several overlay in every figure, labelled by directory.
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<PathBuf>,

    /// Where to write the figures and figures.json (created if missing).
    #[arg(short, long, value_name = "FIGDIR")]
    pub out: PathBuf,

    /// Figure format: png, svg or pdf. [default: png]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// Also write the interactive report, FIGDIR/report.html.
    #[arg(long)]
    pub html: bool,

    /// Engine colours: a file of `engine = #rrggbb` lines, over the bundled palette
    /// (assets/palette.txt).
    #[arg(long, value_name = "FILE")]
    pub palette: Option<PathBuf>,
}

/// Flags of `kvmark fit`.
#[derive(Debug, Args, Clone)]
pub struct FitArgs {
    /// The trace.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,

    /// How the trace is written: twitter (Twitter's cache-trace CSV) or redis-monitor
    /// (what redis-cli MONITOR prints).
    #[arg(long, value_name = "FORMAT")]
    pub format: String,

    /// The spec to write (.json); `-` writes it to stdout and the report to stderr.
    #[arg(short, long, value_name = "SPEC")]
    pub output: PathBuf,

    /// Time windows, each a group of the spec with its own operation mix and rate.
    /// [default: 10]
    #[arg(long, value_name = "N", value_parser = whole::<usize>)]
    pub windows: Option<usize>,

    /// Rates X times the trace's, so the spec runs the trace's span in 1/X of its
    /// time (as `replay --speed X` replays it). [default: 1]
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
}

/// Flags of `kvmark gen`.
#[derive(Debug, Args, Clone)]
pub struct GenArgs {
    /// The spec (.json).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,

    /// The log file to write; `-` writes to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Seed of every random choice. [default: 1]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Leave out kvmark's `# phase NAME` lines, for tools that read only Tectonic's
    /// operation lines.
    #[arg(long)]
    pub plain: bool,

    /// Write the streams of this many threads (each phase: every thread's operations
    /// in thread order), as a run with --threads N performs them. [default: 1]
    #[arg(long, value_name = "N", value_parser = thread_count)]
    pub threads: Option<usize>,

    /// Write only segment I of N's threads (I/N, or auto as for a run): the
    /// segments' logs together hold exactly the lines of one log of N x threads.
    #[arg(long, value_name = "I/N|auto")]
    pub segment: Option<String>,

    /// The segment count for `--segment auto` under a launcher that gives only the
    /// index.
    #[arg(long, value_name = "N", value_parser = whole::<usize>)]
    pub segment_count: Option<usize>,
}

/// Flags of a benchmark run. Every value is optional here so that a config file can
/// supply defaults that the command line then overrides.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Workload files (.lua scripts, .json specs, .ops operation logs), run in sequence,
    /// each over the whole grid with its own fresh stores. Given here, they replace a
    /// config file's `workload` lines.
    #[arg(value_name = "WORKLOAD")]
    pub workloads: Vec<PathBuf>,

    /// Total units (run() calls) across all threads, split evenly; then stop.
    /// [default: 200000]
    #[arg(long, value_name = "N", value_parser = whole::<u64>)]
    pub ops: Option<u64>,

    /// Run each point for S seconds instead of a unit count (clears --ops). Fractions
    /// are allowed.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = seconds)]
    pub secs: Option<f64>,

    /// The longest a workload file's top level, and each point's load(), may take, in
    /// seconds; past it the point fails (an endless loop would hang the run). 0: no
    /// limit, for loads that need longer. [default: 600]
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = warmup_seconds)]
    pub load_secs: Option<f64>,

    /// Exit 1 when a point fails a self-check (a percentile its samples cannot bound,
    /// a saturated client, an open-loop rate not reached), as when a point fails: for
    /// CI. The checks are reported either way.
    #[arg(long)]
    pub strict: bool,

    /// Worker thread counts to sweep, comma-separated (e.g. 1,2,4), each at most 4096.
    /// [default: 1]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = thread_item)]
    pub threads: Option<Vec<usize>>,

    /// Connections per worker thread to sweep, comma-separated (e.g. 1,16,64): each
    /// runs the workload's units one after another with its own session, so
    /// `--threads 2 --connections 64` keeps 128 requests in flight on a server engine
    /// from 2 threads. Each connection is a worker of its own to the workload
    /// (ctx.thread, ctx.threads count connections). [default: 1]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = sweep_item)]
    pub connections: Option<Vec<usize>>,

    /// Requests in flight on each connection of a server engine to sweep,
    /// comma-separated (e.g. 1,16): each connection carries up to N requests at once,
    /// replies matched in order. Each request slot is a worker of its own to the
    /// workload (ctx.thread, ctx.threads count them), so a cell has threads x
    /// connections x pipeline workers. Above 1 only for engines that can pipeline
    /// requests (see `kvmark engines`). [default: 1]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = sweep_item)]
    pub pipeline: Option<Vec<usize>>,

    /// Close each connection to a server engine after N requests and open a new one,
    /// timing each as the operation kind `connect` (connecting, authentication and any
    /// per-connection set-up, with its own latency and errors in every report). Server
    /// engines only, with --pipeline 1. [default: connections are kept]
    #[arg(long, value_name = "N")]
    pub reconnect_every: Option<u64>,

    /// Batch sizes to sweep for workloads that return `batched = true` (others run once
    /// at batch 1); overrides a workload's own sweep of `batch`. [default: 1]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = sweep_item)]
    pub batch: Option<Vec<usize>>,

    /// Engines to compare, comma-separated; `kvmark engines` lists them.
    /// [default: skiplist]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub backend: Option<Vec<String>>,

    /// Measure each grid cell N times: throughput is the median (with its min-max),
    /// latency percentiles come from the exact merge of all repeats. [default: 1]
    #[arg(long, value_name = "N", value_parser = whole::<usize>)]
    pub repeat: Option<usize>,

    /// ctx.users: the user population a workload may address. [default: 100000]
    #[arg(long, value_name = "N", value_parser = whole::<u64>)]
    pub users: Option<u64>,

    /// ctx.items: the catalog or keyspace size a workload may address. [default: 100000]
    #[arg(long, value_name = "N", value_parser = whole::<u64>)]
    pub items: Option<u64>,

    /// Base RNG seed; thread t seeds its Lua state with seed + t. [default: 1]
    #[arg(long, value_name = "N", value_parser = whole::<u64>)]
    pub seed: Option<u64>,

    /// Threads running the workload's load() (the seed phase). [default: the point's
    /// thread count; with --seed-once, the largest in --threads]
    #[arg(long, value_name = "N", value_parser = thread_count)]
    pub seed_threads: Option<usize>,

    /// Seed one store per engine (and per sweep value when the workload sets
    /// seed_per_value) and run every thread count, batch size and repeat against it,
    /// instead of a fresh store per measurement.
    #[arg(long, overrides_with = "no_seed_once")]
    pub seed_once: bool,

    /// Switch --seed-once off (overrides a config file).
    #[arg(long, overrides_with = "seed_once")]
    pub no_seed_once: bool,

    /// Directory on the disk to benchmark; persistent engines create a fresh store
    /// directory in it per measurement. Required by persistent engines (there is no
    /// default: /tmp is often tmpfs, which would benchmark RAM).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Keep store directories under --data-dir instead of removing them after use.
    #[arg(long, overrides_with = "no_keep_data")]
    pub keep_data: bool,

    /// Switch --keep-data off (overrides a config file).
    #[arg(long, overrides_with = "keep_data")]
    pub no_keep_data: bool,

    /// Run against the store an earlier run kept (--keep-data prints where) or the
    /// engine's own tools made: PATH is a disk engine's store directory, or a server
    /// engine's namespace name. The seed step is skipped, every point runs on this one
    /// store (as with --seed-once), and it is never removed. One --backend; not with
    /// epochs or --verify.
    #[arg(long, value_name = "PATH")]
    pub use_existing: Option<String>,

    /// Before every timed phase (after the seed, and between a spec's phases), wait
    /// until the engine's background flushes and compactions are done (RocksDB);
    /// the wait is part of no phase.
    #[arg(long, overrides_with = "no_settle")]
    pub settle: bool,

    /// Switch --settle off (overrides a config file).
    #[arg(long, overrides_with = "settle")]
    pub no_settle: bool,

    /// An engine option, ENGINE.KEY=VALUE (repeatable); `kvmark engines` lists the keys.
    /// Sizes take K, M, G or T (powers of 1024). Overrides the same key of a config
    /// file's engine section.
    #[arg(long, value_name = "ENGINE.KEY=VALUE")]
    pub engine_opt: Vec<String>,

    /// Sample a live timeline every S seconds (fractions allowed, e.g. 0.1): throughput,
    /// interval latency per operation kind, the system probe, the store's disk bytes and
    /// the engine's stats. Written by the timeline sink and --report-dir; every timed
    /// phase's intervals are also tested for a trend (the not_stationary self-check).
    #[arg(long, value_name = "S", value_parser = timeline_seconds)]
    pub timeline: Option<f64>,

    /// Switch the timeline off (overrides a config file).
    #[arg(long, conflicts_with = "timeline")]
    pub no_timeline: bool,

    /// Probes to record: a comma list of system, build; or all, or none. [default: all]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub probe: Option<Vec<String>>,

    /// Report sinks, a comma list of NAME or NAME:PATH (a bare name or PATH - is
    /// stdout): console, tsv, timeline, json, hdr (PATH is a directory of histogram
    /// logs), verify (--verify's anomaly counts), ycsb (YCSB's output layout).
    /// [default: console]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub report: Option<Vec<String>>,

    /// Write every report into a fresh directory under DIR (report.txt, points.tsv,
    /// timeline.tsv, results.json, hdr/, verify.tsv, ycsb.txt, replay.cnf); overrides --report, and the
    /// console report still goes to stdout.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,

    /// Switch --report-dir off (overrides a config file).
    #[arg(long, conflicts_with = "report_dir")]
    pub no_report_dir: bool,

    /// At the end of a --report-dir run, also render every figure (PNG) into the
    /// report directory's figures/ (report.html is written either way).
    #[arg(long, overrides_with = "no_auto_plot")]
    pub auto_plot: bool,

    /// Switch --auto-plot off (overrides a config file).
    #[arg(long, overrides_with = "auto_plot")]
    pub no_auto_plot: bool,

    /// Load run settings from an INI file: [bench] holds the flags, a section named
    /// after an engine holds its options. Every flag given here overrides the file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Write the effective run to FILE as a config that `--config FILE` replays
    /// (same grid, same seeds), then run it.
    #[arg(long, value_name = "FILE")]
    pub save_config: Option<PathBuf>,

    /// Open loop: target rates to sweep, for the whole run (split evenly over its
    /// threads). Units per second (5000), or a bandwidth of written key and value bytes
    /// (200MB/s; KB, MB, GB are powers of 1000, KiB, MiB, GiB of 1024). Units start on
    /// their intended schedule; latency is also measured from the intended start
    /// (response time) beside the engine call alone (service time).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub rate: Option<Vec<String>>,

    /// Read the workload files as traces of this format: twitter (Twitter's open
    /// cache-trace CSV), redis-monitor (what `redis-cli MONITOR` prints) or oplog
    /// (kvmark's operation log). Requests with no kv verb are skipped, counted and
    /// warned about. [default: by extension; `replay`: oplog]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,

    /// How a trace's requests are dealt to the threads (and segments): line (the i-th
    /// request to thread i mod T, even shares) or client (each client's requests to
    /// one thread, in their order; shares follow the clients). [default: line]
    #[arg(long, value_name = "HOW")]
    pub trace_split: Option<String>,

    /// Replay a trace on its own clock, X times as fast (1: as recorded; 0.5: half as
    /// fast): open loop, each request due at its trace time divided by X, its response
    /// time measured from then. Without it a trace replays as fast as it can.
    #[arg(long, value_name = "X", conflicts_with_all = ["rate", "slo"])]
    pub speed: Option<f64>,

    /// Run closed loop: drop a config file's rate, slo, arrival and slo_secs.
    #[arg(long, conflicts_with_all = ["rate", "slo", "arrival", "slo_secs"])]
    pub no_rate: bool,

    /// How paced units arrive: constant (evenly spaced) or poisson (exponential gaps,
    /// seeded with seed + thread). [default: constant]
    #[arg(long, value_name = "KIND")]
    pub arrival: Option<String>,

    /// Exclude the first S seconds of each measurement's timed phase from its
    /// histograms and throughput (the units still run; the report says how many).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = warmup_seconds)]
    pub warmup: Option<f64>,

    /// Find the highest rate meeting a response-time objective, per grid point, by a
    /// short closed-loop run then a bounded search of open-loop probes:
    /// [KIND:]pN<LIMIT, for example 'p99<2ms' or 'get:p99.9<500us' (ns, us, ms, s).
    #[arg(long, value_name = "OBJECTIVE")]
    pub slo: Option<String>,

    /// Seconds each SLO probe (and the capacity run) lasts. [default: 2]
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = seconds)]
    pub slo_secs: Option<f64>,

    /// Growing values (YCSB-IVS): after the load, run N epochs, each an extend phase
    /// (appends to existing keys) and then the workload's run phase, each reported as
    /// its own point. A spec's own `epochs` block sets this too.
    #[arg(long, value_name = "N", value_parser = whole::<u32>)]
    pub epochs: Option<u32>,

    /// Extends per epoch. [default: 100000, or the spec's]
    #[arg(long, value_name = "M", value_parser = whole::<u64>)]
    pub extend_ops: Option<u64>,

    /// Bytes each extend appends. [default: 100, or the spec's]
    #[arg(long, value_name = "B", value_parser = whole::<u64>)]
    pub extend_bytes: Option<u64>,

    /// Which keys the extends grow: zipfian (YCSB's, scrambled, 0.99) or uniform.
    /// [default: zipfian, or the spec's]
    #[arg(long, value_name = "DIST")]
    pub extend_dist: Option<String>,

    /// Run modes per epoch, a comma list of main (the store that lived through the
    /// extends), clean (a fresh store loaded from a dump of it), average (the same
    /// records, all of the average length), spread (the same volume in records of the
    /// initial length), or all; main always runs (its run phases are the main store's
    /// history). [default: main, or the spec's]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub ivs_mode: Option<Vec<String>>,

    /// Multiply the load, the extends per epoch and the run phase by F (0.1 makes a
    /// paper-scale run about ten times quicker). [default: 1]
    #[arg(long, value_name = "F", value_parser = factor)]
    pub scale: Option<f64>,

    /// Check that every clean store holds exactly the main store's data (a hash of
    /// every key and value; it reads the store before the run phase, warming caches).
    #[arg(long, overrides_with = "no_ivs_verify")]
    pub ivs_verify: bool,

    /// Switch --ivs-verify off (overrides a config file).
    #[arg(long, overrides_with = "ivs_verify")]
    pub no_ivs_verify: bool,

    /// Appends never grow a value past this many bytes; one that would is skipped and
    /// counted. A size (K, M, G: powers of 1024) or `none`. [default: 1600000, 1.6 MB
    /// as in YCSB-IVS]
    #[arg(long, value_name = "SIZE")]
    pub max_value_bytes: Option<String>,

    /// Split each operation kind's latency by value size as well, at these upper
    /// bounds in bytes (comma-separated sizes, e.g. 256,4096,65536 makes <=256,
    /// <=4096, <=65536 and >65536): every report adds a row per kind and class,
    /// labelled `put<=4096`. A call's size is the value it wrote, found or appended
    /// (per key for mput and mget); calls without a value are in no class.
    #[arg(long, value_name = "LIST")]
    pub size_classes: Option<String>,

    /// Check what the engine returns: every value written carries a 20-byte tag (key
    /// hash, writer, sequence, checksum; lengths unchanged, shorter values refused),
    /// every read is checked against what was acknowledged, and each point ends with a
    /// read-back of every key written. Anomalies are counted per kind in every report
    /// and make the exit status 1. Figures of a verify run are not comparable with a
    /// plain run's.
    #[arg(long, overrides_with = "no_verify")]
    pub verify: bool,

    /// Switch --verify off (overrides a config file).
    #[arg(long, overrides_with = "verify")]
    pub no_verify: bool,

    /// Scale-out: run segment I of N (0-based, as I/N), or `auto` to take I and N from
    /// the launcher (mpirun, srun, a PMI launcher, a Kubernetes Indexed Job). N
    /// segments of T threads do exactly what one process of N x T threads does; `kvmark
    /// merge` makes their report directories one.
    #[arg(long, value_name = "I/N|auto")]
    pub segment: Option<String>,

    /// The segment count for `--segment auto` under a launcher that gives only the
    /// index (a Kubernetes Indexed Job); KVMARK_SEGMENT_COUNT says it too.
    #[arg(long, value_name = "N", value_parser = whole::<usize>)]
    pub segment_count: Option<usize>,

    /// Start the first timed phase at this absolute time (RFC 3339 such as
    /// 2026-11-25T21:00:00Z, or Unix seconds), so every segment measures together; the
    /// load runs before it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,

    /// YCSB: a workload properties file to run (`-P workloads/workloada`), as if given
    /// as a WORKLOAD; repeatable.
    #[arg(short = 'P', long, value_name = "FILE")]
    pub ycsb_file: Vec<PathBuf>,

    /// YCSB: sets a workload property over every YCSB file's own
    /// (`-p recordcount=100000`); repeatable. A property kvmark does not know is named
    /// in a warning.
    #[arg(short = 'p', long, value_name = "NAME=VALUE")]
    pub property: Vec<String>,

    /// YCSB: time the load phase (YCSB's `-load`; `-load` is read as this flag).
    #[arg(long)]
    pub ycsb_load: bool,

    /// YCSB: time the transaction phase (YCSB's `-t`, the default when neither is
    /// given). Every measurement starts from an empty store, so without --ycsb-load the
    /// records are loaded untimed first.
    #[arg(short = 't', long)]
    pub ycsb_run: bool,

    /// Pin worker thread t to the t-th CPU this process may run on (wrapping when
    /// threads outnumber CPUs), as keybench's --pin does.
    #[arg(long, overrides_with = "no_pin")]
    pub pin: bool,

    /// Refuse a spec field that Tectonic's schema does not have where it stands
    /// (Tectonic ignores them, and so by default does kvmark, with a warning naming each).
    #[arg(long)]
    pub strict_spec: bool,

    /// Switch --pin off (overrides a config file).
    #[arg(long, overrides_with = "pin")]
    pub no_pin: bool,

    /// Serve live metrics while the run goes, in the Prometheus/OpenMetrics text format,
    /// at http://ADDR/metrics (ADDR is HOST:PORT, e.g. 127.0.0.1:9464; port 0 picks a
    /// free one, printed at start): operations and errors per kind, achieved and target
    /// rate, the current point and phase, and each interval's latency quantiles.
    /// Without --timeline it samples every second.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,

    /// Engine options from a config file's engine sections (the command line's
    /// --engine-opt overrides them key by key).
    #[arg(skip)]
    pub file_engine_options: BTreeMap<String, EngineOptions>,

    /// Where each engine option of a config file was set: (engine, key) to
    /// "FILE:LINE", so an engine's complaint about a key can point at the line.
    #[arg(skip)]
    pub file_option_origins: BTreeMap<(String, String), String>,

    /// Where each flag a config file set was set: flag id (`threads`) to "FILE:LINE",
    /// so the plan's complaint about its value names the line.
    #[arg(skip)]
    pub file_arg_origins: BTreeMap<String, String>,
}

/// A count written in digits only (so a config file's `ops = 1e6` is refused, not
/// read as 1).
fn whole<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{text}' is not a whole number"));
    }
    text.parse().map_err(|_| format!("'{text}' is out of range"))
}

/// One item of a sweep list (threads, batch sizes); the plan refuses 0 with the list.
fn sweep_item(text: &str) -> Result<usize, String> {
    whole(text).map_err(|_| format!("'{text}' is not a positive whole number"))
}

/// The most worker threads a point may run. Each is an OS thread with its own stack,
/// engine session and Lua state; 4096 is far past the core count of any machine a
/// point's figures would mean something on, so a larger count is a typo (1000000
/// used to exhaust the process's threads and fail halfway through starting them).
pub const MAX_THREADS: usize = 4096;

/// A thread count up to [`MAX_THREADS`] (0 is refused by the plan, with the flag).
fn thread_count(text: &str) -> Result<usize, String> {
    let n: usize = whole(text)?;
    if n > MAX_THREADS {
        return Err(format!(
            "'{text}' is too many threads: kvmark runs at most {MAX_THREADS} (each one an OS thread with its own engine session and Lua state)"
        ));
    }
    Ok(n)
}

/// One item of the `--threads` sweep.
fn thread_item(text: &str) -> Result<usize, String> {
    sweep_item(text).and_then(|_| thread_count(text))
}

fn number(text: &str, what: &str) -> Result<f64, String> {
    text.parse().map_err(|_| format!("'{text}' is not {what}"))
}

/// The longest duration any seconds flag takes: past it (or NaN, or infinity) a value
/// is a typo, and would not fit the clock's durations.
const MAX_SECONDS: f64 = 366.0 * 24.0 * 3600.0;

/// A number of seconds no larger than [`MAX_SECONDS`]; the plan checks the lower end,
/// which differs by flag.
fn bounded_seconds(text: &str, what: &str) -> Result<f64, String> {
    let s = number(text, what)?;
    if s.is_nan() || s > MAX_SECONDS {
        return Err(format!("'{text}' is not {what}, up to a year ({MAX_SECONDS} s)"));
    }
    Ok(s)
}

/// Seconds.
fn seconds(text: &str) -> Result<f64, String> {
    bounded_seconds(text, "a positive number of seconds")
}

/// `--timeline` seconds: the plan checks its own range (0.01 to a day) and wording.
fn timeline_seconds(text: &str) -> Result<f64, String> {
    number(text, "a positive number of seconds")
}

/// `--warmup` seconds, which may be 0.
fn warmup_seconds(text: &str) -> Result<f64, String> {
    bounded_seconds(text, "a number of seconds, 0 or more")
}

/// `--scale`.
fn factor(text: &str) -> Result<f64, String> {
    number(text, "a positive factor")
}
