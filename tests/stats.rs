//! Summary statistics over timing samples.

use approx::assert_relative_eq;
use kernelgate::stats::{median_noise, modes, percentile, Stats, MODE_GAP_MIN};
use proptest::prelude::*;

/// 1.96 · 1.2533 · 1.4826: the 95% CI half-width of the median, in units of MAD / √n.
const K: f64 = 1.96 * 1.2533 * 1.4826;

#[test]
fn percentile_hand_computed() {
    let s = [1.0, 2.0, 3.0, 4.0, 5.0];
    assert_eq!(percentile(&s, 0.0), 1.0);
    assert_eq!(percentile(&s, 50.0), 3.0);
    assert_eq!(percentile(&s, 100.0), 5.0);
    assert_relative_eq!(percentile(&s, 5.0), 1.2, epsilon = 1e-12);
    assert_relative_eq!(percentile(&s, 25.0), 2.0, epsilon = 1e-12);
    assert_relative_eq!(percentile(&s, 95.0), 4.8, epsilon = 1e-12);
    assert_relative_eq!(percentile(&s, 99.0), 4.96, epsilon = 1e-12);
    // Out-of-range q clamps.
    assert_eq!(percentile(&s, -10.0), 1.0);
    assert_eq!(percentile(&s, 250.0), 5.0);
    let s = [10.0, 20.0];
    assert_eq!(percentile(&s, 50.0), 15.0);
    assert_eq!(percentile(&s, 25.0), 12.5);
    assert_eq!(percentile(&[7.0], 1.0), 7.0);
    assert_eq!(percentile(&[7.0], 99.0), 7.0);
    // Ten samples 0..9: p95 sits at position 8.55.
    let s: Vec<f64> = (0..10).map(f64::from).collect();
    assert_relative_eq!(percentile(&s, 95.0), 8.55, epsilon = 1e-12);
    assert_relative_eq!(percentile(&s, 50.0), 4.5, epsilon = 1e-12);
}

#[test]
#[should_panic(expected = "percentile of no samples")]
fn percentile_of_nothing_panics() {
    percentile(&[], 50.0);
}

#[test]
fn stats_odd_count() {
    let s = Stats::from_samples(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
    assert_eq!(s.n, 5);
    assert_eq!(s.median_ms, 3.0);
    assert_eq!(s.mean_ms, 3.0);
    assert_relative_eq!(s.std_ms, (10.0f64 / 4.0).sqrt(), epsilon = 1e-12);
    assert_eq!(s.min_ms, 1.0);
    assert_eq!(s.max_ms, 5.0);
    assert_relative_eq!(s.p5_ms, 1.2, epsilon = 1e-12);
    assert_relative_eq!(s.p95_ms, 4.8, epsilon = 1e-12);
    assert_relative_eq!(s.p99_ms, 4.96, epsilon = 1e-12);
    // |x − 3| = 2, 1, 0, 1, 2 → median 1.
    assert_eq!(s.mad_ms, 1.0);
    assert_relative_eq!(s.noise, K * 1.0 / 5f64.sqrt() / 3.0, epsilon = 1e-12);
    assert_relative_eq!(s.noise, 0.54291, epsilon = 1e-5);
}

#[test]
fn stats_even_count_with_outlier() {
    let s = Stats::from_samples(&[10.0, 1.0, 3.0, 2.0]).unwrap();
    assert_eq!(s.median_ms, 2.5);
    assert_eq!(s.mean_ms, 4.0);
    // deviations from the mean −3, −2, −1, 6: 50 / 3.
    assert_relative_eq!(s.std_ms, (50.0f64 / 3.0).sqrt(), epsilon = 1e-12);
    // |x − 2.5| = 1.5, 0.5, 0.5, 7.5 → median 1.0: robust to the outlier.
    assert_eq!(s.mad_ms, 1.0);
    assert_relative_eq!(s.noise, K * 1.0 / 2.0 / 2.5, epsilon = 1e-12);
    assert_relative_eq!(s.p5_ms, 1.15, epsilon = 1e-12);
    assert_relative_eq!(s.p95_ms, 8.95, epsilon = 1e-12);
}

#[test]
fn stats_single_and_constant() {
    let s = Stats::from_samples(&[2.0]).unwrap();
    assert_eq!(
        (s.n, s.median_ms, s.mean_ms, s.std_ms, s.mad_ms, s.noise),
        (1, 2.0, 2.0, 0.0, 0.0, 0.0)
    );
    assert_eq!(
        (s.min_ms, s.p5_ms, s.p95_ms, s.p99_ms, s.max_ms),
        (2.0, 2.0, 2.0, 2.0, 2.0)
    );
    let s = Stats::from_samples(&[0.25; 100]).unwrap();
    assert_eq!((s.std_ms, s.mad_ms, s.noise), (0.0, 0.0, 0.0));
    // A zero median has no relative noise.
    let s = Stats::from_samples(&[0.0, 0.0, 0.0]).unwrap();
    assert_eq!(s.noise, f64::INFINITY);
}

#[test]
fn stats_rejects_empty_and_non_finite() {
    assert_eq!(Stats::from_samples(&[]), None);
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(Stats::from_samples(&[1.0, bad, 2.0]), None, "{bad}");
        assert_eq!(Stats::from_samples(&[bad]), None, "{bad}");
    }
}

