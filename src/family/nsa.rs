//! `nsa`: DeepSeek Native Sparse Attention forward, selected-block branch plus the optional
//! sliding-window branch (the compressed branch is not part of this family).
//!
//! # Semantics
//!
//! They follow `naive_nsa` of fla-org/native-sparse-attention (commit bd67af5), in the
//! `[B, T, heads, dim]` layout (not head-first), without variable-length sequences:
//!
//! | tensor | shape | dtype |
//! | --- | --- | --- |
//! | `q` | `[B, T, HQ, D]` | case dtype |
//! | `k` | `[B, T, H, D]` | case dtype |
//! | `v` | `[B, T, H, Dv]` with **Dv = D** | case dtype |
//! | `g_slc`, `g_swa` | `[B, T, HQ]` | case dtype, uniform in (0, 1) |
//! | `block_indices` | `[B, T, H, S]` | int32 |
//! | `block_counts` | `[B, T, H]` | int32 (a tensor, not the integer form) |
//! | `o` (output) | `[B, T, HQ, Dv]` | case dtype |
//!
//! `G = HQ / H` query heads share one KV head: query head `hq` reads KV head `hq / G`, and
//! the G heads of a group share that KV head's `block_indices` and `block_counts`.
//! The scale is `1/sqrt(D)`.
//!
//! * **Selected branch.** Query `(b, t, hq)` attends the multiset of keys
//!   `j = idx·bs + r` (`r < bs`) over the slots `s < block_counts[b, t, h]` with
//!   `idx = block_indices[b, t, h, s]`, keeping only `0 ≤ j ≤ t` (causal; negative
//!   indices and blocks past `t` contribute nothing). A block listed twice counts twice
//!   (its keys appear twice in the softmax). The result is multiplied by `g_slc[b, t, hq]`.
//! * **Sliding-window branch** (`w > 0`; `w = 0` turns it off): keys `max(0, t−w+1) ..= t`,
//!   softmax over them, times `g_swa[b, t, hq]`.
//! * `o = g_slc·o_slc + g_swa·o_swa`. A branch with no attended key contributes 0 (the
//!   reference in fla would produce NaN there; valid inputs never have one: the query's own
//!   block is always selected).
//!
//! # Dimensions
//!
//! `b` batch, `t` sequence length, `hq` query heads, `h` KV heads, `d` head dim (64 or 128),
//! `s` selected blocks per query (slots of `block_indices`), `bs` block size (a multiple of
//! 32, the kernel's key chunk), `w` sliding window (0 = off). Example:
//! `nsa::cuda::b32_t1024_hq16_h1_d128_s16_bs32_w0_bf16`.
//!
//! The TileLang runner's seed fields map as `batch→b`, `heads→hq` (query heads),
//! `groups→hq/h` (so `h = heads/groups`), `seq_len→t`, `dim→d`, `block_size→bs`,
//! `selected_blocks→s`; `is_causal` is always true here (the selected branch is causal by
//! definition) and `scale` is always `1/sqrt(d)`.
//!
//! # Generated inputs
//!
//! `q`, `k`, `v` are uniform in [-1, 1), the gates uniform in [0, 1) (device-generated).
//! `block_indices` and `block_counts` are made on the host ([`selected_row`]): for token
//! `t` the causally visible blocks are `0 ..= t/bs`; `block_counts = min(s, t/bs + 1)`;
//! the slots hold the query's own block `t/bs` plus `count − 1` distinct earlier blocks
//! drawn with the counter hash (all visible blocks when there are at most `s`), sorted
//! ascending, and the slots past the count hold [`PAD`] (−1). Inputs that break these
//! rules (duplicates, unsorted, pads) are still computed by the semantics above.
//!
//! # FLOP counts
//!
//! [`Family::flops`] is the **nominal** TileLang count `B·T·HQ·4·D·(S·bs + w)` (for `w = 0`
//! exactly TileLang's `B·T·HQ·4·D·S·block_size`), as if every slot held a full block of
//! visible keys; TFLOP/s in the results use it, so they compare with the published numbers.
//! [`honest_flops`] counts the keys actually attended with the generated indices (causal
//! own block partly, fewer slots for early tokens, the window clipped at 0):
//! `Σ_{b,t,hq} 4·D·(keys_slc(t) + keys_swa(t))`; the generator makes it independent of
//! the seed, and a test checks it against the keys counted from the indices themselves.
//!
//! # Reference and tolerance
//!
//! Float64 over a deterministic sample of output rows `(b, t, hq)` (first and last always),
//! every element of those rows; every output element is still scanned for NaN/Inf.
//!
//! The kernel rounds the softmax weights P to the storage dtype before P·V (as every
//! flash-style kernel does), so an output row's error is about `u·rms(row)` with
//! `u ≈ 2^-9` (bf16) or `2^-12` (fp16) relative to *that row's* magnitude. Row magnitudes
//! differ widely: a row attending n keys has RMS ∝ `gate/√n` (n runs from 1 to s·bs + w).
//! The element bound of the check is relative to the RMS of the checked set, so the sampled
//! rows are checked in bands of similar magnitude: one [`Expected`] per band of
//! `⌊log2 n_eff⌋` ([`band`]; `n_eff` = attended keys, combined harmonically with the window's
//! keys when `w > 0`), and the element bound is widened to `atol` = 3.2e-2 (bf16) / 8e-3
//! (fp16) of the band's RMS, which covers the factor-√2 key spread and the gate spread
//! (≤ 1.73× the RMS) inside a band at ~8σ of the rounding noise. The relative-L2 bound
//! stays at 1e-2 for each band.

