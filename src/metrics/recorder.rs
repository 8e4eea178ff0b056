//! The per-thread recorder: one histogram and a few counters per operation kind.
//!
//! A recorder belongs to one worker and is written without synchronisation; recorders
//! are merged exactly after the run (histogram addition is lossless).
//!
//! Two latencies exist per operation kind ([`LatencySet`]): the *service time* (the
//! engine call, always recorded) and, in open-loop runs only, the *response time* (from
//! the unit's intended start to the call's end, what a client would feel).

use std::sync::Arc;

use super::{Histogram, OpKind, PaceStats, SizeClasses, new_histogram};

/// Which latency a histogram holds. Sinks tag every histogram with [`LatencySet::tag`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LatencySet {
    /// The engine call alone, from just before it to just after (both modes).
    Service,
    /// From the unit's intended start on the paced schedule to the call's end: the
    /// unit's schedule lag plus the call's service time (open-loop runs only).
    Response,
}

impl LatencySet {
    /// Both sets, in report order.
    pub const ALL: [LatencySet; 2] = [LatencySet::Service, LatencySet::Response];

    /// The tag sinks write ("service", "response").
    pub fn tag(self) -> &'static str {
        match self {
            LatencySet::Service => "service",
            LatencySet::Response => "response",
        }
    }

    /// A heading for human reports.
    pub fn heading(self) -> &'static str {
        match self {
            LatencySet::Service => "service time (the engine call)",
            LatencySet::Response => "response time (from the unit's intended start, as a client would feel it)",
        }
    }
}

/// Counters and the latency histograms of one operation kind.
#[derive(Debug, Clone)]
pub struct KindStats {
    /// Service time: one sample per call, in nanoseconds. Its length is the call count.
    pub hist: Histogram,
    /// Response time, one sample per call, allocated only in open-loop (paced) runs.
    pub resp: Option<Histogram>,
    /// Key and value bytes handed to the engine by writes (put, mput, append).
    pub bytes: u64,
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
    /// Appends that wrote nothing because the value would have passed the value cap
    /// (`--max-value-bytes`): the engine said so, or the harness knew the size.
    pub skipped: u64,
    /// The first engine error message seen, for the report.
    pub first_error: Option<String>,
}

impl Default for KindStats {
    fn default() -> Self {
        Self::new()
    }
}

