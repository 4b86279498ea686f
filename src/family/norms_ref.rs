//! Float64 reference math of the row-wise and elementwise families (`rmsnorm`, `layernorm`,
//! `softmax`, `cross_entropy`, `mse`, `gelu`, `silu` and their backward passes): plain
//! functions over one row, so they can be tested on their own (tests/norms_references.rs).

/// The epsilon of RMSNorm and LayerNorm (inside the square root), as in vLLM and quack.
pub const EPS: f64 = 1e-6;

/// Targets equal to this are ignored by cross-entropy (loss 0, gradient 0), as in PyTorch.
pub const IGNORE_INDEX: i32 = -100;

/// 1 / sqrt(mean(x²) + eps).
pub fn rms_rstd(x: &[f64], eps: f64) -> f64 {
    let ss: f64 = x.iter().map(|v| v * v).sum();
    1.0 / (ss / x.len() as f64 + eps).sqrt()
}

/// RMSNorm: y = x · rstd · w.
pub fn rmsnorm(x: &[f64], w: &[f64], eps: f64) -> Vec<f64> {
    let r = rms_rstd(x, eps);
    x.iter().zip(w).map(|(a, g)| a * r * g).collect()
}

/// RMSNorm backward of one row: (dx, this row's contribution to dw = dy · x · rstd).
///
/// With r = rstd and d = Σ w·dy·x: dx = r·w·dy − x·r³·d/n.
pub fn rmsnorm_bwd(x: &[f64], w: &[f64], dy: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>) {
    let n = x.len() as f64;
    let r = rms_rstd(x, eps);
    let d: f64 = x.iter().zip(w).zip(dy).map(|((a, g), e)| g * e * a).sum();
    let coef = r * r * r * d / n;
    let dx = x
        .iter()
        .zip(w)
        .zip(dy)
        .map(|((a, g), e)| r * g * e - coef * a)
        .collect();
    let dw = x.iter().zip(dy).map(|(a, e)| e * a * r).collect();
    (dx, dw)
}

/// Per element of [`rmsnorm_bwd`]'s dx, the absolute values of the terms it is formed from:
/// |r·w·dy| + |x|·r³·Σ|w·dy·x|/n. With one column the two terms cancel to r·w·dy·eps/(x² + eps),
/// a million times smaller than either, so fp32 arithmetic errs by a few 2^-24 of this sum.
pub fn rmsnorm_bwd_dx_magnitude(x: &[f64], w: &[f64], dy: &[f64], eps: f64) -> Vec<f64> {
    let n = x.len() as f64;
    let r = rms_rstd(x, eps);
    let d: f64 = x
        .iter()
        .zip(w)
        .zip(dy)
        .map(|((a, g), e)| (g * e * a).abs())
        .sum();
    let coef = r * r * r * d / n;
    x.iter()
        .zip(w)
        .zip(dy)
        .map(|((a, g), e)| (r * g * e).abs() + coef * a.abs())
        .collect()
}

/// LayerNorm before the affine map: (x − mean) / sqrt(var + eps), biased variance.
pub fn layernorm_normalize(x: &[f64], eps: f64) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let r = 1.0 / (var + eps).sqrt();
    x.iter().map(|v| (v - mean) * r).collect()
}

/// LayerNorm: normalize(x) · w + b.
pub fn layernorm(x: &[f64], w: &[f64], b: &[f64], eps: f64) -> Vec<f64> {
    layernorm_normalize(x, eps)
        .iter()
        .zip(w.iter().zip(b))
        .map(|(h, (g, c))| h * g + c)
        .collect()
}

/// log Σ exp(x), stable.
pub fn logsumexp(x: &[f64]) -> f64 {
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}

/// softmax(x) = exp(x − logsumexp(x)).
pub fn softmax(x: &[f64]) -> Vec<f64> {
    let l = logsumexp(x);
    x.iter().map(|v| (v - l).exp()).collect()
}

