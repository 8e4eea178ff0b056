//! The `mongodb` engine against the server the environment names (KVMARK_MONGODB_URL;
//! `make test` starts FerretDB through scripts/with-servers): a workload through the
//! binary with its counts, the server's figures in the timeline, the collection
//! removed after a run and kept with `--keep-data`, the documents as the engine
//! writes them (hex `_id`, value pieces), and a server stopped in the middle of a run (a private FerretDB of the
//! test's own): counted errors, a message naming the engine, exit status 1, an end on
//! time. Without a server a dev run skips these tests saying why, unless
//! KVMARK_REQUIRE_SERVERS=1, which makes that a failure. Sessions inside the
//! connections of one thread are tested with the other server engines' in servers.rs.

#![cfg(feature = "mongodb")]

mod common;

use std::time::Duration;

use common::servers::{PrivateServer, counted_errors};
use common::*;
use kvmark::engine::inflight::block_on;
use kvmark::engine::storage::{Reach, fresh_namespace, reach, servers_required};
use kvmark::engine::{EngineInfo, EngineOptions, OpenRequest, ReadBuf, Rows, StorePlace};
use mongodb::bson::{Document, doc};

const ENGINE: &str = "mongodb";

/// The engine, if its server answers; None (said on stderr) when the test should skip.
fn reachable() -> Option<&'static EngineInfo> {
    let info = kvmark::engine::find(ENGINE).expect("the engine is compiled in");
    match reach(info, &EngineOptions::new(), servers_required()) {
        Reach::Ready => Some(info),
        Reach::Skip(note) => {
            eprintln!("{note}");
            None
        }
        Reach::Fail(why) => panic!("{why}"),
    }
}

fn url() -> String {
    std::env::var(kvmark::engine::mongodb::URL_ENV).unwrap_or_else(|_| "mongodb://127.0.0.1:27017".into())
}

/// Runs `f` with a driver client of the test's own on the server, in database kvmark.
fn with_db<T>(f: impl AsyncFnOnce(mongodb::Database) -> T) -> T {
    block_on(async {
        let client = mongodb::Client::with_uri_str(url()).await.unwrap();
        let out = f(client.database("kvmark")).await;
        client.shutdown().immediate(true).await;
        out
    })
}

/// The collections the kvmark process `pid` made.
fn collections_of(pid: u32) -> Vec<String> {
    let prefix = format!("kvmark_{ENGINE}_{pid}_");
    let mut names = with_db(async |db| db.list_collection_names().await.unwrap());
    names.retain(|n| n.starts_with(&prefix));
    names
}

fn run(args: &[&str]) -> (std::process::Output, u32) {
    let child = spawn_kvmark(args);
    let pid = child.id();
    (child.wait_with_output().expect("wait for kvmark"), pid)
}

