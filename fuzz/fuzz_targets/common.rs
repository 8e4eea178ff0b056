//! What more than one fuzz target checks.

use kvmark::workload::op::Op;
use kvmark::workload::oplog::{Line, write_op};

/// An operation written as a log line must read back as a line that writes the same
/// bytes again: the log format holds every operation the generators and the reader make.
pub fn line_round_trips(op: &Op<'_>) {
    let mut first = Vec::new();
    write_op(&mut first, op).expect("writing to memory");
    if first.is_empty() {
        return;
    }
    assert_eq!(first.last(), Some(&b'\n'), "{op:?}");
    let mut line = Line::default();
    let entry = line.parse(&first[..first.len() - 1]).unwrap_or_else(|e| {
        panic!(
            "{op:?} wrote {:?}, which does not read back: {e}",
            String::from_utf8_lossy(&first)
        )
    });
    let back = line.op(entry).expect("an operation line");
    let mut second = Vec::new();
    write_op(&mut second, &back).expect("writing to memory");
    assert_eq!(first, second, "{op:?} read back as {back:?}");
}
