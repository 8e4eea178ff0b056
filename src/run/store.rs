//! Store lifecycle: a fresh place per store, by the engine's storage kind (nothing in
//! memory, a directory on a disk, a namespace on a server), removed after the store
//! closes unless kept (`--keep-data`); or a store an earlier run kept, reopened as it
//! is and never removed (`--use-existing`).

use std::path::Path;

use crate::engine::storage::{fresh_dir, fresh_namespace, mark_engine, remove_store_dir, shared_namespace};
use crate::engine::{EngineError, EngineInfo, EngineOptions, OpenRequest, StorageKind, Store, StorePlace};

/// An open store and the place it owns.
pub struct OpenStore {
    /// The engine's store.
    pub store: Box<dyn Store>,
    owned: Owned,
    /// `--verify`: what was acknowledged in this store, which every read is checked
    /// against (set by the runner; stores start empty, so it starts empty too).
    pub verify: Option<std::sync::Arc<crate::kv::verify::Checker>>,
}

/// The place a store lives in, owned by the run: removed after the store closes
/// unless kept.
struct Owned {
    place: StorePlace,
    storage: StorageKind,
    /// A server engine's options, to reach the server when its namespace is removed.
    options: EngineOptions,
    keep: bool,
    /// The engine, for the message that says where a kept store is.
    engine: &'static str,
    /// An earlier run's store (`--use-existing`): kept without a word.
    existing: bool,
}

impl Owned {
    /// Removes the directory or namespace, unless kept.
    fn remove(&self) -> Result<(), String> {
        if self.keep {
            let place = match &self.place {
                StorePlace::Dir(dir) => Some(dir.display().to_string()),
                StorePlace::Namespace(name) => Some(name.clone()),
                StorePlace::Memory => None,
            };
            if let (Some(place), false) = (place, self.existing) {
                eprintln!(
                    "kvmark: kept the {} store {place} (reopen it with --backend {} --use-existing {place})",
                    self.engine, self.engine
                );
            }
            return Ok(());
        }
        match (&self.place, self.storage.server()) {
            (StorePlace::Dir(dir), _) => {
                remove_store_dir(dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))
            }
            (StorePlace::Namespace(name), Some(server)) => (server.remove)(&self.options, name)
                .map_err(|e| format!("cannot remove the {} {name}: {e}", server.namespace)),
            _ => Ok(()),
        }
    }
}

impl OpenStore {
    /// Opens a fresh store of `engine`: a disk engine gets a new directory under
    /// `data_dir`, a server engine a new namespace name. Appends never grow a value
    /// past `max_value_bytes` (None: no cap). A refused option is traced to where it was
    /// set by `run::Plan::explain_open_error`. `shared` is a scaled-out run's tag: a
    /// server engine's store is then the namespace every segment shares, which no
    /// segment removes (another may still be using it).
    pub fn open(
        engine: &EngineInfo,
        options: &EngineOptions,
        data_dir: Option<&Path>,
        keep: bool,
        max_value_bytes: Option<u64>,
        shared: Option<&str>,
    ) -> Result<OpenStore, EngineError> {
        let place = match engine.storage {
            StorageKind::Memory => StorePlace::Memory,
            StorageKind::Disk => {
                let base = data_dir.ok_or_else(|| {
                    EngineError::other(format!(
                        "engine {} stores data on disk and needs --data-dir",
                        engine.name
                    ))
                })?;
                // A new directory, never an existing one: it is removed after use
                // (ARCHITECTURE.md, "Storage kinds").
                let dir = fresh_dir(base, &format!("kvmark-{}", engine.name))
                    .and_then(|dir| mark_engine(&dir, engine.name).map(|()| dir))
                    .map_err(|e| {
                        EngineError::other(format!("cannot create a store directory in {}: {e}", base.display()))
                    })?;
                StorePlace::Dir(dir)
            }
            StorageKind::Server(_) => match shared {
                Some(tag) => StorePlace::Namespace(shared_namespace(engine.name, tag)),
                None => StorePlace::Namespace(fresh_namespace(engine.name)),
            },
        };
        let keep = keep || (shared.is_some() && engine.storage.server().is_some());
        Self::open_in(engine, options, place, keep, false, max_value_bytes)
    }

    /// Opens the store an earlier run left at `place` (`--use-existing`: checked by the
    /// plan), as it is; it is never removed.
    pub fn open_existing(
        engine: &EngineInfo,
        options: &EngineOptions,
        place: StorePlace,
        max_value_bytes: Option<u64>,
    ) -> Result<OpenStore, EngineError> {
        Self::open_in(engine, options, place, true, true, max_value_bytes)
    }

