//! The correctness gate: device output against the float64 reference.

use kernelgate::case::Dtype;
use kernelgate::verify::{check, sample_rows, Check, Expected, Tolerance};
use proptest::prelude::*;

const FP32: Tolerance = Tolerance {
    rel_l2: 1e-5,
    atol: 1e-5,
    rtol: 1e-5,
};

fn all(values: Vec<f64>) -> Expected {
    Expected {
        output: 0,
        indices: (0..values.len()).collect(),
        values,
        slack: Vec::new(),
    }
}

fn data(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            kernelgate::inputs::value(
                3,
                0,
                i as u64,
                kernelgate::inputs::Uniform::SYMMETRIC,
                Dtype::Fp32,
            ) * 10.0
        })
        .collect()
}

#[test]
fn tolerances_per_dtype() {
    let bf = Tolerance::for_dtype(Dtype::Bf16);
    let fp = Tolerance::for_dtype(Dtype::Fp16);
    let f32 = Tolerance::for_dtype(Dtype::Fp32);
    assert_eq!(f32, FP32);
    assert_eq!(
        bf,
        Tolerance {
            rel_l2: 1e-2,
            atol: 1.6e-2,
            rtol: 1.6e-2
        }
    );
    assert_eq!(
        fp,
        Tolerance {
            rel_l2: 1e-2,
            atol: 4e-3,
            rtol: 4e-3
        }
    );
    // One rounding to the storage type must always fit the element bound (2^-8 and 2^-11 relative).
    assert!(bf.rtol >= 2f64.powi(-8) && fp.rtol >= 2f64.powi(-11) && f32.rtol >= 2f64.powi(-24));
}

#[test]
fn exact_output_passes() {
    let want = data(1000);
    let c = check("C", want.len(), |i| want[i], &all(want.clone()), FP32);
    assert!(c.passed, "{}", c.describe());
    assert_eq!(c.reason, None);
    assert_eq!(
        (
            c.checked,
            c.total,
            c.rel_l2,
            c.max_abs,
            c.non_finite,
            c.first_non_finite
        ),
        (1000, 1000, 0.0, 0.0, 0, None)
    );
    assert_eq!(c.tensor, "C");
    assert!(c.describe().starts_with("output `C`: ok (1000 of 1000 elements checked against the float64 reference; rel L2 0.000e0, max abs 0.000e0)"), "{}", c.describe());
}

#[test]
fn output_rounded_to_dtype_passes_that_dtypes_tolerance() {
    let want = data(4096);
    for d in [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32] {
        let c = check(
            "C",
            want.len(),
            |i| d.round(want[i] as f32),
            &all(want.clone()),
            Tolerance::for_dtype(d),
        );
        assert!(c.passed, "{d}: {}", c.describe());
    }
    // bf16-rounded output is far outside the fp32 bounds.
    let c = check(
        "C",
        want.len(),
        |i| Dtype::Bf16.round(want[i] as f32),
        &all(want.clone()),
        FP32,
    );
    assert!(!c.passed);
}

#[test]
fn nan_anywhere_fails_even_unchecked() {
    let want = data(100);
    // Only the first and last elements are checked; element 50 was never written (poisoned).
    let exp = Expected {
        output: 0,
        indices: vec![0, 99],
        values: vec![want[0], want[99]],
        slack: Vec::new(),
    };
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let c = check(
            "C",
            100,
            |i| if i == 50 || i == 70 { bad } else { want[i] },
            &exp,
            FP32,
        );
        assert!(!c.passed);
        assert_eq!(c.non_finite, 2);
        assert_eq!(c.first_non_finite, Some(50));
        assert_eq!(c.rel_l2, 0.0, "the checked elements themselves are right");
        assert_eq!(
            c.reason.as_deref(),
            Some("2 of 100 elements are NaN/Inf (first at index 50): unwritten (poisoned) or overflowed")
        );
        assert!(c.describe().contains("2 of 100 elements are NaN/Inf"));
    }
}

