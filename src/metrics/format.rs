//! Human formatting of durations, rates and byte counts.

/// A latency in nanoseconds with an automatic unit: "87 ns", "12.34 us", "1.23 ms", "2.50 s".
pub fn duration_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.2} us", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// A rate as a whole number ("17819"), or with decimals when below 100.
pub fn rate(per_sec: f64) -> String {
    if per_sec >= 100.0 {
        format!("{per_sec:.0}")
    } else {
        format!("{per_sec:.2}")
    }
}

/// A byte count with a decimal unit: "980 B", "12.3 kB", "4.56 MB", "1.23 GB".
pub fn bytes(n: f64) -> String {
    if n < 1e3 {
        format!("{n:.0} B")
    } else if n < 1e6 {
        format!("{:.1} kB", n / 1e3)
    } else if n < 1e9 {
        format!("{:.2} MB", n / 1e6)
    } else {
        format!("{:.2} GB", n / 1e9)
    }
}

/// A percentage with one decimal.
pub fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_switch_at_each_thousand() {
        assert_eq!(duration_ns(87.0), "87 ns");
        assert_eq!(duration_ns(999.0), "999 ns");
        assert_eq!(duration_ns(12_340.0), "12.34 us");
        assert_eq!(duration_ns(1_230_000.0), "1.23 ms");
        assert_eq!(duration_ns(2_500_000_000.0), "2.50 s");
    }

    #[test]
    fn byte_units() {
        assert_eq!(bytes(980.0), "980 B");
        assert_eq!(bytes(12_345.0), "12.3 kB");
        assert_eq!(bytes(4_560_000.0), "4.56 MB");
        assert_eq!(bytes(1.23e9), "1.23 GB");
    }

    #[test]
    fn rates() {
        assert_eq!(rate(17819.4), "17819");
        assert_eq!(rate(12.345), "12.35");
        assert_eq!(percent(0.922), "92.2%");
    }
}
