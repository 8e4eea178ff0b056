//! One thread's operation stream for a spec, generated on the fly.
//!
//! Memory is the live set (8 bytes per live key, plus the order index in sections
//! that need one) and fixed buffers; nothing grows with the number of operations.
//!
//! Threads: thread t of T runs the operations at positions p with p mod T = t of each
//! group laid out operation by operation (so per-thread counts sum to the group's
//! counts exactly, and match the runner's even split of the phase budget), owns a slice
//! of each section's key space, and keeps its own live set. No state is shared.
//!
//! Key lifetimes: an insert with a `lifetime` draws one and hands it, with the key and
//! the live set's tag for it, to the caller ([`Generator::take_lifetime`]), which
//! schedules the delete; when the delete is issued the caller reports the tag back
//! ([`Generator::expired`]) and the key leaves the live set, so no later operation
//! picks it.

use std::sync::Arc;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::keys::{IdSlice, KeyCodec};
use super::live::{IdSource, LiveSet};
use super::plan::{MAX_LIFETIME, Plan, RangeSize, SpecOp};
use super::schema::RangeFormat;
use super::sorted::SortedInserts;
use super::strings::{CharPools, Str, mix64};
use super::values::{ValueGen, Values};
use crate::workload::Budget;
use crate::workload::dist::{NumExpr, Selector};
use crate::workload::op::Op;

/// One thread's generator.
pub struct Generator {
    plan: Arc<Plan>,
    phases: Vec<(usize, usize)>,
    thread: usize,
    threads: usize,
    seed: u64,
    rng: Xoshiro256PlusPlus,
    /// Shared by the workers of a run: the same characters for every one.
    chars: Arc<CharPools>,
    values: Values,
    section: Option<SectionState>,
    group: Option<GroupState>,
    key: Vec<u8>,
    end: Vec<u8>,
    scratch: Vec<u8>,
    skipped: u64,
    /// The lifetime and live-set tag of the key just inserted, if it has a lifetime.
    lifetime: Option<(Duration, u64)>,
}

struct SectionState {
    index: usize,
    codec: Option<KeyCodec>,
    ids: Option<IdSlice>,
    live: LiveSet,
}

struct GroupState {
    ops: Vec<OpState>,
    /// Operations left per kind (count-bounded), or the mix's weights (timed).
    left: Vec<u64>,
    left_total: u64,
    timed: bool,
    sorted: Option<SortedInserts>,
}

struct OpState {
    kind: SpecOp,
    path: String,
    sel: Selector,
    hot: Option<f64>,
    val: Option<ValueGen>,
    own_key: Option<Str>,
    range: Option<RangeSize>,
    format: RangeFormat,
    /// Boxed so that inserts without one test a single pointer.
    lifetime: Option<Box<NumExpr>>,
}

/// Operations of thread `t` of `threads` per kind, when a group's operations are
/// laid out kind by kind and position p goes to thread p mod threads.
pub fn thread_counts(counts: &[u64], t: usize, threads: usize) -> Vec<u64> {
    let (t, n) = (t as u64, threads as u64);
    let upto = |x: u64| (x + n - 1 - t) / n;
    let mut start = 0;
    counts
        .iter()
        .map(|&c| {
            let k = upto(start + c) - upto(start);
            start += c;
            k
        })
        .collect()
}

/// A drawn lifetime in seconds as a duration: negative draws (a `normal` can give
/// them) mean at once, draws past [`MAX_LIFETIME`] are cut to it.
fn lifetime_of(secs: f64) -> Duration {
    Duration::from_secs_f64(if secs.is_nan() {
        0.0
    } else {
        secs.clamp(0.0, MAX_LIFETIME)
    })
}

