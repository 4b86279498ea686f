//! The gate across machines: baseline spread within and between machines, the absolute
//! floor, machine factors, the same-run paired A/B test, what a run could see (sensitivity),
//! the self-test's pass rule, and the export of an A/B base from git.
//!
//! Everything here is hand-made and deterministic: no GPU, no clock, no environment changes.

mod common;

use kernelgate::baseline::{spread, BaselineFile, Entry, Provenance, Round};
use kernelgate::gate::{
    compare, compare_with, machine_factor, min_detectable, overhead_shift_ms, paired,
    window_shift_ms, Change, Rule,
};
use kernelgate::gpu::Ceilings;
use kernelgate::results::{Record, Verdict};
use kernelgate::sensitivity::{
    derived_floor_us, family_spread, family_table, render_spread, shared_slowdowns,
    tiny_spreads_us, Distribution, RunSummary, BLIND_AT, TINY_MS,
};
use kernelgate::stats::Stats;
use kernelgate::timing::HOLD_US as HOLD;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn env() -> Provenance {
    Provenance {
        gpu: common::GPU.into(),
        compute_capability: "9.0".into(),
        driver: "580.65.06".into(),
        cuda: "13.0".into(),
        sm_clock_mhz: 1980,
        mem_clock_mhz: 2619,
        date: "2026-04-20T10:00:00Z".into(),
        source_hash: "abc123".into(),
        code_hash: String::new(),
        nvrtc: String::new(),
    }
}

/// A round of `median_ms` on `machine` with relative CI `noise`.
fn round(median_ms: f64, noise: f64, machine: &str) -> Round {
    Round {
        median_ms,
        noise,
        n: 200,
        machine: machine.into(),
        host: String::new(),
        date: "2026-04-20T10:00:00Z".into(),
        ceilings: None,
        batch: None,
        l2_flush: None,
        duty_hold: None,
        variant: None,
        low: None,
    }
}

fn stats(median_ms: f64) -> Stats {
    Stats::from_samples(&[median_ms; 20]).unwrap()
}

/// An entry from rounds given as `(median_ms, machine)`, each with CI 0.1%.
fn entry_of(rounds: &[(f64, &str)]) -> Entry {
    let r: Vec<Round> = rounds.iter().map(|(m, k)| round(*m, 0.001, k)).collect();
    Entry::from_rounds(&stats(rounds[0].0), r, env())
}

fn file(kernel: &str, entries: Vec<(&str, Entry)>) -> BaselineFile {
    BaselineFile {
        schema: kernelgate::baseline::SCHEMA,
        kernel: kernel.into(),
        gpu: common::GPU.into(),
        entries: entries
            .into_iter()
            .map(|(c, e)| (format!("{kernel}::cuda::{c}"), e))
            .collect(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b): (f64, f64) = ($a, $b);
        assert!(
            close(a, b),
            "{} = {a} is not {} = {b}",
            stringify!($a),
            stringify!($b)
        );
    }};
}

/// A deterministic uniform generator in [0, 1) (64-bit LCG, top 53 bits).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [-1, 1).
    fn sym(&mut self) -> f64 {
        2.0 * self.next() - 1.0
    }
}

/// `pairs` interleaved base/new samples: the kernel's true latency drifts by ±5% over the run
/// (common to both sides of a pair), new is `factor` × base, and each sample has independent
/// relative jitter of ±`jitter`.
fn interleaved(factor: f64, jitter: f64, pairs: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut g = Lcg(seed);
    let (mut base, mut new) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        let truth = 0.258 * (1.0 + 0.05 * (i as f64 * 0.37).sin());
        base.push(truth * (1.0 + jitter * g.sym()));
        new.push(truth * factor * (1.0 + jitter * g.sym()));
    }
    (base, new)
}

// ---------------------------------------------------------------------------------------------
// Baseline spread
// ---------------------------------------------------------------------------------------------

#[test]
fn spread_within_and_between_machines() {
    // Machine A: rounds 1.00, 1.01, 1.03 (median 1.01); machine B: 1.10, 1.12 (median 1.11).
    let rounds = vec![
        round(1.00, 0.001, "GPU-a"),
        round(1.10, 0.001, "GPU-b"),
        round(1.01, 0.001, "GPU-a"),
        round(1.12, 0.001, "GPU-b"),
        round(1.03, 0.001, "GPU-a"),
    ];
    let s = spread(&rounds);
    assert_eq!(s.machines, 2);
    // Centre: the median of the machine medians (1.01, 1.11), not of all five rounds (1.03).
    assert_close!(s.center_ms, 1.06);
    // Within: the largest deviation of a round from its machine's median (A: 1.03 − 1.01,
    // B: 1.12 − 1.11), relative to the centre.
    assert_close!(s.within, 0.02 / 1.06);
    // Between: the largest deviation of a machine's median from the centre.
    assert_close!(s.between, 0.05 / 1.06);

    // The entry's noise combines them in quadrature and its median is the centre.
    let e = Entry::from_rounds(&stats(1.0), rounds.clone(), env());
    assert_close!(e.median_ms, 1.06);
    assert_eq!((e.within, e.between, e.machines), (s.within, s.between, 2));
    assert_close!(e.noise, (s.within.powi(2) + s.between.powi(2)).sqrt());
    assert_eq!(e.rounds, rounds);

    // Three machines: the centre is the middle machine, between the farthest one.
    let s = spread(&[
        round(1.0, 0.0, "a"),
        round(1.2, 0.0, "b"),
        round(0.9, 0.0, "c"),
    ]);
    assert_eq!(s.machines, 3);
    assert_close!(s.center_ms, 1.0);
    assert_close!(s.between, 0.2);
    assert_eq!(
        s.within, 0.0,
        "one round per machine: no within-machine spread"
    );
}

#[test]
fn spread_within_is_at_least_the_rounds_ci() {
    // Rounds that agree exactly: within is the median round CI.
    let s = spread(&[
        round(2.0, 0.004, "a"),
        round(2.0, 0.010, "a"),
        round(2.0, 0.006, "a"),
    ]);
    assert_eq!(s.within, 0.006);
    assert_eq!((s.between, s.machines, s.center_ms), (0.0, 1, 2.0));
    // Rounds that disagree more than their CI: the deviation wins.
    let s = spread(&[round(2.0, 0.001, "a"), round(2.1, 0.001, "a")]);
    assert_close!(s.within, 0.05 / 2.05);
}

#[test]
fn spread_one_machine_has_no_between() {
    let s = spread(&[
        round(0.5, 0.002, "GPU-a"),
        round(0.52, 0.002, "GPU-a"),
        round(0.49, 0.002, "GPU-a"),
    ]);
    assert_eq!((s.machines, s.between), (1, 0.0));
    assert_close!(s.center_ms, 0.5);
    assert_close!(s.within, 0.02 / 0.5);
    let e = Entry::from_rounds(
        &stats(0.5),
        vec![round(0.5, 0.002, "GPU-a"), round(0.52, 0.002, "GPU-a")],
        env(),
    );
    assert_eq!((e.between, e.machines), (0.0, 1));
    assert_eq!(e.noise, e.within, "√(within² + 0²)");
}

#[test]
fn spread_unknown_machine_is_one_machine() {
    // Schema-1 rounds (machine "") all count as one machine, however much they differ.
    let s = spread(&[
        round(1.0, 0.0, ""),
        round(1.2, 0.0, ""),
        round(1.1, 0.0, ""),
    ]);
    assert_eq!((s.machines, s.between), (1, 0.0));
    assert_close!(s.center_ms, 1.1);
    assert_close!(s.within, 0.1 / 1.1);
    // With a known machine beside them, "" is one more machine.
    let s = spread(&[
        round(1.0, 0.0, ""),
        round(1.0, 0.0, ""),
        round(1.2, 0.0, "GPU-a"),
    ]);
    assert_eq!(s.machines, 2);
    assert_close!(s.center_ms, 1.1);
    assert_close!(s.between, 0.1 / 1.1);
    assert_eq!(s.within, 0.0);
}

#[test]
#[should_panic(expected = "spread of no rounds")]
fn spread_of_no_rounds_panics() {
    spread(&[]);
}

// ---------------------------------------------------------------------------------------------
// Stored-baseline comparison with a floor
// ---------------------------------------------------------------------------------------------

const FLOOR: Rule = Rule {
    tolerance: 0.05,
    floor_ms: 0.0005, // 0.5 µs
};

