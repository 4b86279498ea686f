//! `gemm`: C = A·B, all row-major. A is M×K, B is K×N, C is M×N, stored in the case dtype
//! (bf16/fp16 with fp32 accumulation, or fp32 throughout).
//!
//! The reference is float64 over a deterministic sample of output rows (first and last
//! always) and, when N·K is large, a sample of columns (first and last always); every
//! element of C is still scanned for NaN/Inf, so unwritten elements fail.

use super::{Family, Init, TensorSpec};
use crate::case::{Dtype, Shape};
use crate::inputs::{self, Uniform};
use crate::verify::{sample_rows, Expected, Tolerance};

/// The GEMM family.
pub struct Gemm;

/// Rows of C checked against the reference.
pub const CHECK_ROWS: usize = 16;
/// Columns of C checked when N·K exceeds [`FULL_ROW_LIMIT`].
pub const CHECK_COLS: usize = 256;
/// Up to this N·K whole rows are checked.
pub const FULL_ROW_LIMIT: usize = 1 << 22;

impl Family for Gemm {
    fn name(&self) -> &'static str {
        "gemm"
    }
    fn about(&self) -> &'static str {
        "C = A·B, row-major, fp32 accumulate"
    }
    fn dims(&self) -> &'static [&'static str] {
        &["m", "n", "k"]
    }
    fn dtypes(&self) -> &'static [Dtype] {
        &[Dtype::Bf16, Dtype::Fp16, Dtype::Fp32]
    }
    fn backends(&self) -> &'static [&'static str] {
        &["cublas", "cuda"]
    }
    fn validate(&self, shape: &Shape) -> Result<(), String> {
        let (m, n, k) = (shape.get("m"), shape.get("n"), shape.get("k"));
        for (name, v) in [("m", m), ("n", n), ("k", k)] {
            if v > i32::MAX as u64 {
                return Err(format!(
                    "{name}={v} exceeds the 32-bit index range of the kernels"
                ));
            }
        }
        if m.saturating_mul(n) > i32::MAX as u64
            || m.saturating_mul(k) > i32::MAX as u64
            || k.saturating_mul(n) > i32::MAX as u64
        {
            return Err(format!(
                "m·n, m·k or k·n exceeds 2^31 elements (m={m}, n={n}, k={k})"
            ));
        }
        Ok(())
    }
    fn inputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        vec![
            TensorSpec {
                name: "A",
                dtype,
                len: s.us("m") * s.us("k"),
                init: Init::Uniform(Uniform::SYMMETRIC),
            },
            TensorSpec {
                name: "B",
                dtype,
                len: s.us("k") * s.us("n"),
                init: Init::Uniform(Uniform::SYMMETRIC),
            },
        ]
    }
    fn outputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        vec![TensorSpec {
            name: "C",
            dtype,
            len: s.us("m") * s.us("n"),
            init: Init::Output,
        }]
    }
    fn flops(&self, s: &Shape) -> f64 {
        2.0 * s.get("m") as f64 * s.get("n") as f64 * s.get("k") as f64
    }
    fn bytes(&self, s: &Shape, dtype: Dtype) -> f64 {
        let (m, n, k) = (s.get("m") as f64, s.get("n") as f64, s.get("k") as f64);
        (m * k + k * n + m * n) * dtype.size() as f64
    }
    fn reference(&self, s: &Shape, dtype: Dtype, seed: u64) -> Vec<Expected> {
        let (m, n, k) = (s.us("m"), s.us("n"), s.us("k"));
        let rows = sample_rows(m, CHECK_ROWS, seed);
        let cols = if n * k <= FULL_ROW_LIMIT {
            (0..n).collect()
        } else {
            sample_rows(n, CHECK_COLS, seed ^ 0x5bd1_e995)
        };
        let g = Uniform::SYMMETRIC;
        // B columns once, A rows once, then dot products in float64.
        let bcols: Vec<Vec<f64>> = cols
            .iter()
            .map(|&j| {
                (0..k)
                    .map(|kk| inputs::value(seed, 1, (kk * n + j) as u64, g, dtype))
                    .collect()
            })
            .collect();
        let mut indices = Vec::with_capacity(rows.len() * cols.len());
        let mut values = Vec::with_capacity(rows.len() * cols.len());
        for &i in &rows {
            let arow: Vec<f64> = (0..k)
                .map(|kk| inputs::value(seed, 0, (i * k + kk) as u64, g, dtype))
                .collect();
            for (c, &j) in cols.iter().enumerate() {
                let dot: f64 = arow.iter().zip(&bcols[c]).map(|(a, b)| a * b).sum();
                indices.push(i * n + j);
                values.push(dot);
            }
        }
        vec![Expected {
            output: 0,
            indices,
            values,
            slack: Vec::new(),
        }]
    }
    fn tolerance(&self, s: &Shape, dtype: Dtype) -> Tolerance {
        match dtype {
            // fp32 sums of K products: rounding grows like √K·2^-24 relative to the row's scale.
            Dtype::Fp32 => {
                let growth = (s.get("k") as f64 / 256.0).sqrt().max(1.0);
                Tolerance {
                    rel_l2: 1e-5 * growth,
                    atol: 2e-5 * growth,
                    rtol: 1e-5,
                }
            }
            _ => Tolerance::for_dtype(dtype),
        }
    }
}
