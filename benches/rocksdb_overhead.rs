//! The bare-loop side of the harness-overhead benchmark: fill-random and read-random
//! on RocksDB through the `rocksdb` crate directly, with the same options, keys and
//! values as `bench/workloads/{fillrandom,readrandom}.lua` driven by kvmark. A read
//! copies the value into a reused buffer, as kvmark's get hands it to the workload.
//! `bench/rocksdb-overhead.sh` runs both sides in alternation and reports the ratio.
//!
//! usage: rocksdb_overhead fill|read --dir DIR [--items N] [--ops N] [--threads T]
//!        [--seed-batch N] [--oplog FILE] [--settle]
//!
//! `--oplog FILE` (read only) takes the keys and values from an operation log written
//! by `kvmark gen` instead: its inserts (`I key value`) are the seed, thread t of T
//! writing the t-th of T contiguous shares, and its point queries (`P key`) the timed
//! gets, thread t taking every T-th. That runs
//! exactly the operations of a declarative spec (`bench/workloads/readrandom.json`),
//! against kvmark running the spec itself. `--seed-batch` (default 256, as
//! readrandom.lua's load) sets the keys per write batch of the seed. `--settle` waits
//! for RocksDB's flushes and compactions after the seed, as `kvmark --settle` does.
//!
//! Prints one line: `<mode> threads=<T> ops=<N> secs=<S> ops/s=<R>`. Only the timed
//! phase counts: all threads start together after the (untimed) seed, and the clock
//! stops when the last one finishes, as in kvmark.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use kvmark::engine::EngineOptions;
use kvmark::engine::rocksdb::build_options;
use rocksdb::{DB, ReadOptions, WaitForCompactOptions, WriteBatch, WriteOptions};

const VALUE_BYTES: usize = 4096;
const NOISE_BYTES: usize = 65536 + VALUE_BYTES;
const BATCH: usize = 256;

/// A small, fast generator (splitmix64): the distribution matters, not the stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Writes "k:" and 14 zero-padded digits into `buf` (the Lua side's "k:%014d").
fn key(buf: &mut [u8; 16], mut i: u64) -> &[u8] {
    buf[0] = b'k';
    buf[1] = b':';
    for slot in buf[2..].iter_mut().rev() {
        *slot = b'0' + (i % 10) as u8;
        i /= 10;
    }
    &buf[..]
}

