//! keybench compatibility, through the real binary: what keybench's own files and
//! flags mean runs the same here.

mod common;

use std::collections::BTreeMap;

use common::*;

/// A tsv file's rows as column -> value maps.
fn tsv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split('\t'))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn a_sweep_without_seed_per_value_seeds_each_value_under_seed_once() {
    // keybench reads a missing seed_per_value as true: each value gets its own store.
    let o = kvmark(&["--seed-once", "--ops", "50", &workload("sweep_unset.lua")]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("load size=8") && err.contains("load size=64"),
        "one load per sweep value: {err}"
    );
}

#[test]
fn keybench_replay_configs_run_with_their_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("replay.cnf");
    // The layout keybench's --save-config writes, its unquoted first line included.
    std::fs::write(
        &cnf,
        format!(
            "keybench 0.1.0 replay file - reproduce with:  keybench --config {}\n\n[bench]\n\
             backend = skiplist\nthreads = 1\nbatch   = 1\nops  = 500\nusers  = 100\nitems  = 1000\n\
             seed   = 1\nrepeat = 1\nreport = console\nworkload = {}\n",
            cnf.display(),
            bundled("mixed.lua")
        ),
    )
    .unwrap();
    let o = kvmark(&["--config", cnf.to_str().unwrap()]);
    assert_exit(&o, 0);
    assert!(op_count(&stdout(&o), "get").is_some(), "{}", stdout(&o));
    // Any other line without `=` is still an error naming its line.
    std::fs::write(&cnf, "[bench]\nkeybench 0.1.0 replay file\n").unwrap();
    let o = kvmark(&["--config", cnf.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains(":2"), "{}", stderr(&o));
}

#[test]
fn pin_puts_each_worker_thread_on_its_own_cpu() {
    let child = spawn_kvmark(&["--pin", "--threads", "2", "--secs", "3", &bundled("mixed.lua")]);
    let pid = child.id();
    let task_dir = format!("/proc/{pid}/task");
    // The worker threads are named kvmark-w0, kvmark-w1; read the CPUs each may use.
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    wait_for("both pinned workers", || {
        seen.clear();
        for e in std::fs::read_dir(&task_dir).into_iter().flatten().flatten() {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            let comm = comm.trim().to_string();
            if comm.starts_with("kvmark-w") {
                let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
                if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
                    seen.insert(comm, l.split(':').nth(1).unwrap().trim().to_string());
                }
            }
        }
        // A thread has its name a moment before it pins itself, a long moment when a
        // loaded machine deschedules it in between: wait for both to have pinned.
        seen.len() == 2 && seen.values().all(|l| l.parse::<usize>().is_ok())
    });
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (name, list) in &seen {
        assert!(list.parse::<usize>().is_ok(), "{name} may run on {list}: not one CPU");
    }
    if cpus >= 2 {
        assert_ne!(seen["kvmark-w0"], seen["kvmark-w1"], "{seen:?}");
    }
}

#[test]
fn a_missing_data_dir_matters_only_to_disk_engines() {
    let missing = "/nonexistent/kvmark-data";
    let o = kvmark(&["--data-dir", missing, "--ops", "200", &bundled("mixed.lua")]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains(missing), "{}", stderr(&o));
    let o = kvmark(&[
        "--data-dir",
        missing,
        "--backend",
        "rocksdb",
        "--ops",
        "200",
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("not an existing directory"), "{}", stderr(&o));
}

#[test]
fn points_tsv_keeps_keybenchs_meanings() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("p.tsv");
    let report = format!("tsv:{}", tsv.display());
    let o = kvmark(&["--ops", "2000", "--report", &report, &bundled("mixed.lua")]);
    assert_exit(&o, 0);
    let rows = tsv_rows(&std::fs::read_to_string(&tsv).unwrap());
    let get = rows.iter().find(|r| r["op"] == "get").unwrap();
    let (hits, misses): (f64, f64) = (get["hits"].parse().unwrap(), get["misses"].parse().unwrap());
    assert!(hits > 0.0, "{get:?}");
    let pct = 100.0 * hits / (hits + misses);
    for r in &rows {
        // Percent, on every row of the point, as keybench writes it.
        let hit: f64 = r["hit_rate"].parse().unwrap();
        assert!((hit - pct).abs() < 0.001, "{} row: {hit} vs {pct}", r["op"]);
        assert_eq!(r["err_rate"], "0.000");
        // No sweep: an empty parameter and the value 1.
        assert_eq!((r["sweep_param"].as_str(), r["sweep_value"].as_str()), ("", "1"));
    }
}