#[test]
fn median_noise_formula_and_edges() {
    assert_relative_eq!(
        median_noise(2.0, 0.1, 100),
        K * 0.1 / 10.0 / 2.0,
        epsilon = 1e-15
    );
    assert_eq!(median_noise(1.0, 0.1, 0), f64::INFINITY);
    assert_eq!(median_noise(0.0, 0.1, 10), f64::INFINITY);
    assert_eq!(median_noise(-1.0, 0.1, 10), f64::INFINITY);
    assert_eq!(median_noise(1.0, 0.0, 10), 0.0);
    // Four times the samples halve the noise.
    assert_relative_eq!(
        median_noise(1.0, 0.1, 400),
        median_noise(1.0, 0.1, 100) / 2.0,
        epsilon = 1e-15
    );
}

fn samples() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1e-3f64..1e3, 1..300)
}

proptest! {
    #[test]
    fn order_invariants(v in samples()) {
        let s = Stats::from_samples(&v).unwrap();
        prop_assert_eq!(s.n, v.len());
        prop_assert!(s.min_ms <= s.p5_ms);
        prop_assert!(s.p5_ms <= s.median_ms);
        prop_assert!(s.median_ms <= s.p95_ms);
        prop_assert!(s.p95_ms <= s.p99_ms);
        prop_assert!(s.p99_ms <= s.max_ms);
        prop_assert!(s.min_ms <= s.mean_ms * (1.0 + 1e-12) && s.mean_ms <= s.max_ms * (1.0 + 1e-12));
        prop_assert!(s.std_ms >= 0.0 && s.mad_ms >= 0.0 && s.noise >= 0.0);
        prop_assert!(s.mad_ms <= s.max_ms - s.min_ms);
        prop_assert_eq!(s.min_ms, v.iter().cloned().fold(f64::INFINITY, f64::min));
        prop_assert_eq!(s.max_ms, v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
        // The noise is the median's MAD-based half-width, raised to the modes' distance when
        // the samples hold two.
        let mad_noise = median_noise(s.median_ms, s.mad_ms, s.n);
        match s.modes {
            None => prop_assert!((s.noise - mad_noise).abs() <= 1e-15),
            Some([lo, hi]) => {
                prop_assert!(lo < hi && s.min_ms <= lo && hi <= s.max_ms);
                prop_assert!(hi / lo - 1.0 >= MODE_GAP_MIN * (1.0 - 1e-12));
                // Relative to the lower mode: a median in the upper mode reads hi / lo - 1
                // slower than a baseline in the lower one, and never more than that.
                prop_assert!((s.noise - mad_noise.max(hi / lo - 1.0)).abs() <= 1e-15);
                prop_assert!(s.noise >= (hi - lo) / s.median_ms * (1.0 - 1e-12));
            }
        }
    }

    #[test]
    fn permutation_invariant(v in samples(), seed in any::<u64>()) {
        let mut w = v.clone();
        // Deterministic shuffle from the seed.
        for i in (1..w.len()).rev() {
            let j = (kernelgate::inputs::hash(seed, 0, i as u64) % (i as u64 + 1)) as usize;
            w.swap(i, j);
        }
        prop_assert_eq!(Stats::from_samples(&v), Stats::from_samples(&w));
    }

    #[test]
    fn scale_equivariant(v in samples(), c in 0.01f64..100.0) {
        let a = Stats::from_samples(&v).unwrap();
        let b = Stats::from_samples(&v.iter().map(|x| x * c).collect::<Vec<_>>()).unwrap();
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1e-12);
        prop_assert!(close(b.median_ms, a.median_ms * c));
        prop_assert!(close(b.mad_ms, a.mad_ms * c));
        prop_assert!(close(b.std_ms, a.std_ms * c));
        prop_assert!(close(b.p95_ms, a.p95_ms * c));
        // The noise is relative: it does not depend on the unit.
        prop_assert!(close(b.noise, a.noise));
    }

    /// The same spread measured k times as often: median and MAD stay, noise falls as 1/√k.
    #[test]
    fn noise_decreases_with_more_samples(half in prop::collection::vec(1e-3f64..1e3, 1..100), k in 2usize..6) {
        let mut v = half.clone();
        v.extend(half.iter().map(|x| x * 1.001));
        v.push(half[0]);
        // odd length, so repetition keeps median and MAD exactly
        let rep: Vec<f64> = v.iter().flat_map(|x| std::iter::repeat_n(*x, k)).collect();
        let a = Stats::from_samples(&v).unwrap();
        let b = Stats::from_samples(&rep).unwrap();
        prop_assert_eq!(a.median_ms, b.median_ms);
        prop_assert_eq!(a.mad_ms, b.mad_ms);
        // The MAD-based part (the whole noise of one-mode samples) falls as 1/√k.
        let na = median_noise(a.median_ms, a.mad_ms, a.n);
        let nb = median_noise(b.median_ms, b.mad_ms, b.n);
        prop_assert!((nb - na / (k as f64).sqrt()).abs() <= 1e-12 * na.max(1e-300));
        if a.mad_ms > 0.0 {
            prop_assert!(nb < na);
        }
        if a.modes.is_none() && b.modes.is_none() {
            prop_assert_eq!((a.noise, b.noise), (na, nb));
        }
    }

    /// Evenly spread samples of the same relative width: more of them, less noise.
    #[test]
    fn noise_falls_with_n_for_fixed_spread(n in 5usize..200, width in 0.001f64..0.2, base in 1e-3f64..1e2) {
        let spread = |n: usize| -> Vec<f64> {
            (0..n).map(|i| base * (1.0 + width * ((i as f64 + 0.5) / n as f64 - 0.5))).collect()
        };
        let small = Stats::from_samples(&spread(n)).unwrap();
        let large = Stats::from_samples(&spread(4 * n)).unwrap();
        prop_assert!(large.noise < small.noise, "n={n}: {} vs 4n: {}", small.noise, large.noise);
        prop_assert!(large.noise < 0.7 * small.noise);
    }

    #[test]
    fn none_on_any_non_finite(mut v in samples(), pos in any::<prop::sample::Index>(),
                              bad in prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY])) {
        let i = pos.index(v.len() + 1);
        v.insert(i, bad);
        prop_assert_eq!(Stats::from_samples(&v), None);
    }
}

