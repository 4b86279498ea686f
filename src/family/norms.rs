//! Memory-bound families: row-wise normalisations, softmax, cross-entropy, MSE and
//! elementwise activations. Every tensor is row-major `m × n` (rows `m`, columns `n`);
//! inputs are in the case dtype (bf16, fp16, fp32) and kernels accumulate in fp32.
//!
//! | family | inputs (tensor id order) | outputs | bytes counted |
//! | --- | --- | --- | --- |
//! | `rmsnorm` (m, n, w) | x, w | y = x·rstd·w | read x + write y + read w |
//! | `rmsnorm_bwd` (m, n, w) | x, w, dy | dx, dw | read x, dy + write dx + read w + write dw |
//! | `fused_add_rmsnorm` (m, n, w) | x, residual, w | x ← rmsnorm(residual ← x + residual)·w, in place | 4 tensor passes (read x, residual; write both) + read w |
//! | `layernorm` (m, n, w) | x, w, b | y | read x + write y + read w, b |
//! | `softmax` (m, n) | x | y | read x + write y |
//! | `softmax_bwd` (m, n) | y, dy | dx = y·(dy − Σ y·dy) | read y, dy + write dx |
//! | `cross_entropy` (m, n) | logits, targets (i32) | loss (fp32, per row), lse (fp32) | read logits + targets + write loss, lse |
//! | `cross_entropy_bwd` (m, n) | logits, targets (i32), dloss (fp32, per row) | dlogits | read logits + targets + dloss + write dlogits |
//! | `mse` (m, n) | a, b | loss = mean((a − b)²), one fp32 | read a, b + write 4 bytes |
//! | `gelu` (m, n) | x | y = x·Φ(x) (erf form) | read x + write y |
//! | `gelu_tanh` (m, n) | x | y = 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))) | read x + write y |
//! | `silu` (m, n) | x | y = x·sigmoid(x) | read x + write y |
//!
//! `w` is the width in bits of the norm weights (and LayerNorm bias, and `rmsnorm_bwd`'s dw):
//! `w32` = fp32 (quack), `w16` = the input dtype when that is 16-bit (vLLM, PyTorch), bf16
//! next to fp32 inputs. (Dimensions are at least 1, so this is a width, not a 0/1 flag.)
//! The GELU forms are two families, `gelu` (erf) and `gelu_tanh`. eps = 1e-6 ([`EPS`]).
//! Cross-entropy targets are integers made on the host: uniform in `[0, n)`, about one row in
//! 16 set to `ignore_index` = −100 ([`IGNORE_INDEX`]), and the last row always ignored when
//! `m > 1`, so every check sees an ignored row. Its backward takes the per-row gradient
//! `dloss` (reduction 'none'; the mean reduction is `dloss = 1/count`) and recomputes the
//! row statistics from the logits (which it reads anyway) instead of taking the saved lse.
//! `softmax`, `cross_entropy` and `cross_entropy_bwd` take two optional dimensions, `lead` and
//! `pad`: the first `lead` and the last `pad` columns of every row of their logits are −inf
//! (vocabulary padding, masked logits; [`ColMask`]), at least one column stays finite, and
//! cross-entropy targets fall in the finite columns. A case without them is unchanged (same
//! name, same inputs).
//! `fused_add_rmsnorm` follows vLLM: the residual is stored in the input dtype and the
//! statistics use the stored value. It runs in place, so timed repeats keep adding into the
//! residual (its values grow; the checked run is the first one).
//!
//! References are float64 over a deterministic sample of whole rows ([`CHECK_ROWS`], first and
//! last always); elementwise families check [`CHECK_ELEMENTS`] sampled elements. `mse` and
//! `rmsnorm_bwd`'s dw reduce over all rows, so their reference reads every element (on all
//! cores) and their shapes are limited to [`FULL_REFERENCE_LIMIT`] elements.

use super::norms_ref as r;
use super::{Family, Init, TensorSpec};
use crate::case::{Dtype, Shape};
use crate::inputs::{self, ColMask, Uniform};
use crate::verify::{self, sample_rows, Expected, Tolerance};

pub use r::{EPS, IGNORE_INDEX};

