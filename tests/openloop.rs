//! Open loop: target rates, response times beside service times, warm-up, the SLO
//! search, rate by bytes and key lifetimes, each checked by running the real binary,
//! mostly against the `sim` calibration engine.
//!
//! Tests that measure time take the SERIAL lock, so they do not compete with each
//! other for this machine's cores; their bounds are generous (see each one).

mod common;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::*;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A console duration ("100.09", "us") in nanoseconds.
fn ns(value: &str, unit: &str) -> f64 {
    let v: f64 = value.parse().unwrap_or_else(|_| panic!("not a number: {value}"));
    v * match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => panic!("unknown unit {other}"),
    }
}

/// Latency figures of one row: count, then mean, p50, p90, p99, p99.9, p99.99, max in ns.
#[derive(Debug)]
struct Row {
    count: u64,
    ns: Vec<f64>,
}

impl Row {
    fn p50(&self) -> f64 {
        self.ns[1]
    }
    fn p90(&self) -> f64 {
        self.ns[2]
    }
    fn p999(&self) -> f64 {
        self.ns[4]
    }
    fn max(&self) -> f64 {
        self.ns[6]
    }
}

/// The row of `op` in the first table after a line starting with `heading` (or in the
/// first table of the report when None).
fn row(out: &str, heading: Option<&str>, op: &str) -> Row {
    let mut lines = out.lines();
    if let Some(h) = heading {
        lines
            .by_ref()
            .find(|l| l.starts_with(h))
            .unwrap_or_else(|| panic!("no '{h}' table in\n{out}"));
    }
    let line = lines
        .find(|l| l.split_whitespace().next() == Some(op))
        .unwrap_or_else(|| panic!("no {op} row in\n{out}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    Row {
        count: f[1].parse().unwrap(),
        ns: f[2..].chunks(2).map(|c| ns(c[0], c[1])).collect(),
    }
}

/// The line starting with `prefix`.
fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no '{prefix}' line in\n{out}"))
}

/// The number right after `word` in `text`.
fn number_after(text: &str, word: &str) -> f64 {
    let rest = &text[text.find(word).unwrap_or_else(|| panic!("no '{word}' in {text}")) + word.len()..];
    let n: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    n.parse()
        .unwrap_or_else(|_| panic!("no number after '{word}' in {text}"))
}

const SIM_STALLS: [&str; 6] = [
    "--backend",
    "sim",
    "--engine-opt",
    "sim.service=100us",
    "--engine-opt",
    "sim.stall=200ms",
];

#[test]
fn a_stall_shows_in_open_loop_response_times_not_in_closed_loop_percentiles() {
    let _serial = serial();
    // 100 us per call, a 200 ms store-wide stall every second, 3.5 s: three stalls.
    let null = bundled("null.lua");
    let mut closed_args = SIM_STALLS.to_vec();
    closed_args.extend(["--secs", "3.5", &null]);
    let closed = kvmark(&closed_args);
    assert_exit(&closed, 0);
    let closed = stdout(&closed);
    let mut open_args = SIM_STALLS.to_vec();
    // A fifth of the engine's capacity: without stalls the schedule is easily kept,
    // and the worker, which spins through each 100 us call, needs only a fifth of a
    // CPU, so other processes on a busy machine cannot starve it below the rate.
    open_args.extend(["--secs", "3.5", "--rate", "2000", &null]);
    let open = kvmark(&open_args);
    assert_exit(&open, 0);
    let open = stdout(&open);

    // Closed loop: one call per stall waits (about 1 in 10,000), so p99.9 stays near the
    // service time; only the max shows the stall. The bound is the same 100 ms that the
    // open-loop figures must reach, which leaves room for a machine so loaded that the
    // worker is descheduled for milliseconds (12 ms was seen at load 9 on 2 cores): one
    // call in 1000 waiting 100 ms would take the worker off its CPU half the run.
    let c = row(&closed, None, "get");
    assert!(c.p999() < 100e6, "closed-loop p99.9 {} ns:\n{closed}", c.p999());
    assert!(c.max() >= 100e6, "the stall was never hit:\n{closed}");
    assert!(!closed.contains("response time"), "{closed}");

    // Open loop: every unit due during a stall waits for it, and so do the ones queued
    // behind them, so response-time p99.9 and max show the stall.
    let svc = row(&open, Some("service time"), "get");
    let resp = row(&open, Some("response time"), "get");
    assert_eq!(svc.count, resp.count);
    assert!(
        resp.p999() >= 100e6,
        "open-loop response p99.9 {} ns:\n{open}",
        resp.p999()
    );
    assert!(resp.max() >= 100e6, "{open}");
    assert!(resp.p50() >= svc.p50(), "{open}");

    // Service time is the same measurement in both modes.
    for (what, a, b) in [("p50", c.p50(), svc.p50()), ("p90", c.p90(), svc.p90())] {
        assert!((a - b).abs() <= 0.2 * a, "service {what}: closed {a} ns, open {b} ns");
    }

    // The schedule held: never above the target, as no unit starts early; below it by
    // the units still due when the run ended, which a pause of the worker near the end
    // of a loaded machine's run leaves undone (20% is 0.7 s of them).
    let rate = line(&open, "rate: ");
    let achieved = number_after(rate, "achieved");
    assert!((1600.0..=2020.0).contains(&achieved), "{rate}");
    assert!(line(&open, "schedule: ").contains("lag max"), "{open}");
}

