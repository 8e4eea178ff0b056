//! `kvmark plot` on result directories written by real runs
//! (tests/fixtures/plot), checked against the data in them.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::figs::{figures, fixture, manifest, plot, png_size};
use common::{assert_exit, bundled, kvmark, parse, stderr};
use serde_json::{Value, json};

fn figure<'a>(m: &'a Value, file_stem: &str) -> &'a Value {
    figures(m)
        .iter()
        .find(|f| f["file"].as_str().unwrap().starts_with(&format!("{file_stem}.")))
        .unwrap_or_else(|| panic!("no figure {file_stem} in {}", serde_json::to_string_pretty(m).unwrap()))
}

fn panel_metrics(f: &Value) -> BTreeSet<String> {
    f["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metric"].as_str().unwrap_or("").to_string())
        .collect()
}

fn families(m: &Value) -> BTreeSet<String> {
    figures(m)
        .iter()
        .map(|f| f["family"].as_str().unwrap().to_string())
        .collect()
}

/// Checks a figure file is a real image of its format and not a trivial one.
fn check_file(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // A figure has axes, ticks, labels and a legend: never a few bytes.
    assert!(bytes.len() > 3_000, "{} is only {} bytes", path.display(), bytes.len());
    match path.extension().and_then(|e| e.to_str()) {
        Some("png") => {
            let (w, h) = png_size(&bytes);
            assert!(w >= 540 && h >= 300, "{}: {w}x{h}", path.display());
            let img = resvg::tiny_skia::Pixmap::decode_png(&bytes).unwrap();
            assert_eq!((img.width(), img.height()), (w, h));
        }
        Some("svg") => {
            let text = String::from_utf8(bytes).unwrap();
            assert!(
                text.starts_with("<svg") && text.trim_end().ends_with("</svg>"),
                "{}",
                path.display()
            );
            assert!(text.matches("<text").count() > 10, "{}: labelled axes", path.display());
        }
        Some("pdf") => {
            assert_eq!(&bytes[..5], b"%PDF-", "{}", path.display());
            let tail = String::from_utf8_lossy(&bytes[bytes.len() - 32..]).into_owned();
            assert!(tail.contains("%%EOF"), "{}: {tail}", path.display());
        }
        other => panic!("unexpected figure file {other:?}"),
    }
}

/// (engine, metric) pairs of a timeline.tsv.
fn timeline_metrics(dir: &Path) -> BTreeSet<(String, String)> {
    parse::read_tsv(&dir.join("timeline.tsv"))
        .rows
        .iter()
        .map(|r| (r["engine"].clone(), r["metric"].clone()))
        .collect()
}

fn op_kinds(dir: &Path) -> BTreeSet<String> {
    parse::read_tsv(&dir.join("points.tsv"))
        .rows
        .iter()
        .map(|r| format!("{}.{}", r["op"], r["latency"]))
        .collect()
}

