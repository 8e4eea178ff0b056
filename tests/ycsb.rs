//! YCSB compatibility through the real binary: YCSB's six core workload files and
//! YCSB-IVS's extend files run unchanged on an in-memory and a persistent engine, with
//! YCSB's command line (`-P`, `-p`, `-load`, `-t`), and `--report ycsb` writes what a
//! script that parses YCSB's output reads, checked against a sample of YCSB's layout.

mod common;

use std::collections::BTreeMap;

use common::*;
use kvmark::report::ycsb::parse;

const CORE: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

/// `[SECTION] METRIC -> value` of one phase block of `--report ycsb` output.
type Block = BTreeMap<(String, String), String>;

/// The output's phase blocks in order, each from its `[OVERALL], RunTime(ms)` line.
fn blocks(text: &str) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    for (section, metric, value) in parse(text) {
        if section == "OVERALL" && metric == "RunTime(ms)" {
            out.push(Block::new());
        }
        let block = out.last_mut().expect("a block starts with [OVERALL], RunTime(ms)");
        block.insert((section, metric), value);
    }
    out
}

fn num(b: &Block, section: &str, metric: &str) -> f64 {
    b.get(&(section.to_string(), metric.to_string()))
        .unwrap_or_else(|| panic!("no [{section}], {metric} in {b:?}"))
        .parse()
        .unwrap()
}

/// Operations summed over the block's operation sections.
fn operations(b: &Block) -> f64 {
    b.iter()
        .filter(|((s, m), _)| m == "Operations" && !s.starts_with("Intended-"))
        .map(|(_, v)| v.parse::<f64>().unwrap())
        .sum()
}

/// Runs `args` with `--report ycsb` and returns the phase blocks (exit status 0).
fn run_ycsb(args: &[&str]) -> Vec<Block> {
    let mut all = args.to_vec();
    all.extend(["--report", "ycsb"]);
    let o = kvmark(&all);
    assert_exit(&o, 0);
    blocks(&stdout(&o))
}

/// Every block is internally consistent: the OK, NOT_FOUND and ERROR counts add up
/// to the operations, and latencies are ordered.
fn check_block(b: &Block, what: &str) {
    assert!(num(b, "OVERALL", "Throughput(ops/sec)") > 0.0, "{what}: {b:?}");
    let sections: Vec<String> = b
        .keys()
        .filter(|(s, m)| m == "Operations" && !s.starts_with("Intended-"))
        .map(|(s, _)| s.clone())
        .collect();
    assert!(!sections.is_empty(), "{what}: {b:?}");
    for s in &sections {
        let ops = num(b, s, "Operations");
        let ret = |m: &str| b.get(&(s.clone(), m.to_string())).map_or(0.0, |v| v.parse().unwrap());
        assert_eq!(
            ret("Return=OK") + ret("Return=NOT_FOUND") + ret("Return=ERROR"),
            ops,
            "{what} {s}"
        );
        assert_eq!(ret("Return=ERROR"), 0.0, "{what} {s}: engine errors");
        let (min, p95, p99, max) = (
            num(b, s, "MinLatency(us)"),
            num(b, s, "95thPercentileLatency(us)"),
            num(b, s, "99thPercentileLatency(us)"),
            num(b, s, "MaxLatency(us)"),
        );
        assert!(min <= p95 && p95 <= p99 && p99 <= max, "{what} {s}: {b:?}");
    }
}

fn engines() -> Vec<(&'static str, Vec<String>)> {
    let dir = std::env::temp_dir().display().to_string();
    vec![("skiplist", vec![]), ("rocksdb", vec!["--data-dir".to_string(), dir])]
}

#[test]
fn core_and_extend_files_load_and_run_on_memory_and_disk_engines() {
    for (engine, extra) in engines() {
        for w in CORE {
            for file in [format!("workload{w}"), format!("workload{w}-extend")] {
                let path = bundled(&file);
                let mut args = vec![
                    "-P",
                    &path,
                    "-p",
                    "recordcount=300",
                    "-p",
                    "operationcount=400",
                    "-load",
                    "-t",
                    "--backend",
                    engine,
                ];
                args.extend(extra.iter().map(String::as_str));
                let what = format!("{file} on {engine}");
                let b = run_ycsb(&args);
                assert_eq!(b.len(), 2, "{what}: a load and a run block");
                check_block(&b[0], &what);
                check_block(&b[1], &what);
                assert_eq!(num(&b[0], "INSERT", "Operations"), 300.0, "{what}");
                assert_eq!(operations(&b[0]), 300.0, "{what}: the load only inserts");
                // Every unit is one operation, except a read-modify-write (a READ and
                // an UPDATE).
                let rmw = w == "f";
                let ops = operations(&b[1]);
                if rmw {
                    // workloadf's units are reads or read-modify-writes: every one reads
                    // once, and each read-modify-write adds the one UPDATE.
                    assert_eq!(num(&b[1], "READ", "Operations"), 400.0, "{what}");
                    let updates = num(&b[1], "UPDATE", "Operations");
                    assert!(updates > 0.0 && updates < 400.0, "{what}: {updates} updates");
                    assert_eq!(ops, 400.0 + updates, "{what}: only READ and UPDATE");
                } else {
                    assert_eq!(ops, 400.0, "{what}");
                }
                if w == "c" {
                    // Read only: every key read was loaded, so YCSB's keys match.
                    assert_eq!(num(&b[1], "READ", "Return=OK"), 400.0, "{what}");
                }
                if file == "workloada-extend" {
                    assert!(num(&b[1], "EXTEND", "Operations") > 100.0, "{what}");
                }
                if w == "e" {
                    assert!(num(&b[1], "SCAN", "Operations") > 300.0, "{what}");
                }
            }
        }
    }
}

