//! `sqlite`: SQLite (the `rusqlite` crate with its bundled SQLite), one table keyed by
//! a BLOB primary key.
//!
//! The schema, in the file `kv.sqlite` of the store directory:
//!
//! ```sql
//! CREATE TABLE kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID;
//! ```
//!
//! `WITHOUT ROWID` stores rows in the primary key's B-tree itself, so a key lookup is
//! one B-tree descent; BLOBs compare with `memcmp`, which is the contract's bytewise
//! order. The journal is in WAL mode (readers never block the writer). Each session
//! has its own connection with its statements prepared once and cached.
//!
//! Verb mapping: `put` an upsert; `get` a primary-key SELECT; `del` a DELETE, whose
//! change count tells whether the key existed; `range`/`scan` one SELECT bounded by
//! `k >= lo AND k < hi` with a LIMIT, stepped row by row; `mget`/`mput`/`mdel` one
//! transaction (`BEGIN IMMEDIATE` for writes, so the write lock is taken up front);
//! `append` one upsert that concatenates in SQL (a read-modify-write inside SQLite's
//! own statement transaction); `delete_range` one ranged DELETE. `SQLITE_BUSY` and
//! `SQLITE_LOCKED` are reported as busy (no busy timeout is set, so SQLite does not
//! sleep on its own; the harness retries with its short backoff and counts it).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use rusqlite::{Connection, ErrorCode, OpenFlags, params};

use crate::engine::Limits;
use crate::engine::options::format_size;
use crate::engine::{
    AppendMethod, Appended, EngineError, EngineInfo, EngineResult, Existed, KnobDef, KnobTable, OpenRequest, ReadBuf,
    ScanFn, Session, StorageKind, Store, Values,
};

/// Registry entry.
pub static INFO: EngineInfo = EngineInfo {
    name: ENGINE,
    storage: StorageKind::Disk,
    description: "SQLite (bundled) in WAL mode: a BLOB-keyed table WITHOUT ROWID, one connection per session",
    append: AppendMethod::ReadModifyWrite,
    del_reports_existence: true,
    atomic_batches: true,
    limits: LIMITS,
    version,
    knobs: &KNOBS,
    open,
};

/// SQLite's blobs are at most SQLITE_MAX_LENGTH bytes (1,000,000,000 by default).
const LIMITS: Limits = Limits {
    empty_keys: true,
    max_key_bytes: 1_000_000_000,
    max_value_bytes: 1_000_000_000,
};

const ENGINE: &str = "sqlite";
const FILE: &str = "kv.sqlite";
const JOURNAL_MODES: &[&str] = &["wal", "delete", "truncate", "persist", "memory", "off"];
const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];

/// The schema, documented in the module comment and docs/engines.md.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) WITHOUT ROWID";

const SQL_PUT: &str = "INSERT INTO kv (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v";
const SQL_GET: &str = "SELECT v FROM kv WHERE k = ?1";
const SQL_DEL: &str = "DELETE FROM kv WHERE k = ?1";
const SQL_RANGE: &str = "SELECT k, v FROM kv WHERE k >= ?1 AND k < ?2 ORDER BY k LIMIT ?3";
// `||` yields TEXT; the CAST keeps the stored value a BLOB. Both keep every byte. ?3 is
// the value cap: a row that would pass it is left alone, and the statement changes no
// row (the WHERE after SELECT also tells SQLite's parser the upsert clause is there).
const SQL_APPEND: &str = "INSERT INTO kv (k, v) SELECT ?1, ?2 WHERE length(?2) <= ?3 \
     ON CONFLICT (k) DO UPDATE SET v = CAST(v || excluded.v AS BLOB) WHERE length(v) + length(excluded.v) <= ?3";
const SQL_DELETE_RANGE: &str = "DELETE FROM kv WHERE k >= ?1 AND k < ?2";

/// Pragmas to apply, in a fixed order; `page_size` must precede the table's creation.
#[derive(Debug, Clone, Default)]
struct Settings {
    page_size: Option<i64>,
    journal_mode: String,
    synchronous: Option<String>,
    cache_size: Option<i64>,
    mmap_size: Option<u64>,
    wal_autocheckpoint: Option<i64>,
}

