//! Store lifecycle: a fresh directory per store, removed afterwards unless kept.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::engine::{EngineInfo, EngineOptions, OpenRequest, Store};

static NEXT_STORE: AtomicU64 = AtomicU64::new(0);

/// An open store and the directory it owns.
pub struct OpenStore {
    /// The engine's store.
    pub store: Box<dyn Store>,
    /// Its directory (persistent engines only).
    pub dir: Option<PathBuf>,
    keep: bool,
}

impl OpenStore {
    /// Opens a fresh store of `engine`; persistent engines get a new directory under
    /// `data_dir`. Appends never grow a value past `max_value_bytes` (None: no cap).
    pub fn open(
        engine: &EngineInfo,
        options: &EngineOptions,
        data_dir: Option<&Path>,
        keep: bool,
        max_value_bytes: Option<u64>,
    ) -> Result<OpenStore, String> {
        let dir = if engine.persistent {
            let base =
                data_dir.ok_or_else(|| format!("engine {} stores data on disk and needs --data-dir", engine.name))?;
            let n = NEXT_STORE.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("kvmark-{}-{}-{n}", engine.name, std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            Some(dir)
        } else {
            None
        };
        match (engine.open)(&OpenRequest {
            dir: dir.clone(),
            options,
            max_value_bytes,
        }) {
            Ok(store) => Ok(OpenStore { store, dir, keep }),
            Err(e) => {
                if let Some(d) = &dir
                    && !keep
                {
                    let _ = std::fs::remove_dir_all(d);
                }
                Err(format!("cannot open {}: {e}", engine.name))
            }
        }
    }

    /// Closes the store and removes its directory (unless kept). Both failures are
    /// reported.
    pub fn close(self) -> Result<(), String> {
        let closed = self.store.close().map_err(|e| format!("closing the store failed: {e}"));
        let removed = match (&self.dir, self.keep) {
            (Some(dir), false) => {
                std::fs::remove_dir_all(dir).map_err(|e| format!("cannot remove {}: {e}", dir.display()))
            }
            _ => Ok(()),
        };
        closed.and(removed)
    }
}
