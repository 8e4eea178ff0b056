//! Measurement: operation kinds, per-thread recorders, latency summaries, and the
//! human formatting of the figures they produce.

pub mod format;
pub mod pace;
pub mod recorder;
pub mod sizeclass;
pub mod summary;
pub mod tally;

pub use pace::PaceStats;
pub use recorder::{BySize, KindStats, LatencySet, Recorder, Row};
pub use sizeclass::SizeClasses;
pub use summary::{LatencySummary, QUANTILES};
pub use tally::{Tallies, Tally};

/// Every operation kind that gets its own latency histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// kv.put
    Put,
    /// kv.get
    Get,
    /// kv.del
    Del,
    /// kv.range
    Range,
    /// kv.scan
    Scan,
    /// kv.mget
    Mget,
    /// kv.mput
    Mput,
    /// kv.mdel
    Mdel,
    /// kv.append (grow a value)
    Append,
    /// kv.delete_range
    DeleteRange,
    /// A delete the harness issued when a key's lifetime ended (`kv.expire_after`):
    /// counted as a primitive op, never as a unit.
    Expire,
    /// Closing a server engine's connection and opening a new one (`--reconnect-every`):
    /// timed and counted, never a primitive op.
    Connect,
}

impl OpKind {
    /// Number of kinds.
    pub const COUNT: usize = 12;

    /// All kinds, in report order.
    pub const ALL: [OpKind; OpKind::COUNT] = [
        OpKind::Put,
        OpKind::Get,
        OpKind::Del,
        OpKind::Range,
        OpKind::Scan,
        OpKind::Mget,
        OpKind::Mput,
        OpKind::Mdel,
        OpKind::Append,
        OpKind::DeleteRange,
        OpKind::Expire,
        OpKind::Connect,
    ];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Put => "put",
            OpKind::Get => "get",
            OpKind::Del => "del",
            OpKind::Range => "range",
            OpKind::Scan => "scan",
            OpKind::Mget => "mget",
            OpKind::Mput => "mput",
            OpKind::Mdel => "mdel",
            OpKind::Append => "append",
            OpKind::DeleteRange => "delete_range",
            OpKind::Expire => "expire",
            OpKind::Connect => "connect",
        }
    }

    /// Parses a report name back.
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Index into per-kind arrays.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// True for kinds that write (used to count seed keys).
    pub fn writes(self) -> bool {
        matches!(self, OpKind::Put | OpKind::Mput | OpKind::Append)
    }
}

/// How reports name an operation kind's latency set: "get" for service time (the
/// only set of a closed-loop run), "get.response" for response time.
pub fn op_label(kind: OpKind, set: LatencySet) -> String {
    match set {
        LatencySet::Service => kind.name().to_string(),
        other => format!("{}.{}", kind.name(), other.tag()),
    }
}

/// The latency histogram type: nanoseconds, 1 ns to one hour, 3 significant digits.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// Highest trackable latency: one hour in nanoseconds. Longer samples saturate.
pub const HIST_MAX_NS: u64 = 3_600 * 1_000_000_000;

/// Significant decimal digits kept by every histogram.
pub const HIST_SIGFIG: u8 = 3;

/// A new empty latency histogram.
pub fn new_histogram() -> Histogram {
    Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG).expect("static histogram bounds are valid")
}