/// Samples of `case` on H200 GPU-545e8759 and GPU-999cf8a6 (session 22, quack suite, the
/// committed kernels): two modes 11% apart, their shares different on the two machines.
const CE_BWD_545E: [f64; 30] = [
    2.105, 2.105, 2.105, 2.105, 2.105, 2.106, 2.106, 2.106, 2.106, 2.107, 2.107, 2.108, 2.108,
    2.109, 2.109, 2.112, 2.116, 2.266, 2.326, 2.334, 2.341, 2.342, 2.346, 2.348, 2.348, 2.350,
    2.352, 2.352, 2.353, 2.354,
];
const CE_BWD_999C: [f64; 20] = [
    2.106, 2.107, 2.107, 2.107, 2.108, 2.109, 2.111, 2.111, 2.336, 2.338, 2.342, 2.345, 2.345,
    2.345, 2.346, 2.346, 2.348, 2.350, 2.351, 2.354,
];

#[test]
fn two_modes_found_and_their_distance_is_the_noise() {
    let a = Stats::from_samples(&CE_BWD_545E).unwrap();
    let b = Stats::from_samples(&CE_BWD_999C).unwrap();
    // The medians sit in different modes: 2.110 against 2.340 ms, 11% apart.
    assert!(a.median_ms < 2.12 && b.median_ms > 2.33);
    let [alo, ahi] = a.modes.expect("two modes");
    let [blo, bhi] = b.modes.expect("two modes");
    assert_relative_eq!(alo, 2.106, epsilon = 1e-9);
    assert_relative_eq!(ahi, 2.348, epsilon = 1e-9);
    assert!((alo - blo).abs() < 0.005 && (ahi - bhi).abs() < 0.005);
    // The MAD alone says 0.2–0.4%; the noise now spans the modes.
    assert!(median_noise(a.median_ms, a.mad_ms, a.n) < 0.005);
    // Relative to the lower mode (session 26; it was over the median, which is smaller when
    // the median sits in the upper mode, as on machine B).
    assert_relative_eq!(a.noise, ahi / alo - 1.0, epsilon = 1e-12);
    assert_relative_eq!(b.noise, bhi / blo - 1.0, epsilon = 1e-12);
    assert!(a.noise > 0.11 && b.noise > 0.11);
    // The lower modes with their own noise (the lower clusters' MADs): 2.106 and 2.109 ms,
    // both within 0.2%.
    let [al, an] = a.low.expect("lower mode");
    let [bl, bn] = b.low.expect("lower mode");
    assert_relative_eq!(al, alo, epsilon = 1e-12);
    assert_relative_eq!(bl, blo, epsilon = 1e-12);
    assert!(an < 0.002 && bn < 0.002, "{an} {bn}");
    // One mode: no lower mode either.
    assert_eq!(
        Stats::from_samples(&[1.0, 1.001, 1.002, 1.0]).unwrap().low,
        None
    );
}

