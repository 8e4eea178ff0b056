//! Self-checks: what a point's own data says about how far its figures can be trusted.
//!
//! - Percentile intervals: for each reported percentile of each operation kind, the
//!   exact distribution-free confidence interval of the order statistics (the number of
//!   samples below the true q-quantile is Binomial(n, q)), read off the histogram. A
//!   percentile is *uncertain* when the interval is open (too few samples to bound it
//!   on one side) or spans more than [`WIDE`] of its lower end.
//! - Client saturation: on a server engine, kvmark's own CPU time (user + system) over
//!   the timed phases, plus the time its threads were ready to run but waited for a CPU
//!   (schedstat), against the cores its threads may use; above [`SATURATED`] the figure
//!   may measure the client rather than the server.
//! - Open loop: an achieved rate under [`RATE_MET`] of the target.
//! - Stationarity: with `--timeline`, a trend across a timed phase's intervals in its
//!   throughput or its busiest operation kind's p99 ([`super::trend`]): the point's
//!   summary then describes no moment of the phase.
//!
//! Each check is silent when it passes; a failing one is one line in the console, an
//! entry in results.json, its name in points.tsv's `checks` column, a line under the
//! point on the report page and beside its verdict in `kvmark compare`, and with
//! `--strict` exit status 1.

use serde_json::{Map, Value, json};

use super::PointResult;
use super::trend::{self, Trend};
use crate::metrics::{Histogram, OpKind, QUANTILES};

/// The confidence of every percentile interval.
pub const CONFIDENCE: f64 = 0.95;
/// A percentile whose interval's upper end exceeds its lower end by more than this
/// share is uncertain.
pub const WIDE: f64 = 0.5;
/// Client CPU use, as a share of the cores its threads may use, above which a server
/// engine's figure may measure the client.
pub const SATURATED: f64 = 0.9;
/// The share of an open-loop target rate a point must achieve.
pub const RATE_MET: f64 = 0.95;

/// A check a point failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// Percentiles whose interval is open or wide: (kind, label, samples).
    Uncertain(Vec<(OpKind, &'static str, u64)>),
    /// kvmark's own CPU use against the cores its threads may use.
    ClientSaturated {
        /// Cores' worth of CPU time per second of wall time (median over repeats).
        cores_used: f64,
        /// Cores' worth of time its threads were ready but waited for a CPU.
        cores_waited: f64,
        /// The cores the client's threads may use.
        cores: usize,
    },
    /// An open-loop target the point did not reach.
    RateMissed {
        /// The target, as given.
        target: String,
        /// The achieved share of it.
        share: f64,
    },
    /// Series that drift across a timed phase, the largest change first.
    NotStationary(Vec<Drift>),
}

/// One series that drifts across one phase of one repeat.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    /// 1-based repeat.
    pub repeat: usize,
    /// The phase's name.
    pub phase: String,
    /// "throughput", or a kind's p99 ("get p99").
    pub series: String,
    /// The test's outcome.
    pub trend: Trend,
}

impl Drift {
    fn describe(&self) -> String {
        let t = &self.trend;
        format!(
            "{} {} {:.0}% across phase {} of repeat {} (Mann-Kendall p = {:.1e} over {} intervals)",
            self.series,
            if t.change < 0.0 { "fell" } else { "rose" },
            t.change.abs() * 100.0,
            self.phase,
            self.repeat,
            t.p,
            t.n
        )
    }
}

