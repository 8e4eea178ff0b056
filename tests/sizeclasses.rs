//! `--size-classes` through the real binary: each operation kind's latency split by
//! value size in the console, TSV, JSON, YCSB output and the report page, the classes
//! holding the very samples of their kind, merged exactly over segments, with
//! `--verify` and in open loop, and refused bounds.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use common::parse::{console_points, read_tsv};
use common::{assert_exit, kvmark, spec_file, stderr, stdout};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use serde_json::Value;

/// Loads 3000 keys, then reads and updates them, every value 1 to 8000 bytes long
/// (uniform): about 3.2% of the writes are up to 256 bytes, 48% 257 to 4096, 48.8%
/// above.
const SIZES: &str = r#"{
  "name": "sizes",
  "sections": [
    {
      "key_len": 16,
      "val_len": { "uniform": { "min": MIN, "max": 8000 } },
      "groups": [
        { "name": "load", "inserts": { "op_count": 3000 } },
        { "name": "run", "point_queries": { "op_count": 3000 }, "updates": { "op_count": 3000 } }
      ]
    }
  ]
}"#;

fn sizes_spec(min: u64) -> (tempfile::TempDir, PathBuf) {
    spec_file("sizes.json", &SIZES.replace("MIN", &min.to_string()))
}

fn ok(o: &std::process::Output) -> String {
    assert_exit(o, 0);
    stdout(o)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The one report directory under `parent`.
fn report_dir(parent: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("results.json").is_file())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn n(v: &Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or_else(|| panic!("no {field} in {v}"))
}

/// An `ops` (or `ops_by_size`) list as label -> entry.
fn by_label(list: &Value) -> BTreeMap<String, Value> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|o| (o["op"].as_str().unwrap().to_string(), o.clone()))
        .collect()
}

/// A histogram's (value, count) pairs, to compare histograms of different bounds.
fn buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

fn decode(encoded: &str) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
    Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap()
}

#[test]
fn a_spec_splits_each_kinds_latency_by_value_size_in_every_report() {
    let (_spec_dir, spec) = sizes_spec(1);
    let out = tempfile::tempdir().unwrap();
    let said = ok(&kvmark(&[
        "--threads",
        "1",
        "--size-classes",
        "256,4K",
        "--report-dir",
        out.path().to_str().unwrap(),
        spec.to_str().unwrap(),
    ]));
    assert!(
        said.contains("value-size classes (bytes): <=256 <=4096 >4096"),
        "{said}"
    );
    let dir = report_dir(out.path());
    let doc = read_json(&dir.join("results.json"));
    assert_eq!(doc["run"]["size_classes"], serde_json::json!([256, 4096]));
    let point = &doc["points"][0];

    for phase in point["phases"].as_array().unwrap() {
        let name = phase["name"].as_str().unwrap();
        let kinds = by_label(&phase["ops"]);
        let classes = by_label(&phase["ops_by_size"]);
        // Every write and every read that found its value is in exactly one class,
        // and a class's values lie in its range (its bytes are keys of 16 and values).
        for (kind, whole) in &kinds {
            let mine: Vec<&Value> = classes.values().filter(|c| c["kind"] == kind.as_str()).collect();
            let calls: u64 = mine.iter().map(|c| n(c, "count")).sum();
            let want = if kind == "get" {
                n(whole, "hits")
            } else {
                n(whole, "count")
            };
            assert_eq!(calls, want, "phase {name}: {kind}'s classes hold its calls");
            // The phase `all` has the load's puts and the run's.
            let calls_made = if name == "all" && kind == "put" { 6000 } else { 3000 };
            assert_eq!(want, calls_made, "phase {name}: {kind}");
            let mut union = Histogram::<u64>::new(3).unwrap();
            for c in &mine {
                let label = c["op"].as_str().unwrap();
                assert_eq!(label, format!("{kind}{}", c["size_class"].as_str().unwrap()));
                let h = decode(c["hdr"].as_str().unwrap());
                assert_eq!(h.len(), n(c, "count"), "{label}'s histogram holds its calls");
                union.add(&h).unwrap();
                if kind == "put" {
                    let mean = n(c, "bytes") as f64 / n(c, "count") as f64 - 16.0;
                    let lo = n(c, "value_bytes_min") as f64;
                    let hi = c["value_bytes_max"].as_u64().map_or(f64::INFINITY, |m| m as f64);
                    assert!(
                        lo <= mean && mean <= hi,
                        "{label}: mean value {mean} outside {lo}..{hi}"
                    );
                }
                assert_eq!(n(c, "hits"), if kind == "get" { n(c, "count") } else { 0 });
            }
            // The classes hold the very samples their kind recorded.
            let pct = &whole["percentiles_ns"];
            assert_eq!(union.value_at_quantile(0.5), n(pct, "p50"), "{name} {kind} p50");
            assert_eq!(union.value_at_quantile(0.99), n(pct, "p99"), "{name} {kind} p99");
            assert_eq!(union.max(), n(whole, "max_ns"), "{name} {kind} max");
            // Uniform sizes of 1 to 8000 bytes: 3.2%, 48% and 48.8% of the calls.
            let share = |class: &str| {
                classes
                    .get(&format!("{kind}{class}"))
                    .map_or(0.0, |c| n(c, "count") as f64 / want as f64)
            };
            for (class, expected) in [("<=256", 0.032), ("<=4096", 0.48), (">4096", 0.488)] {
                let got = share(class);
                assert!(
                    (got - expected).abs() < 0.04,
                    "phase {name}: {kind}{class} has {got:.3} of the calls, expected about {expected}"
                );
            }
        }
    }
    // The point's own list (all phases) adds the phases' classes.
    let all = by_label(&point["ops_by_size"]);
    let load = by_label(&point["phases"][0]["ops_by_size"]);
    let run = by_label(&point["phases"][1]["ops_by_size"]);
    for (label, c) in &all {
        let parts = [&load, &run]
            .iter()
            .filter_map(|p| p.get(label))
            .map(|c| n(c, "count"))
            .sum::<u64>();
        assert_eq!(n(c, "count"), parts, "{label}");
    }

    // The console: each kind's row, then its classes' rows, with the json's counts.
    let console = console_points(&said);
    let rows: Vec<&(String, Vec<String>)> = console[0].ops.iter().collect();
    let labels: Vec<&str> = rows.iter().map(|(op, _)| op.as_str()).collect();
    for want in [
        "put",
        "put<=256",
        "put<=4096",
        "put>4096",
        "get",
        "get<=256",
        "get<=4096",
        "get>4096",
    ] {
        assert!(labels.contains(&want), "console rows {labels:?} lack {want}");
    }
    let put_at = labels.iter().position(|l| *l == "put").unwrap();
    assert_eq!(labels[put_at + 1], "put<=256", "a kind's classes follow it");
    for (label, values) in rows.iter().rev().take_while(|(op, _)| op != "put") {
        if let Some(c) = all.get(label.as_str()) {
            assert_eq!(values[0], n(c, "count").to_string(), "console {label}");
        }
    }

    // The TSV: a row per class and phase, its count the json's.
    let tsv = read_tsv(&dir.join("points.tsv"));
    let row = tsv
        .rows
        .iter()
        .find(|r| r["op"] == "put<=4096" && r["phase"] == "run")
        .unwrap_or_else(|| panic!("no put<=4096 row in points.tsv"));
    assert_eq!(row["count"], n(&run["put<=4096"], "count").to_string());

    // YCSB's layout names the classes after its own operation names.
    let ycsb = std::fs::read_to_string(dir.join("ycsb.txt")).unwrap();
    let line = format!("[UPDATE<=4096], Operations, {}", n(&run["put<=4096"], "count"));
    assert!(ycsb.contains(&line), "no `{line}` in:\n{ycsb}");
    assert!(ycsb.contains("[READ>4096], Operations, "), "{ycsb}");

    // The report page's latency table.
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        page.contains("<td>put&lt;=4096</td>"),
        "the report page lists put<=4096"
    );

    // `kvmark compare` shows the classes beside the kinds.
    let compared = ok(&kvmark(&["compare", dir.to_str().unwrap(), dir.to_str().unwrap()]));
    assert!(compared.contains("  put<=4096 "), "{compared}");
}

