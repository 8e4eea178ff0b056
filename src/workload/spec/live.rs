//! One thread's live keys in a section: the ids it inserted and has not deleted.
//!
//! Ids sit in insertion order in a flat vector (8 bytes per key), so a rank drawn by a
//! selection distribution maps straight to a key: position 0 is the oldest. A point
//! delete marks its slot dead; a draw that lands on a dead slot is drawn again, which
//! keeps the selection distribution over exactly the live keys. When dead slots pass
//! half of the vector it is compacted, keeping the order.
//!
//! Until the first delete, a set can stay *dense*: when inserts take ids in the order
//! the thread hands them out, position i holds the i-th id handed out, which the
//! generator computes instead of storing (no memory, no cache miss per pick). The first
//! delete writes the vector out.
//!
//! Sections with range deletes or start-end ranges also keep the live keys' order
//! values in a B-tree, to find the key `count` places after a start key and to remove a
//! whole range at once. The tree is built at the first range operation, in one pass
//! from sorted values (full nodes), and holds 8-byte values when the key has no
//! varying part before its id. Slots of range-deleted keys are found dead lazily, when
//! a draw lands on one.
//!
//! With `hot_probability` in use, keys with and without a hot prefix are kept in two
//! vectors so an operation can pick from either.
//!
//! Keys with a lifetime are deleted by the harness, which reports the *tag* the insert
//! returned (class and insertion sequence number). Until the first compaction a key's
//! slot is its sequence number; a set that tracks tags keeps, from then on, the
//! sequence number of each slot beside it (sorted, since compaction keeps insertion
//! order), so finding an expired key is a binary search. Sets that do not track tags
//! store nothing more and do nothing more per operation.

use std::collections::BTreeSet;

use rand::{Rng, RngExt};

use crate::workload::dist::Selector;

/// A dead slot.
const DEAD: u64 = u64::MAX;

/// Draws on dead slots tolerated before compacting.
const MAX_MISSES: u32 = 64;

/// What a live set needs to know about ids it does not store.
pub trait IdSource {
    /// The `i`-th id the thread handed out.
    fn nth(&self, i: u64) -> u64;
    /// The order value of an id's key.
    fn order(&mut self, id: u64) -> u128;
}

/// Live ids in insertion order.
#[derive(Debug, Default)]
struct Slots {
    ids: Vec<u64>,
    /// Slots known dead (marked).
    dead: u64,
    /// While dense: the number of slots, whose ids are computed, not stored.
    dense: Option<u64>,
    /// Sequence number of each slot, once a set that tracks tags compacted (before,
    /// a slot's sequence number is its position).
    seqs: Option<Vec<u64>>,
    /// The next sequence number, once `seqs` is kept.
    next_seq: u64,
}

impl Slots {
    fn len(&self) -> u64 {
        self.dense.unwrap_or(self.ids.len() as u64)
    }

    /// The slot of insertion sequence number `seq`, if it was not compacted away.
    fn slot_of(&self, seq: u64) -> Option<usize> {
        match &self.seqs {
            None => (seq < self.len()).then_some(seq as usize),
            Some(s) => s.binary_search(&seq).ok(),
        }
    }

    /// Writes a dense vector out (before the first delete).
    fn materialise(&mut self, src: &dyn IdSource) {
        if let Some(n) = self.dense.take() {
            self.ids = (0..n).map(|i| src.nth(i)).collect();
        }
    }

    fn live_ids<'a>(&'a self, src: &'a dyn IdSource) -> Box<dyn Iterator<Item = u64> + 'a> {
        match self.dense {
            Some(n) => Box::new((0..n).map(|i| src.nth(i))),
            None => Box::new(self.ids.iter().copied().filter(|&id| id != DEAD)),
        }
    }
}

/// Order values of the live keys.
#[derive(Debug)]
enum Index {
    /// Values below 2^64.
    Narrow(BTreeSet<u64>),
    /// Any value.
    Wide(BTreeSet<u128>),
}

impl Index {
    fn build(mut values: Vec<u128>, narrow: bool) -> Index {
        values.sort_unstable();
        if narrow {
            Index::Narrow(values.into_iter().map(|v| v as u64).collect())
        } else {
            Index::Wide(values.into_iter().collect())
        }
    }

    fn insert(&mut self, v: u128) {
        match self {
            Index::Narrow(s) => s.insert(v as u64),
            Index::Wide(s) => s.insert(v),
        };
    }

