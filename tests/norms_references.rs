//! The memory-bound families (`kernelgate::family::norms`): float64 reference properties,
//! finite-difference checks of the backward passes, tensor specs, byte counts, validation.

use kernelgate::case::{Dtype, Shape};
use kernelgate::family::norms::{self, target, weight_dtype, RowFamily, CHECK_ROWS};
use kernelgate::family::norms_ref as r;
use kernelgate::family::{self, Family, Init};
use kernelgate::inputs::{value, Uniform};
use proptest::prelude::*;

fn mn(m: u64, n: u64) -> Shape {
    Shape::new([("m", m), ("n", n)])
}

fn mnw(m: u64, n: u64, w: u64) -> Shape {
    Shape::new([("m", m), ("n", n), ("w", w)])
}

fn vecs(len: std::ops::Range<usize>, lo: f64, hi: f64) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(lo..hi, len)
}

/// Central difference of a scalar function of a vector, in float64.
fn fd(f: &dyn Fn(&[f64]) -> f64, x: &[f64], j: usize) -> f64 {
    let h = 1e-6 * (1.0 + x[j].abs());
    let mut a = x.to_vec();
    let mut b = x.to_vec();
    a[j] += h;
    b[j] -= h;
    (f(&a) - f(&b)) / (2.0 * h)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= tol * (1.0 + want.abs())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn softmax_rows_sum_to_one(x in vecs(1..200, -30.0, 30.0)) {
        let y = r::softmax(&x);
        prop_assert!((y.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        prop_assert!(y.iter().all(|v| *v >= 0.0 && *v <= 1.0));
    }

    #[test]
    fn softmax_is_shift_invariant(x in vecs(1..100, -10.0, 10.0), c in -50.0f64..50.0) {
        let shifted: Vec<f64> = x.iter().map(|v| v + c).collect();
        for (a, b) in r::softmax(&x).iter().zip(r::softmax(&shifted)) {
            prop_assert!((a - b).abs() < 1e-12);
        }
    }

    #[test]
    fn layernorm_normalizes(x in vecs(2..200, -5.0, 5.0)) {
        // Spread the values so the variance dominates eps.
        prop_assume!(x.iter().cloned().fold(f64::MIN, f64::max) - x.iter().cloned().fold(f64::MAX, f64::min) > 0.1);
        let h = r::layernorm_normalize(&x, r::EPS);
        let n = h.len() as f64;
        let mean = h.iter().sum::<f64>() / n;
        let var = h.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        prop_assert!(mean.abs() < 1e-10, "mean {mean}");
        prop_assert!((var - 1.0).abs() < 1e-3, "var {var}");
    }

    #[test]
    fn layernorm_affine(x in vecs(2..50, -5.0, 5.0), g in 0.1f64..3.0, c in -2.0f64..2.0) {
        let n = x.len();
        let h = r::layernorm_normalize(&x, r::EPS);
        let y = r::layernorm(&x, &vec![g; n], &vec![c; n], r::EPS);
        for (a, b) in h.iter().zip(&y) {
            prop_assert!((a * g + c - b).abs() < 1e-12);
        }
    }

    #[test]
    fn rmsnorm_is_scale_invariant(x in vecs(1..200, -5.0, 5.0), w in 0.5f64..1.5, s in 0.01f64..100.0) {
        prop_assume!(x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64 > 1e-2);
        let ws = vec![w; x.len()];
        let scaled: Vec<f64> = x.iter().map(|v| v * s).collect();
        // eps = 0 makes the invariance exact; with eps = 1e-6 it holds to about eps/mean(x²).
        let a = r::rmsnorm(&x, &ws, 0.0);
        let b = r::rmsnorm(&scaled, &ws, 0.0);
        for (p, q) in a.iter().zip(&b) {
            prop_assert!((p - q).abs() < 1e-12 * (1.0 + p.abs()));
        }
        let c = r::rmsnorm(&scaled, &ws, r::EPS);
        for (p, q) in a.iter().zip(&c) {
            prop_assert!((p - q).abs() < 1e-3 * (1.0 + p.abs()));
        }
        // Unit RMS before the weight.
        let y = r::rmsnorm(&x, &vec![1.0; x.len()], 0.0);
        let rms = (y.iter().map(|v| v * v).sum::<f64>() / y.len() as f64).sqrt();
        prop_assert!((rms - 1.0).abs() < 1e-12);
    }

    #[test]
    fn rmsnorm_bwd_matches_finite_differences(
        x in vecs(1..24, -2.0, 2.0),
        seed in any::<u64>(),
    ) {
        let n = x.len();
        let w: Vec<f64> = (0..n).map(|j| value(seed, 1, j as u64, Uniform { lo: 0.5, hi: 1.5 }, Dtype::Fp32)).collect();
        let dy: Vec<f64> = (0..n).map(|j| value(seed, 2, j as u64, Uniform::SYMMETRIC, Dtype::Fp32)).collect();
        prop_assume!(x.iter().map(|v| v * v).sum::<f64>() / n as f64 > 1e-2);
        let (dx, dw) = r::rmsnorm_bwd(&x, &w, &dy, r::EPS);
        // L(x, w) = dy · rmsnorm(x, w)
        let lx = |xv: &[f64]| dot(&dy, &r::rmsnorm(xv, &w, r::EPS));
        let lw = |wv: &[f64]| dot(&dy, &r::rmsnorm(&x, wv, r::EPS));
        for j in 0..n {
            prop_assert!(close(dx[j], fd(&lx, &x, j), 1e-6), "dx[{j}] {} vs {}", dx[j], fd(&lx, &x, j));
            prop_assert!(close(dw[j], fd(&lw, &w, j), 1e-6), "dw[{j}] {} vs {}", dw[j], fd(&lw, &w, j));
        }
    }

    #[test]
    fn softmax_bwd_matches_finite_differences(x in vecs(1..24, -4.0, 4.0), seed in any::<u64>()) {
        let n = x.len();
        let dy: Vec<f64> = (0..n).map(|j| value(seed, 1, j as u64, Uniform::SYMMETRIC, Dtype::Fp32)).collect();
        let dx = r::softmax_bwd(&r::softmax(&x), &dy);
        let l = |xv: &[f64]| dot(&dy, &r::softmax(xv));
        for (j, d) in dx.iter().enumerate() {
            prop_assert!(close(*d, fd(&l, &x, j), 1e-6), "dx[{j}] {} vs {}", d, fd(&l, &x, j));
        }
    }

    #[test]
    fn cross_entropy_is_lse_minus_target(x in vecs(1..100, -10.0, 10.0), t in any::<prop::sample::Index>()) {
        let t = t.index(x.len()) as i32;
        let (loss, lse) = r::cross_entropy(&x, t);
        prop_assert!((lse - r::logsumexp(&x)).abs() < 1e-12);
        prop_assert!((loss - (lse - x[t as usize])).abs() < 1e-12);
        // Naive logsumexp agrees where it does not overflow.
        let naive = x.iter().map(|v| v.exp()).sum::<f64>().ln();
        prop_assert!((lse - naive).abs() < 1e-10 * (1.0 + naive.abs()));
        prop_assert!(loss >= 0.0);
        let (ignored, lse2) = r::cross_entropy(&x, r::IGNORE_INDEX);
        prop_assert_eq!(ignored, 0.0);
        prop_assert_eq!(lse2, lse);
    }

    #[test]
    fn cross_entropy_bwd_matches_finite_differences(
        x in vecs(1..24, -4.0, 4.0),
        t in any::<prop::sample::Index>(),
        g in 0.5f64..1.5,
    ) {
        let t = t.index(x.len()) as i32;
        let dx = r::cross_entropy_bwd(&x, t, g);
        let l = |xv: &[f64]| g * r::cross_entropy(xv, t).0;
        for (j, d) in dx.iter().enumerate() {
            prop_assert!(close(*d, fd(&l, &x, j), 1e-6), "dx[{j}] {} vs {}", d, fd(&l, &x, j));
        }
        // Rows of the gradient sum to 0 (softmax sums to 1, one-hot to 1).
        prop_assert!(dx.iter().sum::<f64>().abs() < 1e-12);
        prop_assert!(r::cross_entropy_bwd(&x, r::IGNORE_INDEX, g).iter().all(|v| *v == 0.0));
    }

    #[test]
    fn activations_match_their_definitions(x in -8.0f64..8.0) {
        // SiLU is x·sigmoid(x); GELU(erf) is x·Φ(x); the tanh form approximates it to ~1e-3.
        prop_assert!((r::silu(x) - x / (1.0 + (-x).exp())).abs() < 1e-15);
        prop_assert!((r::gelu_tanh(x) - r::gelu_erf(x)).abs() < 2e-3);
        // erf is odd and bounded.
        prop_assert!((r::erf(x) + r::erf(-x)).abs() < 1e-15);
        prop_assert!(r::erf(x).abs() <= 1.0);
        // d/dx erf = 2/√π e^{−x²}
        let h = 1e-5;
        let d = (r::erf(x + h) - r::erf(x - h)) / (2.0 * h);
        prop_assert!((d - std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp()).abs() < 1e-8);
    }

    #[test]
    fn mse_is_mean_of_squares(a in vecs(1..50, -3.0, 3.0), s in -1.0f64..1.0) {
        let b: Vec<f64> = a.iter().map(|v| v + s).collect();
        prop_assert!((r::mse(&a, &b) - s * s).abs() < 1e-12);
        prop_assert_eq!(r::mse(&a, &a), 0.0);
    }
}

#[test]
fn erf_known_values() {
    // Values from Python's math.erf.
    for (x, want) in [
        (0.0, 0.0),
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (2.999, 0.999_977_769_831_400_2),
        (3.5, 0.999_999_256_901_627_7),
        (5.0, 0.999_999_999_998_462_5),
        (-1.0, -0.842_700_792_949_714_9),
    ] {
        assert!((r::erf(x) - want).abs() < 5e-14, "erf({x}) = {}", r::erf(x));
    }
}

#[test]
fn registry_names_and_dims() {
    let names: Vec<_> = norms::families().iter().map(|f| f.name()).collect();
    assert_eq!(
        names,
        [
            "rmsnorm",
            "rmsnorm_bwd",
            "fused_add_rmsnorm",
            "layernorm",
            "softmax",
            "softmax_bwd",
            "cross_entropy",
            "cross_entropy_bwd",
            "mse",
            "gelu",
            "gelu_tanh",
            "silu"
        ]
    );
    for f in norms::families() {
        let got = family::by_name(f.name()).expect("registered");
        assert_eq!(got.dims(), f.dims());
        assert!(got.memory_bound());
        assert_eq!(got.backends(), ["cuda"]);
    }
    assert_eq!(norms::RMSNORM.dims(), ["m", "n", "w"]);
    assert_eq!(norms::SOFTMAX.dims(), ["m", "n"]);
}

#[test]
fn validation() {
    let f: &dyn Family = &norms::RMSNORM;
    assert!(f.validate(&mnw(4, 4, 16)).is_ok());
    assert!(f.validate(&mnw(4, 4, 32)).is_ok());
    assert!(f.validate(&mnw(4, 4, 8)).unwrap_err().contains("16 or 32"));
    assert!(f
        .validate(&mnw(1 << 31, 4, 32))
        .unwrap_err()
        .contains("32-bit"));
    assert!(norms::MSE.validate(&mn(1 << 20, 1 << 11)).is_err());
    assert!(norms::MSE.validate(&mn(1 << 19, 1 << 11)).is_ok());
    assert!(norms::RMSNORM_BWD
        .validate(&mnw(1 << 20, 1 << 11, 32))
        .is_err());
    // The forward families have no reference limit.
    assert!(norms::SOFTMAX.validate(&mn(1 << 22, 4096)).is_ok());
}

#[test]
fn weight_dtypes() {
    assert_eq!(weight_dtype(&mnw(1, 1, 32), Dtype::Bf16), Dtype::Fp32);
    assert_eq!(weight_dtype(&mnw(1, 1, 16), Dtype::Bf16), Dtype::Bf16);
    assert_eq!(weight_dtype(&mnw(1, 1, 16), Dtype::Fp16), Dtype::Fp16);
    assert_eq!(weight_dtype(&mnw(1, 1, 16), Dtype::Fp32), Dtype::Bf16);
    let ins = norms::RMSNORM.inputs(&mnw(3, 5, 32), Dtype::Bf16);
    assert_eq!(ins[1].dtype, Dtype::Fp32);
    assert_eq!(ins[1].len, 5);
    let outs = norms::RMSNORM_BWD.outputs(&mnw(3, 5, 16), Dtype::Fp16);
    assert_eq!(
        (outs[1].name, outs[1].dtype, outs[1].len),
        ("dw", Dtype::Fp16, 5)
    );
}

#[test]
fn byte_counts() {
    let s = mnw(65536, 4096, 32);
    let e = 65536.0 * 4096.0;
    let b = |f: &RowFamily, s: &Shape, d: Dtype| f.bytes(s, d);
    assert_eq!(
        b(&norms::RMSNORM, &s, Dtype::Bf16),
        2.0 * e * 2.0 + 4096.0 * 4.0
    );
    assert_eq!(
        b(&norms::RMSNORM, &mnw(65536, 4096, 16), Dtype::Bf16),
        2.0 * e * 2.0 + 4096.0 * 2.0
    );
    assert_eq!(
        b(&norms::FUSED_ADD_RMSNORM, &s, Dtype::Bf16),
        4.0 * e * 2.0 + 4096.0 * 4.0
    );
    assert_eq!(
        b(&norms::RMSNORM_BWD, &s, Dtype::Fp32),
        3.0 * e * 4.0 + 2.0 * 4096.0 * 4.0
    );
    assert_eq!(
        b(&norms::LAYERNORM, &s, Dtype::Fp16),
        2.0 * e * 2.0 + 2.0 * 4096.0 * 4.0
    );
    let p = mn(65536, 4096);
    assert_eq!(b(&norms::SOFTMAX, &p, Dtype::Bf16), 2.0 * e * 2.0);
    assert_eq!(b(&norms::SOFTMAX_BWD, &p, Dtype::Bf16), 3.0 * e * 2.0);
    assert_eq!(
        b(&norms::CROSS_ENTROPY, &p, Dtype::Bf16),
        e * 2.0 + 12.0 * 65536.0
    );
    assert_eq!(
        b(&norms::CROSS_ENTROPY_BWD, &p, Dtype::Bf16),
        2.0 * e * 2.0 + 8.0 * 65536.0
    );
    assert_eq!(b(&norms::MSE, &p, Dtype::Fp32), 2.0 * e * 4.0 + 4.0);
    assert_eq!(b(&norms::GELU, &p, Dtype::Bf16), 2.0 * e * 2.0);
    // fused add + RMSNorm is in place: its outputs alias its inputs and take no memory.
    let outs = norms::FUSED_ADD_RMSNORM.outputs(&s, Dtype::Bf16);
    assert_eq!(outs[0].init, Init::Alias(0));
    assert_eq!(outs[1].init, Init::Alias(1));
    assert_eq!(
        family::device_bytes(&norms::FUSED_ADD_RMSNORM, &s, Dtype::Bf16),
        2 * 65536 * 4096 * 2 + 4096 * 4
    );
}

#[test]
fn targets_cover_ignore_index() {
    let s = mn(1000, 50);
    let t = norms::CROSS_ENTROPY.host_i32(&s, 7, 1);
    assert_eq!(t.len(), 1000);
    assert_eq!(t[999], r::IGNORE_INDEX, "the last row is always ignored");
    let ignored = t.iter().filter(|v| **v == r::IGNORE_INDEX).count();
    assert!((20..=130).contains(&ignored), "{ignored} ignored rows");
    assert!(t
        .iter()
        .all(|v| *v == r::IGNORE_INDEX || (0..50).contains(v)));
    assert_eq!(t[3], target(7, 1000, 50, 3));
    // A single row is never ignored by construction, only by chance.
    assert!(norms::CROSS_ENTROPY.host_i32(&mn(1, 50), 7, 0).is_empty());
}

/// The references built by the families agree with the row functions on the generated
/// inputs, check whole sampled rows, and include the first and last row.
#[test]
fn family_references_use_the_inputs() {
    let seed = 42;
    let (m, n) = (40usize, 24usize);
    let s = mnw(m as u64, n as u64, 32);
    let d = Dtype::Bf16;
    let x = |i: usize| -> Vec<f64> {
        (0..n)
            .map(|j| value(seed, 0, (i * n + j) as u64, Uniform::SYMMETRIC, d))
            .collect()
    };
    let w: Vec<f64> = (0..n)
        .map(|j| value(seed, 1, j as u64, Uniform { lo: 0.5, hi: 1.5 }, Dtype::Fp32))
        .collect();
    let e = norms::RMSNORM.reference(&s, d, seed);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].indices.len(), CHECK_ROWS * n);
    assert_eq!(e[0].indices[0], 0);
    assert_eq!(*e[0].indices.last().unwrap(), m * n - 1);
    for (&idx, &v) in e[0].indices.iter().zip(&e[0].values) {
        let (i, j) = (idx / n, idx % n);
        assert_eq!(v, r::rmsnorm(&x(i), &w, r::EPS)[j]);
    }
    // rmsnorm_bwd: dw over all rows.
    let e = norms::RMSNORM_BWD.reference(&s, d, seed);
    assert_eq!(e[1].indices, (0..n).collect::<Vec<_>>());
    let dy = |i: usize| -> Vec<f64> {
        (0..n)
            .map(|j| value(seed, 2, (i * n + j) as u64, Uniform::SYMMETRIC, d))
            .collect()
    };
    let mut dw = vec![0.0; n];
    for i in 0..m {
        let (_, part) = r::rmsnorm_bwd(&x(i), &w, &dy(i), r::EPS);
        for (a, b) in dw.iter_mut().zip(part) {
            *a += b;
        }
    }
    for (a, b) in e[1].values.iter().zip(&dw) {
        assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()));
    }
    // cross_entropy: loss and lse per sampled row, the last row ignored.
    let p = mn(m as u64, n as u64);
    let e = norms::CROSS_ENTROPY.reference(&p, d, seed);
    assert_eq!(e.len(), 2);
    assert_eq!(*e[0].indices.last().unwrap(), m - 1);
    assert_eq!(*e[0].values.last().unwrap(), 0.0);
    assert!(e[1].values.iter().all(|v| v.is_finite() && *v > 0.0));
    // mse: one scalar over every element.
    let e = norms::MSE.reference(&p, Dtype::Fp32, seed);
    let mut sum = 0.0;
    for i in 0..m * n {
        let a = value(seed, 0, i as u64, Uniform::SYMMETRIC, Dtype::Fp32);
        let b = value(seed, 1, i as u64, Uniform::SYMMETRIC, Dtype::Fp32);
        sum += (a - b) * (a - b);
    }
    assert!((e[0].values[0] - sum / (m * n) as f64).abs() < 1e-12);
    // fused add: the residual output is the dtype-rounded sum.
    let e = norms::FUSED_ADD_RMSNORM.reference(&s, d, seed);
    assert_eq!(e.len(), 2);
    let idx = e[1].indices[5];
    let a = value(seed, 0, idx as u64, Uniform::SYMMETRIC, d);
    let b = value(seed, 1, idx as u64, Uniform::SYMMETRIC, d);
    assert_eq!(e[1].values[5], d.round((a + b) as f32));
    // Elementwise families sample elements, first and last included.
    let big = mn(100, 100);
    let e = norms::GELU.reference(&big, d, seed);
    assert_eq!(e[0].indices.len(), norms::CHECK_ELEMENTS);
    assert_eq!(e[0].indices[0], 0);
    assert_eq!(*e[0].indices.last().unwrap(), 9999);
}