struct Args {
    mode: String,
    dir: PathBuf,
    items: u64,
    ops: u64,
    threads: usize,
    seed_batch: usize,
    oplog: Option<PathBuf>,
    settle: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1).filter(|a| a != "--bench");
    let mode = it.next().ok_or(
        "usage: rocksdb_overhead fill|read --dir DIR [--items N] [--ops N] [--threads T] \
             [--seed-batch N] [--oplog FILE] [--settle]",
    )?;
    if mode != "fill" && mode != "read" {
        return Err(format!("unknown mode '{mode}': give fill or read"));
    }
    let mut args = Args {
        mode,
        dir: PathBuf::new(),
        items: 200_000,
        ops: 200_000,
        threads: 1,
        seed_batch: BATCH,
        oplog: None,
        settle: false,
    };
    while let Some(flag) = it.next() {
        if flag == "--settle" {
            args.settle = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag} {value}: give a whole number"))
        };
        match flag.as_str() {
            "--dir" => args.dir = PathBuf::from(&value),
            "--items" => args.items = num()?,
            "--ops" => args.ops = num()?,
            "--threads" => args.threads = num()? as usize,
            "--seed-batch" => args.seed_batch = num()? as usize,
            "--oplog" => args.oplog = Some(PathBuf::from(&value)),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.dir.as_os_str().is_empty() || !args.dir.is_dir() {
        return Err("--dir: give an existing directory on the disk to benchmark".into());
    }
    if args.items == 0 || args.ops == 0 || args.threads == 0 || args.seed_batch == 0 {
        return Err("--items, --ops, --threads and --seed-batch must be positive".into());
    }
    if args.oplog.is_some() && args.mode != "read" {
        return Err("--oplog goes with read".into());
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rocksdb_overhead: {e}");
            std::process::exit(2);
        }
    };
    let store = args.dir.join(format!("bare-rocksdb-{}", std::process::id()));
    let result = run(&args, &store);
    let _ = std::fs::remove_dir_all(&store);
    if let Err(e) = result {
        eprintln!("rocksdb_overhead: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args, store: &PathBuf) -> Result<(), String> {
    // The very options kvmark's rocksdb engine opens with when given no options.
    let opts = build_options(&EngineOptions::new(), None).map_err(|e| e.message)?;
    let db = Arc::new(DB::open(&opts, store).map_err(|e| e.into_string())?);
    let mut noise_rng = Rng(0x5EED);
    let noise: Arc<Vec<u8>> = Arc::new((0..NOISE_BYTES).map(|_| noise_rng.next() as u8).collect());

    let log = match &args.oplog {
        Some(path) => Some(Arc::new(OpLog::read(path)?)),
        None => None,
    };
    match (&log, args.mode.as_str()) {
        (Some(log), _) => seed_from_log(&db, log, args)?,
        (None, "read") => seed(&db, &noise, args)?,
        _ => {}
    }
    if args.settle {
        db.wait_for_compact(&WaitForCompactOptions::default())
            .map_err(|e| e.into_string())?;
    }
    let total_ops = log.as_ref().map_or(args.ops, |l| l.gets.len() as u64);
    let barrier = Arc::new(Barrier::new(args.threads + 1));
    let per_thread = |t: usize| args.ops / args.threads as u64 + u64::from((t as u64) < args.ops % args.threads as u64);
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let (db, noise, barrier) = (Arc::clone(&db), Arc::clone(&noise), Arc::clone(&barrier));
            let (ops, items, fill) = (per_thread(t), args.items, args.mode == "fill");
            let (log, threads) = (log.clone(), args.threads);
            std::thread::spawn(move || -> Result<(), String> {
                if let Some(log) = log {
                    let read = ReadOptions::default();
                    let mut value = Vec::new();
                    barrier.wait();
                    for i in (t..log.gets.len()).step_by(threads) {
                        read_into(&db, log.gets.key(i), &read, &mut value)?;
                    }
                    return Ok(());
                }
                let mut rng = Rng(1 + t as u64);
                let mut buf = [0u8; 16];
                let mut value = Vec::new();
                let write = WriteOptions::default();
                let read = ReadOptions::default();
                barrier.wait();
                for _ in 0..ops {
                    let k = key(&mut buf, rng.below(items));
                    if fill {
                        let off = rng.below(65536) as usize;
                        db.put_opt(k, &noise[off..off + VALUE_BYTES], &write)
                            .map_err(|e| e.into_string())?;
                    } else {
                        read_into(&db, k, &read, &mut value)?;
                    }
                }
                Ok(())
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for h in handles {
        h.join().map_err(|_| "a worker thread panicked".to_string())??;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} threads={} ops={} secs={secs:.3} ops/s={:.0}",
        args.mode,
        args.threads,
        total_ops,
        total_ops as f64 / secs
    );
    Ok(())
}

/// One get: the value lands in the caller's buffer, as kvmark's get delivers it to the
/// workload; the buffer is reused.
#[inline]
fn read_into(db: &DB, key: &[u8], read: &ReadOptions, value: &mut Vec<u8>) -> Result<(), String> {
    if let Some(v) = db.get_pinned_opt(key, read).map_err(|e| e.into_string())? {
        value.clear();
        value.extend_from_slice(&v);
    }
    black_box(&value);
    Ok(())
}

/// Seeds every key, each loader thread its own shard in batches of `--seed-batch`
/// (256: as readrandom.lua's load() does).
fn seed(db: &Arc<DB>, noise: &Arc<Vec<u8>>, args: &Args) -> Result<(), String> {
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let (db, noise) = (Arc::clone(db), Arc::clone(noise));
            let (items, step, per_batch) = (args.items, args.threads as u64, args.seed_batch);
            std::thread::spawn(move || -> Result<(), String> {
                let mut rng = Rng(100 + t as u64);
                let mut buf = [0u8; 16];
                let mut out = Batched::new(&db, per_batch);
                let mut i = t as u64;
                while i < items {
                    let off = rng.below(65536) as usize;
                    out.put(key(&mut buf, i), &noise[off..off + VALUE_BYTES])?;
                    i += step;
                }
                out.finish()
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "a loader thread panicked".to_string())??;
    }
    Ok(())
}

/// Byte strings stored back to back (one allocation, so the timed loop reads keys
/// from one contiguous buffer, as a generator would produce them).
#[derive(Default)]
struct Flat {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Flat {
    fn push(&mut self, b: &[u8]) {
        self.bytes.extend_from_slice(b);
        self.ends.push(self.bytes.len());
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// The inserts and point queries of a `kvmark gen` log, read before anything is timed.
struct OpLog {
    keys: Flat,
    values: Flat,
    gets: Flat,
}

impl OpLog {
    /// Reads `I key value`, `P key` and comment lines; anything else is refused, as
    /// are escaped bytes (a spec of the alphanumeric or numeric set writes none).
    fn read(path: &Path) -> Result<OpLog, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut log = OpLog {
            keys: Flat::default(),
            values: Flat::default(),
            gets: Flat::default(),
        };
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let bad = |why: &str| format!("{} line {}: {why}", path.display(), n + 1);
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            if line.contains(&b'\\') {
                return Err(bad("escaped bytes are not supported here"));
            }
            let mut fields = line.split(|&b| b == b' ');
            match (fields.next(), fields.next(), fields.next(), fields.next()) {
                (Some(b"I"), Some(k), Some(v), None) => {
                    log.keys.push(k);
                    log.values.push(v);
                }
                (Some(b"P"), Some(k), None, None) => log.gets.push(k),
                _ => {
                    return Err(bad(
                        "only inserts (I key value) and point queries (P key) are supported",
                    ));
                }
            }
        }
        if log.gets.len() == 0 {
            return Err(format!("{}: no point queries (P lines)", path.display()));
        }
        Ok(log)
    }
}

/// Writes the log's inserts, thread t of T taking the t-th of T contiguous shares (as
/// a spec's thread inserts its own slice of the ids, in order), in batches of
/// `--seed-batch`.
fn seed_from_log(db: &Arc<DB>, log: &Arc<OpLog>, args: &Args) -> Result<(), String> {
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let (db, log) = (Arc::clone(db), Arc::clone(log));
            let (threads, per_batch) = (args.threads, args.seed_batch);
            std::thread::spawn(move || -> Result<(), String> {
                let mut out = Batched::new(&db, per_batch);
                let n = log.keys.len();
                for i in n * t / threads..n * (t + 1) / threads {
                    out.put(log.keys.key(i), log.values.key(i))?;
                }
                out.finish()
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "a loader thread panicked".to_string())??;
    }
    Ok(())
}

/// Puts written in write batches of `per` keys.
struct Batched<'a> {
    db: &'a DB,
    batch: WriteBatch,
    per: usize,
    write: WriteOptions,
}

impl<'a> Batched<'a> {
    fn new(db: &'a DB, per: usize) -> Self {
        Batched {
            db,
            batch: WriteBatch::default(),
            per,
            write: WriteOptions::default(),
        }
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), String> {
        self.batch.put(key, value);
        if self.batch.len() == self.per {
            self.db
                .write_opt(std::mem::take(&mut self.batch), &self.write)
                .map_err(|e| e.into_string())?;
        }
        Ok(())
    }

    fn finish(self) -> Result<(), String> {
        if !self.batch.is_empty() {
            self.db
                .write_opt(self.batch, &self.write)
                .map_err(|e| e.into_string())?;
        }
        Ok(())
    }
}
