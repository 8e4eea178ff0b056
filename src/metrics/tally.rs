//! A cheaper way to count latencies on the hot path, folded exactly into a [`Histogram`].
//!
//! Recording into an HdrHistogram costs some 60 instructions per sample (bounds and
//! resize checks, min/max and total tracking, a `Result`); on the null workload that is
//! a twentieth of a unit, and an open-loop run records twice per call. A [`Tally`]
//! keeps a plain array of counts indexed exactly as every kvmark histogram indexes its
//! own (1 ns to one hour, 3 significant digits: 2048 sub-buckets, unit 1 ns), so a
//! sample costs an index computation and an increment. [`Tally::drain_into`] adds
//! each count at its bucket's value into a histogram, which then holds the very counts
//! (and reports the same min, max, total and percentiles) that recording every sample
//! into it directly would have produced.

use super::{HIST_MAX_NS, Histogram, LatencySet, OpKind, Recorder, new_histogram};

/// log2 of the sub-buckets per bucket: the smallest power of two above 2 * 10^3,
/// which 3 significant digits need (hdrhistogram's `sub_bucket_count`).
const SUB_BITS: u32 = 11;
/// Half the sub-buckets: every bucket past the first uses only its upper half.
const HALF_BITS: u32 = SUB_BITS - 1;
/// Buckets needed to reach one hour: bucket b holds values below 2^(11 + b).
const BUCKETS: u32 = 32;
/// Counts in a histogram of these bounds (hdrhistogram's `distinct_values`).
pub const TALLY_LEN: usize = ((BUCKETS + 1) as usize) << HALF_BITS;
/// The histogram's counts reach up to, but not including, this value. Larger samples
/// are clamped to [`HIST_MAX_NS`], as `Histogram::saturating_record` does.
#[cfg(test)]
const RANGE_END: u64 = 1 << (SUB_BITS + BUCKETS - 1);

/// Counts a drain tests for zero at once.
const BLOCK: usize = 32;

/// Latency counts of one operation kind not yet added to its histograms: service
/// times and (open loop) response times side by side in one allocation, so that one
/// check finds both. Pages of response times a closed-loop run never touches are never
/// backed by memory.
#[derive(Clone)]
pub struct Tally {
    counts: Box<[u64; 2 * TALLY_LEN]>,
}

impl Default for Tally {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tally").finish_non_exhaustive()
    }
}

impl Tally {
    /// An empty tally.
    pub fn new() -> Self {
        let counts = vec![0u64; 2 * TALLY_LEN]
            .into_boxed_slice()
            .try_into()
            .expect("the vector has 2 * TALLY_LEN counts");
        Tally { counts }
    }

    /// Counts one sample of `ns` nanoseconds in `set`, as
    /// `Histogram::saturating_record(ns.max(1))` would: 0 counts as 1 ns (its count is
    /// kept apart and added as 1 ns), and samples beyond the histogram's range as one hour.
    #[inline]
    pub fn record(&mut self, set: LatencySet, ns: u64) {
        // hdrhistogram's index: bucket b = how many times ns must halve to fit in 2048,
        // then (b + 1) * 1024 + (ns >> b) - 1024.
        let bucket = (64 - SUB_BITS) - (ns | ((1 << SUB_BITS) - 1)).leading_zeros();
        let index = ((bucket as usize) << HALF_BITS) + (ns >> bucket) as usize;
        if index >= TALLY_LEN {
            return self.record_beyond_range(set);
        }
        self.counts[set as usize * TALLY_LEN + index] += 1;
    }

    /// A sample too large for the counts: one hour, as hdrhistogram saturates it.
    #[cold]
    #[inline(never)]
    fn record_beyond_range(&mut self, set: LatencySet) {
        self.record(set, HIST_MAX_NS);
    }

    /// Adds every count of `set` into `hist` (a histogram of kvmark's bounds, as
    /// [`super::new_histogram`] makes) and empties it.
    pub fn drain_into(&mut self, set: LatencySet, hist: &mut Histogram) {
        self.drain_with(set, |value, count| hist.saturating_record_n(value, count));
    }