#[test]
fn tolerances() {
    let s = mnw(4, 4, 32);
    assert_eq!(
        norms::RMSNORM.tolerance(&s, Dtype::Bf16),
        kernelgate::verify::Tolerance::for_dtype(Dtype::Bf16)
    );
    assert!(norms::MSE.tolerance(&mn(4, 4), Dtype::Fp32).rel_l2 <= 1e-4);
    assert!(
        norms::CROSS_ENTROPY
            .tolerance(&mn(4, 4), Dtype::Bf16)
            .rel_l2
            <= 3e-5
    );
}

/// `rmsnorm_bwd::cuda::m1_n1_w32_bf16` on H200 GPU-f8028581 (session 25), seed as recorded:
/// dx of a one-column row is r·w·dy·eps/(x² + eps), formed by cancelling two terms about
/// x²/eps (here 1e6) times larger; the kernel's fp32 arithmetic gave 2.2817e-7 against
/// 1.9991e-7 in float64 (14%), which the family's old one-column bound (10% relative) called
/// wrong. Its error is 1.3 units of fp32 rounding on those terms, inside the reference's slack.
#[test]
fn one_column_rmsnorm_bwd_is_held_to_fp32_rounding_of_its_terms() {
    use kernelgate::verify::{check_in, fp32_slack};
    let s = mnw(1, 1, 32);
    let d = Dtype::Bf16;
    let seed = 15923770840201507739;
    let fam = &norms::RMSNORM_BWD;
    let e = fam.reference(&s, d, seed);
    let tol = fam.tolerance(&s, d);
    assert_eq!(tol, kernelgate::verify::Tolerance::for_dtype(d));
    let want = e[0].values[0];
    assert!((want - 1.99912674775371e-07).abs() < 1e-15, "{want}");
    let slack = e[0].slack[0];
    let got = [2.2817403078079224e-07];
    let c = check_in(Some(d), "dx", 1, |i| got[i], &e[0], tol);
    assert!(c.passed, "{}", c.describe());
    // The terms' magnitude: the slack is ARITH_SLACK_UNITS of fp32 rounding on it.
    let x = value(seed, 0, 0, Uniform::SYMMETRIC, d);
    let w = value(seed, 1, 0, Uniform { lo: 0.5, hi: 1.5 }, Dtype::Fp32);
    let dy = value(seed, 2, 0, Uniform::SYMMETRIC, d);
    let mag = r::rmsnorm_bwd_dx_magnitude(&[x], &[w], &[dy], r::EPS)[0];
    assert_eq!(slack, fp32_slack(mag));
    assert!((got[0] - want).abs() / (mag * 2f64.powi(-24)) < 1.5);
    // Beyond the slack by one bf16 step of the value is still wrong, and so is NaN.
    let far = [want + slack + want * 2.0 * tol.rtol + 1e-12];
    assert!(!check_in(Some(d), "dx", 1, |i| far[i], &e[0], tol).passed);
    let nan = [f64::NAN];
    assert!(!check_in(Some(d), "dx", 1, |i| nan[i], &e[0], tol).passed);
}