#[test]
fn nan_at_checked_element_is_the_worst() {
    let want = data(10);
    let c = check(
        "C",
        10,
        |i| if i == 3 { f64::NAN } else { want[i] },
        &all(want.clone()),
        FP32,
    );
    assert!(!c.passed);
    assert_eq!(c.rel_l2, f64::INFINITY);
    assert_eq!(c.max_abs, f64::INFINITY);
    let w = c.worst.as_ref().unwrap();
    assert_eq!(w.index, 3);
    assert!(w.got.is_nan());
    assert_eq!(w.want, want[3]);
    assert!(
        c.describe().contains("worst element: index 3 got NaN want"),
        "{}",
        c.describe()
    );
}

#[test]
fn rel_l2_beyond_bound_fails() {
    let want = data(1000);
    let loose = Tolerance {
        rel_l2: 1e-3,
        atol: 1.0,
        rtol: 1.0,
    };
    let ok = check(
        "C",
        1000,
        |i| want[i] * (1.0 + 0.9e-3),
        &all(want.clone()),
        loose,
    );
    assert!(ok.passed, "{}", ok.describe());
    let c = check(
        "C",
        1000,
        |i| want[i] * (1.0 + 2e-3),
        &all(want.clone()),
        loose,
    );
    assert!(!c.passed);
    approx::assert_relative_eq!(c.rel_l2, 2e-3, max_relative = 1e-9);
    assert_eq!(
        c.reason.as_deref(),
        Some("relative L2 error 2.000e-3 exceeds 1.0e-3")
    );
}

#[test]
fn single_element_beyond_element_bound_fails_with_worst_element() {
    // 10 000 ones (RMS 1): bound per element = 1e-5·1 + 1e-5·1 = 2e-5.
    let n = 10_000;
    let want = vec![1.0; n];
    let exp = all(want);
    let bad = 1234;
    // 1e-4 on one element is only 1e-6 on the relative L2 norm: under rel_l2, over the element bound.
    let c = check(
        "out",
        n,
        |i| if i == bad { 1.0001 } else { 1.0 },
        &exp,
        FP32,
    );
    assert!(!c.passed);
    assert!(c.rel_l2 < FP32.rel_l2);
    approx::assert_relative_eq!(c.max_abs, 1e-4, max_relative = 1e-6);
    let w = c.worst.clone().unwrap();
    assert_eq!(
        (w.tensor.as_str(), w.index, w.got, w.want),
        ("out", bad, 1.0001, 1.0)
    );
    let reason = c.reason.clone().unwrap();
    assert!(
        reason.starts_with("element 1234 differs by 1.000e-4, bound 2.000e-5"),
        "{reason}"
    );
    let d = c.describe();
    assert!(
        d.starts_with("output `out`: element 1234 differs by"),
        "{d}"
    );
    assert!(d.contains("(10000 of 10000 elements checked"), "{d}");
    assert!(
        d.ends_with("; worst element: index 1234 got 1.000100e0 want 1.000000e0"),
        "{d}"
    );
    // Just inside the bound passes.
    let c = check(
        "out",
        n,
        |i| if i == bad { 1.0 + 1.9e-5 } else { 1.0 },
        &exp,
        FP32,
    );
    assert!(c.passed, "{}", c.describe());
}

#[test]
fn worst_is_largest_excess_not_largest_difference() {
    let exp = all(vec![100.0, 1.0, 50.0]);
    let tol = Tolerance {
        rel_l2: 1.0,
        atol: 0.0,
        rtol: 0.01,
    };
    // Bounds 1.0, 0.01, 0.5: element 0 is off by 0.5 (fine), element 1 by 0.4 (40x its bound).
    let got = [100.5, 1.4, 50.0];
    let c = check("C", 3, |i| got[i], &exp, tol);
    assert!(!c.passed);
    assert_eq!(c.max_abs, 0.5);
    assert_eq!(c.worst.as_ref().unwrap().index, 1);
    // rtol scales with |want|: 0.9% off everywhere passes at rtol 1%.
    let c = check("C", 3, |i| exp.values[i] * 1.009, &exp, tol);
    assert!(c.passed, "{}", c.describe());
}

