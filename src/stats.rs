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
    /// (1.96 · 1.2533 · 1.4826 · MAD / √n / median), raised to [`mode_distance`] when the
    /// samples hold two modes ([`Stats::modes`]); the noise the gate uses.
    pub noise: f64,
    /// The medians of the two clusters, ms, when the samples fall into two separated modes
    /// ([`modes`]): the median then lands in either from run to run, so a change no larger
    /// than the distance between them cannot be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<[f64; 2]>,
    /// With [`modes`](Self::modes), where the lower cluster is sharp (its MAD at most
    /// [`LOW_SPREAD_MAX`] of its median): the lower mode's median (ms) and its relative 95% CI
    /// half-width over the lower cluster's samples alone (the MAD rule of
    /// [`median_noise`]). Two runs that both hold two modes are compared on these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<[f64; 2]>,
}

/// Smallest relative gap between two modes that [`modes`] reports.
pub const MODE_GAP_MIN: f64 = 0.03;
/// Smallest share of the samples the smaller mode must hold (and at least 2 samples).
pub const MODE_SHARE_MIN: f64 = 0.1;
/// How many times wider than either cluster's own spread (its MAD over its median, floored at
/// 0.1%) the gap between the modes must be.
pub const MODE_SEPARATION: f64 = 5.0;

/// Widest lower cluster (its MAD over its median) whose median [`Stats::low`] reports. A broad
/// lower cluster is no fixed speed to compare: `gemm::cuda::m2048_n512_k4096_bf16` on H100s in
/// session 24 had lower clusters 1.2–1.9% wide whose medians ran from 18.3 to 20.6 µs between
/// runs and machines (the kernel unchanged), so comparing them called an 11% "regression";
/// session 22's 4 GB norms had lower clusters of 0.1%.
pub const LOW_SPREAD_MAX: f64 = 0.01;

/// Fewest samples for the dense-sample rule of [`modes`].
pub const DENSE_MIN_SAMPLES: usize = 100;
/// Smallest share of the samples each cluster must hold under the dense-sample rule.
pub const DENSE_SHARE_MIN: f64 = 0.2;
/// Under the dense-sample rule, the most samples the valley between the modes may hold, as a
/// share of what as wide a window holds around either mode.
pub const DENSE_VALLEY: f64 = 0.5;

/// Two separated modes in `sorted` samples, as the medians of the lower and the upper cluster.
///
/// First the gap rule: the widest relative gap between neighbouring samples that leaves at
/// least [`MODE_SHARE_MIN`] of them (and 2) on each side, when it is at least [`MODE_GAP_MIN`]
/// and [`MODE_SEPARATION`] times either cluster's own spread. Failing that, with at least
/// [`DENSE_MIN_SAMPLES`] samples, the dense-sample rule: the split that leaves the least squared
/// deviation within the two clusters (each at least [`DENSE_SHARE_MIN`] of the samples), when
/// the clusters' medians are at least [`MODE_GAP_MIN`] apart and the samples thin out between
/// them: a window a quarter of that distance wide, centred on the split, holds at most
/// [`DENSE_VALLEY`] of what it holds centred on either median (a tail that only thins out,
/// like exponential jitter, has no such valley). A few samples in the valley close every
/// neighbour gap once there are thousands of them: a fresh H100 (GPU-2c7e77be, session 24) timed
/// `gemm::cuda::m2048_n512_k4096_bf16` 2000 times in modes at 20.6 and 24.9 µs (45% slow) with
/// 13 samples between them, and the gap rule saw one mode, so its median (21.6 against a
/// baseline of 19.3) was called a regression with the kernel unchanged. `None`: one mode (or
/// fewer than 4 samples).
///
/// Seen on two H200s (session 22, quack suite, 4.3 GB tensors): every family at 524288×4096 ran
/// in two modes 8–12% apart sample by sample (`softmax`: 2.13 or 2.35 ms), the share of each mode
/// varying from 27% to 65% between the machines, so the median moved by 11% with the kernel
/// unchanged.
pub fn modes(sorted: &[f64]) -> Option<[f64; 2]> {
    mode_split(sorted).map(|i| cluster_medians(sorted, i))
}

/// How far apart two modes are, relative to the lower one: `hi / lo − 1`. A median that lands
/// in the upper mode against a baseline in the lower one reads exactly that much slower, so a
/// change within it cannot be called. (Until session 26 the distance was taken over the
/// median, `(hi − lo) / median`, which is smaller when the median sits in the upper mode: an
/// H200 whose 4 GB `rmsnorm` ran at 2.27 ms (modes 2.02 / 2.27) read 1.119× against baselines
/// of 2.02–2.04 ms with a noise of 10.9%, and was called a regression with the kernel
/// unchanged.) Zero for a non-positive lower mode.
pub fn mode_distance(lo: f64, hi: f64) -> f64 {
    if lo > 0.0 {
        (hi / lo - 1.0).max(0.0)
    } else {
        0.0
    }
}