/// An fp32 kernel's arithmetic for `rmsnorm_bwd` dx on short rows (where the two terms cancel
/// most), emulated in f32 with the reciprocal square root two units off either way: it passes
/// the family's check for every dtype's bound, and an output missing the second term does not.
fn emulated_fp32_dx(x: &[f64], w: &[f64], dy: &[f64], r_ulps: i32) -> Vec<f64> {
    let n = x.len() as f32;
    let (x, w, dy): (Vec<f32>, Vec<f32>, Vec<f32>) = (
        x.iter().map(|v| *v as f32).collect(),
        w.iter().map(|v| *v as f32).collect(),
        dy.iter().map(|v| *v as f32).collect(),
    );
    let ss: f32 = x.iter().map(|v| v * v).sum::<f32>() / n + 1e-6;
    let r = f32::from_bits(((1.0 / ss.sqrt()).to_bits() as i32 + r_ulps) as u32);
    let d: f32 = x.iter().zip(&w).zip(&dy).map(|((a, g), e)| g * e * a).sum();
    let coef = r * r * r * d / n;
    x.iter()
        .zip(&w)
        .zip(&dy)
        .map(|((a, g), e)| (r * g * e - coef * a) as f64)
        .collect()
}

proptest! {
    #[test]
    fn rmsnorm_bwd_slack_covers_fp32_arithmetic(
        seed in any::<u64>(), n in 1u64..9, r_ulps in -2i32..=2, di in 0usize..3
    ) {
        use kernelgate::verify::check_in;
        let d = [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32][di];
        let s = mnw(1, n, 32);
        let fam = &norms::RMSNORM_BWD;
        let e = fam.reference(&s, d, seed);
        let tol = fam.tolerance(&s, d);
        let n = n as usize;
        let x: Vec<f64> = (0..n).map(|j| value(seed, 0, j as u64, Uniform::SYMMETRIC, d)).collect();
        let w: Vec<f64> = (0..n)
            .map(|j| value(seed, 1, j as u64, Uniform { lo: 0.5, hi: 1.5 }, Dtype::Fp32))
            .collect();
        let dy: Vec<f64> = (0..n).map(|j| value(seed, 2, j as u64, Uniform::SYMMETRIC, d)).collect();
        let got: Vec<f64> = emulated_fp32_dx(&x, &w, &dy, r_ulps)
            .into_iter()
            .map(|v| d.round(v as f32))
            .collect();
        let c = check_in(Some(d), "dx", n, |i| got[i], &e[0], tol);
        prop_assert!(c.passed, "{}", c.describe());
        // Without the second term the output is wrong wherever that term is not tiny.
        let (dx, _) = r::rmsnorm_bwd(&x, &w, &dy, r::EPS);
        let rstd = r::rms_rstd(&x, r::EPS);
        let first: Vec<f64> = (0..n).map(|j| d.round((rstd * w[j] * dy[j]) as f32)).collect();
        let dropped: f64 = (0..n).map(|j| (first[j] - dx[j]).powi(2)).sum::<f64>().sqrt();
        let norm: f64 = dx.iter().map(|v| v * v).sum::<f64>().sqrt();
        if dropped > 2.0 * norm {
            let c = check_in(Some(d), "dx", n, |i| first[i], &e[0], tol);
            prop_assert!(!c.passed);
        }
    }
}

