//! One plotters coordinate type for every axis kind (linear, logarithmic, percentile
//! nines, categories), so a panel's scale is chosen at run time, with ticks at
//! round values of the axis's unit.

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

use super::figure::{Axis, Scale, Unit, tick_label};

/// A value range mapped to pixels, with its ticks.
#[derive(Debug, Clone)]
pub struct AxisMap {
    /// The scale.
    pub scale: Scale,
    /// The unit (for tick labels).
    pub unit: Unit,
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    minor: Vec<f64>,
    labels: Vec<String>,
}

impl AxisMap {
    /// The map of `axis` fitted to `values`; `categories` names a category axis's
    /// positions. `zero` starts a linear axis of positive values at zero.
    pub fn fit(axis: &Axis, values: &[f64], categories: &[String], zero: bool) -> AxisMap {
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let (mut lo, mut hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
        let mut map = AxisMap {
            scale: axis.scale,
            unit: axis.unit,
            lo: 0.0,
            hi: 1.0,
            ticks: Vec::new(),
            minor: Vec::new(),
            labels: categories.to_vec(),
        };
        match axis.scale {
            Scale::Category => {
                let n = categories.len().max(1);
                map.lo = -0.5;
                map.hi = n as f64 - 0.5;
                map.ticks = (0..n).map(|i| i as f64).collect();
            }
            Scale::Log => {
                let positive = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
                let (plo, phi) = positive.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
                let (plo, phi) = if plo.is_finite() { (plo, phi) } else { (1.0, 10.0) };
                let dlo = plo.log10().floor();
                let mut dhi = phi.log10().ceil();
                if dhi <= dlo {
                    dhi = dlo + 1.0;
                }
                map.lo = 10f64.powf(dlo);
                map.hi = 10f64.powf(dhi);
                let decades = (dhi - dlo) as i32;
                let step = (decades / 8 + 1).max(1);
                let mut d = dlo as i32;
                while d <= dhi as i32 {
                    map.ticks.push(10f64.powi(d));
                    d += step;
                }
                for d in dlo as i32..dhi as i32 {
                    for m in 2..10 {
                        let v = f64::from(m) * 10f64.powi(d);
                        if decades <= 2 && (m == 2 || m == 5) {
                            map.ticks.push(v);
                        } else {
                            map.minor.push(v);
                        }
                    }
                }
                map.ticks.sort_by(f64::total_cmp);
            }
            Scale::Linear => {
                if !lo.is_finite() {
                    (lo, hi) = (0.0, 1.0);
                }
                if zero && lo > 0.0 {
                    lo = 0.0;
                }
                if zero && hi < 0.0 {
                    hi = 0.0;
                }
                if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
                    // A flat series: centre it in a unit-wide range.
                    let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
                    (lo, hi) = if zero && lo >= 0.0 {
                        (0.0, hi + pad)
                    } else {
                        (lo - pad, hi + pad)
                    };
                }
                if axis.unit != Unit::Seconds {
                    hi += (hi - lo) * 0.05;
                }
                let step = nice_step((hi - lo) / 5.0, axis.unit);
                let first = (lo / step).ceil() * step;
                let mut v = first;
                while v <= hi + step * 1e-9 {
                    map.ticks.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                    v += step;
                }
                map.lo = lo;
                map.hi = hi;
            }
        }
        map
    }

    fn tr(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Log => v.max(f64::MIN_POSITIVE).log10(),
            _ => v,
        }
    }

    /// The smallest value on the axis (where bars start).
    pub fn low(&self) -> f64 {
        match self.scale {
            Scale::Linear if self.lo <= 0.0 && self.hi >= 0.0 => 0.0,
            _ => self.lo,
        }
    }

    /// The largest value on the axis.
    pub fn high(&self) -> f64 {
        self.hi
    }

    /// `v` held inside the axis, so a point off a log axis's scale still draws.
    pub fn clamp(&self, v: f64) -> f64 {
        v.clamp(self.lo, self.hi)
    }

    /// The tick label of `v`.
    pub fn label(&self, v: f64) -> String {
        match self.scale {
            Scale::Category => self
                .labels
                .get(v.round().max(0.0) as usize)
                .cloned()
                .unwrap_or_default(),
            _ => tick_label(self.unit, v),
        }
    }
}

