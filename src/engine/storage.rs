//! Storage kinds: where an engine keeps its data, and so what the run makes for each
//! store it opens. "A fresh store per measurement" and `--keep-data` mean the same for
//! every kind: memory needs nothing; a disk engine gets a fresh directory under
//! `--data-dir`, removed after the store closes; a server engine gets a fresh
//! namespace name (a database, table or key prefix), which it creates when it opens
//! and which the run removes through [`ServerKind::remove`] after the store closes.
//! `--keep-data` skips the removal for both.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{EngineInfo, EngineOptions, EngineResult};

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// The file kvmark leaves in every store directory it makes: a directory is removed
/// only when it still carries it, so kvmark never deletes what it did not create.
pub const STORE_MARKER: &str = ".kvmark-store";

/// Creates a new directory `PREFIX-PID-N` under `base` and returns it, never adopting
/// one that exists: kvmark removes what it creates, so an existing directory (a user's
/// files, a symlink, a store kept by another run whose process had the same PID, as
/// happens in containers) must not become a store. A taken name is skipped for the
/// next N.
pub fn fresh_dir(base: &Path, prefix: &str) -> std::io::Result<PathBuf> {
    const ATTEMPTS: usize = 1000;
    let pid = std::process::id();
    for _ in 0..ATTEMPTS {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{prefix}-{pid}-{n}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                let marker = format!("made by kvmark (pid {pid}); removed with its directory\n");
                std::fs::write(dir.join(STORE_MARKER), marker)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", dir.display()))),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{ATTEMPTS} names {prefix}-{pid}-N were taken"),
    ))
}

/// The line of a store directory's marker that names its engine.
const ENGINE_LINE: &str = "engine = ";

/// Records in the marker of `dir` (made by [`fresh_dir`]) which engine's store it
/// holds, so a later run that reopens it (`--use-existing`) can tell.
pub fn mark_engine(dir: &Path, engine: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut marker = std::fs::OpenOptions::new().append(true).open(dir.join(STORE_MARKER))?;
    writeln!(marker, "{ENGINE_LINE}{engine}")
}

/// The engine the marker of `dir` names, if it has a marker that names one.
pub fn marked_engine(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(STORE_MARKER)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(ENGINE_LINE))
        .map(|e| e.trim().to_string())
}

/// Checks that `dir` holds a store `engine` may reopen (`--use-existing`): an existing
/// directory with something in it beside kvmark's marker, and a marker, if any, that
/// names `engine`. A directory without a marker (made by the engine's own tools) is
/// taken as it is: the engine's open says whether it is one of its stores.
pub fn check_existing_dir(dir: &Path, engine: &str) -> Result<(), String> {
    let meta = std::fs::metadata(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            "no such directory (give the store directory a --keep-data run printed)".to_string()
        }
        _ => e.to_string(),
    })?;
    if !meta.is_dir() {
        return Err(
            "not a directory: a disk engine's store is a directory (the one a --keep-data run printed)".to_string(),
        );
    }
    if let Some(other) = marked_engine(dir).filter(|e| e != engine) {
        return Err(format!(
            "it holds a {other} store (its {STORE_MARKER} says so), not a {engine} one: give --backend {other}"
        ));
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| e.to_string())?;
    if !entries.any(|e| e.is_ok_and(|e| e.file_name() != STORE_MARKER)) {
        return Err("it is empty: there is no store in it to open".to_string());
    }
    Ok(())
}

/// Checks a server namespace given to `--use-existing`: the form kvmark's own names
/// take (ASCII letters, digits and underscores, not starting with a digit, at most 63
/// characters), which every server engine can name without quoting.
pub fn check_existing_namespace(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if ok {
        Ok(())
    } else {
        Err(
            "not a namespace name: give ASCII letters, digits and underscores, not starting with a digit, \
             at most 63 characters (the name a --keep-data run printed)"
                .to_string(),
        )
    }
}

