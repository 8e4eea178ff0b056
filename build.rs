//! Embeds what the build probe reports: the git commit, the compiler, the profile and
//! a few dependency versions. Every piece is optional: a build from a tarball without
//! git, or with an unusual toolchain, still compiles and reports "unknown".

use std::path::Path;
use std::process::Command;

fn main() {
    #[cfg(any(
        feature = "bdb",
        feature = "tokyocabinet",
        feature = "kyotocabinet",
        feature = "tkrzw"
    ))]
    system_engines::bind_all();

    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty());
    let commit = match (commit, dirty) {
        (Some(c), Some(true)) => format!("{c}-dirty"),
        (Some(c), _) => c,
        (None, _) => "unknown".to_string(),
    };
    emit("KVMARK_GIT_COMMIT", &commit);

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    emit("KVMARK_RUSTC_VERSION", &rustc_version);

    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| "unknown".to_string());
    emit(
        "KVMARK_BUILD_PROFILE",
        &format!(
            "{} (opt-level {}, debug {})",
            var("PROFILE"),
            var("OPT_LEVEL"),
            var("DEBUG")
        ),
    );
    emit("KVMARK_TARGET", &var("TARGET"));

    // Versions of the pieces that shape measurements, as locked.
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    for (crate_name, env) in [
        ("mlua", "KVMARK_MLUA_VERSION"),
        ("lua-src", "KVMARK_LUA_SRC_VERSION"),
        ("mimalloc", "KVMARK_MIMALLOC_CRATE_VERSION"),
        ("hdrhistogram", "KVMARK_HDRHISTOGRAM_VERSION"),
    ] {
        emit(
            env,
            &locked_version(&lock, crate_name).unwrap_or_else(|| "unknown".to_string()),
        );
    }

    #[cfg(feature = "wiredtiger")]
    wiredtiger();

    // Rebuild when sources or the checked-out commit change (so "-dirty" and the
    // commit stay true), not on every build.
    for path in ["build.rs", "Cargo.toml", "Cargo.lock", "src"] {
        println!("cargo:rerun-if-changed={path}");
    }
    for git_path in ["HEAD", "index", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", git_path])
            && Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--git-path", &head_ref])
        && Path::new(&p).exists()
    {
        println!("cargo:rerun-if-changed={p}");
    }
}

/// Links the system's WiredTiger (Debian's libwiredtiger-dev, installed by
/// scripts/setup) and generates its bindings from the installed header with bindgen.
/// The directory of its compression extensions becomes `KVMARK_WIREDTIGER_LIBDIR`.
#[cfg(feature = "wiredtiger")]
fn wiredtiger() {
    let lib = pkg_config::Config::new().probe("wiredtiger").unwrap_or_else(|e| {
        panic!("the wiredtiger feature needs WiredTiger's headers and library (Debian: libwiredtiger-dev, installed by scripts/setup): {e}")
    });
    let header = lib
        .include_paths
        .iter()
        .map(|p| p.join("wiredtiger.h"))
        .chain([std::path::PathBuf::from("/usr/include/wiredtiger.h")])
        .find(|p| p.exists())
        .expect("wiredtiger.h next to the library pkg-config found");
    println!("cargo:rerun-if-changed={}", header.display());
    let libdir = pkg_config::get_variable("wiredtiger", "libdir").unwrap_or_default();
    emit("KVMARK_WIREDTIGER_LIBDIR", &libdir);
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindgen::Builder::default()
        .header(header.display().to_string())
        .allowlist_function("wiredtiger_.*")
        .allowlist_type("WT_.*|__wt_.*")
        .allowlist_var("WT_.*")
        .generate_comments(false)
        .layout_tests(false)
        .generate()
        .expect("bindgen generates WiredTiger's bindings from wiredtiger.h")
        .write_to_file(out.join("wiredtiger.rs"))
        .expect("writing WiredTiger's bindings");
}

fn emit(key: &str, value: &str) {
    println!("cargo:rustc-env={key}={value}");
}

/// Output of a git command, or None without git or outside a repository.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The version Cargo.lock pins for `name` (the first entry, if several).
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let needle = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == needle {
            let version = lines.next()?.trim();
            return version
                .strip_prefix("version = \"")
                .and_then(|v| v.strip_suffix('"'))
                .map(str::to_string);
        }
    }
    None
}