    /// Hands every count of `set` to `each` as (value in ns, count), in ascending
    /// order, and empties it. Runs at hand-overs and step ends, never per sample: a
    /// scan of the whole set that skips 32 empty counts at a time (plus one histogram
    /// record per distinct value) costs less than keeping track, per sample, of what
    /// was used.
    pub fn drain_with(&mut self, set: LatencySet, mut each: impl FnMut(u64, u64)) {
        let counts = &mut self.counts[set as usize * TALLY_LEN..][..TALLY_LEN];
        for (block, run) in counts.chunks_exact_mut(BLOCK).enumerate() {
            if run.iter().fold(0, |any, &c| any | c) == 0 {
                continue;
            }
            for (offset, count) in run.iter_mut().enumerate() {
                if *count != 0 {
                    // Index 0 holds the samples of 0 ns, which count as 1 ns.
                    each(value_at(block * BLOCK + offset).max(1), *count);
                    *count = 0;
                }
            }
        }
    }
}

/// The lowest value counted at `index`.
fn value_at(index: usize) -> u64 {
    let bucket = (index >> HALF_BITS).saturating_sub(1);
    ((index - (bucket << HALF_BITS)) as u64) << bucket
}

/// One worker's tallies, per operation kind, each allocated on first use.
/// [`Tallies::drain_into`] moves them into a [`Recorder`].
#[derive(Debug, Default)]
pub struct Tallies {
    kinds: [Option<Tally>; OpKind::COUNT],
}

impl Tallies {
    /// The tally of `kind`.
    #[inline]
    pub fn kind(&mut self, kind: OpKind) -> &mut Tally {
        match &mut self.kinds[kind.index()] {
            Some(t) => t,
            slot => first_use(slot),
        }
    }

    /// Adds every count into `rec`'s histograms and empties the tallies; response
    /// times too when `response` (a paced worker: only it records them), creating a
    /// kind's response-time histogram when it has any.
    pub fn drain_into(&mut self, rec: &mut Recorder, response: bool) {
        for kind in OpKind::ALL {
            let Some(t) = self.kinds[kind.index()].as_mut() else {
                continue;
            };
            t.drain_with(LatencySet::Service, |value, count| {
                rec.kind_mut(kind).hist.saturating_record_n(value, count);
            });
            if response {
                t.drain_with(LatencySet::Response, |value, count| {
                    let resp = rec.kind_mut(kind).resp.get_or_insert_with(new_histogram);
                    resp.saturating_record_n(value, count);
                });
            }
        }
    }
}