impl Warning {
    /// The check's name in reports and for `--strict`.
    pub fn name(&self) -> &'static str {
        match self {
            Warning::Uncertain(_) => "uncertain_percentiles",
            Warning::ClientSaturated { .. } => "client_saturated",
            Warning::RateMissed { .. } => "rate_missed",
            Warning::NotStationary(_) => "not_stationary",
        }
    }

    /// One line saying what failed and what to do.
    pub fn message(&self) -> String {
        match self {
            Warning::Uncertain(list) => {
                // One entry per kind: "put p99/p99.9 (5996 samples)".
                let mut named: Vec<(OpKind, Vec<&str>, u64)> = Vec::new();
                for &(kind, label, n) in list {
                    match named.last_mut() {
                        Some((k, labels, _)) if *k == kind => labels.push(label),
                        _ => named.push((kind, vec![label], n)),
                    }
                }
                let named: Vec<String> = named
                    .iter()
                    .map(|(kind, labels, n)| format!("{} {} ({n} samples)", kind.name(), labels.join("/")))
                    .collect();
                format!(
                    "{} not bounded within {:.0}% at {:.0}% confidence: run longer for these percentiles",
                    named.join(", "),
                    WIDE * 100.0,
                    CONFIDENCE * 100.0
                )
            }
            Warning::ClientSaturated {
                cores_used,
                cores_waited,
                cores,
            } => format!(
                "kvmark's threads ran {cores_used:.2} and waited to run {cores_waited:.2} of the {cores} core{} \
                 they may use ({:.0}% busy): the figure may measure the client, not the server; add connections \
                 or --pipeline, or more client processes with --segment (on other machines if these cores are \
                 shared)",
                if *cores == 1 { "" } else { "s" },
                (cores_used + cores_waited) / *cores as f64 * 100.0
            ),
            Warning::RateMissed { target, share } => format!(
                "achieved {:.1}% of the target rate {target}: the schedule fell behind, so response times include \
                 the backlog; lower the rate or add threads",
                share * 100.0
            ),
            Warning::NotStationary(drifts) => {
                let shown: Vec<String> = drifts.iter().take(2).map(Drift::describe).collect();
                let more = match drifts.len() {
                    0..=2 => String::new(),
                    n => format!(" and {} more", n - 2),
                };
                format!(
                    "{}{more}: the point's figures describe no steady state; warm up longer (--warmup) or run \
                     longer, and see what changes in the timeline (the engine's stats)",
                    shown.join("; ")
                )
            }
        }
    }
}

/// Ranks (1-based, of `n` sorted samples) of the order statistics that bound the
/// `q`-quantile with at least `confidence`, each side missing `(1 - confidence) / 2`
/// at most; None on a side where no rank does (too few samples).
pub fn rank_bounds(n: u64, q: f64, confidence: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 {
        return (None, None);
    }
    let tail = (1.0 - confidence) / 2.0;
    // The lower rank l: P(B < l) <= tail, the largest such; the upper rank u:
    // P(B >= u) <= tail, the smallest such, B ~ Binomial(n, q) being the number of
    // samples below the true quantile.
    let cdf = BinomialCdf::new(n, q);
    let mut lower = None;
    let mut upper = None;
    let mut k = cdf.start;
    let mut below = cdf.below_start;
    let mut pmf = cdf.pmf_start;
    // below = P(B < k); pmf = P(B = k).
    while k <= n {
        if below <= tail {
            lower = Some(k);
        }
        let through = below + pmf;
        if 1.0 - through <= tail {
            upper = Some(k + 1);
            break;
        }
        below = through;
        pmf = cdf.next(k, pmf);
        k += 1;
    }
    let lower = lower.filter(|&l| l >= 1);
    let upper = upper.filter(|&u| u <= n);
    (lower, upper)
}

/// Walks Binomial(n, q) from well below its mean, where the mass before the start is
/// negligible (12 standard deviations), so a walk is O(sqrt(n)) terms.
struct BinomialCdf {
    n: u64,
    ratio: f64,
    start: u64,
    below_start: f64,
    pmf_start: f64,
}

impl BinomialCdf {
    fn new(n: u64, q: f64) -> Self {
        let q = q.clamp(1e-12, 1.0 - 1e-12);
        let mean = n as f64 * q;
        let sd = (mean * (1.0 - q)).sqrt();
        let start = (mean - 12.0 * sd - 10.0).max(0.0).floor() as u64;
        let (nf, kf) = (n as f64, start as f64);
        let ln_pmf = libm::lgamma(nf + 1.0) - libm::lgamma(kf + 1.0) - libm::lgamma(nf - kf + 1.0)
            + kf * q.ln()
            + (nf - kf) * (-q).ln_1p();
        BinomialCdf {
            n,
            ratio: q / (1.0 - q),
            start,
            below_start: 0.0,
            pmf_start: ln_pmf.exp(),
        }
    }

    /// P(B = k + 1) from P(B = k).
    fn next(&self, k: u64, pmf: f64) -> f64 {
        pmf * (self.n - k) as f64 / (k + 1) as f64 * self.ratio
    }
}

