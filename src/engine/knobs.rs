//! Knob tables: each engine declares its tunables once, as one static table of rows
//! (name, help, default, setter), after fio's `fio_option` table. `kvmark engines`,
//! the refusal of unknown keys, validation before a run and the parse at open all read
//! the same table, so adding a knob is adding one row.
//!
//! ```text
//! static KNOBS: KnobTable<Settings> = KnobTable::new("lmdb", Settings::default, &[
//!     KnobDef {
//!         name: "max_readers",
//!         help: "reader slots: concurrent reading threads",
//!         default: || DEFAULT_MAX_READERS.to_string(),
//!         set: |s, v| v.num().map(|n| s.max_readers = n),
//!     },
//! ]);
//! ```
//!
//! A check across knobs goes after the rows, `KnobTable::<Settings>::new(..)
//! .with_check(..)` (the turbofish: a method call's receiver does not learn `S` from
//! the static's type, and the setters' closures need it).
//!
//! An engine whose library parses its own options (RocksDB's option strings)
//! implements [`KnobSet`] itself instead of declaring a table.

use std::str::FromStr;

use super::options::{OptionError, parse_bool, parse_choice, parse_num, parse_size};
use super::{EngineOptions, Knob};

/// An engine's knobs, as [`EngineInfo::knobs`](super::EngineInfo::knobs) holds them:
/// listed for `kvmark engines` and checked before a run.
pub trait KnobSet: Sync {
    /// Every knob with its default and help line, in the order `kvmark engines`
    /// lists them.
    fn list(&self) -> Vec<Knob>;

    /// Checks options without opening anything: unknown keys and bad values are
    /// refused with an [`OptionError`] naming the engine and the key.
    fn validate(&self, options: &EngineOptions) -> Result<(), OptionError>;

    /// Options under which the engine keeps the whole contract, which the shared
    /// conformance suite opens it with: the opt-ins some verbs need (Redis keeps no key
    /// order without `index=zset`). Empty where the defaults already do.
    fn contract(&self) -> EngineOptions {
        EngineOptions::new()
    }
}

/// One row of a knob table: a key, what it does, its default, and how its value is
/// parsed into the engine's settings `S`.
pub struct KnobDef<S: 'static> {
    /// The key as written in `--engine-opt` or a config section.
    pub name: &'static str,
    /// One line saying what it does.
    pub help: &'static str,
    /// The default as a value the setter accepts, read from the linked library where
    /// it can tell.
    pub default: fn() -> String,
    /// Parses the value into the settings; refusals come from [`KnobValue`]'s parsers
    /// or [`KnobValue::refuse`], so they name the engine, the key and the value.
    pub set: fn(&mut S, &KnobValue<'_>) -> Result<(), OptionError>,
}

/// A check across knobs, once every option is applied: Err((key to blame, why)).
pub type CrossCheck<S> = fn(&S) -> Result<(), (&'static str, String)>;

/// An engine's static knob table, parsing options into its settings `S`.
pub struct KnobTable<S: 'static> {
    engine: &'static str,
    start: fn() -> S,
    rows: &'static [KnobDef<S>],
    check: Option<CrossCheck<S>>,
    contract: &'static [(&'static str, &'static str)],
}

impl<S: 'static> KnobTable<S> {
    /// A table for `engine`: settings begin as `start()` and each given option is
    /// applied by its row's setter, in the order given.
    pub const fn new(engine: &'static str, start: fn() -> S, rows: &'static [KnobDef<S>]) -> Self {
        KnobTable {
            engine,
            start,
            rows,
            check: None,
            contract: &[],
        }
    }

    /// The same table with the options the engine needs to keep the whole contract
    /// ([`KnobSet::contract`]).
    pub const fn with_contract(self, contract: &'static [(&'static str, &'static str)]) -> Self {
        KnobTable { contract, ..self }
    }

    /// The same table with a check across knobs, run after every setter.
    pub const fn with_check(self, check: CrossCheck<S>) -> Self {
        KnobTable {
            check: Some(check),
            ..self
        }
    }

    /// The settings `options` ask for. Every key is checked against the table before
    /// any value is parsed, so a typo is reported as such.
    pub fn parse(&self, options: &EngineOptions) -> Result<S, OptionError> {
        let mut rows = Vec::with_capacity(options.iter().count());
        for (key, value) in options.iter() {
            match self.rows.iter().find(|r| r.name == key) {
                Some(row) => rows.push((row, value)),
                None => {
                    let known: Vec<&str> = self.rows.iter().map(|r| r.name).collect();
                    return Err(OptionError::unknown(self.engine, key, &known));
                }
            }
        }
        let mut settings = (self.start)();
        for (row, text) in rows {
            let value = KnobValue {
                engine: self.engine,
                key: row.name,
                text,
            };
            (row.set)(&mut settings, &value)?;
        }
        if let Some(check) = self.check {
            check(&settings).map_err(|(key, why)| OptionError::new(self.engine, Some(key), why))?;
        }
        Ok(settings)
    }
}

impl<S: 'static> KnobSet for KnobTable<S> {
    fn list(&self) -> Vec<Knob> {
        self.rows
            .iter()
            .map(|r| Knob::new(r.name, (r.default)(), r.help))
            .collect()
    }

    fn validate(&self, options: &EngineOptions) -> Result<(), OptionError> {
        self.parse(options).map(drop)
    }

    fn contract(&self) -> EngineOptions {
        let mut o = EngineOptions::new();
        for (k, v) in self.contract {
            o.set(*k, *v);
        }
        o
    }
}

