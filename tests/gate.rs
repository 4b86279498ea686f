//! The regression rule: a change is called only beyond tolerance *and* beyond noise.

use kernelgate::gate::{compare, Change};
use kernelgate::stats::Stats;
use proptest::prelude::*;

#[test]
fn same_within_tolerance() {
    assert_eq!(compare(1.0, 0.0, 1.0, 0.0, 0.05).change, Change::Same);
    assert_eq!(compare(1.049, 0.0, 1.0, 0.0, 0.05).change, Change::Same);
    assert_eq!(compare(0.951, 0.0, 1.0, 0.0, 0.05).change, Change::Same);
    // Exactly at the tolerance is still the same (exact binary fractions).
    assert_eq!(compare(1.25, 0.0, 1.0, 0.0, 0.25).change, Change::Same);
    assert_eq!(compare(0.75, 0.0, 1.0, 0.0, 0.25).change, Change::Same);
    // Within tolerance wins over any noise.
    assert_eq!(compare(1.04, 10.0, 1.0, 10.0, 0.05).change, Change::Same);
}

#[test]
fn slow_and_fast_beyond_tolerance_and_noise() {
    assert_eq!(compare(1.051, 0.0, 1.0, 0.0, 0.05).change, Change::Slow);
    assert_eq!(compare(1.10, 0.01, 1.0, 0.01, 0.05).change, Change::Slow);
    assert_eq!(compare(2.0, 0.0, 1.0, 0.0, 0.05).change, Change::Slow);
    assert_eq!(compare(0.949, 0.0, 1.0, 0.0, 0.05).change, Change::Fast);
    assert_eq!(compare(0.5, 0.01, 1.0, 0.01, 0.05).change, Change::Fast);
    // Just above tolerance 0.25 with no noise.
    assert_eq!(
        compare(1.25 + 1e-9, 0.0, 1.0, 0.0, 0.25).change,
        Change::Slow
    );
    assert_eq!(
        compare(0.75 - 1e-9, 0.0, 1.0, 0.0, 0.25).change,
        Change::Fast
    );
}

#[test]
fn ambiguous_beyond_tolerance_within_noise() {
    // noise = √(0.5² + 0²) = 0.5 exactly; change 0.5 is within it.
    assert_eq!(compare(1.5, 0.5, 1.0, 0.0, 0.25).change, Change::Ambiguous);
    assert_eq!(compare(1.5, 0.0, 1.0, 0.5, 0.25).change, Change::Ambiguous);
    assert_eq!(compare(0.5, 0.5, 1.0, 0.0, 0.25).change, Change::Ambiguous);
    // Just beyond the noise: a call is made.
    assert_eq!(
        compare(1.5 + 1e-9, 0.5, 1.0, 0.0, 0.25).change,
        Change::Slow
    );
    assert_eq!(
        compare(0.5 - 1e-9, 0.5, 1.0, 0.0, 0.25).change,
        Change::Fast
    );
    // The two noises combine in quadrature: 0.06 and 0.08 → 0.1.
    let c = compare(1.09, 0.06, 1.0, 0.08, 0.05);
    assert!((c.noise - 0.1).abs() < 1e-15);
    assert_eq!(c.change, Change::Ambiguous);
    assert_eq!(compare(1.11, 0.06, 1.0, 0.08, 0.05).change, Change::Slow);
    // Either side alone would not have been enough.
    assert_eq!(compare(1.09, 0.08, 1.0, 0.0, 0.05).change, Change::Slow);
}

#[test]
fn comparison_fields() {
    let c = compare(3.0, 0.03, 2.0, 0.04, 0.07);
    assert_eq!(c.ratio, 1.5);
    assert!((c.noise - 0.05).abs() < 1e-15);
    assert_eq!(c.tolerance, 0.07);
    assert_eq!(c.change, Change::Slow);
    assert_eq!(
        serde_json::to_string(&Change::Ambiguous).unwrap(),
        "\"AMBIGUOUS\""
    );
    assert_eq!(serde_json::to_string(&Change::Slow).unwrap(), "\"SLOW\"");
}

#[test]
fn ratio_scale_invariance() {
    for base in [1e-4, 0.013, 1.0, 250.0] {
        assert_eq!(
            compare(base * 1.2, 0.01, base, 0.01, 0.05).change,
            Change::Slow
        );
        assert_eq!(
            compare(base * 1.02, 0.01, base, 0.01, 0.05).change,
            Change::Same
        );
    }
}