/// Bindings for the engines built on system C libraries that have no well-kept crate:
/// bindgen reads the Debian header and writes `OUT_DIR/NAME.rs`, which the engine's
/// `ffi.rs` includes; pkg-config gives the include paths (Berkeley DB ships no .pc
/// file) and the shared library is linked by name.
#[cfg(any(
    feature = "bdb",
    feature = "tokyocabinet",
    feature = "kyotocabinet",
    feature = "tkrzw"
))]
mod system_engines {
    use std::path::PathBuf;

    /// One library: the header to bind, the names to keep, how to link it.
    struct Library {
        /// The engine (and the generated file's name).
        engine: &'static str,
        /// The Debian package that holds the header, for the error message.
        package: &'static str,
        /// The header, as an `#include` line.
        include: &'static str,
        /// A regular expression of the functions, types and constants to keep.
        items: &'static str,
        /// pkg-config's name for it, asked for its include paths (None: the default ones).
        pkg_config: Option<&'static str>,
        /// The shared library to link.
        link: &'static str,
    }

    const LIBRARIES: &[(bool, Library)] = &[
        (
            cfg!(feature = "bdb"),
            Library {
                engine: "bdb",
                package: "libdb5.3-dev",
                include: "#include <db.h>",
                items: "db_create|db_env_create|db_strerror|db_version|DB_.*|DBT|DBC|DB|DB_ENV|DB_TXN",
                pkg_config: None,
                // The versioned name: the header is 5.3's, so must the library be.
                link: "db-5.3",
            },
        ),
        (
            cfg!(feature = "tokyocabinet"),
            Library {
                engine: "tokyocabinet",
                package: "libtokyocabinet-dev",
                include: "#include <tcutil.h>\n#include <tchdb.h>\n#include <tcbdb.h>",
                items: "tcbdb.*|tchdb.*|tcxstr(new|del)|tcversion|tcfree|tcerrmsg|BDB.*|HDB.*|TCE.*|TCBDB|TCHDB|BDBCUR|TCXSTR",
                pkg_config: Some("tokyocabinet"),
                link: "tokyocabinet",
            },
        ),
        (
            cfg!(feature = "kyotocabinet"),
            Library {
                engine: "kyotocabinet",
                package: "libkyotocabinet-dev",
                include: "#include <kclangc.h>",
                items: "kc.*|KC.*",
                pkg_config: Some("kyotocabinet"),
                link: "kyotocabinet",
            },
        ),
        (
            cfg!(feature = "tkrzw"),
            Library {
                engine: "tkrzw",
                package: "libtkrzw-dev",
                include: "#include <tkrzw_langc.h>",
                items: "tkrzw_.*|TKRZW_.*|Tkrzw.*",
                pkg_config: Some("tkrzw"),
                link: "tkrzw",
            },
        ),
    ];

    pub fn bind_all() {
        for (_, lib) in LIBRARIES.iter().filter(|(on, _)| *on) {
            bind(lib);
        }
    }

    fn bind(lib: &Library) {
        let mut clang_args = Vec::new();
        if let Some(name) = lib.pkg_config {
            // Only the include paths: pkg-config's link line for Tkrzw also names its own
            // dependencies (lz4, zstd, ...) for static linking, and those dynamic libraries
            // ahead of the crates' static lz4 and TidesDB's bundled xxhash make the test
            // binaries' link pull both copies of xxhash. The shared library names its own
            // dependencies, so linking it alone is enough.
            match pkg_config::Config::new().cargo_metadata(false).probe(name) {
                Ok(found) => clang_args.extend(found.include_paths.iter().map(|p| format!("-I{}", p.display()))),
                Err(e) => panic!(
                    "engine {}: pkg-config cannot find {name} ({e}); install {} (scripts/setup does), \
                     or build without the engine (cargo's --no-default-features with the features you want)",
                    lib.engine, lib.package
                ),
            }
        }
        println!("cargo:rustc-link-lib={}", lib.link);
        let out =
            PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join(format!("{}.rs", lib.engine));
        let header = format!("{}\n", lib.include);
        let bindings = bindgen::Builder::default()
            .header_contents(&format!("kvmark-{}.h", lib.engine), &header)
            .clang_args(&clang_args)
            .allowlist_item(lib.items)
            .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
            .generate()
            .unwrap_or_else(|e| {
                panic!(
                    "engine {}: bindgen cannot read {} ({e}); install {} and libclang-dev (scripts/setup does)",
                    lib.engine, lib.include, lib.package
                )
            });
        bindings
            .write_to_file(&out)
            .unwrap_or_else(|e| panic!("engine {}: cannot write {}: {e}", lib.engine, out.display()));
    }
}