#[test]
fn a_workload_runs_reports_the_servers_figures_and_removes_its_collection() {
    if reachable().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (timeline, report) = timeline_report(dir.path());
    let mixed = bundled("mixed.lua");
    let (o, pid) = run(&[
        "--backend",
        ENGINE,
        "--threads",
        "2",
        "--connections",
        "2",
        "--items",
        "300",
        "--ops",
        "600",
        "--timeline",
        "0.1",
        "--report",
        &report,
        &mixed,
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let counts: Vec<u64> = ["put", "get", "del", "range"]
        .iter()
        .map(|op| op_count(&out, op).unwrap_or_else(|| panic!("no {op} row\n{out}")))
        .collect();
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}\n{out}");
    assert_eq!(counts.iter().sum::<u64>(), 600, "{counts:?}\n{out}");
    let tsv = std::fs::read_to_string(&timeline).unwrap();
    for metric in [
        "engine.cmd.find",
        "engine.documents",
        "engine.uptime",
        "engine.reconnects",
    ] {
        assert!(tsv.contains(&format!("\t{metric}\t")), "no {metric} in the timeline");
    }
    assert_eq!(collections_of(pid), Vec::<String>::new(), "collections left behind");

    // --keep-data keeps the collection, and the engine's remove drops it.
    let (o, pid) = run(&[
        "--backend",
        ENGINE,
        "--items",
        "100",
        "--ops",
        "100",
        "--keep-data",
        &mixed,
    ]);
    assert_exit(&o, 0);
    let kept = collections_of(pid);
    assert_eq!(kept.len(), 1, "one store, one collection kept: {kept:?}");
    let info = kvmark::engine::find(ENGINE).unwrap();
    (info.storage.server().unwrap().remove)(&EngineOptions::new(), &kept[0]).unwrap();
    assert_eq!(collections_of(pid), Vec::<String>::new(), "remove left the collection");
}

#[test]
fn documents_hold_hex_ids_and_value_pieces_and_ranges_follow_key_bytes() {
    let Some(info) = reachable() else { return };
    let options = EngineOptions::new();
    let ns = fresh_namespace(ENGINE);
    let store = (info.open)(&OpenRequest::new(StorePlace::Namespace(ns.clone()), &options)).unwrap();
    let mut s = store.session().unwrap();
    // The example: binary _ids "k1", "k2" would not fall in ["a", "z").
    s.put(b"k1", b"one").unwrap();
    s.put(b"k2", b"two").unwrap();
    s.put(b"\xff", b"high").unwrap();
    s.append(b"k2", b"+more").unwrap();
    let mut rows = Rows::default();
    s.range(b"a", b"z", 0, &mut rows).unwrap();
    let keys: Vec<&[u8]> = rows.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, [&b"k1"[..], b"k2"]);
    let mut out = ReadBuf::new();
    assert!(s.get(b"k2", &mut out).unwrap());
    assert_eq!(&out[..], b"two+more");
    let docs: Vec<Document> = with_db(async |db| {
        let mut cursor = db
            .collection::<Document>(&ns)
            .find(doc! {})
            .sort(doc! {"_id": 1})
            .await
            .unwrap();
        let mut docs = Vec::new();
        while cursor.advance().await.unwrap() {
            docs.push(cursor.deserialize_current().unwrap());
        }
        docs
    });
    let ids: Vec<&str> = docs.iter().map(|d| d.get_str("_id").unwrap()).collect();
    assert_eq!(ids, ["6b31", "6b32", "ff"], "hex of k1, k2, 0xff");
    let k2 = &docs[1];
    assert_eq!(k2.get_i64("n").unwrap(), 8, "{k2}");
    assert_eq!(k2.get_array("v").unwrap().len(), 2, "an append adds a piece: {k2}");
    drop(s);
    store.close().unwrap();
    (info.storage.server().unwrap().remove)(&options, &ns).unwrap();
}

#[test]
fn a_server_stopped_mid_run_gives_counted_errors_a_clear_message_and_exit_1_on_time() {
    if reachable().is_none() {
        return;
    }
    const SECS: f64 = 4.0;
    const TIMEOUT: f64 = 1.0;
    // A FerretDB of the test's own (the binary is cached by the shared one's start).
    let server = PrivateServer::start(ENGINE);
    // Stopped a second into the timed phase; the end is timed from the stop.
    let (o, took) = server.stop_mid_run(Duration::from_secs_f64(TIMEOUT), SECS);
    assert_exit(&o, 1);
    let out = stdout(&o);
    assert!(counted_errors(&out, ENGINE) > 0, "no counted errors\n{out}");
    assert!(out.contains("FAILED: mixed mongodb t2 b1: "), "{out}");
    assert!(took < SECS + TIMEOUT + 6.0, "took {took:.1} s\n{out}");
}

#[test]
fn bad_urls_are_refused_naming_the_option_and_passwords_stay_masked() {
    const SECRET: &str = "kvmark-secret-pw";
    let o = kvmark(&[
        "--backend",
        ENGINE,
        "--engine-opt",
        "mongodb.url=mongodb+srv://cluster.example/db",
        "--ops",
        "10",
        &bundled("mixed.lua"),
    ]);
    assert_exit(&o, 2);
    let said = stderr(&o);
    assert!(
        said.contains("engine mongodb: ") && said.contains("url") && said.contains("SRV"),
        "{said}"
    );
    // No server listens on port 1: the run fails, and says where it tried.
    let url = format!("mongodb.url=mongodb://bench:{SECRET}@127.0.0.1:1/db");
    let o = kvmark(&[
        "--backend",
        ENGINE,
        "--engine-opt",
        &url,
        "--ops",
        "10",
        &bundled("mixed.lua"),
    ]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    let shown = format!("{}{}", stdout(&o), stderr(&o));
    assert!(shown.contains("mongodb://bench:***@127.0.0.1:1/db"), "{shown}");
    assert!(!shown.contains(SECRET), "{shown}");
}
