//! The INI config loader: any text either fails with a message naming the file, or
//! gives the command line it stands for.
#![no_main]

use std::path::Path;

use kvmark::cli::parse_config_text;
use kvmark::config::ini;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz.cnf");
    if let Err(e) = ini::parse(text, path) {
        assert!(e.to_string().starts_with("fuzz.cnf"), "{e}");
    }
    let _ = parse_config_text(text, path);
});
