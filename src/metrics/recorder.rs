//! The per-thread recorder: one histogram and a few counters per operation kind.
//!
//! A recorder belongs to one worker and is written without synchronisation; recorders
//! are merged exactly after the run (histogram addition is lossless).

use super::{Histogram, OpKind, new_histogram};

/// Counters and the latency histogram of one operation kind.
#[derive(Debug, Clone)]
pub struct KindStats {
    /// One sample per call, in nanoseconds. Its length is the call count.
    pub hist: Histogram,
    /// Primitive operations: 1 per single-key call, range or scan; one per key of a
    /// multi-key call.
    pub prim_ops: u64,
    /// Keys found (get, and each key of mget).
    pub hits: u64,
    /// Keys not found (get, and each key of mget).
    pub misses: u64,
    /// Calls that failed with an engine error (after retries).
    pub errors: u64,
    /// Busy/try-again retries performed inside the timed region.
    pub retries: u64,
    /// Rows returned by range and scan calls.
    pub rows: u64,
    /// The first engine error message seen, for the report.
    pub first_error: Option<String>,
}

impl KindStats {
    fn new() -> Self {
        KindStats {
            hist: new_histogram(),
            prim_ops: 0,
            hits: 0,
            misses: 0,
            errors: 0,
            retries: 0,
            rows: 0,
            first_error: None,
        }
    }

    /// Number of calls recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Empties the stats, keeping the histogram's allocation.
    pub fn reset(&mut self) {
        self.hist.reset();
        self.prim_ops = 0;
        self.hits = 0;
        self.misses = 0;
        self.errors = 0;
        self.retries = 0;
        self.rows = 0;
        self.first_error = None;
    }

    /// Adds `other` into `self` exactly.
    pub fn merge(&mut self, other: &KindStats) {
        self.hist.add(&other.hist).expect("histograms share bounds");
        self.prim_ops += other.prim_ops;
        self.hits += other.hits;
        self.misses += other.misses;
        self.errors += other.errors;
        self.retries += other.retries;
        self.rows += other.rows;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }
}