proptest! {
    /// `softmax_bwd` dx computed the way an fp32 kernel does (the row's dot product summed in
    /// f32, then y·(dy − dot) in f32, stored in the dtype) passes the family's check, rounding
    /// slack included; the output without the dot product fails wherever that term is not tiny.
    #[test]
    fn softmax_bwd_slack_covers_fp32_arithmetic(
        seed in any::<u64>(), n in 1u64..64, di in 0usize..3
    ) {
        use kernelgate::verify::check_in;
        let d = [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32][di];
        let s = mn(1, n);
        let fam = &norms::SOFTMAX_BWD;
        let e = fam.reference(&s, d, seed);
        let tol = fam.tolerance(&s, d);
        let n = n as usize;
        // The family's probability-like y: uniform in [0, 2/n), fp16 at least up to 2^-9.
        let hi = 2.0 / n as f32;
        let hi = if d == Dtype::Fp16 { hi.max(1.0 / 512.0) } else { hi };
        let y: Vec<f64> = (0..n).map(|j| value(seed, 0, j as u64, Uniform { lo: 0.0, hi }, d)).collect();
        let dy: Vec<f64> = (0..n).map(|j| value(seed, 1, j as u64, Uniform::SYMMETRIC, d)).collect();
        prop_assert_eq!(&e[0].values, &r::softmax_bwd(&y, &dy));
        let dot: f32 = y.iter().zip(&dy).map(|(a, b)| *a as f32 * *b as f32).sum();
        let got: Vec<f64> = y
            .iter()
            .zip(&dy)
            .map(|(a, b)| d.round(*a as f32 * (*b as f32 - dot)))
            .collect();
        let c = check_in(Some(d), "dx", n, |i| got[i], &e[0], tol);
        prop_assert!(c.passed, "{}", c.describe());
        let want = &e[0].values;
        let dropped: Vec<f64> = y.iter().zip(&dy).map(|(a, b)| d.round((*a * *b) as f32)).collect();
        let off: f64 = (0..n).map(|j| (dropped[j] - want[j]).powi(2)).sum::<f64>().sqrt();
        let norm: f64 = want.iter().map(|v| v * v).sum::<f64>().sqrt();
        if off > 0.5 * norm {
            prop_assert!(!check_in(Some(d), "dx", n, |i| dropped[i], &e[0], tol).passed);
        }
    }
}