use super::{Family, Init, TensorSpec};
use crate::case::{Dtype, Shape};
use crate::inputs::{self, Uniform};
use crate::verify::{sample_rows, Expected, Tolerance};

/// The NSA family.
pub struct Nsa;

/// `nsa_irregular`: the NSA family on block indices that break the generator's rules
/// ([`irregular_row`]: slots out of order, a block listed twice, a pad or a block past the token
/// inside the count, counts of 0, −1 or above S), computed by the same semantics. Same shapes,
/// tensors, kernels and FLOP count as `nsa`; its own case names, so its baselines stay apart.
pub struct NsaIrregular;

/// A row generator: `block_indices[b, t, h, :]` (length `s`) and `block_counts[b, t, h]` for
/// (problem, seed, b, t, h).
pub type RowFn = fn(&Params, u64, usize, usize, usize) -> (Vec<i32>, i32);

/// [`selected_row`] as a [`RowFn`].
pub fn regular_row(p: &Params, seed: u64, b: usize, t: usize, h: usize) -> (Vec<i32>, i32) {
    let (row, count) = selected_row(p, seed, b, t, h);
    (row, count as i32)
}

/// A count generator: `block_counts[b, t, h]` alone, without building the row (the counts
/// tensor costs one call per row, not a row of slots).
pub type CountFn = fn(&Params, u64, usize, usize, usize) -> i32;

/// The generator's count, `min(s, t/bs + 1)`, as a [`CountFn`].
pub fn regular_count(p: &Params, _seed: u64, _b: usize, t: usize, _h: usize) -> i32 {
    p.count(t) as i32
}

/// The input id the irregular rows draw their choices with (apart from the indices' own).
const IRREGULAR_DRAWS: u32 = 100 + INDICES as u32;

/// Choice `k` of row (b, t, h) of the irregular rows: a hashed value below `n`.
fn irregular_draw(p: &Params, seed: u64, (b, t, h): (usize, usize, usize), k: u64, n: u64) -> u64 {
    let key = (((b * p.t + t) * p.h + h) as u64) << 8;
    inputs::index_value(seed, IRREGULAR_DRAWS, key | k, n)
}

/// The count of [`irregular_row`]: 0 or −1 (the row attends nothing: o = 0) or S + 2 (clamped
/// to S; the slots past the generated count are pads), each 1 in 16; else the generator's.
pub fn irregular_count(p: &Params, seed: u64, b: usize, t: usize, h: usize) -> i32 {
    match irregular_draw(p, seed, (b, t, h), 5, 16) {
        0 => 0,
        1 => -1,
        2 => p.s as i32 + 2,
        _ => regular_count(p, seed, b, t, h),
    }
}

