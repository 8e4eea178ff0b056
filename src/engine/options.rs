//! Engine options: ordered key/value pairs handed to an engine when it opens, the one
//! error type for a refused option ([`OptionError`], which names the engine and the
//! key as data), and the shared parsers engines use for their values (sizes, booleans,
//! numbers, choices), so every engine words a bad value the same way: engine, key,
//! value, what to write.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Where each engine option was set: (engine, key) to a config file's "FILE:LINE" or
/// the `--engine-opt ENGINE.KEY` flag that set it.
pub type OptionOrigins = BTreeMap<(String, String), String>;

/// An engine refused its options. The engine and the key to blame are fields, so the
/// error can be traced to where the option was set ([`OptionError::traced`]) without
/// matching its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    /// The engine whose options these are.
    pub engine: String,
    /// The key to blame; None when no single key is (RocksDB refusing a combination,
    /// options for an engine that is not compiled in).
    pub key: Option<String>,
    /// The whole message, naming the engine (and the key when there is one).
    pub message: String,
}

impl OptionError {
    /// `key` of `engine` refused: "engine ENGINE: DETAIL".
    pub fn new(engine: &str, key: Option<&str>, detail: impl fmt::Display) -> Self {
        OptionError {
            engine: engine.to_string(),
            key: key.map(str::to_string),
            message: format!("engine {engine}: {detail}"),
        }
    }

    /// A value `key = value` refused: "engine ENGINE: option KEY = 'VALUE': DETAIL".
    pub fn bad_value(engine: &str, key: &str, value: &str, detail: impl fmt::Display) -> Self {
        OptionError::new(engine, Some(key), format_args!("option {key} = '{value}': {detail}"))
    }

    /// A key the engine does not have; `known` lists the keys it has.
    pub fn unknown(engine: &str, key: &str, known: &[&str]) -> Self {
        let hint = if known.is_empty() {
            format!("{engine} takes no options")
        } else {
            format!("known keys: {}", known.join(", "))
        };
        // The sentence names the engine itself, so it takes no "engine NAME:" prefix.
        OptionError {
            engine: engine.to_string(),
            key: Some(key.to_string()),
            message: format!("unknown option '{key}' for engine {engine} ({hint}; `kvmark engines` lists every knob)"),
        }
    }

    /// Where the blamed key was set, from `origins`: "KEY is set at FILE:LINE" for a
    /// config file, "KEY is set by --engine-opt ENGINE.KEY" for the flag.
    pub fn origin(&self, origins: &OptionOrigins) -> Option<String> {
        let key = self.key.as_ref()?;
        let origin = origins.get(&(self.engine.clone(), key.clone()))?;
        Some(if origin.starts_with("--") {
            format!("{key} is set by {origin}")
        } else {
            format!("{key} is set at {origin}")
        })
    }

    /// `message` followed by where the blamed key was set, if known: the one place an
    /// engine-option error is traced to its origin.
    pub fn traced(&self, message: &str, origins: &OptionOrigins) -> String {
        match self.origin(origins) {
            Some(origin) => format!("{message} ({origin})"),
            None => message.to_string(),
        }
    }
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OptionError {}

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
    pub fn check_known(&self, engine: &str, known: &[&str]) -> Result<(), OptionError> {
        match self.pairs.iter().find(|(key, _)| !known.contains(&key.as_str())) {
            Some((key, _)) => Err(OptionError::unknown(engine, key, known)),
            None => Ok(()),
        }
    }
}

fn bad_value(engine: &str, key: &str, value: &str, expected: &str) -> OptionError {
    OptionError::bad_value(engine, key, value, format_args!("expected {expected}"))
}