mod masked_logits {
    use super::*;
    use kernelgate::family::norms::{col_mask, target_in};
    use kernelgate::inputs::{masked_value, ColMask};

    fn masked(m: u64, n: u64, lead: Option<u64>, pad: Option<u64>) -> Shape {
        let mut d = vec![("m", m), ("n", n)];
        if let Some(l) = lead {
            d.push(("lead", l));
        }
        if let Some(p) = pad {
            d.push(("pad", p));
        }
        Shape::new(d)
    }

    #[test]
    fn col_mask_columns() {
        let mk = ColMask {
            row: 10,
            lead: 2,
            pad: 3,
        };
        let cols: Vec<bool> = (0..10).map(|j| mk.masks_col(j)).collect();
        assert_eq!(
            cols,
            [true, true, false, false, false, false, false, true, true, true]
        );
        assert_eq!(mk.kept(), 2..7);
        // Flat indices wrap by row.
        assert!(mk.masks(10) && mk.masks(19) && !mk.masks(12));
        let g = Uniform { lo: -4.0, hi: 4.0 };
        assert_eq!(
            masked_value(1, 0, 11, g, Dtype::Bf16, mk),
            f64::NEG_INFINITY
        );
        assert_eq!(
            masked_value(1, 0, 12, g, Dtype::Bf16, mk),
            value(1, 0, 12, g, Dtype::Bf16)
        );
    }