#[test]
fn every_figure_of_a_closed_loop_run_matches_its_data() {
    let src = fixture("closed");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("figs");
    let o = plot(&[&src], &out, &[]);
    assert_exit(&o, 0);
    let m = manifest(&out);
    assert_eq!(
        families(&m),
        [
            "engine",
            "heatmap",
            "ingest",
            "latency",
            "percentiles",
            "scaling",
            "system",
            "throughput",
            "timeline"
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        "no batch, rate or epoch figures without such data"
    );
    for f in figures(&m) {
        check_file(&out.join(f["file"].as_str().unwrap()));
        assert!(!f["panels"].as_array().unwrap().is_empty(), "{f}");
    }
    let listed: BTreeSet<String> = figures(&m)
        .iter()
        .map(|f| f["file"].as_str().unwrap().to_string())
        .collect();
    let on_disk: BTreeSet<String> = common::parse::files_in(&out)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".png"))
        .collect();
    assert_eq!(listed, on_disk);

    // The system figure: one panel per system metric recorded, no more, no less.
    let metrics = timeline_metrics(&src);
    let system: BTreeSet<String> = metrics
        .iter()
        .filter(|(_, m)| ["sys.", "proc.", "store."].iter().any(|p| m.starts_with(p)))
        .map(|(_, m)| m.clone())
        .collect();
    assert!(
        system.contains("sys.cpu_pct") && system.contains("proc.rss_bytes"),
        "{system:?}"
    );
    assert_eq!(panel_metrics(figure(&m, "system")), system);
    // One engine figure per engine, a panel for each of its metrics.
    let mut per_engine: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (e, metric) in metrics.iter().filter(|(_, m)| m.starts_with("engine.")) {
        per_engine.entry(e.clone()).or_default().insert(metric.clone());
    }
    assert_eq!(per_engine.len(), 2, "{per_engine:?}");
    for (engine, metrics) in &per_engine {
        assert_eq!(&panel_metrics(figure(&m, &format!("engine-{engine}"))), metrics);
    }
    // Latency: a panel per operation kind and latency set in points.tsv.
    let kinds = op_kinds(&src);
    assert_eq!(panel_metrics(figure(&m, "latency-mixed")), kinds);
    // Each grid cell's timeline: throughput and each kind's interval percentiles.
    for cell in ["t1", "t2"] {
        let t = figure(&m, &format!("timeline-mixed-{cell}"));
        let want: BTreeSet<String> = std::iter::once("wu_per_s".to_string())
            .chain(kinds.iter().map(|k| format!("op.{}", k.trim_end_matches(".service"))))
            .collect();
        assert_eq!(panel_metrics(t), want);
        for p in t["panels"].as_array().unwrap() {
            let series: Vec<&str> = p["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            assert!(series.iter().any(|s| s.starts_with("skiplist")), "{series:?}");
            assert!(series.iter().any(|s| s.starts_with("sim")), "{series:?}");
        }
    }
    // The percentile spectrum: a panel per histogram tag of the point's log.
    let hlog = parse::hlog_by_tag(&src.join("hdr/002-mixed-skiplist-t2-b1.hlog"));
    let tags: BTreeSet<String> = hlog.keys().cloned().collect();
    assert_eq!(panel_metrics(figure(&m, "percentiles-mixed-t2")), tags);
    // The heatmap: a panel per tag, a column per interval, and every call of the
    // log in exactly one cell.
    let heat = figure(&m, "heatmap-mixed-t2-skiplist");
    assert_eq!(panel_metrics(heat), tags);
    for p in heat["panels"].as_array().unwrap() {
        let (hist, intervals) = &hlog[p["metric"].as_str().unwrap()];
        assert_eq!(p["heatmap"]["calls"], json!(hist.len()), "{p}");
        assert_eq!(p["heatmap"]["columns"], json!(intervals), "{p}");
        assert!(p["heatmap"]["cells"].as_u64().unwrap() >= *intervals as u64, "{p}");
    }
    // Throughput and scaling: one series per engine; repeats give error bars.
    let tput = figure(&m, "throughput-mixed");
    assert_eq!(tput["panels"][0]["series"], json!(["skiplist", "sim"]));
    assert_eq!(
        panel_metrics(figure(&m, "scaling-mixed-b1")),
        ["wu_per_s".to_string()].into()
    );
    assert_eq!(
        figure(&m, "ingest-mixed")["panels"].as_array().unwrap().len(),
        2,
        "seeds with 1 and 2 loaders"
    );
}

#[test]
fn an_open_loop_sweep_gets_rate_and_batch_figures_in_every_format() {
    let src = fixture("open");
    let tmp = tempfile::tempdir().unwrap();
    for format in ["svg", "pdf"] {
        let out = tmp.path().join(format);
        let o = plot(&[&src], &out, &["--format", format]);
        assert_exit(&o, 0);
        let m = manifest(&out);
        assert_eq!(m["format"], format);
        for f in figures(&m) {
            let file = f["file"].as_str().unwrap();
            assert!(file.ends_with(&format!(".{format}")), "{file}");
            check_file(&out.join(file));
        }
        let fams = families(&m);
        assert!(fams.contains("rate") && fams.contains("batch"), "{fams:?}");
        // Latency against target rate: the achieved rate, then each kind's
        // response time (an open loop measures it).
        let rate = figure(&m, "rate-batch-t1-b8");
        let mut want: BTreeSet<String> = op_kinds(&src)
            .into_iter()
            .filter(|k| k.ends_with(".response"))
            .collect();
        want.insert("achieved".into());
        assert_eq!(panel_metrics(rate), want);
        // Batch amortization: both throughputs against the batch size.
        let batch = figure(&m, "batch-batch-t1-r8000");
        assert_eq!(
            panel_metrics(batch),
            ["ops_per_s".to_string(), "wu_per_s".to_string()].into()
        );
    }
}