#[test]
fn one_mode_is_not_split() {
    // Tight samples, a lone slow outlier, a slow tail under 10% of the samples, a gap under 3%,
    // and two clusters too wide for their gap: one mode each.
    let tight: Vec<f64> = (0..20).map(|i| 1.0 + 0.0005 * i as f64).collect();
    assert_eq!(modes(&tight), None);
    let mut outlier = tight.clone();
    outlier.push(1.5);
    assert_eq!(modes(&outlier), None);
    let mut tail: Vec<f64> = (0..30).map(|i| 1.0 + 0.0001 * i as f64).collect();
    tail.extend([1.2, 1.21]);
    assert_eq!(Stats::from_samples(&tail).unwrap().modes, None);
    let near: Vec<f64> = (0..20).map(|i| if i < 10 { 1.0 } else { 1.02 }).collect();
    assert_eq!(modes(&near), None);
    let wide: Vec<f64> = (0..20)
        .map(|i| {
            if i < 10 {
                1.0 + 0.02 * i as f64
            } else {
                1.15 + 0.02 * i as f64
            }
        })
        .collect();
    assert_eq!(modes(&wide), None);
    // Fewer than four samples: never two modes.
    assert_eq!(modes(&[1.0, 2.0, 2.0]), None);
    // The same clusters, tighter: two modes.
    let two: Vec<f64> = (0..20).map(|i| if i < 10 { 1.0 } else { 1.05 }).collect();
    assert_eq!(modes(&two), Some([1.0, 1.05]));
}