/// [`selected_row`] made irregular by hashed choices per row (each independently):
/// - the valid slots reversed (1 in 2);
/// - the last valid slot repeating the first (count ≥ 2; 1 in 2): that block counts twice;
/// - the middle valid slot set to [`PAD`] (count ≥ 3; 1 in 3);
/// - slot 1 naming a block after the token's own, up to 3 past it, possibly past the sequence
///   (count ≥ 2; 1 in 3): it contributes nothing;
/// - the count from [`irregular_count`].
pub fn irregular_row(p: &Params, seed: u64, b: usize, t: usize, h: usize) -> (Vec<i32>, i32) {
    let (mut row, count) = selected_row(p, seed, b, t, h);
    let draw = |k: u64, n: u64| irregular_draw(p, seed, (b, t, h), k, n);
    if draw(0, 2) == 1 {
        row[..count].reverse();
    }
    if count >= 2 && draw(1, 2) == 1 {
        row[count - 1] = row[0];
    }
    if count >= 3 && draw(2, 3) == 0 {
        row[count / 2] = PAD;
    }
    if count >= 2 && draw(3, 3) == 0 {
        row[1] = (t / p.bs + 1 + draw(4, 3) as usize) as i32;
    }
    (row, irregular_count(p, seed, b, t, h))
}

/// The `block_indices` (from `row`) or `block_counts` (from `count`) of a problem, row by row.
fn host_rows(p: &Params, seed: u64, tensor: usize, row: RowFn, count: CountFn) -> Vec<i32> {
    let mut out = Vec::with_capacity(p.b * p.t * p.h * if tensor == INDICES { p.s } else { 1 });
    for b in 0..p.b {
        for t in 0..p.t {
            for h in 0..p.h {
                match tensor {
                    INDICES => out.extend(row(p, seed, b, t, h).0),
                    _ => out.push(count(p, seed, b, t, h)),
                }
            }
        }
    }
    out
}

/// The reference of a problem whose index rows come from `row`: sampled output rows in float64,
/// checked in bands of their attended keys (see the module notes).
fn reference_rows(s: &Shape, dtype: Dtype, seed: u64, row: RowFn) -> Vec<Expected> {
    let p = Params::of(s);
    let src = Generated { p, seed, dtype };
    let rows = sample_rows(p.b * p.t * p.hq, CHECK_ROWS, seed);
    let mut bands = std::collections::BTreeMap::<u32, Expected>::new();
    for r in rows {
        let (bt, hq) = (r / p.hq, r % p.hq);
        let (b, t) = (bt / p.t, bt % p.t);
        let (sel, count) = row(&p, seed, b, t, hq / p.g());
        let count = count.max(0) as usize;
        let n_slc = selected_keys(&p, t, &sel, count).len();
        let e = bands.entry(band(n_slc, p.keys_swa(t))).or_default();
        e.indices.extend(r * p.d..(r + 1) * p.d);
        e.values
            .extend(reference_row(&p, &src, b, t, hq, &sel, count));
    }
    bands.into_values().collect()
}

/// Output rows `(b, t, hq)` checked against the reference.
pub const CHECK_ROWS: usize = 48;
/// The kernel's key chunk: block sizes are multiples of it.
pub const CHUNK: u64 = 32;
/// Head dimensions the kernel supports.
pub const HEAD_DIMS: [u64; 2] = [64, 128];
/// The value of `block_indices` slots past `block_counts`.
pub const PAD: i32 = -1;
/// Input ids (positions in [`Family::inputs`]).
pub const Q: usize = 0;
/// Keys.
pub const K: usize = 1;
/// Values.
pub const V: usize = 2;
/// Selected-branch gate.
pub const G_SLC: usize = 3;
/// Window-branch gate.
pub const G_SWA: usize = 4;
/// Block indices.
pub const INDICES: usize = 5;
/// Block counts.
pub const COUNTS: usize = 6;
/// The gates' range.
pub const GATE: Uniform = Uniform { lo: 0.0, hi: 1.0 };

