//! Kernel families: float64 references, FLOP/byte counts, tolerances, tensor specs.

use approx::assert_relative_eq;
use kernelgate::case::{Dtype, Shape};
use kernelgate::family::gemm::{Gemm, CHECK_COLS, CHECK_ROWS, FULL_ROW_LIMIT};
use kernelgate::family::spin::Spin;
use kernelgate::family::{self, Family, Init};
use kernelgate::inputs::{value, Uniform};
use kernelgate::verify::{check, sample_rows, Expected, Tolerance};
use proptest::prelude::*;

fn mnk(m: u64, n: u64, k: u64) -> Shape {
    Shape::new([("m", m), ("n", n), ("k", k)])
}

fn a(seed: u64, k: usize, i: usize, kk: usize, d: Dtype) -> f64 {
    value(seed, 0, (i * k + kk) as u64, Uniform::SYMMETRIC, d)
}

fn b(seed: u64, n: usize, kk: usize, j: usize, d: Dtype) -> f64 {
    value(seed, 1, (kk * n + j) as u64, Uniform::SYMMETRIC, d)
}

/// C[i][j] in float64 straight from the input definition (tensor 0 = A, row-major M×K;
/// tensor 1 = B, row-major K×N).
fn naive(seed: u64, m: usize, n: usize, k: usize, d: Dtype, i: usize, j: usize) -> f64 {
    assert!(i < m && j < n);
    (0..k)
        .map(|kk| a(seed, k, i, kk, d) * b(seed, n, kk, j, d))
        .sum()
}

/// Splits an Expected into (row, col) → value and checks the index layout.
fn by_row(e: &Expected, n: usize) -> std::collections::BTreeMap<usize, Vec<(usize, f64)>> {
    let mut rows = std::collections::BTreeMap::<usize, Vec<(usize, f64)>>::new();
    for (&idx, &v) in e.indices.iter().zip(&e.values) {
        rows.entry(idx / n).or_default().push((idx % n, v));
    }
    rows
}

#[test]
fn family_registry() {
    let names: Vec<_> = family::all().iter().map(|f| f.name()).collect();
    assert_eq!(names[..4], ["gemm", "spin", "mha", "nsa"]);
    // Names are unique (the memory-bound families are checked in tests/norms_references.rs).
    let unique: std::collections::BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len());
    assert_eq!(family::by_name("gemm").unwrap().dims(), ["m", "n", "k"]);
    assert_eq!(family::by_name("spin").unwrap().dims(), ["us"]);
    assert!(family::by_name("nope").is_none());
    assert!(family::by_name("").is_none());
    for f in family::all() {
        assert!(!f.about().is_empty());
        assert!(!f.backends().is_empty() && !f.dtypes().is_empty());
        assert!(
            f.dims().iter().all(|d| kernelgate::case::is_dim_name(d)),
            "{}",
            f.name()
        );
        // Every backend a family names exists.
        for b in f.backends() {
            assert!(
                kernelgate::backend::by_name(b).is_some(),
                "{} names unknown backend {b}",
                f.name()
            );
        }
    }
    assert_eq!(Gemm.backends(), ["cublas", "cuda"]);
    assert_eq!(Gemm.dtypes(), Dtype::ALL);
    assert!(!Gemm.memory_bound());
    assert!(kernelgate::backend::by_name("torch").is_none());
}

#[test]
fn gemm_tensor_specs() {
    let s = mnk(2, 3, 5);
    let ins = Gemm.inputs(&s, Dtype::Bf16);
    assert_eq!(ins.len(), 2);
    assert_eq!(
        (ins[0].name, ins[0].len, ins[0].dtype),
        ("A", 10, Dtype::Bf16)
    );
    assert_eq!((ins[1].name, ins[1].len), ("B", 15));
    assert!(ins
        .iter()
        .all(|t| t.init == Init::Uniform(Uniform::SYMMETRIC)));
    let outs = Gemm.outputs(&s, Dtype::Fp32);
    assert_eq!(outs.len(), 1);
    assert_eq!(
        (outs[0].name, outs[0].len, outs[0].init, outs[0].bytes()),
        ("C", 6, Init::Output, 24)
    );
    assert_eq!(ins[0].bytes(), 20);
}

