//! `--metrics-listen ADDR`: live metrics for Prometheus while a run goes.
//!
//! A sink like the others: it is fed the sampler's interval samples (from the
//! sampler thread, once per `--timeline` period) and the finished points, and keeps
//! the figures to serve in a small mutex-guarded state. A tiny_http server on its own
//! thread renders that state on each scrape, in the OpenMetrics text format when the
//! scraper asks for it (Prometheus does) and in Prometheus's text format 0.0.4
//! otherwise. Workers are untouched: everything here comes from the sampler, which
//! already merges the workers' interval histograms (promise 1).
//!
//! Latency is served as the last interval's quantiles (a gauge per quantile), not as
//! a Prometheus histogram: a histogram's fixed buckets would round every latency to a
//! bucket edge, while the sampler's interval HdrHistograms give each quantile to
//! three significant digits. The price is that quantiles cannot be aggregated across
//! series or time in PromQL; the exact distributions are in the report's .hlog files.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::{RunInfo, Sink};
use crate::result::{PointResult, RunOutcome};
use crate::run::observer::Sample;

/// The quantiles served per operation kind: (label value, quantile); 1 is the max.
pub const SERVED_QUANTILES: [(&str, f64); 5] =
    [("0.5", 0.5), ("0.9", 0.9), ("0.99", 0.99), ("0.999", 0.999), ("1", 1.0)];

/// Labels of the point being measured.
#[derive(Debug, Clone, Default)]
struct Current {
    workload: String,
    engine: String,
    point: String,
    phase: String,
    repeat: usize,
}

/// What a scrape shows.
#[derive(Debug, Default)]
struct State {
    /// Calls and errors per (workload, engine, op), over the whole run.
    calls: BTreeMap<(String, String, String), (u64, u64)>,
    current: Option<Current>,
    /// The last run interval's units and primitive operations per second.
    rates: Option<(f64, f64)>,
    /// The last load interval's keys per second.
    load_rate: Option<f64>,
    /// Target rate of the current point: (per second, paced by bytes).
    target: Option<(f64, bool)>,
    /// The last interval's latency quantiles in seconds, per op label and set.
    latency: Vec<(String, &'static str, [f64; SERVED_QUANTILES.len()])>,
    /// Finished points by status word.
    points: BTreeMap<&'static str, u64>,
    samples: u64,
    running: bool,
}

/// The metrics sink and its HTTP server.
pub struct Metrics {
    state: Arc<Mutex<State>>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Metrics {
    /// Binds `addr` (HOST:PORT) and starts serving. Errors name the address.
    pub fn listen(addr: &str) -> Result<Metrics, String> {
        let server = tiny_http::Server::http(addr).map_err(|e| {
            format!("--metrics-listen {addr}: cannot listen there: {e} (give HOST:PORT, e.g. 127.0.0.1:9464)")
        })?;
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| format!("--metrics-listen {addr}: not an IP address"))?;
        let server = Arc::new(server);
        let state = Arc::new(Mutex::new(State::default()));
        let thread = {
            let server = Arc::clone(&server);
            let state = Arc::clone(&state);
            std::thread::Builder::new()
                .name("kvmark-metrics".to_string())
                .spawn(move || serve(&server, &state))
                .map_err(|e| format!("--metrics-listen: cannot start the server thread: {e}"))?
        };
        Ok(Metrics {
            state,
            server,
            thread: Some(thread),
            addr: bound,
        })
    }

    /// The address served (with the port the system chose for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Metrics {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            // The server thread only renders text; a panic there is already reported.
            let _ = t.join();
        }
    }
}

