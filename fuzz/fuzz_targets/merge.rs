//! `kvmark merge` inputs: segment report directories made from the input (results.json,
//! one histogram log and timeline.tsv per segment) either merge or fail with a message.
//!
//! Input layout, so that a corpus file is a readable segment run: segments separated by
//! a line `==segment==`, and within one, results.json, then a line `==hlog==` and the
//! first point's histogram log, then a line `==timeline==` and timeline.tsv.
#![no_main]

use std::path::PathBuf;

use libfuzzer_sys::fuzz_target;

/// More segments add little coverage and cost a directory each.
const MAX_SEGMENTS: usize = 3;

fn split<'a>(text: &'a str, sep: &str) -> (&'a str, Option<&'a str>) {
    match text.split_once(sep) {
        Some((a, b)) => (a, Some(b)),
        None => (text, None),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let root = tempfile::tempdir_in(scratch()).expect("a scratch directory");
    let mut dirs = Vec::new();
    for (i, seg) in text.split("\n==segment==\n").take(MAX_SEGMENTS).enumerate() {
        let dir = root.path().join(format!("seg{i}"));
        std::fs::create_dir_all(dir.join("hdr")).expect("mkdir");
        let (results, rest) = split(seg, "\n==hlog==\n");
        std::fs::write(dir.join("results.json"), results).expect("write");
        if let Some(rest) = rest {
            let (hlog, timeline) = split(rest, "\n==timeline==\n");
            std::fs::write(dir.join("hdr").join("1-point.hlog"), hlog).expect("write");
            if let Some(timeline) = timeline {
                std::fs::write(dir.join("timeline.tsv"), timeline).expect("write");
            }
        }
        dirs.push(dir);
    }
    let _ = kvmark::merge::merge(&dirs, &root.path().join("out"));
});

/// Memory-backed scratch space where there is one: the target writes a few files per input.
fn scratch() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() { shm } else { std::env::temp_dir() }
}
