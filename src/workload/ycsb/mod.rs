//! YCSB workload files (CoreWorkload properties, and YCSB-IVS's extend), run as they
//! are: `kvmark -P workloads/workloada -p recordcount=1000` or a YCSB file given as a
//! WORKLOAD.
//!
//! Keys are YCSB's: "user" and the key number, hashed with YCSB's FNV-64 unless
//! `insertorder=ordered`, zero-padded to `zeropadding` digits ([`generators::key_name`]), so a
//! store kvmark loads holds the keys YCSB would load. A record's `fieldcount` fields
//! are one value: their bytes back to back, in field order, with no field names (the
//! engine contract has one value per key). So an operation costs what it costs a plain
//! key-value engine, with no hidden work (promise 4):
//! - read: one `get` of the whole record (also with `readallfields=false`);
//! - update: one `put` of a whole new record. YCSB writes only one field unless
//!   `writeallfields=true`; keeping the other fields would need a read first, which a
//!   plain engine does not do for you, so kvmark writes every field instead (the
//!   bytes YCSB would send with `writeallfields=true`). Use `readmodifywriteproportion`
//!   to measure the get-then-put a field update costs when the rest must be kept;
//! - insert: one `put` of a new record; scan: one `scan` of up to the scan length
//!   rows from the start key; read-modify-write: a `get` then a `put`, one unit;
//! - extend (YCSB-IVS): one `append` of `extendfieldlength` bytes to the record.
//!
//! The load phase inserts keys `insertstart .. insertstart + insertcount`, each thread a
//! contiguous share. Run-phase inserts take key numbers after `recordcount`, strided
//! by thread (thread t of T takes recordcount + t, + t + T, ...), so no key counter is
//! shared between threads (promise 1); a thread bounds its picks by the keys it knows
//! exist: the loaded ones and `T` per insert it made. With one thread that is YCSB's
//! acknowledged counter exactly.

pub mod generators;
pub mod props;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use self::generators::{KeyChooser, Lengths, ZIPFIAN_CONSTANT, Zipfian};
use self::props::Properties;
use super::epochs::EpochLayout;
use super::op::SCAN_END;
use super::{Budget, PhasePlan, Program, Sweep, ThreadCtx, Workload, WorkloadError, share};
use crate::kv::Kv;
use crate::kv::pace::Rate;
use crate::kv::values::ValuePool;

/// Name of the timed load phase (the YCSB sink reports its puts as `[INSERT]`).
pub const LOAD_PHASE: &str = "load";
/// Name of the run (transaction) phase.
pub const RUN_PHASE: &str = "run";

/// How the command line asks for YCSB's phases and properties.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    /// `-p NAME=VALUE` settings, over every YCSB file's own.
    pub overrides: Vec<(String, String)>,
    /// `-load`: time the load phase.
    pub load: bool,
    /// `-t`: time the run phase (the default when neither is given).
    pub run: bool,
}

/// A run-phase operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
    Extend,
}

/// A timed phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Load,
    Run,
}

/// The workload a YCSB file describes, shared by all threads.
#[derive(Debug)]
pub struct YcsbWorkload {
    path: PathBuf,
    name: String,
    recordcount: u64,
    operationcount: u64,
    insertstart: u64,
    insertcount: u64,
    /// Cumulative shares of the operation kinds, in YCSB's order.
    mix: Vec<(f64, Kind)>,
    chooser: KeyChooser,
    fieldcount: u64,
    field_lengths: Lengths,
    scan_lengths: Lengths,
    ordered: bool,
    zeropadding: usize,
    extend_len: usize,
    target: Option<f64>,
    max_time: Option<Duration>,
    threadcount: Option<usize>,
    /// The timed phases; an untimed load fills the store first when the load is not one.
    phases: Vec<Phase>,
    values: Arc<ValuePool>,
}

/// Most records, and the highest key number, a YCSB file may name: far beyond any
/// store, and low enough that key arithmetic (inserts after the last record, by
/// thread) never overflows.
const MAX_RECORDS: u64 = 1 << 48;

/// Largest record (fieldcount x the longest field) and extend suffix: each is built
/// in memory before it is written.
const MAX_RECORD_BYTES: u64 = 1 << 30;

/// Most items a zipfian may sum up front (`latest`, zipfian lengths): YCSB sums one
/// term per item when it starts, which past this takes minutes.
const MAX_ZETA_ITEMS: u64 = 100_000_000;