    fn remove(&mut self, v: u128) {
        match self {
            Index::Narrow(s) => s.remove(&(v as u64)),
            Index::Wide(s) => s.remove(&v),
        };
    }

    fn contains(&self, v: u128) -> bool {
        match self {
            Index::Narrow(s) => s.contains(&(v as u64)),
            Index::Wide(s) => s.contains(&v),
        }
    }

    fn nth_from(&self, from: u128, n: usize) -> Option<u128> {
        match self {
            Index::Narrow(s) => {
                let from = u64::try_from(from).ok()?;
                s.range(from..).nth(n).map(|&v| u128::from(v))
            }
            Index::Wide(s) => s.range(from..).nth(n).copied(),
        }
    }

    /// Removes the values in [lo, hi); returns how many. `doomed` is scratch space,
    /// kept between calls so a range delete allocates nothing once it has grown.
    fn remove_range(&mut self, lo: u128, hi: u128, doomed: &mut Vec<u128>) -> u64 {
        doomed.clear();
        match self {
            Index::Narrow(s) => {
                let Ok(lo) = u64::try_from(lo) else {
                    return 0;
                };
                let hi = u64::try_from(hi).unwrap_or(u64::MAX);
                doomed.extend(s.range(lo..hi).map(|&v| u128::from(v)));
                for v in doomed.iter() {
                    s.remove(&(*v as u64));
                }
            }
            Index::Wide(s) => {
                doomed.extend(s.range(lo..hi).copied());
                for v in doomed.iter() {
                    s.remove(v);
                }
            }
        }
        doomed.len() as u64
    }
}

/// A picked live key.
#[derive(Debug, Clone, Copy)]
pub struct Picked {
    class: usize,
    slot: usize,
    /// Its id.
    pub id: u64,
}

/// One thread's live set in one section.
#[derive(Debug)]
pub struct LiveSet {
    classes: Vec<Slots>,
    /// Whether the section needs the order index, and if its values fit 64 bits.
    ordered: bool,
    narrow: bool,
    index: Option<Index>,
    live: u64,
    /// Keys removed by range deletes whose slots are not marked yet.
    unmarked: u64,
    /// A range delete happened: picks must check the index.
    range_deleted: bool,
    /// Scratch for range deletes.
    doomed: Vec<u128>,
    /// Keys may be removed by the tag their insert returned ([`LiveSet::expire`]).
    track: bool,
}

/// The bit of a tag that holds the class.
const CLASS_BIT: u64 = 1 << 63;

impl LiveSet {
    /// An empty set. `ordered` will keep the order index (`narrow`: values fit 64
    /// bits), `hot_classes` keeps two vectors, `dense` starts dense (inserts take ids
    /// in the order they are handed out).
    pub fn new(ordered: bool, narrow: bool, hot_classes: bool, dense: bool) -> LiveSet {
        let dense = dense && !hot_classes;
        LiveSet {
            classes: (0..if hot_classes { 2 } else { 1 })
                .map(|_| Slots {
                    dense: dense.then_some(0),
                    ..Slots::default()
                })
                .collect(),
            ordered,
            narrow,
            index: None,
            live: 0,
            unmarked: 0,
            range_deleted: false,
            doomed: Vec::new(),
            track: false,
        }
    }

    /// Makes tags from [`LiveSet::insert`] valid for [`LiveSet::expire`] for as long as
    /// the set lives. Call before the first insert.
    pub fn track_tags(&mut self) {
        debug_assert!(self.classes.iter().all(|c| c.len() == 0), "tracking starts empty");
        self.track = true;
    }

    /// Reserves room for `n` more keys (sizes the vector exactly when the count is known).
    /// A count past what memory can hold reserves nothing: a time-bounded run may never
    /// make them, and one that does grows the vector as it goes.
    pub fn reserve(&mut self, n: usize) {
        if self.classes.len() == 1 && self.classes[0].dense.is_none() {
            let _ = self.classes[0].ids.try_reserve_exact(n);
        }
    }

    /// Live keys.
    pub fn len(&self) -> u64 {
        self.live
    }