    fn open_in(
        engine: &EngineInfo,
        options: &EngineOptions,
        place: StorePlace,
        keep: bool,
        existing: bool,
        max_value_bytes: Option<u64>,
    ) -> Result<OpenStore, EngineError> {
        let owned = Owned {
            place,
            storage: engine.storage,
            options: match engine.storage {
                StorageKind::Server(_) => options.clone(),
                _ => EngineOptions::new(),
            },
            keep,
            engine: engine.name,
            existing,
        };
        let req = OpenRequest {
            place: owned.place.clone(),
            options,
            max_value_bytes,
        };
        match (engine.open)(&req) {
            Ok(store) => Ok(OpenStore {
                store,
                owned,
                verify: None,
            }),
            Err(e) => {
                // Whatever the failed open left behind; the open error is the one to
                // report. A kept place is left without the message that offers to
                // reopen it: no store was made there.
                if !owned.keep {
                    let _ = owned.remove();
                }
                Err(e.context(format_args!("cannot open {}", engine.name)))
            }
        }
    }

    /// Where the store lives.
    pub fn place(&self) -> &StorePlace {
        &self.owned.place
    }

    /// The store's directory (disk engines only), for the store-size probe.
    pub fn dir(&self) -> Option<&Path> {
        match &self.owned.place {
            StorePlace::Dir(d) => Some(d),
            _ => None,
        }
    }

    /// Closes the store and removes its directory or namespace (unless kept). Both
    /// failures are reported.
    pub fn close(self) -> Result<(), String> {
        // Engines that cache writes (Kyoto Cabinet, Tkrzw) meet a full disk only here.
        // Read after the close, which is what fills the disk.
        let dir = self.dir().map(Path::to_path_buf);
        let full = |e| match dir.as_deref().and_then(super::runner::disk_full) {
            Some(full) => format!("closing the store failed: {full}; the engine's errors: {e}"),
            None => format!("closing the store failed: {e}"),
        };
        let closed = self.store.close().map_err(full);
        closed.and(self.owned.remove())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Mutex;

    use super::*;
    use crate::engine::{AppendMethod, EngineResult, ServerKind, skiplist};

    /// The namespaces that exist on the pretend server.
    static SERVER: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

    static TOY_SERVER: ServerKind = ServerKind {
        namespace: "database",
        address: |_| "toy://localhost".to_string(),
        probe: |_| Ok(()),
        remove: |_, name| {
            SERVER.lock().unwrap().remove(name);
            Ok(())
        },
        pipeline: false,
        ordered: true,
    };

    /// A server engine: its store is a skip list, its namespace an entry on `SERVER`.
    static TOY: EngineInfo = EngineInfo {
        name: "toyserver",
        storage: StorageKind::Server(&TOY_SERVER),
        description: "a pretend server engine",
        append: AppendMethod::CompareAndSwap,
        del_reports_existence: true,
        atomic_batches: false,
        limits: crate::engine::Limits::NONE,
        version: || "toy 1".to_string(),
        knobs: &skiplist::KNOBS,
        open: toy_open,
    };

    fn toy_open(req: &OpenRequest<'_>) -> EngineResult<Box<dyn Store>> {
        let name = req.namespace("toyserver")?;
        SERVER.lock().unwrap().insert(name.to_string());
        (skiplist::INFO.open)(&OpenRequest::memory(req.options))
    }

    fn namespace(s: &OpenStore) -> String {
        match s.place() {
            StorePlace::Namespace(n) => n.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_server_engine_gets_a_fresh_namespace_dropped_after_close_unless_kept() {
        let o = EngineOptions::new();
        let a = OpenStore::open(&TOY, &o, None, false, None, None).unwrap();
        let b = OpenStore::open(&TOY, &o, None, false, None, None).unwrap();
        let (na, nb) = (namespace(&a), namespace(&b));
        assert_ne!(na, nb, "a fresh namespace per store");
        assert!(a.dir().is_none());
        assert!(SERVER.lock().unwrap().contains(&na));
        a.close().unwrap();
        assert!(!SERVER.lock().unwrap().contains(&na), "dropped after close");
        assert!(SERVER.lock().unwrap().contains(&nb), "another store's namespace stays");
        b.close().unwrap();
        let kept = OpenStore::open(&TOY, &o, None, true, None, None).unwrap();
        let nk = namespace(&kept);
        kept.close().unwrap();
        assert!(SERVER.lock().unwrap().contains(&nk), "--keep-data keeps it");
        SERVER.lock().unwrap().remove(&nk);
    }

    #[test]
    fn memory_needs_no_place_and_a_refused_option_stays_data() {
        let o = EngineOptions::new();
        let mem = OpenStore::open(&skiplist::INFO, &o, None, false, None, None).unwrap();
        assert_eq!(mem.place(), &StorePlace::Memory);
        mem.close().unwrap();
        let mut bad = EngineOptions::new();
        bad.set("nope", "1");
        let e = OpenStore::open(&skiplist::INFO, &bad, None, false, None, None)
            .err()
            .unwrap();
        let option = skiplist::INFO.validate(&bad).expect_err("the refused option, as data");
        assert_eq!(
            (option.engine.as_str(), option.key.as_deref()),
            ("skiplist", Some("nope"))
        );
        assert!(
            e.message.starts_with("cannot open skiplist: unknown option 'nope'"),
            "{}",
            e.message
        );
    }
}
