//! YCSB property files (`-P`): any text either fails with a message naming the
//! property or gives a workload with phases.
#![no_main]

use std::path::Path;

use kvmark::workload::Workload;
use kvmark::workload::ycsb::props::Properties;
use kvmark::workload::ycsb::{Options, YcsbWorkload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let props = Properties::parse(text);
    let _ = props.warnings();
    for (load, run) in [(false, false), (true, false), (true, true)] {
        let opts = Options {
            load,
            run,
            ..Options::default()
        };
        if let Ok(w) = YcsbWorkload::from_properties(Path::new("fuzz"), &props, &opts) {
            assert!(!w.phases().is_empty());
        }
    }
});