    /// True when no key is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Adds a fresh id. Returns its tag, for [`LiveSet::expire`] when the set tracks
    /// tags (meaningless otherwise).
    #[inline]
    pub fn insert(&mut self, id: u64, hot: bool, src: &mut dyn IdSource) -> u64 {
        let class = if self.classes.len() == 2 { usize::from(hot) } else { 0 };
        let slots = &mut self.classes[class];
        let seq = match &mut slots.dense {
            Some(n) => {
                *n += 1;
                *n - 1
            }
            None => {
                slots.ids.push(id);
                match &mut slots.seqs {
                    None => slots.ids.len() as u64 - 1,
                    Some(seqs) => {
                        let seq = slots.next_seq;
                        seqs.push(seq);
                        slots.next_seq += 1;
                        seq
                    }
                }
            }
        };
        if let Some(ix) = &mut self.index {
            ix.insert(src.order(id));
        }
        self.live += 1;
        seq | (class as u64) << 63
    }

    /// Removes the key of `tag` (returned by its insert) if it is still live: the
    /// harness deleted it when its lifetime ended. A key that a point or range delete
    /// removed first is left alone. Returns whether the key was live. The set must
    /// track tags.
    pub fn expire(&mut self, tag: u64, src: &mut dyn IdSource) -> bool {
        debug_assert!(self.track, "expire needs a set that tracks tags");
        let class = usize::from(tag & CLASS_BIT != 0);
        let Some(slots) = self.classes.get_mut(class) else {
            return false;
        };
        let Some(slot) = slots.slot_of(tag & !CLASS_BIT) else {
            return false;
        };
        let id = match slots.dense {
            Some(_) => src.nth(slot as u64),
            None => slots.ids[slot],
        };
        if id == DEAD {
            return false;
        }
        if self.range_deleted
            && let Some(ix) = &self.index
            && !ix.contains(src.order(id))
        {
            // A range delete removed it already; only its slot was left to mark.
            slots.ids[slot] = DEAD;
            slots.dead += 1;
            self.unmarked = self.unmarked.saturating_sub(1);
            return false;
        }
        self.remove(Picked { class, slot, id }, src);
        true
    }

    /// Picks a live key: from the hot class with probability `hot` (when given and
    /// both classes exist), then at the position `sel` draws.
    pub fn pick<R: Rng + ?Sized>(
        &mut self,
        sel: &mut Selector,
        hot: Option<f64>,
        rng: &mut R,
        src: &mut dyn IdSource,
    ) -> Option<Picked> {
        if self.live == 0 {
            return None;
        }
        for attempt in 0..2 * MAX_MISSES {
            if attempt == MAX_MISSES {
                self.compact(src);
            }
            let class = self.choose_class(hot, rng);
            let slots = &mut self.classes[class];
            let n = slots.len();
            if n == 0 {
                continue;
            }
            let slot = sel.pick(n, rng) as usize;
            if slots.dense.is_some() {
                // Nothing was deleted: every position is live.
                return Some(Picked {
                    class,
                    slot,
                    id: src.nth(slot as u64),
                });
            }
            let id = slots.ids[slot];
            if id == DEAD {
                continue;
            }
            if self.range_deleted
                && let Some(ix) = &self.index
                && !ix.contains(src.order(id))
            {
                slots.ids[slot] = DEAD;
                slots.dead += 1;
                self.unmarked = self.unmarked.saturating_sub(1);
                continue;
            }
            return Some(Picked { class, slot, id });
        }
        None
    }

    fn choose_class<R: Rng + ?Sized>(&self, hot: Option<f64>, rng: &mut R) -> usize {
        if self.classes.len() == 1 {
            return 0;
        }
        let sizes = [self.classes[0].len(), self.classes[1].len()];
        let want_hot = match hot {
            Some(p) => rng.random::<f64>() < p,
            None => rng.random_range(0..(sizes[0] + sizes[1]).max(1)) >= sizes[0],
        };
        let class = usize::from(want_hot);
        if sizes[class] == 0 { 1 - class } else { class }
    }

    /// Removes a picked key (a point delete).
    pub fn remove(&mut self, p: Picked, src: &mut dyn IdSource) {
        let slots = &mut self.classes[p.class];
        slots.materialise(src);
        debug_assert_eq!(slots.ids[p.slot], p.id);
        slots.ids[p.slot] = DEAD;
        slots.dead += 1;
        if let Some(ix) = &mut self.index {
            ix.remove(src.order(p.id));
        }
        self.live -= 1;
        self.maybe_compact(src);
    }

