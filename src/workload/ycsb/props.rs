//! YCSB workload files: Java properties text, and the CoreWorkload properties read
//! from it with YCSB's defaults. A property kvmark does not know is named in a warning
//! (YCSB ignores a misspelt one silently); one it knows but that has no meaning here
//! (the table name, measurement settings) is named in a note.

use std::collections::BTreeMap;
use std::path::Path;

/// Every property kvmark reads, with what it means. YCSB-IVS adds `extendproportion`
/// and `extendfieldlength`.
pub const KNOWN: [&str; 34] = [
    "workload",
    "recordcount",
    "operationcount",
    "insertstart",
    "insertcount",
    "readproportion",
    "updateproportion",
    "insertproportion",
    "scanproportion",
    "readmodifywriteproportion",
    "extendproportion",
    "extendfieldlength",
    "requestdistribution",
    "hotspotdatafraction",
    "hotspotopnfraction",
    "exponential.percentile",
    "exponential.frac",
    "fieldcount",
    "fieldlength",
    "minfieldlength",
    "fieldlengthdistribution",
    "readallfields",
    "writeallfields",
    "minscanlength",
    "maxscanlength",
    "scanlengthdistribution",
    "insertorder",
    "zeropadding",
    "fieldnameprefix",
    "threadcount",
    "target",
    "maxexecutiontime",
    "table",
    "dotransactions",
];

/// YCSB client and measurement properties that mean nothing to kvmark (it has its own
/// measurement and output flags): accepted, and named in a note.
pub const NO_EFFECT: [&str; 12] = [
    "db",
    "exporter",
    "exportfile",
    "measurementtype",
    "measurement.interval",
    "histogram.buckets",
    "hdrhistogram.percentiles",
    "status.interval",
    "readallfieldsbyname",
    "core_workload_insertion_retry_limit",
    "core_workload_insertion_retry_interval",
    "dataintegrity",
];

/// Properties in the order they were set; later settings win.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Properties {
    values: BTreeMap<String, String>,
}

impl Properties {
    /// Parses Java properties text: `key=value`, `key: value` or `key value`; `#`
    /// and `!` start comment lines.
    pub fn parse(text: &str) -> Properties {
        let mut p = Properties::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let cut = line.find(['=', ':', ' ', '\t']).unwrap_or(line.len());
            let key = line[..cut].trim();
            let rest = line[cut..].trim_start();
            let value = rest
                .strip_prefix('=')
                .or_else(|| rest.strip_prefix(':'))
                .unwrap_or(rest)
                .trim();
            p.set(key, value);
        }
        p
    }

    /// Sets one property.
    pub fn set(&mut self, key: &str, value: &str) {
        self.values.insert(key.to_string(), value.to_string());
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Whether any property is one of YCSB's CoreWorkload properties (how a file
    /// without an extension is told apart from other text).
    pub fn has_core_property(&self) -> bool {
        self.values.keys().any(|k| KNOWN.contains(&k.as_str()))
    }

    /// Warnings for the properties kvmark does not use.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for k in self.values.keys() {
            if NO_EFFECT.contains(&k.as_str()) {
                out.push(format!(
                    "YCSB property '{k}' has no effect in kvmark (it sets YCSB's client or measurements; \
                     see kvmark --help for kvmark's own)"
                ));
            } else if !KNOWN.contains(&k.as_str()) {
                out.push(format!(
                    "unknown YCSB property '{k}' is ignored (YCSB ignores it silently; check its spelling)"
                ));
            }
        }
        out
    }

    fn parsed<T: std::str::FromStr>(&self, key: &str, default: T, what: &str) -> Result<T, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| format!("property {key}={v}: give {what}")),
        }
    }

    /// A whole number (default `default`).
    pub fn count(&self, key: &str, default: u64) -> Result<u64, String> {
        self.parsed(key, default, "a whole number")
    }

    /// A number (default `default`).
    pub fn number(&self, key: &str, default: f64) -> Result<f64, String> {
        let v: f64 = self.parsed(key, default, "a number")?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("property {key}={v}: give a number of 0 or more"));
        }
        Ok(v)
    }

    /// A boolean (Java's `Boolean.parseBoolean`: "true" in any case is true).
    pub fn flag(&self, key: &str, default: bool) -> bool {
        self.get(key).map_or(default, |v| v.eq_ignore_ascii_case("true"))
    }

    /// A word (default `default`).
    pub fn word<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.get(key).unwrap_or(default)
    }
}

/// Reads `path` as YCSB properties, with `overrides` (`-p NAME=VALUE`) over it.
pub fn read(path: &Path, overrides: &[(String, String)]) -> Result<Properties, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read YCSB workload {}: {e}", path.display()))?;
    let mut p = Properties::parse(&text);
    for (k, v) in overrides {
        p.set(k, v);
    }
    Ok(p)
}

/// Whether `path` reads as a YCSB workload file: a name without an extension (as
/// YCSB's `workloads/workloada`), holding text with at least one CoreWorkload property.
/// (`-P` names a YCSB file of any name.)
pub fn looks_like(path: &Path) -> bool {
    if path.extension().is_some() {
        return false;
    }
    match std::fs::read(path) {
        Ok(bytes) if bytes.len() < (1 << 20) => match std::str::from_utf8(&bytes) {
            Ok(text) => Properties::parse(text).has_core_property(),
            Err(_) => false,
        },
        _ => false,
    }
}

/// Splits a `-p NAME=VALUE` argument.
pub fn split_override(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "-p {arg}: give a YCSB property as NAME=VALUE, e.g. -p recordcount=1000"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_properties_read() {
        let p =
            Properties::parse("# c\n! c\nrecordcount=10\noperationcount : 20\nfieldcount 3\n  readallfields = TRUE \n");
        assert_eq!(p.count("recordcount", 0).unwrap(), 10);
        assert_eq!(p.count("operationcount", 0).unwrap(), 20);
        assert_eq!(p.count("fieldcount", 0).unwrap(), 3);
        assert!(p.flag("readallfields", false));
        assert!(p.warnings().is_empty());
        let q = Properties::parse("recordcont=5\ntable=t\n");
        let w = q.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("'recordcont'"), "{w:?}");
        let r = Properties::parse("exporter=x\n");
        assert!(r.warnings()[0].contains("no effect"));
        assert!(q.count("recordcont", 0).is_ok());
        assert!(
            Properties::parse("recordcount=ten")
                .count("recordcount", 0)
                .unwrap_err()
                .contains("recordcount=ten")
        );
    }
}
