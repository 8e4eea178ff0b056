//! report.html in headless Chromium: it renders every chart offline, with no console
//! error and no network request.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use base64::Engine as _;
use common::assert_exit;
use common::cdp::Browser;
use common::figs::{figures, fixture, manifest, plot, png_size};
use serde_json::{Value, json};

/// Counts pixels that are not (nearly) white, and distinct colours.
fn ink(png: &[u8]) -> (f64, usize) {
    let img = resvg::tiny_skia::Pixmap::decode_png(png).unwrap();
    let mut colours = BTreeSet::new();
    let mut inked = 0usize;
    for p in img.pixels() {
        let (r, g, b) = (p.red(), p.green(), p.blue());
        if colours.len() < 1000 {
            colours.insert((r, g, b));
        }
        if u16::from(r) + u16::from(g) + u16::from(b) < 720 {
            inked += 1;
        }
    }
    (inked as f64 / img.pixels().len() as f64, colours.len())
}

#[test]
fn the_report_page_works_offline_in_headless_chromium() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("figs");
    assert_exit(&plot(&[&fixture("closed")], &out, &["--html"]), 0);
    let m = manifest(&out);
    let panels: usize = figures(&m).iter().map(|f| f["panels"].as_array().unwrap().len()).sum();
    let page = out.join("report.html");
    let url = format!("file://{}", page.display());

    let mut b = Browser::launch().unwrap_or_else(|e| panic!("{e}"));
    let target = b
        .call(None, "Target.createTarget", json!({ "url": "about:blank" }))
        .unwrap();
    let attached = b
        .call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        )
        .unwrap();
    let s = attached["sessionId"].as_str().unwrap().to_string();
    for method in ["Runtime.enable", "Log.enable", "Network.enable", "Page.enable"] {
        b.call(Some(&s), method, json!({})).unwrap();
    }
    b.call(
        Some(&s),
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false }),
    )
    .unwrap();
    b.call(Some(&s), "Page.navigate", json!({ "url": url })).unwrap();
    b.wait_event("Page.loadEventFired", Duration::from_secs(60)).unwrap();

    let status = b.eval(&s, "JSON.stringify(window.kvmarkReport)").unwrap();
    let status: Value = serde_json::from_str(status.as_str().unwrap()).unwrap();
    assert_eq!(status["errors"], json!([]), "{status}");
    assert_eq!(
        status["panels"],
        json!(panels),
        "every panel of figures.json is on the page"
    );
    let charts = b.eval(&s, "document.querySelectorAll('.uplot').length").unwrap();
    let empty = b.eval(&s, "document.querySelectorAll('.panel .empty').length").unwrap();
    assert_eq!(
        charts.as_u64().unwrap() + empty.as_u64().unwrap(),
        panels as u64,
        "a chart (or a no-data note) per panel"
    );
    assert!(
        charts.as_u64().unwrap() >= panels as u64 - 2,
        "{charts} charts of {panels} panels"
    );
    // Every heatmap panel is a chart.
    let heat_panels: usize = figures(&m)
        .iter()
        .filter(|f| f["family"] == "heatmap")
        .map(|f| f["panels"].as_array().unwrap().len())
        .sum();
    assert!(heat_panels > 0, "the fixture's logs give heatmaps");
    let heat_charts = b
        .eval(
            &s,
            "document.querySelectorAll('section[data-family=heatmap] .uplot').length",
        )
        .unwrap();
    assert_eq!(heat_charts.as_u64().unwrap(), heat_panels as u64);
    // And its cells are painted: warm pixels (red well above green) in its canvas.
    let warm = b
        .eval(
            &s,
            "(function () { var c = document.querySelector('section[data-family=heatmap] .uplot canvas'); \
             var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0; \
             for (var i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] > d[i + 1] + 40) n++; \
             return n / (c.width * c.height); })()",
        )
        .unwrap();
    assert!(
        warm.as_f64().unwrap() > 0.02,
        "the first heatmap is not painted: {warm}"
    );
    let tables = b
        .eval(&s, "document.querySelectorAll('table.grid tbody tr').length")
        .unwrap();
    assert!(tables.as_u64().unwrap() >= 4, "the summary tables list the points");

    // The engine toggle hides that engine's series in every chart.
    let before = b
        .eval(&s, "window.kvmarkReport.visibleSeries()")
        .unwrap()
        .as_u64()
        .unwrap();
    b.eval(&s, "document.querySelector('#engines input').click()").unwrap();
    let after = b
        .eval(&s, "window.kvmarkReport.visibleSeries()")
        .unwrap()
        .as_u64()
        .unwrap();
    assert!(after > 0 && after < before, "toggling an engine: {before} -> {after}");
    b.eval(&s, "document.querySelector('#engines input').click()").unwrap();

    // Look at the charts, not only the tables at the top.
    b.eval(&s, "document.getElementById('charts').scrollIntoView()")
        .unwrap();
    let shot = b
        .call(Some(&s), "Page.captureScreenshot", json!({ "format": "png" }))
        .unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    let (w, h) = png_size(&png);
    assert_eq!((w, h), (1400, 1000));
    let (inked, colours) = ink(&png);
    assert!(
        inked > 0.03 && colours > 20,
        "the screenshot is blank: {inked:.3} inked, {colours} colours"
    );

    // Nothing went wrong and nothing was fetched but the page itself.
    let mut problems = Vec::new();
    for e in &b.events {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or("") {
            "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "assert" => problems.push(e.to_string()),
            "Runtime.exceptionThrown" => problems.push(e.to_string()),
            "Log.entryAdded" if p["entry"]["level"] == "error" => problems.push(e.to_string()),
            "Network.requestWillBeSent" if p["request"]["url"] != json!(url) => problems.push(e.to_string()),
            "Network.loadingFailed" => problems.push(e.to_string()),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "console errors or network requests: {problems:#?}");
    assert!(
        b.events.iter().any(|e| e["method"] == "Network.requestWillBeSent"),
        "network events are watched"
    );
}
