//! The open-loop side of [`Kv`]: the unit boundary every program calls, pacing, and
//! the deletes owed to key lifetimes.
//!
//! Per unit in a paced run the only work is here, at the boundary: compute the
//! intended start, and wait for it only when it is still ahead of the last clock value
//! already read (the previous call's end). A worker behind schedule reads no clock and
//! waits for nothing; it issues the unit at once.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Kv, backoff};
use crate::engine::{ErrorKind, inflight};
use crate::kv::pace::{PaceSpec, StopSignal, ticks_per_ns};
use crate::kv::pacer::Pacer;
use crate::metrics::{LatencySet, OpKind};

/// Longest single sleep while waiting for a unit's start: how quickly a waiting worker
/// notices that its step is being stopped.
const MAX_SLEEP_NS: u64 = 2_000_000;

impl Kv {
    /// Starts pacing this worker (thread `thread` of `threads`) on `spec`'s schedule:
    /// the first unit is due now. `stop` ends waits when the step is being stopped.
    pub fn start_pacing(&mut self, spec: &PaceSpec, threads: usize, thread: usize, stop: StopSignal) {
        let now = self.clock.raw();
        self.last_end = now;
        let tpn = ticks_per_ns(&self.clock);
        self.pacer = Pacer::new(spec, threads, thread, now, tpn, self.written, stop);
        if self.expiries.used() {
            self.pacer.close_late_path();
        }
    }

    /// Starts pacing this worker on a trace's own clock: each unit is due when the
    /// program last said with [`Kv::set_upcoming`], counted from now.
    pub fn start_trace_clock(&mut self, stop: StopSignal) {
        let now = self.clock.raw();
        self.last_end = now;
        self.pacer = Pacer::given(now, ticks_per_ns(&self.clock), stop);
    }

    /// On a trace's clock ([`Kv::start_trace_clock`]): the next unit is due `offset_ns`
    /// after the clock started. Call it before [`Kv::begin_unit`]; otherwise a no-op.
    #[inline]
    pub fn set_upcoming(&mut self, offset_ns: u64) {
        self.pacer.set_upcoming(offset_ns);
    }

    /// Stops pacing (after the step's recorder was taken).
    pub fn end_pacing(&mut self) {
        // Response times still counted belong to the recorder, not to whatever follows.
        self.drain_tallies();
        self.pacer = Pacer::default();
    }

    /// True when programs must call [`Kv::begin_unit`] before each unit: the run is
    /// paced or the workload gave keys a lifetime. Programs may call it regardless.
    #[inline]
    pub fn unit_hooks(&self) -> bool {
        self.pacer.is_active() || self.expiries.used()
    }

    /// The boundary before a unit: issues every due expiry and, when paced, waits for
    /// the unit's intended start (issuing expiries that fall due meanwhile). Returns
    /// false when the step is being stopped while waiting: the unit must not run.
    #[inline]
    pub fn begin_unit(&mut self) -> bool {
        match self.try_begin_unit() {
            Some(go) => go,
            None => self.begin_unit_slow(),
        }
    }

    /// The boundary when it needs neither a wait nor an expiry: unpaced, or paced and
    /// behind schedule (the unit is issued at once; no clock read). Some(true) means
    /// the unit may run; None means [`Kv::begin_unit`] must do the rest. Cannot panic.
    #[inline]
    pub fn try_begin_unit(&mut self) -> Option<bool> {
        if self.pacer.try_begin_late(self.last_end) {
            return Some(true);
        }
        if self.expiries.used() {
            return None;
        }
        if !self.pacer.is_active() {
            return Some(true);
        }
        if self.pacer.upcoming(self.written) > self.last_end {
            return None;
        }
        self.pacer.begin(false);
        Some(true)
    }