    #[test]
    fn inputs_are_masked_only_when_asked() {
        for fam in [
            &norms::SOFTMAX,
            &norms::CROSS_ENTROPY,
            &norms::CROSS_ENTROPY_BWD,
        ] {
            let plain = fam.inputs(&mn(4, 300), Dtype::Bf16);
            assert!(matches!(plain[0].init, Init::Uniform(_)), "{}", fam.name());
            // lead = pad = 0 is the plain input too.
            let zero = fam.inputs(&masked(4, 300, Some(0), Some(0)), Dtype::Bf16);
            assert_eq!(zero[0].init, plain[0].init);
            let m = fam.inputs(&masked(4, 300, Some(5), Some(7)), Dtype::Bf16);
            let Init::Masked(_, mk) = m[0].init else {
                panic!("{}: {:?}", fam.name(), m[0].init)
            };
            assert_eq!(
                mk,
                ColMask {
                    row: 300,
                    lead: 5,
                    pad: 7
                }
            );
            assert_eq!(col_mask(&masked(4, 300, None, Some(7))).unwrap().lead, 0);
        }
        assert!(col_mask(&mn(4, 300)).is_none());
    }

    #[test]
    fn targets_stay_in_the_finite_columns() {
        let s = masked(2000, 300, Some(40), Some(250));
        let t = norms::CROSS_ENTROPY.host_i32(&s, 3, 1);
        assert!(t
            .iter()
            .all(|v| *v == r::IGNORE_INDEX || (40..50).contains(v)));
        // The same rows are ignored as without the mask, and a full range is `target`.
        let plain = norms::CROSS_ENTROPY.host_i32(&mn(2000, 300), 3, 1);
        for (a, b) in t.iter().zip(&plain) {
            assert_eq!(*a == r::IGNORE_INDEX, *b == r::IGNORE_INDEX);
        }
        for i in 0..50 {
            assert_eq!(target_in(9, 50, 0..300, i), target(9, 50, 300, i));
        }
    }

