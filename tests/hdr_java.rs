//! kvmark's .hlog files are HdrHistogram's own interval-log format: HdrHistogram's
//! reference Java tool, HistogramLogProcessor, reads them and finds the same counts and
//! percentiles as kvmark's results.json.
//!
//! The jar comes from Maven Central through `mvn dependency:get` into a cache outside
//! the clone (~/.cache/kvmark-tools/m2), fetched once; Java and Maven come from
//! scripts/setup.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{assert_exit, bundled, kvmark};
use serde_json::Value;

/// The HdrHistogram release whose HistogramLogProcessor reads the logs.
const HDR_VERSION: &str = "2.2.2";

fn cache() -> PathBuf {
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/kvmark-tools/m2")
}

/// The HdrHistogram jar, fetched from Maven Central on first use.
fn jar() -> PathBuf {
    let repo = cache();
    let jar = repo.join(format!(
        "org/hdrhistogram/HdrHistogram/{HDR_VERSION}/HdrHistogram-{HDR_VERSION}.jar"
    ));
    if !jar.exists() {
        let out = Command::new("mvn")
            .args(["-q", "-B"])
            .arg(format!("-Dmaven.repo.local={}", repo.display()))
            .arg("dependency:get")
            .arg(format!("-Dartifact=org.hdrhistogram:HdrHistogram:{HDR_VERSION}"))
            .current_dir(std::env::temp_dir())
            .output()
            .expect("run mvn (Debian's maven package; scripts/setup installs it)");
        assert!(
            out.status.success() && jar.exists(),
            "mvn dependency:get of HdrHistogram {HDR_VERSION} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    jar
}

/// HistogramLogProcessor's figures for `tag` over the whole log: the last line's
/// Total_Count, Total_50%, Total_90%, Total_99%, Total_99.9%, Total_99.99%, Total_Max.
fn java_totals(jar: &Path, log: &Path, tag: &str, out_dir: &Path) -> [f64; 7] {
    let out_file = out_dir.join(format!("hlp-{tag}"));
    let out = Command::new("java")
        .arg("-cp")
        .arg(jar)
        .arg("org.HdrHistogram.HistogramLogProcessor")
        .arg("-i")
        .arg(log)
        .arg("-o")
        .arg(&out_file)
        .args(["-tag", tag, "-csv", "-outputValueUnitRatio", "1"])
        .output()
        .expect("run java (scripts/setup installs a JRE)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&out_file).unwrap();
    let header = text
        .lines()
        .find(|l| l.starts_with("\"Timestamp\""))
        .expect("a CSV header");
    assert!(
        header.ends_with(
            "\"Total_Count\",\"Total_50%\",\"Total_90%\",\"Total_99%\",\"Total_99.9%\",\"Total_99.99%\",\"Total_Max\""
        ),
        "{header}"
    );
    let last = text.lines().last().unwrap();
    let cols: Vec<f64> = last.split(',').map(|c| c.parse().unwrap()).collect();
    assert!(cols.len() >= 7, "{last}");
    std::array::from_fn(|i| cols[cols.len() - 7 + i])
}

#[test]
fn hdr_histograms_java_tool_reads_the_logs_and_agrees_with_the_report() {
    let jar = jar();
    let tmp = tempfile::tempdir().unwrap();
    // Two repeats with a 50 ms timeline: many intervals per tag in one log.
    let out = kvmark(&[
        "--ops",
        "40000",
        "--items",
        "5000",
        "--repeat",
        "2",
        "--timeline",
        "0.05",
        "--report-dir",
        tmp.path().to_str().unwrap(),
        &bundled("mixed.lua"),
    ]);
    assert_exit(&out, 0);
    let dir = std::fs::read_dir(tmp.path()).unwrap().next().unwrap().unwrap().path();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let log = std::fs::read_dir(dir.join("hdr"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "hlog"))
        .expect("a .hlog file");
    let intervals = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("Tag=run.get,"))
        .count();
    assert!(intervals >= 2, "expected several intervals of run.get, got {intervals}");
    let ops = report["points"][0]["ops"].as_array().unwrap();
    assert!(ops.len() >= 4, "mixed runs get, put, del and range: {ops:?}");
    for op in ops {
        let name = op["op"].as_str().unwrap();
        let java = java_totals(&jar, &log, &format!("run.{name}"), tmp.path());
        let pct = &op["percentiles_ns"];
        let ours = [
            op["count"].as_f64().unwrap(),
            pct["p50"].as_f64().unwrap(),
            pct["p90"].as_f64().unwrap(),
            pct["p99"].as_f64().unwrap(),
            pct["p99.9"].as_f64().unwrap(),
            pct["p99.99"].as_f64().unwrap(),
            op["max_ns"].as_f64().unwrap(),
        ];
        assert_eq!(
            java, ours,
            "{name}: HistogramLogProcessor (count, p50, p90, p99, p99.9, p99.99, max) differs from results.json"
        );
    }
}
