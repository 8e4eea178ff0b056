//! The growing-values epoch of a point (issue 8): which epoch and mode it measured,
//! the data volume, and each figure as a mean over repeats with its 95% interval.
//!
//! The contract, inside a point object of `results.json`:
//! `"epoch": {"number": N, "mode": "main"|"clean"|"average"|"spread", "records": N,
//! "volume_bytes": N, "skipped_extends": N, "value_sizes": {...}, "intervals":
//! {"wu_per_s": I, "ops_per_s": I, "ops": {"get": {"mean_ns": I, "p50_ns": I,
//! "p99_ns": I, "p999_ns": I, "max_ns": I}, ...}}}` where I is
//! `{"mean": x, "ci95": half-width, "n": repeats}`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A mean over repeats and the half-width of its 95% interval.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
pub struct Interval {
    /// The mean.
    pub mean: f64,
    /// Half-width of the 95% interval (1.96 standard errors; 0 for one repeat).
    #[serde(default)]
    pub ci95: f64,
    /// Repeats.
    #[serde(default)]
    pub n: u64,
}

/// Latency intervals of one operation kind.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct OpIntervals {
    /// Mean latency.
    pub mean_ns: Option<Interval>,
    /// Median.
    pub p50_ns: Option<Interval>,
    /// p99.
    pub p99_ns: Option<Interval>,
    /// p99.9.
    pub p999_ns: Option<Interval>,
    /// Largest.
    pub max_ns: Option<Interval>,
}

/// The intervals of an epoch.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Intervals {
    /// Workload units per second.
    pub wu_per_s: Option<Interval>,
    /// Primitive operations per second.
    pub ops_per_s: Option<Interval>,
    /// Per operation kind.
    #[serde(default)]
    pub ops: BTreeMap<String, OpIntervals>,
}

/// The value-size distribution of an epoch's data.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ValueSizes {
    /// Values.
    pub count: Option<u64>,
    /// Mean size in bytes.
    pub mean: Option<f64>,
    /// p50 in bytes.
    pub p50: Option<f64>,
    /// p99 in bytes.
    pub p99: Option<f64>,
}

/// One point's epoch.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Epoch {
    /// The epoch's number.
    pub number: u64,
    /// main, clean, average or spread.
    pub mode: String,
    /// Records in the store.
    pub records: Option<u64>,
    /// Bytes of data in the store.
    pub volume_bytes: Option<f64>,
    /// Value extends that were skipped.
    pub skipped_extends: Option<u64>,
    /// Value sizes.
    pub value_sizes: Option<ValueSizes>,
    /// The figures with their intervals.
    #[serde(default)]
    pub intervals: Intervals,
}

impl Epoch {
    /// Reads an `epoch` object; the message says what is wrong.
    pub fn parse(v: &Value) -> Result<Epoch, String> {
        serde_path_to_error::deserialize(v.clone()).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_reads() {
        let v: Value = serde_json::from_str(
            r#"{"number": 3, "mode": "clean", "records": 10000, "volume_bytes": 12345678,
                "skipped_extends": 0,
                "value_sizes": {"count": 10000, "mean": 1234.5, "min": 10, "max": 4000, "p50": 1200,
                                "p90": 2000, "p99": 3900, "bin_bytes": 100, "bins": [[0, 5], [100, 7]]},
                "intervals": {"wu_per_s": {"mean": 1000.0, "ci95": 50.0, "n": 3},
                              "ops_per_s": {"mean": 2000.0, "ci95": 0, "n": 1},
                              "ops": {"get": {"mean_ns": {"mean": 900, "ci95": 10, "n": 3},
                                              "p99_ns": {"mean": 5000, "ci95": 200, "n": 3}}}}}"#,
        )
        .unwrap();
        let e = Epoch::parse(&v).unwrap();
        assert_eq!((e.number, e.mode.as_str()), (3, "clean"));
        assert_eq!(e.intervals.wu_per_s.unwrap().ci95, 50.0);
        let get = &e.intervals.ops["get"];
        assert_eq!(get.p99_ns.unwrap().mean, 5000.0);
        assert!(get.p50_ns.is_none());
        assert_eq!(e.value_sizes.unwrap().p99, Some(3900.0));
    }

    #[test]
    fn a_malformed_epoch_says_where() {
        let v: Value = serde_json::from_str(r#"{"number": "three", "mode": "main"}"#).unwrap();
        let err = Epoch::parse(&v).unwrap_err();
        assert!(err.contains("number"), "{err}");
    }
}
