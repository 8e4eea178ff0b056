//! The persistent engines through the real binary: a small workload on each, the
//! refusal without `--data-dir`, store directories kept or removed, engine options
//! checked before anything runs, `kvmark engines` listing every engine, and WiredTiger's
//! write conflicts counted as retries.

mod common;

use std::path::Path;

use common::*;

/// Names of the compiled-in engines that keep their data on disk.
fn persistent() -> Vec<&'static str> {
    kvmark::engine::registry()
        .into_iter()
        .filter(|e| e.storage.on_disk())
        .map(|e| e.name)
        .collect()
}

/// The store directories kvmark left in `dir`.
fn stores_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("kvmark-"))
        .collect()
}

/// Runs kvmark on `engine` with its stores in `data`.
fn on_disk(engine: &str, data: &Path, args: &[&str]) -> std::process::Output {
    let base = ["--backend", engine, "--data-dir", data.to_str().unwrap()];
    kvmark(&[&base[..], args].concat())
}

#[test]
fn every_persistent_engine_runs_a_small_mixed_workload() {
    for engine in persistent() {
        let data = tempfile::tempdir().unwrap();
        let o = on_disk(
            engine,
            data.path(),
            &[
                "--threads",
                "1,2",
                "--items",
                "300",
                "--ops",
                "600",
                &bundled("mixed.lua"),
            ],
        );
        assert_exit(&o, 0);
        let out = stdout(&o);
        assert!(out.contains(&format!("engine={engine} ")), "{engine}: {out}");
        let rows = summary_rows(&out);
        assert_eq!(rows.len(), 2, "{engine}: two points\n{out}");
        assert!(
            rows.iter().all(|r| r.last().map(String::as_str) == Some("ok")),
            "{engine}: {out}"
        );
        for op in ["put", "get", "del", "range"] {
            assert!(op_count(&out, op).unwrap_or(0) > 0, "{engine}: no {op} row\n{out}");
        }
        assert!(
            stores_in(data.path()).is_empty(),
            "{engine}: store directories left behind"
        );
    }
}

#[test]
fn every_persistent_engine_keeps_every_verb_through_lua() {
    for engine in persistent() {
        let data = tempfile::tempdir().unwrap();
        let o = kvmark(&[
            "--backend",
            engine,
            "--data-dir",
            data.path().to_str().unwrap(),
            "--ops",
            "1",
            &workload("engine_verbs.lua"),
        ]);
        assert_exit(&o, 0);
        assert!(stderr(&o).contains("engine verbs ok"), "{engine}: {}", stderr(&o));
    }
}

#[test]
fn persistent_engines_are_refused_without_a_data_dir() {
    for engine in persistent() {
        let o = kvmark(&["--backend", engine, &bundled("mixed.lua")]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(
            err.contains(&format!("engine {engine} stores data on disk")) && err.contains("--data-dir"),
            "{engine}: {err}"
        );
        assert!(err.contains("tmpfs"), "{engine}: the refusal should say why: {err}");
        assert!(stdout(&o).is_empty(), "{engine}: ran anyway");
    }
}

#[test]
fn an_existing_directory_with_a_store_name_is_never_adopted_or_removed() {
    // The shell execs kvmark, so kvmark's PID is the shell's `$$` and the first store
    // name it would pick is known: a directory of that name, holding a user's file, and
    // a symlink of the second name must both survive the run untouched.
    let engine = persistent()[0];
    let data = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let script = r#"mkdir "$1/kvmark-$4-$$-0" && echo precious > "$1/kvmark-$4-$$-0/precious.txt" \
        && ln -s "$5" "$1/kvmark-$4-$$-1" && echo $$ > "$1/pid" \
        && exec "$2" --backend "$4" --data-dir "$1" --items 50 --ops 50 "$3""#;
    let o = std::process::Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(data.path())
        .arg(env!("CARGO_BIN_EXE_kvmark"))
        .arg(bundled("mixed.lua"))
        .arg(engine)
        .arg(outside.path())
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let pid = std::fs::read_to_string(data.path().join("pid")).unwrap();
    let pid = pid.trim();
    let mine = data.path().join(format!("kvmark-{engine}-{pid}-0"));
    assert_eq!(
        std::fs::read_to_string(mine.join("precious.txt")).unwrap(),
        "precious\n",
        "{engine}: the user's file"
    );
    assert_eq!(
        std::fs::read_dir(&mine).unwrap().count(),
        1,
        "{engine}: nothing added to it"
    );
    let link = data.path().join(format!("kvmark-{engine}-{pid}-1"));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "{engine}: nothing written through the link"
    );
    let mut left = stores_in(data.path());
    left.sort();
    assert_eq!(
        left,
        [format!("kvmark-{engine}-{pid}-0"), format!("kvmark-{engine}-{pid}-1")],
        "{engine}: the run's own store was removed, the others kept"
    );
}