impl KindStats {
    /// Empty stats: no calls.
    pub fn new() -> Self {
        KindStats {
            hist: new_histogram(),
            resp: None,
            bytes: 0,
            prim_ops: 0,
            hits: 0,
            misses: 0,
            errors: 0,
            retries: 0,
            rows: 0,
            skipped: 0,
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
        if let Some(resp) = self.resp.as_mut() {
            resp.reset();
        }
        self.bytes = 0;
        self.prim_ops = 0;
        self.hits = 0;
        self.misses = 0;
        self.errors = 0;
        self.retries = 0;
        self.rows = 0;
        self.skipped = 0;
        self.first_error = None;
    }

    /// Records one response time (open loop). Runs record through [`super::tally`];
    /// this is the direct path the tests compare against.
    #[cfg(test)]
    pub fn record_response(&mut self, ns: u64) {
        self.resp.get_or_insert_with(new_histogram).saturating_record(ns.max(1));
    }

    /// The histogram of `set`, if this kind has one.
    pub fn latency(&self, set: LatencySet) -> Option<&Histogram> {
        match set {
            LatencySet::Service => Some(&self.hist),
            LatencySet::Response => self.resp.as_ref(),
        }
    }

    /// Every latency set this kind has, as (set, histogram): service always, response
    /// in open-loop runs.
    pub fn latency_sets(&self) -> impl Iterator<Item = (LatencySet, &Histogram)> {
        LatencySet::ALL
            .into_iter()
            .filter_map(|set| self.latency(set).map(|h| (set, h)))
    }

    /// Adds `other` into `self` exactly.
    pub fn merge(&mut self, other: &KindStats) {
        self.hist.add(&other.hist).expect("histograms share bounds");
        if let Some(theirs) = &other.resp {
            match &mut self.resp {
                Some(mine) => mine.add(theirs).expect("histograms share bounds"),
                None => self.resp = Some(theirs.clone()),
            }
        }
        self.bytes += other.bytes;
        self.prim_ops += other.prim_ops;
        self.hits += other.hits;
        self.misses += other.misses;
        self.errors += other.errors;
        self.retries += other.retries;
        self.rows += other.rows;
        self.skipped += other.skipped;
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
    /// How a paced worker kept its schedule (open-loop runs only).
    pace: Option<Box<PaceStats>>,
    /// The calls again, split by value size (`--size-classes` only).
    by_size: Option<Box<BySize>>,
}

/// Each operation kind's calls split by value size ([`SizeClasses`]): one recorder
/// per class, holding the same samples as the kind's own histogram (a call is in at
/// most one class; calls without a value are in none).
#[derive(Debug, Clone)]
pub struct BySize {
    /// The classes.
    pub classes: Arc<SizeClasses>,
    recs: Vec<Recorder>,
}

impl BySize {
    /// The recorder of `class`.
    pub fn class(&self, class: usize) -> &Recorder {
        &self.recs[class]
    }

    /// The classes of `kind` with calls, as (class, stats), ascending.
    pub fn of(&self, kind: OpKind) -> impl Iterator<Item = (usize, &KindStats)> {
        (self.recs.iter().enumerate()).filter_map(move |(class, rec)| rec.kind(kind).map(|st| (class, st)))
    }
}

/// One row of a report's latency table: an operation kind, or (`--size-classes`) one
/// value-size class of it.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// `put`, or `put<=4096` for a class.
    pub label: String,
    /// The kind.
    pub kind: OpKind,
    /// The class, for a class row.
    pub class: Option<usize>,
    /// Its counters and histograms.
    pub stats: &'a KindStats,
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
    /// primitive operations. Runs record through [`super::tally`]; this is the direct
    /// path the tests compare against and build recorders with.
    #[cfg(test)]
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

    /// Adds `other` into `self` exactly. Both must split by the same size classes, if
    /// they split at all (one run's recorders do; `kvmark merge` checks segments).
    pub fn merge(&mut self, other: &Recorder) {
        for (kind, stats) in other.used() {
            self.kind_mut(kind).merge(stats);
        }
        if let Some(theirs) = &other.pace {
            self.pace.get_or_insert_with(Default::default).merge(theirs);
        }
        if let Some(theirs) = &other.by_size {
            for (class, rec) in theirs.recs.iter().enumerate() {
                self.class_mut(&theirs.classes, class).merge(rec);
            }
        }
    }

    /// The recorder of size class `class` of `classes`, created on first use.
    pub fn class_mut(&mut self, classes: &Arc<SizeClasses>, class: usize) -> &mut Recorder {
        let by = self.by_size.get_or_insert_with(|| {
            Box::new(BySize {
                classes: Arc::clone(classes),
                recs: vec![Recorder::new(); classes.len()],
            })
        });
        // Runs per classified call: the pointer test spares the bounds' compare.
        assert!(
            Arc::ptr_eq(&by.classes, classes) || by.classes == *classes,
            "one recorder, one set of size classes"
        );
        &mut by.recs[class]
    }

    /// Every kind used, each followed by its value-size classes with calls (when the
    /// run splits by size): the rows of the reports' latency tables.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut rows = Vec::new();
        for (kind, stats) in self.used() {
            rows.push(Row {
                label: kind.name().to_string(),
                kind,
                class: None,
                stats,
            });
            if let Some(by) = self.by_size() {
                rows.extend(by.of(kind).map(|(class, stats)| Row {
                    label: by.classes.label(kind, class),
                    kind,
                    class: Some(class),
                    stats,
                }));
            }
        }
        rows
    }

    /// The calls split by value size, when the run splits them and any call has a class.
    pub fn by_size(&self) -> Option<&BySize> {
        self.by_size
            .as_deref()
            .filter(|b| b.recs.iter().any(|r| r.used().next().is_some()))
    }

    /// Schedule statistics, in open-loop runs.
    pub fn pace(&self) -> Option<&PaceStats> {
        self.pace.as_deref()
    }

    /// Attaches a paced worker's schedule statistics (merged into any already here).
    pub fn add_pace(&mut self, stats: &PaceStats) {
        self.pace.get_or_insert_with(Default::default).merge(stats);
    }

    /// True when any kind has response times (an open-loop run).
    pub fn has_response(&self) -> bool {
        self.used().any(|(_, s)| s.resp.is_some())
    }

    /// Response times of `kind`, or of every kind merged when None; None when the
    /// run was not paced.
    pub fn response(&self, kind: Option<OpKind>) -> Option<Histogram> {
        let mut out: Option<Histogram> = None;
        for (k, s) in self.used() {
            if kind.is_some_and(|want| want != k) {
                continue;
            }
            if let Some(h) = &s.resp {
                match &mut out {
                    Some(all) => all.add(h).expect("histograms share bounds"),
                    None => out = Some(h.clone()),
                }
            }
        }
        out
    }