#[test]
fn a_ycsb_file_runs_as_a_workload_with_an_untimed_load() {
    // Without -load the records are loaded untimed (kvmark's seed), and only the
    // transaction phase is reported.
    let b = run_ycsb(&[
        &bundled("workloadc"),
        "-p",
        "recordcount=200",
        "-p",
        "operationcount=300",
    ]);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(num(&b[0], "READ", "Operations"), 300.0);
    assert_eq!(
        num(&b[0], "READ", "Return=OK"),
        300.0,
        "the untimed load filled the store"
    );
    // -load alone times only the load.
    let b = run_ycsb(&["-P", &bundled("workloada"), "-p", "recordcount=200", "-load"]);
    assert_eq!(b.len(), 1);
    assert_eq!(operations(&b[0]), 200.0);
}

#[test]
fn unknown_properties_are_named_and_bad_values_refused() {
    let path = bundled("workloadb");
    let o = kvmark(&[
        "-P",
        &path,
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=100",
        "-p",
        "readproportoin=0.5",
    ]);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).contains("unknown YCSB property 'readproportoin'"),
        "{}",
        stderr(&o)
    );
    let o = kvmark(&["-P", &path, "-p", "requestdistribution=zipf"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("workloadb") && stderr(&o).contains("requestdistribution=zipf"),
        "{}",
        stderr(&o)
    );
    let o = kvmark(&["-P", &path, "-p", "recordcount"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("NAME=VALUE"), "{}", stderr(&o));
}

#[test]
fn client_properties_set_threads_and_time() {
    let path = bundled("workloadc");
    // threadcount is the thread count when --threads is not given.
    let o = kvmark(&[
        "-P",
        &path,
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=400",
        "-p",
        "threadcount=2",
    ]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("threads=2"), "{}", stdout(&o));
    // maxexecutiontime ends a run phase that would otherwise run far longer.
    let started = std::time::Instant::now();
    let b = run_ycsb(&[
        "-P",
        &path,
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=2000000000",
        "-p",
        "maxexecutiontime=1",
    ]);
    let took = started.elapsed().as_secs_f64();
    let ms = num(&b[0], "OVERALL", "RunTime(ms)");
    // About a second, not two billion operations: the upper bound leaves a loaded
    // machine seconds to notice the end and stop the workers.
    assert!((900.0..5000.0).contains(&ms), "run phase took {ms} ms");
    assert!(took < 30.0, "{took}");
}

#[test]
fn ycsb_output_parses_like_ycsbs_own() {
    // A sample in YCSB's real layout, and kvmark's output, through the same parser a
    // user's script would use: the metrics kvmark writes for READ and UPDATE are the
    // ones YCSB writes for them, in YCSB's order.
    let sample = std::fs::read_to_string(root().join("tests/fixtures/ycsb/sample-output.txt")).unwrap();
    let theirs = parse(&sample);
    let o = kvmark(&[
        &bundled("workloada"),
        "-p",
        "recordcount=100",
        "-p",
        "operationcount=500",
        "--report",
        "ycsb",
    ]);
    assert_exit(&o, 0);
    let b = blocks(&stdout(&o));
    let ours = parse(&stdout(&o));
    for section in ["OVERALL", "READ", "UPDATE"] {
        let metrics = |rows: &[(String, String, String)]| -> Vec<String> {
            rows.iter()
                .filter(|(s, m, _)| s == section && !m.starts_with("Return=NOT_FOUND"))
                .map(|(_, m, _)| m.clone())
                .collect()
        };
        assert_eq!(metrics(&ours), metrics(&theirs), "[{section}]");
        for (s, m, v) in ours.iter().filter(|(s, _, _)| s == section) {
            assert!(v.parse::<f64>().is_ok(), "[{s}], {m}, {v}");
        }
    }
    assert_eq!(b.len(), 1);
    assert_eq!(operations(&b[0]), 500.0);
}