/// (free for unprivileged users, total) bytes of the filesystem holding `dir`.
pub fn disk_space(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data, filled on success.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `s` is writable.
    if unsafe { libc::statvfs(path.as_ptr(), &mut s) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // the fields' widths differ between targets
    let frsize = s.f_frsize as u64;
    #[allow(clippy::unnecessary_cast)]
    Some((s.f_bavail as u64 * frsize, s.f_blocks as u64 * frsize))
}

/// Removes a store directory made by [`fresh_dir`], refusing one that is a symlink or
/// lacks [`STORE_MARKER`] (something else now stands at that path).
pub fn remove_store_dir(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other(
            "it is no longer the directory kvmark made (a symlink or a file now); left as it is",
        ));
    }
    if !dir.join(STORE_MARKER).is_file() {
        return Err(std::io::Error::other(format!(
            "it has no {STORE_MARKER} marker, so kvmark did not make it; left as it is"
        )));
    }
    std::fs::remove_dir_all(dir)
}

/// Where an engine keeps its data.
#[derive(Debug, Clone, Copy)]
pub enum StorageKind {
    /// In the process's memory: a store lives as long as it is open.
    Memory,
    /// In a directory on a disk, under `--data-dir`.
    Disk,
    /// In a namespace on a server the engine reaches over the network.
    Server(&'static ServerKind),
}

impl StorageKind {
    /// True for engines that keep their data in the process's memory.
    pub fn in_memory(self) -> bool {
        matches!(self, StorageKind::Memory)
    }

    /// True for engines that need a directory (`--data-dir`).
    pub fn on_disk(self) -> bool {
        matches!(self, StorageKind::Disk)
    }

    /// The server description of a server engine.
    pub fn server(self) -> Option<&'static ServerKind> {
        match self {
            StorageKind::Server(s) => Some(s),
            _ => None,
        }
    }

    /// The `storage:` line of `kvmark engines`.
    pub fn label(self) -> String {
        match self {
            StorageKind::Memory => "in-memory".to_string(),
            StorageKind::Disk => "persistent (needs --data-dir)".to_string(),
            StorageKind::Server(s) => format!(
                "on a server: a fresh {} per store, dropped after it closes unless --keep-data",
                s.namespace
            ),
        }
    }
}

/// How a server engine reaches its server and manages its namespaces. The server's
/// address comes from the engine's own options (a `url` knob, say).
#[derive(Debug)]
pub struct ServerKind {
    /// What one namespace is on this server, for messages: "database", "key prefix".
    pub namespace: &'static str,
    /// The server the options point at (a URL), for messages.
    pub address: fn(&EngineOptions) -> String,
    /// Connects to the server the options point at: Err(why) when none answers. Used
    /// by tests to skip an engine whose server is not running.
    pub probe: fn(&EngineOptions) -> Result<(), String>,
    /// Removes namespace `name` and everything in it. Called after the store closed
    /// (or failed to open), unless `--keep-data`.
    pub remove: fn(&EngineOptions, &str) -> EngineResult<()>,
    /// Whether a connection of this server's sessions can carry several requests at
    /// once (`--pipeline N`: the N sessions of a pipeline group share one connection,
    /// see [`crate::engine::Pipeline`]).
    pub pipeline: bool,
    /// Whether the server keeps its keys in order, so that `range`, `scan` and
    /// `delete_range` can work (memcached keeps none: the plan refuses a workload
    /// that says it needs them, and its sessions refuse the calls).
    pub ordered: bool,
}

/// Where one store lives: made for each store by the run (or a test), by the engine's
/// [`StorageKind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorePlace {
    /// In memory: nothing to name.
    Memory,
    /// A fresh, empty directory that is the store's own.
    Dir(PathBuf),
    /// A fresh namespace name, unique to this store: the engine creates it at open.
    Namespace(String),
}

static NEXT_NAMESPACE: AtomicU64 = AtomicU64::new(0);

/// A namespace name no other store uses, even one of another kvmark process on
/// another machine: `kvmark_ENGINE_PID_NONCE_N`. Lower-case ASCII letters, digits and
/// underscores, starting with a letter, at most 63 bytes (PostgreSQL's identifier
/// limit), so it is a valid database, table or key-prefix name as it is.
pub fn fresh_namespace(engine: &str) -> String {
    static NONCE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let nonce = *NONCE.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() ^ (d.as_secs() as u32));
        nanos ^ std::process::id().rotate_left(16)
    });
    let n = NEXT_NAMESPACE.fetch_add(1, Ordering::Relaxed);
    format!("kvmark_{}_{}_{nonce:08x}_{n}", identifier(engine), std::process::id())
}