/// Longest zero padding of a key number (a key is "user" and the padded number).
const MAX_ZEROPADDING: u64 = 1 << 16;

/// Longest `maxexecutiontime`: a year, as the seconds flags.
const MAX_EXECUTION_SECS: f64 = 366.0 * 24.0 * 3600.0;

/// The bytes every YCSB record is sliced from: the same for every file, so built once
/// per process (a megabyte of random bytes).
fn record_pool() -> Arc<ValuePool> {
    static POOL: OnceLock<Arc<ValuePool>> = OnceLock::new();
    Arc::clone(POOL.get_or_init(|| Arc::new(ValuePool::new(&(0u8..=255).collect::<Vec<_>>(), 1.0, 0x9c5b_0f1e))))
}

fn invalid(path: &Path, m: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::Invalid(format!("{}: {m}", path.display()))
}

impl YcsbWorkload {
    /// Reads a YCSB workload file with the command line's overrides and phases; each
    /// property kvmark does not use is named in a warning on stderr.
    pub fn open(path: &Path, opts: &Options) -> Result<YcsbWorkload, WorkloadError> {
        let p = props::read(path, &opts.overrides).map_err(WorkloadError::Invalid)?;
        for w in p.warnings() {
            eprintln!("kvmark: warning: {}: {w}", path.display());
        }
        Self::from_properties(path, &p, opts).map_err(|m| invalid(path, m))
    }

