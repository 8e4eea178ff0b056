//! The bytes a store occupies on disk, measured by walking its directory, as often
//! as the walk stays cheap.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A walk stops after this many entries; the result is then a lower bound.
const MAX_ENTRIES: u64 = 1_000_000;

/// Walks spend at most 1 / WALK_SHARE of the sampler's time: after a walk that took
/// `d`, the next one waits at least `(WALK_SHARE - 1) * d`.
const WALK_SHARE: u32 = 20;

/// Allocated bytes and file count of a store directory, refreshed by a bounded walk
/// whenever the last walk cost less than 5% of the time since it; in between, the
/// last figures are repeated. A typical LSM directory (hundreds of files) is walked
/// in well under a millisecond, so in practice every sample is fresh.
#[derive(Debug)]
pub struct DiskMeter {
    dir: PathBuf,
    last: Option<(u64, u64)>,
    next_walk: Instant,
}

impl DiskMeter {
    /// A meter for `dir`.
    pub fn new(dir: &Path) -> Self {
        DiskMeter {
            dir: dir.to_path_buf(),
            last: None,
            next_walk: Instant::now(),
        }
    }

    /// Appends `store.disk_bytes` and `store.disk_files`.
    pub fn sample(&mut self, out: &mut Vec<(String, f64)>) {
        let now = Instant::now();
        if self.last.is_none() || now >= self.next_walk {
            let (bytes, files) = walk(&self.dir);
            let cost = now.elapsed();
            self.next_walk = Instant::now() + cost.saturating_mul(WALK_SHARE - 1).min(Duration::from_secs(60));
            self.last = Some((bytes, files));
        }
        if let Some((bytes, files)) = self.last {
            out.push(("store.disk_bytes".to_string(), bytes as f64));
            out.push(("store.disk_files".to_string(), files as f64));
        }
    }
}

/// (allocated bytes, regular files) under `dir`, not following symlinks. Entries that
/// vanish mid-walk (an LSM deleting compacted files) are skipped.
pub fn walk(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let (mut bytes, mut files, mut entries) = (0u64, 0u64, 0u64);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for entry in rd.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                return (bytes, files);
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            // st_blocks counts 512-byte units actually allocated (sparse and
            // preallocated files are measured as they sit on disk).
            bytes += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                files += 1;
            }
        }
    }
    (bytes, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_nested_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::write(dir.path().join("sub/b"), vec![2u8; 5_000]).unwrap();
        let (bytes, files) = walk(dir.path());
        assert_eq!(files, 2);
        assert!(bytes >= 15_000, "{bytes}");
        let mut m = DiskMeter::new(dir.path());
        let mut out = Vec::new();
        m.sample(&mut out);
        assert_eq!(out[0].0, "store.disk_bytes");
        assert_eq!(out[1], ("store.disk_files".to_string(), 2.0));
    }
}