impl Generator {
    /// Thread `thread` of `threads`, for run seed `seed`.
    pub fn new(plan: Arc<Plan>, thread: usize, threads: usize, seed: u64) -> Generator {
        let phases = plan.phase_groups();
        let ratio = plan.compression_ratio;
        Generator {
            phases,
            thread,
            threads,
            seed,
            rng: Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ mix64(thread as u64 + 1))),
            chars: CharPools::shared(mix64(seed ^ 0x6368_6172)),
            values: Values::new(ratio, mix64(seed ^ 0x7661_6c73)),
            plan,
            section: None,
            group: None,
            key: Vec::new(),
            end: Vec::new(),
            scratch: Vec::new(),
            skipped: 0,
            lifetime: None,
        }
    }

    /// Up to `n` live keys of the current section, picked uniformly by a generator of
    /// their own (the stream's state is untouched): what a store that holds this
    /// thread's keys must hold.
    pub fn live_sample(&mut self, n: usize) -> Vec<Vec<u8>> {
        let Generator {
            section,
            chars,
            scratch,
            seed,
            thread,
            ..
        } = self;
        let Some(sec) = section.as_mut() else {
            return Vec::new();
        };
        let (Some(codec), Some(ids)) = (&sec.codec, &sec.ids) else {
            return Vec::new();
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(mix64(*seed ^ mix64(*thread as u64) ^ 0x6865_6c64));
        let mut sel = Selector::new(None).expect("uniform selection needs no parameters");
        let mut src = Src {
            codec,
            ids,
            chars,
            scratch,
        };
        let picked: Vec<u64> = (0..n)
            .filter_map(|_| sec.live.pick(&mut sel, None, &mut rng, &mut src))
            .map(|p| p.id)
            .collect();
        picked
            .into_iter()
            .map(|id| {
                let mut key = Vec::new();
                codec.render(id, chars, &mut key);
                key
            })
            .collect()
    }

    /// Operations skipped so far because the thread had no live key for them.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Phase name of `phase`.
    pub fn phase_name(&self, phase: usize) -> &str {
        let (s, g) = self.phases[phase];
        &self.plan.sections[s].groups[g].name
    }

    /// Number of phases.
    pub fn phase_count(&self) -> usize {
        self.phases.len()
    }

    /// The section whose key space is current, once a phase was entered.
    pub fn section(&self) -> Option<usize> {
        self.section.as_ref().map(|s| s.index)
    }

    /// After an insert whose key has a lifetime: the key, its drawn lifetime and the
    /// tag to report to [`Generator::expired`] once the key is deleted. Returned once;
    /// call it after every operation of a spec with lifetimes (before the next one
    /// reuses the key buffer).
    #[inline]
    pub fn take_lifetime(&mut self) -> Option<(&[u8], Duration, u64)> {
        let (after, tag) = self.lifetime.take()?;
        Some((&self.key, after, tag))
    }

    /// The key of `tag` (from [`Generator::take_lifetime`] in the current section) was
    /// deleted when its lifetime ended: it leaves the live set unless a delete of the
    /// spec's own removed it first.
    pub fn expired(&mut self, tag: u64) {
        let Some(sec) = self.section.as_mut() else {
            return;
        };
        let (Some(codec), Some(ids)) = (&sec.codec, &sec.ids) else {
            return;
        };
        let mut src = Src {
            codec,
            ids,
            chars: &self.chars,
            scratch: &mut self.scratch,
        };
        sec.live.expire(tag, &mut src);
    }

    /// Prepares phase `phase` (a new section starts an empty key space).
    pub fn enter(&mut self, phase: usize) -> Result<(), String> {
        let (s, g) = self.phases[phase];
        let plan = Arc::clone(&self.plan);
        let sec = &plan.sections[s];
        let salt = mix64(self.seed ^ mix64(0x5345_4354 + s as u64));
        if self.section.as_ref().is_none_or(|st| st.index != s) {
            self.section = None; // free the previous key space first
            let codec = match &sec.key {
                Some((e, cs)) => {
                    let compiled = Str::compile(e, *cs, salt).map_err(|m| format!("{}: {m}", sec.path))?;
                    Some(KeyCodec::new(compiled, salt).map_err(|m| format!("{}: {m}", sec.path))?)
                }
                None => None,
            };
            let ids = codec
                .as_ref()
                .map(|c| IdSlice::new(c.capacity(), self.thread, self.threads, salt));
            // Sorted groups insert ids out of the order they are handed out, so their
            // sections list live ids from the start.
            let dense = !sec.groups.iter().any(|g| g.sorted.is_some());
            let narrow = codec.as_ref().is_some_and(KeyCodec::is_narrow);
            let mut live = LiveSet::new(sec.ordered, narrow, sec.hot_classes, dense);
            if sec.lifetimes {
                live.track_tags();
            }
            let mine = thread_counts(&[sec.inserts], self.thread, self.threads)[0];
            live.reserve(usize::try_from(mine).unwrap_or(0));
            self.section = Some(SectionState {
                index: s,
                codec,
                ids,
                live,
            });
        }
        let group = &sec.groups[g];
        let counts: Vec<u64> = group.ops.iter().map(|o| o.count).collect();
        let timed = matches!(group.budget, Budget::Secs(_));
        let left = if timed {
            counts.clone()
        } else {
            thread_counts(&counts, self.thread, self.threads)
        };
        let mut ops = Vec::new();
        for o in &group.ops {
            let err = |m: String| format!("{}: {m}", o.path);
            ops.push(OpState {
                kind: o.kind,
                path: o.path.clone(),
                sel: Selector::new(o.selection.as_ref()).map_err(err)?,
                hot: o.hot_probability,
                val: match &o.val {
                    Some((e, cs)) => Some(ValueGen::new(Str::compile(e, *cs, salt).map_err(err)?)),
                    None => None,
                },
                // The section's salt: a hot_range written alike means the same prefixes.
                own_key: match &o.key {
                    Some((e, cs)) => Some(Str::compile(e, *cs, salt).map_err(err)?),
                    None => None,
                },
                range: o.range.clone(),
                format: o.format,
                lifetime: o.lifetime.clone().map(Box::new),
            });
        }
        self.values
            .prepare(&ops.iter().filter_map(|o| o.val.as_ref()).collect::<Vec<_>>());
        let sorted = group.sorted.as_ref().map(|(k, l)| {
            let i = group
                .ops
                .iter()
                .position(|o| o.kind == SpecOp::Insert)
                .expect("checked");
            SortedInserts::new(
                k.clone(),
                l.clone(),
                thread_counts(&counts, self.thread, self.threads)[i].max(1),
            )
        });
        self.group = Some(GroupState {
            left_total: left.iter().sum(),
            left,
            ops,
            timed,
            sorted,
        });
        Ok(())
    }

    /// The next operation of the current phase, or None when this thread's share is
    /// done (never, for a time-bounded phase). Errors name the operation's path.
    #[inline]
    pub fn next_op(&mut self) -> Result<Option<Op<'_>>, String> {
        Ok(self.next_op_plain()?.map(|(op, _)| op))
    }

    /// Like [`Generator::next_op`], with whether the value came from a value pool (its
    /// bytes never need escaping in a log line).
    pub fn next_op_plain(&mut self) -> Result<Option<(Op<'_>, bool)>, String> {
        let Generator {
            group,
            section,
            rng,
            chars,
            values,
            key,
            end,
            scratch,
            skipped,
            threads,
            lifetime,
            ..
        } = self;
        let g = group.as_mut().expect("a phase was entered");
        let sec = section.as_mut().expect("a phase was entered");
        if g.left_total == 0 {
            return Ok(None);
        }
        let mut i = g.draw(rng);
        if g.ops[i].kind.needs_live() && sec.live.is_empty() {
            // A group that starts empty fills itself first: take an insert instead.
            match g.ops.iter().position(|o| o.kind == SpecOp::Insert) {
                Some(j) if g.timed || g.left[j] > 0 => i = j,
                _ => {
                    g.consume(i);
                    *skipped += 1;
                    return Ok(Some((Op::Skip, false)));
                }
            }
        }
        g.consume(i);
        let op = &mut g.ops[i];
        let plain = matches!(op.val, Some(ValueGen::Pool { .. }));
        let exhausted = || {
            format!(
                "{}: this thread's share of the section's key space is used up (give the key more characters)",
                op.path
            )
        };
        key.clear();
        if op.kind == SpecOp::Insert {
            let (Some(codec), Some(ids)) = (&sec.codec, &mut sec.ids) else {
                unreachable!("sections with inserts have a key space")
            };
            let id = match &mut g.sorted {
                Some(s) => s.take(codec, ids, chars, rng, scratch).ok_or_else(exhausted)?,
                None => ids.fresh().ok_or_else(exhausted)?,
            };
            let hot = codec.render(id, chars, key);
            let mut src = Src {
                codec,
                ids,
                chars,
                scratch,
            };
            let tag = sec.live.insert(id, hot, &mut src);
            if let Some(e) = &op.lifetime {
                *lifetime = Some((lifetime_of(e.sample(rng)), tag));
            }
            let val = values.make(op.val.as_ref().expect("inserts have values"), chars, rng);
            return Ok(Some((Op::Insert { key, val }, plain)));
        }
        if matches!(op.kind, SpecOp::EmptyPointQuery | SpecOp::EmptyPointDelete) {
            absent_key(op, sec, chars, rng, key, scratch)?;
            let op = if op.kind == SpecOp::EmptyPointQuery {
                Op::Get { key }
            } else {
                Op::Delete { key }
            };
            return Ok(Some((op, false)));
        }

        // Everything else starts from a live key.
        let codec = sec.codec.as_ref().expect("sections with live keys have a key space");
        let mut src = Src {
            codec,
            ids: sec.ids.as_ref().expect("sections with live keys hand out ids"),
            chars,
            scratch,
        };
        let picked = sec.live.pick(&mut op.sel, op.hot, rng, &mut src);
        let Some(p) = picked else {
            *skipped += 1;
            return Ok(Some((Op::Skip, false)));
        };
        codec.render(p.id, chars, key);
        let op_out = match op.kind {
            SpecOp::Update | SpecOp::Merge | SpecOp::ReadModifyWrite | SpecOp::Extend => {
                let val = values.make(op.val.as_ref().expect("writes have values"), chars, rng);
                match op.kind {
                    SpecOp::Update => Op::Update { key, val },
                    SpecOp::Merge | SpecOp::Extend => Op::Merge { key, val },
                    _ => Op::ReadModifyWrite { key, val },
                }
            }
            SpecOp::PointQuery => Op::Get { key },
            SpecOp::PointDelete => {
                sec.live.remove(p, &mut src);
                Op::Delete { key }
            }
            SpecOp::RangeQuery | SpecOp::RangeDelete => {
                let live = sec.live.len();
                let count = match op.range.as_ref().expect("ranges have a size") {
                    RangeSize::Selectivity(e) => {
                        let s = e.sample(rng).clamp(0.0, 1.0);
                        ((s * (live * *threads as u64) as f64).round() as u64).max(1)
                    }
                    RangeSize::ScanLength(e) => e.sample_count(rng).max(1),
                };
                if op.kind == SpecOp::RangeQuery && op.format == RangeFormat::StartCount {
                    Op::Scan {
                        lo: key,
                        hi: None,
                        limit: count,
                    }
                } else {
                    let start = src.order(p.id);
                    let mut stop = sec.live.order_after(start, count, &mut src);
                    if *threads > 1 {
                        // Stay inside this thread's slice, so no other thread's keys are
                        // touched (their live sets would not know).
                        let cap = u128::from(codec.capacity());
                        let slice_end = start / cap * cap + u128::from(src.ids.bounds().1);
                        stop = Some(stop.map_or(slice_end, |s| s.min(slice_end)));
                    }
                    end.clear();
                    match stop {
                        Some(o) => codec.bound(o, end),
                        None => end.push(0xff),
                    }
                    if op.kind == SpecOp::RangeDelete {
                        sec.live.remove_range(start, stop.unwrap_or(u128::MAX), &mut src);
                        Op::DeleteRange { lo: key, hi: end }
                    } else {
                        Op::Scan {
                            lo: key,
                            hi: Some(end),
                            limit: 0,
                        }
                    }
                }
            }
            SpecOp::Insert | SpecOp::EmptyPointQuery | SpecOp::EmptyPointDelete => unreachable!("handled above"),
        };
        Ok(Some((op_out, plain)))
    }
}

