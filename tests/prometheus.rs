//! `--metrics-listen` scraped by a real Prometheus (Debian's package, installed by
//! scripts/setup) on loopback: a short open-loop run on the sim engine, then
//! Prometheus's HTTP API is asked for the series it stored.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_exit, bundled, stderr, stdout};
use serde_json::Value;

/// A free loopback port (bound and released; the race with another process taking it
/// in between is harmless here).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A plain HTTP/1.0 GET on loopback: (status, body).
fn get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// Prometheus in a temporary directory, killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(dir: &Path, target_port: u16) -> Prometheus {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 100ms\n  scrape_timeout: 90ms\n\
             scrape_configs:\n  - job_name: kvmark\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus (Debian's prometheus package; scripts/setup installs it)");
    let p = Prometheus { child, port };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !matches!(get(port, "/-/ready"), Ok((200, _))) {
        assert!(
            Instant::now() < deadline,
            "prometheus never became ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    p
}

/// The values of an instant query, as (labels, value).
fn query(p: &Prometheus, promql: &str) -> Vec<(Value, f64)> {
    let enc: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = get(p.port, &format!("/api/v1/query?query={enc}")).unwrap();
    assert_eq!(status, 200, "{promql}: {body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    doc["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["metric"].clone(), r["value"][1].as_str().unwrap().parse().unwrap()))
        .collect()
}

fn one(p: &Prometheus, promql: &str) -> f64 {
    let r = query(p, promql);
    assert_eq!(r.len(), 1, "{promql} gave {r:?}");
    r[0].1
}

#[test]
fn prometheus_scrapes_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    let kv_port = free_port();
    let prom = start_prometheus(tmp.path(), kv_port);
    // Prometheus hands new targets to its scrapers a few seconds after start: wait
    // until it scrapes (and finds nothing yet), so the whole run is scraped.
    let deadline = Instant::now() + Duration::from_secs(60);
    while query(&prom, "up{job=\"kvmark\"}").is_empty() {
        assert!(Instant::now() < deadline, "prometheus never scraped its target");
        std::thread::sleep(Duration::from_millis(100));
    }
    let addr = format!("127.0.0.1:{kv_port}");
    let timeline = tmp.path().join("timeline.tsv");
    let reports = format!("json,timeline:{}", timeline.display());
    let out = common::kvmark(&[
        "--backend",
        "sim",
        "--engine-opt",
        "sim.service=20us",
        "--items",
        "1000",
        "--rate",
        "5000",
        "--secs",
        "4",
        // A sample period well above the scrape interval: see the lag below.
        "--timeline",
        "1",
        "--report",
        &reports,
        "--metrics-listen",
        &addr,
        &bundled("mixed.lua"),
    ]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains(&format!("serving metrics at http://{addr}/metrics")));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let gets = report["points"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "get")
        .unwrap()["count"]
        .as_f64()
        .unwrap();

    // The run has ended, so its series are stale: ask for their peaks over the run.
    assert_eq!(one(&prom, "max_over_time(up{job=\"kvmark\"}[5m])"), 1.0);
    let scraped = one(
        &prom,
        "max_over_time(kvmark_operations_total{engine=\"sim\",op=\"get\",workload=\"mixed\"}[5m])",
    );
    // The counter moves by whole intervals, one interval late (docs/metrics.md): the
    // last scrape before the run ended (within 100 ms of its end, and so after its last
    // tick, at least half a period earlier) saw every interval but the one waiting for
    // its hand-over and the final one. A scrape that came after the final hand-over
    // saw them all. A loaded machine may delay or time out (90 ms) the scrapes near
    // the end, which leaves more intervals unseen, but never part of one.
    let tsv = std::fs::read_to_string(&timeline).unwrap();
    let col = |name: &str| common::tsv_column(&tsv, name);
    let (phase, metric, value) = (col("phase"), col("metric"), col("value"));
    let per_interval: Vec<f64> = tsv
        .lines()
        .skip(1)
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[phase] == "run" && f[metric] == "op.get.count")
        .map(|f| f[value].parse().unwrap())
        .collect();
    assert!(per_interval.len() >= 3, "{tsv}");
    assert_eq!(
        per_interval.iter().sum::<f64>(),
        gets,
        "the intervals add up to the report"
    );
    // The unseen counts of the last k intervals, k = 0 .. all but the first (which
    // the run's later scrapes saw whatever the load).
    let unseen_after: Vec<f64> = (0..per_interval.len())
        .map(|k| per_interval[per_interval.len() - k..].iter().sum::<f64>())
        .collect();
    let unseen = gets - scraped;
    assert!(
        unseen_after.contains(&unseen),
        "Prometheus saw {scraped} gets of the {gets} the report counts, not all but the last few of \
         the intervals {per_interval:?}"
    );
    assert_eq!(one(&prom, "max_over_time(kvmark_errors_total{op=\"get\"}[5m])"), 0.0);
    assert_eq!(
        one(&prom, "max_over_time(kvmark_target_rate{unit=\"units\"}[5m])"),
        5000.0
    );
    let achieved = one(
        &prom,
        "quantile_over_time(0.5, kvmark_units_per_second{phase=\"run\"}[5m])",
    );
    assert!((3500.0..6500.0).contains(&achieved), "median achieved rate {achieved}");
    let p50 = one(
        &prom,
        "quantile_over_time(0.5, kvmark_latency_seconds{op=\"get\",set=\"service\",quantile=\"0.5\"}[5m])",
    );
    assert!((20e-6..1e-3).contains(&p50), "median interval p50 of get {p50}s");
    let resp = query(
        &prom,
        "max_over_time(kvmark_latency_seconds{op=\"get\",set=\"response\",quantile=\"0.99\"}[5m])",
    );
    assert_eq!(resp.len(), 1, "open loop serves response time too: {resp:?}");
    let info = query(&prom, "max_over_time(kvmark_point_info{phase=\"run\"}[5m])");
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0].0["point"], "mixed sim t1 b1 r5000");
    assert_eq!(info[0].0["repeat"], "1");

    // Every series the Grafana dashboard draws is one Prometheus stored.
    let (status, body) = get(prom.port, "/api/v1/label/__name__/values").unwrap();
    assert_eq!(status, 200, "{body}");
    let stored: Value = serde_json::from_str(&body).unwrap();
    let stored: Vec<&str> = stored["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let dashboard = std::fs::read_to_string(common::root().join("deploy/grafana/kvmark.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let mut drawn = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            let names = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("kvmark_"));
            for name in names {
                assert!(
                    stored.contains(&name),
                    "the dashboard draws {name}, which kvmark never served: {stored:?}"
                );
                drawn += 1;
            }
        }
    }
    assert!(drawn >= 6, "the dashboard draws {drawn} series");
}

#[test]
fn a_bad_listen_address_is_a_usage_error() {
    let out = common::kvmark(&["--metrics-listen", "nowhere", "--ops", "10", &bundled("null.lua")]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--metrics-listen nowhere"), "{}", stderr(&out));
}