/// The value of the sample at `rank` (1-based) in `h`, at the histogram's precision.
fn value_at_rank(h: &Histogram, rank: u64) -> u64 {
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return h.highest_equivalent(v.value_iterated_to());
        }
    }
    h.max()
}

/// A percentile's confidence interval in nanoseconds; None on an open side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub lo: Option<u64>,
    /// Upper end.
    pub hi: Option<u64>,
}

impl Interval {
    /// The [`CONFIDENCE`] interval of the `q`-quantile of `h`.
    pub fn of(h: &Histogram, q: f64) -> Interval {
        let (lo, hi) = rank_bounds(h.len(), q, CONFIDENCE);
        Interval {
            lo: lo.map(|r| value_at_rank(h, r)),
            hi: hi.map(|r| value_at_rank(h, r)),
        }
    }

    /// Open on a side, or wider than [`WIDE`] of its lower end.
    pub fn uncertain(&self) -> bool {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => hi as f64 > lo.max(1) as f64 * (1.0 + WIDE),
            _ => true,
        }
    }
}

/// Every reported percentile's interval of every kind the point used, for results.json:
/// `{kind: {p50: [lo, hi], ...}}`, null for an open side.
pub fn intervals_json(p: &PointResult) -> Value {
    let mut kinds = Map::new();
    for (kind, st) in p.merged.used() {
        let mut per = Map::new();
        for (label, q) in QUANTILES {
            let i = Interval::of(&st.hist, q);
            per.insert(label.to_string(), json!([i.lo, i.hi]));
        }
        kinds.insert(kind.name().to_string(), Value::Object(per));
    }
    Value::Object(kinds)
}

