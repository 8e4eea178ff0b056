//! The checked twins of [`Kv`]'s verbs, taken only when a [`Writer`] is attached
//! (`--verify`): each tags what it writes, records the write's begin and end in the
//! store's [`Checker`], and judges what it reads. The timed engine call in the middle
//! is the plain verb's, so latencies are measured the same way (the tagging and the
//! checks fall outside the timed region but inside the run, which is why verify runs
//! are labelled and not compared with plain ones).
//!
//! Appends: an appended suffix is a tagged record of its own (so it must be at least
//! [`TAG_LEN`] bytes), and the value it grows reads as the version of its last record;
//! an append is checked as a write of that version. Range and scan results are checked
//! row by row (a row that should be there but is not is left to the final pass).

use std::sync::Arc;

use super::tag::{self, ABSENT, TAG_LEN, Version, key_hash, stamp};
use super::{Checker, Outcome};
use crate::engine::{Appended, EngineError, EngineResult, Existed, Rows, ScanFn, Values};
use crate::kv::Kv;
use crate::metrics::OpKind;

/// One worker's handle on its store's [`Checker`]: its writer id, its next sequence
/// number, and scratch space for tagged values and copied rows.
#[derive(Debug)]
pub struct Writer {
    checker: Arc<Checker>,
    id: u64,
    seq: u64,
    /// Tagged values of the call being made.
    buf: Vec<u8>,
    /// Rows a scan delivered, copied for the check.
    rows: Rows,
    /// Reads checked, added to the checker's report when the worker ends.
    reads: u64,
}

impl Writer {
    pub(super) fn new(checker: Arc<Checker>, id: u64) -> Self {
        Writer {
            checker,
            id,
            seq: 0,
            buf: Vec::new(),
            rows: Rows::default(),
            reads: 0,
        }
    }

    fn next_version(&mut self) -> Version {
        self.seq += 1;
        tag::version(self.id, self.seq)
    }

    /// Judges one read over `[rs, re]` and records what it finds.
    fn check(&mut self, key: &[u8], got: Option<&[u8]>, rs: u64, re: u64) {
        self.reads += 1;
        if let Some(f) = self.checker.judge(key, key_hash(key), got, rs, re) {
            self.checker.record(key, f, false);
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.checker.count_reads(self.reads);
    }
}

impl Outcome {
    fn of<T>(r: &EngineResult<T>) -> Outcome {
        if r.is_ok() { Outcome::Acked } else { Outcome::Unknown }
    }
}

impl Kv {
    /// Checks every verb from now on against `checker` (`--verify`).
    pub fn verify_with(&mut self, checker: &Arc<Checker>) {
        self.verify = Some(Box::new(checker.writer()));
        self.refresh_slow();
    }

    /// True in verify mode.
    pub fn verifying(&self) -> bool {
        self.verify.is_some()
    }

    fn writer(&mut self) -> Box<Writer> {
        self.verify.take().expect("the checked verbs run only in verify mode")
    }