#[test]
fn floor_makes_small_absolute_changes_ambiguous() {
    // +6% of a 5 µs kernel is 0.3 µs: beyond tolerance and noise, but under the 0.5 µs floor.
    let c = compare_with(0.005 * 1.06, 0.002, 0.005, 0.002, FLOOR);
    assert_eq!(c.change, Change::Ambiguous, "{c:?}");
    assert_close!(c.ratio, 1.06);
    assert_eq!((c.tolerance, c.floor_ms), (0.05, 0.0005));
    // The floor is 10% of this kernel: the smallest slowdown the gate could call.
    assert_close!(c.min_detectable, 0.1);
    // Without the floor the same change is a regression.
    assert_eq!(
        compare_with(0.005 * 1.06, 0.002, 0.005, 0.002, Rule::tolerance(0.05)).change,
        Change::Slow
    );
    // +30% of it (1.5 µs) clears the floor.
    assert_eq!(
        compare_with(0.005 * 1.3, 0.002, 0.005, 0.002, FLOOR).change,
        Change::Slow
    );

    // The same +6% of a 258 µs kernel (15 µs) with low noise is a regression.
    let c = compare_with(0.258 * 1.06, 0.002, 0.258, 0.002, FLOOR);
    assert_eq!(c.change, Change::Slow, "{c:?}");
    assert_close!(c.min_detectable, 0.05);
}

#[test]
fn floor_edges() {
    // A noisy baseline (e.g. a large between-machine spread) keeps +6% ambiguous on a big kernel.
    let c = compare_with(0.258 * 1.06, 0.002, 0.258, 0.08, FLOOR);
    assert_eq!(c.change, Change::Ambiguous);
    assert_close!(c.noise, (0.002f64.powi(2) + 0.08f64.powi(2)).sqrt());
    assert_close!(c.min_detectable, c.noise);
    // Within tolerance is the same whatever the floor.
    assert_eq!(
        compare_with(0.005 * 1.04, 0.0, 0.005, 0.0, FLOOR).change,
        Change::Same
    );
    // Fast direction: a big kernel 10% faster is Fast; a 5 µs kernel 8% faster (0.4 µs) is
    // under the floor; 20% faster (1 µs) is Fast.
    assert_eq!(
        compare_with(0.258 * 0.9, 0.002, 0.258, 0.002, FLOOR).change,
        Change::Fast
    );
    assert_eq!(
        compare_with(0.005 * 0.92, 0.002, 0.005, 0.002, FLOOR).change,
        Change::Ambiguous
    );
    assert_eq!(
        compare_with(0.005 * 0.8, 0.002, 0.005, 0.002, FLOOR).change,
        Change::Fast
    );
    // compare() is compare_with without a floor.
    let (a, b) = (
        compare(1.08, 0.01, 1.0, 0.02, 0.05),
        compare_with(1.08, 0.01, 1.0, 0.02, Rule::tolerance(0.05)),
    );
    assert_eq!(a, b);
    assert_eq!(a.floor_ms, 0.0);
}