#[test]
fn the_gate_does_not_call_a_mode_switch_a_regression() {
    use kernelgate::gate::{compare, Change};
    let a = Stats::from_samples(&CE_BWD_545E).unwrap();
    let b = Stats::from_samples(&CE_BWD_999C).unwrap();
    // Machine B against machine A: 1.109x slower by the medians, within the modes' distance.
    let c = compare(b.median_ms, b.noise, a.median_ms, a.noise, 0.05);
    assert!(c.ratio > 1.10);
    assert_eq!(c.change, Change::Ambiguous);
    // With the MAD-based noise alone it was called a regression.
    let old = compare(
        b.median_ms,
        median_noise(b.median_ms, b.mad_ms, b.n),
        a.median_ms,
        median_noise(a.median_ms, a.mad_ms, a.n),
        0.05,
    );
    assert_eq!(old.change, Change::Slow);
    // A real 30% slowdown of both modes is still caught.
    let slow: Vec<f64> = CE_BWD_999C.iter().map(|x| x * 1.3).collect();
    let s = Stats::from_samples(&slow).unwrap();
    assert_eq!(
        compare(s.median_ms, s.noise, a.median_ms, a.noise, 0.05).change,
        Change::Slow
    );
}

proptest! {
    /// Two tight clusters far apart, each at least 10% of the samples: two modes, found at the
    /// clusters' medians whatever the scale.
    #[test]
    fn separated_clusters_are_two_modes(
        n_lo in 4usize..40, n_hi in 4usize..40, gap in 0.04f64..0.5, scale in 1e-3f64..1e3,
        jitter in 0.0f64..0.002,
    ) {
        let mut v: Vec<f64> = (0..n_lo).map(|i| scale * (1.0 + jitter * (i % 3) as f64)).collect();
        v.extend((0..n_hi).map(|i| scale * (1.0 + gap) * (1.0 + jitter * (i % 3) as f64)));
        let n = v.len() as f64;
        prop_assume!(n_lo.min(n_hi) as f64 >= (0.1 * n).ceil().max(2.0));
        let s = Stats::from_samples(&v).unwrap();
        let [lo, hi] = s.modes.expect("two modes");
        prop_assert!(lo >= scale && lo <= scale * (1.0 + 2.0 * jitter));
        prop_assert!(hi >= scale * (1.0 + gap) && hi <= scale * (1.0 + gap) * (1.0 + 2.0 * jitter));
        prop_assert!(s.noise >= (hi - lo) / s.median_ms * (1.0 - 1e-12));
        prop_assert!(s.noise >= (hi / lo - 1.0) * (1.0 - 1e-12));
    }
}

/// The samples of `tests/data/gemm-m2048-n512-k4096-bf16-h100-2c7e77be.txt` (ms, in the order
/// taken): a fresh H100 in session 24, the kernel unchanged, two modes with 13 samples between them.
fn gemm_2c7e77be() -> Vec<f64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/gemm-m2048-n512-k4096-bf16-h100-2c7e77be.txt"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