/// The namespace every segment of a scaled-out run shares for its store number n (the
/// segments open their stores in the same order): `kvmark_ENGINE_TAG_N`, where the tag
/// names the run (`crate::run::segment`). Same form as [`fresh_namespace`].
pub fn shared_namespace(engine: &str, tag: &str) -> String {
    let n = NEXT_NAMESPACE.fetch_add(1, Ordering::Relaxed);
    format!("kvmark_{}_{}_{n}", identifier(engine), identifier(tag))
}

/// Where the segments of a scaled-out run tagged `tag` meet for their common start
/// on `engine`'s server (`run::meet`): one name per run, beside its shared namespaces.
pub fn meeting_namespace(engine: &str, tag: &str) -> String {
    format!("kvmark_{}_{}_meet", identifier(engine), identifier(tag))
}

/// `name` as identifier characters: lower-case letters, digits and underscores, at
/// most 12.
fn identifier(name: &str) -> String {
    name.chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '_',
        })
        .take(12)
        .collect()
}

/// The environment variable that says the test servers are running (CI sets it to
/// 1): a server engine whose server does not answer then fails its tests instead of
/// being skipped.
pub const REQUIRE_SERVERS_ENV: &str = "KVMARK_REQUIRE_SERVERS";

/// Whether [`REQUIRE_SERVERS_ENV`] is set to 1.
pub fn servers_required() -> bool {
    std::env::var(REQUIRE_SERVERS_ENV).is_ok_and(|v| v.trim() == "1")
}

/// Whether a test can use an engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// In memory, on disk, or its server answered.
    Ready,
    /// Its server did not answer and servers are not required: skip it, saying this.
    Skip(String),
    /// Its server did not answer although servers are required: fail, saying this.
    Fail(String),
}

