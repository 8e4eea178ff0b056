//! What an engine call returns when it fails: [`EngineError`], its [`ErrorKind`]
//! (retry or not), and [`EngineResult`].

use std::fmt;

use super::OptionError;

/// Why an engine call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A transient "try again" (RocksDB Busy/TryAgain, TidesDB's busy code). The
    /// harness retries it inside the timed region and counts the retries.
    Busy,
    /// Anything else; counted per operation kind and reported.
    Other,
}

/// An error returned by an engine call.
#[derive(Debug, Clone)]
pub struct EngineError {
    /// Whether a retry may succeed.
    pub kind: ErrorKind,
    /// The engine's own message.
    pub message: String,
}
// No more fields: verbs return this by value on the hot path, and an 8-byte field
// cost the null unit about 7 instructions (measured with bench/unit-instructions.sh).
// A refused option is kept as data in [`OptionError`], which [`EngineInfo::validate`](super::EngineInfo::validate)
// returns; the run asks it again when an open fails (`run::Plan::explain_open_error`).

impl EngineError {
    /// A non-transient error with the engine's message.
    pub fn other(message: impl Into<String>) -> Self {
        EngineError {
            kind: ErrorKind::Other,
            message: message.into(),
        }
    }

    /// A transient error the harness should retry.
    pub fn busy(message: impl Into<String>) -> Self {
        EngineError {
            kind: ErrorKind::Busy,
            message: message.into(),
        }
    }

    /// The message with `context` before it (the option to blame is kept).
    pub fn context(self, context: impl fmt::Display) -> Self {
        EngineError {
            message: format!("{context}: {}", self.message),
            ..self
        }
    }
}

impl From<OptionError> for EngineError {
    fn from(e: OptionError) -> Self {
        EngineError {
            kind: ErrorKind::Other,
            message: e.message,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}

/// Result of an engine call.
pub type EngineResult<T> = Result<T, EngineError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_results_stay_small() {
        // Verbs return these by value on the hot path: a larger error costs every call.
        assert!(std::mem::size_of::<EngineResult<bool>>() <= 32);
    }
}