    /// The workload `p` describes, `path` naming it (the fuzz targets and property
    /// tests call this with properties parsed from memory).
    pub fn from_properties(path: &Path, p: &Properties, opts: &Options) -> Result<YcsbWorkload, String> {
        let class = p.word("workload", "site.ycsb.workloads.CoreWorkload");
        if !class.ends_with("CoreWorkload") {
            return Err(format!(
                "workload={class}: kvmark runs YCSB's CoreWorkload (and YCSB-IVS's extend); other workload classes are not supported"
            ));
        }
        let records = |key: &str, default: u64| -> Result<u64, String> {
            let n = p.count(key, default)?;
            if n > MAX_RECORDS {
                return Err(format!("{key}={n}: give at most {MAX_RECORDS}"));
            }
            Ok(n)
        };
        let recordcount = records("recordcount", 1000)?;
        if recordcount == 0 {
            return Err("recordcount=0: give the number of records to load".into());
        }
        let operationcount = p.count("operationcount", 1000)?;
        let insertstart = records("insertstart", 0)?;
        let insertcount = records("insertcount", recordcount.saturating_sub(insertstart))?;
        // Both at most MAX_RECORDS: the sum cannot overflow.
        if insertstart + insertcount > recordcount || insertcount == 0 {
            return Err(format!(
                "insertstart={insertstart} insertcount={insertcount} recordcount={recordcount}: \
                 give 0 < insertcount and insertstart + insertcount <= recordcount"
            ));
        }
        let shares = [
            ("readproportion", 0.95, Kind::Read),
            ("updateproportion", 0.05, Kind::Update),
            ("insertproportion", 0.0, Kind::Insert),
            ("scanproportion", 0.0, Kind::Scan),
            ("readmodifywriteproportion", 0.0, Kind::ReadModifyWrite),
            ("extendproportion", 0.0, Kind::Extend),
        ];
        let mut weights = Vec::new();
        for (key, default, kind) in shares {
            let w = p.number(key, default)?;
            if w > 0.0 {
                weights.push((w, kind));
            }
        }
        let total: f64 = weights.iter().map(|(w, _)| w).sum();
        let phases = match (opts.load, opts.run) {
            (true, false) => vec![Phase::Load],
            (true, true) => vec![Phase::Load, Phase::Run],
            (false, _) => vec![Phase::Run],
        };
        if total <= 0.0 && phases.contains(&Phase::Run) {
            return Err(
                "every operation proportion is 0: give readproportion, updateproportion, ... (or run -load)".into(),
            );
        }
        let mut acc = 0.0;
        let mix = weights
            .into_iter()
            .map(|(w, k)| {
                acc += w / total;
                (acc, k)
            })
            .collect();
        let insertshare = p.number("insertproportion", 0.0)?;
        let last = insertstart + insertcount - 1;
        let chooser = match p.word("requestdistribution", "uniform") {
            "uniform" => KeyChooser::Uniform {
                min: insertstart,
                max: last,
            },
            "zipfian" => {
                // YCSB sizes the space for the inserts it expects (twice, as a fudge
                // factor) so that new keys do not shift which keys are hot.
                let expected = ((operationcount as f64 * insertshare * 2.0) as u64).min(MAX_RECORDS);
                KeyChooser::scrambled_zipfian(insertstart, insertstart + insertcount + expected, ZIPFIAN_CONSTANT)
            }
            "latest" => {
                let items = (recordcount - 1).max(1);
                if items > MAX_ZETA_ITEMS {
                    return Err(format!(
                        "requestdistribution=latest over recordcount={recordcount}: its zipfian sums one term per \
                         record before the run (as YCSB's does), too slow past {MAX_ZETA_ITEMS}; give fewer records \
                         or requestdistribution=zipfian"
                    ));
                }
                KeyChooser::Latest(Box::new(Zipfian::new(0, items - 1, ZIPFIAN_CONSTANT)))
            }
            "hotspot" => {
                let data = p.number("hotspotdatafraction", 0.2)?;
                let opn = p.number("hotspotopnfraction", 0.8)?;
                if data > 1.0 || opn > 1.0 {
                    return Err(
                        "hotspotdatafraction and hotspotopnfraction are fractions: give values from 0 to 1".into(),
                    );
                }
                let hot = (insertcount as f64 * data) as u64;
                KeyChooser::Hotspot {
                    min: insertstart,
                    hot,
                    cold: insertcount - hot,
                    hot_opn: opn,
                }
            }
            "sequential" => KeyChooser::Sequential {
                start: insertstart,
                count: insertcount,
                next: 0,
            },
            "exponential" => {
                let percentile = p.number("exponential.percentile", 95.0)?;
                let frac = p.number("exponential.frac", 0.857_142_857_1)?;
                if !(percentile > 0.0 && percentile < 100.0 && frac > 0.0) {
                    return Err("exponential.percentile must be between 0 and 100 and exponential.frac above 0".into());
                }
                KeyChooser::Exponential {
                    gamma: -(1.0 - percentile / 100.0).ln() / (recordcount as f64 * frac),
                }
            }
            other => {
                return Err(format!(
                    "requestdistribution={other}: give uniform, zipfian, latest, hotspot, sequential or exponential"
                ));
            }
        };
        let fieldcount = p.count("fieldcount", 10)?;
        let fieldlength = p.count("fieldlength", 100)?;
        let minfieldlength = p.count("minfieldlength", 1)?;
        let field_lengths = lengths(
            "fieldlengthdistribution",
            p.word("fieldlengthdistribution", "constant"),
            minfieldlength,
            fieldlength,
        )?;
        let scan_lengths = lengths(
            "scanlengthdistribution",
            p.word("scanlengthdistribution", "uniform"),
            p.count("minscanlength", 1)?,
            p.count("maxscanlength", 1000)?,
        )?;
        if matches!(scan_lengths, Lengths::Constant(_)) {
            return Err("scanlengthdistribution=constant: give uniform or zipfian".into());
        }
        if fieldcount
            .checked_mul(field_lengths.max())
            .is_none_or(|n| n > MAX_RECORD_BYTES)
        {
            return Err(format!(
                "fieldcount={fieldcount} fields of up to {} bytes: a record is built in memory; give at most \
                 {MAX_RECORD_BYTES} bytes in all",
                field_lengths.max()
            ));
        }
        let zeropadding = p.count("zeropadding", 1)?;
        if zeropadding > MAX_ZEROPADDING {
            return Err(format!(
                "zeropadding={zeropadding}: give at most {MAX_ZEROPADDING} digits"
            ));
        }
        let extend_len = p.count("extendfieldlength", 100)?;
        if extend_len > MAX_RECORD_BYTES {
            return Err(format!(
                "extendfieldlength={extend_len}: give at most {MAX_RECORD_BYTES} bytes"
            ));
        }
        let ordered = match p.word("insertorder", "hashed") {
            "hashed" => false,
            "ordered" => true,
            other => return Err(format!("insertorder={other}: give hashed or ordered")),
        };
        let positive = |key: &str| -> Result<Option<f64>, String> {
            let v = p.number(key, 0.0)?;
            Ok((v > 0.0).then_some(v))
        };
        let max_time = positive("maxexecutiontime")?;
        if max_time.is_some_and(|t| t > MAX_EXECUTION_SECS) {
            return Err(format!(
                "maxexecutiontime={}: give at most a year ({MAX_EXECUTION_SECS} s)",
                max_time.unwrap_or_default()
            ));
        }
        let threadcount = match p.count("threadcount", 0)? {
            0 => None,
            n => Some(n as usize),
        };
        Ok(YcsbWorkload {
            path: path.to_path_buf(),
            name: path
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "ycsb".into()),
            recordcount,
            operationcount,
            insertstart,
            insertcount,
            mix,
            chooser,
            fieldcount,
            field_lengths,
            scan_lengths,
            ordered,
            zeropadding: zeropadding as usize,
            extend_len: extend_len as usize,
            target: positive("target")?,
            max_time: max_time.map(Duration::from_secs_f64),
            threadcount,
            phases,
            values: record_pool(),
        })
    }

    /// The `threadcount` property, if set (`--threads` wins over it).
    pub fn threadcount(&self) -> Option<usize> {
        self.threadcount
    }
}

