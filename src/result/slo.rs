//! Response-time objectives (`--slo 'p99<2ms'`) and what the SLO search (`run::slo`)
//! found at a point: its probes and the highest rate that met the objective.

use crate::metrics::{OpKind, Recorder};

/// A response-time objective: a percentile of one kind (or all kinds) under a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The kind it judges; None for every kind merged.
    pub kind: Option<OpKind>,
    /// The percentile as written ("p99.9").
    pub percentile: String,
    /// The same as a quantile (0.999).
    pub quantile: f64,
    /// The limit in nanoseconds.
    pub limit_ns: u64,
    /// As given on the command line.
    pub text: String,
}

impl Slo {
    /// Parses `[KIND:]pN<LIMIT`, for example `p99<2ms` or `get:p99.9<500us`.
    pub fn parse(text: &str) -> Result<Slo, String> {
        let bad = |why: String| {
            format!("--slo '{text}': {why} (expected [KIND:]pN<LIMIT, for example 'p99<2ms' or 'get:p99.9<500us')")
        };
        let (lhs, limit) = text
            .split_once('<')
            .ok_or_else(|| bad("no '<' between the percentile and the limit".into()))?;
        let (kind, percentile) = match lhs.split_once(':') {
            Some((k, p)) => {
                let kind = OpKind::from_name(k.trim()).ok_or_else(|| {
                    let names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
                    bad(format!(
                        "unknown operation kind '{}' (one of {})",
                        k.trim(),
                        names.join(", ")
                    ))
                })?;
                (Some(kind), p.trim())
            }
            None => (None, lhs.trim()),
        };
        let q: f64 = percentile
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad(format!("'{percentile}' is not a percentile such as p99 or p99.9")))?;
        if !(q > 0.0 && q <= 100.0) {
            return Err(bad(format!(
                "percentile {percentile} must be above p0 and at most p100"
            )));
        }
        let limit_ns = crate::clock::parse_duration_ns(limit).map_err(bad)?;
        if limit_ns == 0 {
            return Err(bad("the limit must be above zero".into()));
        }
        Ok(Slo {
            kind,
            percentile: percentile.to_string(),
            quantile: q / 100.0,
            limit_ns,
            text: text.trim().to_string(),
        })
    }

    /// The judged percentile of response time in `rec`, or None when it has no
    /// response times of the kind.
    pub fn value(&self, rec: &Recorder) -> Option<u64> {
        let hist = rec.response(self.kind)?;
        (!hist.is_empty()).then(|| hist.value_at_quantile(self.quantile))
    }
}

/// One open-loop probe of the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Target rate, units per second.
    pub target: f64,
    /// Achieved rate, units per second.
    pub achieved: f64,
    /// The judged percentile of response time (None: no such operations ran).
    pub value_ns: Option<u64>,
    /// How far behind schedule the probe ended.
    pub final_lag_ns: u64,
    /// Whether the objective held.
    pub pass: bool,
}

/// What an SLO search found at one point, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct SloReport {
    /// The objective.
    pub slo: Slo,
    /// Seconds per probe.
    pub probe_secs: f64,
    /// Closed-loop capacity, units per second.
    pub capacity: f64,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
    /// The highest passing target, if any passed.
    pub best: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objectives_parse_with_kind_percentile_and_unit() {
        let s = Slo::parse("p99<2ms").unwrap();
        assert_eq!((s.kind, s.quantile, s.limit_ns), (None, 0.99, 2_000_000));
        let s = Slo::parse("get:p99.9<500us").unwrap();
        assert_eq!(
            (s.kind, s.percentile.as_str(), s.limit_ns),
            (Some(OpKind::Get), "p99.9", 500_000)
        );
        assert!((s.quantile - 0.999).abs() < 1e-12);
        assert_eq!(Slo::parse(" p50 < 1s ").unwrap().limit_ns, 1_000_000_000);
        for (bad, why) in [
            ("p99", "no '<'"),
            ("q99<1ms", "not a percentile"),
            ("p0<1ms", "above p0"),
            ("p101<1ms", "at most p100"),
            ("p99<2", "needs a unit"),
            ("p99<2min", "unknown time unit"),
            ("gte:p99<1ms", "unknown operation kind 'gte'"),
            ("p99<0ms", "above zero"),
        ] {
            let err = Slo::parse(bad).unwrap_err();
            assert!(err.contains(why) && err.contains("--slo"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_value_reads_response_times_of_one_kind_or_all() {
        let mut rec = Recorder::new();
        let slo = Slo::parse("p50<1ms").unwrap();
        rec.record(OpKind::Get, 10, 1);
        assert_eq!(slo.value(&rec), None, "closed loop has no response times");
        for _ in 0..10 {
            rec.record(OpKind::Get, 10, 1).record_response(1_000);
            rec.record(OpKind::Put, 10, 1).record_response(3_000);
        }
        rec.record(OpKind::Put, 10, 1).record_response(3_000);
        // Histogram values are exact to 3 significant digits.
        let near = |v: Option<u64>, want: u64| v.is_some_and(|v| v.abs_diff(want) <= want / 1000);
        assert!(near(slo.value(&rec), 3_000), "{:?}", slo.value(&rec));
        assert!(near(Slo::parse("get:p50<1ms").unwrap().value(&rec), 1_000));
        assert_eq!(Slo::parse("del:p50<1ms").unwrap().value(&rec), None);
    }
}