    /// Builds the order index from the live keys, if the section keeps one and it
    /// is not built yet.
    fn ensure_index(&mut self, src: &mut dyn IdSource) -> Option<&mut Index> {
        if self.ordered && self.index.is_none() {
            let ids: Vec<u64> = self.classes.iter().flat_map(|c| c.live_ids(src)).collect();
            let values = ids.into_iter().map(|id| src.order(id)).collect();
            self.index = Some(Index::build(values, self.narrow));
        }
        self.index.as_mut()
    }

    /// The order value `count` live keys after `from` (at or after it), if any.
    pub fn order_after(&mut self, from: u128, count: u64, src: &mut dyn IdSource) -> Option<u128> {
        self.ensure_index(src)?.nth_from(from, usize::try_from(count).ok()?)
    }

    /// Removes every live key with order value in [lo, hi); returns how many.
    pub fn remove_range(&mut self, lo: u128, hi: u128, src: &mut dyn IdSource) -> u64 {
        if lo >= hi {
            return 0;
        }
        for c in &mut self.classes {
            c.materialise(src);
        }
        let mut doomed = std::mem::take(&mut self.doomed);
        let n = match self.ensure_index(src) {
            Some(ix) => ix.remove_range(lo, hi, &mut doomed),
            None => 0,
        };
        self.doomed = doomed;
        self.range_deleted = true;
        self.live -= n;
        self.unmarked += n;
        self.maybe_compact(src);
        n
    }

    /// Compacts when dead slots are more than half of all slots.
    fn maybe_compact(&mut self, src: &mut dyn IdSource) {
        let slots: u64 = self.classes.iter().map(Slots::len).sum();
        let dead: u64 = self.classes.iter().map(|c| c.dead).sum::<u64>() + self.unmarked;
        if slots >= 1024 && dead * 2 > slots {
            self.compact(src);
        }
    }

