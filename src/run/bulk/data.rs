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

use crate::engine::{Session, Store};
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

    /// Appends the keys of `other`, which all sort after these.
    pub fn extend(&mut self, other: KeyIndex) {
        let base = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.ends.extend(other.ends.iter().map(|e| e + base));
        self.sizes.extend(other.sizes);
    }

    /// Keys that split the index into `parts` ranges of about as many keys each (fewer
    /// when there are fewer keys than parts), for reading a store on several threads.
    pub fn split_points(&self, parts: usize) -> Vec<Vec<u8>> {
        let n = self.len();
        let mut out: Vec<Vec<u8>> = (1..parts.max(1))
            .map(|t| n * t / parts)
            .filter(|&i| i > 0 && i < n)
            .map(|i| self.key(i).to_vec())
            .collect();
        out.dedup();
        out
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
struct DumpWriter {
    out: BufWriter<File>,
    written: u64,
    records: u64,
}

impl DumpWriter {
    fn add(&mut self, key: &[u8], val: &[u8]) -> std::io::Result<()> {
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

/// One file of a dump (one key range), mapped into memory for loading, removed when
/// dropped.
#[derive(Debug)]
pub struct DumpFile {
    /// The file.
    pub path: PathBuf,
    /// File length.
    pub file_bytes: u64,
    /// Records in it.
    pub records: u64,
    /// The file's bytes (None for an empty file, which cannot be mapped).
    map: Option<Mmap>,
}

impl Drop for DumpFile {
    fn drop(&mut self) {
        self.map = None;
        remove_dump_file(&self.path);
    }
}

/// Removes a dump file; one that cannot be removed is said (it would be left behind
/// under the data directory), one already gone is not.
fn remove_dump_file(path: &Path) {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            eprintln!("kvmark: warning: cannot remove the dump file {}: {e}", path.display());
        }
        _ => {}
    }
}

/// A dump of a whole store: one file per key range, in key order.
#[derive(Debug, Default)]
pub struct Dump {
    /// The files.
    pub files: Vec<DumpFile>,
}

impl Dump {
    /// Records in every file.
    pub fn records(&self) -> u64 {
        self.files.iter().map(|f| f.records).sum()
    }

    /// Bytes of every file.
    pub fn file_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.file_bytes).sum()
    }

    /// The files thread `t` of `threads` loads (one each when the dump was written by
    /// as many threads).
    pub fn files_for(&self, t: usize, threads: usize) -> impl Iterator<Item = &DumpFile> {
        self.files.iter().skip(t).step_by(threads.max(1))
    }
}

static NEXT_DUMP: AtomicU64 = AtomicU64::new(0);

