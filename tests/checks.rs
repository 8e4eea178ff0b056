//! Self-checks through the real binary: each is shown on a run made to fail it, its
//! counterpart run stays silent, and `--strict` turns a failed check into exit 1.

mod common;

use common::*;
use serde_json::Value;

/// Runs kvmark with a JSON report in a fresh directory; returns the exit status, the
/// console and the first point's JSON.
fn run(args: &[&str]) -> (i32, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let report = format!("console,json:{}", json.display());
    let mut all = vec!["--report", report.as_str()];
    all.extend_from_slice(args);
    let o = kvmark(&all);
    let console = format!("{}{}", stdout(&o), stderr(&o));
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{e}\n{console}"))).unwrap();
    (o.status.code().unwrap_or(-1), console, doc["points"][0].clone())
}

/// The names of the checks a point's JSON says it failed.
fn failed(point: &Value) -> Vec<String> {
    point["checks"]["warnings"]
        .as_array()
        .expect("a warnings list")
        .iter()
        .map(|w| w["check"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_short_run_has_uncertain_percentiles_and_strict_fails_it() {
    let wl = bundled("mixed.lua");
    let (code, console, point) = run(&["--ops", "300", &wl]);
    assert_eq!(code, 0, "a check alone does not fail the run\n{console}");
    assert!(console.contains("check uncertain_percentiles: "), "{console}");
    assert!(console.contains("p99.99 ("), "{console}");
    assert_eq!(failed(&point), ["uncertain_percentiles"]);
    // The intervals: p99.99 of a few hundred samples has no upper bound; every bounded
    // interval holds its percentile.
    let get = &point["checks"]["intervals"]["get"];
    assert!(get["p99.99"][1].is_null(), "{get}");
    let ops = point["ops"].as_array().expect("ops");
    let get_op = ops.iter().find(|o| o["op"] == "get").expect("a get op");
    let p50 = get_op["percentiles_ns"]["p50"]
        .as_u64()
        .unwrap_or_else(|| panic!("{get_op}"));
    let (lo, hi) = (get["p50"][0].as_u64().unwrap(), get["p50"][1].as_u64().unwrap());
    assert!(lo <= p50 && p50 <= hi, "{lo} <= {p50} <= {hi}");
    assert_eq!(point["checks"]["confidence"].as_f64(), Some(0.95));

    assert!(
        point["checks"]["throughput_wu_per_s"].is_null(),
        "one repeat: no spread"
    );

    // Over repeats, the throughput's interval holds the repeats' mean.
    let (_, console, point) = run(&["--ops", "300", "--repeat", "3", &wl]);
    let t = &point["checks"]["throughput_wu_per_s"];
    let rates: Vec<f64> = (0..3)
        .map(|r| point["repeats"][r]["wu_per_s"].as_f64().unwrap())
        .collect();
    let mean = rates.iter().sum::<f64>() / 3.0;
    assert_eq!(t["repeats"], 3, "{console}");
    assert!(
        (t["mean"].as_f64().unwrap() - mean).abs() < 1e-6 * mean,
        "{t} {rates:?}"
    );
    assert!(
        t["low"].as_f64().unwrap() <= mean && mean <= t["high"].as_f64().unwrap(),
        "{t}"
    );

    let (code, console, _) = run(&["--ops", "300", "--strict", &wl]);
    assert_eq!(code, 1, "{console}");
    assert!(
        console.contains("--strict: 1 of 1 point(s) failed a self-check"),
        "{console}"
    );
}

#[test]
fn an_open_loop_rate_out_of_reach_is_reported_and_one_within_reach_is_not() {
    // One thread and a 1 ms service time serve at most 1,000 units a second.
    let wl = bundled("mixed.lua");
    let sim = [
        "--backend",
        "sim",
        "--engine-opt",
        "sim.service=1ms",
        "--threads",
        "1",
        "--secs",
        "1",
    ];
    let mut args = sim.to_vec();
    args.extend(["--rate", "4000", &wl]);
    let (_, console, point) = run(&args);
    assert!(failed(&point).contains(&"rate_missed".to_string()), "{console}");
    assert!(console.contains("check rate_missed: achieved "), "{console}");
    assert!(console.contains("of the target rate 4000"), "{console}");

    let mut args = sim.to_vec();
    args.extend(["--rate", "100", &wl]);
    let (_, console, point) = run(&args);
    assert!(!failed(&point).contains(&"rate_missed".to_string()), "{console}");
    assert!(!console.contains("check rate_missed"), "{console}");
}

#[cfg(feature = "redis")]
#[test]
fn a_client_that_spends_its_time_in_lua_is_saturated_and_an_idle_one_is_not() {
    if !common::servers::can_start("redis") {
        return;
    }
    let redis = common::servers::PrivateServer::start("redis");
    let url = format!("redis.url={}", redis.url);
    let dir = tempfile::tempdir().unwrap();
    // Each unit spins in Lua (about 15 ms) far longer than its one request takes, even
    // on a busy machine where the server waits for a CPU too.
    let busy = dir.path().join("busy.lua");
    std::fs::write(
        &busy,
        "return { run = function(ctx) local x = 0 for i = 1, 2000000 do x = x + i end kv.put('k', tostring(x)) end }",
    )
    .unwrap();
    let base = [
        "--backend",
        "redis",
        "--engine-opt",
        url.as_str(),
        "--threads",
        "1",
        "--secs",
        "2",
    ];
    let mut args = base.to_vec();
    args.push(busy.to_str().unwrap());
    let (_, console, point) = run(&args);
    assert!(failed(&point).contains(&"client_saturated".to_string()), "{console}");
    assert!(
        console.contains("check client_saturated: kvmark's threads ran "),
        "{console}"
    );
    // Busy, or starved on a shared machine: either way the client was the limit.
    let demand = |p: &Value| {
        let r = &p["repeats"][0];
        r["client_cores_used"].as_f64().unwrap() + r["client_cores_waited"].as_f64().unwrap()
    };
    assert!(demand(&point) > 0.9, "{point}");

    // Five units a second leave the client idle most of the time.
    let mut args = base.to_vec();
    args.extend(["--rate", "5", busy.to_str().unwrap()]);
    let (_, console, point) = run(&args);
    assert!(!failed(&point).contains(&"client_saturated".to_string()), "{console}");
    assert!(demand(&point) < 0.9, "{point}");
}