    /// Refuses a value or suffix too short to carry a tag, as a failed call of `kind`.
    fn refuse_short(&mut self, kind: OpKind, len: usize) -> EngineError {
        self.fail_call(
            kind,
            format!(
                "--verify: a value of {len} bytes is shorter than the {TAG_LEN}-byte verify tag, so kvmark cannot \
                 verify it (write values of at least {TAG_LEN} bytes, or run without --verify)"
            ),
        )
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn put_checked(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        if val.len() < TAG_LEN {
            return Err(self.refuse_short(OpKind::Put, val.len()));
        }
        let mut w = self.writer();
        let (kh, v) = (key_hash(key), w.next_version());
        w.buf.clear();
        w.buf.extend_from_slice(val);
        stamp(&mut w.buf, kh, v);
        let invoke = w.checker.begin_write(key, kh, v);
        let r = self.put_timed(key, &w.buf);
        w.checker.end_write(key, kh, invoke, Outcome::of(&r));
        self.verify = Some(w);
        r
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn get_checked(&mut self, key: &[u8]) -> EngineResult<Option<&[u8]>> {
        let mut w = self.writer();
        let rs = w.checker.tick();
        let hit = self.get_timed(key).map(|v| v.is_some());
        let re = w.checker.tick();
        if let Ok(hit) = hit {
            w.check(key, hit.then_some(self.get_buf.as_slice()), rs, re);
        }
        self.verify = Some(w);
        match hit {
            Ok(true) => Ok(Some(&self.get_buf)),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        }
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn del_checked(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let w = self.writer();
        let kh = key_hash(key);
        let invoke = w.checker.begin_write(key, kh, ABSENT);
        let r = self.del_timed(key);
        w.checker.end_write(key, kh, invoke, Outcome::of(&r));
        self.verify = Some(w);
        r
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn range_checked(&mut self, lo: &[u8], hi: &[u8], limit: usize) -> EngineResult<&Rows> {
        let mut w = self.writer();
        let rs = w.checker.tick();
        let ok = self.range_timed(lo, hi, limit).map(|_| ());
        let re = w.checker.tick();
        if ok.is_ok() {
            for (k, v) in self.rows.iter() {
                w.check(k, Some(v), rs, re);
            }
        }
        self.verify = Some(w);
        ok.map(|()| &self.rows)
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn scan_checked(
        &mut self,
        lo: &[u8],
        hi: &[u8],
        limit: usize,
        f: &mut ScanFn<'_>,
    ) -> EngineResult<usize> {
        let mut w = self.writer();
        let rs = w.checker.tick();
        let mut rows = std::mem::take(&mut w.rows);
        rows.clear();
        let r = self.scan_timed(lo, hi, limit, &mut |k, v| {
            rows.push(k, v);
            f(k, v)
        });
        let re = w.checker.tick();
        if r.is_ok() {
            for (k, v) in rows.iter() {
                w.check(k, Some(v), rs, re);
            }
        }
        w.rows = rows;
        self.verify = Some(w);
        r
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn mget_checked(&mut self, keys: &[&[u8]]) -> EngineResult<&Values> {
        let mut w = self.writer();
        let rs = w.checker.tick();
        let ok = self.mget_timed(keys).map(|_| ());
        let re = w.checker.tick();
        if ok.is_ok() {
            for (i, k) in keys.iter().enumerate() {
                w.check(k, self.values.get(i), rs, re);
            }
        }
        self.verify = Some(w);
        ok.map(|()| &self.values)
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn mput_checked(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        if let Some((_, v)) = pairs.iter().find(|(_, v)| v.len() < TAG_LEN) {
            return Err(self.refuse_short(OpKind::Mput, v.len()));
        }
        let mut w = self.writer();
        w.buf.clear();
        let mut begun = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            let (kh, ver) = (key_hash(k), w.next_version());
            let at = w.buf.len();
            w.buf.extend_from_slice(v);
            stamp(&mut w.buf[at..], kh, ver);
            begun.push((kh, ver, at..w.buf.len()));
        }
        let tagged: Vec<(&[u8], &[u8])> = (pairs.iter().zip(&begun))
            .map(|((k, _), (_, _, at))| (*k, &w.buf[at.clone()]))
            .collect();
        let invokes: Vec<u64> = (pairs.iter().zip(&begun))
            .map(|((k, _), (kh, ver, _))| w.checker.begin_write(k, *kh, *ver))
            .collect();
        let r = self.mput_timed(&tagged);
        let outcome = Outcome::of(&r);
        for (((k, _), (kh, _, _)), invoke) in pairs.iter().zip(&begun).zip(invokes) {
            w.checker.end_write(k, *kh, invoke, outcome);
        }
        drop(tagged);
        self.verify = Some(w);
        r
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn mdel_checked(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        let w = self.writer();
        let begun: Vec<(u32, u64)> = keys
            .iter()
            .map(|k| {
                let kh = key_hash(k);
                (kh, w.checker.begin_write(k, kh, ABSENT))
            })
            .collect();
        let r = self.mdel_timed(keys);
        let outcome = Outcome::of(&r);
        for (k, (kh, invoke)) in keys.iter().zip(begun) {
            w.checker.end_write(k, kh, invoke, outcome);
        }
        self.verify = Some(w);
        r
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn append_checked(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        if suffix.len() < TAG_LEN {
            return Err(self.refuse_short(OpKind::Append, suffix.len()));
        }
        let mut w = self.writer();
        let (kh, v) = (key_hash(key), w.next_version());
        w.buf.clear();
        w.buf.extend_from_slice(suffix);
        stamp(&mut w.buf, kh, v);
        let invoke = w.checker.begin_write(key, kh, v);
        let r = self.append_timed(key, &w.buf);
        let outcome = match r {
            Ok(Appended::Yes) => Outcome::Acked,
            Ok(Appended::Skipped) => Outcome::NotApplied,
            Ok(Appended::Unknown) | Err(_) => Outcome::Unknown,
        };
        w.checker.end_write(key, kh, invoke, outcome);
        self.verify = Some(w);
        r
    }

    #[cold]
    #[inline(never)]
    pub(in crate::kv) fn delete_range_checked(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        let w = self.writer();
        let begun = w.checker.begin_range_delete(lo, hi);
        let r = self.delete_range_timed(lo, hi);
        let outcome = Outcome::of(&r);
        for (key, invoke) in begun {
            w.checker.end_write(&key, key_hash(&key), invoke, outcome);
        }
        self.verify = Some(w);
        r
    }

    /// Around an expiry's delete: its begin time, in verify mode.
    pub(in crate::kv) fn expiry_begins(&self, key: &[u8]) -> Option<u64> {
        let w = self.verify.as_ref()?;
        Some(w.checker.begin_write(key, key_hash(key), ABSENT))
    }

    /// Ends an expiry's delete begun at `invoke`.
    pub(in crate::kv) fn expiry_ends(&self, key: &[u8], invoke: Option<u64>, ok: bool) {
        if let (Some(w), Some(invoke)) = (&self.verify, invoke) {
            let outcome = if ok { Outcome::Acked } else { Outcome::Unknown };
            w.checker.end_write(key, key_hash(key), invoke, outcome);
        }
    }
}