/// Where a dump goes: the data directory (the disk being benchmarked), else the
/// system's temporary directory. Its files add `-<range>` to this path.
pub fn dump_path(data_dir: Option<&Path>) -> PathBuf {
    let n = NEXT_DUMP.fetch_add(1, Ordering::Relaxed);
    let name = format!("kvmark-dump-{}-{n}", std::process::id());
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

/// Reads `[lo, hi)` once, in key order, through `session`: builds the index, hashes
/// the contents, and writes a dump file to `dump` when given.
fn scan_range(
    session: &mut dyn Session,
    (lo, hi): (&[u8], &[u8]),
    wants: ScanWants,
    dump: Option<&Path>,
) -> Result<(Scanned, Option<DumpFile>), String> {
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
            written: 0,
            records: 0,
        }),
        None => None,
    };
    let mut records = 0u64;
    let mut bytes = 0u64;
    let mut io_error: Option<std::io::Error> = None;
    let scanned = session.scan(lo, hi, 0, &mut |k, v| {
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
    let failed = |why: String| {
        if let Some(path) = dump {
            remove_dump_file(path);
        }
        why
    };
    if let Err(e) = scanned {
        return Err(failed(format!("reading the store failed: {e}")));
    }
    if let Some(e) = io_error {
        return Err(failed(format!("writing the dump failed: {e}")));
    }
    let file = match (writer, dump) {
        (Some(w), Some(path)) => {
            let io = |e: std::io::Error| failed(format!("writing the dump {} failed: {e}", path.display()));
            let file = w.out.into_inner().map_err(|e| io(e.into_error()))?;
            let map = if w.written == 0 {
                None
            } else {
                // SAFETY: kvmark wrote this file a moment ago and removes it when the
                // dump is dropped; nothing writes to it while it is mapped.
                Some(unsafe { Mmap::map(&file) }.map_err(io)?)
            };
            Some(DumpFile {
                path: path.to_path_buf(),
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
        file,
    ))
}

/// Reads the whole store once, in key order, split at `splits` (ascending keys) into
/// ranges read by one thread each: builds the index, hashes the contents (a hash of
/// the ranges' hashes, so compare stores read with the same splits), and writes a dump
/// with one file per range when `dump` names a path. Keys that begin with 256 bytes
/// of 0xff sort after the scan's end and are not seen (no workload makes them).
pub fn scan_store(
    store: &dyn Store,
    splits: &[Vec<u8>],
    wants: ScanWants,
    dump: Option<&Path>,
) -> Result<(Scanned, Option<Dump>), String> {
    let mut bounds: Vec<&[u8]> = vec![b""];
    bounds.extend(splits.iter().map(Vec::as_slice));
    bounds.push(&SCAN_END);
    let ranges: Vec<(&[u8], &[u8])> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let path_of = |i: usize| dump.map(|p| PathBuf::from(format!("{}-{i}.bin", p.display())));
    let one = |i: usize, range: (&[u8], &[u8])| -> Result<(Scanned, Option<DumpFile>), String> {
        let mut session = store
            .session()
            .map_err(|e| format!("cannot open a session on the store: {e}"))?;
        scan_range(&mut *session, range, wants, path_of(i).as_deref())
    };
    let parts: Vec<Result<(Scanned, Option<DumpFile>), String>> = if ranges.len() == 1 {
        vec![one(0, ranges[0])]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .iter()
                .enumerate()
                .map(|(i, &r)| scope.spawn(move || one(i, r)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a dump thread panicked".to_string())))
                .collect()
        })
    };
    let mut out = Scanned {
        index: wants.index.then(KeyIndex::default),
        ..Scanned::default()
    };
    let mut hash = ContentHash::default();
    let mut files = Vec::new();
    for part in parts {
        // An error drops the files already written, which removes them.
        let (scanned, file) = part?;
        out.records += scanned.records;
        out.bytes += scanned.bytes;
        if let (Some(all), Some(ix)) = (out.index.as_mut(), scanned.index) {
            all.extend(ix);
        }
        if let Some(h) = scanned.hash {
            hash.hasher.write_u64(h);
        }
        files.extend(file);
    }
    out.hash = wants.hash.then(|| hash.finish());
    Ok((out, dump.map(|_| Dump { files })))
}

/// A (key, value) record borrowed from a dump.
pub type Record<'d> = (&'d [u8], &'d [u8]);

/// Reads the records of a dump file in batches borrowed from the mapped file (nothing
/// is copied on the harness's side).
pub struct DumpReader<'d> {
    bytes: &'d [u8],
    pos: usize,
    end: usize,
    path: &'d Path,
}

impl<'d> DumpReader<'d> {
    /// Reads `file` from its start.
    pub fn open(file: &'d DumpFile) -> DumpReader<'d> {
        let bytes = file.map.as_deref().unwrap_or(&[]);
        DumpReader {
            bytes,
            pos: 0,
            end: bytes.len(),
            path: &file.path,
        }
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
        let store = (skiplist::INFO.open)(&OpenRequest::memory(&opts)).unwrap();
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
        let wants = ScanWants {
            index: true,
            hash: true,
        };
        let (got, dump) = scan_store(store.as_ref(), &[], wants, None).unwrap();
        assert!(dump.is_none());
        let ix = got.index.unwrap();
        assert_eq!((ix.len(), got.records), (3000, 3000));
        assert_eq!(ix.key(0), b"k00000");
        assert_eq!(ix.key(2999), b"k02999");
        assert_eq!(ix.sizes[49], 49);
        assert_eq!(ix.volume(), got.bytes);
        // Read in three ranges, the index is the same.
        let splits = ix.split_points(3);
        assert_eq!(splits, vec![b"k01000".to_vec(), b"k02000".to_vec()]);
        let (parts, _) = scan_store(store.as_ref(), &splits, wants, None).unwrap();
        let pix = parts.index.unwrap();
        assert_eq!(
            (pix.len(), pix.key(1000), pix.volume()),
            (3000, &b"k01000"[..], ix.volume())
        );
        // Same contents and splits, same hash; one byte more, another.
        let (again, _) = scan_store(store.as_ref(), &splits, wants, None).unwrap();
        assert_eq!(again.hash, parts.hash);
        store.session().unwrap().append(b"k00007", b"!").unwrap();
        let (changed, _) = scan_store(store.as_ref(), &splits, wants, None).unwrap();
        assert_ne!(changed.hash, parts.hash);
        assert!(KeyIndex::default().split_points(4).is_empty());
    }

    #[test]
    fn a_dump_in_ranges_loads_back_into_the_same_contents() {
        let store = store_with(5000);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d");
        let wants = ScanWants {
            index: true,
            hash: true,
        };
        let (ix, _) = scan_store(store.as_ref(), &[], wants, None).unwrap();
        let splits = ix.index.unwrap().split_points(3);
        let (got, dump) = scan_store(store.as_ref(), &splits, wants, Some(&path)).unwrap();
        let dump = dump.unwrap();
        assert_eq!(dump.files.len(), 3);
        assert_eq!((dump.records(), got.records), (5000, 5000));
        assert_eq!(dump.file_bytes(), got.bytes + 8 * 5000);
        // Load it into a fresh store, a thread's files each, in batches.
        let copy = store_with(0);
        let mut s = copy.session().unwrap();
        for t in 0..3 {
            let files: Vec<&DumpFile> = dump.files_for(t, 3).collect();
            assert_eq!(files.len(), 1, "one file per thread");
            let mut r = DumpReader::open(files[0]);
            loop {
                let batch = r.next_batch().unwrap();
                if batch.is_empty() {
                    break;
                }
                assert!(batch.len() <= LOAD_BATCH_RECORDS);
                s.mput(&batch).unwrap();
            }
        }
        let (loaded, _) = scan_store(copy.as_ref(), &splits, wants, None).unwrap();
        assert_eq!(loaded.hash, got.hash, "the copy holds the same contents");
        let paths: Vec<PathBuf> = dump.files.iter().map(|f| f.path.clone()).collect();
        drop(dump);
        assert!(
            paths.iter().all(|p| !p.exists()),
            "the dump's files are removed when dropped"
        );
    }
}