#[test]
fn warm_up_excludes_exactly_the_warm_up_units() {
    let _serial = serial();
    let count = workload("count.lua");
    for args in [
        vec![
            "--rate",
            "2000",
            "--threads",
            "2",
            "--secs",
            "2",
            "--warmup",
            "1",
            &count,
        ],
        vec!["--secs", "1.5", "--warmup", "0.5", &count],
    ] {
        let o = kvmark(&args);
        assert_exit(&o, 0);
        let out = stdout(&o);
        // The workload itself counts every unit it ran, one line each.
        let ran = stderr(&o).lines().filter(|l| *l == "unit").count() as u64;
        let warm = line(&out, "warm-up: ");
        let excluded = number_after(warm, "excluded") as u64;
        let measured = number_after(warm, "measured") as u64;
        assert_eq!(excluded + measured, ran, "{args:?}: {warm}");
        assert!(excluded > 0 && measured > 0, "{args:?}: {warm}");
        // Only measured units are in the histograms: one put each.
        assert_eq!(op_count(&out, "put"), Some(measured), "{args:?}:\n{out}");
    }
}

#[test]
fn the_slo_search_finds_the_rate_a_simple_queue_predicts() {
    let _serial = serial();
    // One thread, constant arrivals, a fixed 20 ms service time: the queue is stable up
    // to 1/s = 50 units/s, and response time stays at 20 ms below it. (A service time
    // this long is mostly slept, so other processes on the machine barely disturb it;
    // the 200 ms limit absorbs a pause of the client on a loaded machine.)
    let o = kvmark(&[
        "--backend",
        "sim",
        "--engine-opt",
        "sim.service=20ms",
        "--slo",
        "p99<200ms",
        "--slo-secs",
        "1.5",
        &bundled("null.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let verdict = line(&out, "slo p99<200ms");
    let best = number_after(verdict, "highest passing rate");
    let capacity = number_after(verdict, "capacity");
    // The capacity is at most 1/s (and a 1.5 s run rounds up by at most a unit); a
    // loaded machine wakes the sleeping service late and may pause it, lowering it
    // somewhat. No probe goes above it, and the queue passes up to it, so the search
    // is judged against the capacity measured.
    assert!((35.0..=50.7).contains(&capacity), "{verdict}\n{out}");
    assert!((0.9 * capacity..=capacity).contains(&best), "{verdict}\n{out}");
    // The evidence: each probe's target, achieved rate, p99 and verdict.
    let probes: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("probe"))
        .skip(1)
        .take_while(|l| l.ends_with("pass") || l.ends_with("fail"))
        .collect();
    assert!(!probes.is_empty() && probes.len() <= 10, "{out}");
    assert!(probes.iter().any(|p| p.ends_with("pass")), "{out}");
    assert!(out.contains("=== SLO search: p99<200ms ==="), "{out}");
}

#[test]
fn key_lifetimes_keep_the_live_set_at_rate_times_lifetime() {
    let _serial = serial();
    // 1500 inserts/s, each key living 2 s: 3000 live keys once the first have expired.
    let o = kvmark(&["--rate", "1500", "--secs", "4.5", &workload("lifetimes.lua")]);
    assert_exit(&o, 0);
    let samples: Vec<(u64, u64)> = stderr(&o)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[0] == "iter").then(|| (f[1].parse().unwrap(), f[3].parse().unwrap()))
        })
        .collect();
    // Steady state: from 2.2 s on (unit 3300 at 1500/s). A sample is off by the rate
    // times how much further behind schedule the worker was then than 2 s earlier: at
    // most the run's largest lag, small on a quiet machine, long where a loaded one
    // paused the worker.
    let out = stdout(&o);
    let schedule = line(&out, "schedule: ");
    let lag: Vec<&str> = schedule[schedule.find("lag max ").unwrap() + 8..]
        .split([' ', ','])
        .collect();
    let slack = 150.0 + 1500.0 * ns(lag[0], lag[1]) / 1e9;
    let steady: Vec<u64> = samples.iter().filter(|(i, _)| *i > 3300).map(|(_, l)| *l).collect();
    assert!(steady.len() >= 5, "{samples:?}");
    for live in &steady {
        assert!(
            (*live as f64 - 3000.0).abs() <= slack,
            "live {live}, want 3000 +- {slack}, all samples {samples:?}\n{schedule}"
        );
    }
    // The deletes are the harness's own `expire` operations, not units.
    let expired = op_count(&out, "expire").unwrap_or(0);
    assert!(expired > 1000, "{out}");
    assert!(out.contains("ops per unit"), "{out}");
}