/// The medians of `sorted[..i]` and `sorted[i..]`.
fn cluster_medians(sorted: &[f64], i: usize) -> [f64; 2] {
    [
        percentile(&sorted[..i], 50.0),
        percentile(&sorted[i..], 50.0),
    ]
}

/// The median of `sorted` samples and their median absolute deviation from it (unscaled).
pub fn median_mad(sorted: &[f64]) -> (f64, f64) {
    let m = percentile(sorted, 50.0);
    let mut dev: Vec<f64> = sorted.iter().map(|x| (x - m).abs()).collect();
    dev.sort_by(f64::total_cmp);
    (m, percentile(&dev, 50.0))
}

/// A cluster's spread: its MAD over its median, floored at 0.1%.
fn cluster_spread(c: &[f64]) -> f64 {
    let (m, mad) = median_mad(c);
    (mad / m).max(0.001)
}

/// Where [`modes`] splits `sorted`: the index of the upper cluster's first sample.
fn mode_split(sorted: &[f64]) -> Option<usize> {
    gap_split(sorted).or_else(|| dense_split(sorted))
}

/// The dense-sample rule of [`modes`].
fn dense_split(sorted: &[f64]) -> Option<usize> {
    let n = sorted.len();
    let side = ((n as f64 * DENSE_SHARE_MIN).ceil() as usize).max(2);
    if n < DENSE_MIN_SAMPLES || n < 2 * side || sorted[0] <= 0.0 {
        return None;
    }
    // Least within-cluster squared deviation, on samples relative to the median (prefix sums).
    let m = percentile(sorted, 50.0);
    let mut sum = vec![0.0f64; n + 1];
    let mut sq = vec![0.0f64; n + 1];
    for (k, x) in sorted.iter().enumerate() {
        let y = x / m - 1.0;
        sum[k + 1] = sum[k] + y;
        sq[k + 1] = sq[k] + y * y;
    }
    let within = |i: usize| {
        let (a, b) = (sum[i], sum[n] - sum[i]);
        (sq[i] - a * a / i as f64) + (sq[n] - sq[i] - b * b / (n - i) as f64)
    };
    let i = (side..=n - side).min_by(|&a, &b| within(a).total_cmp(&within(b)))?;
    let (lo, hi) = (
        percentile(&sorted[..i], 50.0),
        percentile(&sorted[i..], 50.0),
    );
    if hi / lo - 1.0 < MODE_GAP_MIN {
        return None;
    }
    // A valley, not a tail: a window a quarter of the modes' distance wide on each side of the
    // split holds at most DENSE_VALLEY of what the same window holds around either mode.
    let h = (hi - lo) / 4.0;
    let count =
        |c: f64| sorted.partition_point(|&x| x <= c + h) - sorted.partition_point(|&x| x < c - h);
    let valley = count(0.5 * (sorted[i - 1] + sorted[i])) as f64;
    (valley <= DENSE_VALLEY * count(lo).min(count(hi)) as f64).then_some(i)
}

/// The gap rule of [`modes`].
fn gap_split(sorted: &[f64]) -> Option<usize> {
    let n = sorted.len();
    let side = ((n as f64 * MODE_SHARE_MIN).ceil() as usize).max(2);
    if n < 2 * side || sorted[0] <= 0.0 {
        return None;
    }
    let (i, gap) = (side..=n - side)
        .map(|i| (i, sorted[i] / sorted[i - 1] - 1.0))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (lo, hi) = (&sorted[..i], &sorted[i..]);
    let spread = cluster_spread(lo).max(cluster_spread(hi));
    (gap >= MODE_GAP_MIN && gap >= MODE_SEPARATION * spread).then_some(i)
}

/// The median of `sorted` samples and the MAD-based relative CI half-width of that median.
fn median_and_noise(sorted: &[f64]) -> [f64; 2] {
    let (m, mad) = median_mad(sorted);
    [m, median_noise(m, mad, sorted.len())]
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
        let (median, mad) = median_mad(&s);
        let mean = s.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        let split = mode_split(&s);
        let modes = split.map(|i| cluster_medians(&s, i));
        // The lower mode stands in for the kernel's own speed only where it is a sharp mode.
        let low = split
            .filter(|&i| cluster_spread(&s[..i]) <= LOW_SPREAD_MAX)
            .map(|i| median_and_noise(&s[..i]));
        let noise = match modes {
            Some([lo, hi]) => median_noise(median, mad, n).max(mode_distance(lo, hi)),
            None => median_noise(median, mad, n),
        };
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
            noise,
            modes,
            low,
        })
    }
}