#[test]
fn min_detectable_is_the_largest_of_tolerance_noise_and_floor() {
    // Tolerance dominates.
    assert_eq!(min_detectable(0.258, 0.01, FLOOR), 0.05);
    // Noise dominates.
    assert_eq!(min_detectable(0.258, 0.07, FLOOR), 0.07);
    // The floor dominates on small kernels: 0.5 µs of 2 µs is 25%.
    assert_close!(min_detectable(0.002, 0.01, FLOOR), 0.25);
    // No floor: tolerance or noise.
    assert_eq!(min_detectable(0.002, 0.01, Rule::tolerance(0.05)), 0.05);
    // The three terms, in general.
    for (base, noise) in [(0.001, 0.0), (0.005, 0.03), (0.01, 0.2), (1.0, 0.0)] {
        let want = 0.05f64.max(noise).max(0.0005 / base);
        assert_close!(min_detectable(base, noise, FLOOR), want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A slowdown at least min_detectable (with a little margin) is always called; the floor
    /// never turns a call into the opposite one.
    #[test]
    fn slowdowns_beyond_min_detectable_are_called(base in 1e-4f64..1e2, n1 in 0.0f64..0.05, n2 in 0.0f64..0.05,
                                                  floor_us in 0.0f64..2.0, extra in 1.001f64..2.0) {
        let rule = Rule { tolerance: 0.05, floor_ms: floor_us / 1e3 };
        let noise = (n1 * n1 + n2 * n2).sqrt();
        let m = min_detectable(base, noise, rule);
        let c = compare_with(base * (1.0 + m * extra), n1, base, n2, rule);
        prop_assert_eq!(c.change, Change::Slow, "{:?}", c);
        prop_assert!(close(c.min_detectable, m));
        let c = compare_with(base * (1.0 - 0.99 * m.min(0.9)), n1, base, n2, rule);
        prop_assert_ne!(c.change, Change::Slow, "{:?}", c);
    }
}

// ---------------------------------------------------------------------------------------------
// Machine factor
// ---------------------------------------------------------------------------------------------

fn ceil(copy_gbps: f64, gemm_tflops: f64) -> Option<Ceilings> {
    Some(Ceilings {
        copy_gbps,
        gemm_tflops,
        launch_us: 2.0,
        window_us: None,
    })
}

fn window(us: Option<f64>) -> Option<Ceilings> {
    ceil(3000.0, 800.0).map(|c| Ceilings { window_us: us, ..c })
}

#[test]
fn window_shift_is_the_window_difference_per_launch() {
    // A host whose timed window costs 1.6 µs more: a graph of 4 launches reads 0.4 µs slower
    // per launch, a single launch 1.6 µs.
    let (base, now) = (window(Some(0.9)), window(Some(2.5)));
    assert_close!(window_shift_ms(base, now, 4).unwrap(), 0.4e-3);
    assert_close!(window_shift_ms(base, now, 1).unwrap(), 1.6e-3);
    // A cheaper window moves the baseline down.
    assert_close!(window_shift_ms(now, base, 2).unwrap(), -0.8e-3);
    // Either side unmeasured (older rounds, no ceilings): no shift.
    assert_eq!(window_shift_ms(window(None), now, 4), None);
    assert_eq!(window_shift_ms(base, window(None), 4), None);
    assert_eq!(window_shift_ms(None, now, 4), None);
    assert_eq!(window_shift_ms(base, now, 0), None);
}

#[test]
fn overhead_shift_accounts_for_window_and_batch() {
    // Entry from single-GPU rounds: window 2.5 µs over batch 4 = 0.625 µs per launch. A 2-GPU
    // host (window 4.19 µs) that picked batch 2 pays 2.095 µs per launch: +1.47 µs.
    let now = window(Some(4.19));
    let s = overhead_shift_ms(Some(0.625e-3), None, now, 2).unwrap();
    assert_close!(s, 2.095e-3 - 0.625e-3);
    // Same host, same batch: nothing.
    assert_close!(
        overhead_shift_ms(Some(0.625e-3), None, window(Some(2.5)), 4).unwrap(),
        0.0
    );
    // This machine did not measure its window: no shift.
    assert_eq!(
        overhead_shift_ms(Some(0.625e-3), None, window(None), 2),
        None
    );
    // Rounds without batches: the window difference over this batch.
    let base = window(Some(2.5));
    assert_eq!(
        overhead_shift_ms(None, base, now, 2),
        window_shift_ms(base, now, 2)
    );
}

#[test]
fn window_shift_clears_a_host_whose_window_costs_more() {
    // Measured on a 2-GPU H200 host against single-GPU baselines: cuBLAS 1024³ 6.59 µs vs
    // 6.19 µs (batch 4), a 28.77 µs GEMM vs 27.17 µs (batch 1). Without the shift the first is
    // ambiguous (within the floor), the second a false regression; with it both pass, and a
    // real +10% on top of the shift is still called.
    let rule = Rule {
        tolerance: 0.05,
        floor_ms: 0.65e-3,
    };
    let (base, now) = (window(Some(0.90)), window(Some(2.52)));
    for (now_us, base_us, batch) in [(6.59, 6.19, 4), (28.77, 27.17, 1)] {
        let raw = compare_with(now_us * 1e-3, 0.01, base_us * 1e-3, 0.01, rule);
        assert_ne!(raw.change, Change::Same);
        let shift = window_shift_ms(base, now, batch).unwrap();
        let fair = compare_with(now_us * 1e-3, 0.01, base_us * 1e-3 + shift, 0.01, rule);
        assert_eq!(fair.change, Change::Same, "{now_us} vs {base_us}: {fair:?}");
        let slower = compare_with(
            (base_us * 1e-3 + shift) * 1.10,
            0.01,
            base_us * 1e-3 + shift,
            0.01,
            rule,
        );
        assert_eq!(slower.change, Change::Slow);
    }
}

#[test]
fn machine_factor_uses_the_family_bound() {
    // The baseline machine copies at 3000 GB/s, this one at 2400: a memory-bound kernel is
    // expected 1.25× slower here. GEMM went 800 → 1000 TFLOP/s: compute-bound 0.8×.
    let (base, now) = (ceil(3000.0, 800.0), ceil(2400.0, 1000.0));
    assert_close!(machine_factor(true, base, now).unwrap(), 1.25);
    assert_close!(machine_factor(false, base, now).unwrap(), 0.8);
    // Same machine: 1.
    assert_eq!(machine_factor(true, base, base), Some(1.0));
    // Either side missing.
    assert_eq!(machine_factor(true, None, now), None);
    assert_eq!(machine_factor(false, base, None), None);
    assert_eq!(machine_factor(true, None, None), None);
    // A ceiling that was not measured (0) or is not finite.
    assert_eq!(machine_factor(true, ceil(0.0, 800.0), now), None);
    assert_eq!(machine_factor(true, base, ceil(0.0, 1000.0)), None);
    assert_eq!(machine_factor(false, base, ceil(2400.0, 0.0)), None);
    assert_eq!(machine_factor(false, ceil(3000.0, 0.0), now), None);
    assert_eq!(machine_factor(true, ceil(f64::NAN, 800.0), now), None);
    assert_eq!(
        machine_factor(false, base, ceil(2400.0, f64::INFINITY)),
        None
    );
    // Only the ceiling of the family's bound matters.
    assert_eq!(
        machine_factor(true, ceil(3000.0, 0.0), ceil(3000.0, 0.0)),
        Some(1.0)
    );
    assert_eq!(
        machine_factor(false, ceil(0.0, 800.0), ceil(0.0, 800.0)),
        Some(1.0)
    );
}

// ---------------------------------------------------------------------------------------------
// Same-run paired A/B test
// ---------------------------------------------------------------------------------------------

fn check_interval(p: &kernelgate::gate::Paired) {
    assert!(p.lo <= p.ratio && p.ratio <= p.hi, "{p:?}");
    assert!(
        p.min_detectable >= 0.0 && p.min_detectable.is_finite(),
        "{p:?}"
    );
}

#[test]
fn paired_identical_samples_are_the_same() {
    let (base, _) = interleaved(1.0, 0.003, 60, 1);
    let p = paired(&base, &base, 0.05).unwrap();
    assert_eq!(p.change, Change::Same);
    assert_eq!((p.ratio, p.lo, p.hi, p.pairs), (1.0, 1.0, 1.0, 60));
    assert_eq!(p.tolerance, 0.05);
    check_interval(&p);
}

#[test]
fn paired_calls_ten_percent() {
    for seed in 1..=5 {
        let (base, new) = interleaved(1.10, 0.003, 60, seed);
        let p = paired(&base, &new, 0.05).unwrap();
        assert_eq!(p.change, Change::Slow, "seed {seed}: {p:?}");
        assert!((p.ratio - 1.10).abs() < 0.005, "{p:?}");
        assert!(p.lo > 1.0 && p.hi - 1.0 >= 0.05, "{p:?}");
        check_interval(&p);
    }
}

#[test]
fn paired_passes_three_percent() {
    for seed in 1..=5 {
        let (base, new) = interleaved(1.03, 0.003, 60, seed);
        let p = paired(&base, &new, 0.05).unwrap();
        assert_eq!(p.change, Change::Same, "seed {seed}: {p:?}");
        assert!((p.ratio - 1.03).abs() < 0.005, "{p:?}");
        check_interval(&p);
    }
}

#[test]
fn paired_calls_five_percent_with_small_jitter() {
    // At exactly the tolerance: the interval excludes 1 and reaches 1.05.
    for seed in 1..=5 {
        let (base, new) = interleaved(1.05, 0.003, 60, seed);
        let p = paired(&base, &new, 0.05).unwrap();
        assert_eq!(p.change, Change::Slow, "seed {seed}: {p:?}");
        assert!(p.lo > 1.0, "{p:?}");
        assert!(p.hi - 1.0 >= 0.05, "{p:?}");
        check_interval(&p);
    }
}

#[test]
fn paired_noisy_unchanged_kernel_is_never_slow() {
    for seed in 1..=20 {
        let (base, new) = interleaved(1.0, 0.20, 60, seed);
        let p = paired(&base, &new, 0.05).unwrap();
        assert!(
            matches!(p.change, Change::Ambiguous | Change::Same),
            "seed {seed}: {p:?}"
        );
        check_interval(&p);
    }
}

#[test]
fn paired_calls_faster() {
    let (base, new) = interleaved(0.85, 0.003, 60, 3);
    let p = paired(&base, &new, 0.05).unwrap();
    assert_eq!(p.change, Change::Fast, "{p:?}");
    assert!(p.hi < 1.0 && 1.0 - p.lo >= 0.05, "{p:?}");
    check_interval(&p);
}

#[test]
fn paired_without_usable_pairs_is_none() {
    assert_eq!(paired(&[], &[], 0.05), None);
    assert_eq!(paired(&[1.0, 2.0], &[], 0.05), None);
    // Non-positive or non-finite samples are not usable pairs.
    assert_eq!(
        paired(
            &[0.0, -1.0, f64::NAN, 1.0],
            &[1.0, 1.0, 1.0, f64::INFINITY],
            0.05
        ),
        None
    );
    // Only the usable pairs count; extra samples on one side are ignored.
    let p = paired(&[1.0, 0.0, 1.0, 1.0], &[1.2, 1.0, 1.2, 1.2, 9.0], 0.05).unwrap();
    assert_eq!(p.pairs, 3);
    assert_close!(p.ratio, 1.2);
    // A single pair: its interval is the pair itself, so it can still be called.
    let p = paired(&[1.0], &[1.2], 0.05).unwrap();
    assert_eq!(p.pairs, 1);
    assert_close!(p.lo, 1.2);
    assert_close!(p.hi, 1.2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn paired_interval_contains_the_ratio(pairs in prop::collection::vec((1e-6f64..1e3, 1e-6f64..1e3), 1..120),
                                          tol in 0.0f64..0.5) {
        let (base, new): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let p = paired(&base, &new, tol).unwrap();
        prop_assert_eq!(p.pairs, base.len());
        prop_assert!(p.lo <= p.ratio && p.ratio <= p.hi, "{:?}", p);
    }

    #[test]
    fn paired_never_calls_slow_when_nothing_got_slower(pairs in prop::collection::vec((1e-6f64..1e3, 1e-3f64..=1.0), 1..120),
                                                       tol in 0.0f64..0.5) {
        let base: Vec<f64> = pairs.iter().map(|(b, _)| *b).collect();
        let new: Vec<f64> = pairs.iter().map(|(b, f)| b * f).collect();
        prop_assert!(base.iter().zip(&new).all(|(b, n)| n <= b));
        let p = paired(&base, &new, tol).unwrap();
        prop_assert_ne!(p.change, Change::Slow, "{:?}", p);
        prop_assert!(p.lo <= p.ratio && p.ratio <= p.hi, "{:?}", p);
    }
}

// ---------------------------------------------------------------------------------------------
// Run summary
// ---------------------------------------------------------------------------------------------

fn rec(m: u64, backend: &str, verdict: Verdict, mdc: Option<f64>) -> Record {
    let mut r = common::record((m, 64, 64), backend, verdict, Some(0.01), Some(0.01));
    r.min_detectable = mdc;
    r
}

fn summary_records() -> Vec<Record> {
    let mut v = vec![
        rec(1, "cuda", Verdict::Pass, Some(0.05)),
        rec(2, "cuda", Verdict::Pass, Some(0.08)),
        rec(3, "cuda", Verdict::Ambiguous, Some(0.12)),
        rec(4, "cuda", Verdict::Regression, Some(0.05)),
        rec(5, "cublas", Verdict::New, None),
        rec(6, "cuda", Verdict::Wrong, None),
        rec(7, "torch", Verdict::Pass, Some(0.10)),
        rec(8, "cublas", Verdict::Faster, Some(0.30)),
        rec(9, "torch", Verdict::Ambiguous, Some(0.06)),
    ];
    v[1].graph = true;
    v[3].graph = true;
    v[6].capture_error = Some("operation not permitted when stream is capturing".into());
    v[8].capture_error = Some("cudaErrorStreamCaptureUnsupported".into());
    // One case on a slow host: its hold was raised and two late samples were dropped; one
    // worker did not report its enqueue time.
    v[2].hold_us = 80.0;
    v[2].host_enqueue_us = 26.0;
    v[2].late_samples = 2;
    v[4].host_enqueue_us = 0.0;
    // One comparison against a single-machine baseline, one against three machines.
    v[0].baseline_machines = Some(1);
    v[1].baseline_machines = Some(3);
    v
}

#[test]
fn run_summary_names_cases_whose_baseline_timed_other_code() {
    let mut recs = summary_records();
    // a compared case whose entry stored another source hash; a new case (no comparison) with
    // one is not named
    recs[1].baseline_source_hash = Some("7078d5a161f992c8e4ffd75b".into());
    recs[4].baseline_source_hash = Some("7078d5a161f992c8e4ffd75b".into());
    recs[4].ratio = None;
    let s = RunSummary::of(&recs, HOLD);
    assert_eq!(s.other_code_baselines, vec![recs[1].case.clone()]);
    assert!(
        s.render().contains(&format!(
            "note: 1 case(s) compared with a baseline that timed other code (the kernel or peer changed since; importing this run restarts their rounds): {}",
            recs[1].case
        )),
        "{}",
        s.render()
    );
    assert!(!RunSummary::of(&summary_records(), HOLD)
        .render()
        .contains("other code"));
}

#[test]
fn run_summary_counts_and_distribution() {
    let recs = summary_records();
    let s = RunSummary::of(&recs, HOLD);
    let e = s.host_enqueue_us.clone().expect("8 cases report it");
    assert_eq!((e.n, e.p50, e.max), (8, 4.0, 26.0));
    assert_eq!(
        (s.raised_holds, s.max_hold_us, s.late_samples),
        (1, 80.0, 2)
    );
    // Against a run that asked for an 80 µs hold, nothing was raised.
    assert_eq!(RunSummary::of(&recs, 80.0).raised_holds, 0);
    assert_eq!(s.single_machine_baselines, vec![recs[0].case.clone()]);
    assert!(s.other_code_baselines.is_empty());
    let verdicts: Vec<(&str, usize)> = s.verdicts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        verdicts,
        [
            ("ambiguous", 2),
            ("faster", 1),
            ("new", 1),
            ("pass", 3),
            ("regression", 1),
            ("wrong", 1)
        ]
    );
    assert_eq!(s.ambiguous, 2);
    // Over the seven compared cases: 0.05 0.05 0.06 0.08 0.10 0.12 0.30.
    let d = s.min_detectable.clone().unwrap();
    assert_eq!(d.n, 7);
    assert_eq!((d.min, d.max), (0.05, 0.30));
    assert_close!(d.p50, 0.08);
    assert_close!(d.p90, 0.12 + (0.30 - 0.12) * 0.4);
    // Blind at 10%: every case whose min_detectable is ≥ 0.10, sorted by name.
    assert_eq!(BLIND_AT, 0.10);
    assert_eq!(
        s.blind,
        [
            "gemm::cublas::m8_n64_k64_bf16",
            "gemm::cuda::m3_n64_k64_bf16",
            "gemm::torch::m7_n64_k64_bf16",
        ]
    );
    assert_eq!(s.graph_timed, 2);
    assert_eq!(
        s.capture_failed,
        [
            "gemm::torch::m7_n64_k64_bf16",
            "gemm::torch::m9_n64_k64_bf16"
        ]
    );
    // It round-trips through JSON (it is stored in results files).
    let back: RunSummary = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn regressions_shared_with_a_peer_on_the_same_shape_are_named() {
    let dims = (6144, 6144, 6144);
    // Ours 1.084x (a regression); cuBLAS on the same shape 1.179x (beyond its 5%); torch 1.02x.
    let ours = common::record(dims, "cuda", Verdict::Regression, Some(0.6504), Some(0.6));
    let cublas = common::record(dims, "cublas", Verdict::Regression, Some(0.7074), Some(0.6));
    let torch = common::record(dims, "torch", Verdict::Pass, Some(0.612), Some(0.6));
    // Another shape's peer slowing says nothing about this one.
    let other = common::record(
        (4096, 4096, 4096),
        "cublas",
        Verdict::Ambiguous,
        Some(0.3),
        Some(0.25),
    );
    let recs = vec![ours, cublas, torch, other];
    let shared = shared_slowdowns(&recs);
    assert_eq!(
        shared,
        [
            "gemm::cublas::m6144_n6144_k6144_bf16 1.179x; also cuda 1.084x",
            "gemm::cuda::m6144_n6144_k6144_bf16 1.084x; also cublas 1.179x",
        ]
    );
    let s = RunSummary::of(&recs, HOLD);
    assert_eq!(s.shared_slowdowns, shared);
    assert!(s.render().contains("note: 2 regression(s) whose shape also ran slower beyond tolerance on another backend in this run"));
    // A regression alone on its shape (the peer within tolerance) is not named.
    let alone = vec![
        common::record(dims, "cuda", Verdict::Regression, Some(0.6504), Some(0.6)),
        common::record(dims, "cublas", Verdict::Pass, Some(0.61), Some(0.6)),
    ];
    assert!(shared_slowdowns(&alone).is_empty());
    assert!(!RunSummary::of(&alone, HOLD).render().contains("also"));
    // Another dtype is another shape.
    let mut fp16 = common::record(dims, "cublas", Verdict::Regression, Some(0.7074), Some(0.6));
    fp16.dtype = "fp16".into();
    let mixed = vec![
        common::record(dims, "cuda", Verdict::Regression, Some(0.6504), Some(0.6)),
        fp16,
    ];
    assert!(shared_slowdowns(&mixed).is_empty());
}

#[test]
fn run_summary_render() {
    let s = RunSummary::of(&summary_records(), HOLD);
    insta::assert_snapshot!("run_summary_render", s.render());
}

#[test]
fn run_summary_warns_of_cases_timed_on_a_slowed_gpu() {
    let mut recs = vec![
        rec(1, "cuda", Verdict::Throttled, Some(0.05)),
        rec(2, "cuda", Verdict::Pass, Some(0.05)),
        rec(3, "cublas", Verdict::Faster, Some(0.05)),
    ];
    recs[0].slowdown = vec!["software thermal slowdown".into()];
    recs[2].slowdown = vec![
        "hardware thermal slowdown".into(),
        "software thermal slowdown".into(),
    ];
    let s = RunSummary::of(&recs, HOLD);
    assert_eq!(s.throttled.len(), 2);
    assert_eq!(s.verdicts.get("throttled"), Some(&1));
    let text = s.render();
    let line = text
        .lines()
        .find(|l| l.starts_with("WARNING: the GPU slowed its clocks"))
        .unwrap_or_else(|| panic!("no throttle warning in:\n{text}"));
    assert!(
        line.starts_with(
            "WARNING: the GPU slowed its clocks (hardware thermal slowdown, software thermal slowdown) while 2 case(s) were timed"
        ),
        "{line}"
    );
    assert!(
        line.contains(&recs[0].case)
            && line.contains(&recs[2].case)
            && !line.contains(&recs[1].case)
    );
    // A cool run says nothing of it.
    recs.iter_mut().for_each(|r| r.slowdown.clear());
    assert!(!RunSummary::of(&recs, HOLD)
        .render()
        .contains("slowed its clocks"));
}

#[test]
fn run_summary_warns_of_a_machine_below_the_baselines_ceilings() {
    let mut recs: Vec<Record> = (1..=3)
        .map(|m| rec(m, "cuda", Verdict::Pass, Some(0.05)))
        .collect();
    // Session 23's throttled H100: every compared case's factor 1.52 (34% below).
    recs.iter_mut().for_each(|r| r.machine_factor = Some(1.517));
    let s = RunSummary::of(&recs, HOLD);
    let m = s.slow_machine.expect("far below");
    assert!((m - (1.0 - 1.0 / 1.517)).abs() < 1e-12);
    assert!(s
        .render()
        .contains("WARNING: this machine measured its copy bandwidth / GEMM rate 34% below"));
    // Healthy spread (a few percent either way) and no factors at all: no warning.
    for (r, f) in recs.iter_mut().zip([1.03, 0.98, 1.05]) {
        r.machine_factor = Some(f);
    }
    assert_eq!(RunSummary::of(&recs, HOLD).slow_machine, None);
    recs.iter_mut().for_each(|r| r.machine_factor = None);
    assert_eq!(RunSummary::of(&recs, HOLD).slow_machine, None);
}

#[test]
fn run_summary_of_nothing_compared() {
    let recs = vec![
        rec(1, "cuda", Verdict::New, None),
        rec(2, "cuda", Verdict::Updated, None),
    ];
    let s = RunSummary::of(&recs, HOLD);
    assert_eq!(s.min_detectable, None);
    assert!(s.blind.is_empty() && s.capture_failed.is_empty());
    assert_eq!((s.ambiguous, s.graph_timed), (0, 0));
    let text = s.render();
    assert_eq!(
        text,
        "verdicts: 1 new, 1 updated\nambiguous: 0\nno case was compared with a baseline or an A/B base\n\
         host enqueue of a sample (2 cases): median 4.0 µs, max 4.0 µs; hold raised in 0 case(s) (longest 20 µs); 0 late sample(s) dropped\n"
    );
    let s = RunSummary::of(&[], HOLD);
    assert!(s.verdicts.is_empty());
    assert_eq!(
        s.render(),
        "verdicts: \nambiguous: 0\nno case was compared with a baseline or an A/B base\n"
    );
}

#[test]
fn run_summary_of_a_same_run_ab() {
    use kernelgate::results::AbOutcome;
    let ab = |base: &[f64], new: &[f64], status: &str| AbOutcome {
        base: "HEAD~1".into(),
        base_hash: "0123".into(),
        status: status.into(),
        paired: if status == "measured" {
            paired(base, new, 0.05)
        } else {
            None
        },
        base_ms: Some(0.01),
    };
    let (b1, n1) = interleaved(1.10, 0.003, 60, 1); // 10% slower
    let (b2, n2) = interleaved(0.80, 0.003, 60, 2); // 20% faster
    let (b3, _) = interleaved(1.0, 0.003, 60, 3);
    let mut recs = vec![
        rec(1, "cuda", Verdict::Regression, Some(0.02)),
        rec(2, "cuda", Verdict::Faster, Some(0.02)),
        rec(3, "cuda", Verdict::Pass, Some(0.02)),
        rec(4, "cuda", Verdict::Pass, None),
        rec(5, "cublas", Verdict::Pass, Some(0.02)),
    ];
    recs[0].ab = Some(ab(&b1, &n1, "measured"));
    recs[1].ab = Some(ab(&b2, &n2, "measured"));
    recs[2].ab = Some(ab(&b3, &b3, "measured"));
    recs[3].ab = Some(ab(&[], &[], "identical"));
    let s = RunSummary::of(&recs, HOLD)
        .ab
        .expect("three measured, one identical");
    assert_eq!(
        (
            s.cases,
            s.slower,
            s.faster,
            s.same,
            s.ambiguous,
            s.identical
        ),
        (3, 1, 1, 1, 0, 1)
    );
    let (g, lo, hi) = (s.geomean.unwrap(), s.min.unwrap(), s.max.unwrap());
    assert!((g - (1.10f64 * 0.80).cbrt()).abs() < 0.01, "{g}");
    assert!(
        (lo - 0.80).abs() < 0.01 && (hi - 1.10).abs() < 0.01,
        "{lo} {hi}"
    );
    let line = s.render();
    assert!(
        line.starts_with("A/B against the base (3 cases): geomean now/base 0.95"),
        "{line}"
    );
    assert!(
        line.contains("1 slower, 1 faster, 1 same, 0 ambiguous; 1 case(s) identical"),
        "{line}"
    );
    assert!(RunSummary::of(&recs, HOLD).render().contains(&line));
    // Only identical bases: nothing measured, no ratio (and no NaN in a results file).
    let only = vec![recs[3].clone()];
    let s = RunSummary::of(&only, HOLD).ab.unwrap();
    assert_eq!((s.cases, s.geomean), (0, None));
    assert!(s
        .render()
        .starts_with("A/B against the base: no case measured; 1 case(s) identical"));
    assert!(serde_json::to_string(&s)
        .unwrap()
        .contains("\"geomean\":null"));
    // No A/B at all: no line.
    assert_eq!(RunSummary::of(&recs[4..], HOLD).ab, None);
}

#[test]
fn run_summary_verdict_keys_are_the_record_verdict_names() {
    // The summary sits next to the records in a results file: its keys should be the names
    // the records' `verdict` fields use (`missing_baseline`, not `missingbaseline`).
    let recs: Vec<Record> = common::ALL_VERDICTS
        .iter()
        .enumerate()
        .map(|(i, v)| rec(i as u64 + 1, "cuda", *v, None))
        .collect();
    let s = RunSummary::of(&recs, HOLD);
    let keys: Vec<&str> = s.verdicts.keys().map(String::as_str).collect();
    for v in common::ALL_VERDICTS {
        let name = serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string();
        assert!(keys.contains(&name.as_str()), "{name} not in {keys:?}");
    }
}

#[test]
fn distribution_of() {
    assert_eq!(Distribution::of(&[]), None);
    assert_eq!(Distribution::of(&[f64::NAN, f64::INFINITY]), None);
    let d = Distribution::of(&[0.3, 0.1, f64::INFINITY, 0.2]).unwrap();
    assert_eq!((d.n, d.min, d.max), (3, 0.1, 0.3));
    assert_close!(d.p50, 0.2);
    assert_close!(d.p90, 0.28);
}

#[test]
fn family_table_per_family_and_backend() {
    let t = family_table(&summary_records());
    assert_eq!(
        t,
        "| family | backend | cases | median MDC | max MDC |\n|---|---|---|---|---|\n\
         | gemm | cublas | 1 | 30.0% | 30.0% |\n\
         | gemm | cuda | 4 | 6.5% | 12.0% |\n\
         | gemm | torch | 2 | 8.0% | 10.0% |\n"
    );
}

// ---------------------------------------------------------------------------------------------
// Floor derivation from baselines
// ---------------------------------------------------------------------------------------------

fn spin_file() -> BaselineFile {
    file(
        "spin",
        vec![
            // 5.2 µs on two machines, 0.2 µs each side of the centre.
            (
                "us5_fp32",
                entry_of(&[(0.0050, "a"), (0.0054, "b"), (0.0050, "a")]),
            ),
            // 10 µs on three machines; the farthest is 0.62 µs above the centre.
            (
                "us10_fp32",
                entry_of(&[(0.0100, "a"), (0.0100, "b"), (0.01062, "c")]),
            ),
            // One machine: no machine-to-machine difference to learn from.
            ("us2_fp32", entry_of(&[(0.002, "a"), (0.0025, "a")])),
            // Unknown (schema 1) rounds are one machine beside a known one.
            ("us3_fp32", entry_of(&[(0.0030, ""), (0.0031, "b")])),
            // 20 µs is not tiny (< TINY_MS only).
            ("us20_fp32", entry_of(&[(0.020, "a"), (0.030, "b")])),
        ],
    )
}

fn norm_file() -> BaselineFile {
    file(
        "rmsnorm",
        vec![
            ("big_bf16", entry_of(&[(0.258, "a"), (0.262, "b")])),
            ("small_bf16", entry_of(&[(0.015, "a"), (0.0151, "a")])),
        ],
    )
}

#[test]
fn tiny_spreads_and_derived_floor() {
    assert_eq!(TINY_MS, 0.020);
    let files = [spin_file(), norm_file()];
    let v = tiny_spreads_us(&files);
    let names: Vec<&str> = v.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(
        names,
        [
            "spin::cuda::us3_fp32",
            "spin::cuda::us5_fp32",
            "spin::cuda::us10_fp32"
        ],
        "ascending; one-machine, ≥ 20 µs and big entries left out"
    );
    assert!((v[0].0 - 0.05).abs() < 1e-9, "{v:?}");
    assert!((v[1].0 - 0.2).abs() < 1e-9, "{v:?}");
    assert!((v[2].0 - 0.62).abs() < 1e-9, "{v:?}");
    // 0.62 µs · 1.25 = 0.775 µs, rounded up to 0.05 µs.
    let f = derived_floor_us(&files).unwrap();
    assert!((f - 0.8).abs() < 1e-9, "{f}");
    // It covers every measured difference.
    assert!(v.iter().all(|(d, _)| *d <= f));
    // Without multi-machine tiny entries no floor can be derived.
    assert_eq!(derived_floor_us(&[norm_file()]), None);
    assert!(tiny_spreads_us(&[norm_file()]).is_empty());
    assert_eq!(derived_floor_us(&[]), None);
}

#[test]
fn family_spread_and_render() {
    let files = [spin_file(), norm_file(), file("empty", vec![])];
    let fs = family_spread(&files);
    assert_eq!(fs.len(), 2, "files without entries are left out");
    assert_eq!((fs[0].kernel.as_str(), fs[0].entries), ("spin", 5));
    assert_eq!((fs[1].kernel.as_str(), fs[1].entries), ("rmsnorm", 2));
    assert_eq!(fs[0].min_machines, 1);
    assert_eq!(fs[1].min_machines, 1);
    // One-machine entries: spin us2 (two rounds of "a") and rmsnorm small_bf16.
    assert_eq!((fs[0].single_machine, fs[1].single_machine), (1, 1));
    // Rounds of DUTY_MIN_SAMPLE_US (100 µs) or more timed without the duty-cycle hold: rmsnorm
    // big_bf16 (262 µs); none of the spin entries reaches it.
    assert_eq!((fs[0].without_duty_hold, fs[1].without_duty_hold), (0, 1));
    let mut held = norm_file();
    for e in held.entries.values_mut() {
        e.rounds.last_mut().unwrap().duty_hold = Some(1.0);
    }
    assert_eq!(family_spread(&[held])[0].without_duty_hold, 0);
    let bm = files[0]
        .entries
        .values()
        .map(|e| e.between)
        .fold(0.0, f64::max);
    assert_eq!(fs[0].between_max, bm);
    let wm = files[1]
        .entries
        .values()
        .map(|e| e.within)
        .fold(0.0, f64::max);
    assert_eq!(fs[1].within_max, wm);
    let text = render_spread(common::GPU, &files);
    assert!(
        text.starts_with(&format!("## {}\n\n| family | entries |", common::GPU)),
        "{text}"
    );
    assert!(text.contains("\n| spin | 5 | 1 | 1 | 0 | "), "{text}");
    assert!(text.contains("\n| rmsnorm | 2 | 1 | 1 | 1 | "), "{text}");
    assert!(
        text.contains("\n1 entry timed samples of 100 µs or more without the duty-cycle hold"),
        "{text}"
    );
    assert!(
        text.contains("kernels under 20 µs on ≥ 2 machines: 3; largest machine-to-machine difference 0.620 µs (spin::cuda::us10_fp32); derived floor 0.80 µs"),
        "{text}"
    );
    let text = render_spread("NVIDIA H200", &[norm_file()]);
    assert!(
        text.ends_with(
            "\nno kernel under 20 µs measured on ≥ 2 machines: no floor can be derived\n"
        ),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// Self-test pass rule
// ---------------------------------------------------------------------------------------------

mod selftest_rule {
    use super::*;
    use kernelgate::selftest::{requirements, Report, Trial};

    fn trial(mode: &str, level: f64, called: bool) -> Trial {
        let verdict = if called {
            Verdict::Regression
        } else if level > 0.0 {
            Verdict::Ambiguous
        } else {
            Verdict::Pass
        };
        let ratio = 1.0 + level / 100.0;
        let mut r = common::record(
            (65536, 4096, 1),
            "cuda",
            verdict,
            Some(0.258 * ratio),
            Some(0.258),
        );
        r.min_detectable = Some(0.05);
        Trial {
            mode: mode.into(),
            level_pct: level,
            inject_ns: (0.258e6 * level / 100.0).round() as u64,
            verdict,
            ratio: Some(ratio),
            min_detectable: Some(0.05),
            record: Box::new(r),
        }
    }

    fn report(trials: Vec<Trial>) -> Report {
        Report {
            case: "rmsnorm::cuda::m65536_n4096_bf16".into(),
            gpu: common::gpu_info(),
            plain_ms: 0.258,
            tolerance_pct: 5.0,
            slack_ns: 2000.0,
            trials,
        }
    }

    /// Three runs per level and mode, with the calls a working gate makes.
    fn good() -> Vec<Trial> {
        let mut v = Vec::new();
        for _ in 0..3 {
            for (mode, level, called) in [
                ("baseline", 0.0, false),
                ("baseline", 3.0, false),
                ("baseline", 5.0, false), // not required either way in baseline mode
                ("baseline", 10.0, true),
                ("ab", 0.0, false),
                ("ab", 3.0, false),
                ("ab", 5.0, true),
                ("ab", 10.0, true),
            ] {
                v.push(trial(mode, level, called));
            }
        }
        v
    }

    #[test]
    fn requirements_at_five_percent() {
        let mut r = requirements(5.0);
        r.sort_by(|a, b| a.1.cmp(b.1).then(a.0.total_cmp(&b.0)));
        assert_eq!(
            r,
            [
                (0.0, "ab", false),
                (3.0, "ab", false),
                (5.0, "ab", true),
                (10.0, "ab", true),
                (0.0, "baseline", false),
                (3.0, "baseline", false),
                (10.0, "baseline", true),
            ]
        );
    }

    #[test]
    fn a_working_gate_passes() {
        let r = report(good());
        assert_eq!(r.called("baseline", 10.0), (3, 3));
        assert_eq!(r.called("ab", 5.0), (3, 3));
        assert_eq!(r.called("baseline", 3.0), (0, 3));
        assert_eq!(r.called("ab", 7.0), (0, 0));
        assert!(r.passed());
        // Baseline mode may go either way at +5%.
        let mut t = good();
        for x in t
            .iter_mut()
            .filter(|x| x.mode == "baseline" && x.level_pct == 5.0)
        {
            *x = trial("baseline", 5.0, true);
        }
        assert!(report(t).passed());
    }

    /// `good()` with the first run of (mode, level) replaced by one that is (not) called.
    fn with_one(mode: &str, level: f64, called: bool) -> Report {
        let mut t = good();
        let i = t
            .iter()
            .position(|x| x.mode == mode && x.level_pct == level)
            .unwrap();
        t[i] = trial(mode, level, called);
        report(t)
    }

    #[test]
    fn every_requirement_fails_the_selftest() {
        // +10% must be called in every run of both modes.
        assert!(!with_one("baseline", 10.0, false).passed());
        assert!(!with_one("ab", 10.0, false).passed());
        // +5% must be called in every A/B run.
        assert!(!with_one("ab", 5.0, false).passed());
        // +3% and 0% must be called in none.
        assert!(!with_one("baseline", 3.0, true).passed());
        assert!(!with_one("ab", 3.0, true).passed());
        assert!(!with_one("baseline", 0.0, true).passed());
        assert!(!with_one("ab", 0.0, true).passed());
        let r = with_one("ab", 3.0, true);
        assert_eq!(r.called("ab", 3.0), (1, 3));
    }

    #[test]
    fn ambiguous_is_not_a_call() {
        // An ambiguous verdict at +10% is a miss, not a call.
        let mut t = good();
        let i = t
            .iter()
            .position(|x| x.mode == "ab" && x.level_pct == 10.0)
            .unwrap();
        t[i].verdict = Verdict::Ambiguous;
        let r = report(t);
        assert_eq!(r.called("ab", 10.0), (2, 3));
        assert!(!r.passed());
    }

    #[test]
    fn levels_not_run_do_not_count() {
        // Baseline mode only (e.g. no A/B): the A/B requirements are vacuous.
        let t: Vec<Trial> = good()
            .into_iter()
            .filter(|x| x.mode == "baseline")
            .collect();
        assert!(report(t).passed());
        // Only +10% in both modes.
        let t: Vec<Trial> = good().into_iter().filter(|x| x.level_pct == 10.0).collect();
        assert!(report(t).passed());
        // Levels that are not required (7%) do not count either way.
        let mut t = good();
        t.push(trial("ab", 7.0, false));
        t.push(trial("baseline", 7.0, true));
        assert!(report(t).passed());
        // Nothing run.
        assert!(report(vec![]).passed());
        // But what was run still has to hold.
        let t: Vec<Trial> = vec![trial("ab", 5.0, false)];
        assert!(!report(t).passed());
    }

    #[test]
    fn other_tolerances_move_the_required_levels() {
        // At 4%: +8% must be called in both modes, +4% in A/B.
        let mut r = report(vec![
            trial("baseline", 8.0, true),
            trial("ab", 8.0, true),
            trial("ab", 4.0, true),
            trial("ab", 3.0, false),
        ]);
        r.tolerance_pct = 4.0;
        assert!(r.passed());
        r.trials[2] = trial("ab", 4.0, false);
        assert!(!r.passed());
        // +10% is no longer required at 4%.
        let mut r = report(vec![trial("baseline", 10.0, false)]);
        r.tolerance_pct = 4.0;
        assert!(r.passed());
    }

    #[test]
    fn render_says_passed_or_failed() {
        let text = report(good()).render();
        assert!(
            text.starts_with(&format!(
                "kernelgate selftest: rmsnorm::cuda::m65536_n4096_bf16 on {} (GPU-00000000-1111-2222-3333-444444444444), plain median 258.00 µs, tolerance 5%, calibrated slack 2.00 µs\n",
                common::GPU
            )),
            "{text}"
        );
        assert!(
            text.contains("\n| ab | +5% | 3/3 | 1.050 1.050 1.050 | 5.0% | all called |\n"),
            "{text}"
        );
        assert!(
            text.contains("\n| baseline | +3% | 0/3 | 1.030 1.030 1.030 | 5.0% | none called |\n"),
            "{text}"
        );
        assert!(
            text.contains("\n| baseline | +5% | 0/3 | 1.050 1.050 1.050 | 5.0% | - |\n"),
            "{text}"
        );
        assert!(text.trim_end().ends_with("selftest PASSED"), "{text}");
        let text = with_one("baseline", 10.0, false).render();
        assert!(text.contains("\n| baseline | +10% | 2/3 |"), "{text}");
        assert!(text.trim_end().ends_with("selftest FAILED"), "{text}");
        // A trial on a slowed GPU shows nothing either way: inconclusive, not passed.
        let mut r = report(good());
        r.trials[0].verdict = Verdict::Throttled;
        assert_eq!(r.throttled(), 1);
        assert!(!r.passed());
        let text = r.render();
        assert!(
            text.trim_end().ends_with(
                "selftest INCONCLUSIVE: the GPU slowed its clocks (thermal or hardware slowdown) in 1 trial(s), which the gate does not judge; rerun on a cooled GPU"
            ),
            "{text}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A/B base export from git
// ---------------------------------------------------------------------------------------------

mod ab_base {
    use super::*;
    use kernelgate::abtest::materialize;
    use kernelgate::Error;

    fn have_git() -> bool {
        Command::new("git")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    fn git(repo: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args([
                "-c",
                "user.name=kernelgate test",
                "-c",
                "user.email=test@example.invalid",
            ])
            .args([
                "-c",
                "commit.gpgsign=false",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .env("GIT_AUTHOR_NAME", "kernelgate test")
            .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .env("GIT_COMMITTER_NAME", "kernelgate test")
            .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn write(path: PathBuf, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A repository with two commits of kernels/; returns (repo, first sha, second sha).
    fn repo(dir: &Path) -> (PathBuf, String, String) {
        let root = dir.join("repo");
        std::fs::create_dir_all(&root).unwrap();
        git(&root, &["init", "-q"]);
        write(root.join("kernels/a.cu"), "// a v1\n#include \"x.cuh\"\n");
        write(root.join("kernels/x.cuh"), "// x v1\n");
        write(root.join("kernels/dev/b.cu"), "// not exported\n");
        write(root.join("kernels/README.md"), "not a kernel\n");
        write(root.join("src/lib.rs"), "// host code\n");
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "first"]);
        let first = git(&root, &["rev-parse", "HEAD"]);
        write(root.join("kernels/a.cu"), "// a v2\n#include \"x.cuh\"\n");
        git(&root, &["commit", "-q", "-am", "second"]);
        let second = git(&root, &["rev-parse", "HEAD"]);
        // Uncommitted changes are not part of any revision.
        write(root.join("kernels/a.cu"), "// a dirty\n");
        (root, first, second)
    }

    #[test]
    fn revision_is_exported_under_target() {
        if !have_git() {
            eprintln!("git is not installed: skipping");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let (root, first, second) = repo(tmp.path());
        let target = tmp.path().join("target");

        let d = materialize(&root, &target, "HEAD").unwrap();
        assert_eq!(d, target.join("base").join(&second).join("kernels"));
        assert_eq!(
            crate::common::files_in(&d),
            ["a.cu", "x.cuh"],
            "no subdirectories, no other files"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("a.cu")).unwrap(),
            "// a v2\n#include \"x.cuh\"\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("x.cuh")).unwrap(),
            "// x v1\n"
        );
        // No temporary directory is left beside it.
        assert_eq!(crate::common::files_in(d.parent().unwrap()), ["kernels"]);
        // The working tree is untouched.
        assert_eq!(
            std::fs::read_to_string(root.join("kernels/a.cu")).unwrap(),
            "// a dirty\n"
        );

        // Any revision syntax: the first commit, by relative name and by hash.
        let d1 = materialize(&root, &target, "HEAD~1").unwrap();
        assert_eq!(d1, target.join("base").join(&first).join("kernels"));
        assert_eq!(
            std::fs::read_to_string(d1.join("a.cu")).unwrap(),
            "// a v1\n#include \"x.cuh\"\n"
        );
        assert_eq!(materialize(&root, &target, &first[..10]).unwrap(), d1);

        // An export that exists is reused as it is.
        std::fs::write(d.join("marker.cuh"), "").unwrap();
        assert_eq!(materialize(&root, &target, "HEAD").unwrap(), d);
        assert!(d.join("marker.cuh").is_file());
    }

    #[test]
    fn directory_spec() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        // A directory holding kernels/.
        let base = tmp.path().join("exported");
        write(base.join("kernels/a.cu"), "// a\n");
        let spec = base.to_str().unwrap();
        assert_eq!(
            materialize(Path::new("/nonexistent"), &target, spec).unwrap(),
            base.join("kernels")
        );
        // A directory holding the kernel files themselves.
        let flat = tmp.path().join("flat");
        write(flat.join("a.cu"), "// a\n");
        assert_eq!(
            materialize(Path::new("/nonexistent"), &target, flat.to_str().unwrap()).unwrap(),
            flat
        );
        // A directory without kernels is an error naming it.
        let empty = tmp.path().join("empty");
        write(empty.join("kernels/x.cuh"), "// header only\n");
        match materialize(Path::new("/nonexistent"), &target, empty.to_str().unwrap()) {
            Err(Error::Base { spec, message }) => {
                assert_eq!(spec, empty.to_str().unwrap());
                assert_eq!(message, "directory holds no kernels/*.cu");
            }
            other => panic!("{other:?}"),
        }
        assert!(!target.exists(), "nothing is exported for a directory");
    }

    #[test]
    fn bad_revision_is_a_base_error() {
        if !have_git() {
            eprintln!("git is not installed: skipping");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let (root, _, _) = repo(tmp.path());
        let target = tmp.path().join("target");
        for bad in ["no-such-branch", "HEAD~5", "deadbeefdeadbeef"] {
            let e = materialize(&root, &target, bad).unwrap_err();
            let shown = e.to_string();
            match e {
                Error::Base { spec, message } => {
                    assert_eq!(spec, bad);
                    assert!(message.starts_with("git rev-parse"), "{message}");
                }
                other => panic!("{bad}: {other:?}"),
            }
            assert!(shown.starts_with(&format!("A/B base {bad:?}: ")), "{shown}");
        }
        // A revision without kernels.
        let plain = tmp.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        git(&plain, &["init", "-q"]);
        write(plain.join("README.md"), "no kernels\n");
        git(&plain, &["add", "-A"]);
        git(&plain, &["commit", "-q", "-m", "docs"]);
        match materialize(&plain, &target, "HEAD") {
            Err(Error::Base { spec, message }) => {
                assert_eq!(spec, "HEAD");
                assert!(message.ends_with("has no kernels/*.cu"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // Not a repository at all.
        let none = tmp.path().join("none");
        std::fs::create_dir_all(&none).unwrap();
        assert!(matches!(
            materialize(&none, &target, "HEAD"),
            Err(Error::Base { .. })
        ));
    }

    #[test]
    fn config_resolves_the_base_and_the_kernel_set() {
        let tmp = tempfile::tempdir().unwrap();
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut c = common::test_config(&root, tmp.path());
        // No base: nothing to resolve.
        c.base = None;
        c.base_kernels = None;
        c.resolve_base().unwrap();
        assert_eq!(c.base_kernels, None);
        // The kernel set: the working tree's kernels/, with the injected delay when set.
        c.inject_ns = None;
        let k = c.kernel_set();
        assert_eq!((k.dir, k.defines), (root.join("kernels"), vec![]));
        c.inject_ns = Some(7000);
        let k = c.kernel_set();
        assert_eq!(
            (k.defines, k.inject_ns),
            (vec!["-DKG_INJECT".to_string()], Some(7000))
        );
        c.inject_ns = Some(0);
        let k = c.kernel_set();
        assert_eq!(
            (k.defines, k.inject_ns),
            (vec!["-DKG_INJECT".to_string()], Some(0))
        );
        // A directory base resolves to its kernels/.
        let base = tmp.path().join("exported");
        write(base.join("kernels/a.cu"), "// a\n");
        c.base = Some(base.to_str().unwrap().into());
        c.resolve_base().unwrap();
        assert_eq!(c.base_kernels, Some(base.join("kernels")));
        // Once resolved it is kept.
        c.base = Some("/elsewhere".into());
        c.resolve_base().unwrap();
        assert_eq!(c.base_kernels, Some(base.join("kernels")));
        // An unusable base is an error.
        c.base_kernels = None;
        c.base = Some(tmp.path().join("missing").to_str().unwrap().into());
        assert!(matches!(
            c.resolve_base(),
            Err(kernelgate::Error::Base { .. })
        ));
    }

    /// Child half of `concurrent_processes_share_one_export`: does nothing unless spawned by it.
    #[test]
    fn materialize_child() {
        let (Ok(root), Ok(target)) = (
            std::env::var("KG_TEST_MATERIALIZE_ROOT"),
            std::env::var("KG_TEST_MATERIALIZE_TARGET"),
        ) else {
            return;
        };
        let d = materialize(Path::new(&root), Path::new(&target), "HEAD")
            .unwrap_or_else(|e| panic!("materialize failed: {e}"));
        // What the caller does next: compile from the returned directory for a while.
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(300) {
            for i in 0..20 {
                std::fs::read(d.join(format!("k{i}.cu")))
                    .unwrap_or_else(|e| panic!("k{i}.cu vanished from under the caller: {e}"));
            }
        }
    }

    /// Under `cargo nextest` every test process resolves `KERNELGATE_BASE` itself: processes
    /// exporting the same revision at once must all get a complete directory that stays.
    #[test]
    fn concurrent_processes_share_one_export() {
        if !have_git() {
            eprintln!("git is not installed: skipping");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        git(&root, &["init", "-q"]);
        for i in 0..20 {
            write(
                root.join(format!("kernels/k{i}.cu")),
                &format!("// {i}\n{}", "x".repeat(20000)),
            );
        }
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "kernels"]);
        let target = tmp.path().join("target");
        let exe = std::env::current_exe().unwrap();
        let kids: Vec<_> = (0..16)
            .map(|_| {
                Command::new(&exe)
                    .args(["--exact", "ab_base::materialize_child", "--nocapture"])
                    .env("KG_TEST_MATERIALIZE_ROOT", &root)
                    .env("KG_TEST_MATERIALIZE_TARGET", &target)
                    .env("RUST_BACKTRACE", "0")
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut failed = Vec::new();
        for k in kids {
            let o = k.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&o.stdout).to_string()
                + &String::from_utf8_lossy(&o.stderr);
            assert!(
                text.contains("1 passed") || text.contains("1 failed"),
                "the child ran: {text}"
            );
            if !o.status.success() {
                failed.extend(
                    text.lines()
                        .filter(|l| l.contains("failed:") || l.contains("vanished"))
                        .map(str::to_string),
                );
            }
        }
        assert!(
            failed.is_empty(),
            "{} of 16 processes failed:\n{}",
            failed.len(),
            failed.join("\n")
        );
        let d = materialize(&root, &target, "HEAD").unwrap();
        assert_eq!(crate::common::files_in(&d).len(), 20);
    }
}

// ---------------------------------------------------------------------------------------------
// Results files
// ---------------------------------------------------------------------------------------------

#[test]
fn results_file_carries_run_facts_and_summary() {
    use kernelgate::results::{load, AbOutcome, Writer};
    let dir = tempfile::tempdir().unwrap();
    let w = Writer::new(dir.path(), "smoke", Some(common::gpu_info()), 7);
    let mut recs = summary_records();
    recs[0].machine = common::gpu_info().machine_key();
    recs[0].baseline_machines = Some(3);
    recs[0].machine_factor = Some(1.25);
    recs[0].floor_ms = Some(0.0005);
    recs[1].ab = Some(AbOutcome {
        base: "HEAD~1".into(),
        base_hash: "0123".into(),
        status: "measured".into(),
        paired: paired(&[1.0, 1.0, 1.0], &[1.1, 1.1, 1.1], 0.05),
        base_ms: Some(0.01),
    });
    for r in &recs {
        w.push(r.clone()).unwrap();
    }
    // Before the run facts and the summary: none of the optional run fields are written.
    let text = std::fs::read_to_string(w.path()).unwrap();
    for k in ["\"ceilings\"", "\"ab_base\"", "\"summary\""] {
        assert!(!text.contains(k), "{k} in {text}");
    }
    let c = Ceilings {
        copy_gbps: 3000.0,
        gemm_tflops: 800.0,
        launch_us: 2.0,
        window_us: Some(1.25),
    };
    w.set_run_facts(Some(c), Some("HEAD~1".into()));
    assert_eq!(w.summary(), RunSummary::of(&recs, HOLD));
    w.finish("torch").unwrap();
    let f = load(w.path()).unwrap();
    assert_eq!(f.ceilings, Some(c));
    assert_eq!(f.ab_base.as_deref(), Some("HEAD~1"));
    assert_eq!(f.summary, Some(RunSummary::of(&recs, HOLD)));
    assert_eq!(
        f.results[0].machine,
        "GPU-00000000-1111-2222-3333-444444444444"
    );
    assert_eq!(
        (
            f.results[0].baseline_machines,
            f.results[0].machine_factor,
            f.results[0].floor_ms
        ),
        (Some(3), Some(1.25), Some(0.0005))
    );
    assert_eq!(f.results[1].ab, recs[1].ab);
    assert_eq!(f.results[6].capture_error, recs[6].capture_error);
    let gpu = f.gpu.unwrap();
    assert_eq!(
        (gpu.uuid.as_str(), gpu.host.as_str()),
        ("GPU-00000000-1111-2222-3333-444444444444", "test-host")
    );
}

#[test]
fn results_written_before_the_new_fields_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let w = kernelgate::results::Writer::new(dir.path(), "smoke", Some(common::gpu_info()), 7);
    w.push(rec(1, "cuda", Verdict::Pass, Some(0.05))).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.path()).unwrap()).unwrap();
    for k in ["uuid", "host"] {
        v["gpu"].as_object_mut().unwrap().remove(k);
    }
    for k in [
        "machine",
        "baseline_machines",
        "machine_factor",
        "floor_ms",
        "min_detectable",
        "ab",
        "capture_error",
    ] {
        assert!(
            v["results"][0].as_object_mut().unwrap().remove(k).is_some(),
            "{k}"
        );
    }
    let p = dir.path().join("old.json");
    std::fs::write(&p, v.to_string()).unwrap();
    let f = kernelgate::results::load(&p).unwrap();
    let r = &f.results[0];
    assert_eq!(r.machine, "");
    assert_eq!(
        (
            r.baseline_machines,
            r.machine_factor,
            r.floor_ms,
            r.min_detectable
        ),
        (None, None, None, None)
    );
    assert_eq!((r.ab.as_ref(), r.capture_error.as_ref()), (None, None));
    let gpu = f.gpu.unwrap();
    assert_eq!((gpu.uuid.as_str(), gpu.host.as_str()), ("", ""));
    assert_eq!(gpu.machine_key(), "", "no uuid, no host: unknown machine");
    assert_eq!((f.ceilings, f.ab_base, f.summary), (None, None, None));
}

#[test]
fn machine_key_prefers_the_gpu_uuid() {
    let mut g = common::gpu_info();
    assert_eq!(g.machine_key(), "GPU-00000000-1111-2222-3333-444444444444");
    g.uuid.clear();
    assert_eq!(g.machine_key(), "test-host");
}

#[test]
fn run_summary_names_cases_in_two_modes() {
    let mut recs = summary_records();
    assert!(RunSummary::of(&recs, HOLD).two_modes.is_empty());
    // Twelve samples at 1.0 ms and eight at 1.1: two modes 10% apart around a 1.0 ms median.
    let samples: Vec<f64> = (0..20).map(|i| if i < 12 { 1.0 } else { 1.1 }).collect();
    recs[3].stats = Stats::from_samples(&samples);
    let s = RunSummary::of(&recs, HOLD);
    assert_eq!(s.two_modes.len(), 1);
    assert_eq!(s.two_modes[0].0, recs[3].case);
    assert!((s.two_modes[0].1 - 0.1).abs() < 1e-9);
    let text = s.render();
    assert!(
        text.contains(&format!(
            "note: 1 case(s) whose samples fell into two modes (their median lands in either; changes within the modes' distance are not called): {} (10.0%)",
            recs[3].case
        )),
        "{text}"
    );
    // Kept in the results file's summary, and read back.
    let back: RunSummary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back.two_modes, s.two_modes);
}