/// The value given for one knob, with the parsers a setter uses; each refusal names
/// the engine, the key and the value.
#[derive(Debug, Clone, Copy)]
pub struct KnobValue<'a> {
    /// The engine the knob belongs to.
    pub engine: &'a str,
    /// The knob's key.
    pub key: &'a str,
    /// The value as given.
    pub text: &'a str,
}

impl KnobValue<'_> {
    /// A size in bytes ([`parse_size`]).
    pub fn size(&self) -> Result<u64, OptionError> {
        parse_size(self.engine, self.key, self.text)
    }

    /// A size in bytes that fits this machine's `usize`.
    pub fn size_usize(&self) -> Result<usize, OptionError> {
        usize::try_from(self.size()?).map_err(|_| self.refuse("expected a size that fits this machine's address space"))
    }

    /// A boolean ([`parse_bool`]).
    pub fn bool(&self) -> Result<bool, OptionError> {
        parse_bool(self.engine, self.key, self.text)
    }

    /// A number of type `T` ([`parse_num`]).
    pub fn num<T: FromStr>(&self) -> Result<T, OptionError> {
        parse_num(self.engine, self.key, self.text)
    }

    /// One of `choices`, any case ([`parse_choice`]).
    pub fn choice<'c>(&self, choices: &[&'c str]) -> Result<&'c str, OptionError> {
        parse_choice(self.engine, self.key, self.text, choices)
    }

    /// Refuses the value: "engine ENGINE: option KEY = 'VALUE': WHY".
    pub fn refuse(&self, why: impl std::fmt::Display) -> OptionError {
        OptionError::bad_value(self.engine, self.key, self.text, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::options::OptionOrigins;

    #[derive(Debug, Default)]
    struct Toy {
        size: u64,
        on: bool,
        lo: u32,
        hi: u32,
    }

    static TOY: KnobTable<Toy> = KnobTable::new(
        "toy",
        Toy::default,
        &[
            KnobDef {
                name: "size",
                help: "a size",
                default: || "0".to_string(),
                set: |s, v| v.size().map(|n| s.size = n),
            },
            KnobDef {
                name: "on",
                help: "a switch",
                default: || "0".to_string(),
                set: |s, v| v.bool().map(|b| s.on = b),
            },
            KnobDef {
                name: "lo",
                help: "below hi",
                default: || "0".to_string(),
                set: |s, v| v.num().map(|n| s.lo = n),
            },
            KnobDef {
                name: "hi",
                help: "above lo",
                default: || "0".to_string(),
                set: |s, v| v.num().map(|n| s.hi = n),
            },
        ],
    )
    .with_check(|s| match s.lo <= s.hi {
        true => Ok(()),
        false => Err(("lo", format!("lo ({}) is above hi ({})", s.lo, s.hi))),
    });

    fn opts(pairs: &[(&str, &str)]) -> EngineOptions {
        let mut o = EngineOptions::new();
        for (k, v) in pairs {
            o.set(*k, *v);
        }
        o
    }

    #[test]
    fn rows_set_the_settings_and_list_the_knobs() {
        let s = TOY.parse(&opts(&[("size", "2K"), ("on", "yes"), ("hi", "3")])).unwrap();
        assert_eq!((s.size, s.on, s.lo, s.hi), (2048, true, 0, 3));
        let names: Vec<String> = TOY.list().iter().map(|k| k.name.to_string()).collect();
        assert_eq!(names, ["size", "on", "lo", "hi"]);
    }

    #[test]
    fn refusals_carry_the_engine_and_the_key() {
        let e = TOY.parse(&opts(&[("on", "maybe")])).unwrap_err();
        assert_eq!((e.engine.as_str(), e.key.as_deref()), ("toy", Some("on")));
        assert!(e.message.starts_with("engine toy: option on = 'maybe': "), "{e}");
        // An unknown key is reported before any value is parsed.
        let e = TOY.parse(&opts(&[("on", "maybe"), ("sise", "1")])).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("sise"));
        assert!(
            e.message
                .contains("unknown option 'sise' for engine toy (known keys: size, on, lo, hi")
        );
        let e = TOY.parse(&opts(&[("lo", "5"), ("hi", "4")])).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("lo"));
        assert_eq!(e.message, "engine toy: lo (5) is above hi (4)");
    }

    #[test]
    fn errors_are_traced_to_where_the_key_was_set() {
        let e = TOY.parse(&opts(&[("on", "maybe")])).unwrap_err();
        let mut origins = OptionOrigins::new();
        assert_eq!(e.traced(&e.message, &origins), e.message);
        origins.insert(("toy".into(), "on".into()), "/x/e.cnf:4".into());
        origins.insert(("other".into(), "on".into()), "/x/e.cnf:9".into());
        assert_eq!(e.traced("m", &origins), "m (on is set at /x/e.cnf:4)");
        origins.insert(("toy".into(), "on".into()), "--engine-opt toy.on".into());
        assert_eq!(e.traced("m", &origins), "m (on is set by --engine-opt toy.on)");
    }
}