#[test]
fn atol_is_in_units_of_the_reference_rms() {
    // RMS of [0, 1000] is ~707: an absolute error of 5 on the zero is within atol 1% of RMS.
    let exp = all(vec![0.0, 1000.0]);
    let tol = Tolerance {
        rel_l2: 1.0,
        atol: 0.01,
        rtol: 0.0,
    };
    assert!(check("C", 2, |i| [5.0, 1000.0][i], &exp, tol).passed);
    assert!(!check("C", 2, |i| [8.0, 1000.0][i], &exp, tol).passed);
}

#[test]
fn all_zero_reference() {
    let exp = all(vec![0.0; 4]);
    let c = check("C", 4, |_| 0.0, &exp, FP32);
    assert!(c.passed, "{}", c.describe());
    let c = check("C", 4, |i| if i == 2 { 1e-30 } else { 0.0 }, &exp, FP32);
    assert!(!c.passed);
    assert_eq!(c.rel_l2, f64::INFINITY);
}

#[test]
fn reference_nan_is_a_family_bug() {
    let exp = Expected {
        output: 0,
        indices: vec![0, 1, 2],
        values: vec![1.0, f64::NAN, 2.0],
        slack: Vec::new(),
    };
    // Even with a NaN in the output too, the reference is blamed first.
    let c = check("C", 3, |i| if i == 2 { f64::NAN } else { 1.0 }, &exp, FP32);
    assert!(!c.passed);
    assert_eq!(
        c.reason.as_deref(),
        Some("the reference itself is not finite at index 1 (family bug)")
    );
    let exp = Expected {
        output: 0,
        indices: vec![7],
        values: vec![f64::INFINITY],
        slack: Vec::new(),
    };
    let c = check("C", 8, |_| f64::INFINITY, &exp, FP32);
    assert_eq!(
        c.reason.as_deref(),
        Some("the reference itself is not finite at index 7 (family bug)")
    );
}