/// The dimensions of one NSA problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Batch.
    pub b: usize,
    /// Sequence length.
    pub t: usize,
    /// Query heads.
    pub hq: usize,
    /// KV heads.
    pub h: usize,
    /// Head dim (of q, k and v).
    pub d: usize,
    /// Selected-block slots per query.
    pub s: usize,
    /// Block size.
    pub bs: usize,
    /// Sliding window (0 = off).
    pub w: usize,
}

impl Params {
    /// The parameters of a (validated) shape.
    pub fn of(s: &Shape) -> Params {
        Params {
            b: s.us("b"),
            t: s.us("t"),
            hq: s.us("hq"),
            h: s.us("h"),
            d: s.us("d"),
            s: s.us("s"),
            bs: s.us("bs"),
            w: s.us("w"),
        }
    }
    /// Query heads per KV head.
    pub fn g(&self) -> usize {
        self.hq / self.h
    }
    /// Blocks in the sequence (the last may be partial).
    pub fn blocks(&self) -> usize {
        self.t.div_ceil(self.bs)
    }
    /// The scale of the scores, `1/sqrt(d)`.
    pub fn scale(&self) -> f64 {
        1.0 / (self.d as f64).sqrt()
    }
    /// The generator's `block_counts` for token `t`: `min(s, t/bs + 1)`.
    pub fn count(&self, t: usize) -> usize {
        self.s.min(t / self.bs + 1)
    }
    /// Keys the selected branch attends for token `t` with generated indices.
    pub fn keys_slc(&self, t: usize) -> usize {
        (self.count(t) - 1) * self.bs + t % self.bs + 1
    }
    /// Keys the window branch attends for token `t`.
    pub fn keys_swa(&self, t: usize) -> usize {
        self.w.min(t + 1)
    }
}

/// The element values a reference reads, by logical position.
pub trait Source {
    /// `q[b, t, hq, d]`.
    fn q(&self, b: usize, t: usize, hq: usize, d: usize) -> f64;
    /// `k[b, t, h, d]`.
    fn k(&self, b: usize, t: usize, h: usize, d: usize) -> f64;
    /// `v[b, t, h, d]`.
    fn v(&self, b: usize, t: usize, h: usize, d: usize) -> f64;
    /// `g_slc[b, t, hq]`.
    fn g_slc(&self, b: usize, t: usize, hq: usize) -> f64;
    /// `g_swa[b, t, hq]`.
    fn g_swa(&self, b: usize, t: usize, hq: usize) -> f64;
}

/// The device inputs of a case, evaluated with the counter hash.
pub struct Generated {
    /// Problem.
    pub p: Params,
    /// Case seed.
    pub seed: u64,
    /// Storage dtype (values are rounded to it).
    pub dtype: Dtype,
}

impl Generated {
    fn val(&self, tensor: usize, index: usize, u: Uniform) -> f64 {
        inputs::value(self.seed, tensor as u32, index as u64, u, self.dtype)
    }
}

impl Source for Generated {
    fn q(&self, b: usize, t: usize, hq: usize, d: usize) -> f64 {
        let p = &self.p;
        self.val(Q, ((b * p.t + t) * p.hq + hq) * p.d + d, Uniform::SYMMETRIC)
    }
    fn k(&self, b: usize, t: usize, h: usize, d: usize) -> f64 {
        let p = &self.p;
        self.val(K, ((b * p.t + t) * p.h + h) * p.d + d, Uniform::SYMMETRIC)
    }
    fn v(&self, b: usize, t: usize, h: usize, d: usize) -> f64 {
        let p = &self.p;
        self.val(V, ((b * p.t + t) * p.h + h) * p.d + d, Uniform::SYMMETRIC)
    }
    fn g_slc(&self, b: usize, t: usize, hq: usize) -> f64 {
        let p = &self.p;
        self.val(G_SLC, (b * p.t + t) * p.hq + hq, GATE)
    }
    fn g_swa(&self, b: usize, t: usize, hq: usize) -> f64 {
        let p = &self.p;
        self.val(G_SWA, (b * p.t + t) * p.hq + hq, GATE)
    }
}

