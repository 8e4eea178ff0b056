//! LevelDB's internals for the timeline: files per level, memory use and the
//! compaction table of `leveldb.stats`, read through its property API.

use std::ffi::{CStr, CString};

use libc::c_void;

use super::LEVELS;
use super::ffi::{leveldb_free, leveldb_property_value, leveldb_t};

/// Every figure LevelDB's properties give for `db`. Read on the sampler's thread.
pub(super) fn stats(db: *mut leveldb_t) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for level in 0..LEVELS {
        if let Some(v) = property(db, &format!("leveldb.num-files-at-level{level}"))
            && let Ok(n) = v.trim().parse::<f64>()
        {
            out.push((format!("num-files-at-level{level}"), n));
        }
    }
    if let Some(v) = property(db, "leveldb.approximate-memory-usage")
        && let Ok(n) = v.trim().parse::<f64>()
    {
        out.push(("approximate-memory-usage".to_string(), n));
    }
    if let Some(text) = property(db, "leveldb.stats") {
        out.extend(parse_level_stats(&text));
    }
    out
}

/// Reads a string property, or None when LevelDB does not know it.
fn property(db: *mut leveldb_t, name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    // SAFETY: the result is a malloc'd NUL-terminated string or NULL; freed below.
    unsafe {
        let p = leveldb_property_value(db, name.as_ptr());
        if p.is_null() {
            return None;
        }
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        leveldb_free(p.cast::<c_void>());
        Some(s)
    }
}

/// Parses the compaction table of `leveldb.stats`: per level its files, size (MB),
/// compaction time (s), and compaction read and write (MB).
fn parse_level_stats(text: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [level, rest @ ..] = cols.as_slice() else {
            continue;
        };
        let (Ok(level), 5) = (level.parse::<usize>(), rest.len()) else {
            continue;
        };
        for (name, v) in ["files", "size_mb", "compaction_sec", "read_mb", "write_mb"]
            .iter()
            .zip(rest)
        {
            if let Ok(v) = v.parse::<f64>() {
                out.push((format!("level{level}.{name}"), v));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_table_parses() {
        let text = "                               Compactions\n\
                    Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
                    --------------------------------------------------\n  \
                    0        2        4         0        0         4\n  \
                    1        5       10         1        8         9\n";
        let stats = parse_level_stats(text);
        assert!(stats.contains(&("level0.files".to_string(), 2.0)));
        assert!(stats.contains(&("level1.write_mb".to_string(), 9.0)));
        assert_eq!(stats.len(), 10);
    }
}
