//! The logical data of a store, read generically through the engine contract: an index
//! of every key with its value's length (what the extend phase chooses from and tracks
//! sizes in), and dumps (a scan into a file, YCSB-IVS's backup) that a fresh store of
//! any engine loads back in batches.

use std::fs::File;
use std::hash::Hasher;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;

use crate::engine::Session;
use crate::workload::op::SCAN_END;

/// Records per mput when loading a dump or building a store: large enough that the
/// per-batch cost vanishes, small enough to stay well under the engines' batch limits.
pub const LOAD_BATCH_RECORDS: usize = 256;

/// Bytes per mput at most (values can be megabytes long).
pub const LOAD_BATCH_BYTES: usize = 4 << 20;

/// Every key of a store in key order, with its value's length.
#[derive(Debug, Default, Clone)]
pub struct KeyIndex {
    /// The keys, back to back.
    bytes: Vec<u8>,
    /// Where each key ends in `bytes`.
    ends: Vec<usize>,
    /// Each key's value length.
    pub sizes: Vec<u32>,
}

impl KeyIndex {
    /// Number of keys.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when the store was empty.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Key `i`.
    #[inline]
    pub fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Bytes of all keys.
    pub fn key_bytes(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Bytes of all keys and values: the store's logical volume.
    pub fn volume(&self) -> u64 {
        self.key_bytes() + self.sizes.iter().map(|&s| u64::from(s)).sum::<u64>()
    }

    /// Adds a key (in key order) whose value is `value_len` bytes long.
    pub fn push(&mut self, key: &[u8], value_len: usize) {
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
        self.sizes.push(u32::try_from(value_len).unwrap_or(u32::MAX));
    }
}

/// A hash of a store's logical contents (every key and value, in key order), to check
/// that two stores hold the same data.
#[derive(Debug)]
pub struct ContentHash {
    hasher: std::collections::hash_map::DefaultHasher,
}

impl Default for ContentHash {
    fn default() -> Self {
        // Fixed keys: the same contents hash the same within and across runs of a build.
        ContentHash {
            hasher: std::collections::hash_map::DefaultHasher::new(),
        }
    }
}

impl ContentHash {
    fn add(&mut self, key: &[u8], val: &[u8]) {
        self.hasher.write_usize(key.len());
        self.hasher.write(key);
        self.hasher.write_usize(val.len());
        self.hasher.write(val);
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.hasher.finish()
    }
}

/// What one pass over a store produced.
#[derive(Debug, Default)]
pub struct Scanned {
    /// The keys and value lengths (when asked for).
    pub index: Option<KeyIndex>,
    /// The contents' hash (when asked for).
    pub hash: Option<u64>,
    /// Records seen.
    pub records: u64,
    /// Key and value bytes seen.
    pub bytes: u64,
}

/// A dump file being written: records `[key len u32][value len u32][key][value]`,
/// little-endian, in key order.
pub struct DumpWriter {
    out: BufWriter<File>,
    /// Byte offsets where chunks of records start, for loading on several threads.
    starts: Vec<u64>,
    written: u64,
    records: u64,
}

/// Records between two recorded chunk starts.
const CHUNK_RECORDS: u64 = 1024;

impl DumpWriter {
    fn add(&mut self, key: &[u8], val: &[u8]) -> std::io::Result<()> {
        if self.records.is_multiple_of(CHUNK_RECORDS) {
            self.starts.push(self.written);
        }
        let klen = u32::try_from(key.len()).map_err(|_| std::io::Error::other("a key over 4 GiB"))?;
        let vlen = u32::try_from(val.len()).map_err(|_| std::io::Error::other("a value over 4 GiB"))?;
        self.out.write_all(&klen.to_le_bytes())?;
        self.out.write_all(&vlen.to_le_bytes())?;
        self.out.write_all(key)?;
        self.out.write_all(val)?;
        self.written += 8 + key.len() as u64 + val.len() as u64;
        self.records += 1;
        Ok(())
    }
}

/// A finished dump on disk, mapped into memory for loading, removed when dropped.
#[derive(Debug)]
pub struct Dump {
    /// The file.
    pub path: PathBuf,
    /// Offsets of record chunks.
    starts: Vec<u64>,
    /// File length.
    pub file_bytes: u64,
    /// Records in it.
    pub records: u64,
    /// The file's bytes (None for an empty file, which cannot be mapped).
    map: Option<Mmap>,
}

impl Drop for Dump {
    fn drop(&mut self) {
        self.map = None;
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Dump {
    /// The byte range `[start, end)` of the file that thread `t` of `threads` loads:
    /// whole chunks of records, split as evenly as the chunks allow.
    pub fn share(&self, t: usize, threads: usize) -> (u64, u64) {
        let n = self.starts.len();
        let at = |i: usize| {
            if i >= n { self.file_bytes } else { self.starts[i] }
        };
        (at(n * t / threads), at(n * (t + 1) / threads))
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

static NEXT_DUMP: AtomicU64 = AtomicU64::new(0);

/// Where dumps go: the data directory (the disk being benchmarked), else the system's
/// temporary directory.
pub fn dump_path(data_dir: Option<&Path>) -> PathBuf {
    let n = NEXT_DUMP.fetch_add(1, Ordering::Relaxed);
    let name = format!("kvmark-dump-{}-{n}.bin", std::process::id());
    match data_dir {
        Some(d) => d.join(name),
        None => std::env::temp_dir().join(name),
    }
}

/// What a scan should produce.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScanWants {
    /// Build a [`KeyIndex`].
    pub index: bool,
    /// Hash the contents.
    pub hash: bool,
}

/// Reads the whole store once, in key order, through `session`: builds the index,
/// hashes the contents, and writes a dump to `dump` when given. Keys that begin with
/// 256 bytes of 0xff sort after the scan's end and are not seen (no workload makes them).
pub fn scan_store(
    session: &mut dyn Session,
    wants: ScanWants,
    dump: Option<&Path>,
) -> Result<(Scanned, Option<Dump>), String> {
    let mut index = wants.index.then(KeyIndex::default);
    let mut hash = wants.hash.then(ContentHash::default);
    let mut writer = match dump {
        Some(path) => Some(DumpWriter {
            out: BufWriter::with_capacity(
                1 << 20,
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(path)
                    .map_err(|e| format!("cannot create the dump {}: {e}", path.display()))?,
            ),
            starts: Vec::new(),
            written: 0,
            records: 0,
        }),
        None => None,
    };
    let mut records = 0u64;
    let mut bytes = 0u64;
    let mut io_error: Option<std::io::Error> = None;
    let scanned = session.scan(b"", &SCAN_END, 0, &mut |k, v| {
        records += 1;
        bytes += (k.len() + v.len()) as u64;
        if let Some(ix) = index.as_mut() {
            ix.push(k, v.len());
        }
        if let Some(h) = hash.as_mut() {
            h.add(k, v);
        }
        if let Some(w) = writer.as_mut()
            && let Err(e) = w.add(k, v)
        {
            io_error = Some(e);
            return true;
        }
        false
    });
    let cleanup = |w: Option<DumpWriter>| {
        if let (Some(_), Some(path)) = (w, dump) {
            let _ = std::fs::remove_file(path);
        }
    };
    if let Err(e) = scanned {
        cleanup(writer);
        return Err(format!("reading the store failed: {e}"));
    }
    if let Some(e) = io_error {
        cleanup(writer);
        return Err(format!("writing the dump failed: {e}"));
    }
    let dump = match (writer, dump) {
        (Some(w), Some(path)) => {
            let failed = |e: std::io::Error| {
                let _ = std::fs::remove_file(path);
                format!("writing the dump {} failed: {e}", path.display())
            };
            let file = w.out.into_inner().map_err(|e| failed(e.into_error()))?;
            let map = if w.written == 0 {
                None
            } else {
                // SAFETY: kvmark wrote this file a moment ago and removes it when the
                // dump is dropped; nothing writes to it while it is mapped.
                Some(unsafe { Mmap::map(&file) }.map_err(failed)?)
            };
            Some(Dump {
                path: path.to_path_buf(),
                starts: w.starts,
                file_bytes: w.written,
                records: w.records,
                map,
            })
        }
        _ => None,
    };
    Ok((
        Scanned {
            index,
            hash: hash.map(|h| h.finish()),
            records,
            bytes,
        },
        dump,
    ))
}

/// A (key, value) record borrowed from a dump.
pub type Record<'d> = (&'d [u8], &'d [u8]);

/// Reads records of a dump from `start` up to `end`, in batches borrowed from the
/// mapped file (nothing is copied on the harness's side).
pub struct DumpReader<'d> {
    bytes: &'d [u8],
    pos: usize,
    end: usize,
    path: &'d Path,
}

impl<'d> DumpReader<'d> {
    /// Reads `dump` from `start` up to `end`.
    pub fn open(dump: &'d Dump, start: u64, end: u64) -> Result<DumpReader<'d>, String> {
        let bytes = dump.bytes();
        let (start, end) = (start as usize, end as usize);
        if start > end || end > bytes.len() {
            return Err(format!("the dump {} is shorter than its index", dump.path.display()));
        }
        Ok(DumpReader {
            bytes,
            pos: start,
            end,
            path: &dump.path,
        })
    }

    /// The next batch of (key, value) records, empty at the end of the share.
    pub fn next_batch(&mut self) -> Result<Vec<Record<'d>>, String> {
        let mut batch = Vec::new();
        let mut size = 0usize;
        let bad = |path: &Path| format!("the dump {} is damaged", path.display());
        while self.pos < self.end && batch.len() < LOAD_BATCH_RECORDS && size < LOAD_BATCH_BYTES {
            let head = self.bytes.get(self.pos..self.pos + 8).ok_or_else(|| bad(self.path))?;
            let klen = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
            let vlen = u32::from_le_bytes(head[4..].try_into().expect("4 bytes")) as usize;
            let k = self.pos + 8;
            let v = k + klen;
            let next = v + vlen;
            if next > self.end {
                return Err(bad(self.path));
            }
            batch.push((&self.bytes[k..v], &self.bytes[v..next]));
            size += klen + vlen;
            self.pos = next;
        }
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, OpenRequest, skiplist};

    fn store_with(n: usize) -> Box<dyn crate::engine::Store> {
        let opts = EngineOptions::new();
        let store = (skiplist::INFO.open)(&OpenRequest::new(None, &opts)).unwrap();
        let mut s = store.session().unwrap();
        for i in 0..n {
            let key = format!("k{i:05}");
            s.put(key.as_bytes(), &vec![b'v'; i % 50]).unwrap();
        }
        store
    }

    #[test]
    fn index_and_hash_see_every_record_in_order() {
        let store = store_with(3000);
        let mut s = store.session().unwrap();
        let wants = ScanWants {
            index: true,
            hash: true,
        };
        let (got, dump) = scan_store(&mut *s, wants, None).unwrap();
        assert!(dump.is_none());
        let ix = got.index.unwrap();
        assert_eq!((ix.len(), got.records), (3000, 3000));
        assert_eq!(ix.key(0), b"k00000");
        assert_eq!(ix.key(2999), b"k02999");
        assert_eq!(ix.sizes[49], 49);
        assert_eq!(ix.volume(), got.bytes);
        // Same contents, same hash; one byte more, another.
        let (again, _) = scan_store(&mut *s, wants, None).unwrap();
        assert_eq!(again.hash, got.hash);
        s.append(b"k00007", b"!").unwrap();
        let (changed, _) = scan_store(&mut *s, wants, None).unwrap();
        assert_ne!(changed.hash, got.hash);
    }

    #[test]
    fn a_dump_loads_back_whole_in_shares() {
        let store = store_with(5000);
        let mut s = store.session().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.bin");
        let wants = ScanWants {
            index: false,
            hash: true,
        };
        let (got, dump) = scan_store(&mut *s, wants, Some(&path)).unwrap();
        let dump = dump.unwrap();
        assert_eq!((dump.records, got.records), (5000, 5000));
        assert_eq!(dump.file_bytes, got.bytes + 8 * 5000);
        let mut hash = ContentHash::default();
        let mut seen = 0;
        for t in 0..3 {
            let (a, b) = dump.share(t, 3);
            let mut r = DumpReader::open(&dump, a, b).unwrap();
            loop {
                let batch = r.next_batch().unwrap();
                if batch.is_empty() {
                    break;
                }
                assert!(batch.len() <= LOAD_BATCH_RECORDS);
                for (k, v) in batch {
                    hash.add(k, v);
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, 5000);
        assert_eq!(
            Some(hash.finish()),
            got.hash,
            "shares in order rebuild the same contents"
        );
        drop(dump);
        assert!(!path.exists(), "the dump is removed when dropped");
    }
}
