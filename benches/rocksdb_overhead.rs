//! The bare-loop side of the harness-overhead benchmark: fill-random and read-random
//! on RocksDB through the `rocksdb` crate directly, with the same options, keys and
//! values as `bench/workloads/{fillrandom,readrandom}.lua` driven by kvmark. A read
//! copies the value into a reused buffer, as kvmark's get hands it to the workload.
//! `bench/rocksdb-overhead.sh` runs both sides in alternation and reports the ratio.
//!
//! usage: rocksdb_overhead fill|read --dir DIR [--items N] [--ops N] [--threads T]
//!
//! Prints one line: `<mode> threads=<T> ops=<N> secs=<S> ops/s=<R>`. Only the timed
//! phase counts: all threads start together after the (untimed) seed, and the clock
//! stops when the last one finishes, as in kvmark.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use kvmark::engine::EngineOptions;
use kvmark::engine::rocksdb::build_options;
use rocksdb::{DB, ReadOptions, WriteBatch, WriteOptions};

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
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1).filter(|a| a != "--bench");
    let mode = it
        .next()
        .ok_or("usage: rocksdb_overhead fill|read --dir DIR [--items N] [--ops N] [--threads T]")?;
    if mode != "fill" && mode != "read" {
        return Err(format!("unknown mode '{mode}': give fill or read"));
    }
    let mut args = Args {
        mode,
        dir: PathBuf::new(),
        items: 200_000,
        ops: 200_000,
        threads: 1,
    };
    while let Some(flag) = it.next() {
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
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.dir.as_os_str().is_empty() || !args.dir.is_dir() {
        return Err("--dir: give an existing directory on the disk to benchmark".into());
    }
    if args.items == 0 || args.ops == 0 || args.threads == 0 {
        return Err("--items, --ops and --threads must be positive".into());
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

    if args.mode == "read" {
        seed(&db, &noise, args)?;
    }
    let barrier = Arc::new(Barrier::new(args.threads + 1));
    let per_thread = |t: usize| args.ops / args.threads as u64 + u64::from((t as u64) < args.ops % args.threads as u64);
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let (db, noise, barrier) = (Arc::clone(&db), Arc::clone(&noise), Arc::clone(&barrier));
            let (ops, items, fill) = (per_thread(t), args.items, args.mode == "fill");
            std::thread::spawn(move || -> Result<(), String> {
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
                        // The value lands in the caller's buffer, as kvmark's get
                        // delivers it to the workload; the buffer is reused.
                        if let Some(v) = db.get_pinned_opt(k, &read).map_err(|e| e.into_string())? {
                            value.clear();
                            value.extend_from_slice(&v);
                        }
                        black_box(&value);
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
        args.ops,
        args.ops as f64 / secs
    );
    Ok(())
}

/// Seeds every key, each loader thread its own shard in batches of 256, as
/// readrandom.lua's load() does.
fn seed(db: &Arc<DB>, noise: &Arc<Vec<u8>>, args: &Args) -> Result<(), String> {
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let (db, noise) = (Arc::clone(db), Arc::clone(noise));
            let (items, step) = (args.items, args.threads as u64);
            std::thread::spawn(move || -> Result<(), String> {
                let mut rng = Rng(100 + t as u64);
                let mut buf = [0u8; 16];
                let write = WriteOptions::default();
                let mut batch = WriteBatch::default();
                let mut i = t as u64;
                while i < items {
                    let off = rng.below(65536) as usize;
                    batch.put(key(&mut buf, i), &noise[off..off + VALUE_BYTES]);
                    if batch.len() == BATCH {
                        db.write_opt(std::mem::take(&mut batch), &write)
                            .map_err(|e| e.into_string())?;
                    }
                    i += step;
                }
                if !batch.is_empty() {
                    db.write_opt(batch, &write).map_err(|e| e.into_string())?;
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "a loader thread panicked".to_string())??;
    }
    Ok(())
}
