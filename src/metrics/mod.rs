//! Measurement: operation kinds, per-thread recorders, latency summaries.

pub mod recorder;
pub mod summary;

pub use recorder::{KindStats, Recorder};
pub use summary::{LatencySummary, QUANTILES};

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
}

impl OpKind {
    /// Number of kinds.
    pub const COUNT: usize = 10;

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

/// One set of latency histograms and the tag that names it in reports. Closed-loop
/// runs have a single untagged set. A mode that measures a second latency per kind
/// (say, response time from each operation's intended start beside service time)
/// adds a tagged set, and every sink already iterates sets, so it shows up in each
/// without sink changes.
#[derive(Debug, Clone, Copy)]
pub struct LatencySet<'a> {
    /// None for the plain set; else a word such as "response".
    pub tag: Option<&'a str>,
    /// The histograms and counters.
    pub rec: &'a Recorder,
}

/// The latency sets of a recorder, in report order.
pub fn latency_sets(rec: &Recorder) -> Vec<LatencySet<'_>> {
    vec![LatencySet { tag: None, rec }]
}

/// How reports name an operation kind of a set: "get", or "get.response".
pub fn op_label(kind: OpKind, tag: Option<&str>) -> String {
    match tag {
        None => kind.name().to_string(),
        Some(t) => format!("{}.{t}", kind.name()),
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
