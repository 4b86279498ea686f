//! The regression rule, shared by the test gate and `kernelgate compare`, so the two never disagree.
//!
//! A change is called only when it is both beyond the tolerance *and* beyond the
//! measurement noise of the two runs (criterion.rs's rule): `change = now/base − 1`,
//! `noise = √(noise_now² + noise_base²)` with each side's relative 95% CI half-width of
//! the median.

use serde::{Deserialize, Serialize};

/// What a comparison of two medians says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Change {
    /// Slower beyond tolerance and noise: a regression.
    Slow,
    /// Faster beyond tolerance and noise.
    Fast,
    /// Within tolerance.
    Same,
    /// Beyond tolerance but within the noise: no call can be made.
    Ambiguous,
}

/// A comparison of a measurement with a reference measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// now / base.
    pub ratio: f64,
    /// Combined relative noise of the two medians.
    pub noise: f64,
    /// Tolerance as a fraction (0.05 = 5%).
    pub tolerance: f64,
    /// The call.
    pub change: Change,
}

/// Compares median `now` (noise `now_noise`) with `base` (noise `base_noise`) at `tolerance` (fraction).
pub fn compare(now: f64, now_noise: f64, base: f64, base_noise: f64, tolerance: f64) -> Comparison {
    let ratio = now / base;
    let noise = (now_noise.powi(2) + base_noise.powi(2)).sqrt();
    let change = ratio - 1.0;
    let c = if change.abs() <= tolerance {
        Change::Same
    } else if change.abs() <= noise {
        Change::Ambiguous
    } else if change > 0.0 {
        Change::Slow
    } else {
        Change::Fast
    };
    Comparison {
        ratio,
        noise,
        tolerance,
        change: c,
    }
}