/// SQLite's own defaults, read once from a fresh in-memory connection: (synchronous,
/// cache_size, page_size, mmap_size, wal_autocheckpoint).
fn library_defaults() -> (i64, i64, i64, i64, i64) {
    static DEFAULTS: OnceLock<(i64, i64, i64, i64, i64)> = OnceLock::new();
    *DEFAULTS.get_or_init(|| {
        let read = || {
            let conn = Connection::open_in_memory().ok()?;
            let q = |p: &str| conn.pragma_query_value(None, p, |row| row.get::<_, i64>(0)).ok();
            Some((
                q("synchronous")?,
                q("cache_size")?,
                q("page_size")?,
                q("mmap_size")?,
                q("wal_autocheckpoint")?,
            ))
        };
        read().unwrap_or((2, -2000, 4096, 0, 1000))
    })
}

static KNOBS: KnobTable<Settings> = KnobTable::new(
    ENGINE,
    || Settings {
        journal_mode: "wal".to_string(),
        ..Settings::default()
    },
    &[
        KnobDef {
            name: "journal_mode",
            help: "wal (kvmark's default: readers never block the writer), delete, truncate, persist, memory, off",
            default: || "wal".to_string(),
            set: |s, v| v.choice(JOURNAL_MODES).map(|m| s.journal_mode = m.to_string()),
        },
        KnobDef {
            name: "synchronous",
            help: "off, normal, full or extra (fsync policy)",
            default: || {
                let sync = library_defaults().0;
                SYNCHRONOUS
                    .get(sync.clamp(0, 3) as usize)
                    .copied()
                    .unwrap_or("full")
                    .to_string()
            },
            set: |s, v| v.choice(SYNCHRONOUS).map(|m| s.synchronous = Some(m.to_string())),
        },
        KnobDef {
            name: "cache_size",
            help: "page cache per connection: pages if positive, KiB if negative",
            default: || library_defaults().1.to_string(),
            set: |s, v| v.num().map(|n| s.cache_size = Some(n)),
        },
        KnobDef {
            name: "page_size",
            help: "database page size, fixed when the store is created",
            default: || format_size(library_defaults().2 as u64),
            set: |s, v| {
                let n = v.size()?;
                if !(512..=65536).contains(&n) || !n.is_power_of_two() {
                    return Err(v.refuse("expected a power of two from 512 to 64K"));
                }
                s.page_size = Some(n as i64);
                Ok(())
            },
        },
        KnobDef {
            name: "mmap_size",
            help: "bytes of the file read through mmap (0: none)",
            default: || format_size(library_defaults().3 as u64),
            set: |s, v| v.size().map(|n| s.mmap_size = Some(n)),
        },
        KnobDef {
            name: "wal_autocheckpoint",
            help: "WAL pages that trigger a checkpoint",
            default: || library_defaults().4.to_string(),
            set: |s, v| v.num().map(|n| s.wal_autocheckpoint = Some(n)),
        },
    ],
);

/// An SQLite error: busy and locked are transient, the rest are not.
fn err(e: rusqlite::Error) -> EngineError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => EngineError::busy(format!("sqlite: {e}")),
        _ => EngineError::other(format!("sqlite: {e}")),
    }
}

/// Opens a connection and applies the per-connection pragmas.
fn connect(path: &PathBuf, s: &Settings) -> EngineResult<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(err)?;
    // A cached statement per verb, plus the transaction statements.
    conn.set_prepared_statement_cache_capacity(16);
    if let Some(sync) = &s.synchronous {
        conn.pragma_update(None, "synchronous", sync).map_err(err)?;
    }
    if let Some(n) = s.cache_size {
        conn.pragma_update(None, "cache_size", n).map_err(err)?;
    }
    if let Some(n) = s.mmap_size {
        conn.pragma_update(None, "mmap_size", n as i64).map_err(err)?;
    }
    if let Some(n) = s.wal_autocheckpoint {
        conn.pragma_update(None, "wal_autocheckpoint", n).map_err(err)?;
    }
    Ok(conn)
}