    #[cold]
    #[inline(never)]
    fn begin_unit_slow(&mut self) -> bool {
        let mut now = self.last_end;
        if self.expiries.any_due(self.ns(now)) {
            self.expire_due(self.ns(now));
            now = self.last_end;
        }
        if !self.pacer.is_active() {
            return true;
        }
        let due = self.pacer.upcoming(self.written);
        let waited = due > now;
        if waited {
            loop {
                now = self.clock.raw();
                self.last_end = now;
                let now_ns = self.ns(now);
                if self.expiries.any_due(now_ns) {
                    self.expire_due(now_ns);
                    continue;
                }
                if now >= due {
                    break;
                }
                if self.pacer.stopping() || self.abort.load(Ordering::Relaxed) {
                    return false;
                }
                let mut left = self.clock.delta_as_nanos(now, due);
                if let Some(e) = self.expiries.next_due() {
                    left = left.min(e.saturating_sub(now_ns));
                }
                inflight::pause(left, MAX_SLEEP_NS);
            }
        }
        self.pacer.begin(waited);
        true
    }

    /// Gives `key` a lifetime: this worker deletes it once `after` has passed, at a unit
    /// boundary (or while waiting for one), as part of its own stream. The delete is
    /// timed as an `expire` operation.
    pub fn expire_after(&mut self, key: &[u8], after: Duration) {
        self.schedule_expiry(key, after, None);
    }

    /// Like [`Kv::expire_after`], and once the delete is issued `tag` is reported by
    /// [`Kv::drain_expired`]: how a program that tracks its live keys (a declarative
    /// spec) learns which of them the harness deleted.
    pub fn expire_after_tagged(&mut self, key: &[u8], after: Duration, tag: u64) {
        self.schedule_expiry(key, after, Some(tag));
    }

    fn schedule_expiry(&mut self, key: &[u8], after: Duration, tag: Option<u64>) {
        let due = self
            .ns(self.last_end)
            .saturating_add(u64::try_from(after.as_nanos()).unwrap_or(u64::MAX));
        self.expiries.schedule(key, due, tag);
        self.pacer.close_late_path();
    }

    /// True when tagged expiries were issued since the last [`Kv::drain_expired`].
    #[inline]
    pub fn has_expired(&self) -> bool {
        self.expiries.has_expired()
    }