    /// Key and value bytes written (put, mput, append).
    pub fn write_bytes(&self) -> u64 {
        self.used().map(|(_, s)| s.bytes).sum()
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
        self.used().next().is_none() && self.pace.is_none()
    }

    /// Empties every kind, keeping the allocations, so an interval recorder can be
    /// reused without allocating on a worker's hot path.
    pub fn reset(&mut self) {
        for stats in self.kinds.iter_mut().flatten() {
            stats.reset();
        }
        self.pace = None;
        if let Some(by) = &mut self.by_size {
            by.recs.iter_mut().for_each(Recorder::reset);
        }
    }

    /// Allocates (empty) every kind and latency set `other` has that `self` lacks,
    /// so that `self` can later be recorded into without allocating.
    pub fn allocate_kinds_of(&mut self, other: &Recorder) {
        for (slot, theirs) in self.kinds.iter_mut().zip(&other.kinds) {
            let Some(theirs) = theirs else { continue };
            let mine = slot.get_or_insert_with(|| Box::new(KindStats::new()));
            if mine.resp.is_none() && theirs.resp.is_some() {
                mine.resp = Some(new_histogram());
            }
        }
        if let Some(theirs) = &other.by_size {
            for (class, rec) in theirs.recs.iter().enumerate() {
                self.class_mut(&theirs.classes, class).allocate_kinds_of(rec);
            }
        }
    }

    /// An empty recorder with the same kinds allocated as `self`.
    pub fn empty_like(&self) -> Recorder {
        let mut r = Recorder::new();
        r.allocate_kinds_of(self);
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
        r.record(OpKind::Get, 10, 1).record_response(99);
        let paced = r.empty_like();
        assert!(paced.kinds[OpKind::Get.index()].as_ref().unwrap().resp.is_some());
        assert!(paced.kinds[OpKind::Put.index()].as_ref().unwrap().resp.is_none());
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
    fn response_times_merge_exactly_and_only_where_paced() {
        let mut closed = Recorder::new();
        closed.record(OpKind::Get, 100, 1);
        assert!(!closed.has_response());
        assert!(closed.response(None).is_none());
        assert_eq!(closed.kind(OpKind::Get).unwrap().latency_sets().count(), 1);

        let mut open = Recorder::new();
        open.record(OpKind::Get, 100, 1).record_response(5_000);
        open.record(OpKind::Put, 200, 1).record_response(7_000);
        let sets: Vec<&str> = open
            .kind(OpKind::Get)
            .unwrap()
            .latency_sets()
            .map(|(s, _)| s.tag())
            .collect();
        assert_eq!(sets, vec!["service", "response"]);
        let mut all = Recorder::new();
        all.merge(&closed);
        all.merge(&open);
        all.merge(&open);
        let get = all.kind(OpKind::Get).unwrap();
        assert_eq!((get.count(), get.resp.as_ref().unwrap().len()), (3, 2));
        assert_eq!(all.response(None).unwrap().len(), 4);
        let put = all.response(Some(OpKind::Put)).unwrap();
        assert_eq!((put.len(), put.equivalent(put.max(), 7_000)), (2, true));
    }

    #[test]
    fn pace_stats_travel_with_the_recorder() {
        let mut a = Recorder::new();
        let mut p = PaceStats::default();
        p.unit(1_000, true);
        a.add_pace(&p);
        assert!(!a.is_empty());
        let mut all = Recorder::new();
        all.merge(&a);
        all.merge(&a);
        assert_eq!(all.pace().unwrap().waited, 2);
    }

    #[test]
    fn size_classes_merge_reset_and_preallocate_like_kinds() {
        let classes = Arc::new(SizeClasses::new(vec![256]).unwrap());
        let mut a = Recorder::new();
        a.record(OpKind::Put, 10, 1);
        a.class_mut(&classes, 1).record(OpKind::Put, 10, 1);
        let mut all = Recorder::new();
        all.merge(&a);
        all.merge(&a);
        let by = all.by_size().unwrap();
        assert_eq!(by.class(1).kind(OpKind::Put).unwrap().count(), 2);
        assert!(by.class(0).kind(OpKind::Put).is_none());
        let rows: Vec<String> = all.rows().into_iter().map(|r| r.label).collect();
        assert_eq!(rows, vec!["put", "put>256"]);
        let like = a.empty_like();
        assert!(like.by_size().is_none(), "allocated, but no calls");
        assert!(like.by_size.as_ref().unwrap().recs[1].kinds[OpKind::Put.index()].is_some());
        a.reset();
        assert!(a.by_size().is_none() && a.rows().is_empty());
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
