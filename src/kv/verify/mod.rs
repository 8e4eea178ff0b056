//! `--verify`: every value written carries a tag ([`tag`]), and every value read is
//! checked against what the store acknowledged, per key, as a register.
//!
//! The promise: a read may return any write that was acknowledged at or after the
//! last write acknowledged before the read began, or that was in flight during the
//! read (a write whose outcome is unknown, because it failed, may appear at any time
//! after it began). Anything else is an anomaly:
//!
//! - `lost_write`: the key reads absent although a write of it was acknowledged and
//!   not deleted since; in the final pass, also a value older than the last
//!   acknowledged one that a second read confirms;
//! - `stale_read`: an older value than a write acknowledged before the read began
//!   (in the final pass: one that a second read no longer returns);
//! - `foreign_value`: a sound value that was never written to this key (its tag's key
//!   hash differs, or kvmark never wrote that version there);
//! - `corrupt_value`: bytes that fail the tag's checksum or length;
//! - `resurrected_delete`: a value where only a delete is acceptable.
//!
//! Time is a logical clock shared by the store's writers (one atomic counter, so its
//! order agrees with real time across threads): a write takes a tick when it begins
//! and one when it is acknowledged, a read one before and one after its call. A key's
//! history sits in one of [`STRIPES`] locked maps chosen by the key's hash, so threads
//! working on different keys rarely meet. A history keeps the writes that can still be
//! read plus a few superseded ones; older ones are dropped and remembered only as the
//! latest time one of them was superseded, and a version that might be among them is
//! accepted for a read that began before that time (the check never reports a false
//! anomaly; it may miss one inside that window).
//!
//! None of this costs a plain run anything but one branch per verb: the verbs of
//! [`crate::kv::Kv`] go to their checked twins (`checked.rs`) only when a [`Writer`]
//! is attached.

mod checked;
pub mod tag;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use self::tag::{ABSENT, Version};
use crate::engine::{ErrorKind, Injected, ReadBuf, Session};

pub use self::checked::Writer;
pub use self::tag::TAG_LEN;

/// Locked maps a store's key histories are spread over.
const STRIPES: usize = 64;
/// Superseded writes a key keeps before the oldest is dropped.
const KEEP_SUPERSEDED: usize = 4;
/// Writes of unknown outcome a key keeps before the oldest is dropped.
const KEEP_UNKNOWN: usize = 16;
/// Examples kept per anomaly kind.
pub const EXAMPLES_PER_KIND: usize = 3;

/// An `ack` of a write still in flight.
const PENDING: u64 = u64::MAX - 1;
/// An `ack` of a write whose outcome is unknown (it failed).
const UNKNOWN: u64 = u64::MAX;
/// A `superseded` of a write no later acknowledged write has replaced.
const NEVER: u64 = u64::MAX;

/// What a check can find wrong with a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anomaly {
    /// An acknowledged write that is gone.
    LostWrite,
    /// A value older than one acknowledged before the read began.
    StaleRead,
    /// A value never written to this key.
    ForeignValue,
    /// Bytes that fail their tag's checksum.
    CorruptValue,
    /// A value where only a delete is acceptable.
    ResurrectedDelete,
}

impl Anomaly {
    /// Every kind, in report order.
    pub const ALL: [Anomaly; 5] = [
        Anomaly::LostWrite,
        Anomaly::StaleRead,
        Anomaly::ForeignValue,
        Anomaly::CorruptValue,
        Anomaly::ResurrectedDelete,
    ];

    /// Its name in every report.
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::LostWrite => "lost_write",
            Anomaly::StaleRead => "stale_read",
            Anomaly::ForeignValue => "foreign_value",
            Anomaly::CorruptValue => "corrupt_value",
            Anomaly::ResurrectedDelete => "resurrected_delete",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One anomaly, as reports show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// Its kind.
    pub kind: Anomaly,
    /// The key, printable (other bytes as `\xNN`).
    pub key: String,
    /// What the read could have returned.
    pub expected: String,
    /// What it returned.
    pub got: String,
    /// Found by the final pass rather than by the workload's own reads.
    pub final_pass: bool,
}

