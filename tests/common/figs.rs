//! Helpers for the plot tests: the fixtures, running `kvmark plot`, reading its
//! manifest, and checking PNGs.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A fixture result directory under tests/fixtures/plot.
pub fn fixture(name: &str) -> PathBuf {
    super::root().join("tests/fixtures/plot").join(name)
}

/// The `figures.json` that `kvmark plot` wrote into `dir`.
pub fn manifest(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("figures.json")).expect("figures.json is written");
    serde_json::from_str(&text).unwrap()
}

/// The manifest's list of figures.
pub fn figures(m: &Value) -> &Vec<Value> {
    m["figures"].as_array().unwrap()
}

/// The width and height of a PNG, after checking its signature and header chunk.
pub fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR", "PNG header chunk");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

/// Runs `kvmark plot DIRS --out OUT EXTRA`.
pub fn plot(dirs: &[&Path], out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = vec!["plot".into()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    super::kvmark(&args.iter().map(String::as_str).collect::<Vec<_>>())
}