/// Rows checked against the reference (whole rows).
pub const CHECK_ROWS: usize = 16;
/// Elements checked for the elementwise families.
pub const CHECK_ELEMENTS: usize = 4096;
/// Most elements (m·n) for the families whose reference reads every element.
pub const FULL_REFERENCE_LIMIT: u64 = 1 << 30;

/// Which operation a [`RowFamily`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// RMSNorm forward.
    RmsNorm,
    /// RMSNorm backward (dx and dw).
    RmsNormBwd,
    /// Residual add + RMSNorm, in place.
    FusedAddRmsNorm,
    /// LayerNorm forward with weight and bias.
    LayerNorm,
    /// Softmax forward over rows.
    Softmax,
    /// Softmax backward.
    SoftmaxBwd,
    /// Cross-entropy forward: loss per row and logsumexp.
    CrossEntropy,
    /// Cross-entropy backward: dlogits.
    CrossEntropyBwd,
    /// Mean squared error loss.
    Mse,
    /// GELU, erf form.
    Gelu,
    /// GELU, tanh form.
    GeluTanh,
    /// SiLU.
    Silu,
}

/// One memory-bound family.
pub struct RowFamily(pub Kind);

/// `rmsnorm`.
pub static RMSNORM: RowFamily = RowFamily(Kind::RmsNorm);
/// `rmsnorm_bwd`.
pub static RMSNORM_BWD: RowFamily = RowFamily(Kind::RmsNormBwd);
/// `fused_add_rmsnorm`.
pub static FUSED_ADD_RMSNORM: RowFamily = RowFamily(Kind::FusedAddRmsNorm);
/// `layernorm`.
pub static LAYERNORM: RowFamily = RowFamily(Kind::LayerNorm);
/// `softmax`.
pub static SOFTMAX: RowFamily = RowFamily(Kind::Softmax);
/// `softmax_bwd`.
pub static SOFTMAX_BWD: RowFamily = RowFamily(Kind::SoftmaxBwd);
/// `cross_entropy`.
pub static CROSS_ENTROPY: RowFamily = RowFamily(Kind::CrossEntropy);
/// `cross_entropy_bwd`.
pub static CROSS_ENTROPY_BWD: RowFamily = RowFamily(Kind::CrossEntropyBwd);
/// `mse`.
pub static MSE: RowFamily = RowFamily(Kind::Mse);
/// `gelu`.
pub static GELU: RowFamily = RowFamily(Kind::Gelu);
/// `gelu_tanh`.
pub static GELU_TANH: RowFamily = RowFamily(Kind::GeluTanh);
/// `silu`.
pub static SILU: RowFamily = RowFamily(Kind::Silu);

/// Every family of this module.
pub fn families() -> [&'static RowFamily; 12] {
    [
        &RMSNORM,
        &RMSNORM_BWD,
        &FUSED_ADD_RMSNORM,
        &LAYERNORM,
        &SOFTMAX,
        &SOFTMAX_BWD,
        &CROSS_ENTROPY,
        &CROSS_ENTROPY_BWD,
        &MSE,
        &GELU,
        &GELU_TANH,
        &SILU,
    ]
}

const SYM: Uniform = Uniform::SYMMETRIC;
/// Norm weights: near 1, like trained ones.
const WEIGHT: Uniform = Uniform { lo: 0.5, hi: 1.5 };
/// Logits: wide enough that the max subtraction matters in low precision.
const LOGITS: Uniform = Uniform { lo: -4.0, hi: 4.0 };
/// Softmax-backward `y`: probability-like rows, uniform in `[0, 2/n)` so a row sums to about 1
/// as a softmax output does (a row of `[0, 1)` would sum to n/2, and a peer that rounds
/// `y·dy` to 16 bits before its row sum would be judged on an input no softmax produces).
/// fp16 keeps values at or above 2⁻⁹ (no subnormal inputs); its rows sum to more for n > 1024.
fn probs(n: usize, dtype: Dtype) -> Uniform {
    let hi = 2.0 / n.max(1) as f32;
    Uniform {
        lo: 0.0,
        hi: if dtype == Dtype::Fp16 {
            hi.max(1.0 / 512.0)
        } else {
            hi
        },
    }
}
/// Activation inputs: covers both tails of GELU and SiLU.
const ACT: Uniform = Uniform { lo: -3.0, hi: 3.0 };
/// Cross-entropy upstream gradient per row.
const DLOSS: Uniform = Uniform { lo: 0.5, hi: 1.5 };