/// A section's key space as the live set sees it.
struct Src<'a> {
    codec: &'a KeyCodec,
    ids: &'a IdSlice,
    chars: &'a CharPools,
    scratch: &'a mut Vec<u8>,
}

impl IdSource for Src<'_> {
    #[inline]
    fn nth(&self, i: u64) -> u64 {
        self.ids.nth(i)
    }

    #[inline]
    fn order(&mut self, id: u64) -> u128 {
        self.codec.order(id, self.chars, self.scratch)
    }
}

/// Fills `key` with a key that is certainly not live.
fn absent_key(
    op: &OpState,
    sec: &SectionState,
    chars: &CharPools,
    rng: &mut Xoshiro256PlusPlus,
    key: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), String> {
    let Some(own) = &op.own_key else {
        // The section's own shape: an id not handed out yet.
        let (Some(codec), Some(ids)) = (&sec.codec, &sec.ids) else {
            unreachable!("checked when the spec was opened")
        };
        let id = ids.unissued(rng).ok_or_else(|| {
            format!(
                "{}: this thread's share of the section's key space is used up, so no key is certainly absent",
                op.path
            )
        })?;
        codec.render(id, chars, key);
        return Ok(());
    };
    for _ in 0..crate::workload::dist::MAX_REDRAWS {
        key.clear();
        own.render(chars, rng, key);
        let maybe_live = match (&sec.codec, &sec.ids) {
            (Some(codec), Some(ids)) => codec.decode(key, chars, scratch).is_some_and(|id| ids.maybe_live(id)),
            _ => false,
        };
        if !maybe_live {
            return Ok(());
        }
    }
    Err(format!(
        "{}: its key expression keeps producing keys that may be live; give it keys that differ from the inserts'",
        op.path
    ))
}

