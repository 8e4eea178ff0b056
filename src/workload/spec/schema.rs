//! The JSON schema of a spec, as written: Tectonic's field names, plus kvmark's
//! additions. Every struct refuses unknown fields, and parse errors carry the JSON
//! path of the offending field (`sections[0].groups[1].inserts.amout`), so a
//! misspelled spec never runs as something else.

use std::fmt;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, MapAccess, Visitor};

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    /// A JSON-schema reference (Tectonic's files carry one); ignored.
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
    /// Name for reports (default: the file name).
    pub name: Option<String>,
    /// Default character set for everything below.
    pub character_set: Option<CharacterSet>,
    /// Fraction of each 100-byte stretch of generated values that is random; the rest
    /// repeats it (db_bench's `compression_ratio`). Default 1.
    pub compression_ratio: Option<f64>,
    /// Isolated key spaces, run in order.
    pub sections: Vec<SectionSpec>,
    /// Growing values in epochs (YCSB-IVS; kvmark): the groups before the last load
    /// the store, and each epoch runs an extend phase and then the last group.
    pub epochs: Option<EpochsSpec>,
}

/// `epochs {count, extends, modes}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpochsSpec {
    /// Number of epochs.
    pub count: u32,
    /// Each epoch's extend phase.
    pub extends: Option<EpochExtendsSpec>,
    /// Run modes: main, clean, average, spread, or all.
    pub modes: Option<Vec<String>>,
}

/// `epochs.extends {op_count, len, selection}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpochExtendsSpec {
    /// Extends per epoch.
    #[serde(alias = "amount")]
    pub op_count: Option<NumberExpr>,
    /// Bytes per extend.
    pub len: Option<NumberExpr>,
    /// Which keys grow.
    pub selection: Option<Distribution>,
}

/// Fields a section or group passes down to its operations (a view built from the
/// section's or group's own fields; serde cannot flatten into a strict struct).
#[derive(Debug, Clone, Default)]
pub struct Inherited {
    /// Character set of `uniform` strings that name none.
    pub character_set: Option<CharacterSet>,
    /// Key expression of inserts (and of empty queries and deletes).
    pub key: Option<StringExpr>,
    /// Value expression of inserts, updates, merges and read-modify-writes.
    pub val: Option<StringExpr>,
    /// Key length: shorthand for `key: {uniform: {len: ...}}`.
    pub key_len: Option<NumberExpr>,
    /// Value length: shorthand for `val: {uniform: {len: ...}}`.
    pub val_len: Option<NumberExpr>,
    /// Key selection of operations on live keys.
    pub selection: Option<Distribution>,
    /// Lifetime of inserted keys, in seconds.
    pub lifetime: Option<NumberExpr>,
}

macro_rules! inherited_view {
    ($t:ty) => {
        impl $t {
            /// The fields this level passes down.
            pub fn inherited(&self) -> Inherited {
                Inherited {
                    character_set: self.character_set,
                    key: self.key.clone(),
                    val: self.val.clone(),
                    key_len: self.key_len.clone(),
                    val_len: self.val_len.clone(),
                    selection: self.selection.clone(),
                    lifetime: self.lifetime.clone(),
                }
            }
        }
    };
}
inherited_view!(SectionSpec);
inherited_view!(GroupSpec);

/// A section: one key space, its groups run in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SectionSpec {
    /// Label for phase names.
    pub name: Option<String>,
    /// Character set of `uniform` strings that name none.
    pub character_set: Option<CharacterSet>,
    /// Key expression of inserts (and of empty queries and deletes).
    pub key: Option<StringExpr>,
    /// Value expression of inserts, updates, merges and read-modify-writes.
    pub val: Option<StringExpr>,
    /// Key length: shorthand for `key: {uniform: {len: ...}}`.
    pub key_len: Option<NumberExpr>,
    /// Value length: shorthand for `val: {uniform: {len: ...}}`.
    pub val_len: Option<NumberExpr>,
    /// Key selection of operations on live keys.
    pub selection: Option<Distribution>,
    /// Lifetime of inserted keys, in seconds (kvmark).
    pub lifetime: Option<NumberExpr>,
    /// Tectonic's switch to skip membership checks; kvmark's checks are free, so it
    /// has no effect.
    pub skip_key_contains_check: Option<bool>,
    /// The phases.
    pub groups: Vec<GroupSpec>,
}