/// The target of row `i` of a cross-entropy case (see the module doc).
pub fn target(seed: u64, m: usize, n: usize, i: usize) -> i32 {
    target_in(seed, m, 0..n, i)
}

/// The target of row `i` when only the columns `kept` are finite: uniform in `kept`, or
/// [`IGNORE_INDEX`] (the same rows as [`target`]). `target_in(.., 0..n, ..)` is [`target`].
pub fn target_in(seed: u64, m: usize, kept: std::ops::Range<usize>, i: usize) -> i32 {
    if (m > 1 && i == m - 1) || inputs::index_value(seed, 0x7a11_0001, i as u64, 16) == 0 {
        IGNORE_INDEX
    } else {
        let len = kept.len() as u64;
        (kept.start as u64 + inputs::index_value(seed, 0x7a11_0002, i as u64, len)) as i32
    }
}

/// The −inf columns of a case's logits: `Some` when it gives `lead` or `pad` above 0.
pub fn col_mask(s: &Shape) -> Option<ColMask> {
    let (lead, pad) = (
        s.try_get("lead").unwrap_or(0),
        s.try_get("pad").unwrap_or(0),
    );
    (lead > 0 || pad > 0).then(|| ColMask {
        row: s.us("n"),
        lead: lead as usize,
        pad: pad as usize,
    })
}

/// The finite columns of a case's logits (all `n` without a mask).
fn kept_cols(s: &Shape) -> std::ops::Range<usize> {
    col_mask(s).map_or(0..s.us("n"), |mk| mk.kept())
}

/// How a case's logits are made: uniform on `g`, masked where [`col_mask`] says.
fn logits_init(s: &Shape, g: Uniform) -> Init {
    col_mask(s).map_or(Init::Uniform(g), |mk| Init::Masked(g, mk))
}

/// The dtype of the norm weights of a case (`w32` = fp32; `w16` = the input dtype when it
/// is 16-bit, else bf16).
pub fn weight_dtype(s: &Shape, dtype: Dtype) -> Dtype {
    match (s.try_get("w"), dtype) {
        (Some(16), Dtype::Fp32) => Dtype::Bf16,
        (Some(16), d) => d,
        _ => Dtype::Fp32,
    }
}

fn spec(name: &'static str, dtype: Dtype, len: usize, init: Init) -> TensorSpec {
    TensorSpec {
        name,
        dtype,
        len,
        init,
    }
}

fn row(seed: u64, tensor: u32, i: usize, n: usize, g: Uniform, d: Dtype) -> Vec<f64> {
    (0..n)
        .map(|j| inputs::value(seed, tensor, (i * n + j) as u64, g, d))
        .collect()
}

/// Row `i` of a logits input, −inf where the case's mask says.
fn logits_row(s: &Shape, seed: u64, i: usize, g: Uniform, d: Dtype) -> Vec<f64> {
    let n = s.us("n");
    let mut v = row(seed, 0, i, n, g, d);
    if let Some(mk) = col_mask(s) {
        for (j, x) in v.iter_mut().enumerate() {
            if mk.masks_col(j) {
                *x = f64::NEG_INFINITY;
            }
        }
    }
    v
}

fn vector(seed: u64, tensor: u32, n: usize, g: Uniform, d: Dtype) -> Vec<f64> {
    row(seed, tensor, 0, n, g, d)
}

impl RowFamily {
    fn is_elementwise(&self) -> bool {
        matches!(self.0, Kind::Gelu | Kind::GeluTanh | Kind::Silu)
    }

    /// Checked rows: per-row (indices, values) for each output, for the sampled rows.
    fn rows_reference(
        &self,
        s: &Shape,
        seed: u64,
        outputs: usize,
        f: impl Fn(usize) -> Vec<Vec<f64>>,
    ) -> Vec<Expected> {
        self.rows_reference_slack(s, seed, outputs, |i| {
            f(i).into_iter().map(|v| (v, Vec::new())).collect()
        })
    }