/// What the checks of one point found (plain data for the reports).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerifyReport {
    /// Values and absences checked during the run (a range's rows each count).
    pub reads: u64,
    /// Keys read back by the final pass.
    pub final_keys: u64,
    /// Anomalies per kind, in [`Anomaly::ALL`] order.
    pub counts: [u64; 5],
    /// The first few of each kind.
    pub examples: Vec<Example>,
    /// The faults the engine says it injected on purpose into the stores checked (the
    /// `sim` engine's fault knobs), read after each final pass, so that what was
    /// detected can be set beside what there was to detect; None for an engine that
    /// injects none.
    pub injected: Option<Injected>,
}

impl VerifyReport {
    /// All anomalies.
    pub fn anomalies(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Anomalies of `kind`.
    pub fn count(&self, kind: Anomaly) -> u64 {
        self.counts[kind.index()]
    }

    /// "clean", or the counts of the kinds found ("2 lost_write, 1 stale_read").
    pub fn summary(&self) -> String {
        if self.anomalies() == 0 {
            return "clean".to_string();
        }
        Anomaly::ALL
            .iter()
            .filter(|k| self.count(**k) > 0)
            .map(|k| format!("{} {}", self.count(*k), k.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Adds what another measurement (a repeat) found.
    pub fn merge(&mut self, other: &VerifyReport) {
        self.reads += other.reads;
        self.final_keys += other.final_keys;
        for (kind, n) in Anomaly::ALL.iter().zip(other.counts) {
            let have = self.examples.iter().filter(|x| x.kind == *kind).count();
            let more = other.examples.iter().filter(|x| x.kind == *kind);
            self.examples
                .extend(more.take(EXAMPLES_PER_KIND.saturating_sub(have)).cloned());
            self.counts[kind.index()] += n;
        }
        if let Some(more) = &other.injected {
            self.injected.get_or_insert_with(Injected::default).add(more);
        }
    }

    fn add(&mut self, e: Example) {
        let i = e.kind.index();
        self.counts[i] += 1;
        if self.examples.iter().filter(|x| x.kind == e.kind).count() < EXAMPLES_PER_KIND {
            self.examples.push(e);
        }
    }
}

/// A key as reports print it: printable ASCII as is, other bytes as `\xNN`.
pub fn printable(key: &[u8]) -> String {
    let mut s = String::with_capacity(key.len());
    for &b in key {
        if b.is_ascii_graphic() && b != b'\\' || b == b' ' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

/// How a write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Acknowledged.
    Acked,
    /// Failed: it may or may not have happened.
    Unknown,
    /// Certainly not written (an append skipped for the value cap).
    NotApplied,
}

/// One write of a key (a delete writes [`ABSENT`]), in logical ticks.
#[derive(Debug, Clone, Copy)]
struct Write {
    version: Version,
    invoke: u64,
    ack: u64,
    /// When a write that began after this one's acknowledgement was acknowledged.
    superseded: u64,
}

/// A key's history.
#[derive(Debug)]
struct KeyLog {
    writes: Vec<Write>,
    /// The latest `superseded` of a dropped write (0: none dropped).
    dropped_until: u64,
}

impl KeyLog {
    fn new() -> Self {
        // Before its first write a key is absent: a write acknowledged at time 0.
        KeyLog {
            writes: vec![Write {
                version: ABSENT,
                invoke: 0,
                ack: 0,
                superseded: NEVER,
            }],
            dropped_until: 0,
        }
    }

    fn acked(&mut self, invoke: u64, ack: u64, now: u64) {
        if let Some(w) = self.writes.iter_mut().find(|w| w.invoke == invoke) {
            w.ack = ack;
        }
        if ack != UNKNOWN {
            for x in &mut self.writes {
                if x.ack < invoke {
                    x.superseded = x.superseded.min(ack);
                }
            }
        }
        while self.writes.iter().filter(|w| w.superseded != NEVER).count() > KEEP_SUPERSEDED {
            let (i, _) = (self.writes.iter().enumerate())
                .filter(|(_, w)| w.superseded != NEVER)
                .min_by_key(|(_, w)| w.superseded)
                .expect("one is superseded");
            self.dropped_until = self.dropped_until.max(self.writes.remove(i).superseded);
        }
        while self.writes.iter().filter(|w| w.ack == UNKNOWN).count() > KEEP_UNKNOWN {
            let i = self
                .writes
                .iter()
                .position(|w| w.ack == UNKNOWN)
                .expect("one is unknown");
            self.writes.remove(i);
            // It may be read at any time: reads that began before now cannot be judged
            // against it any more.
            self.dropped_until = self.dropped_until.max(now);
        }
    }
}

/// The histories of the keys whose hash falls in one stripe.
type Stripe = HashMap<Box<[u8]>, KeyLog>;

/// One check's verdict on a read.
#[derive(Debug, Clone)]
struct Finding {
    kind: Anomaly,
    expected: String,
    got: String,
}

/// The shared state of one store's checks: key histories, the logical clock, and
/// what was found.
#[derive(Debug)]
pub struct Checker {
    stripes: Box<[Mutex<Stripe>]>,
    clock: AtomicU64,
    writers: AtomicU64,
    found: Mutex<VerifyReport>,
    /// The engine's injected faults as last read, so a store that serves several
    /// points (`--seed-once`) gives each point its own share.
    injected_seen: Mutex<Injected>,
}

impl Default for Checker {
    fn default() -> Self {
        Self::new()
    }
}

impl Checker {
    /// A checker for a fresh (empty) store.
    pub fn new() -> Self {
        Checker {
            stripes: (0..STRIPES).map(|_| Mutex::new(HashMap::new())).collect(),
            clock: AtomicU64::new(0),
            writers: AtomicU64::new(0),
            found: Mutex::new(VerifyReport::default()),
            injected_seen: Mutex::new(Injected::default()),
        }
    }

    /// A handle for one worker's verbs, with a writer id of its own.
    pub fn writer(self: &Arc<Self>) -> Writer {
        Writer::new(Arc::clone(self), self.writers.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// The next logical time.
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn stripe(&self, kh: u32) -> MutexGuard<'_, Stripe> {
        self.stripes[kh as usize % STRIPES]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Records a write of `version` to `key` as begun; returns its begin time, which
    /// names it for [`Checker::end_write`].
    fn begin_write(&self, key: &[u8], kh: u32, version: Version) -> u64 {
        let mut s = self.stripe(kh);
        let invoke = self.tick();
        let w = Write {
            version,
            invoke,
            ack: PENDING,
            superseded: NEVER,
        };
        match s.get_mut(key) {
            Some(log) => log.writes.push(w),
            None => {
                let mut log = KeyLog::new();
                log.writes.push(w);
                s.insert(key.into(), log);
            }
        }
        invoke
    }

    /// Records how the write begun at `invoke` ended.
    fn end_write(&self, key: &[u8], kh: u32, invoke: u64, outcome: Outcome) {
        let mut s = self.stripe(kh);
        let Some(log) = s.get_mut(key) else { return };
        match outcome {
            Outcome::NotApplied => log.writes.retain(|w| w.invoke != invoke),
            Outcome::Acked => {
                let ack = self.tick();
                log.acked(invoke, ack, ack);
            }
            Outcome::Unknown => {
                let now = self.clock.load(Ordering::SeqCst);
                log.acked(invoke, UNKNOWN, now);
            }
        }
    }

    /// Begins a delete of every key kvmark wrote in `[lo, hi)` (a range delete);
    /// returns each key with its begin time.
    fn begin_range_delete(&self, lo: &[u8], hi: &[u8]) -> Vec<(Box<[u8]>, u64)> {
        let mut begun = Vec::new();
        for stripe in self.stripes.iter() {
            let mut s = stripe.lock().unwrap_or_else(|p| p.into_inner());
            for (key, log) in s.iter_mut().filter(|(k, _)| lo <= &***k && &***k < hi) {
                let invoke = self.tick();
                log.writes.push(Write {
                    version: ABSENT,
                    invoke,
                    ack: PENDING,
                    superseded: NEVER,
                });
                begun.push((key.clone(), invoke));
            }
        }
        begun
    }

    /// Judges a read of `key` that began at `rs` and ended at `re` and returned `got`
    /// (None: absent).
    fn judge(&self, key: &[u8], kh: u32, got: Option<&[u8]>, rs: u64, re: u64) -> Option<Finding> {
        let read = match got.map(|v| (v, tag::read(v, kh))) {
            None => ABSENT,
            Some((_, tag::Read::Version(v))) => v,
            Some((v, tag::Read::Corrupt)) => {
                return Some(Finding {
                    kind: Anomaly::CorruptValue,
                    expected: self.expected(key, kh, rs, re),
                    got: format!("{} bytes that fail their tag's checksum", v.len()),
                });
            }
            Some((_, tag::Read::Foreign(owner))) => {
                return Some(Finding {
                    kind: Anomaly::ForeignValue,
                    expected: self.expected(key, kh, rs, re),
                    got: format!("a value written to another key (key hash {owner:08x})"),
                });
            }
        };
        let s = self.stripe(kh);
        let Some(log) = s.get(key) else {
            return (read != ABSENT).then(|| Finding {
                kind: Anomaly::ForeignValue,
                expected: "absent (never written)".to_string(),
                got: tag::describe(read),
            });
        };
        let mut found = false;
        for w in log.writes.iter().filter(|w| w.version == read) {
            found = true;
            if w.invoke < re && w.superseded > rs {
                return None;
            }
        }
        if (read == ABSENT || !found) && log.dropped_until > rs {
            // Perhaps a dropped write that was still current when the read began.
            return None;
        }
        let expected = acceptable(log, rs, re);
        let kind = if read == ABSENT {
            Anomaly::LostWrite
        } else if !found && log.dropped_until == 0 {
            Anomaly::ForeignValue
        } else if expected.iter().all(|&v| v == ABSENT) {
            Anomaly::ResurrectedDelete
        } else {
            Anomaly::StaleRead
        };
        Some(Finding {
            kind,
            expected: describe_all(&expected),
            got: tag::describe(read),
        })
    }

    /// What a read of `key` over `[rs, re]` could have returned, described.
    fn expected(&self, key: &[u8], kh: u32, rs: u64, re: u64) -> String {
        match self.stripe(kh).get(key) {
            None => "absent (never written)".to_string(),
            Some(log) => describe_all(&acceptable(log, rs, re)),
        }
    }

    fn record(&self, key: &[u8], f: Finding, final_pass: bool) {
        self.found.lock().unwrap_or_else(|p| p.into_inner()).add(Example {
            kind: f.kind,
            key: printable(key),
            expected: f.expected,
            got: f.got,
            final_pass,
        });
    }

    fn count_reads(&self, n: u64) {
        self.found.lock().unwrap_or_else(|p| p.into_inner()).reads += n;
    }

    /// Reads back every key kvmark wrote and checks it against its last acknowledged
    /// state. A key that reads older or absent is read once more: if the second read
    /// is right the first was a stale read, otherwise the write is lost. Then notes
    /// the faults the engine injected since the last final pass ([`Session::injected`],
    /// the final pass's own included), even when the pass failed. Returns the keys
    /// read, or the engine's error.
    pub fn final_pass(&self, session: &mut dyn Session) -> Result<u64, String> {
        let read = self.read_back(session);
        if let Some(now) = session.injected() {
            let mut seen = self.injected_seen.lock().unwrap_or_else(|p| p.into_inner());
            let share = now.since(&seen);
            *seen = now;
            let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
            found.injected.get_or_insert_with(Injected::default).add(&share);
        }
        read
    }

    /// The final pass's reads and checks.
    fn read_back(&self, session: &mut dyn Session) -> Result<u64, String> {
        let keys: Vec<Box<[u8]>> = self
            .stripes
            .iter()
            .flat_map(|s| {
                s.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut buf = ReadBuf::new();
        let mut read = |key: &[u8], buf: &mut ReadBuf| -> Result<Option<Finding>, String> {
            let kh = tag::key_hash(key);
            let rs = self.tick();
            // A busy engine is asked again, as the timed verbs do.
            let mut attempts = 0;
            let hit = loop {
                match session.get(key, buf) {
                    Err(e) if e.kind == ErrorKind::Busy && attempts < 10_000 => {
                        attempts += 1;
                        std::thread::yield_now();
                    }
                    r => break r,
                }
            }
            .map_err(|e| format!("verify: the final pass could not read key {}: {e}", printable(key)))?;
            let re = self.tick();
            Ok(self.judge(key, kh, hit.then_some(buf.as_slice()), rs, re))
        };
        for key in &keys {
            let Some(first) = read(key, &mut buf)? else { continue };
            let finding = match first.kind {
                Anomaly::LostWrite | Anomaly::StaleRead => match read(key, &mut buf)? {
                    None => Finding {
                        kind: Anomaly::StaleRead,
                        ..first
                    },
                    Some(again) => Finding {
                        kind: Anomaly::LostWrite,
                        ..again
                    },
                },
                _ => first,
            };
            self.record(key, finding, true);
        }
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        found.final_keys += keys.len() as u64;
        Ok(keys.len() as u64)
    }

    /// What was found since the last call (the point's share); the key histories stay.
    pub fn take_report(&self) -> VerifyReport {
        std::mem::take(&mut *self.found.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The versions a read over `[rs, re]` may return.
fn acceptable(log: &KeyLog, rs: u64, re: u64) -> Vec<Version> {
    let mut v: Vec<Version> = (log.writes.iter())
        .filter(|w| w.invoke < re && w.superseded > rs)
        .map(|w| w.version)
        .collect();
    v.dedup();
    v
}

fn describe_all(versions: &[Version]) -> String {
    versions
        .iter()
        .map(|v| tag::describe(*v))
        .collect::<Vec<_>>()
        .join(" or ")
}

#[cfg(test)]
mod tests {
    use super::tag::{key_hash, stamp, version};
    use super::*;

    fn val(key: &[u8], v: Version) -> Vec<u8> {
        let mut r = vec![0u8; 32];
        stamp(&mut r, key_hash(key), v);
        r
    }

    fn write(c: &Checker, key: &[u8], v: Version) {
        let kh = key_hash(key);
        let i = c.begin_write(key, kh, v);
        c.end_write(key, kh, i, Outcome::Acked);
    }

    fn judge(c: &Checker, key: &[u8], got: Option<&[u8]>) -> Option<Anomaly> {
        let (rs, re) = (c.tick(), c.tick());
        c.judge(key, key_hash(key), got, rs, re).map(|f| f.kind)
    }

    #[test]
    fn the_latest_acknowledged_write_is_the_only_answer_after_it() {
        let c = Checker::new();
        let (v1, v2) = (version(1, 1), version(1, 2));
        assert_eq!(judge(&c, b"k", None), None, "never written: absent");
        assert_eq!(judge(&c, b"k", Some(&val(b"k", v1))), Some(Anomaly::ForeignValue));
        write(&c, b"k", v1);
        assert_eq!(judge(&c, b"k", Some(&val(b"k", v1))), None);
        assert_eq!(judge(&c, b"k", None), Some(Anomaly::LostWrite));
        write(&c, b"k", v2);
        assert_eq!(judge(&c, b"k", Some(&val(b"k", v1))), Some(Anomaly::StaleRead));
        assert_eq!(judge(&c, b"k", Some(&val(b"j", v2))), Some(Anomaly::ForeignValue));
        let mut bad = val(b"k", v2);
        bad[25] ^= 1;
        assert_eq!(judge(&c, b"k", Some(&bad)), Some(Anomaly::CorruptValue));
        write(&c, b"k", ABSENT);
        assert_eq!(judge(&c, b"k", Some(&val(b"k", v2))), Some(Anomaly::ResurrectedDelete));
        assert_eq!(judge(&c, b"k", None), None);
    }

    #[test]
    fn writes_in_flight_or_of_unknown_outcome_are_accepted_both_ways() {
        let c = Checker::new();
        let kh = key_hash(b"k");
        let (v1, v2) = (version(1, 1), version(2, 1));
        write(&c, b"k", v1);
        let i = c.begin_write(b"k", kh, v2);
        assert_eq!(
            judge(&c, b"k", Some(&val(b"k", v1))),
            None,
            "v2 in flight: v1 still fine"
        );
        assert_eq!(judge(&c, b"k", Some(&val(b"k", v2))), None, "v2 in flight may show");
        c.end_write(b"k", kh, i, Outcome::Unknown);
        assert_eq!(judge(&c, b"k", Some(&val(b"k", v1))), None);
        assert_eq!(
            judge(&c, b"k", Some(&val(b"k", v2))),
            None,
            "v2 failed: it may have landed"
        );
    }

    #[test]
    fn a_read_that_began_before_an_acknowledgement_may_return_the_older_value() {
        let c = Checker::new();
        let kh = key_hash(b"k");
        let (v1, v2) = (version(1, 1), version(2, 1));
        write(&c, b"k", v1);
        let rs = c.tick();
        write(&c, b"k", v2);
        let re = c.tick();
        assert!(c.judge(b"k", kh, Some(&val(b"k", v1)), rs, re).is_none());
        // Concurrent writes: both acknowledged while overlapping, either may be last.
        let a = c.begin_write(b"k", kh, version(3, 1));
        let b = c.begin_write(b"k", kh, version(4, 1));
        c.end_write(b"k", kh, a, Outcome::Acked);
        c.end_write(b"k", kh, b, Outcome::Acked);
        assert_eq!(judge(&c, b"k", Some(&val(b"k", version(3, 1)))), None);
        assert_eq!(judge(&c, b"k", Some(&val(b"k", version(4, 1)))), None);
        assert_eq!(judge(&c, b"k", Some(&val(b"k", v2))), Some(Anomaly::StaleRead));
    }

    #[test]
    fn histories_stay_short_and_old_versions_stay_stale() {
        let c = Checker::new();
        for s in 1..=1000 {
            write(&c, b"k", version(1, s));
        }
        let len = c.stripe(key_hash(b"k")).get(&b"k"[..]).unwrap().writes.len();
        assert!(len <= KEEP_SUPERSEDED + 1, "{len} writes kept");
        assert_eq!(
            judge(&c, b"k", Some(&val(b"k", version(1, 3)))),
            Some(Anomaly::StaleRead)
        );
        assert_eq!(judge(&c, b"k", Some(&val(b"k", version(1, 1000)))), None);
    }

    #[test]
    fn each_final_pass_notes_the_faults_injected_since_the_last() {
        use crate::engine::{EngineOptions, OpenRequest};
        let mut opts = EngineOptions::new();
        opts.set("resurrect", "1");
        let store = (crate::engine::sim::INFO.open)(&OpenRequest::memory(&opts)).unwrap();
        let mut session = store.session().unwrap();
        session.put(b"k", b"v").unwrap();
        session.del(b"k").unwrap();
        let c = Checker::new();
        c.final_pass(session.as_mut()).unwrap();
        let first = c.take_report().injected.expect("sim reports what it injected");
        assert_eq!(first.resurrect, 1);
        // The same store's next point gets only what was injected after.
        c.final_pass(session.as_mut()).unwrap();
        assert_eq!(c.take_report().injected, Some(Injected::default()));
        // A store that injects nothing reports nothing.
        let plain = (crate::engine::sim::INFO.open)(&OpenRequest::memory(&EngineOptions::new())).unwrap();
        c.final_pass(plain.session().unwrap().as_mut()).unwrap();
        assert_eq!(c.take_report().injected, None);
        // Repeats add up.
        let mut r = VerifyReport::default();
        r.merge(&VerifyReport {
            injected: Some(first),
            ..VerifyReport::default()
        });
        r.merge(&VerifyReport {
            injected: Some(first),
            ..VerifyReport::default()
        });
        r.merge(&VerifyReport::default());
        assert_eq!(r.injected.map(|i| i.resurrect), Some(2));
    }

    #[test]
    fn reports_keep_counts_and_a_few_examples() {
        let mut r = VerifyReport::default();
        for _ in 0..5 {
            r.add(Example {
                kind: Anomaly::LostWrite,
                key: printable(b"k\x00"),
                expected: "w1.1".into(),
                got: "absent".into(),
                final_pass: true,
            });
        }
        assert_eq!(r.count(Anomaly::LostWrite), 5);
        assert_eq!(r.examples.len(), EXAMPLES_PER_KIND);
        assert_eq!(r.examples[0].key, "k\\x00");
        assert_eq!(r.summary(), "5 lost_write");
        assert_eq!(VerifyReport::default().summary(), "clean");
    }
}