#[test]
fn a_bandwidth_target_paces_by_the_bytes_units_write() {
    let _serial = serial();
    // 1000 bytes written per unit at 1 MB/s: 1000 units/s.
    let o = kvmark(&["--rate", "1MB/s", "--secs", "2.5", &workload("bytes.lua")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let rate = line(&out, "rate: target 1MB/s, achieved ");
    let mb = number_after(rate, "achieved");
    // Never above the target, as no unit starts early; below it by what a pause of a
    // loaded machine near the end leaves undone (20% is 0.5 s of it).
    assert!((0.8..=1.01).contains(&mb), "{rate}");
    // Over the same time, exactly 1000 units per MB (1% for the rounding of the MB/s).
    let wu = number_after(rate, "of target,");
    assert!((wu / mb - 1000.0).abs() <= 10.0, "{rate}");
}

#[test]
fn a_rate_sweep_gives_latency_vs_load_in_the_summary() {
    let _serial = serial();
    let o = kvmark(&[
        "--rate",
        "1000,3000",
        "--arrival",
        "poisson",
        "--secs",
        "2",
        "--threads",
        "1,2",
        &bundled("null.lua"),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("open loop: rate 1000,3000 (poisson arrivals)"), "{out}");
    let rows = summary_rows(&out);
    // Threads, then rate: (1, 1000), (1, 3000), (2, 1000), (2, 3000).
    let cells: Vec<(&str, &str)> = rows.iter().map(|r| (r[2].as_str(), r[9].as_str())).collect();
    assert_eq!(
        cells,
        vec![("1", "1000"), ("1", "3000"), ("2", "1000"), ("2", "3000")],
        "{out}"
    );
    for r in &rows {
        let (target, achieved): (f64, f64) = (r[9].parse().unwrap(), r[10].parse().unwrap());
        // Poisson counts vary by about 1/sqrt(n); 10% is several deviations. Below, also
        // the units still due at the end, which a pause of a loaded machine leaves
        // undone: 30%, which still tells the two rates apart.
        assert!((0.7 * target..=1.1 * target).contains(&achieved), "{r:?}");
        for cell in &r[11..14] {
            assert!(
                cell.ends_with("ns") || cell.ends_with("us") || cell.ends_with("ms"),
                "{r:?}"
            );
        }
    }
}

#[test]
fn paced_units_count_iter_and_report_lua_errors_like_closed_ones() {
    let o = kvmark(&["--rate", "100000", "--ops", "5", &workload("ctx.lua")]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    let iters: Vec<&str> = err.lines().filter(|l| l.starts_with("run ")).collect();
    assert_eq!(iters.len(), 5, "{err}");
    assert!(iters[4].contains(" iter=5 "), "{err}");

    let o = kvmark(&["--rate", "1000", "--ops", "10", &workload("fail_at.lua")]);
    assert_exit(&o, 1);
    assert!(
        stdout(&o).contains("fail_at.lua:5: deliberate failure"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn expire_after_checks_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("badexpire.lua");
    std::fs::write(&path, "return { run = function()\n  kv.expire_after('k', -1)\nend }").unwrap();
    let o = kvmark(&["--ops", "1", path.to_str().unwrap()]);
    assert_exit(&o, 1);
    assert!(
        stdout(&o).contains(
            "badexpire.lua:2: bad argument #2 to 'kv.expire_after' (seconds must be a non-negative number, got -1)"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn ctrl_c_ends_a_long_wait_between_paced_units() {
    // At 0.5 units/s the second unit is two seconds away: Ctrl-C must not wait for it.
    let dir = tempfile::tempdir().unwrap();
    let (tl, report) = timeline_report(dir.path());
    let child = spawn_kvmark(&[
        "--rate",
        "0.5",
        "--secs",
        "30",
        "--timeline",
        "0.1",
        "--report",
        &report,
        &bundled("null.lua"),
    ]);
    // A moment into the timed phase (the first unit ran at its start), however long a
    // loaded machine takes to start kvmark.
    wait_for("a sample of the timed phase", || timed_for(&tl, 0.0));
    let started = Instant::now();
    let o = interrupt(child);
    // Far below the 30 s run a missed Ctrl-C would go on for, however loaded the machine.
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_exit(&o, 130);
    assert!(stdout(&o).contains("INTERRUPTED"), "{}", stdout(&o));
}

#[test]
fn bad_open_loop_flags_exit_2_with_a_message() {
    let null = bundled("null.lua");
    let cases: &[(&[&str], &str)] = &[
        (&["--rate", "fast"], "--rate 'fast': not a number"),
        (&["--rate", "0"], "--rate '0': must be positive"),
        (&["--rate", "200MB"], "a bandwidth needs '/s'"),
        (&["--rate", "5XB/s"], "unknown unit 'XB'"),
        (
            &["--arrival", "bursty", "--rate", "10"],
            "--arrival 'bursty': expected constant or poisson",
        ),
        (&["--arrival", "poisson"], "--arrival applies to paced runs"),
        (&["--warmup", "-1"], "--warmup -1: give a number of seconds"),
        (
            &["--warmup", "3", "--secs", "2"],
            "--warmup 3 is not shorter than --secs 2",
        ),
        (&["--slo", "p99"], "--slo 'p99': no '<'"),
        (&["--slo", "p99<2"], "needs a unit"),
        (&["--slo", "nope:p99<2ms"], "unknown operation kind 'nope'"),
        (
            &["--slo", "p99<2ms", "--rate", "10"],
            "--slo searches for the rate itself",
        ),
        (
            &["--slo", "p99<2ms", "--warmup", "2"],
            "--warmup 2 is not shorter than --slo-secs 2",
        ),
        (&["--slo-secs", "1"], "--slo-secs applies to an SLO search"),
        (
            &["--engine-opt", "sim.bogus=1", "--backend", "sim"],
            "unknown option 'bogus' for engine sim",
        ),
    ];
    for (args, msg) in cases {
        let mut all = args.to_vec();
        all.push(&null);
        let o = kvmark(&all);
        assert_exit(&o, 2);
        let text = format!("{}{}", stderr(&o), stdout(&o));
        assert!(text.contains(msg), "{args:?}: {text}");
    }
}

#[test]
fn engines_lists_the_sim_knobs() {
    let o = kvmark(&["engines"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let sim = &out[out.find("\nsim\n").expect("a sim entry")..];
    for knob in ["service", "stall", "stall_every"] {
        assert!(sim.contains(&format!("    {knob} ")), "{sim}");
    }
}

#[test]
fn help_explains_the_open_loop_flags() {
    let o = kvmark(&["--help"]);
    assert_exit(&o, 0);
    let help = stdout(&o);
    for flag in [
        "--rate",
        "--no-rate",
        "--arrival",
        "--warmup",
        "--slo ",
        "--slo-secs",
        "200MB/s",
        "p99<2ms",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}
