//! Helpers for the engines' own unit tests of modes the conformance suite (which opens
//! every engine with its default options) does not reach.

use tempfile::TempDir;

use super::{EngineOptions, EngineResult, OpenRequest, Rows, Session, Store, StorePlace};

/// Opens a store with `open` in a fresh temporary directory, with the options given
/// and the value cap `cap`; the directory lives as long as the returned handle.
pub fn open_in_tempdir(
    open: fn(&OpenRequest<'_>) -> EngineResult<Box<dyn Store>>,
    options: &[(&str, &str)],
    cap: Option<u64>,
) -> (Box<dyn Store>, TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut o = EngineOptions::new();
    for (k, v) in options {
        o.set(*k, *v);
    }
    let req = OpenRequest {
        max_value_bytes: cap,
        ..OpenRequest::new(StorePlace::Dir(dir.path().to_path_buf()), &o)
    };
    let store = open(&req).unwrap_or_else(|e| panic!("open with {options:?}: {e}"));
    (store, dir)
}

/// Puts each key with itself as the value, then returns the keys of `lo <= key < hi`.
pub fn put_and_range(s: &mut dyn Session, keys: &[&[u8]], lo: &[u8], hi: &[u8]) -> Vec<Vec<u8>> {
    for k in keys {
        s.put(k, k).expect("put");
    }
    range_keys(s, lo, hi)
}

/// The keys of a range `lo <= key < hi`.
pub fn range_keys(s: &mut dyn Session, lo: &[u8], hi: &[u8]) -> Vec<Vec<u8>> {
    let mut rows = Rows::default();
    s.range(lo, hi, 0, &mut rows).expect("range");
    rows.iter().map(|(k, _)| k.to_vec()).collect()
}
