//! The operation-log reader: any line either fails with a message or reads as an
//! operation that writes back as a line reading the same.
#![no_main]

mod common;

use kvmark::workload::oplog::Line;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut line = Line::default();
    for text in data.split(|&b| b == b'\n') {
        match line.parse(text) {
            Ok(entry) => {
                if let Some(op) = line.op(entry) {
                    common::line_round_trips(&op);
                }
            }
            Err(e) => assert!(!e.is_empty()),
        }
    }
});