/// Softmax attention of query `(b, t, hq)` over a multiset of key positions (a key listed
/// twice counts twice), in float64. No key: zeros.
pub fn attend(
    p: &Params,
    src: &dyn Source,
    b: usize,
    t: usize,
    hq: usize,
    keys: &[usize],
) -> Vec<f64> {
    let mut out = vec![0.0; p.d];
    if keys.is_empty() {
        return out;
    }
    let h = hq / p.g();
    let q: Vec<f64> = (0..p.d).map(|d| src.q(b, t, hq, d)).collect();
    let scores: Vec<f64> = keys
        .iter()
        .map(|&j| p.scale() * (0..p.d).map(|d| q[d] * src.k(b, j, h, d)).sum::<f64>())
        .collect();
    let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for (&j, &sc) in keys.iter().zip(&scores) {
        let e = (sc - m).exp();
        sum += e;
        for (d, o) in out.iter_mut().enumerate() {
            *o += e * src.v(b, j, h, d);
        }
    }
    for o in &mut out {
        *o /= sum;
    }
    out
}

/// The keys the selected branch of token `t` attends: slots `< count` of `indices`,
/// expanded to `idx·bs + r`, keeping `0 ≤ j ≤ t`; duplicates kept.
pub fn selected_keys(p: &Params, t: usize, indices: &[i32], count: usize) -> Vec<usize> {
    let mut keys = Vec::new();
    for &idx in indices.iter().take(count.min(indices.len())) {
        if idx < 0 {
            continue;
        }
        let start = idx as usize * p.bs;
        for j in start..start + p.bs {
            if j <= t {
                keys.push(j);
            }
        }
    }
    keys
}

/// The keys of the sliding window of token `t` (none when `w = 0`).
pub fn window_keys(p: &Params, t: usize) -> Vec<usize> {
    if p.w == 0 {
        return Vec::new();
    }
    ((t + 1).saturating_sub(p.w)..=t).collect()
}

/// One output row `o[b, t, hq, :]` in float64, given the selected row of its KV head.
#[allow(clippy::too_many_arguments)]
pub fn reference_row(
    p: &Params,
    src: &dyn Source,
    b: usize,
    t: usize,
    hq: usize,
    indices: &[i32],
    count: usize,
) -> Vec<f64> {
    let slc = attend(p, src, b, t, hq, &selected_keys(p, t, indices, count));
    let swa = attend(p, src, b, t, hq, &window_keys(p, t));
    let (gs, gw) = (src.g_slc(b, t, hq), src.g_swa(b, t, hq));
    slc.iter()
        .zip(&swa)
        .map(|(x, y)| gs * x + if p.w > 0 { gw * y } else { 0.0 })
        .collect()
}

/// The generated `block_indices[b, t, h, :]` (length `s`) and its `block_counts`:
/// the own block `t/bs` plus `count − 1` distinct earlier blocks (all visible blocks when at
/// most `s`), sorted, padded with [`PAD`].
pub fn selected_row(p: &Params, seed: u64, b: usize, t: usize, h: usize) -> (Vec<i32>, usize) {
    let own = t / p.bs;
    let count = p.count(t);
    let mut picked: Vec<i32> = Vec::with_capacity(p.s);
    if own < p.s {
        picked.extend((0..=own).map(|x| x as i32));
    } else {
        // count − 1 = s − 1 distinct blocks out of the `own` earlier ones (own ≥ s).
        let row = ((b * p.t + t) * p.h + h) as u64;
        let mut seen = std::collections::HashSet::with_capacity(p.s);
        let mut k = 0u64;
        while seen.len() < count - 1 {
            let x = if k < 1 << 16 {
                inputs::index_value(seed, INDICES as u32, (row << 16) | k, own as u64) as usize
            } else {
                // Unreachable in practice; keeps the loop finite: the smallest unpicked block.
                (0..own)
                    .find(|x| !seen.contains(x))
                    .expect("own ≥ s blocks")
            };
            k += 1;
            seen.insert(x);
        }
        picked.extend(seen.into_iter().map(|x| x as i32));
        picked.push(own as i32);
        picked.sort_unstable();
    }
    debug_assert_eq!(picked.len(), count);
    picked.resize(p.s, PAD);
    (picked, count)
}

