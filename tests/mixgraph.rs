//! db_bench mixgraph's workload model as spec features, by the real binary: the
//! bundled presets generate the operation mix, the value sizes and the key-range
//! hotness the model prescribes, and a sine-wave rate paces a run.

mod common;

use std::collections::HashMap;

use common::*;
use serde_json::Value;

/// The preset at a test's size: `keys` sorted keys, then `queries` queries.
fn scaled_preset(name: &str, keys: u64, queries: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let text = std::fs::read_to_string(root().join("specs").join(name)).unwrap();
    let mut spec: Value = serde_json::from_str(&text).unwrap();
    let groups = &mut spec["sections"][0]["groups"];
    groups[0]["inserts"]["op_count"] = keys.into();
    let mix = &mut groups[1];
    let counts: Vec<(String, u64)> = ["point_queries", "updates", "range_queries"]
        .iter()
        .map(|op| (op.to_string(), mix[op]["op_count"].as_u64().unwrap()))
        .collect();
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    for (op, n) in counts {
        mix[&op]["op_count"] = (n * queries / total).into();
    }
    spec_file(name, &spec.to_string())
}

/// The share of each of the model's 30 key ranges, as db_bench computes it: each
/// range's floor(amplify·f(x)) over their sum, before the shuffle (sorted, hottest
/// first, since the test cannot know the shuffle without reimplementing it).
fn published_shares_sorted() -> Vec<f64> {
    let f = |x: f64| 14.18 * (-2.917 * x).exp() + 0.0164 * (-0.08082 * x).exp();
    let amplify = (1.0 / f(30.0)).floor() + 1.0;
    let units: Vec<f64> = (1..=30).map(|x| (amplify * f(f64::from(x))).floor()).collect();
    let total: f64 = units.iter().sum();
    let mut shares: Vec<f64> = units.iter().map(|u| u / total).collect();
    shares.sort_by(|a, b| b.total_cmp(a));
    shares
}

#[test]
fn the_prefix_dist_preset_generates_the_published_model() {
    let (keys, queries) = (60_000u64, 100_000u64);
    let (dir, spec) = scaled_preset("mixgraph-pr5953.json", keys, queries);
    let log = dir.path().join("mix.ops");
    let o = kvmark(&["gen", spec.to_str().unwrap(), "-o", log.to_str().unwrap()]);
    assert_exit(&o, 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let (mut rank, mut phase) = (HashMap::new(), "");
    let (mut kinds, mut sizes, mut per_range) = (HashMap::new(), Vec::new(), vec![0u64; 30]);
    let size = keys / 30;
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("# phase ") {
            phase = if p == "load" { "load" } else { "run" };
            continue;
        }
        let f: Vec<&str> = line.split(' ').collect();
        if phase == "load" {
            assert_eq!(f[0], "I", "{line}");
            let n = rank.len() as u64;
            rank.insert(f[1].to_string(), n);
            continue;
        }
        *kinds.entry(f[0]).or_insert(0u64) += 1;
        let r = rank[f[1]];
        per_range[(r / size) as usize] += 1;
        if f[0] == "U" {
            let mut val = Vec::new();
            kvmark::workload::oplog::unescape(f[2].as_bytes(), &mut val).unwrap();
            sizes.push(val.len());
        }
    }
    assert_eq!(rank.len() as u64, keys);
    // Loaded in key order (`sorted` with K = L = 0), so ranks are key order.
    let mut loaded: Vec<(&String, &u64)> = rank.iter().collect();
    loaded.sort_by_key(|(_, r)| **r);
    assert!(
        loaded.windows(2).all(|w| w[0].0 < w[1].0),
        "the load is not in key order"
    );
    // The mix: 85% reads, 14% puts, 1% seeks, exactly.
    assert_eq!(
        (kinds["P"], kinds["U"], kinds["S"]),
        (85_000, 14_000, 1_000),
        "{kinds:?}"
    );
    // Value sizes: GPD(k 0.2615, sigma 25.45) raised to 10 below 10, so a draw is 10
    // when u^-k < 1 + 10k/sigma, with probability 1 - (1 + 10k/sigma)^(-1/k).
    let at_ten = sizes.iter().filter(|&&s| s == 10).count() as f64 / sizes.len() as f64;
    let want = 1.0 - (1.0 + 10.0 * 0.2615 / 25.45f64).powf(-1.0 / 0.2615);
    assert!(
        (at_ten - want).abs() < 0.02,
        "{at_ten} of puts are 10 bytes, want {want}"
    );
    assert!(sizes.iter().all(|&s| s <= 1024), "a value above max");
    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
    assert!((25.0..50.0).contains(&mean), "mean value size {mean}");
    // Key ranges: the observed shares, hottest first, match the model's.
    let mut seen: Vec<f64> = per_range.iter().map(|&c| c as f64 / queries as f64).collect();
    seen.sort_by(|a, b| b.total_cmp(a));
    let want = published_shares_sorted();
    let tv: f64 = seen.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum::<f64>() / 2.0;
    assert!(tv < 0.02, "key-range shares {seen:?} vs {want:?}: distance {tv}");
    // Shuffled as db_bench shuffles them: with these parameters db_bench 7.8.3 puts
    // 80.8% of its accesses in range 29 and 5.7% in range 23 (its query trace, with
    // bench/mixgraph.sh), the two hottest.
    let mut by_count: Vec<usize> = (0..30).collect();
    by_count.sort_by_key(|&i| std::cmp::Reverse(per_range[i]));
    assert_eq!(&by_count[..2], &[29, 23], "{per_range:?}");
}