#[test]
fn gemm_flops_and_bytes() {
    let s = mnk(4096, 4096, 4096);
    assert_eq!(Gemm.flops(&s), 2.0 * 4096f64.powi(3));
    assert_eq!(Gemm.bytes(&s, Dtype::Bf16), 3.0 * 4096.0 * 4096.0 * 2.0);
    let s = mnk(2, 3, 4);
    assert_eq!(Gemm.flops(&s), 48.0);
    assert_eq!(Gemm.bytes(&s, Dtype::Fp32), (8.0 + 12.0 + 6.0) * 4.0);
    assert_eq!(Gemm.bytes(&s, Dtype::Fp16), (8.0 + 12.0 + 6.0) * 2.0);
}

#[test]
fn device_bytes_counts_inputs_and_outputs() {
    assert_eq!(
        family::device_bytes(&Gemm, &mnk(2, 3, 4), Dtype::Bf16),
        (8 + 12 + 6) * 2
    );
    assert_eq!(
        family::device_bytes(&Gemm, &mnk(2, 3, 4), Dtype::Fp32),
        (8 + 12 + 6) * 4
    );
    assert_eq!(
        family::device_bytes(&Gemm, &mnk(8192, 8192, 8192), Dtype::Bf16),
        3 * 8192 * 8192 * 2
    );
    assert_eq!(
        family::device_bytes(&Spin, &Shape::new([("us", 10)]), Dtype::Fp32),
        4
    );
}

#[test]
fn gemm_tolerance_grows_with_k_for_fp32_only() {
    let t = |k: u64, d: Dtype| Gemm.tolerance(&mnk(8, 8, k), d);
    assert_eq!(
        t(256, Dtype::Fp32),
        Tolerance {
            rel_l2: 1e-5,
            atol: 2e-5,
            rtol: 1e-5
        }
    );
    assert_eq!(
        t(16, Dtype::Fp32),
        t(256, Dtype::Fp32),
        "no shrinking below k = 256"
    );
    assert_eq!(t(1, Dtype::Fp32), t(256, Dtype::Fp32));
    let t1024 = t(1024, Dtype::Fp32);
    assert_relative_eq!(t1024.rel_l2, 2e-5, max_relative = 1e-12);
    assert_relative_eq!(t1024.atol, 4e-5, max_relative = 1e-12);
    assert_eq!(t1024.rtol, 1e-5);
    assert_relative_eq!(t(65536, Dtype::Fp32).rel_l2, 16e-5, max_relative = 1e-12);
    let mut last = 0.0;
    for k in [1, 256, 257, 1000, 4096, 100_000] {
        let r = t(k, Dtype::Fp32).rel_l2;
        assert!(r >= last, "k={k}");
        last = r;
    }
    for d in [Dtype::Bf16, Dtype::Fp16] {
        for k in [1, 256, 8192, 100_000] {
            assert_eq!(t(k, d), Tolerance::for_dtype(d), "{d} k={k}");
        }
    }
}

#[test]
fn gemm_validate_32_bit_range() {
    let v = |m, n, k| Gemm.validate(&mnk(m, n, k));
    let max = i32::MAX as u64;
    assert!(v(1, 1, 1).is_ok());
    assert!(v(max, 1, 1).is_ok());
    assert!(v(1, max, 1).is_ok());
    assert!(v(46340, 46340, 46340).is_ok(), "46340² < 2^31");
    assert_eq!(
        v(max + 1, 1, 1).unwrap_err(),
        "m=2147483648 exceeds the 32-bit index range of the kernels"
    );
    assert_eq!(
        v(1, 1, max + 1).unwrap_err(),
        "k=2147483648 exceeds the 32-bit index range of the kernels"
    );
    assert_eq!(
        v(u64::MAX, 1, 1).unwrap_err(),
        format!(
            "m={} exceeds the 32-bit index range of the kernels",
            u64::MAX
        )
    );
    for (m, n, k) in [
        (65536, 32768, 1),
        (65536, 1, 32768),
        (1, 65536, 32768),
        (46341, 46341, 1),
    ] {
        assert_eq!(
            v(m, n, k).unwrap_err(),
            format!("m·n, m·k or k·n exceeds 2^31 elements (m={m}, n={n}, k={k})")
        );
    }
}

#[test]
fn gemm_reference_small_exact() {
    // 2×3 · 3×2 against a hand-built product of the generated inputs.
    let seed = 99;
    let e = &Gemm.reference(&mnk(2, 2, 3), Dtype::Fp32, seed)[0];
    assert_eq!(e.output, 0);
    assert_eq!(e.indices, vec![0, 1, 2, 3]);
    for i in 0..2 {
        for j in 0..2 {
            let mut want = 0.0;
            for kk in 0..3 {
                want += value(
                    seed,
                    0,
                    (i * 3 + kk) as u64,
                    Uniform::SYMMETRIC,
                    Dtype::Fp32,
                ) * value(
                    seed,
                    1,
                    (kk * 2 + j) as u64,
                    Uniform::SYMMETRIC,
                    Dtype::Fp32,
                );
            }
            assert_relative_eq!(e.values[i * 2 + j], want, max_relative = 1e-14);
        }
    }
}