/// Samples around `median` with relative jitter in ±`jitter`, from a counter-based hash.
fn jittered(median: f64, jitter: f64, n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let u = kernelgate::inputs::unit(seed, 7, i) as f64 * 2.0 - 1.0;
            median * (1.0 + jitter * u)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn ten_percent_slowdown_with_small_noise_is_always_slow(base in 1e-4f64..1e3, slow in 1.10f64..3.0,
                                                           n1 in 0.0f64..0.03, n2 in 0.0f64..0.03) {
        let c = compare(base * slow, n1, base, n2, 0.05);
        prop_assert_eq!(c.change, Change::Slow, "{:?}", c);
    }

    #[test]
    fn three_percent_is_same_whatever_the_noise(base in 1e-4f64..1e3, change in -0.03f64..0.03,
                                                n1 in 0.0f64..1.0, n2 in 0.0f64..1.0) {
        let c = compare(base * (1.0 + change), n1, base, n2, 0.05);
        prop_assert_eq!(c.change, Change::Same, "{:?}", c);
    }

    #[test]
    fn noise_larger_than_the_change_is_ambiguous(base in 1e-4f64..1e3, change in 0.051f64..0.5, sign in prop::bool::ANY,
                                                 extra in 1.01f64..3.0, split in 0.0f64..1.0) {
        let change = if sign { change } else { -change.min(0.9) };
        // Total noise = extra · |change|, shared between the two sides in any proportion.
        let total = extra * change.abs();
        let (a, b) = (total * split.sqrt(), total * (1.0 - split).sqrt());
        let c = compare(base * (1.0 + change), a, base, b, 0.05);
        prop_assert_eq!(c.change, Change::Ambiguous, "{:?}", c);
    }

    #[test]
    fn calls_are_antisymmetric(base in 1e-3f64..1e3, r in 1.06f64..2.0, n in 0.0f64..0.03) {
        prop_assert_eq!(compare(base * r, n, base, n, 0.05).change, Change::Slow);
        prop_assert_eq!(compare(base / r, n, base, n, 0.05).change, Change::Fast);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// End to end through the statistics: jittered samples of a kernel, then the same kernel
    /// 10% slower (an injected slowdown) always fails; 3% slower always passes; an unchanged
    /// kernel always passes.
    #[test]
    fn injected_slowdowns_through_stats(base in 1e-3f64..10.0, n in 20usize..400, jitter in 0.0f64..0.005,
                                        s1 in any::<u64>(), s2 in any::<u64>()) {
        let before = Stats::from_samples(&jittered(base, jitter, n, s1)).unwrap();
        let call = |factor: f64| {
            let now = Stats::from_samples(&jittered(base * factor, jitter, n, s2)).unwrap();
            compare(now.median_ms, now.noise, before.median_ms, before.noise, 0.05).change
        };
        prop_assert_eq!(call(1.10), Change::Slow);
        prop_assert_eq!(call(1.03), Change::Same);
        prop_assert_eq!(call(1.0), Change::Same);
        prop_assert_eq!(call(0.90), Change::Fast);
    }
}

#[test]
fn lower_modes_decide_when_they_make_a_call() {
    use kernelgate::gate::with_lower_modes;
    let medians_ambiguous = compare(2.345, 0.11, 2.106, 0.11, 0.05);
    let medians_same = compare(2.317, 0.11, 2.345, 0.11, 0.05);
    assert_eq!(medians_ambiguous.change, Change::Ambiguous);
    assert_eq!(medians_same.change, Change::Same);
    let lower_same = compare(2.107, 0.002, 2.106, 0.002, 0.05);
    let lower_slow = compare(2.317, 0.002, 2.106, 0.002, 0.05);
    let lower_ambiguous = compare(2.317, 0.2, 2.106, 0.2, 0.05);
    // No lower modes: the medians stand.
    assert_eq!(with_lower_modes(medians_ambiguous, None), medians_ambiguous);
    // Lower modes that make a call decide, whatever the medians said.
    assert_eq!(
        with_lower_modes(medians_ambiguous, Some(lower_same)),
        lower_same
    );
    assert_eq!(with_lower_modes(medians_same, Some(lower_slow)), lower_slow);
    assert_eq!(
        with_lower_modes(medians_same, Some(lower_slow)).change,
        Change::Slow
    );
    // Lower modes too noisy to call: the medians stand.
    assert_eq!(
        with_lower_modes(medians_same, Some(lower_ambiguous)),
        medians_same
    );
}

#[test]
fn a_runs_own_lower_mode_keeps_a_mode_switch_from_being_a_regression() {
    use kernelgate::gate::with_own_lower_mode;
    // Session 26, H200 GPU-999cf8a6, cross_entropy_bwd 524288 x 4096: median 2.3403 ms in the
    // slow mode, lower mode 2.1075, against one-mode baselines centred at 2.0915 ms.
    let medians = compare(2.3403, 0.1105, 2.0915, 0.004, 0.05);
    assert_eq!(medians.change, Change::Slow);
    let lower = compare(2.1075, 0.0006, 2.0915, 0.004, 0.05);
    assert_eq!(lower.change, Change::Same);
    let c = with_own_lower_mode(medians, Some(lower));
    assert_eq!(c.change, Change::Ambiguous);
    assert_eq!(c.ratio, medians.ratio);
    // The kernel 10% slower moves the lower mode too: the call stands.
    let lower_slow = compare(2.1075 * 1.1, 0.0006, 2.0915, 0.004, 0.05);
    assert_eq!(lower_slow.change, Change::Slow);
    assert_eq!(with_own_lower_mode(medians, Some(lower_slow)), medians);
    // No lower mode, or medians that do not call a slowdown: unchanged.
    assert_eq!(with_own_lower_mode(medians, None), medians);
    let same = compare(2.0920, 0.004, 2.0915, 0.004, 0.05);
    assert_eq!(with_own_lower_mode(same, Some(lower)), same);
}

mod common;

mod against_stored {
    use super::common::{h200_provenance, stored_round};
    use kernelgate::baseline::{Entry, Round};
    use kernelgate::gate::{against_stored, Change, Rule, RunSummary, StoredCall};
    use kernelgate::stats::Stats;

    const RULE: Rule = Rule {
        tolerance: 0.05,
        floor_ms: 0.3e-3,
    };

    /// `stats` against `e` with the machine factor `scale` and the window shift `shift`.
    fn against(
        stats: &Stats,
        e: &Entry,
        scale: f64,
        shift: impl Fn(&Entry) -> Option<f64>,
    ) -> StoredCall {
        against_stored(RunSummary::of(stats), e, scale, shift, RULE)
    }

    /// A round of `st` on `machine`, batch 1.
    fn round(st: &Stats, machine: &str) -> Round {
        Round {
            median_ms: st.median_ms,
            noise: st.noise,
            n: st.n,
            low: st.low,
            ..stored_round(0.0, machine)
        }
    }

    /// 20 samples around `ms` (0.05% jitter), `upper` of them 11% slower.
    fn samples(ms: f64, upper: usize) -> Stats {
        let v: Vec<f64> = (0..20)
            .map(|i| {
                let x = ms * (1.0 + 0.0005 * (i % 4) as f64);
                if i < 20 - upper {
                    x
                } else {
                    x * 1.11
                }
            })
            .collect();
        Stats::from_samples(&v).unwrap()
    }

    fn entry(per_machine: &[Stats]) -> Entry {
        let rounds: Vec<Round> = per_machine
            .iter()
            .enumerate()
            .map(|(i, st)| round(st, &format!("GPU-{i}")))
            .collect();
        Entry::from_rounds(&per_machine[0], rounds, h200_provenance())
    }

    #[test]
    fn one_mode_runs_are_judged_by_their_medians() {
        let e = entry(&[samples(2.09, 0), samples(2.10, 0), samples(2.095, 0)]);
        let same = against(&samples(2.096, 0), &e, 1.0, |_| None);
        assert_eq!(same.comparison.change, Change::Same);
        assert_eq!((same.lower_modes, same.own_lower_mode), (None, None));
        let slow = against(&samples(2.096 * 1.1, 0), &e, 1.0, |_| None);
        assert_eq!(slow.comparison.change, Change::Slow);
        // The machine factor and the window shift move the baseline, not the run.
        let scaled = against(&samples(2.096 * 1.1, 0), &e, 1.1, |_| None);
        assert_eq!(scaled.comparison.change, Change::Same);
        let shifted = against(&samples(2.096 * 1.1, 0), &e, 1.0, |_| Some(0.2));
        assert_eq!(shifted.comparison.change, Change::Same);
    }

    #[test]
    fn a_run_in_two_modes_against_one_mode_rounds_uses_its_own_lower_mode() {
        let e = entry(&[samples(2.09, 0), samples(2.10, 0), samples(2.095, 0)]);
        // Median in the slow mode (14 of 20 samples), 11% above the lower mode: within the
        // modes' distance, so the medians alone are ambiguous.
        let c = against(&samples(2.095, 14), &e, 1.0, |_| None);
        assert_eq!(c.comparison.change, Change::Ambiguous, "{c:?}");
        assert_eq!(c.own_lower_mode, None);
        // The lower mode 0.7% above the baseline (as on H200 GPU-999cf8a6): the medians read
        // 1.118x, beyond the modes' distance, and the run's own lower mode keeps it ambiguous.
        let run = samples(2.11, 14);
        assert!(run.modes.is_some() && run.low.is_some());
        let c = against(&run, &e, 1.0, |_| None);
        assert!(c.comparison.ratio > 1.11, "{c:?}");
        assert_eq!(c.comparison.change, Change::Ambiguous, "{c:?}");
        assert!((c.own_lower_mode.unwrap() - 2.11).abs() < 0.003, "{c:?}");
        assert_eq!(c.lower_modes, None);
        // The kernel 10% slower: both modes move, the call stands and names no lower mode.
        let slower = samples(2.095 * 1.1, 14);
        let c = against(&slower, &e, 1.0, |_| None);
        assert_eq!(c.comparison.change, Change::Slow, "{c:?}");
        assert_eq!(c.own_lower_mode, None);
    }

    #[test]
    fn runs_and_rounds_both_in_two_modes_are_decided_on_the_lower_modes() {
        let e = entry(&[samples(2.10, 6), samples(2.10, 13), samples(2.10, 8)]);
        let run = samples(2.10, 14);
        let c = against(&run, &e, 1.0, |_| None);
        assert_eq!(c.comparison.change, Change::Same, "{c:?}");
        let [now, base] = c.lower_modes.expect("decided on the lower modes");
        assert!(
            (now - 2.10).abs() < 0.003 && (base - 2.10).abs() < 0.003,
            "{c:?}"
        );
        let c = against(&samples(2.10 * 1.1, 14), &e, 1.0, |_| None);
        assert_eq!(c.comparison.change, Change::Slow, "{c:?}");
        assert!(c.lower_modes.is_some());
    }
}

#[test]
fn same_code_needs_the_same_known_hash_configuration_and_driver() {
    use kernelgate::gate::{same_code, CodeIdentity};
    let id = |h, v, d| CodeIdentity {
        source_hash: h,
        code_hash: "",
        variant: v,
        driver: d,
        nvrtc: "",
    };
    let base = id("1596a9a19141", Some("kg_rmsnorm_bf16_w16"), "580.159.04");
    assert!(same_code(base, base));
    // The kernel file (or its includes, options, NVRTC) changed: gated.
    assert!(!same_code(
        id("0123456789ab", Some("kg_rmsnorm_bf16_w16"), "580.159.04"),
        base
    ));
    // Another configuration ran (another entry, tile, launch shape or library call): gated.
    assert!(!same_code(
        id("1596a9a19141", Some("kg_rmsnorm_bf16_w32"), "580.159.04"),
        base
    ));
    // Another driver: gated.
    assert!(!same_code(
        id("1596a9a19141", Some("kg_rmsnorm_bf16_w16"), "575.57.08"),
        base
    ));
    // Unknown on either side is never the same code.
    let unknown_hash = id("", Some("cublasGemmEx"), "580.159.04");
    assert!(!same_code(unknown_hash, unknown_hash));
    let no_variant = id("1596a9a19141", None, "580.159.04");
    assert!(!same_code(no_variant, no_variant));
    let no_driver = id("1596a9a19141", Some("kg_rmsnorm_bf16_w16"), "");
    assert!(!same_code(no_driver, no_driver));
    // A baseline stored before the backend named its library (cuBLAS: empty hash) is not the
    // same code as a run that names it.
    assert!(!same_code(
        id("cuBLAS 13.0.2", Some("cublasGemmEx"), "580.159.04"),
        id("", Some("cublasGemmEx"), "580.159.04")
    ));
}

#[test]
fn the_same_cubin_is_the_same_code_whatever_the_source_hash() {
    use kernelgate::gate::{same_code, CodeIdentity};
    let id = |h, c, v: Option<&'static str>| CodeIdentity {
        source_hash: h,
        code_hash: c,
        variant: v,
        driver: "580.159.04",
        nvrtc: "",
    };
    let v = Some("gemm_wgmma_bf16_128x256_ts");
    let base = id("18694b20c1b6", "9f0e11aa22bb", v);
    // A comment or refactor: another source hash, the same cubin.
    assert!(same_code(id("1adc74fdb22b", "9f0e11aa22bb", v), base));
    // Another cubin and another source: gated.
    assert!(!same_code(id("1adc74fdb22b", "0000aaaa1111", v), base));
    // The same cubin under another configuration or driver is still gated.
    assert!(!same_code(
        id(
            "1adc74fdb22b",
            "9f0e11aa22bb",
            Some("gemm_wgmma_bf16_128x64")
        ),
        base
    ));
    let other_driver = CodeIdentity {
        driver: "575.57.08",
        ..id("1adc74fdb22b", "9f0e11aa22bb", v)
    };
    assert!(!same_code(other_driver, base));
    // An entry from before code hashes were kept (empty) matches only by source hash.
    let old = id("18694b20c1b6", "", v);
    assert!(!same_code(id("1adc74fdb22b", "9f0e11aa22bb", v), old));
    assert!(same_code(id("18694b20c1b6", "9f0e11aa22bb", v), old));
    // Two unknown code hashes are not equal code.
    assert!(!same_code(id("aaaa", "", v), id("bbbb", "", v)));
    // Where both code hashes are known they decide, even against an equal source hash: a stored
    // source hash moved onto code it did not time (a rehash with another compiler than the
    // machine's) is not the same code.
    assert!(!same_code(id("18694b20c1b6", "0000aaaa1111", v), base));
    assert!(
        !kernelgate::gate::same_hashes("s", "c", "s", "d"),
        "known code hashes decide"
    );
    assert!(kernelgate::gate::same_hashes("s", "", "s", "d"));
    assert!(!kernelgate::gate::same_hashes("", "", "", ""));
}