/// A length generator from a distribution name.
fn lengths(key: &str, name: &str, min: u64, max: u64) -> Result<Lengths, String> {
    if name != "constant" && (min > max || min == 0) {
        return Err(format!(
            "{key}={name}: give 1 <= the minimum <= the maximum (got {min} and {max})"
        ));
    }
    if name == "zipfian" && max - min >= MAX_ZETA_ITEMS {
        return Err(format!(
            "{key}=zipfian from {min} to {max}: its zipfian sums one term per length before the run (as YCSB's \
             does), too slow past {MAX_ZETA_ITEMS} lengths; give a narrower range or uniform"
        ));
    }
    Ok(match name {
        "constant" => Lengths::Constant(max),
        "uniform" => Lengths::Uniform(min, max),
        "zipfian" => Lengths::Zipfian(Box::new(Zipfian::new(min, max, ZIPFIAN_CONSTANT))),
        other => return Err(format!("{key}={other}: give constant, uniform or zipfian")),
    })
}

impl Workload for YcsbWorkload {
    fn name(&self) -> &str {
        &self.name
    }

    fn ordered_needs(&self) -> Vec<String> {
        // Only kinds with a share above 0 are in the mix; a load-only run scans nothing.
        let scans = self.phases.contains(&Phase::Run) && self.mix.iter().any(|(_, kind)| *kind == Kind::Scan);
        match scans {
            true => vec!["scanproportion".to_string()],
            false => Vec::new(),
        }
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn batched(&self) -> bool {
        false
    }

    fn sweep(&self) -> Option<&Sweep> {
        None
    }

    fn has_load(&self) -> bool {
        // Every measurement starts from an empty store: without a timed load, the
        // records are loaded untimed first (kvmark's seed).
        !self.phases.contains(&Phase::Load)
    }

    fn phases(&self) -> Vec<PhasePlan> {
        self.phases
            .iter()
            .map(|ph| match ph {
                Phase::Load => PhasePlan {
                    name: LOAD_PHASE.into(),
                    budget: Some(Budget::Ops(self.insertcount)),
                    rate: self.target.map(Rate::phase),
                },
                Phase::Run => PhasePlan {
                    name: RUN_PHASE.into(),
                    budget: Some(match (self.operationcount, self.max_time) {
                        (0, Some(t)) => Budget::Secs(t.as_secs_f64()),
                        (0, None) => Budget::Ops(1000),
                        (n, _) => Budget::Ops(n),
                    }),
                    rate: self.target.map(Rate::phase),
                },
            })
            .collect()
    }

    fn epoch_layout(&self) -> Result<EpochLayout, String> {
        Err(format!(
            "{}: YCSB workload files do not run in epochs (YCSB-IVS's epochs run from specs/ivs-*.json)",
            self.path.display()
        ))
    }

    fn program(&self, ctx: &ThreadCtx, kv: Kv) -> Result<Box<dyn Program>, WorkloadError> {
        let threads = ctx.threads.max(1) as u64;
        let t = ctx.thread as u64;
        let per = self.insertcount / threads;
        let first = self.insertstart + t * per + t.min(self.insertcount % threads);
        let rng = Xoshiro256PlusPlus::seed_from_u64(ctx.params.seed.wrapping_add(t));
        let mut chooser = self.chooser.clone();
        if let KeyChooser::Sequential { count, next, .. } = &mut chooser {
            // Threads start spread over the cycle instead of all at its first key.
            *next = t * *count / threads;
        }
        Ok(Box::new(YcsbProgram {
            w: Arc::clone(&self.values),
            kv,
            rng,
            thread: t,
            threads,
            chooser,
            mix: self.mix.clone(),
            field_lengths: self.field_lengths.clone(),
            scan_lengths: self.scan_lengths.clone(),
            fieldcount: self.fieldcount,
            ordered: self.ordered,
            zeropadding: self.zeropadding,
            extend_len: self.extend_len,
            recordcount: self.recordcount,
            load_next: first,
            load_end: first + share(self.insertcount, ctx.threads.max(1), ctx.thread),
            inserted: 0,
            phases: self.phases.clone(),
            max_time: self.max_time,
            deadline: None,
            key: Vec::with_capacity(32),
            buf: Vec::new(),
        }))
    }
}

/// One thread of a YCSB run.
struct YcsbProgram {
    w: Arc<ValuePool>,
    kv: Kv,
    rng: Xoshiro256PlusPlus,
    thread: u64,
    threads: u64,
    chooser: KeyChooser,
    mix: Vec<(f64, Kind)>,
    field_lengths: Lengths,
    scan_lengths: Lengths,
    fieldcount: u64,
    ordered: bool,
    zeropadding: usize,
    extend_len: usize,
    recordcount: u64,
    load_next: u64,
    load_end: u64,
    /// Run-phase inserts this thread made.
    inserted: u64,
    phases: Vec<Phase>,
    max_time: Option<Duration>,
    deadline: Option<Instant>,
    key: Vec<u8>,
    buf: Vec<u8>,
}

impl YcsbProgram {
    /// The newest key number this thread can count on existing.
    #[inline]
    fn latest(&self) -> u64 {
        self.recordcount - 1 + self.inserted * self.threads
    }