#[test]
fn gemm_reference_samples_rows() {
    let (m, n, k) = (100usize, 5usize, 7usize);
    let seed = 5;
    let e = &Gemm.reference(&mnk(m as u64, n as u64, k as u64), Dtype::Bf16, seed)[0];
    let rows = by_row(e, n);
    let want_rows = sample_rows(m, CHECK_ROWS, seed);
    assert_eq!(rows.keys().cloned().collect::<Vec<_>>(), want_rows);
    assert_eq!(rows.len(), CHECK_ROWS);
    assert!(rows.contains_key(&0) && rows.contains_key(&(m - 1)));
    for (i, cols) in &rows {
        assert_eq!(
            cols.iter().map(|c| c.0).collect::<Vec<_>>(),
            (0..n).collect::<Vec<_>>()
        );
        for &(j, v) in cols {
            assert_relative_eq!(
                v,
                naive(seed, m, n, k, Dtype::Bf16, *i, j),
                max_relative = 1e-12,
                epsilon = 1e-12
            );
        }
    }
    // Another seed samples other rows and other values.
    let e2 = &Gemm.reference(&mnk(m as u64, n as u64, k as u64), Dtype::Bf16, seed + 1)[0];
    assert_ne!(e2.indices, e.indices);
}

#[test]
fn gemm_reference_samples_columns_when_rows_are_long() {
    // n·k = 4 410 000 > FULL_ROW_LIMIT = 4 194 304: columns are sampled too.
    let (m, n, k) = (2usize, 2100usize, 2100usize);
    assert!(n * k > FULL_ROW_LIMIT);
    let seed = 77;
    let e = &Gemm.reference(&mnk(m as u64, n as u64, k as u64), Dtype::Bf16, seed)[0];
    assert_eq!(e.indices.len(), m * CHECK_COLS);
    assert_eq!(e.values.len(), e.indices.len());
    let rows = by_row(e, n);
    assert_eq!(rows.keys().cloned().collect::<Vec<_>>(), vec![0, 1]);
    let cols0: Vec<usize> = rows[&0].iter().map(|c| c.0).collect();
    let cols1: Vec<usize> = rows[&1].iter().map(|c| c.0).collect();
    assert_eq!(cols0, cols1, "every sampled row checks the same columns");
    assert_eq!(cols0.len(), CHECK_COLS);
    assert_eq!((cols0[0], *cols0.last().unwrap()), (0, n - 1));
    assert!(cols0.windows(2).all(|w| w[0] < w[1]));
    // Spot-check a spread of the sampled elements against the naive product.
    for (i, cols) in &rows {
        for &(j, v) in cols.iter().step_by(16).chain(cols.last()) {
            assert_relative_eq!(
                v,
                naive(seed, m, n, k, Dtype::Bf16, *i, j),
                max_relative = 1e-12,
                epsilon = 1e-12
            );
        }
    }
}

#[test]
fn gemm_reference_full_rows_up_to_the_limit() {
    // n·k exactly FULL_ROW_LIMIT: whole rows.
    let (n, k) = (2048usize, 2048usize);
    assert_eq!(n * k, FULL_ROW_LIMIT);
    let e = &Gemm.reference(&mnk(1, n as u64, k as u64), Dtype::Fp16, 1)[0];
    assert_eq!(e.indices, (0..n).collect::<Vec<_>>());
}

/// What a correct kernel computes: inputs in the storage dtype, fp32 accumulation in k order,
/// the result rounded to the storage dtype.
fn simulated_kernel(seed: u64, m: usize, n: usize, k: usize, d: Dtype, fault: Fault) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            let kmax = if fault == Fault::DropLastK { k - 1 } else { k };
            for kk in 0..kmax {
                let (x, y) = match fault {
                    Fault::TransposedB => (
                        a(seed, k, i, kk, d),
                        value(seed, 1, (j * k + kk) as u64, Uniform::SYMMETRIC, d),
                    ),
                    Fault::SwappedSeed => (a(seed ^ 1, k, i, kk, d), b(seed ^ 1, n, kk, j, d)),
                    _ => (a(seed, k, i, kk, d), b(seed, n, kk, j, d)),
                };
                acc += x as f32 * y as f32;
            }
            c[i * n + j] = if fault == Fault::SkipLastRow && i == m - 1 {
                f64::NAN
            } else {
                d.round(acc)
            };
        }
    }
    c
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    None,
    DropLastK,
    TransposedB,
    SwappedSeed,
    SkipLastRow,
}

