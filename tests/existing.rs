//! `--use-existing`: every engine that keeps its data reopens a store a `--keep-data`
//! run left (a disk engine's directory, a server engine's namespace on the shared
//! test servers), runs without seeding it, finds every key the first run wrote, and
//! leaves it in place; and what cannot be reopened is refused before anything runs.

mod common;

use std::path::Path;

use common::servers::server_var;
use common::*;

/// Seeds `ctx.items` keys in load(); each unit reads a random one of them.
const WORKLOAD: &str = r#"
local function key(i) return string.format("k:%06d", i) end
return {
  name = "existing",
  load = function(ctx)
    for i = ctx.thread, ctx.items - 1, ctx.threads do kv.put(key(i), "value:" .. i) end
  end,
  run = function(ctx) kv.get(key(math.random(0, ctx.items - 1))) end,
}
"#;

/// The engines `kvmark engines` lists with the given storage (its first word).
fn engines_stored(kind: &str) -> Vec<String> {
    let out = stdout(&kvmark(&["engines"]));
    let mut name = String::new();
    let mut found = Vec::new();
    for line in out.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            name = line.trim().to_string();
        } else if let Some(storage) = line.trim().strip_prefix("storage:")
            && storage.trim().starts_with(kind)
        {
            found.push(name.clone());
        }
    }
    found
}

/// Keeps a store of `engine` seeded with 300 keys; returns where it is, as the
/// run's own message gives it.
fn kept_store(engine: &str, wl: &Path, extra: &[&str]) -> String {
    let mut args = vec!["--backend", engine, "--keep-data", "--items", "300", "--ops", "10"];
    args.extend_from_slice(extra);
    args.push(wl.to_str().unwrap());
    let o = kvmark(&args);
    assert_exit(&o, 0);
    let err = stderr(&o);
    let (_, rest) = err
        .split_once(&format!("--backend {engine} --use-existing "))
        .unwrap_or_else(|| panic!("{engine}: no kept-store message in:\n{err}"));
    rest.split(')').next().unwrap().to_string()
}

/// Reopens `place` and checks that nothing was seeded and every read hit.
fn reopen(engine: &str, place: &str, wl: &Path) {
    let o = kvmark(&[
        "--backend",
        engine,
        "--use-existing",
        place,
        "--items",
        "300",
        "--ops",
        "1000",
        wl.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(!out.contains("seed:"), "{engine}: seeded again:\n{out}");
    assert!(out.contains("get hit rate: 100.0%"), "{engine}: keys missing:\n{out}");
    assert!(
        !stderr(&o).contains("kept the"),
        "{engine}: an existing store is not reported as kept: {}",
        stderr(&o)
    );
}

#[test]
fn every_disk_engine_reopens_a_kept_store_without_seeding_it() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("existing.lua");
    std::fs::write(&wl, WORKLOAD).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let engines = engines_stored("persistent");
    assert!(engines.len() >= 2, "{engines:?}");
    for engine in &engines {
        let place = kept_store(engine, &wl, &["--data-dir", data.to_str().unwrap()]);
        assert!(Path::new(&place).is_dir(), "{engine}: {place}");
        reopen(engine, &place, &wl);
        // Twice: the first reopening left it as a store, not removed.
        reopen(engine, &place, &wl);
        assert!(Path::new(&place).join(".kvmark-store").is_file(), "{engine}: {place}");
    }
}

#[test]
fn a_spec_on_an_existing_store_skips_its_loading_groups_and_checks_them() {
    // Two loading groups (inserts only, one sorted), then queries on their keys.
    let (dir, spec) = spec_file(
        "loaded.json",
        r#"{"name": "loaded", "sections": [{"key_len": 16, "val_len": 50, "groups": [
              {"name": "fill", "inserts": {"op_count": 2000}},
              {"name": "fill-sorted", "sorted": {"k": 0, "l": 0}, "inserts": {"op_count": 1000}},
              {"name": "query", "point_queries": {"op_count": 3000}, "updates": {"op_count": 500}}]}]}"#,
    );
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let spec = spec.to_str().unwrap();
    let place = kept_store(
        "lmdb",
        Path::new(spec),
        &["--data-dir", data.to_str().unwrap(), "--threads", "2", "--seed", "7"],
    );
    let reopen = |extra: &[&str]| {
        let mut args = vec!["--backend", "lmdb", "--use-existing", &place];
        args.extend_from_slice(extra);
        args.push(spec);
        kvmark(&args)
    };
    // The same seed and threads: the loading groups are not run, every query hits.
    let o = reopen(&["--threads", "2", "--seed", "7"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    // One phase left, so no per-phase tables.
    assert!(
        !out.contains("phase fill:") && !out.contains("phase fill-sorted:"),
        "{out}"
    );
    assert!(out.contains("get hit rate: 100.0%"), "{out}");
    assert_eq!(
        op_count(&out, "put"),
        Some(500),
        "only the query group's updates ran:\n{out}"
    );
    // Another thread count hands out other keys: refused, saying why.
    let o = reopen(&["--threads", "1", "--seed", "7"]);
    assert_exit(&o, 1);
    let text = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        text.contains("the store does not hold the keys the spec's loading groups insert")
            && text.contains("--threads"),
        "{text}"
    );
}

#[test]
fn every_server_engine_reopens_a_kept_namespace_without_seeding_it() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("existing.lua");
    std::fs::write(&wl, WORKLOAD).unwrap();
    for engine in engines_stored("on a server") {
        if std::env::var(server_var(&engine, "URL")).is_err() {
            skip_or_fail(&format!(
                "{engine}: {} is not set (scripts/with-servers starts the servers)",
                server_var(&engine, "URL")
            ));
            continue;
        }
        let place = kept_store(&engine, &wl, &[]);
        reopen(&engine, &place, &wl);
    }
}

#[test]
fn what_cannot_be_reopened_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("existing.lua");
    std::fs::write(&wl, WORKLOAD).unwrap();
    let w = wl.to_str().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let engines = engines_stored("persistent");
    let (first, second) = (engines[0].as_str(), engines[1].as_str());
    let place = kept_store(first, &wl, &["--data-dir", data.to_str().unwrap()]);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let missing = dir.path().join("missing");
    let both = format!("{first},{second}");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--backend", second, "--use-existing", &place, w],
            format!("holds a {first} store (its .kvmark-store says so), not a {second} one: give --backend {first}"),
        ),
        (
            vec!["--backend", &both, "--use-existing", &place, w],
            "opens one engine's store: give one --backend".to_string(),
        ),
        (
            vec!["--use-existing", &place, w],
            "engine skiplist keeps its store in memory".to_string(),
        ),
        (
            vec!["--backend", first, "--use-existing", empty.to_str().unwrap(), w],
            "it is empty".to_string(),
        ),
        (
            vec!["--backend", first, "--use-existing", missing.to_str().unwrap(), w],
            "no such directory".to_string(),
        ),
        (
            vec!["--backend", first, "--use-existing", &place, "--verify", w],
            "--verify checks every read".to_string(),
        ),
        (
            vec!["--backend", first, "--use-existing", &place, "--epochs", "2", w],
            "runs in epochs".to_string(),
        ),
        (
            vec!["--backend", "redis", "--use-existing", "not-a-name", w],
            "not a namespace name".to_string(),
        ),
    ];
    for (args, words) in &cases {
        let o = kvmark(args);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(words.as_str()), "{args:?}: {}", stderr(&o));
    }
    // Nothing was removed or seeded on the way.
    assert!(Path::new(&place).is_dir());
    reopen(first, &place, &wl);
}