fn open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
    let dir = req.dir(ENGINE)?;
    let s = KNOBS.parse(req.options)?;
    let path = dir.join(FILE);
    let conn = connect(&path, &s)?;
    if let Some(n) = s.page_size {
        conn.pragma_update(None, "page_size", n).map_err(err)?;
    }
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", &s.journal_mode, |row| row.get(0))
        .map_err(err)?;
    if !mode.eq_ignore_ascii_case(&s.journal_mode) {
        return Err(EngineError::other(format!(
            "sqlite: journal_mode {} was not applied (SQLite kept {mode})",
            s.journal_mode
        )));
    }
    conn.execute(SCHEMA, []).map_err(err)?;
    Ok(Box::new(SqliteStore {
        path,
        settings: s,
        stats_conn: Mutex::new(conn),
        cap: req.max_value_bytes,
    }))
}

struct SqliteStore {
    path: PathBuf,
    settings: Settings,
    /// Used by `stats` only (the sampler's thread), never by a session.
    stats_conn: Mutex<Connection>,
    /// The value cap of `append`.
    cap: Option<u64>,
}

impl Store for SqliteStore {
    fn session(&self) -> EngineResult<Box<dyn Session>> {
        Ok(Box::new(SqliteSession {
            conn: connect(&self.path, &self.settings)?,
            cap: self.cap,
        }))
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Ok(conn) = self.stats_conn.lock() {
            for pragma in ["page_count", "freelist_count", "page_size"] {
                if let Ok(n) = conn.pragma_query_value(None, pragma, |row| row.get::<_, i64>(0)) {
                    out.push((pragma.to_string(), n as f64));
                }
            }
        }
        // Process-wide allocator and page-cache figures SQLite keeps.
        for (name, op) in [
            ("memory_used", rusqlite::ffi::SQLITE_STATUS_MEMORY_USED),
            ("pagecache_used", rusqlite::ffi::SQLITE_STATUS_PAGECACHE_USED),
            ("pagecache_overflow", rusqlite::ffi::SQLITE_STATUS_PAGECACHE_OVERFLOW),
            ("malloc_count", rusqlite::ffi::SQLITE_STATUS_MALLOC_COUNT),
        ] {
            let (mut cur, mut high) = (0i64, 0i64);
            // SAFETY: plain out-parameters; sqlite3_status64 only reads global counters.
            if unsafe { rusqlite::ffi::sqlite3_status64(op, &mut cur, &mut high, 0) } == rusqlite::ffi::SQLITE_OK {
                out.push((name.to_string(), cur as f64));
            }
        }
        out
    }

    fn close(self: Box<Self>) -> EngineResult<()> {
        let conn = self
            .stats_conn
            .into_inner()
            .map_err(|_| EngineError::other("sqlite: the stats connection's lock was poisoned"))?;
        conn.close().map_err(|(_, e)| err(e))
    }
}

struct SqliteSession {
    conn: Connection,
    /// The value cap of `append`.
    cap: Option<u64>,
}

impl SqliteSession {
    /// Runs `body` between `begin` and COMMIT, rolling back if it fails.
    fn in_txn<T>(&mut self, begin: &str, body: impl FnOnce(&Connection) -> EngineResult<T>) -> EngineResult<T> {
        self.conn
            .prepare_cached(begin)
            .and_then(|mut s| s.execute([]))
            .map_err(err)?;
        match body(&self.conn) {
            Ok(v) => {
                let committed = self.conn.prepare_cached("COMMIT").and_then(|mut s| s.execute([]));
                if let Err(e) = committed {
                    let _ = self.conn.prepare_cached("ROLLBACK").and_then(|mut s| s.execute([]));
                    return Err(err(e));
                }
                Ok(v)
            }
            Err(e) => {
                // The body's error is the one to report; the rollback only ends the
                // transaction so the connection is usable again.
                let _ = self.conn.prepare_cached("ROLLBACK").and_then(|mut s| s.execute([]));
                Err(e)
            }
        }
    }
}

fn get_into(conn: &Connection, key: &[u8], f: impl FnOnce(&[u8])) -> EngineResult<bool> {
    let mut stmt = conn.prepare_cached(SQL_GET).map_err(err)?;
    let mut rows = stmt.query([key]).map_err(err)?;
    match rows.next().map_err(err)? {
        Some(row) => {
            f(row.get_ref(0).and_then(|v| Ok(v.as_blob()?)).map_err(err)?);
            Ok(true)
        }
        None => Ok(false),
    }
}