/// The magnitude band of an output row that attends `n_slc` selected and `n_swa` window
/// keys: `⌊log2 n_eff⌋` with `n_eff = n_slc` without a window, else the harmonic
/// combination `n_slc·n_swa/(n_slc + n_swa)` (a row's RMS goes like `1/√n_eff`). A branch
/// with no key does not count; no key at all is band 0.
pub fn band(n_slc: usize, n_swa: usize) -> u32 {
    let n = match (n_slc, n_swa) {
        (0, 0) => 1.0,
        (a, 0) | (0, a) => a as f64,
        (a, b) => (a * b) as f64 / (a + b) as f64,
    };
    n.max(1.0).log2().floor() as u32
}

/// FLOPs of the keys actually attended with the generated indices:
/// `Σ_{b,t,hq} 4·D·(keys_slc(t) + keys_swa(t))` (QKᵀ and PV, 2 FLOPs per multiply-add).
pub fn honest_flops(s: &Shape) -> f64 {
    let p = Params::of(s);
    let keys: f64 = (0..p.t)
        .map(|t| (p.keys_slc(t) + p.keys_swa(t)) as f64)
        .sum();
    p.b as f64 * p.hq as f64 * 4.0 * p.d as f64 * keys
}

impl Family for Nsa {
    fn name(&self) -> &'static str {
        "nsa"
    }
    fn about(&self) -> &'static str {
        "Native Sparse Attention forward: selected blocks + sliding window, GQA"
    }
    fn dims(&self) -> &'static [&'static str] {
        &["b", "t", "hq", "h", "d", "s", "bs", "w"]
    }
    fn dtypes(&self) -> &'static [Dtype] {
        &[Dtype::Bf16, Dtype::Fp16]
    }
    fn backends(&self) -> &'static [&'static str] {
        &["cuda"]
    }
    fn zero_dims(&self) -> &'static [&'static str] {
        &["w"]
    }
    fn validate(&self, shape: &Shape) -> Result<(), String> {
        let p = Params::of(shape);
        if !p.hq.is_multiple_of(p.h) {
            return Err(format!(
                "hq={} query heads are not a multiple of h={} KV heads (G = hq/h must be whole)",
                p.hq, p.h
            ));
        }
        if !HEAD_DIMS.contains(&(p.d as u64)) {
            return Err(format!(
                "d={} is not a supported head dimension (supported: 64, 128)",
                p.d
            ));
        }
        if !(p.bs as u64).is_multiple_of(CHUNK) || p.bs > 1024 {
            return Err(format!(
                "bs={} is not a multiple of {CHUNK} up to 1024 (the kernel's key chunk)",
                p.bs
            ));
        }
        if p.s > p.blocks() {
            return Err(format!(
                "s={} selected blocks exceed the {} blocks of t={} at bs={}",
                p.s,
                p.blocks(),
                p.t,
                p.bs
            ));
        }
        if p.w > p.t {
            return Err(format!(
                "window w={} is longer than the sequence t={} (use w={} for a full causal window)",
                p.w, p.t, p.t
            ));
        }
        let big = [
            (
                "b·t·hq·d",
                p.b as u128 * p.t as u128 * p.hq as u128 * p.d as u128,
            ),
            (
                "b·t·h·s",
                p.b as u128 * p.t as u128 * p.h as u128 * p.s as u128,
            ),
        ];
        for (what, n) in big {
            if n > i32::MAX as u128 {
                return Err(format!("{what} = {n} exceeds 2^31 elements"));
            }
        }
        Ok(())
    }
    fn inputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        let p = Params::of(s);
        let sym = Init::Uniform(Uniform::SYMMETRIC);
        let bt = p.b * p.t;
        vec![
            TensorSpec {
                name: "q",
                dtype,
                len: bt * p.hq * p.d,
                init: sym,
            },
            TensorSpec {
                name: "k",
                dtype,
                len: bt * p.h * p.d,
                init: sym,
            },
            TensorSpec {
                name: "v",
                dtype,
                len: bt * p.h * p.d,
                init: sym,
            },
            TensorSpec {
                name: "g_slc",
                dtype,
                len: bt * p.hq,
                init: Init::Uniform(GATE),
            },
            TensorSpec {
                name: "g_swa",
                dtype,
                len: bt * p.hq,
                init: Init::Uniform(GATE),
            },
            TensorSpec {
                name: "block_indices",
                dtype,
                len: bt * p.h * p.s,
                init: Init::HostI32,
            },
            TensorSpec {
                name: "block_counts",
                dtype,
                len: bt * p.h,
                init: Init::HostI32,
            },
        ]
    }
    fn host_i32(&self, s: &Shape, seed: u64, tensor: usize) -> Vec<i32> {
        match tensor {
            INDICES | COUNTS => host_rows(&Params::of(s), seed, tensor, regular_row, regular_count),
            _ => Vec::new(),
        }
    }
    fn outputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        let p = Params::of(s);
        vec![TensorSpec {
            name: "o",
            dtype,
            len: p.b * p.t * p.hq * p.d,
            init: Init::Output,
        }]
    }
    fn flops(&self, s: &Shape) -> f64 {
        let p = Params::of(s);
        p.b as f64 * p.t as f64 * p.hq as f64 * 4.0 * p.d as f64 * (p.s * p.bs + p.w) as f64
    }
    fn bytes(&self, s: &Shape, dtype: Dtype) -> f64 {
        let p = Params::of(s);
        let bt = (p.b * p.t) as f64;
        let e = dtype.size() as f64;
        // q and o, k and v (random blocks touch nearly all of them), the gates, the indices.
        bt * (2.0 * p.hq as f64 * p.d as f64 * e
            + 2.0 * p.h as f64 * p.d as f64 * e
            + (1 + usize::from(p.w > 0)) as f64 * p.hq as f64 * e
            + 4.0 * p.h as f64 * (p.s + 1) as f64)
    }
    fn reference(&self, s: &Shape, dtype: Dtype, seed: u64) -> Vec<Expected> {
        reference_rows(s, dtype, seed, regular_row)
    }
    fn tolerance(&self, _: &Shape, dtype: Dtype) -> Tolerance {
        let base = Tolerance::for_dtype(dtype);
        match dtype {
            Dtype::Bf16 => Tolerance {
                atol: 3.2e-2,
                ..base
            },
            Dtype::Fp16 => Tolerance { atol: 8e-3, ..base },
            Dtype::Fp32 => base,
        }
    }
}