    /// The tags of the tagged expiries issued since the last drain, in issue order.
    /// Expiries are issued only inside [`Kv::begin_unit`], so draining right after it
    /// keeps a program's view of the live keys exact for the unit that follows.
    pub fn drain_expired(&mut self) -> std::vec::Drain<'_, u64> {
        self.expiries.drain_expired()
    }

    /// Stops reporting the tags of expiries scheduled so far (they are still issued).
    /// Linear in the pending expiries: for rare events such as a new key space.
    pub fn forget_expiry_tags(&mut self) {
        self.expiries.forget_tags();
    }

    /// Expiries scheduled but not yet issued.
    pub fn pending_expiries(&self) -> usize {
        self.expiries.pending()
    }

    /// Nanoseconds since the origin of the raw reading `raw`.
    #[inline]
    fn ns(&self, raw: u64) -> u64 {
        self.clock.delta_as_nanos(self.origin, raw)
    }

    /// Issues every delete due at `now_ns`.
    fn expire_due(&mut self, now_ns: u64) {
        while let Some((key, slot, due)) = self.expiries.pop_due(now_ns) {
            self.expire_one(&key, due);
            self.expiries.release(slot, key);
        }
    }

    /// One timed delete of an expired key. Its response time runs from when it fell
    /// due, so expiries that wait for a unit boundary show it.
    fn expire_one(&mut self, key: &[u8], due_ns: u64) {
        self.before_request();
        let mut retries = 0u64;
        let invoke = self.expiry_begins(key);
        let start = self.clock.raw();
        let result = loop {
            match self.session.del(key) {
                Err(e) if e.kind == ErrorKind::Busy && !self.abort.load(Ordering::Relaxed) => {
                    retries += 1;
                    backoff(retries);
                }
                other => break other,
            }
        };
        let end = self.clock.raw();
        self.expiry_ends(key, invoke, result.is_ok());
        self.last_end = end;
        let ns = self.clock.delta_as_nanos(start, end);
        let response = self
            .pacer
            .is_active()
            .then(|| self.ns(start).saturating_sub(due_ns) + ns);
        let tally = self.tallies.kind(OpKind::Expire);
        tally.record(LatencySet::Service, ns);
        if let Some(r) = response {
            tally.record(LatencySet::Response, r);
        }
        count_call!(self, OpKind::Expire, 1, 0, retries, &result);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::kv::pace::{Arrival, Rate};
    use crate::kv::tests::kv;

    fn spec(rate: &str) -> PaceSpec {
        PaceSpec {
            rate: Rate::parse(rate).unwrap(),
            arrival: Arrival::Constant,
            seed: 1,
        }
    }

    #[test]
    fn an_unpaced_worker_without_lifetimes_never_waits() {
        let mut kv = kv();
        assert!(!kv.unit_hooks());
        assert!(kv.begin_unit());
        kv.put(b"k", b"v").unwrap();
        assert!(kv.recorder().kind(OpKind::Put).unwrap().resp.is_none());
    }

    #[test]
    fn paced_units_keep_the_rate_and_record_response_times() {
        let mut kv = kv();
        crate::clock::precise_sleeps().unwrap();
        let stop = StopSignal::new(Arc::new(AtomicUsize::new(0)), 0);
        // Read before the schedule's origin, so the bound below holds however late this
        // thread is scheduled: a unit never begins before it is due.
        let t0 = kv.clock().raw();
        kv.start_pacing(&spec("2000"), 1, 0, stop);
        for _ in 0..100 {
            assert!(kv.begin_unit());
            kv.get(b"k").unwrap();
        }
        // 100 units at 2000/s: the last is due 49.5 ms after the first.
        let took = kv.clock().delta_as_nanos(t0, kv.clock().raw());
        assert!(
            took >= 49_400_000,
            "{took} ns (the tick rate is calibrated, so allow 0.2%)"
        );
        let rec = kv.take_recorder();
        let get = rec.kind(OpKind::Get).unwrap();
        assert_eq!(get.resp.as_ref().map(|h| h.len()), Some(100));
        let pace = rec.pace().unwrap();
        assert_eq!(pace.units(), 100);
        // The response time is never below the service time.
        assert!(get.resp.as_ref().unwrap().min() >= get.hist.min());
    }

    #[test]
    fn a_raised_stop_ends_a_long_wait() {
        let mut kv = kv();
        let flag = Arc::new(AtomicUsize::new(0));
        kv.start_pacing(&spec("1"), 1, 0, StopSignal::new(Arc::clone(&flag), 0));
        assert!(kv.begin_unit(), "the first unit is due at once");
        flag.store(1, Ordering::Relaxed);
        let t0 = std::time::Instant::now();
        assert!(!kv.begin_unit(), "the second is a second away, and the step stops");
        assert!(t0.elapsed() < Duration::from_millis(500));
    }

    #[test]
    fn expired_keys_are_deleted_at_unit_boundaries_as_expire_ops() {
        let mut kv = kv();
        kv.put(b"a", b"1").unwrap();
        kv.put(b"b", b"2").unwrap();
        kv.expire_after(b"a", Duration::ZERO);
        kv.expire_after(b"b", Duration::from_secs(3600));
        assert!(kv.unit_hooks());
        assert!(kv.begin_unit());
        assert_eq!(kv.get(b"a").unwrap(), None);
        assert_eq!(kv.get(b"b").unwrap(), Some(&b"2"[..]));
        assert_eq!(kv.pending_expiries(), 1);
        let rec = kv.take_recorder();
        let exp = rec.kind(OpKind::Expire).unwrap();
        assert_eq!((exp.count(), exp.prim_ops), (1, 1));
        assert_eq!(rec.write_bytes(), 4);
    }

    #[test]
    fn tagged_expiries_report_their_tags_after_the_delete() {
        let mut kv = kv();
        kv.put(b"a", b"1").unwrap();
        kv.expire_after_tagged(b"a", Duration::ZERO, 41);
        kv.expire_after_tagged(b"b", Duration::from_secs(3600), 42);
        kv.expire_after(b"c", Duration::ZERO);
        assert!(!kv.has_expired(), "nothing is issued before the unit boundary");
        assert!(kv.begin_unit());
        assert!(kv.has_expired());
        assert_eq!(kv.get(b"a").unwrap(), None);
        assert_eq!(kv.drain_expired().collect::<Vec<_>>(), vec![41]);
        assert!(!kv.has_expired());
        kv.forget_expiry_tags();
        assert_eq!(kv.pending_expiries(), 1, "forgotten tags still expire");
    }
}