#[test]
fn keep_data_keeps_the_store_and_the_default_removes_it() {
    for engine in persistent() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().to_str().unwrap();
        let args = ["--backend", engine, "--data-dir", dir, "--items", "50", "--ops", "50"];
        let mixed = bundled("mixed.lua");

        let o = kvmark(&[&args[..], &[&mixed]].concat());
        assert_exit(&o, 0);
        assert!(
            stores_in(data.path()).is_empty(),
            "{engine}: the default removes the store"
        );

        let o = kvmark(&[&args[..], &["--keep-data", &mixed]].concat());
        assert_exit(&o, 0);
        let kept = stores_in(data.path());
        assert_eq!(kept.len(), 1, "{engine}: {kept:?}");
        assert!(kept[0].starts_with(&format!("kvmark-{engine}-")), "{engine}: {kept:?}");
        let files = std::fs::read_dir(data.path().join(&kept[0])).unwrap().count();
        assert!(files > 1, "{engine}: the kept store directory holds only the marker");
        assert!(
            data.path().join(&kept[0]).join(".kvmark-store").is_file(),
            "{engine}: the kept store carries kvmark's marker"
        );
    }
}

#[test]
fn user_files_beside_and_inside_the_data_dir_are_untouched() {
    for engine in persistent() {
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("notes.txt"), "mine\n").unwrap();
        std::fs::create_dir(data.path().join("kvmark-old")).unwrap();
        std::fs::write(data.path().join("kvmark-old/keep.txt"), "also mine\n").unwrap();
        let dir = data.path().to_str().unwrap();
        let o = kvmark(&[
            "--backend",
            engine,
            "--data-dir",
            dir,
            "--items",
            "50",
            "--ops",
            "50",
            &bundled("mixed.lua"),
        ]);
        assert_exit(&o, 0);
        assert_eq!(
            std::fs::read_to_string(data.path().join("notes.txt")).unwrap(),
            "mine\n"
        );
        assert_eq!(
            std::fs::read_to_string(data.path().join("kvmark-old/keep.txt")).unwrap(),
            "also mine\n",
            "{engine}"
        );
        let mut left: Vec<_> = std::fs::read_dir(data.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["kvmark-old", "notes.txt"],
            "{engine}: only the run's store is gone"
        );
    }
}

#[test]
fn settle_waits_before_every_timed_phase_outside_its_time() {
    // sim.settle makes each wait last 300 ms; a spec of two tiny phases waits twice.
    let (d, spec) = spec_file(
        "two.json",
        r#"{"sections": [{"key_len": 8, "val_len": 8, "groups": [
            {"name": "fill", "inserts": {"op_count": 50}},
            {"name": "read", "point_queries": {"op_count": 50}}]}]}"#,
    );
    let json = d.path().join("results.json");
    let sinks = format!("tsv,json:{}", json.display());
    let args = [
        "--backend",
        "sim",
        "--engine-opt",
        "sim.settle=300ms",
        "--report",
        &sinks,
    ];
    let started = std::time::Instant::now();
    let o = kvmark(&[&args[..], &["--settle", spec.to_str().unwrap()]].concat());
    let elapsed = started.elapsed();
    assert_exit(&o, 0);
    assert!(elapsed.as_secs_f64() >= 0.6, "two waits of 300 ms, took {elapsed:?}");
    let out = stdout(&o);
    let header: Vec<&str> = out.lines().next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (phase, wall) = (col("phase"), col("wall_s"));
    let mut phases = Vec::new();
    for row in out.lines().skip(1).map(|l| l.split('\t').collect::<Vec<_>>()) {
        if row[phase] != "all" {
            let secs: f64 = row[wall].parse().unwrap();
            assert!(secs < 0.3, "the wait is in no phase's time: {row:?}");
            phases.push(row[phase].to_string());
        }
    }
    assert_eq!(phases, ["fill", "read"], "{out}");
    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        results["run"]["settle"], true,
        "the report says the phases were settled"
    );
}

