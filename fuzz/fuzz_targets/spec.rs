//! The JSON spec parser and the operation generator: any text either fails with a
//! message or builds a plan whose generators produce operations that a log line holds.
#![no_main]

mod common;

use std::sync::Arc;

use kvmark::workload::spec::generator::Generator;
use kvmark::workload::spec::{plan, schema};
use libfuzzer_sys::fuzz_target;

/// Operations taken from each thread's phase: enough to reach every operation kind of
/// a group, few enough to keep an input fast.
const OPS_PER_PHASE: usize = 32;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for strict in [false, true] {
        let _ = schema::parse_lenient(text, strict);
    }
    let Ok((spec, _)) = schema::parse_lenient(text, false) else {
        return;
    };
    let Ok(plan) = plan::build(&spec, "fuzz") else { return };
    let plan = Arc::new(plan);
    // One thread, and the last of three (its share and its own random streams); each
    // generator builds its value pools, so more would slow every input.
    for (t, threads) in [(0, 1), (2, 3)] {
        {
            let mut g = Generator::new(Arc::clone(&plan), t, threads, 7);
            for phase in 0..g.phase_count() {
                if g.enter(phase).is_err() {
                    break;
                }
                for _ in 0..OPS_PER_PHASE {
                    match g.next_op() {
                        Ok(Some(op)) => common::line_round_trips(&op),
                        Ok(None) | Err(_) => break,
                    }
                }
            }
        }
    }
});
