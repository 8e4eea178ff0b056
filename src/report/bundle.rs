//! The `--report-dir` bundle: a fresh, uniquely named directory holding every report
//! of one run and the config that replays it.

use std::io;
use std::path::{Path, PathBuf};

/// The human report, summary included.
pub const REPORT_TXT: &str = "report.txt";
/// The tsv sink's rows.
pub const POINTS_TSV: &str = "points.tsv";
/// The timeline sink's rows.
pub const TIMELINE_TSV: &str = "timeline.tsv";
/// The json sink's document.
pub const RESULTS_JSON: &str = "results.json";
/// The histogram logs, one per point.
pub const HDR_DIR: &str = "hdr";
/// The verify sink's rows (`--verify`).
pub const VERIFY_TSV: &str = "verify.tsv";
/// The ycsb sink's blocks, in YCSB's output layout.
pub const YCSB_TXT: &str = "ycsb.txt";
/// The config that reruns this run.
pub const REPLAY_CNF: &str = "replay.cnf";

/// Creates `parent/<YYYYmmdd-HHMMSS>` (local time), or with `-2`, `-3`, ... appended
/// when that exists: creation is atomic, so concurrent runs never share a directory.
pub fn create(parent: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(parent)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", parent.display())))?;
    let stamp = local_stamp();
    for n in 1..10_000u32 {
        let name = if n == 1 { stamp.clone() } else { format!("{stamp}-{n}") };
        let dir = parent.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create {}: {e}", dir.display()),
                ));
            }
        }
    }
    Err(io::Error::other(format!(
        "cannot find a free directory name under {}",
        parent.display()
    )))
}

/// The current local time as `YYYYmmdd-HHMMSS`.
fn local_stamp() -> String {
    // SAFETY: time(NULL) only reads the clock.
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    // SAFETY: tm is plain old data; localtime_r fills it and is thread-safe.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return format!("t{now}");
    }
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_collide() {
        let parent = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = (0..5).map(|_| create(parent.path()).unwrap()).collect();
        for (i, a) in dirs.iter().enumerate() {
            assert!(a.is_dir());
            for b in &dirs[i + 1..] {
                assert_ne!(a, b);
            }
        }
        let name = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(name.len(), 15, "{name}");
        assert_eq!(&name[8..9], "-");
    }
}