#[test]
fn overlaid_directories_are_told_apart_and_palettes_recolour() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("monday"), tmp.path().join("tuesday"));
    for d in [&a, &b] {
        copy_dir(&fixture("closed"), d);
    }
    let palette = tmp.path().join("colours.txt");
    std::fs::write(&palette, "; mine\nskiplist = #00ff00\n").unwrap();
    let out = tmp.path().join("figs");
    let o = plot(
        &[&a, &b],
        &out,
        &["--format", "svg", "--palette", palette.to_str().unwrap()],
    );
    assert_exit(&o, 0);
    let m = manifest(&out);
    assert_eq!(
        figure(&m, "throughput-mixed")["panels"][0]["series"],
        json!([
            "skiplist (monday)",
            "sim (monday)",
            "skiplist (tuesday)",
            "sim (tuesday)"
        ])
    );
    let svg = std::fs::read_to_string(out.join("scaling-mixed-b1.svg"))
        .unwrap()
        .to_lowercase();
    assert!(svg.contains("#00ff00"), "the palette file's colour is used");
    assert!(svg.contains("skiplist (tuesday)"));

    // A parent of result directories plots all of them.
    let out2 = tmp.path().join("figs2");
    assert_exit(&plot(&[tmp.path()], &out2, &[]), 0);
    assert_eq!(manifest(&out2)["dirs"].as_array().unwrap().len(), 2);

    // A bad palette line is a usage error naming the file and line.
    std::fs::write(&palette, "skiplist = #00ff00\nsim = grey\n").unwrap();
    let o = plot(&[&a], &out, &["--palette", palette.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("colours.txt:2: 'grey' is not a colour"),
        "{}",
        stderr(&o)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_run_that_died_is_plotted_as_far_as_it_got() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("died");
    copy_dir(&fixture("closed"), &dir);
    // The run died: no results.json, the last rows of the TSVs cut mid-line, one
    // histogram log cut short and another never written.
    std::fs::remove_file(dir.join("results.json")).unwrap();
    for f in ["points.tsv", "timeline.tsv"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        std::fs::write(dir.join(f), &text[..text.len() - 40]).unwrap();
    }
    let hlog = dir.join("hdr/004-mixed-sim-t2-b1.hlog");
    let bytes = std::fs::read(&hlog).unwrap();
    std::fs::write(&hlog, &bytes[..bytes.len() * 2 / 3]).unwrap();
    std::fs::remove_file(dir.join("hdr/003-mixed-sim-t1-b1.hlog")).unwrap();
    let out = tmp.path().join("figs");
    let o = plot(&[&dir], &out, &["--html"]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    for named in ["results.json", "points.tsv", "timeline.tsv", "004-mixed-sim-t2-b1.hlog"] {
        assert!(err.contains(named), "the message names {named}:\n{err}");
    }
    assert!(err.contains("plotted what is there"), "{err}");
    // What is there is plotted: points from points.tsv, the timeline, the logs left.
    let m = manifest(&out);
    assert!(!m["notes"].as_array().unwrap().is_empty());
    for stem in [
        "throughput-mixed",
        "latency-mixed",
        "system",
        "timeline-mixed-t1",
        "percentiles-mixed-t1",
    ] {
        check_file(&out.join(format!("{stem}.png")));
        figure(&m, stem);
    }
    // The cut point row is left out; the finished points remain.
    let tput = figure(&m, "throughput-mixed");
    assert_eq!(tput["panels"][0]["series"], json!(["skiplist", "sim"]));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("Incomplete input") && page.contains("results.json"));
}

#[test]
fn bad_arguments_and_empty_directories_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("figs");
    let o = plot(&[&tmp.path().join("nosuch")], &out, &[]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("nosuch: not a directory"), "{}", stderr(&o));
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = plot(&[&empty], &out, &[]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("no result files here"), "{}", stderr(&o));
    let o = plot(&[&fixture("closed")], &out, &["--format", "gif"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--format gif: give png, svg or pdf"),
        "{}",
        stderr(&o)
    );
    // Only a damaged results.json: nothing to plot, and the message says why.
    let junk = tmp.path().join("junk");
    std::fs::create_dir(&junk).unwrap();
    std::fs::write(junk.join("results.json"), "{\"points\": [").unwrap();
    let o = plot(&[&junk], &out, &[]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains("nothing to plot") && err.contains("results.json: not valid JSON"),
        "{err}"
    );
}

#[test]
fn epochs_of_growing_values_runs_are_drawn_per_mode() {
    // Points carrying the epoch contract of issue 8, written by hand.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("grow");
    std::fs::create_dir(&dir).unwrap();
    let mut points = Vec::new();
    for mode in ["main", "clean"] {
        for n in 1..=4u64 {
            let f = n as f64;
            let iv = |mean: f64, ci: f64| json!({ "mean": mean, "ci95": ci, "n": 3 });
            points.push(json!({
                "workload": "grow", "engine": "skiplist", "engine_version": "x", "threads": 1, "batch": 1,
                "status": "ok", "wu_per_s": { "median": 1000.0 / f, "min": 900.0 / f, "max": 1100.0 / f },
                "ops_per_s": { "median": 1000.0 / f, "min": 900.0 / f, "max": 1100.0 / f },
                "ops": [], "repeats": [{}, {}, {}],
                "epoch": {
                    "number": n, "mode": mode, "records": 1000 * n, "volume_bytes": 1e6 * f, "skipped_extends": 0,
                    "value_sizes": { "count": 1000, "mean": 100.0 * f, "min": 1, "max": 400, "p50": 90, "p90": 200,
                                     "p99": 390, "bin_bytes": 100, "bins": [[0, 10], [100, 20]] },
                    "intervals": {
                        "wu_per_s": iv(1000.0 / f, 50.0), "ops_per_s": iv(2000.0 / f, 80.0),
                        "ops": { "get": { "mean_ns": iv(500.0 * f, 20.0), "p50_ns": iv(400.0 * f, 10.0),
                                          "p99_ns": iv(2000.0 * f, 300.0), "p999_ns": iv(5000.0, 0.0),
                                          "max_ns": iv(9000.0, 0.0) } }
                    }
                }
            }));
        }
    }
    let doc = json!({ "kvmark": { "version": "0.1.0", "format": 1 }, "run": {}, "probes": {}, "points": points });
    std::fs::write(dir.join("results.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let out = tmp.path().join("figs");
    let o = plot(&[&dir], &out, &["--html"]);
    // No timeline or histogram logs: the run wrote only results.json.
    assert_exit(&o, 1);
    let m = manifest(&out);
    let f = figure(&m, "epochs-grow-t1");
    assert_eq!(
        panel_metrics(f),
        ["wu_per_s", "ops_per_s", "get.mean_ns", "get.p99_ns", "volume_bytes"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
    for p in f["panels"].as_array().unwrap() {
        assert_eq!(
            p["series"],
            json!(["skiplist main", "skiplist clean"]),
            "one line per mode"
        );
    }
    check_file(&out.join("epochs-grow-t1.png"));
    assert!(
        !families(&m).contains("throughput"),
        "epoch points are drawn per epoch, not as grid cells"
    );
}

#[test]
fn a_report_dir_run_writes_the_report_page_and_with_auto_plot_the_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let base = [
        "--secs",
        "0.3",
        "--timeline",
        "0.1",
        "--items",
        "2000",
        "--probe",
        "none",
    ];
    let run = |dir: &Path, extra: &[&str]| {
        let mut args: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        args.extend(["--report-dir".to_string(), dir.display().to_string()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(bundled("mixed.lua"));
        let o = kvmark(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_exit(&o, 0);
        common::parse::files_in(dir).pop().expect("one run directory")
    };
    let plain = run(&tmp.path().join("plain"), &[]);
    assert!(plain.join("report.html").is_file());
    assert!(!plain.join("figures").exists(), "figures only with --auto-plot");
    let auto = run(&tmp.path().join("auto"), &["--auto-plot"]);
    let m = manifest(&auto.join("figures"));
    for f in figures(&m) {
        check_file(&auto.join("figures").join(f["file"].as_str().unwrap()));
    }
    assert!(families(&m).contains("timeline"));
    // auto_plot in a config file, switched off again on the command line.
    let cnf = tmp.path().join("run.cnf");
    std::fs::write(&cnf, "[bench]\nauto_plot = true\n").unwrap();
    let off = run(
        &tmp.path().join("off"),
        &["--config", cnf.to_str().unwrap(), "--no-auto-plot"],
    );
    assert!(!off.join("figures").exists());
    let on = run(&tmp.path().join("on"), &["--config", cnf.to_str().unwrap()]);
    assert!(on.join("figures/figures.json").is_file());
    let replay = std::fs::read_to_string(on.join("replay.cnf")).unwrap();
    assert!(replay.contains("auto_plot = true"), "{replay}");
}
