//! Counter-based input generation: every input element is a pure function of
//! (seed, tensor id, element index).
//!
//! The device fills tensors with the same function (`kernels/kg_common.cuh`,
//! `kg_input_value`), so the CPU reference can evaluate any element it needs without
//! copying inputs back, and big shapes cost no host memory. The two implementations
//! agree bit for bit: the hash is integer arithmetic, the conversion to float is exact,
//! and the affine map uses explicitly rounded f32 operations on the device.

use crate::case::Dtype;

/// How an input tensor's values are drawn: uniformly in `[lo, hi)`, then rounded to the dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uniform {
    /// Lower bound (inclusive).
    pub lo: f32,
    /// Upper bound (exclusive before rounding).
    pub hi: f32,
}

impl Uniform {
    /// The symmetric range `[-1, 1)`.
    pub const SYMMETRIC: Uniform = Uniform { lo: -1.0, hi: 1.0 };
}

/// 64-bit finaliser of MurmurHash3 (a bijection with good avalanche).
#[inline]
pub fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

/// The raw 64-bit hash of (seed, tensor, index).
#[inline]
pub fn hash(seed: u64, tensor: u32, index: u64) -> u64 {
    let key = fmix64(seed ^ (u64::from(tensor).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
    fmix64(key ^ index.wrapping_mul(0xbf58_476d_1ce4_e5b9))
}

/// A uniform f32 in `[0, 1)` with 24 random bits (exactly representable).
#[inline]
pub fn unit(seed: u64, tensor: u32, index: u64) -> f32 {
    ((hash(seed, tensor, index) >> 40) as u32) as f32 * (1.0 / 16_777_216.0)
}

/// The f32 value of element `index` of input `tensor` before rounding to the dtype.
#[inline]
pub fn value_f32(seed: u64, tensor: u32, index: u64, gen: Uniform) -> f32 {
    // Mirrors the device: __fadd_rn(lo, __fmul_rn(hi - lo, u)); no fused multiply-add.
    // lo + span·u can round up to hi itself (e.g. [1, 2) at u = 1 − 2^-24): keep hi exclusive.
    let span = gen.hi - gen.lo;
    let v = gen.lo + span * unit(seed, tensor, index);
    if v >= gen.hi && gen.lo < gen.hi {
        gen.hi.next_down()
    } else {
        v
    }
}

/// The value of element `index` of input `tensor`, as stored in `dtype`.
#[inline]
pub fn value(seed: u64, tensor: u32, index: u64, gen: Uniform, dtype: Dtype) -> f64 {
    dtype.round(value_f32(seed, tensor, index, gen))
}

/// Columns of a row-major input that are set to −inf after the uniform fill: the first
/// `lead` and the last `pad` of each row of `row` elements (vocabulary padding, masked logits).
/// The device applies it with `kernels/mask.cu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColMask {
    /// Row length in elements.
    pub row: usize,
    /// Leading masked columns of each row.
    pub lead: usize,
    /// Trailing masked columns of each row.
    pub pad: usize,
}

impl ColMask {
    /// Whether column `col` (`0 ≤ col < row`) is masked.
    #[inline]
    pub fn masks_col(&self, col: usize) -> bool {
        col < self.lead || col + self.pad >= self.row
    }

    /// Whether flat element `index` is masked.
    #[inline]
    pub fn masks(&self, index: u64) -> bool {
        self.row > 0 && self.masks_col((index % self.row as u64) as usize)
    }

    /// The unmasked columns `[lead, row − pad)` (empty when the masks cover the row).
    pub fn kept(&self) -> std::ops::Range<usize> {
        let end = self.row.saturating_sub(self.pad);
        self.lead.min(end)..end
    }
}

/// [`value`], or −inf where `mask` covers element `index`.
#[inline]
pub fn masked_value(
    seed: u64,
    tensor: u32,
    index: u64,
    gen: Uniform,
    dtype: Dtype,
    mask: ColMask,
) -> f64 {
    if mask.masks(index) {
        f64::NEG_INFINITY
    } else {
        value(seed, tensor, index, gen, dtype)
    }
}

/// A uniform integer in `[0, n)` for index-like inputs (targets, block indices).
#[inline]
pub fn index_value(seed: u64, tensor: u32, index: u64, n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        hash(seed, tensor, index) % n
    }
}