#[test]
fn nvrtcs_own_variation_is_the_same_code_only_under_the_same_release() {
    use kernelgate::gate::{compiler_variant, same_code, CodeIdentity};
    let id = |s, c, nvrtc| CodeIdentity {
        source_hash: s,
        code_hash: c,
        variant: Some("gemm_sgemm_64x64_vec4_k2"),
        driver: "580.159.04",
        nvrtc,
    };
    let base = id("02674fc1c858", "45faa2047ff3", "libnvrtc.so.13.0.88");
    // Session 43: the same source and release compiled into another cubin.
    let odd = id("02674fc1c858", "10920bd4e74f", "libnvrtc.so.13.0.88");
    assert!(compiler_variant(odd, base));
    assert!(same_code(odd, base));
    // Another release, an unknown one on either side, or another source: gated as before.
    for run in [
        id("02674fc1c858", "10920bd4e74f", "libnvrtc.so.13.0.48"),
        id("02674fc1c858", "10920bd4e74f", ""),
        id("aaaabbbbcccc", "10920bd4e74f", "libnvrtc.so.13.0.88"),
    ] {
        assert!(!same_code(run, base), "{run:?}");
    }
    let unknown_base = id("02674fc1c858", "45faa2047ff3", "");
    assert!(!same_code(odd, unknown_base));
    // The variation still needs the same configuration and driver.
    let other_config = CodeIdentity {
        variant: Some("gemm_sgemm_64x64_vec4"),
        ..odd
    };
    assert!(!same_code(other_config, base));
    let other_driver = CodeIdentity {
        driver: "575.57.08",
        ..odd
    };
    assert!(!same_code(other_driver, base));
    // Unknown code hashes are no variation.
    assert!(!compiler_variant(
        id("02674fc1c858", "", "libnvrtc.so.13.0.88"),
        base
    ));
}