/// A group: one phase whose operations interleave.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// Phase name in reports.
    pub name: Option<String>,
    /// Target operations per second, or a sine wave of them (kvmark): the phase runs
    /// open loop at that rate.
    pub rate: Option<RateSpec>,
    /// Run the phase for this many seconds, cycling its operation mix.
    pub duration: Option<f64>,
    /// Tectonic's per-group statistics switch; kvmark always reports each phase.
    pub enable_granular_stats: Option<bool>,
    /// Character set of `uniform` strings that name none.
    pub character_set: Option<CharacterSet>,
    /// Key expression of inserts (and of empty queries and deletes).
    pub key: Option<StringExpr>,
    /// Value expression of inserts, updates, merges and read-modify-writes.
    pub val: Option<StringExpr>,
    /// Key length: shorthand for `key: {uniform: {len: ...}}`.
    pub key_len: Option<NumberExpr>,
    /// Value length: shorthand for `val: {uniform: {len: ...}}`.
    pub val_len: Option<NumberExpr>,
    /// Key selection of operations on live keys.
    pub selection: Option<Distribution>,
    /// Lifetime of inserted keys, in seconds (kvmark).
    pub lifetime: Option<NumberExpr>,
    /// K-L sortedness of the group's inserts.
    pub sorted: Option<Sorted>,
    /// Inserts of fresh keys.
    pub inserts: Option<InsertsSpec>,
    /// Overwrites of live keys.
    pub updates: Option<WriteSpec>,
    /// Merges (appends) to live keys.
    pub merges: Option<WriteSpec>,
    /// Read-modify-writes of live keys: a get then a put, one unit (kvmark).
    pub read_modify_writes: Option<WriteSpec>,
    /// Gets of live keys.
    pub point_queries: Option<PointSpec>,
    /// Gets of keys that are certainly absent.
    pub empty_point_queries: Option<EmptySpec>,
    /// Range reads starting at live keys.
    pub range_queries: Option<RangeSpec>,
    /// Deletes of live keys.
    pub point_deletes: Option<PointSpec>,
    /// Deletes of keys that are certainly absent.
    pub empty_point_deletes: Option<EmptySpec>,
    /// Range deletes starting at live keys.
    pub range_deletes: Option<RangeSpec>,
    /// Appends of `len` bytes to the values of live keys (kvmark; YCSB-IVS's extend).
    pub extends: Option<ExtendsSpec>,
}

/// `sorted {k, l}`: K the share (or count) of inserts out of place, L the largest
/// displacement (share of the group's inserts, or a count).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sorted {
    /// Entries out of place.
    pub k: NumberExpr,
    /// Largest displacement.
    pub l: NumberExpr,
}

/// `inserts`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InsertsSpec {
    /// How many (Tectonic's older name: `amount`).
    #[serde(alias = "amount")]
    pub op_count: NumberExpr,
    /// Key expression.
    pub key: Option<StringExpr>,
    /// Value expression.
    pub val: Option<StringExpr>,
    /// Key length shorthand.
    pub key_len: Option<NumberExpr>,
    /// Value length shorthand.
    pub val_len: Option<NumberExpr>,
    /// Character set default.
    pub character_set: Option<CharacterSet>,
    /// Seconds each inserted key lives before the harness deletes it (kvmark; a
    /// constant or a distribution drawn per key).
    pub lifetime: Option<NumberExpr>,
}

/// `updates`, `merges`, `read_modify_writes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteSpec {
    /// How many.
    #[serde(alias = "amount")]
    pub op_count: NumberExpr,
    /// Value expression.
    pub val: Option<StringExpr>,
    /// Value length shorthand.
    pub val_len: Option<NumberExpr>,
    /// Key selection.
    pub selection: Option<Distribution>,
    /// Chance of picking a key with a hot prefix (keys with a `hot_range`; kvmark).
    pub hot_probability: Option<f64>,
    /// Character set default.
    pub character_set: Option<CharacterSet>,
}