#[test]
fn correct_kernels_pass_and_wrong_ones_fail_the_family_tolerance() {
    for d in Dtype::ALL {
        for &(m, n, k) in &[
            (1usize, 1usize, 1usize),
            (17, 33, 100),
            (40, 40, 40),
            (3, 16, 4096),
            (2, 8, 1000),
        ] {
            let s = mnk(m as u64, n as u64, k as u64);
            let seed = 1000 + k as u64;
            let exp = &Gemm.reference(&s, d, seed)[0];
            let tol = Gemm.tolerance(&s, d);
            let out = simulated_kernel(seed, m, n, k, d, Fault::None);
            let c = check("C", m * n, |i| out[i], exp, tol);
            assert!(c.passed, "{d} {m}x{n}x{k}: {}", c.describe());
            let mut faults = vec![Fault::SwappedSeed, Fault::SkipLastRow];
            if k > 1 {
                faults.push(Fault::DropLastK);
            }
            if m == n && n == k && k > 1 {
                faults.push(Fault::TransposedB);
            }
            for f in faults {
                let out = simulated_kernel(seed, m, n, k, d, f);
                let c = check("C", m * n, |i| out[i], exp, tol);
                assert!(
                    !c.passed,
                    "{d} {m}x{n}x{k} with {f:?} passed: {}",
                    c.describe()
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn gemm_reference_matches_naive_matmul(m in 1usize..=40, n in 1usize..=40, k in 1usize..=40,
                                           d in prop::sample::select(Dtype::ALL.to_vec()), seed in any::<u64>()) {
        let e = &Gemm.reference(&mnk(m as u64, n as u64, k as u64), d, seed)[0];
        let rows = sample_rows(m, CHECK_ROWS, seed);
        prop_assert_eq!(e.indices.len(), rows.len() * n);
        let mut it = e.indices.iter().zip(&e.values);
        for &i in &rows {
            for j in 0..n {
                let (&idx, &v) = it.next().unwrap();
                prop_assert_eq!(idx, i * n + j);
                let want = naive(seed, m, n, k, d, i, j);
                prop_assert!((v - want).abs() <= 1e-12 * (1.0 + want.abs()), "C[{i}][{j}] = {v}, naive {want}");
            }
        }
        prop_assert!(e.values.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn spin_family() {
    let s = Shape::new([("us", 100)]);
    assert_eq!(
        (Spin.name(), Spin.dims(), Spin.dtypes(), Spin.backends()),
        ("spin", &["us"][..], &[Dtype::Fp32][..], &["cuda"][..])
    );
    assert!(Spin.inputs(&s, Dtype::Fp32).is_empty());
    let outs = Spin.outputs(&s, Dtype::Fp32);
    assert_eq!(
        (outs.len(), outs[0].name, outs[0].len, outs[0].init),
        (1, "done", 1, Init::Output)
    );
    assert_eq!(Spin.flops(&s), 0.0);
    assert_eq!(Spin.bytes(&s, Dtype::Fp32), 4.0);
    let exp = Spin.reference(&s, Dtype::Fp32, 123);
    assert_eq!(
        exp,
        vec![Expected {
            output: 0,
            indices: vec![0],
            values: vec![1.0],
            slack: Vec::new(),
        }]
    );
    let tol = Spin.tolerance(&s, Dtype::Fp32);
    assert_eq!(
        tol,
        Tolerance {
            rel_l2: 0.0,
            atol: 0.0,
            rtol: 0.0
        }
    );
    assert!(check("done", 1, |_| 1.0, &exp[0], tol).passed);
    assert!(!check("done", 1, |_| 0.0, &exp[0], tol).passed);
    assert!(!check("done", 1, |_| 1.0 + 1e-7, &exp[0], tol).passed);
    assert!(
        !check("done", 1, |_| f64::NAN, &exp[0], tol).passed,
        "never written: still poisoned"
    );
    assert!(Spin.validate(&Shape::new([("us", 10_000_000)])).is_ok());
    assert_eq!(
        Spin.validate(&Shape::new([("us", 10_000_001)]))
            .unwrap_err(),
        "us=10000001: a calibration spin longer than 10 s is a mistake"
    );
}