impl GroupState {
    /// Draws the next operation kind: by what is left (count-bounded), or by the mix.
    #[inline]
    fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> usize {
        let mut u = rng.random_range(0..self.left_total);
        for (i, &n) in self.left.iter().enumerate() {
            if u < n {
                return i;
            }
            u -= n;
        }
        self.left.len() - 1
    }

    #[inline]
    fn consume(&mut self, i: usize) {
        if !self.timed {
            self.left[i] -= 1;
            self.left_total -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::oplog::write_op;
    use crate::workload::spec::{plan, schema};
    use std::collections::HashSet;

    fn plan_of(json: &str) -> Arc<Plan> {
        Arc::new(plan::build(&schema::parse(json).unwrap(), "t").unwrap())
    }

    /// Thread `t` of `threads`' whole stream, as log bytes.
    fn stream(plan: &Arc<Plan>, seed: u64, t: usize, threads: usize) -> Vec<u8> {
        let mut g = Generator::new(Arc::clone(plan), t, threads, seed);
        let mut out = Vec::new();
        for p in 0..g.phase_count() {
            g.enter(p).unwrap();
            while let Some(op) = g.next_op().unwrap() {
                write_op(&mut out, &op).unwrap();
            }
        }
        out
    }

    #[test]
    fn each_thread_stream_is_a_function_of_seed_and_thread() {
        let plan = plan_of(
            r#"{"sections": [{"key_len": 12, "val_len": 8, "groups": [
                {"inserts": {"op_count": 3000}},
                {"inserts": {"op_count": 3000}, "point_queries": {"op_count": 2000},
                 "point_deletes": {"op_count": 500}, "empty_point_queries": {"op_count": 500}}]}]}"#,
        );
        let streams: Vec<Vec<u8>> = (0..3).map(|t| stream(&plan, 9, t, 3)).collect();
        assert_eq!(streams[1], stream(&plan, 9, 1, 3), "same seed and thread, same bytes");
        assert_ne!(streams[1], stream(&plan, 10, 1, 3));
        let mut inserted = HashSet::new();
        for s in &streams {
            for line in s.split(|&b| b == b'\n').filter(|l| l.starts_with(b"I ")) {
                let key = line.split(|&b| b == b' ').nth(1).unwrap().to_vec();
                assert!(inserted.insert(key), "threads never insert the same key");
            }
        }
        assert_eq!(inserted.len(), 6000, "the threads' shares add up to the spec's counts");
    }

    #[test]
    fn drawn_lifetimes_are_clamped_to_zero_and_a_year() {
        assert_eq!(lifetime_of(-3.0), Duration::ZERO);
        assert_eq!(lifetime_of(f64::NAN), Duration::ZERO);
        assert_eq!(lifetime_of(1.5), Duration::from_millis(1500));
        assert_eq!(lifetime_of(1e300), Duration::from_secs_f64(MAX_LIFETIME));
    }

    #[test]
    fn thread_counts_split_exactly() {
        for counts in [vec![1u64, 1], vec![5, 0, 7], vec![100, 3, 1]] {
            for threads in 1..=5 {
                let per: Vec<Vec<u64>> = (0..threads).map(|t| thread_counts(&counts, t, threads)).collect();
                for (k, &c) in counts.iter().enumerate() {
                    assert_eq!(per.iter().map(|p| p[k]).sum::<u64>(), c);
                }
                let total: u64 = counts.iter().sum();
                for (t, p) in per.iter().enumerate() {
                    assert_eq!(p.iter().sum::<u64>(), crate::workload::share(total, threads, t));
                }
            }
        }
    }
}