#[cold]
#[inline(never)]
fn first_use(slot: &mut Option<Tally>) -> &mut Tally {
    slot.insert(Tally::new())
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;

    const SETS: [LatencySet; 2] = LatencySet::ALL;

    /// Records `values` both ways, in each latency set, and checks the histograms are
    /// indistinguishable (and that the other set stayed empty).
    fn same_as_direct(values: &[u64]) {
        for set in SETS {
            let mut direct = new_histogram();
            let mut tally = Tally::new();
            for &v in values {
                direct.saturating_record(v.max(1));
                tally.record(set, v);
            }
            let other = SETS.into_iter().find(|&s| s != set).unwrap();
            let mut folded = new_histogram();
            tally.drain_into(set, &mut folded);
            let mut again = new_histogram();
            tally.drain_into(set, &mut again);
            assert_eq!(again.len(), 0, "a drain empties the set");
            assert_eq!(folded, direct, "counts, total, min and max");
            assert_eq!(folded.len(), values.len() as u64);
            assert_eq!((folded.min(), folded.max()), (direct.min(), direct.max()));
            assert_eq!(folded.mean(), direct.mean());
            for q in [0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
                assert_eq!(folded.value_at_quantile(q), direct.value_at_quantile(q), "q {q}");
            }
            let mut nothing = new_histogram();
            tally.drain_into(other, &mut nothing);
            assert_eq!(nothing.len(), 0);
        }
    }

    #[test]
    fn the_layout_is_hdrhistograms() {
        let h = new_histogram();
        assert_eq!(h.distinct_values(), TALLY_LEN);
        // The first value the counts cannot hold is clamped; the last one they can is not.
        assert!(h.highest_equivalent(RANGE_END - 1) == RANGE_END - 1 && RANGE_END > HIST_MAX_NS);
        for index in [0, 1, 63, 1023, 1024, 2047, 2048, 2049, 3071, 3072, 5000, TALLY_LEN - 1] {
            let v = value_at(index);
            assert_eq!(h.lowest_equivalent(v), v, "index {index}");
            let mut one = new_histogram();
            one.record(v.max(1)).unwrap();
            let mut t = Tally::new();
            t.record(LatencySet::Response, v);
            assert_eq!(t.counts[TALLY_LEN + index], 1, "value {v} at index {index}");
            let mut folded = new_histogram();
            t.drain_into(LatencySet::Response, &mut folded);
            assert_eq!(folded, one);
        }
    }

    #[test]
    fn edge_values_fold_exactly() {
        // 0 counts as 1 ns; every value below 2048 has its own count (sub-64 ns too).
        same_as_direct(&[0]);
        same_as_direct(&[1]);
        same_as_direct(&(0..64).collect::<Vec<_>>());
        same_as_direct(&(1..5000).collect::<Vec<_>>());
        // Bucket edges, powers of two and their neighbours.
        let edges: Vec<u64> = (1..63).flat_map(|b| [(1u64 << b) - 1, 1 << b, (1 << b) + 1]).collect();
        same_as_direct(&edges);
        // One hour, the largest value the counts hold, and beyond: saturated at one hour.
        same_as_direct(&[
            HIST_MAX_NS - 1,
            HIST_MAX_NS,
            HIST_MAX_NS + 1,
            RANGE_END - 1,
            RANGE_END,
            RANGE_END + 1,
            u64::MAX / 2,
            u64::MAX,
        ]);
        same_as_direct(&[u64::MAX]);
        same_as_direct(&[]);
    }

    #[test]
    fn random_values_fold_exactly() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for round in 0..10 {
            // Log-uniform over the whole range, so every bucket is hit.
            let values: Vec<u64> = (0..20_000)
                .map(|_| {
                    let bits = rng.random_range(0..64u32);
                    rng.random::<u64>() >> (63 - bits)
                })
                .collect();
            same_as_direct(&values);
            // Typical latencies: clustered, many repeats.
            let near: Vec<u64> = (0..20_000)
                .map(|_| rng.random_range(40..900_000u64) >> (round % 8))
                .collect();
            same_as_direct(&near);
        }
    }

    #[test]
    fn drains_add_to_what_a_histogram_holds_and_start_afresh() {
        let mut direct = [new_histogram(), new_histogram()];
        let mut folded = [new_histogram(), new_histogram()];
        let mut tally = Tally::new();
        for round in 1..=3u64 {
            for v in [5, 700, 12_345 * round, 9_000_000] {
                direct[0].saturating_record(v);
                tally.record(LatencySet::Service, v);
                direct[1].saturating_record(v * 3);
                tally.record(LatencySet::Response, v * 3);
            }
            for (i, set) in SETS.into_iter().enumerate() {
                tally.drain_into(set, &mut folded[i]);
                assert_eq!(folded[i], direct[i], "{set:?} after drain {round}");
            }
        }
        tally.drain_into(LatencySet::Service, &mut folded[0]);
        assert_eq!(folded[0], direct[0], "an empty tally adds nothing");
    }

    #[test]
    fn tallies_drain_into_a_recorder_as_direct_records_would() {
        let mut tallies = Tallies::default();
        let mut direct = Recorder::new();
        for v in [3u64, 40, 5_000] {
            tallies.kind(OpKind::Get).record(LatencySet::Service, v);
            direct.record(OpKind::Get, v, 1);
            tallies.kind(OpKind::Put).record(LatencySet::Service, v);
            tallies.kind(OpKind::Put).record(LatencySet::Response, v * 7);
            direct.record(OpKind::Put, v, 1).record_response(v * 7);
        }
        let mut rec = Recorder::new();
        tallies.drain_into(&mut rec, true);
        let (get, put) = (rec.kind_mut(OpKind::Get).clone(), rec.kind_mut(OpKind::Put).clone());
        assert_eq!(get.hist, direct.kind(OpKind::Get).unwrap().hist);
        assert!(get.resp.is_none(), "closed-loop kinds get no response histogram");
        assert_eq!(put.hist, direct.kind(OpKind::Put).unwrap().hist);
        assert_eq!(put.resp, direct.kind(OpKind::Put).unwrap().resp);
        assert!(rec.kind(OpKind::Del).is_none());
    }
}
