//! Growing values (YCSB-IVS): epochs of extends and run phases, the four run modes,
//! the value cap, and the reports, through the real binary.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::parse::read_tsv;
use common::{assert_exit, bundled, kvmark, root, stderr, stdout, workload};
use serde_json::Value;

/// Runs kvmark with a json report and returns the document.
fn run_json(dir: &Path, args: &[&str]) -> Value {
    let json = dir.join("r.json");
    let report = format!("console,json:{}", json.display());
    let mut all = vec!["--probe", "none", "--report", &report];
    all.extend_from_slice(args);
    let o = kvmark(&all);
    assert_exit(&o, 0);
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

/// The points of a json document by (epoch, mode).
fn epochs(doc: &Value) -> BTreeMap<(u64, String), Value> {
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let e = &p["epoch"];
            (
                (e["number"].as_u64().unwrap(), e["mode"].as_str().unwrap().to_string()),
                p.clone(),
            )
        })
        .collect()
}

fn op_count(p: &Value, op: &str) -> u64 {
    p["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == op)
        .map_or(0, |o| o["count"].as_u64().unwrap())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn epochs_grow_values_and_report_each_phase_as_a_point() {
    let dir = tempfile::tempdir().unwrap();
    let ivs = bundled("ivs.lua");
    let doc = run_json(
        dir.path(),
        &[
            "--epochs",
            "3",
            "--items",
            "500",
            "--ops",
            "2000",
            "--extend-ops",
            "4000",
            &ivs,
        ],
    );
    let points = epochs(&doc);
    let keys: Vec<(u64, &str)> = points.keys().map(|(e, m)| (*e, m.as_str())).collect();
    assert_eq!(
        keys,
        vec![
            (1, "extend"),
            (1, "main"),
            (2, "extend"),
            (2, "main"),
            (3, "extend"),
            (3, "main")
        ]
    );
    let mut last_mean = 1000.0;
    for e in 1..=3 {
        let extend = &points[&(e, "extend".to_string())];
        let main = &points[&(e, "main".to_string())];
        assert_eq!(op_count(extend, "append"), 4000, "epoch {e}: every planned extend ran");
        assert_eq!(
            op_count(main, "get") + op_count(main, "put"),
            2000,
            "epoch {e}: the run phase"
        );
        assert_eq!(op_count(main, "append"), 0, "the run phase does not extend");
        let sizes = &main["epoch"]["value_sizes"];
        assert_eq!(sizes["count"], 500);
        // 4000 extends of 100 bytes (and 16-byte keys) over 500 records: +800 bytes a
        // record per epoch; the run phase's updates draw sizes from the histogram, so
        // they move the mean only by chance.
        let appended = extend["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"] == "append")
            .unwrap();
        assert_eq!(
            appended["bytes"],
            4000 * (16 + 100),
            "epoch {e}: bytes the extends wrote"
        );
        let mean = f(&sizes["mean"]);
        assert!(
            mean > last_mean + 400.0,
            "epoch {e}: mean value size {mean} after {last_mean}"
        );
        last_mean = mean;
        assert_eq!(main["epoch"]["records"], 500);
        assert!(
            main["seed"]["keys"].as_u64().unwrap() == 500,
            "the main point carries the load"
        );
        let bins: u64 = sizes["bins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[1].as_u64().unwrap())
            .sum();
        assert_eq!(bins, 500, "100-byte bins cover every value");
    }
}

#[test]
fn zipfian_extends_concentrate_growth_and_uniform_ones_spread_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = root().join("specs/ivs-c.json");
    let spec = spec.to_str().unwrap();
    let run = |dist: &str| {
        let doc = run_json(
            dir.path(),
            &[
                "--scale",
                "0.1",
                "--epochs",
                "3",
                "--ivs-mode",
                "main",
                "--extend-dist",
                dist,
                spec,
            ],
        );
        let p = &epochs(&doc)[&(3, "main".to_string())];
        let s = &p["epoch"]["value_sizes"];
        (f(&s["max"]), f(&s["mean"]))
    };
    let (zmax, zmean) = run("zipfian");
    assert!(
        zmax > 30.0 * zmean,
        "zipfian: the hottest value {zmax} is far above the mean {zmean}"
    );
    let (umax, umean) = run("uniform");
    assert!(umax < 3.0 * umean, "uniform: max {umax} stays near the mean {umean}");
    assert!(
        (zmean - umean).abs() < 1.0,
        "both add the same bytes: {zmean} vs {umean}"
    );
}

#[test]
fn the_four_modes_hold_what_they_promise() {
    let dir = tempfile::tempdir().unwrap();
    let spec = root().join("specs/ivs-a.json");
    let doc = run_json(
        dir.path(),
        &[
            "--scale",
            "0.1",
            "--epochs",
            "2",
            "--ivs-mode",
            "all",
            "--ivs-verify",
            // Two threads: the dump is written and restored in two key ranges.
            "--threads",
            "2",
            spec.to_str().unwrap(),
        ],
    );
    let points = epochs(&doc);
    assert_eq!(points.len(), 2 * 5);
    for e in 1..=2u64 {
        let get = |m: &str| &points[&(e, m.to_string())];
        let (main, clean, average, spread) = (get("main"), get("clean"), get("average"), get("spread"));
        for p in [main, clean, average, spread] {
            assert_eq!(p["status"], "ok", "{p}");
            assert_eq!(
                op_count(p, "get") + op_count(p, "put"),
                10_000,
                "every mode runs the same phase"
            );
        }
        // clean: the very same logical data, restored from a dump, and timed apart.
        let hash = main["epoch"]["data_hash"].as_str().expect("the main store was hashed");
        assert_eq!(clean["epoch"]["data_hash"].as_str(), Some(hash), "epoch {e}");
        assert_eq!(clean["epoch"]["records"], main["epoch"]["records"]);
        assert_eq!(
            clean["seed"]["keys"], main["epoch"]["records"],
            "the restore wrote every record"
        );
        assert!(f(&clean["epoch"]["dump"]["bytes"]) > f(&main["epoch"]["volume_bytes"]));
        // average: the same records, all of the average length, the same volume.
        let records = main["epoch"]["records"].as_u64().unwrap();
        assert_eq!(average["epoch"]["records"], records);
        let avg = &average["epoch"]["value_sizes"];
        assert_eq!(avg["min"], avg["max"], "every value of one length");
        let (vm, va) = (f(&main["epoch"]["volume_bytes"]), f(&average["epoch"]["volume_bytes"]));
        assert!((vm - va).abs() <= records as f64, "average volume {va} vs main {vm}");
        // spread: the same volume in records of the initial size.
        let target = spread["epoch"]["target_records"].as_u64().unwrap();
        let written = spread["epoch"]["records"].as_u64().unwrap();
        assert!(target > records, "more records than main");
        assert!(written.abs_diff(target) <= target / 100 + 1, "{written} vs {target}");
        let vs = f(&spread["epoch"]["volume_bytes"]);
        assert!((vs - vm).abs() / vm < 0.02, "spread volume {vs} vs main {vm}");
        assert_eq!(
            spread["epoch"]["value_sizes"]["max"], 1000,
            "records of the initial length"
        );
    }
}

#[test]
fn the_value_cap_skips_and_counts_extends() {
    let dir = tempfile::tempdir().unwrap();
    let ivs = bundled("ivs.lua");
    let doc = run_json(
        dir.path(),
        &[
            "--epochs",
            "2",
            "--items",
            "200",
            "--ops",
            "200",
            "--extend-ops",
            "5000",
            "--max-value-bytes",
            "20000",
            &ivs,
        ],
    );
    let points = epochs(&doc);
    let mut skipped = 0;
    for e in 1..=2u64 {
        let extend = &points[&(e, "extend".to_string())];
        let n = extend["epoch"]["skipped_extends"].as_u64().unwrap();
        assert_eq!(
            op_count(extend, "append") + n,
            5000,
            "issued plus skipped is every extend"
        );
        assert!(
            f(&extend["epoch"]["value_sizes"]["max"]) <= 20000.0,
            "no value passes the cap"
        );
        skipped += n;
    }
    assert!(skipped > 0, "the hottest keys hit the cap");
}

#[test]
fn repeats_give_a_mean_and_a_95_percent_interval() {
    let dir = tempfile::tempdir().unwrap();
    let ivs = bundled("ivs.lua");
    let doc = run_json(
        dir.path(),
        &[
            "--epochs",
            "1",
            "--repeat",
            "3",
            "--items",
            "300",
            "--ops",
            "3000",
            "--extend-ops",
            "1000",
            &ivs,
        ],
    );
    let main = &epochs(&doc)[&(1, "main".to_string())];
    let iv = &main["epoch"]["intervals"];
    assert_eq!(iv["wu_per_s"]["n"], 3);
    assert!(
        f(&iv["wu_per_s"]["ci95"]) > 0.0,
        "three timed repeats never agree exactly"
    );
    let repeats: Vec<f64> = main["repeats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| f(&r["wu_per_s"]))
        .collect();
    let mean = repeats.iter().sum::<f64>() / 3.0;
    assert!(
        (f(&iv["wu_per_s"]["mean"]) - mean).abs() < 1e-6 * mean,
        "the mean of the repeats"
    );
    assert_eq!(iv["ops"]["get"]["p99_ns"]["n"], 3);
}

#[test]
fn lua_sees_the_cap_verdict_and_the_epoch_value_sizes() {
    // The script fails (exit 1) when append or value_size say the wrong thing.
    let o = kvmark(&[
        "--probe",
        "none",
        "--max-value-bytes",
        "100",
        "--ops",
        "1",
        &workload("append_cap.lua"),
    ]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("skipped: append 1 "), "{}", stdout(&o));
}

#[test]
fn tsv_and_histogram_logs_carry_the_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("p.tsv");
    let hdr = dir.path().join("h");
    let report = format!("tsv:{},hdr:{}", tsv.display(), hdr.display());
    let ivs = bundled("ivs.lua");
    let o = kvmark(&[
        "--probe",
        "none",
        "--report",
        &report,
        "--epochs",
        "2",
        "--items",
        "100",
        "--ops",
        "500",
        "--extend-ops",
        "500",
        // Main is measured even when not asked for: its run phases are its history.
        "--ivs-mode",
        "clean",
        &ivs,
    ]);
    assert_exit(&o, 0);
    let t = read_tsv(&tsv);
    let modes: Vec<(String, String)> = t
        .rows
        .iter()
        .map(|r| (r["epoch"].clone(), r["ivs_mode"].clone()))
        .collect();
    for want in [("2", "clean"), ("1", "extend"), ("2", "main")] {
        assert!(modes.contains(&(want.0.into(), want.1.into())), "{want:?} in {modes:?}");
    }
    let extend = t
        .rows
        .iter()
        .find(|r| r["ivs_mode"] == "extend" && r["op"] == "append")
        .unwrap();
    assert_eq!(extend["records"], "100");
    assert_eq!(extend["skipped"], "0");
    let names: Vec<String> = std::fs::read_dir(&hdr)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.ends_with("-e2-clean.hlog")), "{names:?}");
}