    /// As [`Self::rows_reference`], where `f` also gives each value's rounding slack
    /// ([`Expected::slack`]; an empty vector for none).
    fn rows_reference_slack(
        &self,
        s: &Shape,
        seed: u64,
        outputs: usize,
        f: impl Fn(usize) -> Vec<(Vec<f64>, Vec<f64>)>,
    ) -> Vec<Expected> {
        let (m, n) = (s.us("m"), s.us("n"));
        let mut exp: Vec<Expected> = (0..outputs)
            .map(|o| Expected {
                output: o,
                indices: vec![],
                values: vec![],
                slack: Vec::new(),
            })
            .collect();
        for i in sample_rows(m, CHECK_ROWS, seed) {
            for (o, (vals, slack)) in f(i).into_iter().enumerate() {
                let per_row = vals.len();
                let base = if per_row == n { i * n } else { i };
                let e = &mut exp[o];
                e.indices.extend((0..per_row).map(|j| base + j));
                e.values.extend(vals);
                if slack.is_empty() {
                    e.slack.resize(e.indices.len(), 0.0);
                } else {
                    assert_eq!(slack.len(), per_row, "one slack per value");
                    e.slack.extend(slack);
                }
            }
        }
        // Outputs without any slack keep the empty form (every error counted whole).
        for e in &mut exp {
            if e.slack.iter().all(|v| *v == 0.0) {
                e.slack.clear();
            }
        }
        exp
    }
}

