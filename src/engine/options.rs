//! Engine options: ordered key/value pairs handed to an engine when it opens.

use super::{EngineError, EngineResult};

/// Options for one engine, in the order they were given (later keys win for engines
/// that map them; RocksDB-style engines forward them verbatim).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineOptions {
    pairs: Vec<(String, String)>,
}

impl EngineOptions {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces `key`.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.pairs.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.pairs.push((key, value)),
        }
    }

    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// All pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// True when no option was given.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Refuses any key not in `known`, naming the engine and the key.
    pub fn check_known(&self, engine: &str, known: &[&str]) -> EngineResult<()> {
        for (key, _) in &self.pairs {
            if !known.contains(&key.as_str()) {
                let hint = if known.is_empty() {
                    format!("{engine} takes no options")
                } else {
                    format!("known keys: {}", known.join(", "))
                };
                return Err(EngineError::other(format!(
                    "unknown option '{key}' for engine {engine} ({hint}; `kvmark engines` lists every knob)"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_replaces_and_keeps_order() {
        let mut o = EngineOptions::new();
        o.set("a", "1");
        o.set("b", "2");
        o.set("a", "3");
        let pairs: Vec<_> = o.iter().collect();
        assert_eq!(pairs, vec![("a", "3"), ("b", "2")]);
    }

    #[test]
    fn unknown_key_names_engine_and_key() {
        let mut o = EngineOptions::new();
        o.set("bogus", "1");
        let err = o.check_known("lmdb", &["map_size"]).unwrap_err();
        assert!(
            err.message.contains("bogus") && err.message.contains("lmdb"),
            "{}",
            err.message
        );
    }
}