    /// Writes the name of key number `n` into `self.key`.
    #[inline]
    fn name_key(&mut self, n: u64) {
        generators::key_name(n, self.zeropadding, self.ordered, &mut self.key);
    }

    /// A whole record's bytes: `fieldcount` fields of the field length distribution.
    #[inline]
    fn record_len(&mut self) -> usize {
        let mut len = 0;
        for _ in 0..self.fieldcount {
            len += self.field_lengths.next(&mut self.rng);
        }
        len as usize
    }

    /// Inserts the next key of this thread's share of the load; false when it is done.
    #[inline]
    fn load_one(&mut self) -> bool {
        if self.load_next >= self.load_end {
            return false;
        }
        let n = self.load_next;
        self.load_next += 1;
        self.name_key(n);
        let len = self.record_len();
        let val = self.w.value(len, &mut self.rng, &mut self.buf);
        let _ = self.kv.put(&self.key, val);
        true
    }

    /// One run-phase operation. Engine errors are counted by `kv`.
    #[inline]
    fn transaction(&mut self) {
        let u: f64 = self.rng.random();
        let kind = self
            .mix
            .iter()
            .find(|(c, _)| u < *c)
            .or(self.mix.last())
            .map_or(Kind::Read, |(_, k)| *k);
        if kind == Kind::Insert {
            let n = self.recordcount + self.thread + self.inserted * self.threads;
            self.name_key(n);
            let len = self.record_len();
            let val = self.w.value(len, &mut self.rng, &mut self.buf);
            let _ = self.kv.put(&self.key, val);
            self.inserted += 1;
            return;
        }
        let latest = self.latest();
        let n = self.chooser.pick(latest, &mut self.rng);
        self.name_key(n);
        match kind {
            Kind::Read => {
                let _ = self.kv.get(&self.key);
            }
            Kind::Update => {
                let len = self.record_len();
                let val = self.w.value(len, &mut self.rng, &mut self.buf);
                let _ = self.kv.put(&self.key, val);
            }
            Kind::ReadModifyWrite => {
                let _ = self.kv.get(&self.key);
                let len = self.record_len();
                let val = self.w.value(len, &mut self.rng, &mut self.buf);
                let _ = self.kv.put(&self.key, val);
            }
            Kind::Scan => {
                let len = self.scan_lengths.next(&mut self.rng) as usize;
                let _ = self.kv.scan(&self.key, &SCAN_END, len, &mut |_, _| false);
            }
            Kind::Extend => {
                let val = self.w.value(self.extend_len, &mut self.rng, &mut self.buf);
                let _ = self.kv.append(&self.key, val);
            }
            Kind::Insert => unreachable!("handled above"),
        }
    }
}

impl Program for YcsbProgram {
    fn load(&mut self) -> Result<(), WorkloadError> {
        let mut i = 0u32;
        while self.load_one() {
            i = i.wrapping_add(1);
            if i.is_multiple_of(1024) && self.kv.aborted() {
                break;
            }
        }
        Ok(())
    }

