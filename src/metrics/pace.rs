//! How well a paced (open-loop) worker kept its schedule.
//!
//! A unit's *lag* is the actual start of its first operation minus its intended
//! start. A unit that found its intended start still ahead waited for it, so its lag
//! is the pacer's own error (schedule accuracy, measured with the engine idle); a unit
//! whose intended start had already passed started late, so its lag is queueing and is
//! already part of every response time.

use super::{Histogram, new_histogram};

/// Schedule statistics of one or more paced workers, merged exactly.
#[derive(Debug, Clone)]
pub struct PaceStats {
    /// Lag of the units that waited for their intended start: how precisely the
    /// pacer issues a unit on time when the engine is idle.
    pub accuracy: Histogram,
    /// Units that waited for their intended start.
    pub waited: u64,
    /// Units whose intended start had already passed (issued at once, not skipped).
    pub late: u64,
    /// The largest lag of any unit: how far behind schedule the run fell.
    pub max_lag_ns: u64,
    /// The lag of a worker's last unit; merged as the largest over threads and repeats.
    pub final_lag_ns: u64,
}

impl Default for PaceStats {
    fn default() -> Self {
        PaceStats {
            accuracy: new_histogram(),
            waited: 0,
            late: 0,
            max_lag_ns: 0,
            final_lag_ns: 0,
        }
    }
}

impl PaceStats {
    /// Files the lag of one unit's first operation. Runs file theirs through
    /// `Pacer::take_stats`; this is for tests.
    #[cfg(test)]
    pub fn unit(&mut self, lag_ns: u64, waited: bool) {
        if waited {
            self.waited += 1;
            self.accuracy.saturating_record(lag_ns.max(1));
        } else {
            self.late += 1;
        }
        self.max_lag_ns = self.max_lag_ns.max(lag_ns);
        self.final_lag_ns = lag_ns;
    }

    /// Units that ran under the pacer.
    pub fn units(&self) -> u64 {
        self.waited + self.late
    }

    /// Adds `other` into `self`: counts and histograms add, lags take the largest.
    pub fn merge(&mut self, other: &PaceStats) {
        self.accuracy.add(&other.accuracy).expect("histograms share bounds");
        self.waited += other.waited;
        self.late += other.late;
        self.max_lag_ns = self.max_lag_ns.max(other.max_lag_ns);
        self.final_lag_ns = self.final_lag_ns.max(other.final_lag_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waited_units_feed_accuracy_late_ones_only_the_lags() {
        let mut a = PaceStats::default();
        a.unit(2_000, true);
        a.unit(9_000_000, false);
        a.unit(500, true);
        assert_eq!((a.waited, a.late, a.units()), (2, 1, 3));
        assert_eq!(a.accuracy.len(), 2);
        assert_eq!(a.max_lag_ns, 9_000_000);
        assert_eq!(a.final_lag_ns, 500);
        let mut b = PaceStats::default();
        b.unit(40_000, false);
        a.merge(&b);
        assert_eq!((a.units(), a.final_lag_ns, a.max_lag_ns), (4, 40_000, 9_000_000));
    }
}
