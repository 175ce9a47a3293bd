//! One chart axis: its scale (linear, decades, or powers of two for message sizes), its range,
//! the ticks it shows and how they are written. [`super::draw`] places every point in the
//! axis' own units (the logarithm on a log axis) and lets plotters draw a linear range with
//! the ticks chosen here, so tick labels read "1 KiB" or "100" rather than plotters' defaults.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// A scale with its range and ticks, all in axis units.
pub struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

#[derive(Clone, Copy, PartialEq)]
enum Scale {
    Linear,
    /// log10 of the value.
    Decades,
    /// log2 of a size in bytes.
    Bytes,
}

impl Axis {
    /// An axis that fits `values` (data units). `percent` makes a linear axis run from 0 to at
    /// least 100.
    pub fn new(log: bool, bytes: bool, percent: bool, values: Vec<f64>) -> Axis {
        let scale = match (log, bytes) {
            (false, _) => Scale::Linear,
            (true, false) => Scale::Decades,
            (true, true) => Scale::Bytes,
        };
        let mut axis = Axis {
            scale,
            lo: 0.0,
            hi: 1.0,
            bold: vec![],
            light: vec![],
        };
        let placed: Vec<f64> = values.iter().filter_map(|&v| axis.to_axis(v)).collect();
        let (min, max) = placed
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        match scale {
            Scale::Linear => axis.fit_linear(min, max, percent),
            Scale::Decades => axis.fit_decades(min, max),
            Scale::Bytes => axis.fit_bytes(min, max),
        }
        axis
    }

    /// `v` in axis units, or `None` when the scale cannot place it (not finite, or not
    /// positive on a log scale).
    pub fn to_axis(&self, v: f64) -> Option<f64> {
        if !v.is_finite() {
            return None;
        }
        match self.scale {
            Scale::Linear => Some(v),
            Scale::Decades if v > 0.0 => Some(v.log10()),
            Scale::Bytes if v > 0.0 => Some(v.log2()),
            _ => None,
        }
    }

    /// Where `v` (axis units) lies between the ends of the axis, 0 to 1.
    pub fn fraction(&self, v: f64) -> f64 {
        (v - self.lo) / (self.hi - self.lo)
    }

    /// The plotters coordinate for this axis.
    pub fn coord(&self) -> AxisCoord {
        AxisCoord {
            lo: self.lo,
            hi: self.hi,
            bold: self.bold.clone(),
            light: self.light.clone(),
        }
    }

    /// How the tick at `v` (axis units) is written.
    pub fn label(&self, v: f64) -> String {
        match self.scale {
            Scale::Linear => format_number(v),
            Scale::Decades => format_number(10f64.powf(v)),
            Scale::Bytes => format_bytes(2f64.powf(v).round() as u64),
        }
    }

    fn fit_linear(&mut self, min: f64, max: f64, percent: bool) {
        let (mut lo, mut hi) = if min.is_finite() {
            (min, max)
        } else {
            (0.0, 1.0)
        };
        if percent || lo >= 0.0 {
            lo = 0.0;
        }
        if percent {
            hi = hi.max(100.0);
        }
        if hi <= lo {
            hi = lo + 1.0;
        }
        let step = nice_step((hi - lo) / 8.0);
        self.lo = (lo / step).floor() * step;
        self.hi = (hi / step).ceil() * step;
        if percent && self.hi < 105.0 {
            self.hi += step / 2.0;
        }
        self.bold = ticks(self.lo, self.hi, step);
        self.light = ticks(self.lo, self.hi, step / 5.0);
    }

    fn fit_decades(&mut self, min: f64, max: f64) {
        let (lo, hi) = if min.is_finite() {
            (min.floor(), max.ceil())
        } else {
            (0.0, 1.0)
        };
        self.lo = lo;
        self.hi = if hi > lo { hi } else { lo + 1.0 };
        let span = (self.hi - self.lo) as i32;
        let every = if span > 10 { 2 } else { 1 };
        let mults: &[f64] = if span <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        for decade in self.lo as i32..=self.hi as i32 {
            for m in 1..10 {
                let v = (m as f64).log10() + decade as f64;
                if v > self.hi + 1e-9 {
                    break;
                }
                if decade % every == 0 && mults.contains(&(m as f64)) {
                    self.bold.push(v);
                } else {
                    self.light.push(v);
                }
            }
        }
    }

    fn fit_bytes(&mut self, min: f64, max: f64) {
        let (lo, hi) = if min.is_finite() {
            (min.floor(), max.ceil())
        } else {
            (0.0, 10.0)
        };
        self.lo = lo;
        self.hi = if hi > lo { hi } else { lo + 1.0 };
        let span = self.hi - self.lo;
        // Steps that keep 1 KiB and 1 MiB (2^10, 2^20) among the ticks.
        let step = [1.0, 2.0, 5.0, 10.0]
            .into_iter()
            .find(|s| span / s <= 11.0)
            .unwrap_or(10.0);
        self.bold = ticks((self.lo / step).ceil() * step, self.hi, step);
        self.light = ticks(self.lo, self.hi, 1.0);
    }
}

/// A linear plotters coordinate over axis units whose ticks are the ones [`Axis`] chose.
pub struct AxisCoord {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ranged for AxisCoord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let fraction = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (fraction * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// The round step (1, 2, 2.5 or 5 times a power of ten) at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude)
}

/// `lo`, `lo + step`, ... up to `hi`.
fn ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let n = ((hi - lo) / step + 1e-9).floor() as usize;
    (0..=n).map(|i| lo + i as f64 * step).collect()
}

/// A number as a person writes it on an axis: "0", "2.5", "1000", "1e+06".
pub fn format_number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        let exp = a.log10().floor() as i32;
        let mantissa = v / 10f64.powi(exp);
        return format!("{}e{exp}", trim_decimals(mantissa, 2));
    }
    let decimals = if a >= 100.0 {
        0
    } else if a >= 1.0 {
        2
    } else {
        4
    };
    trim_decimals(v, decimals)
}

fn trim_decimals(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A byte count in binary units when it is a whole number of them: "512 B", "4 KiB", "1 MiB".
pub fn format_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size && n.is_multiple_of(size) {
            return format!("{} {unit}", n / size);
        }
    }
    if n >= 1 << 10 && n.is_multiple_of(64) {
        return format!("{} KiB", trim_decimals(n as f64 / 1024.0, 2));
    }
    format!("{n} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ticks_read_as_binary_units() {
        let axis = Axis::new(
            true,
            true,
            false,
            vec![0.0, 1.0, 8.0, 1024.0, 8.0 * 1024.0 * 1024.0],
        );
        let labels: Vec<String> = axis.bold.iter().map(|&v| axis.label(v)).collect();
        assert!(labels.contains(&"1 KiB".to_string()), "{labels:?}");
        assert!(labels.contains(&"1 MiB".to_string()), "{labels:?}");
        assert_eq!(
            axis.to_axis(0.0),
            None,
            "a 0-byte point cannot sit on a log axis"
        );
    }

    #[test]
    fn decades_and_linear_ticks_are_round() {
        let axis = Axis::new(true, false, false, vec![3.0, 40.0]);
        let labels: Vec<String> = axis.bold.iter().map(|&v| axis.label(v)).collect();
        assert_eq!(labels, ["1", "2", "5", "10", "20", "50", "100"]);
        let pct = Axis::new(false, false, true, vec![35.0, 90.0]);
        assert_eq!(pct.lo, 0.0);
        assert!(pct.hi >= 100.0);
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(100), "100 B");
        assert_eq!(format_number(1e7), "1e7");
    }
}