    fn enter(&mut self, phase: usize) -> Result<(), WorkloadError> {
        if self.phases.get(phase) == Some(&Phase::Run) {
            self.deadline = self.max_time.map(|t| Instant::now() + t);
        }
        Ok(())
    }

    fn run(&mut self, phase: usize, _first_iter: u64, n: u64) -> Result<u64, WorkloadError> {
        let phase = *self
            .phases
            .get(phase)
            .ok_or_else(|| WorkloadError::Runtime(format!("YCSB workload has no phase {phase}")))?;
        let mut done = 0;
        while done < n {
            if phase == Phase::Run
                && done % 256 == 0
                && let Some(d) = self.deadline
                && Instant::now() >= d
            {
                // maxexecutiontime: the run phase ends, as YCSB's client stops.
                break;
            }
            if !self.kv.begin_unit() {
                break;
            }
            match phase {
                Phase::Load => {
                    if !self.load_one() {
                        break;
                    }
                }
                Phase::Run => self.transaction(),
            }
            done += 1;
        }
        Ok(done)
    }

    fn kv(&mut self) -> &mut Kv {
        &mut self.kv
    }

    fn finish(self: Box<Self>) -> Kv {
        self.kv
    }
}

/// Opens `path` as a YCSB workload file.
pub fn open(path: &Path, opts: &Options) -> Result<Arc<dyn Workload>, WorkloadError> {
    Ok(Arc::new(YcsbWorkload::open(path, opts)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str, opts: &Options) -> Result<YcsbWorkload, String> {
        YcsbWorkload::from_properties(Path::new("w"), &Properties::parse(text), opts)
    }

    #[test]
    fn phases_follow_the_flags() {
        let text = "recordcount=10\noperationcount=20\n";
        let w = workload(text, &Options::default()).unwrap();
        assert!(w.has_load());
        assert_eq!(w.phases().len(), 1);
        assert_eq!(w.phases()[0].budget, Some(Budget::Ops(20)));
        let opts = Options {
            load: true,
            run: true,
            ..Options::default()
        };
        let w = workload(text, &opts).unwrap();
        assert!(!w.has_load());
        let names: Vec<_> = w.phases().into_iter().map(|p| (p.name, p.budget)).collect();
        assert_eq!(
            names,
            [
                (LOAD_PHASE.to_string(), Some(Budget::Ops(10))),
                (RUN_PHASE.to_string(), Some(Budget::Ops(20)))
            ]
        );
    }

    #[test]
    fn bad_properties_are_named() {
        for (text, want) in [
            ("requestdistribution=zipf", "requestdistribution=zipf"),
            ("insertorder=random", "insertorder=random"),
            ("recordcount=0", "recordcount=0"),
            ("readproportion=0\nupdateproportion=0", "proportion"),
            ("fieldlengthdistribution=histogram", "fieldlengthdistribution=histogram"),
            ("workload=site.ycsb.workloads.TimeSeriesWorkload", "CoreWorkload"),
            ("insertcount=2000", "insertcount=2000"),
            // Values that overflowed, panicked, hung or ran out of memory (issue 21).
            (
                "insertstart=18446744073709551615\ninsertcount=2",
                "insertstart=18446744073709551615",
            ),
            (
                "recordcount=18446744073709551615",
                "recordcount=18446744073709551615: give at most",
            ),
            ("operationcount=0\nmaxexecutiontime=1e300", "maxexecutiontime="),
            (
                "recordcount=2000000000\nrequestdistribution=latest",
                "requestdistribution=latest",
            ),
            (
                "fieldlength=99999999999999",
                "fieldcount=10 fields of up to 99999999999999 bytes",
            ),
            ("fieldcount=18446744073709551615", "fieldcount=18446744073709551615"),
            ("zeropadding=99999999999", "zeropadding=99999999999"),
            ("extendfieldlength=99999999999", "extendfieldlength=99999999999"),
            (
                "fieldlengthdistribution=zipfian\nfieldlength=18446744073709551615",
                "fieldlengthdistribution=zipfian",
            ),
            (
                "maxscanlength=18446744073709551615\nscanlengthdistribution=zipfian",
                "scanlengthdistribution=zipfian",
            ),
        ] {
            let err = workload(text, &Options::default()).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
