//! `--pipeline`: requests in flight on each connection, a grid axis like
//! `--connections`. Checked through the real binary: the depths the plan refuses
//! (0 anywhere, above 1 with an engine that cannot pipeline, each named by flag or
//! config line and the engine), and that an explicit depth of 1 runs and is reported
//! in every file of the report directory. Runs at depths above 1 need a server engine
//! that pipelines and are tested with it.

mod common;

use common::parse::{files_in, read_tsv};
use common::*;

/// The engines this build can pipeline requests on, as the refusal lists them.
fn pipelining_engines() -> String {
    let can: Vec<&str> = kvmark::engine::registry()
        .iter()
        .filter(|e| e.pipelines())
        .map(|e| e.name)
        .collect();
    match can.is_empty() {
        true => "none compiled in".to_string(),
        false => can.join(", "),
    }
}

/// Runs kvmark with `args`, expects the usage exit (2) with `msg` on stderr and
/// nothing run.
fn refused(args: &[&str], msg: &str) {
    let out = kvmark(args);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains(msg), "{args:?}: {}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{args:?}: nothing runs: {}", stdout(&out));
}

#[test]
fn a_depth_of_0_is_refused_naming_the_flag() {
    let null = bundled("null.lua");
    for list in ["0", "1,0"] {
        refused(
            &["--pipeline", list, &null],
            "--pipeline needs positive integers, for example --pipeline 1,2,4",
        );
    }
    refused(&["--pipeline", "x", &null], "--pipeline");
}

#[test]
fn an_engine_that_cannot_pipeline_refuses_a_depth_above_1() {
    let null = bundled("null.lua");
    let can = pipelining_engines();
    // The default engine, in-process.
    refused(
        &["--pipeline", "4", &null],
        &format!("error: --pipeline 4: engine skiplist cannot pipeline requests (engines that can: {can})"),
    );
    // A sweep refuses its first depth above 1.
    refused(
        &["--pipeline", "1,2,8", &null],
        &format!("--pipeline 2: engine skiplist cannot pipeline requests (engines that can: {can})"),
    );
    refused(
        &["--backend", "sim", "--pipeline", "16", &null],
        &format!("--pipeline 16: engine sim cannot pipeline requests (engines that can: {can})"),
    );
}

#[cfg(feature = "rocksdb")]
#[test]
fn an_embedded_engine_on_disk_is_refused_before_anything_opens() {
    // Refused before the missing --data-dir is noticed: nothing is created anywhere.
    refused(
        &["--backend", "rocksdb", "--pipeline", "16", &bundled("null.lua")],
        &format!(
            "--pipeline 16: engine rocksdb cannot pipeline requests (engines that can: {})",
            pipelining_engines()
        ),
    );
}

#[cfg(feature = "redis")]
#[test]
fn one_engine_that_cannot_pipeline_refuses_the_whole_plan() {
    // No server is needed: the plan refuses before any store opens.
    let null = bundled("null.lua");
    refused(
        &["--backend", "redis,skiplist", "--pipeline", "8", &null],
        "--pipeline 8: engine skiplist cannot pipeline requests (engines that can: redis",
    );
    // Every worker of a thread is a coroutine with its own stack, pipelined or not.
    refused(
        &[
            "--backend",
            "redis",
            "--connections",
            "1,64",
            "--pipeline",
            "128",
            &null,
        ],
        "--pipeline 128: with --connections 64, 8192 workers per thread; at most 4096 \
         (connections x pipeline, each with a 1 MiB stack)",
    );
}

#[test]
fn a_config_file_depth_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let null = bundled("null.lua");
    let cases = [
        (
            "[bench]\nops = 5\npipeline = 0\n",
            "3: pipeline: '0' is not a positive whole number".to_string(),
        ),
        (
            "[bench]\n\npipeline = 1, 4\n",
            format!(
                "3: pipeline: engine skiplist cannot pipeline requests (engines that can: {})",
                pipelining_engines()
            ),
        ),
    ];
    for (i, (text, msg)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.cnf"));
        std::fs::write(&path, text).unwrap();
        refused(
            &["--config", path.to_str().unwrap(), &null],
            &format!("{}:{msg}", path.display()),
        );
    }
    // The command line replaces the file's depth.
    let path = dir.path().join("bad0.cnf");
    let out = kvmark(&["--config", path.to_str().unwrap(), "--pipeline", "1", &null]);
    assert_exit(&out, 0);
}

#[test]
fn an_explicit_depth_of_1_runs_and_every_report_says_so() {
    let parent = tempfile::tempdir().unwrap();
    let out = kvmark(&[
        "--pipeline",
        "1",
        "--connections",
        "2",
        "--ops",
        "400",
        "--timeline",
        "0.05",
        "--report-dir",
        parent.path().to_str().unwrap(),
        &bundled("null.lua"),
    ]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    // Like connections, a depth of 1 is left out of the console's coordinates.
    assert!(text.contains("threads=1 connections=2 batch=1"), "{text}");
    assert!(!text.contains("pipeline"), "{text}");
    assert_eq!(op_count(&text, "get"), Some(400), "{text}");
    let report = files_in(parent.path()).pop().expect("a report directory");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["run"]["pipeline"], serde_json::json!([1]));
    assert_eq!(json["points"][0]["pipeline"], 1);
    assert_eq!(json["points"][0]["connections"], 2);

    let tsv = read_tsv(&report.join("points.tsv"));
    let get = tsv.rows.iter().find(|r| r["op"] == "get").expect("a get row");
    assert_eq!((get["connections"].as_str(), get["pipeline"].as_str()), ("2", "1"));

    let timeline = read_tsv(&report.join("timeline.tsv"));
    assert!(!timeline.rows.is_empty(), "samples were taken");
    assert!(timeline.rows.iter().all(|r| r["pipeline"] == "1"));

    let hlogs = files_in(&report.join("hdr"));
    let log = std::fs::read_to_string(&hlogs[0]).unwrap();
    assert!(log.contains("threads=1 connections=2 pipeline=1 batch=1"), "{log}");

    let replay = std::fs::read_to_string(report.join("replay.cnf")).unwrap();
    assert!(replay.lines().any(|l| l == "pipeline = 1"), "{replay}");
}

/// Engine `name`'s indented lines in `kvmark engines`.
fn listing_of(text: &str, name: &str) -> String {
    text.lines()
        .skip_while(|l| *l != name)
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_engine_list_says_which_engines_pipeline() {
    let out = kvmark(&["engines"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        listing_of(&text, "skiplist").contains("  pipeline: one request at a time per session (--pipeline 1 only)"),
        "{text}"
    );
    for e in kvmark::engine::registry().iter().filter(|e| e.pipelines()) {
        assert!(
            listing_of(&text, e.name)
                .contains("  pipeline: --pipeline N keeps up to N requests in flight on each connection"),
            "{}: {text}",
            e.name
        );
    }
}