/// A round step (1, 2, 2.5 or 5 times a power of ten; whole numbers for counts).
fn nice_step(raw: f64, unit: Unit) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let base = if unit == Unit::Bytes || unit == Unit::BytesPerSec {
        // Powers of two read better for bytes.
        let p = 2f64.powf(raw.log2().ceil());
        return p.max(1.0);
    } else {
        10f64.powf(raw.log10().floor())
    };
    let m = raw / base;
    let step = if m <= 1.0 {
        base
    } else if m <= 2.0 {
        2.0 * base
    } else if m <= 2.5 {
        2.5 * base
    } else if m <= 5.0 {
        5.0 * base
    } else {
        10.0 * base
    };
    match unit {
        // Whole nines read as 90%, 99%, 99.9%.
        Unit::Nines if raw <= 2.0 => 1.0,
        Unit::Count | Unit::Nines => step.max(1.0),
        _ => step,
    }
}

impl Ranged for AxisMap {
    type ValueType = f64;
    type FormatOption = NoDefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let (a, b) = (self.tr(self.lo), self.tr(self.hi));
        let t = if b > a { (self.tr(*value) - a) / (b - a) } else { 0.5 };
        let px = f64::from(limit.0) + t * f64::from(limit.1 - limit.0);
        px.clamp(-1e6, 1e6).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let max = hint.max_num_points().max(1);
        let mut pts: Vec<f64> = if hint.weight().allow_light_points() && !self.minor.is_empty() {
            self.ticks.iter().chain(&self.minor).copied().collect()
        } else {
            self.ticks.clone()
        };
        if pts.len() > max && !hint.weight().allow_light_points() {
            let stride = pts.len().div_ceil(max);
            pts = pts.into_iter().step_by(stride).collect();
        }
        pts.retain(|v| *v >= self.lo && *v <= self.hi);
        pts
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for AxisMap {
    fn format_ext(&self, value: &f64) -> String {
        self.label(*value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_axes_start_at_zero_and_tick_round_values() {
        let a = AxisMap::fit(&Axis::linear("x", Unit::PerSec), &[120.0, 980.0], &[], true);
        assert_eq!(a.low(), 0.0);
        assert!(a.high() >= 980.0);
        assert_eq!(a.key_points(10usize)[..3], [0.0, 250.0, 500.0]);
    }

    #[test]
    fn flat_series_still_get_a_range() {
        let a = AxisMap::fit(&Axis::linear("x", Unit::Count), &[0.0, 0.0], &[], true);
        assert!(a.high() > 0.0);
        let b = AxisMap::fit(&Axis::linear("x", Unit::Count), &[7.0], &[], false);
        assert!(b.low() < 7.0 && b.high() > 7.0);
    }

    #[test]
    fn log_axes_span_whole_decades() {
        let a = AxisMap::fit(&Axis::log("lat", Unit::Nanos), &[350.0, 42_000.0, -1.0], &[], false);
        assert_eq!((a.low(), a.high()), (100.0, 100_000.0));
        let ticks = a.key_points(20usize);
        assert!(ticks.contains(&1000.0) && ticks.contains(&10_000.0));
        assert_eq!(a.label(1000.0), "1 us");
        assert!(a.map(&1000.0, (0, 300)) == 100);
    }

    #[test]
    fn categories_label_their_positions() {
        let cats = vec!["t1".to_string(), "t2".to_string()];
        let a = AxisMap::fit(&Axis::category("cell"), &[], &cats, false);
        assert_eq!(a.key_points(10usize), vec![0.0, 1.0]);
        assert_eq!(a.label(1.0), "t2");
    }
}