impl Family for NsaIrregular {
    fn name(&self) -> &'static str {
        "nsa_irregular"
    }
    fn about(&self) -> &'static str {
        "Native Sparse Attention forward on irregular block indices (unsorted, repeated, pads, past the token, odd counts)"
    }
    fn dims(&self) -> &'static [&'static str] {
        Nsa.dims()
    }
    fn dtypes(&self) -> &'static [Dtype] {
        Nsa.dtypes()
    }
    fn backends(&self) -> &'static [&'static str] {
        Nsa.backends()
    }
    fn zero_dims(&self) -> &'static [&'static str] {
        Nsa.zero_dims()
    }
    fn validate(&self, shape: &Shape) -> Result<(), String> {
        Nsa.validate(shape)
    }
    fn inputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        Nsa.inputs(s, dtype)
    }
    fn host_i32(&self, s: &Shape, seed: u64, tensor: usize) -> Vec<i32> {
        match tensor {
            INDICES | COUNTS => {
                host_rows(&Params::of(s), seed, tensor, irregular_row, irregular_count)
            }
            _ => Vec::new(),
        }
    }
    fn outputs(&self, s: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        Nsa.outputs(s, dtype)
    }
    fn flops(&self, s: &Shape) -> f64 {
        Nsa.flops(s)
    }
    fn bytes(&self, s: &Shape, dtype: Dtype) -> f64 {
        Nsa.bytes(s, dtype)
    }
    fn reference(&self, s: &Shape, dtype: Dtype, seed: u64) -> Vec<Expected> {
        reference_rows(s, dtype, seed, irregular_row)
    }
    fn tolerance(&self, s: &Shape, dtype: Dtype) -> Tolerance {
        Nsa.tolerance(s, dtype)
    }
}