/// `extends`: grow the values of live keys (YCSB-IVS's extend operation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtendsSpec {
    /// How many.
    #[serde(alias = "amount")]
    pub op_count: NumberExpr,
    /// Bytes appended per operation (default 100).
    pub len: Option<NumberExpr>,
    /// Key selection.
    pub selection: Option<Distribution>,
    /// Chance of picking a key with a hot prefix.
    pub hot_probability: Option<f64>,
    /// Characters of the appended bytes.
    pub character_set: Option<CharacterSet>,
}

/// `point_queries`, `point_deletes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointSpec {
    /// How many.
    #[serde(alias = "amount")]
    pub op_count: NumberExpr,
    /// Key selection.
    pub selection: Option<Distribution>,
    /// Chance of picking a key with a hot prefix (kvmark).
    pub hot_probability: Option<f64>,
}

/// `empty_point_queries`, `empty_point_deletes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmptySpec {
    /// How many.
    #[serde(alias = "amount")]
    pub op_count: NumberExpr,
    /// Key expression (default: the section's insert key).
    pub key: Option<StringExpr>,
    /// Key length shorthand.
    pub key_len: Option<NumberExpr>,
    /// Character set default.
    pub character_set: Option<CharacterSet>,
}

/// `range_queries`, `range_deletes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeSpec {
    /// How many.
    #[serde(alias = "amount")]
    pub op_count: NumberExpr,
    /// Start key selection.
    pub selection: Option<Distribution>,
    /// Rows as a fraction of the live keys.
    pub selectivity: Option<NumberExpr>,
    /// Rows as a count (YCSB's scan length; kvmark).
    pub scan_length: Option<NumberExpr>,
    /// `StartCount` (default) or `StartEnd`.
    pub range_format: Option<RangeFormat>,
    /// Chance of starting at a key with a hot prefix (kvmark).
    pub hot_probability: Option<f64>,
    /// Character set default.
    pub character_set: Option<CharacterSet>,
}

/// How a range is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum RangeFormat {
    /// A start key and a row count.
    StartCount,
    /// A start key and an end key.
    StartEnd,
}

/// Characters of `uniform` strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CharacterSet {
    /// 0-9, A-Z, a-z.
    Alphanumeric,
    /// A-Z, a-z.
    Alphabetic,
    /// 0-9.
    Numeric,
}

/// A string expression.
#[derive(Debug, Clone, PartialEq)]
pub enum StringExpr {
    /// A constant.
    Const(String),
    /// Random characters.
    Uniform(UniformStr),
    /// One of several expressions, by weight.
    Weighted(Vec<Weight>),
    /// Segments joined by a separator.
    Segmented(Segmented),
    /// A prefix that is one of `amount` hot prefixes with `probability`.
    HotRange(HotRange),
}

/// `uniform {len, character_set}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UniformStr {
    /// Length (a constant or a distribution).
    pub len: NumberExpr,
    /// Characters (inherited when absent).
    pub character_set: Option<CharacterSet>,
}

/// One alternative of `weighted`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Weight {
    /// Relative weight.
    pub weight: f64,
    /// The expression.
    pub value: StringExpr,
}

/// `segmented {segments, separator}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Segmented {
    /// The parts.
    pub segments: Vec<StringExpr>,
    /// Joins the parts (default: none).
    #[serde(default)]
    pub separator: String,
}

/// `hot_range {len, amount, probability}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotRange {
    /// Prefix length in characters.
    pub len: u64,
    /// Number of hot prefixes.
    pub amount: u64,
    /// Chance that a string gets a hot prefix.
    pub probability: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum StringExprObject {
    Uniform(UniformStr),
    Weighted(Vec<Weight>),
    Segmented(Segmented),
    HotRange(HotRange),
}