/// The checks `p` fails (none for a point that measured nothing).
pub fn warnings(p: &PointResult) -> Vec<Warning> {
    let mut out = Vec::new();
    if p.merged.is_empty() || p.repeats.is_empty() {
        return out;
    }
    let uncertain: Vec<(OpKind, &'static str, u64)> = p
        .merged
        .used()
        .flat_map(|(kind, st)| {
            QUANTILES
                .iter()
                .filter(|(_, q)| Interval::of(&st.hist, *q).uncertain())
                .map(move |(label, _)| (kind, *label, st.hist.len()))
        })
        .collect();
    if !uncertain.is_empty() {
        out.push(Warning::Uncertain(uncertain));
    }
    let server = crate::engine::find(&p.key.engine).is_some_and(|e| !e.storage.in_memory() && !e.storage.on_disk());
    let used: Vec<f64> = p.repeats.iter().filter_map(|r| r.client_cores_used()).collect();
    let waited: Vec<f64> = p.repeats.iter().filter_map(|r| r.client_cores_waited()).collect();
    if server && !used.is_empty() {
        let (cores_used, cores_waited) = (super::Spread::of(&used).median, super::Spread::of(&waited).median);
        let cores = p.key.threads.min(available_cores()).max(1);
        // Time spent waiting for a CPU counts: on a shared machine the client is
        // starved rather than busy, and the figure measures that just the same.
        if cores_used + cores_waited > cores as f64 * SATURATED {
            out.push(Warning::ClientSaturated {
                cores_used,
                cores_waited,
                cores,
            });
        }
    }
    if let (Some(target), Some(achieved)) = (&p.key.rate, p.achieved())
        && target.per_sec > 0.0
        && achieved.median < target.per_sec * RATE_MET
    {
        out.push(Warning::RateMissed {
            target: target.text.clone(),
            share: achieved.median / target.per_sec,
        });
    }
    let mut drifts: Vec<Drift> = trends(p).into_iter().filter(|d| d.trend.drifts()).collect();
    if !drifts.is_empty() {
        drifts.sort_by(|a, b| b.trend.change.abs().total_cmp(&a.trend.change.abs()));
        out.push(Warning::NotStationary(drifts));
    }
    out
}

/// The trend test of every timed phase of every repeat with enough timeline
/// intervals: its throughput, and its busiest operation kind's p99.
pub fn trends(p: &PointResult) -> Vec<Drift> {
    let mut out = Vec::new();
    for (r, repeat) in p.repeats.iter().enumerate() {
        for phase in &repeat.phases {
            let wu: Vec<f64> = phase.trend.iter().map(|i| i.wu_per_s).collect();
            let busiest = trend::busiest_p99(&phase.trend);
            let series = std::iter::once(("throughput".to_string(), wu))
                .chain(busiest.map(|(kind, s)| (format!("{} p99", kind.name()), s)));
            for (name, values) in series {
                if let Some(t) = trend::test(&values) {
                    out.push(Drift {
                        repeat: r + 1,
                        phase: phase.name.clone(),
                        series: name,
                        trend: t,
                    });
                }
            }
        }
    }
    out
}

/// Every trend tested, for results.json: `[{repeat, phase, series, intervals, s, z,
/// p, change, drifts}]` (empty without `--timeline`).
pub fn trends_json(p: &PointResult) -> Value {
    Value::Array(
        trends(p)
            .iter()
            .map(|d| {
                json!({
                    "repeat": d.repeat,
                    "phase": d.phase,
                    "series": d.series,
                    "intervals": d.trend.n,
                    "s": d.trend.s,
                    "z": d.trend.z,
                    "p": d.trend.p,
                    "change": d.trend.change,
                    "drifts": d.trend.drifts(),
                })
            })
            .collect(),
    )
}

/// The 95% interval of the point's throughput (wu/s) over its repeats, for
/// results.json (the normal approximation, as the epochs' intervals): null with fewer
/// than two repeats, where there is no spread to judge.
pub fn throughput_json(p: &PointResult) -> Value {
    let rates: Vec<f64> = p.repeats.iter().map(super::RepeatRun::wu_per_sec).collect();
    if rates.len() < 2 {
        return Value::Null;
    }
    let i = super::intervals::Interval::of(&rates);
    json!({ "mean": i.mean, "low": i.low(), "high": i.high(), "repeats": i.n })
}

/// The failed checks of `p` for results.json: `[{"check": name, "message": text}]`.
pub fn warnings_json(p: &PointResult) -> Value {
    Value::Array(
        warnings(p)
            .iter()
            .map(|w| json!({ "check": w.name(), "message": w.message() }))
            .collect(),
    )
}

/// The cores this process may run on.
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_bounds_match_the_exact_binomial_interval() {
        // The median of 9 samples: P(B < 2) = 10/512 <= 0.025 < P(B < 3) = 46/512, so
        // the lower rank is 2, and by symmetry the upper is 8 (the classic (2, 8)).
        assert_eq!(rank_bounds(9, 0.5, 0.95), (Some(2), Some(8)));
        // p99 of 100 samples cannot be bounded above; p99 of 10,000 can, around 9,900.
        assert_eq!(rank_bounds(100, 0.99, 0.95).1, None);
        let (lo, hi) = rank_bounds(10_000, 0.99, 0.95);
        let (lo, hi) = (lo.unwrap(), hi.unwrap());
        assert!(
            (9_875..9_885).contains(&lo) && (9_915..9_925).contains(&hi),
            "{lo} {hi}"
        );
        // A huge count is quick and centred.
        let (lo, hi) = rank_bounds(1_000_000_000, 0.5, 0.95);
        assert!(lo.unwrap() < 500_000_000 && hi.unwrap() > 500_000_000);
        assert!(hi.unwrap() - lo.unwrap() < 70_000);
        assert_eq!(rank_bounds(0, 0.5, 0.95), (None, None));
    }

    #[test]
    fn intervals_are_open_or_wide_on_few_samples_and_tight_on_many() {
        let hist = || Histogram::new_with_bounds(1, crate::metrics::HIST_MAX_NS, 3).unwrap();
        let mut few = hist();
        for v in 1..=100u64 {
            few.record(v * 1000).unwrap();
        }
        assert!(Interval::of(&few, 0.999).uncertain(), "p99.9 of 100 samples");
        // The median of 100 samples spread 1..100 us: ranks 40 to 61, more than 50%.
        assert!(Interval::of(&few, 0.5).uncertain(), "{:?}", Interval::of(&few, 0.5));
        // 100,000 samples between 100 and 110 us: every percentile up to p99.9 is tight.
        let mut many = hist();
        for v in 0..100_000u64 {
            many.record(100_000 + v % 10_000).unwrap();
        }
        for (label, q) in QUANTILES.iter().take(4) {
            let i = Interval::of(&many, *q);
            assert!(!i.uncertain(), "{label}: {i:?}");
            let at = many.value_at_quantile(*q);
            assert!(i.lo.unwrap() <= at && at <= i.hi.unwrap(), "{label}: {i:?} {at}");
        }
    }
}
