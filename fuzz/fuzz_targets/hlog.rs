//! The histogram-log reader (`kvmark plot`'s `hdr/` logs): any bytes read as the
//! intervals before the first damaged one, with a note, or fail with a message.
#![no_main]

use std::path::Path;

use kvmark::plot::data::hlog::{Hlog, spectrum};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut notes = Vec::new();
    if let Ok(log) = Hlog::parse(data, Path::new("fuzz.hlog"), &mut notes) {
        for h in log.tags.values() {
            let s = spectrum(h);
            assert!(s.iter().all(|p| p[0].is_finite() && p[1].is_finite()), "{s:?}");
        }
    }
});
