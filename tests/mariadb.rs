//! The `mariadb` (InnoDB) and `myrocks` (MyRocks) engines through the real binary and
//! the library, beyond what the conformance suite checks: a workload on each whose
//! table is in the right storage engine, with the server's statistics in the
//! timeline; the growing-values modes on both; sessions inside the connections of one
//! thread; a server stopped mid-run, and one that never answers, giving counted errors
//! and an end on time; passwords masked; a bad URL refused naming the option.
//!
//! They use the server KVMARK_MARIADB_URL names (`make test` starts it through
//! scripts/with-servers). Without it, a dev run skips these tests saying why, unless
//! KVMARK_REQUIRE_SERVERS=1, which makes that a failure. The stop test starts a
//! private server of its own (scripts/servers with its own state directory).

#![cfg(feature = "mariadb")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::servers::PrivateServer;
use common::*;
use kvmark::engine::storage::{Reach, reach, servers_required};
use kvmark::engine::{EngineInfo, EngineOptions};
use mysql_async::prelude::Queryable;

/// The two engines with the storage engine each must put its tables in.
const ENGINES: [(&str, &str); 2] = [("mariadb", "InnoDB"), ("myrocks", "ROCKSDB")];

/// Whether the shared server answers (said on stderr when a dev run skips).
fn server_up() -> bool {
    let info = kvmark::engine::find("myrocks").expect("compiled in");
    match reach(info, &EngineOptions::new(), servers_required()) {
        Reach::Ready => true,
        Reach::Fail(why) => panic!("{why}"),
        Reach::Skip(note) => {
            eprintln!("{note}");
            false
        }
    }
}

fn info(name: &str) -> &'static EngineInfo {
    kvmark::engine::find(name).expect("compiled in")
}

/// The tables (name, storage engine) of the shared server's database whose names
/// start with `prefix`.
fn tables(prefix: &str) -> Vec<(String, String)> {
    let url = std::env::var("KVMARK_MARIADB_URL").unwrap_or_else(|_| "mariadb://kvmark@127.0.0.1:3306/kvmark".into());
    let url = url.replacen("mariadb://", "mysql://", 1);
    kvmark::engine::inflight::block_on(async {
        let mut c = mysql_async::Conn::from_url(url).await.unwrap();
        let rows = c
            .exec(
                "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE CONCAT(?, '%')",
                (prefix,),
            )
            .await
            .unwrap();
        c.disconnect().await.unwrap();
        rows
    })
}

#[test]
fn each_engine_keeps_its_table_in_its_storage_engine_and_reports_server_statistics() {
    if !server_up() {
        return;
    }
    for (name, storage) in ENGINES {
        let dir = tempfile::tempdir().unwrap();
        let (timeline, report) = timeline_report(dir.path());
        let child = spawn_kvmark(&[
            "--backend",
            name,
            "--threads",
            "2",
            "--connections",
            "4",
            "--items",
            "300",
            "--ops",
            "800",
            "--timeline",
            "0.1",
            "--report",
            &report,
            "--keep-data",
            &bundled("mixed.lua"),
        ]);
        let pid = child.id();
        let o = child.wait_with_output().unwrap();
        assert_exit(&o, 0);
        let out = stdout(&o);
        let counts: Vec<u64> = ["put", "get", "del", "range"]
            .iter()
            .map(|op| op_count(&out, op).unwrap_or_else(|| panic!("{name}: no {op} row\n{out}")))
            .collect();
        assert!(counts.iter().all(|&n| n > 0), "{name}: {counts:?}\n{out}");
        assert_eq!(counts.iter().sum::<u64>(), 800, "{name}: {counts:?}\n{out}");
        // Server internals of the storage engine at hand, and the link's counters.
        let tsv = std::fs::read_to_string(&timeline).unwrap();
        let wanted: &[&str] = match name {
            "mariadb" => &[
                "innodb_buffer_pool_read_requests",
                "innodb_os_log_written",
                "handler_write",
            ],
            _ => &["rocksdb_rows_inserted", "rocksdb_wal_bytes", "rocksdb_block_cache_hit"],
        };
        for metric in wanted.iter().chain(&["reconnects"]) {
            let metric = format!("\tengine.{metric}\t");
            assert!(tsv.contains(&metric), "{name}: no {metric} in the timeline");
        }
        // The kept table is in the storage engine the engine names; remove drops it.
        let prefix = format!("kvmark_{name}_{pid}_");
        let kept = tables(&prefix);
        assert_eq!(kept.len(), 1, "{name}: one store, one table: {kept:?}");
        assert!(kept[0].1.eq_ignore_ascii_case(storage), "{name}: {kept:?}");
        (info(name).storage.server().unwrap().remove)(&EngineOptions::new(), &kept[0].0).unwrap();
        assert_eq!(tables(&prefix), Vec::new(), "{name}: the table stayed");
    }
}