    /// Drops dead slots, keeping insertion order (and, when tracking tags, each
    /// slot's sequence number beside it).
    fn compact(&mut self, src: &mut dyn IdSource) {
        let index = &self.index;
        let check = self.range_deleted;
        for c in self.classes.iter_mut().filter(|c| c.dense.is_none()) {
            if self.track && c.seqs.is_none() {
                // The first compaction: until now a slot's sequence number was its position.
                c.next_seq = c.ids.len() as u64;
                c.seqs = Some((0..c.next_seq).collect());
            }
            let mut kept = 0;
            for i in 0..c.ids.len() {
                let id = c.ids[i];
                if id != DEAD && (!check || index.as_ref().is_none_or(|ix| ix.contains(src.order(id)))) {
                    c.ids[kept] = id;
                    if let Some(seqs) = &mut c.seqs {
                        seqs[kept] = seqs[i];
                    }
                    kept += 1;
                }
            }
            c.ids.truncate(kept);
            if let Some(seqs) = &mut c.seqs {
                seqs.truncate(kept);
            }
            c.dead = 0;
        }
        self.unmarked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::dist::Dist;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Ids are slot numbers, order values are ids.
    struct Identity;
    impl IdSource for Identity {
        fn nth(&self, i: u64) -> u64 {
            i
        }
        fn order(&mut self, id: u64) -> u128 {
            u128::from(id)
        }
    }

    #[test]
    fn deleted_keys_are_never_picked() {
        for narrow in [true, false] {
            let mut live = LiveSet::new(true, narrow, false, true);
            for id in 0..1000u64 {
                live.insert(id, false, &mut Identity);
            }
            let mut sel = Selector::new(Some(&Dist::zipf(None, None, false).unwrap())).unwrap();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
            // Point-delete 100 picks (mostly the hottest), then range-delete [200, 700).
            let mut deleted = std::collections::HashSet::new();
            for _ in 0..100 {
                let p = live.pick(&mut sel, None, &mut rng, &mut Identity).unwrap();
                assert!(deleted.insert(p.id), "a deleted key was picked again");
                live.remove(p, &mut Identity);
            }
            let in_range = (200..700u64).filter(|id| !deleted.contains(id)).count() as u64;
            assert_eq!(live.remove_range(200, 700, &mut Identity), in_range);
            assert_eq!(live.len(), 1000 - 100 - in_range);
            assert!(live.order_after(199, 1, &mut Identity).is_some_and(|o| o >= 700));
            for _ in 0..10_000 {
                let p = live.pick(&mut sel, None, &mut rng, &mut Identity).unwrap();
                assert!(!(200..700).contains(&p.id), "range-deleted id {} picked", p.id);
                assert!(!deleted.contains(&p.id), "point-deleted id {} picked", p.id);
            }
        }
    }

    /// Inserts ids 0..n into a tracking set (hot when `hot(id)`); returns it and the tags.
    fn tracked(n: u64, ordered: bool, dense: bool, hot: fn(u64) -> bool) -> (LiveSet, Vec<u64>) {
        let mut live = LiveSet::new(ordered, true, hot(1), dense); // hot(1): two classes at all
        live.track_tags();
        let tags = (0..n).map(|id| live.insert(id, hot(id), &mut Identity)).collect();
        (live, tags)
    }

    /// Every id the set can still pick, by picking many times.
    fn pickable(live: &mut LiveSet) -> std::collections::HashSet<u64> {
        let mut sel = Selector::new(None).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        (0..20_000)
            .filter_map(|_| live.pick(&mut sel, None, &mut rng, &mut Identity))
            .map(|p| p.id)
            .collect()
    }

    #[test]
    fn expired_tags_remove_their_keys_across_compactions() {
        for dense in [true, false] {
            let (mut live, tags) = tracked(5000, false, dense, |_| false);
            // Expire in a scrambled order, so compactions (past half dead) happen with
            // live keys on both sides of the expired ones.
            let mut order: Vec<u64> = (0..5000).collect();
            order.sort_by_key(|&i| crate::workload::dist::fnv1a64(i));
            for (n, &i) in order[..4000].iter().enumerate() {
                assert!(live.expire(tags[i as usize], &mut Identity), "id {i} was live");
                assert!(!live.expire(tags[i as usize], &mut Identity), "id {i} expires once");
                assert_eq!(live.len(), 5000 - n as u64 - 1);
            }
            // Keys inserted after a compaction get tags that still work.
            let late: Vec<u64> = (5000..5100).map(|id| live.insert(id, false, &mut Identity)).collect();
            assert!(live.expire(late[7], &mut Identity));
            let want: std::collections::HashSet<u64> = order[4000..]
                .iter()
                .copied()
                .chain((5000..5100).filter(|&id| id != 5007))
                .collect();
            assert_eq!(live.len(), want.len() as u64);
            assert_eq!(pickable(&mut live), want, "dense {dense}");
        }
    }

    #[test]
    fn expiring_a_key_already_deleted_changes_nothing() {
        let (mut live, tags) = tracked(2000, true, true, |_| false);
        let mut sel = Selector::new(None).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let p = live.pick(&mut sel, None, &mut rng, &mut Identity).unwrap();
        live.remove(p, &mut Identity);
        assert!(!live.expire(tags[p.id as usize], &mut Identity), "point-deleted first");
        assert_eq!(
            live.remove_range(100, 300, &mut Identity),
            200 - u64::from((100..300).contains(&p.id))
        );
        let before = live.len();
        assert!(!live.expire(tags[150], &mut Identity), "range-deleted first");
        assert_eq!(live.len(), before);
        assert!(live.expire(tags[1500], &mut Identity) || p.id == 1500);
        assert!(
            !pickable(&mut live)
                .iter()
                .any(|&id| (100..300).contains(&id) || id == 1500)
        );
    }

    #[test]
    fn tags_name_their_hot_class() {
        let (mut live, tags) = tracked(2, false, false, |id| id == 1);
        assert!(live.expire(tags[1], &mut Identity));
        assert_eq!(pickable(&mut live), [0].into_iter().collect());
        assert!(live.expire(tags[0], &mut Identity) && live.is_empty());
    }

    #[test]
    fn the_index_is_built_when_first_needed_and_kept_up() {
        // Not dense: these ids are not handed out in `nth` order.
        let mut live = LiveSet::new(true, true, false, false);
        for id in (0..100u64).map(|i| i * 10) {
            live.insert(id, false, &mut Identity);
        }
        assert!(live.index.is_none(), "no range operation yet");
        assert_eq!(live.order_after(15, 2, &mut Identity), Some(40));
        live.insert(25, false, &mut Identity);
        assert_eq!(live.order_after(15, 2, &mut Identity), Some(30));
        assert_eq!(live.order_after(985, 1, &mut Identity), None);
    }
}
