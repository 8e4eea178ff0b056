//! A histogram of kvmark's layout as its bare counts array, for the sums a merge
//! builds from decoded intervals.
//!
//! `Histogram::record_n` finds a value's bucket and updates the minimum, maximum and
//! total for every count; a merge of 16 one-hour segments adds about 80 million
//! decoded counts into each of three histograms (the merged interval, the point's
//! total per tag, the segment's service times). [`Counts`] adds a count at the
//! bucket index the decoder already knows, remembers which buckets it touched, and
//! becomes a histogram once, at the end, with one `record_n` per touched bucket:
//! exactly the histogram the counts recorded one by one would make (see the tests).

use crate::metrics::{Histogram, new_histogram};

/// Counts by bucket index of kvmark's layout ([`new_histogram`]).
pub(super) struct Counts {
    counts: Vec<u64>,
    /// The indices with a non-zero count, in first-touched order.
    touched: Vec<u32>,
}

impl Counts {
    /// Empty counts.
    pub(super) fn new() -> Self {
        Counts {
            counts: vec![0; new_histogram().distinct_values()],
            touched: Vec::new(),
        }
    }

    /// Adds `n` (non-zero) calls to the bucket at `at`.
    pub(super) fn add(&mut self, at: u32, n: u64) {
        let c = &mut self.counts[at as usize];
        if *c == 0 {
            self.touched.push(at);
        }
        *c = c.saturating_add(n);
    }

    /// Calls `f(index, count)` for every touched bucket and empties the counts
    /// (touching only those buckets).
    pub(super) fn drain(&mut self, mut f: impl FnMut(u32, u64)) {
        for &at in &self.touched {
            f(at, std::mem::take(&mut self.counts[at as usize]));
        }
        self.touched.clear();
    }

    /// Records the counts into `into` (a histogram of kvmark's layout), `values`
    /// giving each bucket's lowest value, and empties them.
    pub(super) fn drain_into(&mut self, into: &mut Histogram, values: &[u64]) {
        self.drain(|at, n| record(into, values, at, n));
    }

    /// The histogram of the counts; `values` as for [`Counts::drain_into`].
    pub(super) fn into_histogram(mut self, values: &[u64]) -> Histogram {
        let mut h = new_histogram();
        self.drain_into(&mut h, values);
        h
    }
}

/// Records `n` calls at bucket `at` of kvmark's layout into `into`.
pub(super) fn record(into: &mut Histogram, values: &[u64], at: u32, n: u64) {
    // A bucket's own lowest value always has room in its own layout.
    into.saturating_record_n(values[at as usize], n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_make_the_histogram_their_values_make() {
        let h = new_histogram();
        let mut values = Vec::new();
        let mut v = 0;
        for _ in 0..h.distinct_values() {
            values.push(v);
            v = h.next_non_equivalent(v);
        }
        let mut direct = new_histogram();
        let mut counts = Counts::new();
        // Repeated buckets, the first and last bucket, and a saturating count.
        let adds = [
            (5u32, 3u64),
            (0, 1),
            (values.len() as u32 - 1, 2),
            (5, 4),
            (2000, u64::MAX),
            (2000, 9),
        ];
        for (at, n) in adds {
            direct.saturating_record_n(values[at as usize], n);
            counts.add(at, n);
        }
        let mut again = Counts::new();
        again.add(7, 1);
        let mut seen = Vec::new();
        again.drain(|at, n| seen.push((at, n)));
        assert_eq!(seen, [(7, 1)]);
        again.drain(|at, n| panic!("drained twice: {at} {n}"));
        let made = counts.into_histogram(&values);
        assert_eq!(made, direct);
        assert_eq!(
            (made.min(), made.max(), made.len()),
            (direct.min(), direct.max(), direct.len())
        );
    }
}