/// Whether a test can use `info` with `options`: a server engine is probed, and one
/// whose server does not answer is skipped, or fails when `require` (see
/// [`servers_required`]).
pub fn reach(info: &EngineInfo, options: &EngineOptions, require: bool) -> Reach {
    let Some(server) = info.storage.server() else {
        return Reach::Ready;
    };
    match (server.probe)(options) {
        Ok(()) => Reach::Ready,
        Err(why) => {
            let what = format!(
                "engine {}: no server reachable at {} ({why})",
                info.name,
                (server.address)(options)
            );
            if require {
                Reach::Fail(format!(
                    "{what}, but {REQUIRE_SERVERS_ENV}=1 says the servers are started"
                ))
            } else {
                Reach::Skip(format!("{what}, skipped"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{AppendMethod, EngineError, OpenRequest, Store};

    fn refuse(_: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
        Err(EngineError::other("not in this test"))
    }

    #[test]
    fn a_store_dir_is_removed_only_while_it_carries_the_marker() {
        let base = tempfile::tempdir().unwrap();
        let dir = fresh_dir(base.path(), "kvmark-test").unwrap();
        assert!(dir.join(STORE_MARKER).is_file());
        std::fs::write(dir.join("data"), "x").unwrap();
        std::fs::remove_file(dir.join(STORE_MARKER)).unwrap();
        let err = remove_store_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("no .kvmark-store marker"), "{err}");
        assert!(dir.join("data").is_file(), "left as it is");

        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join(STORE_MARKER), "").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(other.path(), &dir).unwrap();
        let err = remove_store_dir(&dir).unwrap_err().to_string();
        assert!(err.contains("symlink"), "{err}");
        assert!(
            other.path().join(STORE_MARKER).is_file(),
            "nothing removed through the link"
        );

        let made = fresh_dir(base.path(), "kvmark-test").unwrap();
        remove_store_dir(&made).unwrap();
        assert!(!made.exists());
    }

    #[test]
    fn an_existing_store_must_be_a_filled_directory_of_the_same_engine() {
        let base = tempfile::tempdir().unwrap();
        let dir = fresh_dir(base.path(), "kvmark-test").unwrap();
        assert_eq!(marked_engine(&dir), None);
        mark_engine(&dir, "rocksdb").unwrap();
        assert_eq!(marked_engine(&dir).as_deref(), Some("rocksdb"));
        assert!(check_existing_dir(&dir, "rocksdb").unwrap_err().contains("empty"));
        std::fs::write(dir.join("CURRENT"), "MANIFEST-000001\n").unwrap();
        check_existing_dir(&dir, "rocksdb").unwrap();
        let err = check_existing_dir(&dir, "leveldb").unwrap_err();
        assert!(
            err.contains("holds a rocksdb store") && err.contains("--backend rocksdb"),
            "{err}"
        );
        // Without a marker (the engine's own tools made it) any engine may try.
        std::fs::remove_file(dir.join(STORE_MARKER)).unwrap();
        check_existing_dir(&dir, "leveldb").unwrap();
        assert!(
            check_existing_dir(&base.path().join("nope"), "x")
                .unwrap_err()
                .contains("no such directory")
        );
        assert!(
            check_existing_dir(&dir.join("CURRENT"), "x")
                .unwrap_err()
                .contains("not a directory")
        );
        check_existing_namespace("kvmark_redis_1_ab12_0").unwrap();
        for bad in ["", "9lives", "a-b", "a b", &"x".repeat(64)] {
            assert!(check_existing_namespace(bad).is_err(), "{bad}");
        }
    }

    static DOWN: ServerKind = ServerKind {
        namespace: "database",
        address: |_| "toy://127.0.0.1:1".to_string(),
        probe: |_| Err("connection refused".to_string()),
        remove: |_, _| Ok(()),
        pipeline: false,
        ordered: true,
    };
    static UP: ServerKind = ServerKind {
        probe: |_| Ok(()),
        ..DOWN
    };

    fn engine(storage: StorageKind) -> EngineInfo {
        EngineInfo {
            name: "toy",
            storage,
            description: "a test engine",
            append: AppendMethod::ReadThenWrite,
            del_reports_existence: false,
            atomic_batches: false,
            limits: crate::engine::Limits::NONE,
            version: || "toy 1".to_string(),
            knobs: &crate::engine::skiplist::KNOBS,
            open: refuse,
        }
    }

    #[test]
    fn an_unreachable_server_is_skipped_unless_servers_are_required() {
        let o = EngineOptions::new();
        for storage in [StorageKind::Memory, StorageKind::Disk, StorageKind::Server(&UP)] {
            assert_eq!(reach(&engine(storage), &o, true), Reach::Ready);
            assert_eq!(reach(&engine(storage), &o, false), Reach::Ready);
        }
        let down = engine(StorageKind::Server(&DOWN));
        assert_eq!(
            reach(&down, &o, false),
            Reach::Skip("engine toy: no server reachable at toy://127.0.0.1:1 (connection refused), skipped".into())
        );
        match reach(&down, &o, true) {
            Reach::Fail(m) => assert!(
                m.starts_with("engine toy: no server reachable at toy://127.0.0.1:1")
                    && m.contains("KVMARK_REQUIRE_SERVERS=1"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn namespaces_are_fresh_and_valid_identifiers() {
        let a = fresh_namespace("Redis-7");
        let b = fresh_namespace("Redis-7");
        assert_ne!(a, b);
        assert!(a.starts_with("kvmark_redis_7_"), "{a}");
        assert!(a.len() <= 63, "{a}");
        let s = shared_namespace("redis", "s3_0123abcd");
        assert!(s.starts_with("kvmark_redis_s3_0123abcd_"), "{s}");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{a}"
        );
    }

    #[test]
    fn labels_keep_the_listing_words() {
        assert_eq!(StorageKind::Memory.label(), "in-memory");
        assert_eq!(StorageKind::Disk.label(), "persistent (needs --data-dir)");
        assert!(StorageKind::Server(&UP).label().contains("a fresh database per store"));
    }
}
