//! `kvmark fit` by the real binary, on a cache trace generated with known parameters:
//! the fit names them, and the fitted spec run on an engine meets the trace's replay
//! on the same engine in operation counts, hit rate, bytes written and value sizes.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// The trace's known parameters.
const KEYS: usize = 5000;
const ZIPF_S: f64 = 0.9;
const PER_SECOND: usize = 20_000;

/// xorshift64*: the test's own generator, so the trace is the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The value size of a write: 100 bytes half the time, 200 to 1000 three times in
/// ten, 4096 otherwise.
fn value_size(rng: &mut Rng) -> u64 {
    let u = rng.unit();
    if u < 0.5 {
        100
    } else if u < 0.8 {
        200 + rng.next() % 801
    } else {
        4096
    }
}

/// The class of a value size, for comparing histograms.
fn class(size: u64) -> usize {
    match size {
        100 => 0,
        200..=1000 => 1,
        4096 => 2,
        _ => 3,
    }
}

/// Three seconds of a cache: keys by Zipf(0.9) over 5000 (rank 1 first), a mix that
/// changes each second, and a kind kvmark has no verb for. Returns the file and the
/// written values' size classes.
fn trace(dir: &Path) -> (PathBuf, [u64; 4]) {
    let mut cdf = Vec::with_capacity(KEYS);
    let mut acc = 0.0;
    for r in 1..=KEYS {
        acc += (r as f64).powf(-ZIPF_S);
        cdf.push(acc);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut text = String::new();
    let mut classes = [0u64; 4];
    // (set, get, delete, append, incr) shares per second.
    let mixes = [
        [0.40, 0.55, 0.05, 0.0, 0.0],
        [0.15, 0.80, 0.02, 0.03, 0.0],
        [0.20, 0.70, 0.05, 0.0, 0.05],
    ];
    for (second, mix) in mixes.iter().enumerate() {
        for _ in 0..PER_SECOND {
            let u = rng.unit() * acc;
            let rank = cdf.partition_point(|&c| c < u).min(KEYS - 1);
            // Keys of 12 to 31 bytes, fixed per key.
            let key = format!("{:0>width$}", format!("k{rank}"), width = 12 + rank % 20);
            let u = rng.unit();
            let (op, size) = if u < mix[0] {
                let s = value_size(&mut rng);
                classes[class(s)] += 1;
                ("set", s)
            } else if u < mix[0] + mix[1] {
                ("get", 0)
            } else if u < mix[0] + mix[1] + mix[2] {
                ("delete", 0)
            } else if u < mix[0] + mix[1] + mix[2] + mix[3] {
                ("append", 16)
            } else {
                ("incr", 8)
            };
            writeln!(text, "{second},{key},{},{size},c{},{op},0", key.len(), rank % 7).unwrap();
            if rng.unit() < 0.01 {
                writeln!(text, "{second},{key},{},0,c1,touch,0", key.len()).unwrap();
            }
        }
    }
    let path = dir.join("cache.csv");
    std::fs::write(&path, text).unwrap();
    (path, classes)
}

/// Per operation kind of the first point a run wrote under `dir`: (count, hits, bytes).
fn kinds(dir: &Path) -> BTreeMap<String, (u64, u64, u64)> {
    let run = std::fs::read_dir(dir)
        .unwrap()
        .find_map(|e| e.ok().map(|e| e.path()).filter(|p| p.is_dir()))
        .unwrap_or_else(|| dir.to_path_buf());
    let json: Value = serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    op_kinds(&json["points"][0])
}

fn near(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

#[test]
fn a_fitted_spec_reproduces_its_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, classes) = trace(dir.path());
    let spec = dir.path().join("fitted.json");
    let (t, s) = (trace.to_str().unwrap(), spec.to_str().unwrap());
    let o = kvmark(&["fit", "--format", "twitter", t, "-o", s, "--windows", "3"]);
    assert_exit(&o, 0);
    let report = stdout(&o);
    // The fit finds the law the trace was made with, and says what it could not model.
    let line = report
        .lines()
        .find(|l| l.starts_with("key popularity:"))
        .unwrap_or_else(|| panic!("{report}"));
    let fitted: f64 = line
        .split("zipf s = ")
        .nth(1)
        .and_then(|r| r.split(|c: char| c != '.' && !c.is_ascii_digit()).next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no zipf exponent in: {line}"));
    assert!((fitted - ZIPF_S).abs() < 0.1, "fitted s = {fitted}: {report}");
    assert!(line.contains("the oldest keys hottest"), "{line}");
    assert!(report.contains("kind 'touch'"), "{report}");
    assert!(report.contains("written values:"), "{report}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&spec).unwrap()).unwrap();
    let groups = json["sections"][0]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 3, "{json}");
    // The second window's appends and the third's counters, each in its own window.
    assert!(groups[1]["merges"]["op_count"].as_u64().unwrap() > 400, "{json}");
    assert!(
        groups[0].get("merges").is_none() && groups[2].get("read_modify_writes").is_some(),
        "{json}"
    );
    for g in groups {
        assert!(near(g["rate"].as_f64().unwrap(), PER_SECOND as f64, 0.05), "{g}");
    }
    // --speed scales every rate and nothing else.
    let fast = dir.path().join("fast.json");
    let o = kvmark(&[
        "fit",
        "--format",
        "twitter",
        t,
        "-o",
        fast.to_str().unwrap(),
        "--windows",
        "3",
        "--speed",
        "4",
    ]);
    assert_exit(&o, 0);
    let fast: Value = serde_json::from_str(&std::fs::read_to_string(&fast).unwrap()).unwrap();
    for (g, f) in groups.iter().zip(fast["sections"][0]["groups"].as_array().unwrap()) {
        assert!(
            near(f["rate"].as_f64().unwrap(), 4.0 * g["rate"].as_f64().unwrap(), 1e-9),
            "{f}"
        );
        assert_eq!(f["inserts"], g["inserts"]);
    }

    // The same engine, one thread: the trace replayed, and the fitted spec run.
    let (a, b) = (dir.path().join("replayed"), dir.path().join("fitted"));
    let common = ["--backend", "skiplist", "--threads", "1", "--report-dir"];
    let o = kvmark(
        &[
            &["replay", "--format", "twitter", t][..],
            &common,
            &[a.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_exit(&o, 0);
    let o = kvmark(&[&[s][..], &common, &[b.to_str().unwrap()]].concat());
    assert_exit(&o, 0);
    let (replayed, fitted) = (kinds(&a), kinds(&b));
    for kind in ["put", "get", "del", "append"] {
        let (rc, rh, rb) = replayed[kind];
        let (fc, fh, fb) = fitted.get(kind).copied().unwrap_or_default();
        assert!(
            near(fc as f64, rc as f64, 0.01),
            "{kind} count: fitted {fc}, replayed {rc}"
        );
        if kind == "get" {
            let (rr, fr) = (rh as f64 / rc as f64, fh as f64 / fc as f64);
            assert!((rr - fr).abs() < 0.02, "hit rate: fitted {fr:.4}, replayed {rr:.4}");
        }
        if kind == "put" {
            assert!(
                near(fb as f64, rb as f64, 0.05),
                "put bytes: fitted {fb}, replayed {rb}"
            );
        }
    }

    // The value sizes the spec writes, class by class, against the trace's.
    let log = dir.path().join("fitted.ops");
    assert_exit(&kvmark(&["gen", s, "-o", log.to_str().unwrap()]), 0);
    let mut written = [0u64; 4];
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let mut f = line.split(' ');
        if matches!(f.next(), Some("I" | "U")) {
            written[class(f.nth(1).map_or(0, str::len) as u64)] += 1;
        }
    }
    // Class 3 holds the 8-byte counters that missed increments write; the trace's sets
    // have none, so the shares are over the first three classes.
    let (total, want): (u64, u64) = (written[..3].iter().sum(), classes[..3].iter().sum());
    for c in 0..3 {
        let (got, exp) = (written[c] as f64 / total as f64, classes[c] as f64 / want as f64);
        assert!(
            (got - exp).abs() < 0.02,
            "size class {c}: {got:.4} of the spec's writes, {exp:.4} of the trace's"
        );
    }
}

/// `kvmark fit --format FORMAT TRACE -o OUT EXTRA...` must be refused (exit 2) without
/// writing OUT; returns its stderr.
fn refused(format: &str, trace: &Path, out: &Path, extra: &[&str]) -> String {
    let (t, o) = (trace.to_str().unwrap(), out.to_str().unwrap());
    let o = kvmark(&[&["fit", "--format", format, t, "-o", o][..], extra].concat());
    assert_exit(&o, 2);
    assert!(!out.exists());
    stderr(&o)
}

#[test]
fn bad_input_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "0,k1,2,10,c1,get,0\n1,k2,2,ten,c1,set,0\n").unwrap();
    let out = dir.path().join("s.json");
    let e = refused("twitter", &bad, &out, &[]);
    assert!(e.contains("bad.csv:2:"), "{e}");
    let e = refused("oplog", &bad, &out, &[]);
    assert!(e.contains("kvmark replay"), "{e}");
    let good = dir.path().join("good.csv");
    std::fs::write(&good, "0,k1,2,10,c1,set,0\n").unwrap();
    let e = refused("twitter", &good, &out, &["--speed", "0"]);
    assert!(e.contains("--speed 0"), "{e}");
    let only = dir.path().join("only.csv");
    std::fs::write(&only, "0,k1,2,0,c1,touch,0\n").unwrap();
    let e = refused("twitter", &only, &out, &[]);
    assert!(e.contains("nothing to fit"), "{e}");
}