#[test]
fn epoch_settings_replay_from_a_saved_config() {
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("run.cnf");
    let ivs = bundled("ivs.lua");
    let first = kvmark(&[
        "--probe",
        "none",
        "--save-config",
        cnf.to_str().unwrap(),
        "--epochs",
        "2",
        "--items",
        "100",
        "--ops",
        "300",
        "--extend-ops",
        "700",
        "--extend-bytes",
        "50",
        "--extend-dist",
        "uniform",
        "--ivs-mode",
        "main,average",
        "--max-value-bytes",
        "64K",
        &ivs,
    ]);
    assert_exit(&first, 0);
    let text = std::fs::read_to_string(&cnf).unwrap();
    for line in [
        "epochs = 2",
        "extend_ops = 700",
        "extend_bytes = 50",
        "extend_dist = uniform",
        "ivs_mode = main,average",
        "max_value_bytes = 65536",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    let again = kvmark(&["--probe", "none", "--config", cnf.to_str().unwrap()]);
    assert_exit(&again, 0);
    // The extends and every epoch's records, volume and value sizes are the same.
    let rows = |out: &str| -> Vec<String> {
        out.lines()
            .filter_map(|l| match l.split_whitespace().next() {
                Some("append") => Some(l.split_whitespace().take(2).collect::<Vec<_>>().join(" ")),
                Some("epoch") => Some(l.to_string()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        rows(&stdout(&first)),
        rows(&stdout(&again)),
        "the same epochs, extends and sizes"
    );
}

#[test]
fn bad_epoch_settings_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ivs = bundled("ivs.lua");
    let one_group = dir.path().join("one.json");
    std::fs::write(
        &one_group,
        r#"{"epochs": {"count": 2}, "sections": [{"groups": [{"inserts": {"op_count": 10, "key_len": 8, "val_len": 8}}]}]}"#,
    )
    .unwrap();
    let bad_mode = dir.path().join("mode.json");
    std::fs::write(
        &bad_mode,
        r#"{"epochs": {"count": 2, "modes": ["mian"]}, "sections": [{"groups": [{"inserts": {"op_count": 10, "key_len": 8, "val_len": 8}}, {"point_queries": {"op_count": 1}}]}]}"#,
    )
    .unwrap();
    let no_extends = dir.path().join("none.json");
    std::fs::write(
        &no_extends,
        r#"{"epochs": {"count": 2, "extends": {"op_count": 0}}, "sections": [{"groups": [{"inserts": {"op_count": 10, "key_len": 8, "val_len": 8}}, {"point_queries": {"op_count": 1}}]}]}"#,
    )
    .unwrap();
    let no_load = workload("count.lua");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--epochs", "0", &ivs], "--epochs 0"),
        (vec!["--extend-ops", "5", &ivs], "give --epochs N"),
        (
            vec!["--epochs", "2", "--rate", "100", &ivs],
            "--rate does not apply to epochs",
        ),
        (
            vec!["--epochs", "2", "--warmup", "1", &ivs],
            "--warmup does not apply to epochs",
        ),
        (
            vec!["--epochs", "2", "--ivs-mode", "fresh", &ivs],
            "unknown mode 'fresh'",
        ),
        (
            vec!["--epochs", "2", "--extend-dist", "normal", &ivs],
            "unknown extend distribution",
        ),
        (vec!["--epochs", "2", "--scale", "0", &ivs], "--scale 0"),
        (vec!["--max-value-bytes", "0", &ivs], "--max-value-bytes 0"),
        (vec!["--max-value-bytes", "12MB", &ivs], "--max-value-bytes 12MB"),
        (vec!["--epochs", "2", &no_load], "epochs need a load()"),
        (
            vec![one_group.to_str().unwrap()],
            "epochs: a spec with epochs needs a group that loads",
        ),
        (vec![bad_mode.to_str().unwrap()], "epochs.modes: unknown mode 'mian'"),
        (
            vec![no_extends.to_str().unwrap()],
            "epochs.extends.op_count: give at least 1 extend",
        ),
    ];
    for (args, msg) in cases {
        let o = kvmark(&args);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(msg), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_spec_extends_operation_appends_len_bytes_to_live_keys() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("grow.json");
    std::fs::write(
        &spec,
        r#"{"sections": [{"key_len": 10, "val_len": 50, "groups": [
            {"name": "load", "inserts": {"op_count": 100}},
            {"name": "grow", "extends": {"op_count": 300, "selection": {"zipf": {"s": 0.99}}}},
            {"name": "grow-more", "extends": {"op_count": 20, "len": 7}}
        ]}]}"#,
    )
    .unwrap();
    let log = dir.path().join("grow.ops");
    let o = kvmark(&["gen", spec.to_str().unwrap(), "-o", log.to_str().unwrap(), "--plain"]);
    assert_exit(&o, 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let merges: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("M "))
        .map(|l| l.split(' ').collect())
        .collect();
    assert_eq!(merges.len(), 320, "every extend is a merge line");
    let lens: Vec<usize> = merges.iter().map(|m| m[2].len()).collect();
    assert!(lens[..300].iter().all(|&n| n == 100), "the default length is 100 bytes");
    assert!(lens[300..].iter().all(|&n| n == 7));
    // Run directly: each extend is one append, and values grow by what was appended.
    let o = kvmark(&["--probe", "none", spec.to_str().unwrap()]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("phase grow:"), "{out}");
    assert_eq!(
        common::op_count(&out[out.find("phase grow:").unwrap()..], "append"),
        Some(300)
    );
}