/// Everything one worker measured, per operation kind. Kinds never used allocate
/// nothing (a histogram is about 270 KB). A kind counts as used once it has a call:
/// a recycled recorder keeps its allocations but reports only what it recorded since
/// its last [`Recorder::reset`].
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    kinds: [Option<Box<KindStats>>; OpKind::COUNT],
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stats of `kind`, created on first use.
    #[inline]
    pub fn kind_mut(&mut self, kind: OpKind) -> &mut KindStats {
        self.kinds[kind.index()].get_or_insert_with(|| Box::new(KindStats::new()))
    }

    /// The stats of `kind`, if it has calls.
    pub fn kind(&self, kind: OpKind) -> Option<&KindStats> {
        self.kinds[kind.index()].as_deref().filter(|s| s.count() > 0)
    }

    /// Records one call of `kind` that took `ns` nanoseconds and touched `prim_ops`
    /// primitive operations.
    #[inline]
    pub fn record(&mut self, kind: OpKind, ns: u64, prim_ops: u64) -> &mut KindStats {
        let stats = self.kind_mut(kind);
        // Zero-duration samples (possible with a coarse clock) count as 1 ns.
        stats.hist.saturating_record(ns.max(1));
        stats.prim_ops += prim_ops;
        stats
    }

    /// The kinds that were used, in report order.
    pub fn used(&self) -> impl Iterator<Item = (OpKind, &KindStats)> {
        OpKind::ALL.into_iter().filter_map(|k| self.kind(k).map(|s| (k, s)))
    }

    /// Adds `other` into `self` exactly.
    pub fn merge(&mut self, other: &Recorder) {
        for (kind, stats) in other.used() {
            self.kind_mut(kind).merge(stats);
        }
    }

    /// Total primitive operations over all kinds.
    pub fn prim_ops(&self) -> u64 {
        self.used().map(|(_, s)| s.prim_ops).sum()
    }

    /// Total engine errors over all kinds.
    pub fn errors(&self) -> u64 {
        self.used().map(|(_, s)| s.errors).sum()
    }

    /// Total retries over all kinds.
    pub fn retries(&self) -> u64 {
        self.used().map(|(_, s)| s.retries).sum()
    }

    /// Primitive write operations (put, mput keys, append): the keys a seed wrote.
    pub fn write_ops(&self) -> u64 {
        self.used().filter(|(k, _)| k.writes()).map(|(_, s)| s.prim_ops).sum()
    }

    /// Hit rate over get and mget keys, or None when no key was looked up.
    pub fn hit_rate(&self) -> Option<f64> {
        let (mut hits, mut total) = (0u64, 0u64);
        for kind in [OpKind::Get, OpKind::Mget] {
            if let Some(s) = self.kind(kind) {
                hits += s.hits;
                total += s.hits + s.misses;
            }
        }
        (total > 0).then(|| hits as f64 / total as f64)
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.used().next().is_none()
    }

    /// Empties every kind, keeping the allocations, so an interval recorder can be
    /// reused without allocating on a worker's hot path.
    pub fn reset(&mut self) {
        for stats in self.kinds.iter_mut().flatten() {
            stats.reset();
        }
    }

    /// Allocates (empty) every kind `other` has that `self` lacks, so that `self`
    /// can later be recorded into without allocating.
    pub fn allocate_kinds_of(&mut self, other: &Recorder) {
        for (slot, theirs) in self.kinds.iter_mut().zip(&other.kinds) {
            if slot.is_none() && theirs.is_some() {
                *slot = Some(Box::new(KindStats::new()));
            }
        }
    }

    /// An empty recorder with the same kinds allocated as `self`.
    pub fn empty_like(&self) -> Recorder {
        let mut r = Recorder::new();
        for (slot, mine) in r.kinds.iter_mut().zip(&self.kinds) {
            if mine.is_some() {
                *slot = Some(Box::new(KindStats::new()));
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_exact() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        for v in 1..=1000 {
            a.record(OpKind::Get, v, 1).hits += 1;
            b.record(OpKind::Get, v * 1000, 1).misses += 1;
        }
        b.record(OpKind::Mput, 5, 64);
        let mut all = Recorder::new();
        all.merge(&a);
        all.merge(&b);
        let get = all.kind(OpKind::Get).unwrap();
        assert_eq!(get.count(), 2000);
        assert_eq!(get.hist.max(), b.kind(OpKind::Get).unwrap().hist.max());
        assert_eq!(all.prim_ops(), 2064);
        assert_eq!(all.hit_rate(), Some(0.5));
        assert_eq!(all.write_ops(), 64);
    }

    #[test]
    fn reset_keeps_allocations_but_forgets_calls() {
        let mut r = Recorder::new();
        r.record(OpKind::Get, 10, 1).hits += 1;
        r.record(OpKind::Put, 10, 1);
        let like = r.empty_like();
        assert!(like.is_empty());
        assert!(like.kinds[OpKind::Get.index()].is_some());
        let mut grown = Recorder::new();
        grown.allocate_kinds_of(&r);
        assert!(grown.is_empty() && grown.kinds[OpKind::Put.index()].is_some());
        r.reset();
        assert!(r.is_empty());
        assert!(r.kind(OpKind::Get).is_none());
        r.record(OpKind::Put, 20, 1);
        let used: Vec<OpKind> = r.used().map(|(k, _)| k).collect();
        assert_eq!(used, vec![OpKind::Put], "an emptied kind is not reported");
        let mut total = Recorder::new();
        total.merge(&r);
        assert!(total.kinds[OpKind::Get.index()].is_none(), "merging skips empty kinds");
    }

    #[test]
    fn unused_kinds_allocate_nothing() {
        let mut r = Recorder::new();
        assert!(r.is_empty());
        r.record(OpKind::Del, 10, 1);
        assert_eq!(r.used().count(), 1);
        assert!(r.kind(OpKind::Put).is_none());
    }
}
