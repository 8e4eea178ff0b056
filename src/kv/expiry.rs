//! Key lifetimes: the deletes a worker owes, ordered by when they fall due.
//!
//! A min-heap by due time rather than a FIFO, because lifetimes may be drawn from a
//! distribution, so keys do not expire in the order they were scheduled; equal due
//! times leave in scheduling order. Keys are copied into recycled buffers, so once the
//! live set has reached its steady size, scheduling allocates nothing.
//!
//! A delete may carry a *tag*, an opaque number its scheduler chooses: once the delete
//! is issued the tag is reported back ([`Expiries::drain_expired`]), so a program that
//! keeps its own view of the live keys (a declarative spec's live set) can drop the key
//! without decoding it. Untagged deletes (Lua's) report nothing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One worker's pending expiries. Times are nanoseconds on the worker's clock origin.
#[derive(Debug, Default)]
pub struct Expiries {
    /// (due, sequence, slot), earliest first.
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Key buffers, indexed by slot.
    slots: Vec<Vec<u8>>,
    /// The tag of each slot's delete, if it has one.
    tags: Vec<Option<u64>>,
    /// Tags of deletes issued since the last drain.
    expired: Vec<u64>,
    /// Slots free for reuse.
    free: Vec<u32>,
    seq: u64,
    /// Set by the first schedule and never cleared: this worker uses lifetimes.
    used: bool,
}

impl Expiries {
    /// Schedules a delete of `key` at `due_ns`; `tag` is reported once it is issued.
    pub fn schedule(&mut self, key: &[u8], due_ns: u64, tag: Option<u64>) {
        self.used = true;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Vec::new());
                self.tags.push(None);
                u32::try_from(self.slots.len() - 1).expect("fewer than 4 billion pending expiries")
            }
        };
        let buf = &mut self.slots[slot as usize];
        buf.clear();
        buf.extend_from_slice(key);
        self.tags[slot as usize] = tag;
        self.heap.push(Reverse((due_ns, self.seq, slot)));
        self.seq += 1;
    }

    /// When the earliest pending delete falls due.
    #[inline]
    pub fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((due, _, _))| *due)
    }

    /// True when a delete is due at `now_ns`.
    #[inline]
    pub fn any_due(&self, now_ns: u64) -> bool {
        self.next_due().is_some_and(|due| due <= now_ns)
    }

    /// Removes the earliest delete if it is due at `now_ns`: its key (hand the buffer
    /// back with [`Expiries::release`] once the delete was issued), slot and due time.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<(Vec<u8>, u32, u64)> {
        if !self.any_due(now_ns) {
            return None;
        }
        let Reverse((due, _, slot)) = self.heap.pop()?;
        Some((std::mem::take(&mut self.slots[slot as usize]), slot, due))
    }

    /// Returns a key buffer taken by [`Expiries::pop_due`] for reuse, after its delete
    /// was issued: a tagged delete's tag joins those [`Expiries::drain_expired`] reports.
    pub fn release(&mut self, slot: u32, buf: Vec<u8>) {
        self.slots[slot as usize] = buf;
        if let Some(tag) = self.tags[slot as usize].take() {
            self.expired.push(tag);
        }
        self.free.push(slot);
    }

    /// True when tagged deletes were issued since the last drain.
    #[inline]
    pub fn has_expired(&self) -> bool {
        !self.expired.is_empty()
    }

    /// The tags of the deletes issued since the last drain, in the order they were issued.
    pub fn drain_expired(&mut self) -> std::vec::Drain<'_, u64> {
        self.expired.drain(..)
    }

    /// Forgets every tag, pending or reported: the deletes still happen, but report
    /// nothing (their scheduler stopped tracking those keys, for example because a new
    /// key space began). Linear in the pending deletes, so call it rarely.
    pub fn forget_tags(&mut self) {
        self.tags.iter_mut().for_each(|t| *t = None);
        self.expired.clear();
    }

    /// Deletes not yet issued.
    pub fn pending(&self) -> usize {
        self.heap.len()
    }

    /// True once any key was given a lifetime.
    #[inline]
    pub fn used(&self) -> bool {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_order_with_ties_in_scheduling_order_and_buffers_reused() {
        let mut e = Expiries::default();
        assert!(!e.used());
        e.schedule(b"late", 300, None);
        e.schedule(b"tie-a", 100, None);
        e.schedule(b"tie-b", 100, None);
        e.schedule(b"early", 50, None);
        assert!(e.used());
        assert_eq!(e.next_due(), Some(50));
        assert!(e.pop_due(49).is_none());
        let mut order = Vec::new();
        while let Some((key, slot, due)) = e.pop_due(200) {
            order.push((String::from_utf8(key.clone()).unwrap(), due));
            e.release(slot, key);
        }
        assert_eq!(
            order,
            vec![("early".into(), 50), ("tie-a".into(), 100), ("tie-b".into(), 100)]
        );
        assert_eq!(e.pending(), 1);
        // Freed slots are reused rather than grown.
        e.schedule(b"again", 400, None);
        assert_eq!(e.slots.len(), 4);
        let (key, _, due) = e.pop_due(u64::MAX).unwrap();
        assert_eq!((key.as_slice(), due), (&b"late"[..], 300));
        assert!(!e.has_expired(), "untagged deletes report nothing");
    }

    #[test]
    fn tags_are_reported_once_issued_and_can_be_forgotten() {
        let mut e = Expiries::default();
        e.schedule(b"a", 10, Some(7));
        e.schedule(b"b", 20, None);
        e.schedule(b"c", 30, Some(9));
        e.schedule(b"d", 40, Some(11));
        let (key, slot, _) = e.pop_due(30).unwrap();
        assert!(!e.has_expired(), "a tag is reported only once its delete was issued");
        e.release(slot, key);
        assert!(e.has_expired());
        while let Some((key, slot, _)) = e.pop_due(30) {
            e.release(slot, key);
        }
        assert_eq!(e.drain_expired().collect::<Vec<_>>(), vec![7, 9]);
        assert!(!e.has_expired());
        // A reused slot does not inherit the tag of the delete it held before.
        e.schedule(b"e", 50, None);
        e.forget_tags();
        while let Some((key, slot, _)) = e.pop_due(u64::MAX) {
            e.release(slot, key);
        }
        assert!(!e.has_expired(), "forgotten tags are never reported");
    }
}