impl Family for RowFamily {
    fn name(&self) -> &'static str {
        match self.0 {
            Kind::RmsNorm => "rmsnorm",
            Kind::RmsNormBwd => "rmsnorm_bwd",
            Kind::FusedAddRmsNorm => "fused_add_rmsnorm",
            Kind::LayerNorm => "layernorm",
            Kind::Softmax => "softmax",
            Kind::SoftmaxBwd => "softmax_bwd",
            Kind::CrossEntropy => "cross_entropy",
            Kind::CrossEntropyBwd => "cross_entropy_bwd",
            Kind::Mse => "mse",
            Kind::Gelu => "gelu",
            Kind::GeluTanh => "gelu_tanh",
            Kind::Silu => "silu",
        }
    }
    fn about(&self) -> &'static str {
        match self.0 {
            Kind::RmsNorm => "RMSNorm forward over rows, eps 1e-6",
            Kind::RmsNormBwd => "RMSNorm backward: dx and dw (deterministic cross-row sum)",
            Kind::FusedAddRmsNorm => "residual += x; x = RMSNorm(residual)·w, in place (vLLM)",
            Kind::LayerNorm => "LayerNorm forward with weight and bias, eps 1e-6",
            Kind::Softmax => "softmax over rows",
            Kind::SoftmaxBwd => "softmax backward: dx = y·(dy − Σ y·dy)",
            Kind::CrossEntropy => {
                "cross-entropy forward: per-row loss and logsumexp, ignore_index −100"
            }
            Kind::CrossEntropyBwd => {
                "cross-entropy backward: dlogits for a per-row upstream gradient"
            }
            Kind::Mse => "mean squared error loss (one fp32 scalar)",
            Kind::Gelu => "GELU, erf form, elementwise",
            Kind::GeluTanh => "GELU, tanh approximation, elementwise",
            Kind::Silu => "SiLU x·sigmoid(x), elementwise",
        }
    }
    fn dims(&self) -> &'static [&'static str] {
        match self.0 {
            Kind::RmsNorm | Kind::RmsNormBwd | Kind::FusedAddRmsNorm | Kind::LayerNorm => {
                &["m", "n", "w"]
            }
            _ => &["m", "n"],
        }
    }
    fn optional_dims(&self) -> &'static [&'static str] {
        match self.0 {
            Kind::Softmax | Kind::CrossEntropy | Kind::CrossEntropyBwd => &["lead", "pad"],
            _ => &[],
        }
    }
    fn dtypes(&self) -> &'static [Dtype] {
        &[Dtype::Bf16, Dtype::Fp16, Dtype::Fp32]
    }
    fn backends(&self) -> &'static [&'static str] {
        &["cuda"]
    }
    fn validate(&self, s: &Shape) -> Result<(), String> {
        let (m, n) = (s.get("m"), s.get("n"));
        for (name, v) in [("m", m), ("n", n)] {
            if v > i32::MAX as u64 {
                return Err(format!(
                    "{name}={v} exceeds the 32-bit range of the kernels"
                ));
            }
        }
        if let Some(w) = s.try_get("w") {
            if w != 16 && w != 32 {
                return Err(format!("w={w}: the weight width is 16 or 32 bits"));
            }
        }
        let (lead, pad) = (s.try_get("lead"), s.try_get("pad"));
        if lead.is_some() || pad.is_some() {
            let (lead, pad) = (lead.unwrap_or(0), pad.unwrap_or(0));
            if lead.saturating_add(pad) >= n {
                return Err(format!(
                    "lead={lead} + pad={pad} masks every one of the n={n} columns; at least one \
                     must stay finite"
                ));
            }
        }
        if matches!(self.0, Kind::Mse | Kind::RmsNormBwd)
            && m.saturating_mul(n) > FULL_REFERENCE_LIMIT
        {
            return Err(format!(
                "m·n = {} exceeds {FULL_REFERENCE_LIMIT}: the reference of {} reads every element",
                m.saturating_mul(n),
                self.name()
            ));
        }
        Ok(())
    }
    fn inputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        let (m, n) = (s.us("m"), s.us("n"));
        let mn = m * n;
        let wd = weight_dtype(s, dtype);
        let u = Init::Uniform;
        match self.0 {
            Kind::RmsNorm => vec![spec("x", dtype, mn, u(SYM)), spec("w", wd, n, u(WEIGHT))],
            Kind::RmsNormBwd => vec![
                spec("x", dtype, mn, u(SYM)),
                spec("w", wd, n, u(WEIGHT)),
                spec("dy", dtype, mn, u(SYM)),
            ],
            Kind::FusedAddRmsNorm => vec![
                spec("x", dtype, mn, u(SYM)),
                spec("residual", dtype, mn, u(SYM)),
                spec("w", wd, n, u(WEIGHT)),
            ],
            Kind::LayerNorm => vec![
                spec("x", dtype, mn, u(SYM)),
                spec("w", wd, n, u(WEIGHT)),
                spec("b", wd, n, u(SYM)),
            ],
            Kind::Softmax => vec![spec("x", dtype, mn, logits_init(s, LOGITS))],
            Kind::SoftmaxBwd => vec![
                spec("y", dtype, mn, u(probs(n, dtype))),
                spec("dy", dtype, mn, u(SYM)),
            ],
            Kind::CrossEntropy => vec![
                spec("logits", dtype, mn, logits_init(s, LOGITS)),
                spec("targets", Dtype::Fp32, m, Init::HostI32),
            ],
            Kind::CrossEntropyBwd => vec![
                spec("logits", dtype, mn, logits_init(s, LOGITS)),
                spec("targets", Dtype::Fp32, m, Init::HostI32),
                spec("dloss", Dtype::Fp32, m, u(DLOSS)),
            ],
            Kind::Mse => vec![spec("a", dtype, mn, u(SYM)), spec("b", dtype, mn, u(SYM))],
            Kind::Gelu | Kind::GeluTanh | Kind::Silu => vec![spec("x", dtype, mn, u(ACT))],
        }
    }
    fn host_i32(&self, s: &Shape, seed: u64, tensor: usize) -> Vec<i32> {
        match (self.0, tensor) {
            (Kind::CrossEntropy | Kind::CrossEntropyBwd, 1) => {
                let (m, kept) = (s.us("m"), kept_cols(s));
                (0..m)
                    .map(|i| target_in(seed, m, kept.clone(), i))
                    .collect()
            }
            _ => Vec::new(),
        }
    }
    fn outputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        let (m, n) = (s.us("m"), s.us("n"));
        let mn = m * n;
        let o = Init::Output;
        match self.0 {
            Kind::RmsNorm
            | Kind::LayerNorm
            | Kind::Softmax
            | Kind::Gelu
            | Kind::GeluTanh
            | Kind::Silu => {
                vec![spec("y", dtype, mn, o)]
            }
            Kind::RmsNormBwd => vec![
                spec("dx", dtype, mn, o),
                spec("dw", weight_dtype(s, dtype), n, o),
            ],
            Kind::FusedAddRmsNorm => vec![
                spec("out", dtype, mn, Init::Alias(0)),
                spec("residual_out", dtype, mn, Init::Alias(1)),
            ],
            Kind::SoftmaxBwd => vec![spec("dx", dtype, mn, o)],
            Kind::CrossEntropy => vec![
                spec("loss", Dtype::Fp32, m, o),
                spec("lse", Dtype::Fp32, m, o),
            ],
            Kind::CrossEntropyBwd => vec![spec("dlogits", dtype, mn, o)],
            Kind::Mse => vec![spec("loss", Dtype::Fp32, 1, o)],
        }
    }
    /// Approximate arithmetic per element (exp, erf counted as one), for the record only:
    /// these families are judged in GB/s.
    fn flops(&self, s: &Shape) -> f64 {
        let mn = s.get("m") as f64 * s.get("n") as f64;
        let per = match self.0 {
            Kind::RmsNorm => 4.0,
            Kind::RmsNormBwd => 10.0,
            Kind::FusedAddRmsNorm => 5.0,
            Kind::LayerNorm => 7.0,
            Kind::Softmax => 5.0,
            Kind::SoftmaxBwd => 4.0,
            Kind::CrossEntropy => 4.0,
            Kind::CrossEntropyBwd => 6.0,
            Kind::Mse => 3.0,
            Kind::Gelu | Kind::GeluTanh => 8.0,
            Kind::Silu => 4.0,
        };
        per * mn
    }
    /// The bytes of the table in the module doc.
    fn bytes(&self, s: &Shape, dtype: Dtype) -> f64 {
        let (m, n) = (s.get("m") as f64, s.get("n") as f64);
        let t = dtype.size() as f64;
        let w = weight_dtype(s, dtype).size() as f64;
        let mn = m * n;
        match self.0 {
            Kind::RmsNorm => 2.0 * mn * t + n * w,
            Kind::RmsNormBwd => 3.0 * mn * t + 2.0 * n * w,
            Kind::FusedAddRmsNorm => 4.0 * mn * t + n * w,
            Kind::LayerNorm => 2.0 * mn * t + 2.0 * n * w,
            Kind::Softmax | Kind::Gelu | Kind::GeluTanh | Kind::Silu => 2.0 * mn * t,
            Kind::SoftmaxBwd => 3.0 * mn * t,
            Kind::CrossEntropy => mn * t + 4.0 * m + 8.0 * m,
            Kind::CrossEntropyBwd => 2.0 * mn * t + 8.0 * m,
            Kind::Mse => 2.0 * mn * t + 4.0,
        }
    }
    fn reference(&self, s: &Shape, dtype: Dtype, seed: u64) -> Vec<Expected> {
        let (m, n) = (s.us("m"), s.us("n"));
        let wd = weight_dtype(s, dtype);
        if self.is_elementwise() {
            let idx = sample_rows(m * n, CHECK_ELEMENTS, seed);
            let values = idx
                .iter()
                .map(|&i| {
                    let x = inputs::value(seed, 0, i as u64, ACT, dtype);
                    match self.0 {
                        Kind::Gelu => r::gelu_erf(x),
                        Kind::GeluTanh => r::gelu_tanh(x),
                        _ => r::silu(x),
                    }
                })
                .collect();
            return vec![Expected {
                output: 0,
                indices: idx,
                values,
                slack: Vec::new(),
            }];
        }
        match self.0 {
            Kind::RmsNorm => {
                let w = vector(seed, 1, n, WEIGHT, wd);
                self.rows_reference(s, seed, 1, |i| {
                    vec![r::rmsnorm(&row(seed, 0, i, n, SYM, dtype), &w, EPS)]
                })
            }
            Kind::FusedAddRmsNorm => {
                let w = vector(seed, 2, n, WEIGHT, wd);
                self.rows_reference(s, seed, 2, |i| {
                    let x = row(seed, 0, i, n, SYM, dtype);
                    let res = row(seed, 1, i, n, SYM, dtype);
                    // The sum is formed in fp32 and stored in the input dtype, as the kernel does.
                    let sum: Vec<f64> = x
                        .iter()
                        .zip(&res)
                        .map(|(a, b)| dtype.round(*a as f32 + *b as f32))
                        .collect();
                    vec![r::rmsnorm(&sum, &w, EPS), sum]
                })
            }
            Kind::LayerNorm => {
                let w = vector(seed, 1, n, WEIGHT, wd);
                let b = vector(seed, 2, n, SYM, wd);
                self.rows_reference(s, seed, 1, |i| {
                    vec![r::layernorm(&row(seed, 0, i, n, SYM, dtype), &w, &b, EPS)]
                })
            }
            Kind::Softmax => self.rows_reference(s, seed, 1, |i| {
                vec![r::softmax(&logits_row(s, seed, i, LOGITS, dtype))]
            }),
            Kind::SoftmaxBwd => self.rows_reference_slack(s, seed, 1, |i| {
                let y = row(seed, 0, i, n, probs(n, dtype), dtype);
                let dy = row(seed, 1, i, n, SYM, dtype);
                let slack = r::softmax_bwd_magnitude(&y, &dy)
                    .into_iter()
                    .map(verify::fp32_slack)
                    .collect();
                vec![(r::softmax_bwd(&y, &dy), slack)]
            }),
            Kind::CrossEntropy => self.rows_reference(s, seed, 2, |i| {
                let (loss, lse) = r::cross_entropy(
                    &logits_row(s, seed, i, LOGITS, dtype),
                    target_in(seed, m, kept_cols(s), i),
                );
                vec![vec![loss], vec![lse]]
            }),
            Kind::CrossEntropyBwd => self.rows_reference(s, seed, 1, |i| {
                let g = inputs::value(seed, 2, i as u64, DLOSS, Dtype::Fp32);
                vec![r::cross_entropy_bwd(
                    &logits_row(s, seed, i, LOGITS, dtype),
                    target_in(seed, m, kept_cols(s), i),
                    g,
                )]
            }),
            Kind::RmsNormBwd => {
                let w = vector(seed, 1, n, WEIGHT, wd);
                let mut exp = self.rows_reference_slack(s, seed, 1, |i| {
                    let x = row(seed, 0, i, n, SYM, dtype);
                    let dy = row(seed, 2, i, n, SYM, dtype);
                    let (dx, _) = r::rmsnorm_bwd(&x, &w, &dy, EPS);
                    let slack = r::rmsnorm_bwd_dx_magnitude(&x, &w, &dy, EPS)
                        .into_iter()
                        .map(verify::fp32_slack)
                        .collect();
                    vec![(dx, slack)]
                });
                // dw sums over every row: all rows, on all cores.
                let parts = r::par_chunks(m, |rows| {
                    let mut acc = vec![0.0; n];
                    for i in rows {
                        let x = row(seed, 0, i, n, SYM, dtype);
                        let dy = row(seed, 2, i, n, SYM, dtype);
                        let (_, dw) = r::rmsnorm_bwd(&x, &w, &dy, EPS);
                        for (a, v) in acc.iter_mut().zip(dw) {
                            *a += v;
                        }
                    }
                    acc
                });
                let mut dw = vec![0.0; n];
                for p in parts {
                    for (a, v) in dw.iter_mut().zip(p) {
                        *a += v;
                    }
                }
                exp.push(Expected {
                    output: 1,
                    indices: (0..n).collect(),
                    values: dw,
                    slack: Vec::new(),
                });
                exp
            }
            Kind::Mse => {
                let parts = r::par_chunks(m * n, |idx| {
                    idx.map(|i| {
                        let a = inputs::value(seed, 0, i as u64, SYM, dtype);
                        let b = inputs::value(seed, 1, i as u64, SYM, dtype);
                        (a - b) * (a - b)
                    })
                    .sum::<f64>()
                });
                vec![Expected {
                    output: 0,
                    indices: vec![0],
                    values: vec![parts.iter().sum::<f64>() / (m * n) as f64],
                    slack: Vec::new(),
                }]
            }
            Kind::Gelu | Kind::GeluTanh | Kind::Silu => unreachable!("handled above"),
        }
    }
    fn tolerance(&self, _s: &Shape, dtype: Dtype) -> Tolerance {
        match self.0 {
            // fp32 outputs from exact inputs: only fp32 arithmetic (exp2, log, row sums) errs.
            Kind::CrossEntropy => Tolerance {
                rel_l2: 3e-5,
                atol: 3e-5,
                rtol: 3e-5,
            },
            // One fp32 scalar summed over up to 2^30 terms in fp32 (per-thread runs, then trees).
            Kind::Mse => Tolerance {
                rel_l2: 1e-4,
                atol: 1e-4,
                rtol: 1e-4,
            },
            _ => Tolerance::for_dtype(dtype),
        }
    }
    fn memory_bound(&self) -> bool {
        true
    }
}