#[test]
fn a_real_epoch_run_plots_per_epoch_charts_per_mode() {
    let dir = tempfile::tempdir().unwrap();
    let spec = root().join("specs/ivs-a.json");
    let o = kvmark(&[
        "--probe",
        "none",
        "--report-dir",
        dir.path().to_str().unwrap(),
        "--auto-plot",
        "--repeat",
        "2",
        "--scale",
        "0.02",
        "--epochs",
        "3",
        "--ivs-mode",
        "all",
        spec.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let run = std::fs::read_dir(dir.path()).unwrap().next().unwrap().unwrap().path();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("figures/figures.json")).unwrap()).unwrap();
    let fig = manifest["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["family"] == "epochs")
        .expect("an epochs figure");
    let panels: BTreeMap<String, Vec<String>> = fig["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let series = p["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string());
            (p["metric"].as_str().unwrap().to_string(), series.collect())
        })
        .collect();
    let run_modes: Vec<String> = ["main", "clean", "average", "spread"]
        .iter()
        .map(|m| format!("skiplist {m}"))
        .collect();
    for metric in ["wu_per_s", "get.mean_ns", "get.p99_ns", "put.p99_ns", "volume_bytes"] {
        assert_eq!(panels[metric], run_modes, "{metric}: a line per run mode");
    }
    assert_eq!(panels["extend.wu_per_s"], vec!["skiplist extend".to_string()]);
    assert_eq!(panels["append.p99_ns"], vec!["skiplist extend".to_string()]);
    let png = std::fs::read(run.join("figures").join(fig["file"].as_str().unwrap())).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000);
    assert!(run.join("report.html").exists());
}

#[test]
fn a_load_that_loses_writes_fails_the_epoch_points() {
    // A 1 MiB LMDB map holds half of the 2000 records of 1000 bytes.
    let data = tempfile::tempdir().unwrap();
    let o = kvmark(&[
        "--backend",
        "lmdb",
        "--engine-opt",
        "lmdb.map_size=1M",
        "--data-dir",
        data.path().to_str().unwrap(),
        "--probe",
        "none",
        "--epochs",
        "2",
        "--extend-ops",
        "100",
        "--items",
        "2000",
        "--ops",
        "100",
        &bundled("ivs.lua"),
    ]);
    assert_exit(&o, 1);
    let out = stdout(&o);
    assert!(
        out.contains("engine errors while loading the store") && out.contains("MDB_MAP_FULL"),
        "{out}"
    );
    // No epoch ran on the short store: all four points (two epochs, extend and main)
    // failed with that reason.
    assert_eq!(
        out.matches(": engine errors while loading the store").count(),
        4,
        "{out}"
    );
}