/// Answers requests until the server is unblocked.
fn serve(server: &tiny_http::Server, state: &Mutex<State>) {
    for req in server.incoming_requests() {
        let path = req.url().split('?').next().unwrap_or("");
        let response = if path == "/metrics" || path == "/" {
            let open = req
                .headers()
                .iter()
                .any(|h| h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text"));
            let body = render(&lock(state), open);
            let kind = if open {
                "application/openmetrics-text; version=1.0.0; charset=utf-8"
            } else {
                "text/plain; version=0.0.4; charset=utf-8"
            };
            let header = tiny_http::Header::from_bytes("Content-Type", kind).expect("a valid static header");
            tiny_http::Response::from_string(body).with_header(header)
        } else {
            tiny_http::Response::from_string("kvmark serves /metrics\n").with_status_code(404)
        };
        // A scraper that hung up is no concern of the run.
        let _ = req.respond(response);
    }
}

impl Sink for Metrics {
    fn begin(&mut self, _info: &RunInfo) -> io::Result<()> {
        lock(&self.state).running = true;
        Ok(())
    }

    fn point(&mut self, point: &PointResult) -> io::Result<()> {
        *lock(&self.state).points.entry(point.status.word()).or_default() += 1;
        Ok(())
    }

    fn sample(&mut self, s: &Sample<'_>) -> io::Result<()> {
        let mut st = lock(&self.state);
        let key = s.point;
        st.samples += 1;
        st.current = Some(Current {
            workload: key.workload.clone(),
            engine: key.engine.clone(),
            point: key.label(),
            phase: s.phase.to_string(),
            repeat: s.repeat,
        });
        st.target = key.rate.as_ref().map(|r| (r.per_sec, r.bytes));
        let metric = |name: &str| s.metrics.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        if let Some(keys) = metric("keys_per_s") {
            st.load_rate = Some(keys);
            st.rates = None;
        } else if let (Some(wu), Some(ops)) = (metric("wu_per_s"), metric("ops_per_s")) {
            st.rates = Some((wu, ops));
            st.load_rate = None;
        }
        st.latency.clear();
        if let Some(rec) = s.latency {
            for (kind, k) in rec.used() {
                let e = st
                    .calls
                    .entry((key.workload.clone(), key.engine.clone(), kind.name().to_string()))
                    .or_default();
                e.0 += k.count();
                e.1 += k.errors;
                for (set, h) in k.latency_sets() {
                    let q = SERVED_QUANTILES.map(|(_, q)| {
                        let ns = if q >= 1.0 { h.max() } else { h.value_at_quantile(q) };
                        ns as f64 / 1e9
                    });
                    st.latency.push((kind.name().to_string(), set.tag(), q));
                }
            }
        }
        Ok(())
    }

    fn end(&mut self, _outcome: &RunOutcome) -> io::Result<()> {
        let mut st = lock(&self.state);
        st.running = false;
        st.current = None;
        st.rates = None;
        st.load_rate = None;
        st.latency.clear();
        Ok(())
    }

    fn wants_timeline(&self) -> bool {
        true
    }
}

/// Escapes a label value (backslash, double quote, line feed).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    let inner: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
    format!("{{{}}}", inner.join(","))
}

/// Writes one metric family: its HELP and TYPE lines and its samples. In OpenMetrics a
/// counter family is named without `_total`, which its samples carry.
fn family(out: &mut String, open: bool, name: &str, kind: &str, help: &str, samples: &[(String, String)]) {
    let family = if open && kind == "counter" {
        name.strip_suffix("_total").unwrap_or(name)
    } else {
        name
    };
    let _ = writeln!(out, "# HELP {family} {help}");
    let _ = writeln!(out, "# TYPE {family} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

fn float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "NaN".to_string()
    }
}