#[test]
fn multi_key_calls_and_appends_fall_in_the_class_of_their_mean_value() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("multi.lua");
    std::fs::write(
        &wl,
        r#"
local unit = 0
return {
  name = "multi",
  run = function(ctx)
    local step = unit % 4
    unit = unit + 1
    if step == 0 then
      -- 100 and 300 bytes: 200 per key
      kv.mput({ { key = "a", val = string.rep("x", 100) }, { key = "b", val = string.rep("y", 300) } })
    elseif step == 1 then
      kv.mput({ { key = "c", val = string.rep("x", 5000) }, { key = "d", val = string.rep("y", 5000) } })
    elseif step == 2 then
      -- finds a and b (200 per key found), misses the third
      kv.mget({ "a", "b", "nothing here" })
    else
      kv.append("e", string.rep("z", 1000))
      kv.get("nothing here")
    end
  end,
}
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    ok(&kvmark(&[
        "--threads",
        "1",
        "--ops",
        "400",
        "--size-classes",
        "256,4096",
        "--max-value-bytes",
        "none",
        "--report-dir",
        out.to_str().unwrap(),
        wl.to_str().unwrap(),
    ]));
    let doc = read_json(&report_dir(&out).join("results.json"));
    let classes = by_label(&doc["points"][0]["ops_by_size"]);
    let counts: BTreeMap<&str, (u64, u64, u64)> = classes
        .iter()
        .map(|(l, c)| (l.as_str(), (n(c, "count"), n(c, "prim_ops"), n(c, "hits"))))
        .collect();
    let want: BTreeMap<&str, (u64, u64, u64)> = [
        ("mput<=256", (100, 200, 0)),
        ("mput>4096", (100, 200, 0)),
        ("mget<=256", (100, 300, 200)),
        ("append<=4096", (100, 100, 0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(counts, want, "reads that found nothing are in no class");
    let kinds = by_label(&doc["points"][0]["ops"]);
    assert_eq!(n(&kinds["get"], "misses"), 100);
    // An mput's bytes are its keys' and values'.
    assert_eq!(n(&classes["mput<=256"], "bytes"), 100 * (2 + 400));
}

#[test]
fn segments_with_size_classes_merge_exactly() {
    let (_spec_dir, spec) = sizes_spec(1);
    let d = tempfile::tempdir().unwrap();
    let parent = d.path().join("runs");
    for i in 0..2 {
        ok(&kvmark(&[
            "--threads",
            "2",
            "--size-classes",
            "256,4096",
            "--segment",
            &format!("{i}/2"),
            "--report-dir",
            parent.to_str().unwrap(),
            spec.to_str().unwrap(),
        ]));
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&parent).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    let merged = d.path().join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_string(), merged.display().to_string()]);
    ok(&kvmark(&args.iter().map(String::as_str).collect::<Vec<_>>()));
    let doc = read_json(&merged.join("results.json"));
    assert_eq!(doc["run"]["size_classes"], serde_json::json!([256, 4096]));
    let segs: Vec<Value> = dirs.iter().map(|p| read_json(&p.join("results.json"))).collect();
    for (j, phase) in doc["points"][0]["phases"].as_array().unwrap().iter().enumerate() {
        for (label, c) in by_label(&phase["ops_by_size"]) {
            let theirs: Vec<Value> = segs
                .iter()
                .filter_map(|s| by_label(&s["points"][0]["phases"][j]["ops_by_size"]).remove(&label))
                .collect();
            let calls: u64 = theirs.iter().map(|t| n(t, "count")).sum();
            assert_eq!(n(&c, "count"), calls, "phase {j} {label}");
            // The merged histogram is the segments' histograms added.
            let mut sum = Histogram::<u64>::new(3).unwrap();
            for t in &theirs {
                sum.add(decode(t["hdr"].as_str().unwrap())).unwrap();
            }
            let mine = decode(c["hdr"].as_str().unwrap());
            assert_eq!(buckets(&mine), buckets(&sum), "phase {j} {label}'s merged histogram");
            assert_eq!(n(&c["percentiles_ns"], "p99"), sum.value_at_quantile(0.99));
        }
    }
    // Segments split by other classes are not one run.
    let other = d.path().join("other");
    ok(&kvmark(&[
        "--threads",
        "2",
        "--size-classes",
        "512",
        "--segment",
        "1/2",
        "--report-dir",
        other.to_str().unwrap(),
        spec.to_str().unwrap(),
    ]));
    let o = kvmark(&[
        "merge",
        dirs[0].to_str().unwrap(),
        report_dir(&other).to_str().unwrap(),
        "--out",
        d.path().join("mixed").to_str().unwrap(),
    ]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("run.size_classes"), "{}", stderr(&o));
}

#[test]
fn open_loop_and_verify_runs_split_response_times_too() {
    // Values of at least 32 bytes carry --verify's 20-byte tag.
    let (_spec_dir, spec) = sizes_spec(32);
    let out = tempfile::tempdir().unwrap();
    let said = ok(&kvmark(&[
        "--threads",
        "1",
        "--size-classes",
        "4096",
        "--verify",
        "--rate",
        "200000",
        // Interval hand-overs to the sampler must keep the classes whole.
        "--timeline",
        "0.01",
        "--report-dir",
        out.path().to_str().unwrap(),
        spec.to_str().unwrap(),
    ]));
    assert!(said.contains("response time"), "{said}");
    let doc = read_json(&report_dir(out.path()).join("results.json"));
    let point = &doc["points"][0];
    assert_eq!(
        point["verify"]["reads_checked"].as_u64(),
        Some(3000),
        "{}",
        point["verify"]
    );
    let run = &point["phases"][1];
    let kinds = by_label(&run["ops"]);
    let classes = by_label(&run["ops_by_size"]);
    for kind in ["put", "get"] {
        let mine: Vec<&Value> = classes.values().filter(|c| c["kind"] == kind).collect();
        assert_eq!(mine.len(), 2, "{kind}: both classes have calls");
        let calls: u64 = mine.iter().map(|c| n(c, "count")).sum();
        assert_eq!(calls, n(&kinds[kind], "count"), "{kind}");
        let responses: u64 = mine.iter().map(|c| n(&c["response"], "count")).sum();
        assert_eq!(
            responses,
            n(&kinds[kind]["response"], "count"),
            "{kind}'s response times"
        );
        // A response time is at least the service time of the same call.
        for c in mine {
            assert!(n(&c["response"], "max_ns") >= n(c, "min_ns"), "{c}");
            assert!(c["response_hdr"].is_string());
        }
    }
}

#[test]
fn unusable_bounds_are_refused_naming_the_flag() {
    let (_spec_dir, spec) = sizes_spec(1);
    for (bounds, why) in [
        ("4096,256", "bounds must rise strictly: 4096 is followed by 256"),
        ("12x", "unknown size suffix"),
        ("", "is not a size"),
    ] {
        let o = kvmark(&["--size-classes", bounds, spec.to_str().unwrap()]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.contains("--size-classes") && err.contains(why), "{bounds}: {err}");
    }
}