#[test]
fn the_growing_values_modes_run_on_innodb_and_myrocks() {
    if !server_up() {
        return;
    }
    // Two short epochs of each bundled IVS spec; every mode on ivs-a.
    for (spec, modes) in [("ivs-a.json", "all"), ("ivs-c.json", "main,clean")] {
        let spec = root().join("specs").join(spec).display().to_string();
        let o = kvmark(&[
            "--backend",
            "mariadb,myrocks",
            "--scale",
            "0.005",
            "--epochs",
            "2",
            "--ivs-mode",
            modes,
            &spec,
        ]);
        assert_exit(&o, 0);
        let out = stdout(&o);
        let wanted: &[&str] = if modes == "all" {
            &["main", "clean", "average", "spread"]
        } else {
            &["main", "clean"]
        };
        for (name, _) in ENGINES {
            for mode in wanted {
                // Summary rows read "... ENGINE ... e2 MODE ... ok".
                let has = |r: &Vec<String>, w: &str| r.iter().any(|c| c == w);
                assert!(
                    summary_rows(&out)
                        .iter()
                        .any(|r| has(r, name) && has(r, "e2") && has(r, mode) && has(r, "ok")),
                    "{spec}: no e2 {mode} point for {name}\n{out}"
                );
            }
        }
        assert!(!out.contains("FAILED"), "{spec}: {out}");
    }
}

#[test]
fn sessions_of_both_engines_work_inside_the_connections_of_one_thread() {
    use kvmark::engine::inflight::run_connections;
    use kvmark::engine::storage::fresh_namespace;
    use kvmark::engine::{OpenRequest, ReadBuf, StorePlace};
    if !server_up() {
        return;
    }
    for (name, _) in ENGINES {
        let info = info(name);
        let options = EngineOptions::new();
        let ns = fresh_namespace(name);
        let store = (info.open)(&OpenRequest::new(StorePlace::Namespace(ns.clone()), &options)).unwrap();
        // One session made outside the connections, moved into one: it connects again
        // on the connections' runtime, which is not a fault.
        let moved = std::sync::Mutex::new(Some(store.session().unwrap()));
        run_connections(6, |c| {
            let mut s = if c == 3 {
                moved.lock().unwrap().take().unwrap()
            } else {
                store.session().unwrap()
            };
            let mut out = ReadBuf::new();
            for i in 0..30u32 {
                let k = format!("{c}:{i}");
                s.put(k.as_bytes(), &i.to_le_bytes()).unwrap();
                assert!(s.get(k.as_bytes(), &mut out).unwrap(), "{name}: {k}");
                assert_eq!(&out[..], i.to_le_bytes(), "{name}: {k}");
            }
        })
        .unwrap();
        let stats = store.stats();
        let stat = |k: &str| stats.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        assert_eq!(stat("reconnects"), Some(0.0), "{name}: {stats:?}");
        assert!(stat("threads_connected").is_some_and(|n| n >= 1.0), "{name}: {stats:?}");
        store.close().unwrap();
        (info.storage.server().unwrap().remove)(&options, &ns).unwrap();
    }
}

#[test]
fn a_server_stopped_mid_run_fails_both_engines_with_counted_errors_on_time() {
    let installed =
        Path::new("/usr/sbin/mariadbd").exists() && Path::new("/usr/lib/mysql/plugin/ha_rocksdb.so").exists();
    if !installed && !servers_required() {
        eprintln!("mariadb-server or mariadb-plugin-rocksdb is not installed (scripts/servers installs them): skipped");
        return;
    }
    // A private server: stopping it disturbs no other test.
    let server = PrivateServer::start("mariadb");
    let url = &server.url;
    const SECS: f64 = 4.0;
    let (innodb_url, rocks_url) = (format!("mariadb.url={url}"), format!("myrocks.url={url}"));
    let dir = tempfile::tempdir().unwrap();
    let (timeline, report) = timeline_report(dir.path());
    let child = spawn_kvmark(&[
        "--backend",
        "mariadb,myrocks",
        "--engine-opt",
        &innodb_url,
        "--engine-opt",
        &rocks_url,
        "--engine-opt",
        "mariadb.timeout=1s",
        "--engine-opt",
        "myrocks.timeout=1s",
        "--threads",
        "2",
        "--items",
        "300",
        "--secs",
        "4",
        "--timeline",
        "0.2",
        "--report",
        &report,
        &bundled("mixed.lua"),
    ]);
    // Inside mariadb's timed phase, however long a loaded machine takes to start and
    // load; myrocks then finds no server at all. The end is timed from the stop.
    wait_for("a second of mariadb's timed phase", || timed_for(&timeline, 1.0));
    let (o, took) = server.stop_awaiting(child);
    assert_exit(&o, 1);
    let out = stdout(&o);
    let counted: u64 = out
        .lines()
        .filter(|l| l.starts_with("errors: ") && l.contains("(engine mariadb: "))
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum();
    assert!(counted > 0, "no counted mariadb errors\n{out}");
    for name in ["mariadb", "myrocks"] {
        let failed = out
            .lines()
            .find(|l| l.starts_with(&format!("FAILED: mixed {name} t2 b1: ")))
            .unwrap_or_else(|| panic!("{name} did not fail\n{out}"));
        assert!(failed.contains(&format!("engine {name}")), "{failed}");
    }
    // The rest of the budget, one timeout for an operation caught by the stop, and a
    // margin for myrocks' open failing at once.
    assert!(took < SECS + 1.0 + 6.0, "took {took:.1} s\n{out}");
}

