//! Summary statistics over raw timing samples.

use serde::{Deserialize, Serialize};

/// Summary of a set of latency samples (milliseconds per launch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of samples.
    pub n: usize,
    /// Median.
    pub median_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
    /// Sample standard deviation (n − 1).
    pub std_ms: f64,
    /// Smallest sample.
    pub min_ms: f64,
    /// Largest sample.
    pub max_ms: f64,
    /// 5th percentile.
    pub p5_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad_ms: f64,
    /// Relative half-width of the ~95% confidence interval of the median
    /// (1.96 · 1.2533 · 1.4826 · MAD / √n / median); the noise the gate uses.
    pub noise: f64,
}

/// Linear-interpolated percentile (`q` in 0..=100) of sorted data.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "percentile of no samples");
    if sorted.len() == 1 {
        return sorted[0];
    }
    let pos = (q / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// Relative CI half-width of the median from its MAD, given n samples.
pub fn median_noise(median: f64, mad: f64, n: usize) -> f64 {
    if n == 0 || median <= 0.0 {
        return f64::INFINITY;
    }
    1.96 * 1.2533 * 1.4826 * mad / (n as f64).sqrt() / median
}

impl Stats {
    /// Summarises samples; `None` when there are none or any is not finite.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = percentile(&s, 50.0);
        let mean = s.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let mut dev: Vec<f64> = s.iter().map(|x| (x - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let mad = percentile(&dev, 50.0);
        Some(Stats {
            n,
            median_ms: median,
            mean_ms: mean,
            std_ms: var.sqrt(),
            min_ms: s[0],
            max_ms: s[n - 1],
            p5_ms: percentile(&s, 5.0),
            p95_ms: percentile(&s, 95.0),
            p99_ms: percentile(&s, 99.0),
            mad_ms: mad,
            noise: median_noise(median, mad, n),
        })
    }
}