    #[test]
    fn references_of_masked_rows_are_finite_and_zero_where_masked() {
        let s = masked(8, 64, Some(3), Some(50));
        let fin = |e: &kernelgate::verify::Expected| e.values.iter().all(|v| v.is_finite());
        let ce = norms::CROSS_ENTROPY.reference(&s, Dtype::Bf16, 5);
        assert!(ce.iter().all(fin), "{ce:?}");
        for fam in [&norms::SOFTMAX, &norms::CROSS_ENTROPY_BWD] {
            let e = &fam.reference(&s, Dtype::Bf16, 5)[0];
            assert!(fin(e), "{}", fam.name());
            for (i, v) in e.indices.iter().zip(&e.values) {
                let col = i % 64;
                if !(3..14).contains(&col) {
                    assert_eq!(*v, 0.0, "{} column {col}", fam.name());
                }
            }
        }
        // The lse of a masked row is the logsumexp of its finite columns only.
        let lse = &ce[1];
        for (i, v) in lse.indices.iter().zip(&lse.values) {
            let g = Uniform { lo: -4.0, hi: 4.0 };
            let fin: Vec<f64> = (3..14)
                .map(|j| value(5, 0, (i * 64 + j) as u64, g, Dtype::Bf16))
                .collect();
            assert!((r::logsumexp(&fin) - v).abs() < 1e-12, "row {i}");
        }
    }
}