#[test]
fn bad_engine_options_stop_the_run_before_it_starts() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let mixed = bundled("mixed.lua");
    for engine in kvmark::engine::registry() {
        let opt = format!("{}.kvmark_no_such_knob=1", engine.name);
        let o = kvmark(&[
            "--backend",
            engine.name,
            "--data-dir",
            dir,
            "--engine-opt",
            &opt,
            &mixed,
        ]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(
            err.contains(engine.name) && err.contains("kvmark_no_such_knob"),
            "{}: {err}",
            engine.name
        );
        assert!(stdout(&o).is_empty(), "{}: ran anyway", engine.name);
    }
    assert!(stores_in(data.path()).is_empty());
}

#[test]
fn a_bad_engine_value_in_a_config_file_names_its_line() {
    // The message quotes the value, not the key: the key travels as data.
    if kvmark::engine::find("lmdb").is_none() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let cnf = data.path().join("e.cnf");
    std::fs::write(
        &cnf,
        format!(
            "[bench]\nbackend = lmdb\ndata_dir = {}\nops = 5\n\n[lmdb]\nmap_size = 1G\nsync = maybe\n",
            data.path().display()
        ),
    )
    .unwrap();
    let o = kvmark(&["--config", cnf.to_str().unwrap(), &bundled("mixed.lua")]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("engine lmdb: option sync = 'maybe': expected one of full, nometasync, nosync"),
        "{err}"
    );
    assert!(err.contains(&format!("(sync is set at {}:8)", cnf.display())), "{err}");
    assert!(stdout(&o).is_empty(), "ran anyway");
    assert!(stores_in(data.path()).is_empty());

    // The flag overrides the file, and the error says so.
    let o = kvmark(&[
        "--config",
        cnf.to_str().unwrap(),
        "--engine-opt",
        "lmdb.sync=sometimes",
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("option sync = 'sometimes'") && err.contains("(sync is set by --engine-opt lmdb.sync)"),
        "{err}"
    );
}

#[test]
fn rocksdb_takes_any_rocksdb_option_string_including_nested_ones() {
    if kvmark::engine::find("rocksdb").is_none() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let o = kvmark(&[
        "--backend",
        "rocksdb",
        "--data-dir",
        data.path().to_str().unwrap(),
        "--engine-opt",
        "rocksdb.write_buffer_size=4M",
        "--engine-opt",
        "rocksdb.compression=kNoCompression",
        "--engine-opt",
        "rocksdb.block_based_table_factory={block_cache=8M;filter_policy=bloomfilter:10:false}",
        "--engine-opt",
        "rocksdb.level0_slowdown_writes_trigger=5",
        "--engine-opt",
        "rocksdb.level0_stop_writes_trigger=10",
        "--items",
        "100",
        "--ops",
        "100",
        "--keep-data",
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 0);
    // RocksDB records the options it ran with in the store's OPTIONS file.
    let store = data.path().join(&stores_in(data.path())[0]);
    let options = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
        .expect("an OPTIONS file");
    let text = std::fs::read_to_string(options).unwrap();
    for line in [
        "write_buffer_size=4194304",
        "compression=kNoCompression",
        "level0_slowdown_writes_trigger=5",
        "level0_stop_writes_trigger=10",
        "merge_operator=kvmark.append",
        "filter_policy=bloomfilter:10",
    ] {
        assert!(text.contains(line), "OPTIONS lacks {line}");
    }

    let o = kvmark(&[
        "--backend",
        "rocksdb",
        "--data-dir",
        data.path().to_str().unwrap(),
        "--engine-opt",
        "rocksdb.write_buffer_size=lots",
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("write_buffer_size"), "{}", stderr(&o));
}

#[test]
fn engines_lists_every_engine_with_version_and_knobs() {
    let o = kvmark(&["engines"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    // One block per engine: its name, then indented lines.
    let mut blocks: Vec<(String, String)> = Vec::new();
    for line in out.lines() {
        if line.starts_with(' ') {
            if let Some((_, body)) = blocks.last_mut() {
                body.push_str(line);
                body.push('\n');
            }
        } else if !line.is_empty() {
            blocks.push((line.to_string(), String::new()));
        }
    }
    let listed: Vec<&str> = blocks.iter().map(|(n, _)| n.as_str()).collect();
    let compiled: Vec<&str> = kvmark::engine::registry().iter().map(|e| e.name).collect();
    assert_eq!(listed, compiled, "{out}");
    for (engine, (_, block)) in kvmark::engine::registry().into_iter().zip(&blocks) {
        let n = engine.name;
        for field in ["  library:  ", "  append:   ", "  del:      ", "  batches:  "] {
            assert!(block.contains(field), "{n}: no '{field}' in\n{block}");
        }
        let storage = match engine.storage {
            kvmark::engine::StorageKind::Disk => "persistent (needs --data-dir)".to_string(),
            kvmark::engine::StorageKind::Memory => "in-memory".to_string(),
            other => other.label(),
        };
        assert!(block.contains(&format!("  storage:  {storage}\n")), "{n}: {block}");
        assert!(block.contains(&(engine.version)()), "{n}: version missing\n{block}");
        for knob in engine.knobs.list() {
            let line = format!("    {:<32} default {}", knob.name, knob.default);
            assert!(block.contains(&line), "{n}: knob line '{line}' missing\n{block}");
        }
    }
}

/// The sections of a keybench-style INI file: (section, key, value, active). Commented
/// `; key = value` lines are returned too, as inactive. A comment starts at the line's
/// start or after whitespace, so `{a=1;b=2}` keeps its semicolons.
fn ini(text: &str) -> Vec<(String, String, String, bool)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
            continue;
        }
        // Commented knobs are written `;key = value`; prose and the table options inside
        // block_based_table_factory follow the ';' with whitespace.
        let (body, active) = match line.strip_prefix(';').or_else(|| line.strip_prefix('#')) {
            Some(rest) if rest.starts_with(char::is_whitespace) || rest.is_empty() => continue,
            Some(rest) => (rest, false),
            None => (line, true),
        };
        // Drop an inline comment: ';' or '#' after whitespace.
        let body = body
            .char_indices()
            .find(|&(i, c)| (c == ';' || c == '#') && i > 0 && body[..i].ends_with(char::is_whitespace))
            .map_or(body, |(i, _)| &body[..i]);
        if let Some((k, v)) = body.split_once('=') {
            let k = k.trim();
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.push((section.clone(), k.to_string(), v.trim().to_string(), active));
            }
        }
    }
    out
}

#[test]
fn the_parity_sample_lists_every_knob_and_its_sections_are_valid_options() {
    let text = std::fs::read_to_string(root().join("samples/rocksdb-vs-tidesdb.cnf")).unwrap();
    let entries = ini(&text);
    for name in ["rocksdb", "tidesdb"] {
        let Some(engine) = kvmark::engine::find(name) else {
            continue;
        };
        let mut active = kvmark::engine::EngineOptions::new();
        let mut all = kvmark::engine::EngineOptions::new();
        for (section, k, v, on) in entries.iter().filter(|e| e.0 == name) {
            let _ = section;
            if *on {
                active.set(k.clone(), v.clone());
            }
            all.set(k.clone(), v.clone());
        }
        assert!(!active.is_empty(), "{name}: no active parity overrides");
        if let Err(e) = engine.validate(&active) {
            panic!("{name}: the sample's active options are refused: {e}");
        }
        // Uncommenting any listed default must be accepted too.
        if let Err(e) = engine.validate(&all) {
            panic!("{name}: the sample's listed defaults are refused: {e}");
        }
        for knob in engine.knobs.list() {
            let listed = match knob.name.strip_prefix("block_based_table_factory={") {
                Some(table) => text.contains(&format!(";   {}=", table.trim_end_matches('}'))),
                None => entries.iter().any(|(s, k, _, _)| s == name && *k == knob.name),
            };
            assert!(listed, "{name}: knob {} missing from the sample", knob.name);
        }
    }
    let bench: Vec<&str> = entries
        .iter()
        .filter(|e| e.0 == "bench" && e.3)
        .map(|e| e.1.as_str())
        .collect();
    for key in ["backend", "threads", "secs", "data_dir", "workload"] {
        assert!(bench.contains(&key), "[bench] lacks {key}");
    }
}

#[test]
fn the_timeline_samples_store_size_and_engine_internals_of_every_persistent_engine() {
    let engines = persistent();
    if engines.is_empty() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let tl_path = data.path().join("tl.tsv");
    let o = kvmark(&[
        "--backend",
        &engines.join(","),
        "--data-dir",
        data.path().to_str().unwrap(),
        "--items",
        "2000",
        "--secs",
        "0.6",
        "--timeline",
        "0.1",
        "--report",
        &format!("timeline:{}", tl_path.display()),
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 0);
    let tl = common::parse::read_tsv(&tl_path);
    for engine in engines {
        let rows: Vec<_> = tl
            .rows
            .iter()
            .filter(|r| r["engine"] == engine && r["phase"] == "run")
            .collect();
        let has = |metric: &str| rows.iter().any(|r| r["metric"] == metric);
        for metric in ["store.disk_bytes", "store.disk_files"] {
            assert!(has(metric), "{engine}: no {metric} in its timeline");
        }
        let bytes: f64 = rows
            .iter()
            .filter(|r| r["metric"] == "store.disk_bytes")
            .map(|r| r["value"].parse().unwrap())
            .fold(0.0, f64::max);
        assert!(bytes > 0.0, "{engine}: the store never occupied any disk");
        // Every statistic the engine reports, sampled with the rest.
        let store_stats: Vec<String> = {
            let info = kvmark::engine::find(engine).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let options = kvmark::engine::EngineOptions::new();
            let place = kvmark::engine::StorePlace::Dir(dir.path().to_path_buf());
            let req = kvmark::engine::OpenRequest::new(place, &options);
            let store = (info.open)(&req).unwrap_or_else(|e| panic!("{engine}: {e}"));
            let names = store.stats().into_iter().map(|(n, _)| n).collect();
            store.close().unwrap();
            names
        };
        for stat in store_stats {
            assert!(has(&format!("engine.{stat}")), "{engine}: engine.{stat} never sampled");
        }
    }
}

#[test]
fn engine_errors_are_counted_reported_and_fail_the_run() {
    // A 1 MiB LMDB map cannot hold 2000 values of 4 KiB: puts fail with MDB_MAP_FULL.
    // Nothing may pass silently, in the timed phase or in the seed.
    if kvmark::engine::find("lmdb").is_none() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let writer = dir.path().join("writer.lua");
    std::fs::write(
        &writer,
        "local V = string.rep('v', 4096)\n\
         return { name = 'writer', run = function(ctx) kv.put(string.format('k%08d', ctx.iter), V) end }\n",
    )
    .unwrap();
    let full = ["--backend", "lmdb", "--engine-opt", "lmdb.map_size=1M", "--data-dir"];
    let o = kvmark(
        &[
            &full[..],
            &[
                data.path().to_str().unwrap(),
                "--ops",
                "2000",
                "--report",
                "console,tsv",
                writer.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert_exit(&o, 1);
    let out = stdout(&o);
    let errors = out
        .lines()
        .find(|l| l.starts_with("errors: put "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(errors.contains("MDB_MAP_FULL"), "the first message is shown: {errors}");
    assert!(stderr(&o).contains("failed or saw engine errors"), "{}", stderr(&o));
    // The tsv row carries the count and the rate.
    let put = out
        .lines()
        .find(|l| l.starts_with("writer\tlmdb\t") && l.split('\t').nth(5) == Some("put"))
        .unwrap_or_else(|| panic!("{out}"));
    let cols: Vec<&str> = put.split('\t').collect();
    let idx = |name: &str| kvmark::report::tsv::COLUMNS.iter().position(|c| *c == name).unwrap();
    assert!(cols[idx("errors")].parse::<u64>().unwrap() > 0, "{put}");
    assert!(cols[idx("err_rate")].parse::<f64>().unwrap() > 0.0, "{put}");

    // A seed that loses writes fails its point: its figures would describe another
    // dataset.
    let o = kvmark(
        &[
            &full[..],
            &[
                data.path().to_str().unwrap(),
                "--items",
                "2000",
                "--ops",
                "100",
                &bundled("mixed.lua"),
            ],
        ]
        .concat(),
    );
    assert_exit(&o, 1);
    let out = stdout(&o);
    assert!(
        out.contains("FAILED: mixed lmdb t1 b1: seeding failed: engine errors in load(): ")
            && out.contains("MDB_MAP_FULL"),
        "{out}"
    );
    assert!(stores_in(data.path()).is_empty(), "store directories left behind");
}

#[test]
fn tokyocabinets_hash_database_refuses_ranges_naming_the_knob() {
    // mixed.lua's ranges cannot run on a hash: each one is an error that names the knob
    // to change, the point fails, and the gets, puts and dels still ran.
    if kvmark::engine::find("tokyocabinet").is_none() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let o = kvmark(&[
        "--backend",
        "tokyocabinet",
        "--engine-opt",
        "tokyocabinet.type=hash",
        "--data-dir",
        data.path().to_str().unwrap(),
        "--items",
        "300",
        "--ops",
        "600",
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 1);
    let out = stdout(&o);
    let errors = out
        .lines()
        .find(|l| l.starts_with("errors: range "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        errors.contains("range needs key order, which type=hash does not keep; use type=btree"),
        "{errors}"
    );
    for op in ["put", "get", "del"] {
        assert!(op_count(&out, op).unwrap_or(0) > 0, "no {op} row\n{out}");
    }
    assert!(stores_in(data.path()).is_empty(), "store directories left behind");
}

/// Starts a 30 s mixed run of `engine` in `data` with `extra` flags, and returns it
/// once its store exists and its timed phase has run for a moment.
fn a_run_in_its_timed_phase(engine: &str, data: &Path, extra: &[&str]) -> std::process::Child {
    let dir = data.to_str().unwrap();
    let base = ["--backend", engine, "--data-dir", dir, "--items", "500", "--secs", "30"];
    let child = spawn_kvmark(&[&base[..], extra, &[&bundled("mixed.lua")]].concat());
    wait_for(&format!("{engine}: a store directory"), || !stores_in(data).is_empty());
    std::thread::sleep(std::time::Duration::from_millis(700));
    child
}

#[test]
fn sigterm_stops_like_ctrl_c_reporting_finished_points_and_removing_stores() {
    let engine = persistent()[0];
    let data = tempfile::tempdir().unwrap();
    let json = data.path().join("results.json");
    let report_flag = format!("json:{}", json.display());
    let child = a_run_in_its_timed_phase(engine, data.path(), &["--report", &report_flag]);
    let o = signal(child, libc::SIGTERM);
    assert_exit(&o, 130);
    let report = std::fs::read_to_string(&json).unwrap();
    assert!(report.contains("interrupted"), "{engine}: {report}");
    assert!(
        stores_in(data.path()).is_empty(),
        "{engine}: the terminated run left {:?}",
        stores_in(data.path())
    );
}

#[test]
fn ctrl_c_removes_the_temporary_stores_of_persistent_engines() {
    for engine in persistent() {
        let data = tempfile::tempdir().unwrap();
        // Interrupt the timed phase once the store exists.
        let child = a_run_in_its_timed_phase(engine, data.path(), &["--threads", "1,2"]);
        let o = interrupt(child);
        assert_exit(&o, 130);
        assert!(stdout(&o).contains("INTERRUPTED"), "{engine}: {}", stdout(&o));
        assert!(
            stores_in(data.path()).is_empty(),
            "{engine}: the interrupted run left {:?}",
            stores_in(data.path())
        );
    }
}

#[test]
fn wiredtiger_write_conflicts_are_retried_as_busy_and_counted() {
    // Four threads appending to one key conflict under snapshot isolation: WiredTiger
    // rolls the later writer back (WT_ROLLBACK), which is a counted retry inside the
    // timed region, never an error. (Under read-committed, WiredTiger's default, they
    // would not conflict and appends could be lost.)
    if kvmark::engine::find("wiredtiger").is_none() {
        return;
    }
    let data = tempfile::tempdir().unwrap();
    let o = kvmark(&[
        "--backend",
        "wiredtiger",
        "--data-dir",
        data.path().to_str().unwrap(),
        "--threads",
        "4",
        "--ops",
        "20000",
        "--report",
        "console,tsv",
        &workload("hot_append.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("retries: append "), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("hot_append\twiredtiger\t") && l.split('\t').nth(5) == Some("append"))
        .unwrap_or_else(|| panic!("{out}"));
    let cols: Vec<&str> = row.split('\t').collect();
    let idx = |name: &str| kvmark::report::tsv::COLUMNS.iter().position(|c| *c == name).unwrap();
    assert_eq!(cols[idx("errors")], "0", "{row}");
    assert!(cols[idx("retries")].parse::<u64>().unwrap() > 0, "{row}");
}

#[test]
fn keys_an_engine_does_not_take_are_refused_and_counted_never_a_panic() {
    // An empty key and one of 70,000 bytes from an operation log: fjall panicked on
    // both (exit 101, store left behind). Engines with limits refuse them before the
    // call with a counted error naming the engine; no engine panics.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("keys.ops");
    let long = "k".repeat(70_000);
    // Each kind reports its first error: an empty key for puts, the long one for gets.
    std::fs::write(&log, format!("I \\e v\nP {long}\nI {long} v\nP \\e\nI ok v\nP ok\n")).unwrap();
    for engine in persistent() {
        let data = tempfile::tempdir().unwrap();
        let o = on_disk(engine, data.path(), &[log.to_str().unwrap()]);
        let (out, err) = (stdout(&o), stderr(&o));
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{engine}: {:?}\n{out}\n{err}",
            o.status
        );
        assert!(!err.contains("panicked"), "{engine}: {err}");
        assert!(stores_in(data.path()).is_empty(), "{engine}: store left behind");
        if let Some(limits) = ["fjall", "lmdb"].contains(&engine).then_some(engine) {
            assert_exit(&o, 1);
            assert!(
                out.contains(&format!("engine {limits}: an empty key, which {limits} does not take"))
                    && out.contains(&format!(
                        "engine {limits}: a key of 70000 bytes, longer than {limits} takes"
                    )),
                "{engine}: {out}"
            );
        }
    }
}

/// RocksDB's zstd is Debian's shared library, not a copy compiled into the binary, and
/// `kvmark engines` says where each codec comes from: the binary's dynamic section must
/// name the library, and the library line the file it was loaded from.
#[test]
fn rocksdb_links_the_systems_zstd_and_engines_says_so() {
    let o = kvmark(&["engines"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let block: String = out
        .lines()
        .skip_while(|l| *l != "rocksdb")
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .collect::<Vec<_>>()
        .join("\n");
    let library = block
        .lines()
        .find(|l| l.starts_with("  library:  "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        library.contains("from the system (/") && library.contains("libzstd.so"),
        "{library}"
    );
    assert!(library.contains("snappy, lz4, zlib and bzip2 compiled in"), "{library}");
    let elf = std::process::Command::new("readelf")
        .args(["--dynamic", env!("CARGO_BIN_EXE_kvmark")])
        .output()
        .expect("readelf (binutils, from build-essential) runs");
    let dynamic = String::from_utf8_lossy(&elf.stdout);
    assert!(
        dynamic
            .lines()
            .any(|l| l.contains("(NEEDED)") && l.contains("libzstd.so")),
        "libzstd.so is not among the binary's shared libraries:\n{dynamic}"
    );
}