#[test]
fn check_serializes_non_finite_values_and_reads_them_back() {
    let exp = all(vec![1.0, 2.0]);
    let c = check(
        "C",
        2,
        |i| if i == 0 { f64::NAN } else { f64::NEG_INFINITY },
        &exp,
        FP32,
    );
    assert_eq!(c.worst.as_ref().unwrap().index, 0);
    let text = serde_json::to_string(&c).unwrap();
    assert!(text.contains(r#""rel_l2":"inf""#), "{text}");
    // Both elements are infinitely wrong; the first stays the worst.
    assert!(
        text.contains(r#""worst":{"tensor":"C","index":0,"got":"NaN","want":1.0}"#),
        "{text}"
    );
    let back: Check = serde_json::from_str(&text).unwrap();
    assert_eq!(back.rel_l2, f64::INFINITY);
    assert_eq!(back.max_abs, f64::INFINITY);
    let (w, bw) = (c.worst.unwrap(), back.worst.unwrap());
    assert_eq!(bw.index, w.index);
    assert!(bw.got.is_nan() && w.got.is_nan());
    assert_eq!(bw.want, w.want);
    assert_eq!(back.reason, c.reason);
    // Finite values stay plain numbers.
    let ok = check("C", 2, |i| exp.values[i], &exp, FP32);
    let text = serde_json::to_string(&ok).unwrap();
    assert!(text.contains(r#""rel_l2":0.0"#), "{text}");
    assert_eq!(serde_json::from_str::<Check>(&text).unwrap(), ok);
    // Older files wrote null for non-finite numbers: read as NaN rather than rejected.
    let old = text.replace(r#""rel_l2":0.0"#, r#""rel_l2":null"#);
    assert!(serde_json::from_str::<Check>(&old).unwrap().rel_l2.is_nan());
    let garbage = text.replace(r#""rel_l2":0.0"#, r#""rel_l2":"big""#);
    assert!(serde_json::from_str::<Check>(&garbage).is_err());
}

#[test]
fn sample_rows_examples() {
    assert_eq!(sample_rows(0, 16, 1), Vec::<usize>::new());
    assert_eq!(sample_rows(1, 16, 1), vec![0]);
    assert_eq!(sample_rows(16, 16, 1), (0..16).collect::<Vec<_>>());
    assert_eq!(sample_rows(5, 0, 1), vec![0, 4]);
    assert_eq!(sample_rows(5, 1, 1), vec![0, 4]);
    assert_eq!(sample_rows(2, 1, 1), vec![0, 1]);
    let s = sample_rows(1_000_000, 16, 42);
    assert_eq!(s.len(), 16);
    assert_eq!((s[0], s[15]), (0, 999_999));
    assert_eq!(s, sample_rows(1_000_000, 16, 42));
    assert_ne!(
        s,
        sample_rows(1_000_000, 16, 43),
        "the sample follows the seed"
    );
    // All but one row: terminates and leaves exactly one out.
    assert_eq!(sample_rows(100, 99, 7).len(), 99);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn sample_rows_properties(rows in 0usize..5000, count in 0usize..100, seed in any::<u64>()) {
        let s = sample_rows(rows, count, seed);
        if rows <= count.max(2) {
            prop_assert_eq!(&s, &(0..rows).collect::<Vec<_>>());
        } else {
            prop_assert_eq!(s.len(), count.max(2));
            prop_assert_eq!(s[0], 0);
            prop_assert_eq!(*s.last().unwrap(), rows - 1);
        }
        prop_assert!(s.windows(2).all(|w| w[0] < w[1]), "sorted and unique: {:?}", s);
        prop_assert!(s.iter().all(|&r| r < rows));
        prop_assert_eq!(s, sample_rows(rows, count, seed));
    }

    /// A perturbation within the element bound passes; the same perturbation scaled beyond it fails,
    /// and the worst element is the perturbed one.
    #[test]
    fn element_bound_is_sharp(n in 2usize..500, pos in any::<prop::sample::Index>(), frac in 0.0f64..0.9) {
        let want = data(n);
        let exp = all(want.clone());
        let i = pos.index(n);
        let tol = Tolerance { rel_l2: 1.0, atol: 1e-3, rtol: 1e-3 };
        let rms = (want.iter().map(|w| w * w).sum::<f64>() / n as f64).sqrt();
        let bound = tol.atol * rms + tol.rtol * want[i].abs();
        let inside = check("C", n, |j| if j == i { want[j] + frac * bound } else { want[j] }, &exp, tol);
        prop_assert!(inside.passed, "{}", inside.describe());
        let outside = check("C", n, |j| if j == i { want[j] - (1.1 + frac) * bound } else { want[j] }, &exp, tol);
        prop_assert!(!outside.passed);
        prop_assert_eq!(outside.worst.unwrap().index, i);
    }
}

#[test]
fn loosest_takes_each_bound_from_the_looser_tolerance() {
    let fp32 = Tolerance::for_dtype(Dtype::Fp32);
    let bf16 = Tolerance::for_dtype(Dtype::Bf16);
    assert_eq!(fp32.loosest(bf16), bf16);
    assert_eq!(bf16.loosest(fp32), bf16);
    let mixed = Tolerance {
        rel_l2: 1.0,
        atol: 0.0,
        rtol: 0.5,
    }
    .loosest(Tolerance {
        rel_l2: 0.1,
        atol: 0.2,
        rtol: 0.6,
    });
    assert_eq!(
        mixed,
        Tolerance {
            rel_l2: 1.0,
            atol: 0.2,
            rtol: 0.6
        }
    );
}

#[test]
fn an_fp32_rmsnorm_bwd_with_16_bit_weights_has_a_16_bit_weight_gradient() {
    // The runner holds such an output to its own dtype's bounds (a bf16 `dw` cannot meet
    // fp32's 1e-5): the case that made every backend fail on an H200.
    let f = kernelgate::family::by_name("rmsnorm_bwd").unwrap();
    let s = kernelgate::case::Shape::new([("m", 4096u64), ("n", 1000), ("w", 16)]);
    let outs = f.outputs(&s, Dtype::Fp32);
    let dw = outs
        .iter()
        .find(|o| o.name == "dw")
        .expect("rmsnorm_bwd has a dw output");
    assert_ne!(dw.dtype, Dtype::Fp32);
    let tol = Tolerance::for_dtype(Dtype::Fp32).loosest(f.tolerance(&s, dw.dtype));
    assert!(
        tol.rel_l2 >= 1.66e-3,
        "the measured 1.66e-3 rel L2 of a bf16 dw must pass"
    );
}

#[test]
fn index_spans_merge_close_indices_and_keep_far_ones_apart() {
    use kernelgate::verify::index_spans;
    assert_eq!(index_spans(&[], 4), vec![]);
    assert_eq!(index_spans(&[5], 4), vec![5..6]);
    // unsorted, duplicated, a run, a near one and a far one
    assert_eq!(
        index_spans(&[12, 10, 11, 11, 15, 100, 3], 4),
        vec![3..4, 10..16, 100..101]
    );
    assert_eq!(index_spans(&[0, 1, 2, 3], 0), vec![0..4]);
    assert_eq!(index_spans(&[0, 2], 0), vec![0..1, 2..3]);
}

proptest! {
    #[test]
    fn index_spans_cover_every_index_in_disjoint_sorted_ranges(
        idx in proptest::collection::vec(0usize..10_000, 0..300), gap in 0usize..100
    ) {
        let spans = kernelgate::verify::index_spans(&idx, gap);
        for i in &idx {
            prop_assert!(spans.iter().any(|r| r.contains(i)));
        }
        for w in spans.windows(2) {
            prop_assert!(w[0].end + gap < w[1].start, "{:?} then {:?}", w[0], w[1]);
        }
        for r in &spans {
            prop_assert!(idx.contains(&r.start) && idx.contains(&(r.end - 1)));
        }
    }

    #[test]
    fn check_scanned_with_the_host_scan_equals_check(
        vals in proptest::collection::vec(-4.0f64..4.0, 1..200), poison in proptest::option::of(0usize..200)
    ) {
        use kernelgate::verify::check_scanned;
        let mut got = vals.clone();
        if let Some(p) = poison { if p < got.len() { got[p] = f64::NAN; } }
        let exp = Expected { output: 0, indices: (0..vals.len()).step_by(3).collect(),
                             values: (0..vals.len()).step_by(3).map(|i| vals[i]).collect(), slack: Vec::new() };
        let tol = Tolerance::for_dtype(Dtype::Bf16);
        let whole = check("y", got.len(), |i| got[i], &exp, tol);
        let nf = got.iter().filter(|v| !v.is_finite()).count();
        let first = got.iter().position(|v| !v.is_finite());
        let scanned = check_scanned(None, "y", got.len(), (nf, first), |i| got[i], &exp, tol);
        // Same verdict and numbers; only the record of where the scan ran differs.
        prop_assert!(!whole.scanned_on_device && scanned.scanned_on_device);
        let host_view = kernelgate::verify::Check { scanned_on_device: false, ..scanned };
        // NaN fields (a poisoned element that was compared) defeat ==; the JSON form spells them.
        prop_assert_eq!(serde_json::to_string(&whole).unwrap(), serde_json::to_string(&host_view).unwrap());
    }
}

/// `rmsnorm_bwd::cuda::m1_n1_w32_fp16` on H200 GPU-27063715 (session 24): dx is pure
/// cancellation, 2.609633e-7 in float64, which fp16 stores only among its subnormals (spacing
/// 2^-24 = 5.96e-8); the kernel stored 2.980232e-7 (5 steps), 14% off, beyond the family's 0.1.
#[test]
fn errors_count_beyond_the_output_format_resolution() {
    use kernelgate::verify::{check_in, resolution};
    let tol = Tolerance {
        rel_l2: 0.1,
        atol: 0.1,
        rtol: 0.1,
    };
    let exp = all(vec![2.609633e-7]);
    let got = [2.980232e-7];
    assert!(!check("dx", 1, |i| got[i], &exp, tol).passed);
    let c = check_in(Some(Dtype::Fp16), "dx", 1, |i| got[i], &exp, tol);
    assert!(c.passed, "{}", c.describe());
    // Two steps off is still wrong, and so is NaN.
    let far = [2.609633e-7 + 2.0 * resolution(Dtype::Fp16) + 1e-9];
    assert!(!check_in(Some(Dtype::Fp16), "dx", 1, |i| far[i], &exp, tol).passed);
    let nan = [f64::NAN];
    assert!(!check_in(Some(Dtype::Fp16), "dx", 1, |i| nan[i], &exp, tol).passed);
    // bf16 and fp32 resolve far finer: the same output fails there.
    assert!(!check_in(Some(Dtype::Bf16), "dx", 1, |i| got[i], &exp, tol).passed);
    assert!(!check_in(Some(Dtype::Fp32), "dx", 1, |i| got[i], &exp, tol).passed);
    assert_eq!(resolution(Dtype::Fp16), 2f64.powi(-24));
}

proptest! {
    /// Values in the normal range of fp16 (|x| ≥ 2^-14): a 1% error fails with or without
    /// the format, and the rel L2 moves by at most the resolution over the values.
    #[test]
    fn resolution_does_not_loosen_normal_values(v in prop::collection::vec(1e-3f64..1e3, 1..50)) {
        use kernelgate::verify::check_in;
        let tol = Tolerance { rel_l2: 4e-3, atol: 4e-3, rtol: 4e-3 };
        let exp = all(v.clone());
        let off: Vec<f64> = v.iter().map(|x| x * 1.01).collect();
        prop_assert!(!check("y", v.len(), |i| off[i], &exp, tol).passed);
        let c = check_in(Some(Dtype::Fp16), "y", v.len(), |i| off[i], &exp, tol);
        prop_assert!(!c.passed);
        prop_assert!((c.rel_l2 - 0.01).abs() < 1e-4, "{}", c.rel_l2);
    }
}

/// `Expected::slack`: each element's error counts beyond its own slack (the fp32 rounding of
/// the terms it is formed from), on top of the format's resolution; elements without slack
/// (and NaN) are judged as before.
#[test]
fn errors_count_beyond_each_elements_slack() {
    use kernelgate::verify::{check_in, fp32_slack, ARITH_SLACK_UNITS};
    let tol = Tolerance::for_dtype(Dtype::Fp32);
    let mut exp = all(vec![2.0e-7]);
    let got = [2.3e-7];
    assert!(!check_in(Some(Dtype::Fp32), "dx", 1, |i| got[i], &exp, tol).passed);
    // Terms of magnitude 0.375 cancelled to 2e-7: 32 units of 2^-24 on them is 7.2e-7.
    exp.slack = vec![fp32_slack(0.375)];
    assert!((fp32_slack(0.375) - ARITH_SLACK_UNITS * 0.375 / 16_777_216.0).abs() < 1e-20);
    let c = check_in(Some(Dtype::Fp32), "dx", 1, |i| got[i], &exp, tol);
    assert!(c.passed, "{}", c.describe());
    // Past the slack: wrong, and the message says slack was taken off.
    let far = [2.0e-7 + fp32_slack(0.375) + 1e-7];
    let c = check_in(Some(Dtype::Fp32), "dx", 1, |i| far[i], &exp, tol);
    assert!(!c.passed);
    assert!(c.describe().contains("rounding slack"), "{}", c.describe());
    let nan = [f64::NAN];
    assert!(!check_in(Some(Dtype::Fp32), "dx", 1, |i| nan[i], &exp, tol).passed);
    // An element without slack beside one with it is held as before.
    let mut two = all(vec![2.0e-7, 1.0]);
    two.slack = vec![fp32_slack(0.375), 0.0];
    let off = [2.0e-7, 1.0 + 1e-4];
    assert!(!check_in(Some(Dtype::Fp32), "dx", 2, |i| off[i], &two, tol).passed);
}