/// Runs kvmark on both engines with `url` (the engine's name in place of ENGINE) and
/// the extra per-engine options `options` (KEY=VALUE), then `rest`.
fn run_both(url: &str, options: &[&str], rest: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = vec!["--backend".into(), "mariadb,myrocks".into()];
    for (name, _) in ENGINES {
        for opt in std::iter::once(format!("url={url}")).chain(options.iter().map(|o| o.to_string())) {
            args.push("--engine-opt".into());
            args.push(format!("{name}.{}", opt.replace("ENGINE", name)));
        }
    }
    args.extend(rest.iter().map(|a| a.to_string()));
    kvmark(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn a_server_that_never_answers_fails_each_engine_within_its_timeout() {
    // Accepts connections and never sends the greeting.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || listener.incoming().take(16).collect::<Vec<_>>());
    let began = Instant::now();
    let o = run_both(
        &format!("mariadb://kvmark@127.0.0.1:{port}/kvmark"),
        &["timeout=300ms"],
        &["--ops", "100", &bundled("mixed.lua")],
    );
    let took = began.elapsed();
    assert_exit(&o, 1);
    let out = stdout(&o);
    let failures: Vec<&str> = out.lines().filter(|l| l.starts_with("FAILED: mixed ")).collect();
    for (name, _) in ENGINES {
        let said = format!("engine {name}: ");
        assert!(
            failures
                .iter()
                .any(|l| l.contains(&said) && l.contains("no reply within the timeout of 300ms")),
            "{name}: {out}"
        );
    }
    assert!(took < Duration::from_secs(8), "took {took:?}");
    drop(held);
}

#[test]
fn passwords_in_the_url_are_masked_and_bad_urls_refused_by_name() {
    const SECRET: &str = "maria-secret-pw";
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    // Each engine's user is its name, so the masked URLs tell the engines apart.
    let o = run_both(
        &format!("mariadb://ENGINE:{SECRET}@127.0.0.1:1/db"),
        &[],
        &[
            "--ops",
            "10",
            "--report-dir",
            report.to_str().unwrap(),
            &bundled("mixed.lua"),
        ],
    );
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    let shown = format!("{}{}", stdout(&o), stderr(&o));
    for (name, _) in ENGINES {
        assert!(
            shown.contains(&format!("mariadb://{name}:***@127.0.0.1:1/db")),
            "{shown}"
        );
    }
    assert!(!shown.contains(SECRET), "{shown}");
    let mut files = vec![report.clone()];
    let mut seen = 0;
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            seen += 1;
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            assert!(!text.contains(SECRET), "{} shows the password", p.display());
        }
    }
    assert!(seen > 0, "no report files");
    // The default from the environment, as `kvmark engines` lists it.
    let listing = kvmark_env(
        &[("KVMARK_MARIADB_URL", &format!("mariadb://u:{SECRET}@127.0.0.1:3399/d"))],
        &["engines"],
    );
    let listing = stdout(&listing);
    assert!(listing.contains("mariadb://u:***@127.0.0.1:3399/d"), "{listing}");
    assert!(!listing.contains(SECRET), "{listing}");
    // A URL of another scheme is refused before anything runs, naming the option.
    let o = kvmark(&[
        "--backend",
        "myrocks",
        "--engine-opt",
        "myrocks.url=postgres://kvmark@127.0.0.1/kvmark",
        "--ops",
        "10",
        &bundled("mixed.lua"),
    ]);
    assert_ne!(o.status.code(), Some(0));
    let err = stderr(&o);
    assert!(
        err.contains("myrocks") && err.contains("url") && err.contains("mariadb://"),
        "{err}"
    );
}