/// Parses a size: a whole number of bytes with an optional K, M, G or T suffix meaning
/// powers of 1024 (`64M` is 67108864). There is no B suffix: `64MB` is refused, as is
/// anything else that is not a size, with a message naming the engine and the key.
pub fn parse_size(engine: &str, key: &str, value: &str) -> Result<u64, OptionError> {
    let v = value.trim();
    let expected = "a size in bytes with an optional K, M, G or T suffix (powers of 1024), for example 64M";
    let (digits, shift) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 30),
        Some(b't' | b'T') => (&v[..v.len() - 1], 40),
        Some(b'b' | b'B') if v.len() > 1 && v.as_bytes()[v.len() - 2].is_ascii_alphabetic() => {
            return Err(bad_value(
                engine,
                key,
                value,
                &format!("{expected} (there is no B suffix: write {})", &v[..v.len() - 1]),
            ));
        }
        _ => (v, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_value(engine, key, value, expected));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| bad_value(engine, key, value, "a size that fits in 64 bits"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| bad_value(engine, key, value, "a size that fits in 64 bits"))
}

/// Parses a boolean: 1/0, true/false, yes/no, on/off (any case).
pub fn parse_bool(engine: &str, key: &str, value: &str) -> Result<bool, OptionError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(bad_value(
            engine,
            key,
            value,
            "a boolean: 1 or 0, true or false, yes or no, on or off",
        )),
    }
}

/// Parses a number of type `T` (an integer or a float, as `T` dictates).
pub fn parse_num<T: FromStr>(engine: &str, key: &str, value: &str) -> Result<T, OptionError> {
    value.trim().parse().map_err(|_| {
        bad_value(
            engine,
            key,
            value,
            &format!("a number ({})", std::any::type_name::<T>()),
        )
    })
}

/// Parses one of a closed set of words (any case); returns the matching entry.
pub fn parse_choice<'c>(engine: &str, key: &str, value: &str, choices: &[&'c str]) -> Result<&'c str, OptionError> {
    let v = value.trim();
    choices
        .iter()
        .find(|c| c.eq_ignore_ascii_case(v))
        .copied()
        .ok_or_else(|| bad_value(engine, key, value, &format!("one of {}", choices.join(", "))))
}

/// Formats a byte count the way `parse_size` reads it: the largest exact K/M/G/T unit.
pub fn format_size(bytes: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
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
    fn sizes_use_powers_of_1024_and_refuse_the_rest() {
        assert_eq!(parse_size("e", "k", "4096").unwrap(), 4096);
        assert_eq!(parse_size("e", "k", "64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("e", "k", "2k").unwrap(), 2048);
        assert_eq!(parse_size("e", "k", " 1G ").unwrap(), 1 << 30);
        assert_eq!(parse_size("e", "k", "3T").unwrap(), 3u64 << 40);
        for bad in [
            "",
            "M",
            "64MB",
            "64 M",
            "-1",
            "1.5G",
            "x",
            "99999999999999999999",
            "16777216T",
        ] {
            let err = parse_size("tidesdb", "write_buffer_size", bad).unwrap_err();
            assert!(
                err.message.contains("tidesdb") && err.message.contains("write_buffer_size"),
                "{bad}: {}",
                err.message
            );
        }
        assert!(parse_size("e", "k", "64MB").unwrap_err().message.contains("write 64M"));
    }

    #[test]
    fn sizes_format_back_to_what_parses() {
        for n in [0u64, 1, 1000, 4096, 64 << 20, 3 << 30, 5u64 << 40, (1 << 20) + 1] {
            assert_eq!(parse_size("e", "k", &format_size(n)).unwrap(), n);
        }
        assert_eq!(format_size(64 << 20), "64M");
    }

    #[test]
    fn bools_numbers_and_choices() {
        assert!(parse_bool("e", "k", "On").unwrap());
        assert!(!parse_bool("e", "k", "0").unwrap());
        assert!(parse_bool("e", "k", "maybe").is_err());
        assert_eq!(parse_num::<i32>("e", "k", "-3").unwrap(), -3);
        assert!(parse_num::<u32>("e", "k", "-3").is_err());
        assert_eq!(parse_num::<f64>("e", "k", "0.01").unwrap(), 0.01);
        assert_eq!(parse_choice("e", "k", "WAL", &["delete", "wal"]).unwrap(), "wal");
        let err = parse_choice("sqlite", "journal_mode", "nope", &["delete", "wal"]).unwrap_err();
        assert!(err.message.contains("one of delete, wal"), "{}", err.message);
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
