//! RocksDB's internals for the timeline: its integer properties, files and compression
//! per level, write-stall counts and the cumulative stall time.

use rocksdb::DB;

/// Every integer property RocksDB reports for the default column family.
const INT_PROPERTIES: &[&str] = &[
    "num-immutable-mem-table",
    "num-immutable-mem-table-flushed",
    "mem-table-flush-pending",
    "num-running-flushes",
    "compaction-pending",
    "num-running-compactions",
    "background-errors",
    "cur-size-active-mem-table",
    "cur-size-all-mem-tables",
    "size-all-mem-tables",
    "num-entries-active-mem-table",
    "num-entries-imm-mem-tables",
    "num-deletes-active-mem-table",
    "num-deletes-imm-mem-tables",
    "estimate-num-keys",
    "estimate-table-readers-mem",
    "is-file-deletions-enabled",
    "num-snapshots",
    "oldest-snapshot-time",
    "num-live-versions",
    "current-super-version-number",
    "estimate-live-data-size",
    "min-log-number-to-keep",
    "min-obsolete-sst-number-to-keep",
    "total-sst-files-size",
    "live-sst-files-size",
    "obsolete-sst-files-size",
    "base-level",
    "estimate-pending-compaction-bytes",
    "actual-delayed-write-rate",
    "is-write-stopped",
    "estimate-oldest-key-time",
    "block-cache-capacity",
    "block-cache-usage",
    "block-cache-pinned-usage",
    "num-blob-files",
    "total-blob-file-size",
    "live-blob-file-size",
    "live-blob-file-garbage-size",
];

/// Properties, files and compression ratio per level, write-stall counts by cause and
/// the cumulative stall time. Read on the sampler's thread, never on the hot path.
pub(super) fn stats(db: &DB) -> Vec<(String, f64)> {
    let mut out = Vec::with_capacity(INT_PROPERTIES.len() + 64);
    for name in INT_PROPERTIES {
        if let Ok(Some(v)) = db.property_int_value(&format!("rocksdb.{name}")) {
            out.push((name.to_string(), v as f64));
        }
    }
    // A level past the configured count is not a property: that ends the walk.
    for level in 0..64 {
        let Ok(Some(files)) = db.property_int_value(&format!("rocksdb.num-files-at-level{level}")) else {
            break;
        };
        out.push((format!("num-files-at-level{level}"), files as f64));
        if let Ok(Some(ratio)) = db.property_value(&format!("rocksdb.compression-ratio-at-level{level}"))
            && let Ok(r) = ratio.trim().parse::<f64>()
        {
            out.push((format!("compression-ratio-at-level{level}"), r));
        }
    }
    for (scope, prop) in [
        ("cf", "rocksdb.cf-write-stall-stats"),
        ("db", "rocksdb.db-write-stall-stats"),
    ] {
        if let Ok(Some(text)) = db.property_value(prop) {
            for (name, v) in parse_stall_counts(&text) {
                out.push((format!("{scope}-write-stall.{name}"), v));
            }
        }
    }
    if let Ok(Some(text)) = db.property_value("rocksdb.dbstats")
        && let Some(secs) = parse_cumulative_stall(&text)
    {
        out.push(("write-stall-micros".to_string(), secs * 1e6));
    }
    out
}

/// Parses "Write Stall (count): name: 1, other: 0\n..." into (name, count) pairs.
fn parse_stall_counts(text: &str) -> Vec<(String, f64)> {
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("Write Stall (count): ")) else {
        return Vec::new();
    };
    line.split(", ")
        .filter_map(|pair| {
            let (name, v) = pair.rsplit_once(": ")?;
            Some((name.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// Parses "Cumulative stall: HH:MM:SS.sss H:M:S, ..." from the DB stats into seconds.
fn parse_cumulative_stall(text: &str) -> Option<f64> {
    let rest = text.lines().find_map(|l| l.strip_prefix("Cumulative stall: "))?;
    let hms = rest.split_whitespace().next()?;
    let mut parts = hms.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_text_parses() {
        let counts = parse_stall_counts("Write Stall (count): cf-l0-file-count-limit-delays: 3, total-stops: 1\n");
        assert_eq!(
            counts,
            vec![
                ("cf-l0-file-count-limit-delays".to_string(), 3.0),
                ("total-stops".to_string(), 1.0)
            ]
        );
        let secs = parse_cumulative_stall("x\nCumulative stall: 01:02:03.500 H:M:S, 0.0 percent\n").unwrap();
        assert!((secs - 3723.5).abs() < 1e-9);
    }
}
