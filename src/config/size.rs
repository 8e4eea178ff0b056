//! Sizes as config files and engine options write them: a whole number of bytes,
//! optionally followed by K, M, G or T meaning powers of 1024 (`64M` = 64 MiB).
//!
//! Engine-agnostic on purpose, so engines can parse their own size knobs with it.

use std::fmt;

/// Why a size did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeError(pub String);

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SizeError {}

/// Parses `64M`, `4k`, `1T` or `4096` into bytes. There is no `B` suffix and no
/// fraction: `64MB` and `1.5G` are errors, never a silent default.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    if digits.is_empty() {
        return Err(SizeError(format!(
            "'{text}' is not a size: write a whole number of bytes, optionally with K, M, G or T (powers of 1024), e.g. 64M"
        )));
    }
    let shift = match suffix {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        other => {
            return Err(SizeError(format!(
                "'{text}': unknown size suffix '{other}' (use K, M, G or T, powers of 1024, with no B: e.g. 64M)"
            )));
        }
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| SizeError(format!("'{text}' is too large for a size")))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| SizeError(format!("'{text}' is too large for a size")))
}

/// True for a value written like a size with a unit: digits, then K, M, G or T with
/// or without a trailing B or iB (`64M`, `64MB`, `4KiB`), or a bare B (`512B`). Such
/// values must parse with [`parse_size`], so `64MB` is an error instead of a silent
/// default; everything else (plain numbers, durations such as `100us`, names, option
/// strings) is left alone.
pub fn looks_like_size(text: &str) -> bool {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 || digits_end == t.len() {
        return false;
    }
    let unit = t[digits_end..].to_ascii_lowercase();
    let mut chars = unit.chars();
    match chars.next() {
        Some('k' | 'm' | 'g' | 't') => matches!(chars.as_str(), "" | "b" | "ib"),
        Some('b') => chars.as_str().is_empty(),
        _ => false,
    }
}

/// An engine option value as engines receive it: a value written like a size with a
/// unit (`64M`) must be a valid size and becomes bytes; anything else is unchanged.
pub fn normalize_option(value: &str) -> Result<String, String> {
    if looks_like_size(value) {
        parse_size(value).map(|n| n.to_string()).map_err(|e| e.to_string())
    } else {
        Ok(value.to_string())
    }
}

/// Reads `--size-classes`' bounds: comma-separated byte counts, each a plain number
/// or with a binary suffix (K, M, G, T: 4K is 4096).
pub fn parse_size_classes(text: &str) -> Result<crate::metrics::SizeClasses, String> {
    let bounds = text
        .split(',')
        .map(|item| parse_size(item).map_err(|e| e.0))
        .collect::<Result<Vec<u64>, String>>()?;
    crate::metrics::SizeClasses::new(bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_powers_of_1024() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size(" 0 "), Ok(0));
    }

    #[test]
    fn malformed_sizes_are_errors() {
        for bad in [
            "64MB",
            "1.5G",
            "",
            "M",
            "-1",
            "12Q",
            "99999999999999999999",
            "20000000T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad} parsed");
        }
        assert!(parse_size("64MB").unwrap_err().0.contains("unknown size suffix 'MB'"));
    }

    #[test]
    fn only_size_units_look_like_sizes() {
        for yes in ["64M", "64MB", "4KiB", "4k", "512B", "1t"] {
            assert!(looks_like_size(yes), "{yes}");
        }
        for no in [
            "64",
            "kNoCompression",
            "{block_cache=64M}",
            "bloomfilter:10:false",
            "1.5",
            "0x10",
            "M",
            "100us",
            "10s",
            "5ms",
            "10x",
        ] {
            assert!(!looks_like_size(no), "{no}");
        }
    }

    #[test]
    fn size_classes_read_suffixes_and_refuse_unusable_bounds_with_the_reason() {
        assert_eq!(
            parse_size_classes("256,4K,65536").unwrap().bounds(),
            &[256, 4096, 65536]
        );
        for (text, why) in [
            ("", "'' is not a size"),
            ("256,128", "rise strictly: 256 is followed by 128"),
            ("256,256", "rise strictly"),
            ("12x", "unknown size suffix"),
            ("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16", "at most 15 bounds"),
        ] {
            let err = parse_size_classes(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
