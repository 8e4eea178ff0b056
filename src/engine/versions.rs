//! Versions of the engine crates this binary was built with, read from the Cargo.lock
//! it was compiled against. For pure-Rust engines (redb, fjall, the skip list) the
//! crate is the library, so its locked version is the library's version.

/// The lock file, embedded at compile time (a change to it recompiles this module).
const LOCK: &str = include_str!("../../Cargo.lock");

/// `"name version"`, or a note when the lock file does not name the crate.
pub fn crate_version(name: &str) -> String {
    match lock_version(name) {
        Some(v) => format!("{name} {v}"),
        None => format!("{name} (version not recorded in Cargo.lock)"),
    }
}

/// Where the code at `symbol` was loaded from: the path of the shared library that
/// holds it (a library linked from the system), or None when it is compiled into the
/// kvmark binary itself (or the loader cannot say).
#[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
pub fn shared_library_of(symbol: *const std::ffi::c_void) -> Option<String> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::uninit();
    // SAFETY: dladdr only reads the address and fills `info`; a zero return leaves it
    // unset, and it is read only after a non-zero one.
    if unsafe { libc::dladdr(symbol, info.as_mut_ptr()) } == 0 {
        return None;
    }
    // SAFETY: filled by the successful dladdr above.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr's file name is a NUL-terminated string owned by the loader.
    let object = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }
        .to_string_lossy()
        .into_owned();
    let exe = std::env::current_exe().ok().and_then(|p| p.canonicalize().ok());
    let same = |o: &str| std::path::Path::new(o).canonicalize().ok() == exe;
    (object.contains(".so") && !same(&object)).then_some(object)
}

/// The locked version of `name`. When several versions are locked, the one kvmark
/// itself depends on (named with its version in kvmark's dependency list).
pub fn lock_version(name: &str) -> Option<&'static str> {
    let versions: Vec<&'static str> = packages().filter(|(n, _, _)| *n == name).map(|(_, v, _)| v).collect();
    match versions.as_slice() {
        [] => None,
        [one] => Some(one),
        several => {
            let (_, _, deps) = packages().find(|(n, _, _)| *n == env!("CARGO_PKG_NAME"))?;
            several
                .iter()
                .copied()
                .find(|v| deps.iter().any(|d| *d == format!("{name} {v}")))
        }
    }
}

/// (name, version, dependency entries) of every `[[package]]` in the lock file.
fn packages() -> impl Iterator<Item = (&'static str, &'static str, Vec<&'static str>)> {
    LOCK.split("[[package]]").skip(1).filter_map(|block| {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().trim_matches('"'))
        };
        let name = field("name = ")?;
        let version = field("version = ")?;
        let deps = match block.split_once("dependencies = [") {
            Some((_, rest)) => rest
                .split(']')
                .next()
                .unwrap_or("")
                .split(',')
                .map(|d| d.trim().trim_matches('"'))
                .filter(|d| !d.is_empty())
                .collect(),
            None => Vec::new(),
        };
        Some((name, version, deps))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_locked_versions() {
        let v = lock_version("crossbeam-skiplist").expect("crossbeam-skiplist is locked");
        assert!(v.starts_with("0."), "{v}");
        assert!(lock_version("no-such-crate-anywhere").is_none());
        assert!(crate_version("no-such-crate-anywhere").contains("not recorded"));
    }
}