#[test]
fn both_presets_run_scaled_on_skiplist() {
    for name in ["mixgraph-pr5953.json", "mixgraph-example.json"] {
        let (_dir, spec) = scaled_preset(name, 30_000, 3_000);
        let o = kvmark(&["--backend", "skiplist", spec.to_str().unwrap()]);
        assert_exit(&o, 0);
        let out = stdout(&o);
        assert!(out.contains("phase mixgraph:"), "{name}: {out}");
        assert!(
            out.contains("response time (from the unit's intended start"),
            "{name}: {out}"
        );
        assert!(!stderr(&o).contains("warning"), "{name}: {}", stderr(&o));
    }
}

#[test]
fn a_sine_rate_paces_a_run() {
    let (_dir, spec) = spec_file(
        "wave.json",
        r#"{ "name": "wave", "sections": [ { "key_len": 16, "val_len": 10,
              "groups": [
                { "name": "load", "inserts": { "op_count": 100 } },
                { "name": "waves",
                  "rate": { "sine": { "a": 500, "b": 3.14159, "c": 0, "d": 2000, "interval": 0.25 } },
                  "point_queries": { "op_count": 1000 } } ] } ] }"#,
    );
    let report = tempfile::tempdir().unwrap();
    let json = report.path().join("r.json");
    let o = kvmark(&[
        "--report",
        &format!("console,json:{}", json.display()),
        spec.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("response time (from the unit's intended start"), "{out}");
    assert_eq!(op_count(&out, "get"), Some(1000), "{out}");
    // Pacing never runs ahead of schedule, and the wave never exceeds 2500 units/s:
    // 1100 units (the load's 100 unpaced) cannot average much above that.
    let wu = throughputs(&out)[0];
    assert!(wu <= 2600.0, "{wu} wu/s: the phase was not paced\n{out}");
    // The 1000th unit is due when the wave says: 500 units at 2000/s in the first
    // quarter second, then 2000 + 500·sin(pi/4) = 2353.6/s, so at 0.25 + 499/2353.6 =
    // 0.462 s (at a constant 2000/s it would be 0.4995 s). Pacing never starts a unit
    // early, so the phase cannot take less.
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let waves = v["points"][0]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "waves")
        .unwrap();
    let wall = waves["wall_s"].as_f64().unwrap();
    assert!(wall >= 0.46, "the paced phase took {wall} s, less than its schedule");
    assert_eq!(waves["units"], 1000);
}