/// Softmax backward: dx = y · (dy − Σ y·dy), for any y (rows need not sum to 1).
pub fn softmax_bwd(y: &[f64], dy: &[f64]) -> Vec<f64> {
    let d: f64 = y.iter().zip(dy).map(|(a, b)| a * b).sum();
    y.iter().zip(dy).map(|(a, b)| a * (b - d)).collect()
}

/// Per element of [`softmax_bwd`]'s dx, the absolute values of the terms it is formed from:
/// |y|·(|dy| + Σ|y·dy|) (dy and the row's dot product cancel where they are close).
pub fn softmax_bwd_magnitude(y: &[f64], dy: &[f64]) -> Vec<f64> {
    let d: f64 = y.iter().zip(dy).map(|(a, b)| (a * b).abs()).sum();
    y.iter()
        .zip(dy)
        .map(|(a, b)| a.abs() * (b.abs() + d))
        .collect()
}

/// Cross-entropy of one row: (loss, logsumexp). loss = logsumexp(x) − x\[t\], or 0 when
/// `t == IGNORE_INDEX`. A target out of range gives NaN (the kernels do the same).
pub fn cross_entropy(x: &[f64], t: i32) -> (f64, f64) {
    let l = logsumexp(x);
    let loss = if t == IGNORE_INDEX {
        0.0
    } else if t < 0 || t as usize >= x.len() {
        f64::NAN
    } else {
        l - x[t as usize]
    };
    (loss, l)
}

/// Cross-entropy backward of one row with upstream gradient `dloss` (reduction 'none'):
/// dx = dloss · (softmax(x) − onehot(t)); all zeros when `t == IGNORE_INDEX`.
pub fn cross_entropy_bwd(x: &[f64], t: i32, dloss: f64) -> Vec<f64> {
    if t == IGNORE_INDEX {
        return vec![0.0; x.len()];
    }
    let mut p = softmax(x);
    for (j, v) in p.iter_mut().enumerate() {
        let hot = if j as i64 == t as i64 { 1.0 } else { 0.0 };
        *v = dloss * (*v - hot);
    }
    p
}

/// Mean squared error: mean((a − b)²).
pub fn mse(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / a.len() as f64
}

/// The error function, to about 1e-15: Taylor series for |x| ≤ 3, a continued fraction
/// for erfc beyond.
pub fn erf(x: f64) -> f64 {
    let a = x.abs();
    let v = if a <= 3.0 {
        // 2/√π Σ (−1)^k x^(2k+1) / (k! (2k+1))
        let x2 = a * a;
        let mut term = a;
        let mut sum = a;
        let mut k = 0.0;
        loop {
            k += 1.0;
            term *= -x2 / k;
            let add = term / (2.0 * k + 1.0);
            sum += add;
            if add.abs() <= 1e-17 * sum.abs() || k > 200.0 {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else {
        // erfc(a) = exp(−a²)/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + …))))
        let mut k = a;
        for i in (1..=60).rev() {
            k = a + (i as f64 / 2.0) / k;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / k
    };
    v.copysign(x)
}

/// GELU, erf form: x · Φ(x) = 0.5 · x · (1 + erf(x/√2)).
pub fn gelu_erf(x: f64) -> f64 {
    0.5 * x * (1.0 + erf(x * std::f64::consts::FRAC_1_SQRT_2))
}

/// GELU, tanh form: 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 x³))).
pub fn gelu_tanh(x: f64) -> f64 {
    let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
    0.5 * x * (1.0 + u.tanh())
}

/// SiLU: x · sigmoid(x).
pub fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// Runs `f` over contiguous chunks of `0..len` on all cores; results in chunk order.
pub fn par_chunks<R: Send>(len: usize, f: impl Fn(std::ops::Range<usize>) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .min(len.max(1));
    let chunk = len.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                let r = (t * chunk).min(len)..((t + 1) * chunk).min(len);
                s.spawn(move || f(r))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("reference worker panicked"))
            .collect()
    })
}