#[test]
fn dense_samples_with_a_valley_are_two_modes() {
    let v = gemm_2c7e77be();
    assert_eq!(v.len(), 2000);
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    // Every neighbour gap is under 3%: the gap rule alone saw one mode.
    assert!(sorted.windows(2).all(|w| w[1] / w[0] - 1.0 < MODE_GAP_MIN));
    let s = Stats::from_samples(&v).unwrap();
    let [lo, hi] = s.modes.expect("two modes");
    assert!((0.0200..0.0212).contains(&lo), "{lo}");
    assert!((0.0244..0.0254).contains(&hi), "{hi}");
    assert!(s.noise >= (hi - lo) / s.median_ms);
    // Its lower cluster is broad (MAD 1.9% of its median; other H100 runs of the same kernel put
    // their lower modes at 18.3–18.5 µs, this one at 20.6): no lower mode to compare, so a stored
    // lower mode cannot turn the call back into a regression (gate::with_lower_modes).
    assert_eq!(s.low, None);
    // Against the baseline entry of that day (median 19.264 µs, noise 0.94%): 1.12x slower by the
    // medians, within the modes' distance: ambiguous, where the MAD noise alone called it slow.
    use kernelgate::gate::{compare, Change};
    let c = compare(s.median_ms, s.noise, 0.019264, 0.0094, 0.05);
    assert!(c.ratio > 1.1);
    assert_eq!(c.change, Change::Ambiguous);
    let mad = median_noise(s.median_ms, s.mad_ms, s.n);
    assert_eq!(
        compare(s.median_ms, mad, 0.019264, 0.0094, 0.05).change,
        Change::Slow
    );
    // Every sample 40% slower is still called.
    let slow: Vec<f64> = v.iter().map(|x| x * 1.4).collect();
    let t = Stats::from_samples(&slow).unwrap();
    assert_eq!(
        compare(t.median_ms, t.noise, 0.019264, 0.0094, 0.05).change,
        Change::Slow
    );
    // The same kernel's fast mode alone: one mode.
    let fast: Vec<f64> = v.iter().copied().filter(|&x| x < 0.0225).collect();
    assert!(fast.len() > 1000);
    assert_eq!(Stats::from_samples(&fast).unwrap().modes, None);
}

/// A deterministic uniform in [0, 1) from a counter (splitmix64).
fn unit(seed: u64, i: u64) -> f64 {
    let mut z = seed
        .wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Dense samples of one mode (uniform, normal, exponential jitter, log-normal), however wide:
    /// never split, so their noise stays their median's.
    #[test]
    fn dense_unimodal_samples_are_one_mode(
        n in 100usize..3000, width in 0.001f64..0.5, kind in 0usize..4, seed in any::<u64>(),
    ) {
        let v: Vec<f64> = (0..n as u64)
            .map(|i| {
                let u = unit(seed, 2 * i).max(1e-12);
                let g = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * unit(seed, 2 * i + 1)).cos();
                match kind {
                    0 => 1.0 + width * u,
                    1 => 3.0 + 0.3 * width * g,
                    2 => 1.0 - width * u.ln(),
                    _ => 1.0 + width * (0.5 * g).exp(),
                }
            })
            .collect();
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        prop_assert_eq!(modes(&sorted), None, "kind {} n {} width {}", kind, n, width);
    }

    /// Two dense normal modes 8–40% apart, each at least a quarter of the samples: found.
    #[test]
    fn dense_bimodal_samples_are_two_modes(
        n in 200usize..3000, apart in 0.08f64..0.4, share in 0.25f64..0.75, seed in any::<u64>(),
    ) {
        let v: Vec<f64> = (0..n as u64)
            .map(|i| {
                let u = unit(seed, 3 * i).max(1e-12);
                let g = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * unit(seed, 3 * i + 1)).cos();
                let base = if unit(seed, 3 * i + 2) < share { 1.0 + apart } else { 1.0 };
                base * (1.0 + 0.005 * g)
            })
            .collect();
        let s = Stats::from_samples(&v).unwrap();
        let [lo, hi] = s.modes.expect("two modes");
        prop_assert!((lo - 1.0).abs() < 0.01 && (hi / (1.0 + apart) - 1.0).abs() < 0.01, "{} {}", lo, hi);
    }
}