/// The exposition of `st`: OpenMetrics when `open`, else Prometheus text 0.0.4.
fn render(st: &State, open: bool) -> String {
    let mut out = String::new();
    let calls = |errors: bool| -> Vec<(String, String)> {
        st.calls
            .iter()
            .map(|((w, e, op), (n, err))| {
                let v = if errors { *err } else { *n };
                (labels(&[("workload", w), ("engine", e), ("op", op)]), v.to_string())
            })
            .collect()
    };
    family(
        &mut out,
        open,
        "kvmark_operations_total",
        "counter",
        "Engine calls measured, per operation kind (warm-up excluded).",
        &calls(false),
    );
    family(
        &mut out,
        open,
        "kvmark_errors_total",
        "counter",
        "Engine calls that failed, per operation kind.",
        &calls(true),
    );
    let points: Vec<(String, String)> = st
        .points
        .iter()
        .map(|(status, n)| (labels(&[("status", status)]), n.to_string()))
        .collect();
    family(
        &mut out,
        open,
        "kvmark_points_total",
        "counter",
        "Grid points finished, by status.",
        &points,
    );
    family(
        &mut out,
        open,
        "kvmark_running",
        "gauge",
        "1 while the run goes.",
        &[(String::new(), u8::from(st.running).to_string())],
    );
    family(
        &mut out,
        open,
        "kvmark_samples",
        "gauge",
        "Interval samples received so far.",
        &[(String::new(), st.samples.to_string())],
    );
    if let Some(c) = &st.current {
        let repeat = c.repeat.to_string();
        let here = [
            ("workload", c.workload.as_str()),
            ("engine", c.engine.as_str()),
            ("point", c.point.as_str()),
            ("phase", c.phase.as_str()),
        ];
        let mut with_repeat = here.to_vec();
        with_repeat.push(("repeat", &repeat));
        family(
            &mut out,
            open,
            "kvmark_point_info",
            "gauge",
            "The point and phase being measured (value 1).",
            &[(labels(&with_repeat), "1".to_string())],
        );
        if let Some((wu, ops)) = st.rates {
            family(
                &mut out,
                open,
                "kvmark_units_per_second",
                "gauge",
                "Achieved workload units per second over the last interval.",
                &[(labels(&here), float(wu))],
            );
            family(
                &mut out,
                open,
                "kvmark_ops_per_second",
                "gauge",
                "Achieved primitive key operations per second over the last interval.",
                &[(labels(&here), float(ops))],
            );
        }
        if let Some(keys) = st.load_rate {
            family(
                &mut out,
                open,
                "kvmark_load_keys_per_second",
                "gauge",
                "Keys written per second by the load over the last interval.",
                &[(labels(&here), float(keys))],
            );
        }
        if let Some((per_s, bytes)) = st.target {
            let mut l = here.to_vec();
            l.push(("unit", if bytes { "bytes" } else { "units" }));
            family(
                &mut out,
                open,
                "kvmark_target_rate",
                "gauge",
                "Open loop: the target rate, units (or written bytes) per second.",
                &[(labels(&l), float(per_s))],
            );
        }
        let mut lat = Vec::new();
        for (op, set, qs) in &st.latency {
            for ((q, _), v) in SERVED_QUANTILES.iter().zip(qs) {
                let mut l = here.to_vec();
                l.extend([("op", op.as_str()), ("set", *set), ("quantile", *q)]);
                lat.push((labels(&l), float(*v)));
            }
        }
        family(
            &mut out,
            open,
            "kvmark_latency_seconds",
            "gauge",
            "Latency quantiles of the last interval, per operation kind and set (service: the engine call; \
             response: from the intended start, open loop); quantile 1 is the maximum.",
            &lat,
        );
    }
    if open {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_follow_each_format() {
        let mut st = State::default();
        st.calls
            .insert(("w".to_string(), "sim".to_string(), "get".to_string()), (10, 2));
        st.current = Some(Current {
            workload: "w\"x".to_string(),
            engine: "sim".to_string(),
            point: "w sim t1 b1".to_string(),
            phase: "run".to_string(),
            repeat: 1,
        });
        st.rates = Some((100.0, 200.0));
        let prom = render(&st, false);
        assert!(prom.contains("# TYPE kvmark_operations_total counter\n"), "{prom}");
        assert!(prom.contains("kvmark_operations_total{workload=\"w\",engine=\"sim\",op=\"get\"} 10\n"));
        assert!(prom.contains("kvmark_errors_total{workload=\"w\",engine=\"sim\",op=\"get\"} 2\n"));
        assert!(prom.contains("workload=\"w\\\"x\""), "label values are escaped: {prom}");
        assert!(!prom.contains("# EOF"));
        let open = render(&st, true);
        assert!(open.contains("# TYPE kvmark_operations counter\n"), "{open}");
        assert!(open.contains("kvmark_operations_total{"));
        assert!(open.ends_with("# EOF\n"));
    }
}
