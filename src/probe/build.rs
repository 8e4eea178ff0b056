//! The build probe: how this kvmark binary was made. Values come from `build.rs`
//! (commit, compiler, profile, locked crate versions) and from the running libraries
//! (allocator, Lua, engines).

use crate::engine;

/// kvmark's git commit at build time ("-dirty" when tracked files had changes;
/// "unknown" without git).
pub const GIT_COMMIT: &str = env!("KVMARK_GIT_COMMIT");

/// Facts in report order.
pub fn facts() -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> = vec![
        (
            "kvmark".to_string(),
            format!("{} (commit {GIT_COMMIT})", env!("CARGO_PKG_VERSION")),
        ),
        ("rustc".to_string(), env!("KVMARK_RUSTC_VERSION").to_string()),
        ("profile".to_string(), env!("KVMARK_BUILD_PROFILE").to_string()),
        ("target".to_string(), env!("KVMARK_TARGET").to_string()),
        ("allocator".to_string(), allocator()),
        ("libc".to_string(), libc_version()),
        ("lua".to_string(), lua_version()),
        (
            "histograms".to_string(),
            format!("hdrhistogram {}", env!("KVMARK_HDRHISTOGRAM_VERSION")),
        ),
    ];
    for e in engine::registry() {
        f.push((format!("engine.{}", e.name), (e.version)()));
    }
    f
}

/// The kvmark binary installs mimalloc as its global allocator (src/main.rs).
fn allocator() -> String {
    format!(
        "mimalloc {} (global allocator; mimalloc crate {})",
        mimalloc_version(mimalloc::MiMalloc.version()),
        env!("KVMARK_MIMALLOC_CRATE_VERSION")
    )
}

/// mimalloc encodes 3.3.2 as 30302 (two digits each for minor and patch); releases
/// before 2.0 used one digit each (1.8.6 is 186).
fn mimalloc_version(v: u32) -> String {
    if v >= 10_000 {
        format!("{}.{}.{}", v / 10_000, (v / 100) % 100, v % 100)
    } else {
        format!("{}.{}.{}", v / 100, (v / 10) % 10, v % 10)
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn libc_version() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    let v = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    format!("glibc {}", v.to_string_lossy())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn libc_version() -> String {
    "unknown (not glibc)".to_string()
}

fn lua_version() -> String {
    let runtime = mlua::Lua::new()
        .globals()
        .get::<String>("_VERSION")
        .unwrap_or_else(|_| "Lua (unknown)".to_string());
    format!(
        "{runtime} (vendored; mlua {}, lua-src {})",
        env!("KVMARK_MLUA_VERSION"),
        env!("KVMARK_LUA_SRC_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mimalloc_versions() {
        assert_eq!(mimalloc_version(30302), "3.3.2");
        assert_eq!(mimalloc_version(21710), "2.17.10");
        assert_eq!(mimalloc_version(186), "1.8.6");
    }

    #[test]
    fn every_fact_is_known() {
        let f = facts();
        for key in ["kvmark", "rustc", "profile", "allocator", "lua", "engine.skiplist"] {
            let (_, v) = f
                .iter()
                .find(|(k, _)| k == key)
                .unwrap_or_else(|| panic!("{key} missing"));
            assert!(!v.is_empty() && !v.starts_with("unknown"), "{key} = {v}");
        }
        assert!(f.iter().any(|(_, v)| v.starts_with("Lua 5.4")), "{f:?}");
    }
}