impl<'de> Deserialize<'de> for StringExpr {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringExpr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, or an object with one of uniform, weighted, segmented, hot_range")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<StringExpr, E> {
                Ok(StringExpr::Const(s.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<StringExpr, A::Error> {
                Ok(match StringExprObject::deserialize(MapAccessDeserializer::new(map))? {
                    StringExprObject::Uniform(u) => StringExpr::Uniform(u),
                    StringExprObject::Weighted(w) => StringExpr::Weighted(w),
                    StringExprObject::Segmented(s) => StringExpr::Segmented(s),
                    StringExprObject::HotRange(h) => StringExpr::HotRange(h),
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A group's target rate: operations per second, or (kvmark) a sine wave of them as
/// db_bench's mixgraph paces its queries.
#[derive(Debug, Clone, PartialEq)]
pub enum RateSpec {
    /// Operations per second.
    Const(f64),
    /// `{"sine": {"a", "b", "c", "d", "interval"}}`: a·sin(b·t + c) + d operations per
    /// second at t seconds into the phase, recomputed every `interval` seconds.
    Sine(SineSpec),
}

/// A sine-wave rate.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SineSpec {
    /// Amplitude, operations per second.
    pub a: f64,
    /// Angular frequency, radians per second.
    pub b: f64,
    /// Phase, radians (default 0).
    pub c: Option<f64>,
    /// Mean, operations per second.
    pub d: f64,
    /// Seconds between recomputations of the rate.
    pub interval: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RateObject {
    Sine(SineSpec),
}

impl<'de> Deserialize<'de> for RateSpec {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RateSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "operations per second, or a sine wave {\"sine\": {\"a\": .., \"b\": .., \"c\": .., \"d\": .., \
                     \"interval\": ..}}",
                )
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RateSpec, E> {
                Ok(RateSpec::Const(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RateSpec, E> {
                Ok(RateSpec::Const(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RateSpec, E> {
                Ok(RateSpec::Const(v as f64))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RateSpec, A::Error> {
                match RateObject::deserialize(MapAccessDeserializer::new(map))? {
                    RateObject::Sine(s) => Ok(RateSpec::Sine(s)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A number expression: a constant or a distribution.
#[derive(Debug, Clone, PartialEq)]
pub enum NumberExpr {
    /// A constant.
    Const(f64),
    /// A sample per use.
    Dist(Distribution),
}

impl<'de> Deserialize<'de> for NumberExpr {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NumberExpr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, or a distribution object such as {\"uniform\": {\"min\": 1, \"max\": 10}}")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumberExpr, E> {
                Ok(NumberExpr::Const(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumberExpr, E> {
                Ok(NumberExpr::Const(v as f64))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumberExpr, E> {
                Ok(NumberExpr::Const(v as f64))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NumberExpr, A::Error> {
                Distribution::deserialize(MapAccessDeserializer::new(map)).map(NumberExpr::Dist)
            }
        }
        d.deserialize_any(V)
    }
}

/// A distribution object, e.g. `{"zipf": {"s": 0.99}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// `uniform {min, max}`.
    Uniform(MinMax),
    /// `normal {mean, std_dev}`.
    Normal(MeanStd),
    /// `beta {alpha, beta}`.
    Beta(AlphaBeta),
    /// `zipf {n, s, scrambled}`.
    Zipf(ZipfParams),
    /// `exponential {lambda}`.
    Exponential(Lambda),
    /// `log_normal {mean, std_dev}`.
    LogNormal(MeanStd),
    /// `poisson {lambda}`.
    Poisson(Lambda),
    /// `weibull {scale, shape}`.
    Weibull(ScaleShape),
    /// `pareto {scale, shape}`.
    Pareto(ScaleShape),
    /// `latest {s}` (kvmark).
    Latest(LatestParams),
    /// `histogram {bounds, weights}`: an empirical distribution (kvmark; `kvmark fit`
    /// writes them).
    Histogram(HistogramParams),
    /// `generalized_pareto {k, sigma, theta, min, max}` (kvmark): db_bench mixgraph's law
    /// of value sizes and scan lengths.
    GeneralizedPareto(GeneralizedParetoParams),
    /// `two_term_exp {ranges, a, b, c, d, key_a, key_b}` (kvmark; selection only):
    /// db_bench mixgraph's key-range model.
    TwoTermExp(TwoTermExpParams),
}

/// A generalized Pareto distribution (db_bench's `value_k`, `value_sigma`,
/// `value_theta` and `mix_max_value_size`, or the `iter_` ones).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneralizedParetoParams {
    /// Shape.
    pub k: f64,
    /// Scale.
    pub sigma: f64,
    /// Location (default 0).
    pub theta: Option<f64>,
    /// Draws below it are raised to it, as db_bench raises value sizes below 10.
    pub min: Option<f64>,
    /// Draws above it wrap modulo it, as db_bench wraps value sizes.
    pub max: Option<f64>,
}

/// db_bench mixgraph's key-range model: `keyrange_num`, `keyrange_dist_a` to `_d`,
/// `key_dist_a` and `key_dist_b`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TwoTermExpParams {
    /// How many key ranges the live keys are cut into.
    pub ranges: u32,
    /// A range's share is a·e^(b·x) + c·e^(d·x) of its number x.
    pub a: f64,
    /// See `a`.
    pub b: f64,
    /// See `a`.
    pub c: f64,
    /// See `a`.
    pub d: f64,
    /// The power law key_a·x^key_b of keys inside a range (default 0: uniform).
    pub key_a: Option<f64>,
    /// See `key_a`.
    pub key_b: Option<f64>,
}

/// An empirical distribution's bins.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistogramParams {
    /// Increasing bin bounds: bin i is [bounds[i], bounds[i + 1]).
    pub bounds: Vec<f64>,
    /// Each bin's relative weight.
    pub weights: Vec<f64>,
}

/// Bounds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinMax {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

/// Mean and standard deviation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeanStd {
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub std_dev: f64,
}

/// Beta parameters.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlphaBeta {
    /// Alpha.
    pub alpha: f64,
    /// Beta.
    pub beta: f64,
}

/// Zipf parameters.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZipfParams {
    /// Items (numbers only; selection ranks over the live keys).
    pub n: Option<u64>,
    /// Exponent (YCSB's zipfian constant; default 0.99).
    #[serde(alias = "theta")]
    pub s: Option<f64>,
    /// Hash ranks across the keys, as YCSB's scrambled zipfian.
    #[serde(default)]
    pub scrambled: bool,
}

/// A rate.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lambda {
    /// Lambda.
    pub lambda: f64,
}

/// Scale and shape.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleShape {
    /// Scale.
    pub scale: f64,
    /// Shape.
    pub shape: f64,
}

/// `latest` parameters.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatestParams {
    /// Exponent (default 0.99).
    #[serde(alias = "theta")]
    pub s: Option<f64>,
}

/// Parses a spec, naming the JSON path (and line and column) of any problem.
pub fn parse(text: &str) -> Result<SpecFile, String> {
    parse_lenient(text, true).map(|(spec, _)| spec)
}

/// Field names of Tectonic's operation schema. Tectonic ignores fields it does not
/// know, and some of its published specs carry one of these where its schema has no
/// such field (a `key` under `point_queries`, a `selection` under
/// `empty_point_queries`): unless `strict`, [`parse_lenient`] drops such a field with a
/// warning. A name that is no field anywhere stays an error: it is a typo.
pub const TECTONIC_FIELDS: [&str; 9] = [
    "key",
    "val",
    "key_len",
    "val_len",
    "selection",
    "character_set",
    "selectivity",
    "range_format",
    "op_count",
];

fn located<E: std::fmt::Display>(path: &str, inner: E) -> String {
    if path == "." || path.is_empty() {
        inner.to_string()
    } else {
        format!("{path}: {inner}")
    }
}

/// The field an "unknown field" error names.
fn unknown_field(message: &str) -> Option<&str> {
    message.strip_prefix("unknown field `")?.split('`').next()
}

/// Parses a spec; unless `strict`, a Tectonic field where Tectonic's schema does not
/// have it is dropped, and returned as a warning naming its JSON path.
pub fn parse_lenient(text: &str, strict: bool) -> Result<(SpecFile, Vec<String>), String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let err = match serde_path_to_error::deserialize::<_, SpecFile>(&mut *de) {
        // Text after the document (a second one pasted in) is an error, not ignored.
        Ok(spec) => return de.end().map(|()| (spec, Vec::new())).map_err(|e| e.to_string()),
        Err(e) => e,
    };
    let first = located(&err.path().to_string(), err.inner());
    if strict || unknown_field(&err.inner().to_string()).is_none() {
        return Err(first);
    }
    // Drop the misplaced fields one at a time, from the parsed document (which has no
    // lines and columns, so the first error is the one reported if a drop fails).
    let mut doc: serde_json::Value = serde_json::from_str(text).map_err(|_| first.clone())?;
    let mut warnings = Vec::new();
    loop {
        let err = match serde_path_to_error::deserialize::<_, SpecFile>(&doc) {
            Ok(spec) => return Ok((spec, warnings)),
            Err(e) => e,
        };
        let message = err.inner().to_string();
        let path = err.path().to_string();
        let Some(field) = unknown_field(&message).filter(|f| TECTONIC_FIELDS.contains(f)) else {
            return Err(if warnings.is_empty() {
                first
            } else {
                located(&path, &message)
            });
        };
        let field = field.to_string();
        if !remove_at(&mut doc, err.path(), &field) || warnings.len() > 1000 {
            return Err(first);
        }
        let at = path.trim_end_matches(&format!(".{field}")).to_string();
        warnings.push(format!(
            "{at}: field `{field}` is not part of Tectonic's schema here and is ignored, as Tectonic ignores it \
             (--strict-spec refuses it)"
        ));
    }
}

/// Removes `field` from the object at `path` in `doc` (the path may end at the field).
fn remove_at(doc: &mut serde_json::Value, path: &serde_path_to_error::Path, field: &str) -> bool {
    use serde_path_to_error::Segment;
    let mut at = doc;
    let segments: Vec<&Segment> = path.iter().collect();
    let n = match segments.last() {
        Some(Segment::Map { key }) if key == field => segments.len() - 1,
        _ => segments.len(),
    };
    for seg in &segments[..n] {
        at = match seg {
            Segment::Seq { index } => match at.get_mut(*index) {
                Some(v) => v,
                None => return false,
            },
            Segment::Map { key } => match at.get_mut(key.as_str()) {
                Some(v) => v,
                None => return false,
            },
            _ => return false,
        };
    }
    at.as_object_mut().is_some_and(|o| o.remove(field).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tectonic_fields_parse() {
        let spec = parse(
            r#"{"$schema": "x.json", "sections": [{"groups": [{"name": "load", "enable_granular_stats": true,
                "inserts": {"amount": 10, "key": {"segmented": {"segments": ["u", {"uniform": {"len": 4,
                "character_set": "numeric"}}], "separator": ":"}}, "val": {"uniform": {"len": {"normal":
                {"mean": 10, "std_dev": 2}}}}},
                "range_deletes": {"op_count": 1, "selectivity": 1e-6, "range_format": "StartEnd"}}]}]}"#,
        )
        .unwrap();
        let g = &spec.sections[0].groups[0];
        assert_eq!(g.inserts.as_ref().unwrap().op_count, NumberExpr::Const(10.0));
        assert_eq!(
            g.range_deletes.as_ref().unwrap().range_format,
            Some(RangeFormat::StartEnd)
        );
    }

    #[test]
    fn unknown_fields_name_their_path() {
        let err = parse(r#"{"sections": [{"groups": [{"inserts": {"amout": 3}}]}]}"#).unwrap_err();
        assert!(err.contains("sections[0].groups[0].inserts"), "{err}");
        assert!(err.contains("amout"), "{err}");
        let err = parse(
            r#"{"sections": [{"groups": [{"point_queries": {"op_count": 1,
            "selection": {"zipf": {"s": 0.9, "skew": 1}}}}]}]}"#,
        )
        .unwrap_err();
        assert!(err.contains("selection.zipf"), "{err}");
        assert!(err.contains("skew"), "{err}");
        let err = parse(
            r#"{"sections": [{"groups": [{"inserts": {"op_count": 1,
            "key": {"uniform": {"len": 3, "character_set": "hex"}}}}]}]}"#,
        )
        .unwrap_err();
        assert!(err.contains("key.uniform.character_set"), "{err}");
        let err = parse(r#"{"sections": [{"groups": [{"inserts": {"op_count": 1, "lifetime": "1s"}}]}]}"#).unwrap_err();
        assert!(err.contains("sections[0].groups[0].inserts.lifetime"), "{err}");
        let err = parse(r#"{"sections": [{"lifetime": {"uniform": {"min": 1}}, "groups": []}]}"#).unwrap_err();
        assert!(err.contains("sections[0].lifetime.uniform"), "{err}");
    }
}
