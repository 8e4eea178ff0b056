//! Writes a synthetic result directory the size of a long run, for bench/plots.sh
//! (docs/benchmarks-history.md, "Plots"): 100 grid points (2 engines x 5 thread counts x 10 batch
//! sizes), each with a 1 s seed and 6 s timed, sampled every 0.1 s (10 minutes of
//! timed samples in all), every system metric, 20 engine metrics per engine, four
//! operation kinds, and a histogram log per point with an interval per sample. The
//! files have kvmark's own columns and layouts (the column lists come from kvmark).
//!
//! cargo bench --bench plot_input -- DIR

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use serde_json::json;

const ENGINES: [&str; 2] = ["rocksdb", "tidesdb"];
const THREADS: [usize; 5] = [1, 2, 4, 8, 16];
const BATCHES: [usize; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
const OPS: [&str; 4] = ["get", "put", "del", "range"];
const PERIOD: f64 = 0.1;
const SEED_SAMPLES: usize = 10;
const TIMED_SAMPLES: usize = 60;
/// The store's size, sampled beside the system probe's metrics.
const STORE: [&str; 2] = ["store.disk_bytes", "store.disk_files"];

/// A small deterministic generator (xorshift64*): the same directory every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A latency in ns with a long tail around `base`.
    fn latency(&mut self, base: f64) -> u64 {
        let u = self.next().max(1e-9);
        (base * (1.0 + (-u.ln()).powf(2.5))) as u64 + 1
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let dir = Path::new(args.first().expect("usage: cargo bench --bench plot_input -- DIR"));
    std::fs::create_dir_all(dir.join("hdr")).unwrap();
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let mut points_tsv = BufWriter::new(File::create(dir.join("points.tsv")).unwrap());
    let mut timeline = BufWriter::new(File::create(dir.join("timeline.tsv")).unwrap());
    writeln!(points_tsv, "{}", kvmark::report::tsv::COLUMNS.join("\t")).unwrap();
    writeln!(timeline, "{}", kvmark::report::timeline::COLUMNS.join("\t")).unwrap();
    let mut points = Vec::new();
    let mut seq = 0;
    let start_unix = 1_700_000_000.0;
    for engine in ENGINES {
        for threads in THREADS {
            for batch in BATCHES {
                seq += 1;
                let speed = 50_000.0 * (threads as f64).sqrt() * (1.0 + (batch as f64).ln()) / batch as f64
                    * if engine == "rocksdb" { 1.0 } else { 1.3 };
                let mut line = String::new();
                // Seed samples, then timed ones; the metrics each sample records.
                for i in 0..SEED_SAMPLES + TIMED_SAMPLES {
                    let seed = i < SEED_SAMPLES;
                    let t = if seed { i + 1 } else { i + 1 - SEED_SAMPLES } as f64 * PERIOD;
                    let phase = if seed { "seed" } else { "run" };
                    // Each point: a 1 s seed, then its 6 s timed, one after the other.
                    let unix = start_unix + (seq - 1) as f64 * 7.0 + t + if seed { 0.0 } else { 1.0 };
                    // Filled by column name, so a column kvmark adds cannot leave rows short.
                    let mut metric = |name: &str, v: f64| {
                        let row: Vec<String> = kvmark::report::timeline::COLUMNS
                            .iter()
                            .map(|c| match *c {
                                "workload" => "mixed".into(),
                                "engine" => engine.into(),
                                "threads" => threads.to_string(),
                                "sweep_param" => "batch".into(),
                                "sweep_value" | "batch" => batch.to_string(),
                                "phase" => phase.into(),
                                "elapsed_s" => format!("{t:.3}"),
                                "metric" => name.into(),
                                "value" => format!("{v:.3}"),
                                "repeat" | "connections" | "pipeline" => "1".into(),
                                "interval_s" => format!("{PERIOD:.3}"),
                                "measurement" => seq.to_string(),
                                "unix_s" => format!("{unix:.6}"),
                                _ => "-".into(),
                            })
                            .collect();
                        let _ = writeln!(line, "{}", row.join("\t"));
                    };
                    if seed {
                        metric("keys_per_s", 200_000.0 * (0.8 + 0.4 * rng.next()));
                    } else {
                        let wu = speed * (0.9 + 0.2 * rng.next());
                        metric("wu_per_s", wu);
                        metric("ops_per_s", wu * batch as f64);
                        for op in OPS {
                            metric(&format!("op.{op}.count"), (wu * PERIOD / 4.0).round());
                            metric(&format!("op.{op}.p50_ns"), 2_000.0 + 500.0 * rng.next());
                            metric(&format!("op.{op}.p99_ns"), 20_000.0 + 9_000.0 * rng.next());
                            metric(&format!("op.{op}.max_ns"), 1e6 * (1.0 + 5.0 * rng.next()));
                        }
                    }
                    for name in kvmark::probe::live::SYSTEM_METRICS.iter().chain(&STORE) {
                        metric(name, 1e6 * rng.next());
                    }
                    for k in 0..20 {
                        // Some engine metrics stay flat at zero, as real ones do.
                        let v = if k % 5 == 0 {
                            0.0
                        } else {
                            (k * 1000) as f64 * (1.0 + rng.next())
                        };
                        metric(&format!("engine.{engine}.stat{k:02}"), v);
                    }
                }
                timeline.write_all(line.as_bytes()).unwrap();
                points.push(point(&mut points_tsv, &mut rng, seq, engine, threads, batch, speed));
                write_hlog(dir, &mut rng, seq, engine, threads, batch, start_unix);
            }
        }
    }
    let doc = json!({
        "kvmark": { "version": env!("CARGO_PKG_VERSION"), "format": 1 },
        "run": {
            "workloads": [{ "name": "mixed", "path": "workloads/mixed.lua" }],
            "engines": ENGINES.iter().map(|e| json!({ "name": e, "version": "synthetic", "options": {} })).collect::<Vec<_>>(),
            "threads": THREADS, "batch": BATCHES, "budget": { "secs": 6.0 }, "repeat": 1, "seed": 1,
            "users": 100000, "items": 100000, "seed_once": false, "timeline_s": PERIOD,
            "started_unix": start_unix, "command": ["kvmark", "(synthetic: benches/plot_input.rs)"],
        },
        "probes": { "system": { "host": "synthetic" }, "build": { "kvmark": env!("CARGO_PKG_VERSION") } },
        "points": points,
        "summary": { "points": seq, "bad_points": 0, "interrupted": false, "errors": [] },
    });
    std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    eprintln!("plot_input: wrote {seq} points to {}", dir.display());
}

/// Writes a point's points.tsv rows and returns its results.json object.
fn point(
    out: &mut impl Write,
    rng: &mut Rng,
    seq: usize,
    engine: &str,
    threads: usize,
    batch: usize,
    speed: f64,
) -> serde_json::Value {
    let wu = speed;
    let ops = wu * batch as f64;
    let mut ops_json = Vec::new();
    for op in OPS {
        let (p50, p99) = (2_000.0 + 500.0 * rng.next(), 20_000.0 + 9_000.0 * rng.next());
        let row: Vec<String> = kvmark::report::tsv::COLUMNS
            .iter()
            .map(|c| match *c {
                "workload" => "mixed".into(),
                "engine" => engine.into(),
                "threads" => threads.to_string(),
                "sweep_param" => "batch".into(),
                "sweep_value" | "batch" => batch.to_string(),
                "op" => op.into(),
                "count" => ((wu * 6.0) as u64 / 4).to_string(),
                "p50_ns" => format!("{p50:.0}"),
                "p99_ns" => format!("{p99:.0}"),
                "p999_ns" => format!("{:.0}", p99 * 3.0),
                "max_ns" => "5000000".into(),
                "err_rate" => "0.000000".into(),
                "wu_per_s" | "wu_per_s_min" | "wu_per_s_max" => format!("{wu:.3}"),
                "ops_per_s" | "ops_per_s_min" | "ops_per_s_max" => format!("{ops:.3}"),
                "phase" => "run".into(),
                "engine_version" => "synthetic".into(),
                "status" => "ok".into(),
                "repeats" => "1".into(),
                "latency" => "service".into(),
                _ => "-".into(),
            })
            .collect();
        writeln!(out, "{}", row.join("\t")).unwrap();
        ops_json.push(json!({
            "op": op, "count": (wu * 6.0) as u64 / 4, "mean_ns": p50 * 1.5, "min_ns": 300, "max_ns": 5_000_000,
            "percentiles_ns": { "p50": p50, "p90": p50 * 2.0, "p99": p99, "p99.9": p99 * 3.0, "p99.99": p99 * 9.0 },
            "response": null,
        }));
    }
    let spread = |v: f64| json!({ "median": v, "min": v * 0.95, "max": v * 1.05 });
    json!({
        "workload": "mixed", "workload_path": "workloads/mixed.lua", "engine": engine,
        "engine_version": "synthetic", "threads": threads, "batch": batch, "sweep": null,
        "status": "ok", "error": null, "wu_per_s": spread(wu), "ops_per_s": spread(ops), "rate": null,
        "seed": { "keys": 200000, "seconds": 1.0, "keys_per_s": 200000.0, "threads": threads, "shared": false },
        "ops": ops_json, "repeats": [{ "seq": seq }],
    })
}

/// Writes a point's histogram log: one interval per timed sample and kind.
fn write_hlog(dir: &Path, rng: &mut Rng, seq: usize, engine: &str, threads: usize, batch: usize, start: f64) {
    let path = dir
        .join("hdr")
        .join(format!("{seq:03}-mixed-{engine}-t{threads}-b{batch}.hlog"));
    let mut out = BufWriter::new(File::create(path).unwrap());
    let mut serializer = V2DeflateSerializer::new();
    let t0 = UNIX_EPOCH + Duration::from_secs_f64(start);
    let header = format!(
        "kvmark {} interval histograms, point {seq}: workload=mixed engine={engine} (synthetic) threads={threads} batch={batch} batch={batch}",
        env!("CARGO_PKG_VERSION")
    );
    let mut builder = IntervalLogWriterBuilder::new();
    builder.add_comment(&header).with_start_time(t0).with_base_time(t0);
    let mut log = builder.begin_log_with(&mut out, &mut serializer).unwrap();
    for i in 0..TIMED_SAMPLES {
        for op in OPS {
            let mut h = Histogram::<u64>::new(3).unwrap();
            for _ in 0..300 {
                h.record(rng.latency(2_000.0)).unwrap();
            }
            let tag = format!("run.{op}");
            log.write_histogram(
                &h,
                Duration::from_secs_f64(i as f64 * PERIOD),
                Duration::from_secs_f64(PERIOD),
                Tag::new(&tag),
            )
            .unwrap();
        }
    }
}