impl Session for SqliteSession {
    fn put(&mut self, key: &[u8], val: &[u8]) -> EngineResult<()> {
        let mut stmt = self.conn.prepare_cached(SQL_PUT).map_err(err)?;
        stmt.execute(params![key, val]).map_err(err)?;
        Ok(())
    }

    fn get(&mut self, key: &[u8], out: &mut ReadBuf) -> EngineResult<bool> {
        get_into(&self.conn, key, |v| {
            out.set(v);
        })
    }

    fn del(&mut self, key: &[u8]) -> EngineResult<Existed> {
        let mut stmt = self.conn.prepare_cached(SQL_DEL).map_err(err)?;
        let n = stmt.execute([key]).map_err(err)?;
        Ok(if n > 0 { Existed::Yes } else { Existed::No })
    }

    fn scan(&mut self, lo: &[u8], hi: &[u8], limit: usize, f: &mut ScanFn<'_>) -> EngineResult<usize> {
        if lo >= hi {
            return Ok(0);
        }
        let limit_sql: i64 = if limit == 0 { -1 } else { limit as i64 };
        let mut stmt = self.conn.prepare_cached(SQL_RANGE).map_err(err)?;
        let mut rows = stmt.query(params![lo, hi, limit_sql]).map_err(err)?;
        let mut n = 0usize;
        while let Some(row) = rows.next().map_err(err)? {
            let k = row.get_ref(0).and_then(|v| Ok(v.as_blob()?)).map_err(err)?;
            let v = row.get_ref(1).and_then(|v| Ok(v.as_blob()?)).map_err(err)?;
            n += 1;
            if f(k, v) {
                break;
            }
        }
        Ok(n)
    }

    fn mget(&mut self, keys: &[&[u8]], out: &mut Values) -> EngineResult<()> {
        out.clear();
        self.in_txn("BEGIN", |conn| {
            for key in keys {
                if !get_into(conn, key, |v| out.push_hit(v))? {
                    out.push_miss();
                }
            }
            Ok(())
        })
    }

    fn mput(&mut self, pairs: &[(&[u8], &[u8])]) -> EngineResult<()> {
        self.in_txn("BEGIN IMMEDIATE", |conn| {
            let mut stmt = conn.prepare_cached(SQL_PUT).map_err(err)?;
            for (k, v) in pairs {
                stmt.execute(params![k, v]).map_err(err)?;
            }
            Ok(())
        })
    }

    fn mdel(&mut self, keys: &[&[u8]]) -> EngineResult<Option<usize>> {
        self.in_txn("BEGIN IMMEDIATE", |conn| {
            let mut stmt = conn.prepare_cached(SQL_DEL).map_err(err)?;
            let mut existed = 0usize;
            for k in keys {
                existed += stmt.execute([k]).map_err(err)?;
            }
            Ok(Some(existed))
        })
    }

    fn append(&mut self, key: &[u8], suffix: &[u8]) -> EngineResult<Appended> {
        let cap = self.cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX));
        let mut stmt = self.conn.prepare_cached(SQL_APPEND).map_err(err)?;
        let changed = stmt.execute(params![key, suffix, cap]).map_err(err)?;
        Ok(if changed == 0 { Appended::Skipped } else { Appended::Yes })
    }

    fn delete_range(&mut self, lo: &[u8], hi: &[u8]) -> EngineResult<()> {
        if lo >= hi {
            return Ok(());
        }
        let mut stmt = self.conn.prepare_cached(SQL_DELETE_RANGE).map_err(err)?;
        stmt.execute(params![lo, hi]).map_err(err)?;
        Ok(())
    }
}

fn version() -> String {
    format!("SQLite {}", rusqlite::version())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineOptions, KnobSet};

    #[test]
    fn page_sizes_are_powers_of_two_in_sqlites_range() {
        let mut o = EngineOptions::new();
        o.set("page_size", "3000");
        assert!(KNOBS.validate(&o).unwrap_err().message.contains("page_size"));
        o.set("page_size", "8K");
        assert_eq!(KNOBS.parse(&o).unwrap().page_size, Some(8192));
    }
}
