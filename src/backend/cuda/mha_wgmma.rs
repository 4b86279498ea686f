//! Hopper fast path for `mha`: FlashAttention-3 style TMA + wgmma kernel (`kernels/mha_wgmma.cu`).
//!
//! The launch follows the recipe at the head of the kernel file: three 3-D tensor maps
//! (`{d, seq, batch·heads}`, 128-byte swizzle, boxes of 64 columns × 128 rows), a grid of
//! ceil(Sq/128) × H × B blocks of 384 threads (one producer and two consumer warpgroups) and the
//! dynamic shared memory of [`smem_bytes`].

use super::tma::tensor_map_16bit;
use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::Result;
use crate::family::mha::default_scale;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Query rows per CTA (two consumer warpgroups of 64 rows).
pub const BLOCK_M: u64 = 128;
/// Keys per K/V tile (`MHA_WG_BN` in the kernel).
pub const BLOCK_N: u64 = 128;
/// Threads per CTA: three warpgroups.
pub const THREADS: u32 = 384;

/// K/V pipeline stages for head dimension `d` (`MHA_WG_STAGES_D64` / `_D128` in the kernel).
pub fn stages(d: u64) -> u64 {
    if d == 128 {
        2
    } else {
        3
    }
}

/// Dynamic shared memory: 1 KiB alignment slack, the Q tile, `stages` K and V tiles, 256 bytes
/// of mbarriers (`Layout::SMEM` in the kernel).
pub fn smem_bytes(d: u64) -> u32 {
    (1024 + BLOCK_M * d * 2 + 2 * stages(d) * BLOCK_N * d * 2 + 256) as u32
}

/// Whether the wgmma kernel can run this case on this device: compute capability 9.0,
/// bf16/fp16, head dimension 64 or 128. `Err` carries the reason when it cannot.
pub fn usable(gpu: &Gpu, case: &Case) -> std::result::Result<(), String> {
    let d = case.shape.get("d");
    if gpu.info.compute_capability != "9.0" {
        return Err(format!(
            "it needs compute capability 9.0 (sm_90a), this device is {}",
            gpu.info.compute_capability
        ));
    }
    if !matches!(case.dtype, Dtype::Bf16 | Dtype::Fp16) {
        return Err(format!("it supports bf16/fp16, not {}", case.dtype.name()));
    }
    if d != 64 && d != 128 {
        return Err(format!("it supports d = 64 or 128, not {d}"));
    }
    Ok(())
}

/// The kernel entry point for a dtype, head dimension and mask.
pub fn entry(dtype: Dtype, d: u64, causal: bool) -> String {
    let ty = if dtype == Dtype::Bf16 { "bf16" } else { "fp16" };
    format!("mha_wgmma_{ty}_d{d}{}", if causal { "_causal" } else { "" })
}

/// Prepares the wgmma kernel for O = softmax(Q·Kᵀ/sqrt(d) + mask)·V; q, k, v, o are device
/// pointers. The caller has checked [`usable`].
pub fn prepare(gpu: &mut Gpu, case: &Case, q: u64, k: u64, v: u64, o: u64) -> Result<Prepared> {
    let s = &case.shape;
    let (b, h, hkv) = (s.get("b"), s.get("h"), s.get("hkv"));
    let (sq, sk, d) = (s.get("sq"), s.get("sk"), s.get("d"));
    let causal = s.get("causal") == 1;
    let tm_q = tensor_map_16bit(case, q, &[d, sq, b * h], &[64, BLOCK_M as u32, 1])?;
    let tm_k = tensor_map_16bit(case, k, &[d, sk, b * hkv], &[64, BLOCK_N as u32, 1])?;
    let tm_v = tensor_map_16bit(case, v, &[d, sk, b * hkv], &[64, BLOCK_N as u32, 1])?;
    let name = entry(case.dtype, d, causal);
    let module = gpu.module("mha_wgmma.cu")?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    let smem = smem_bytes(d);
    gpu.set_max_dynamic_smem(f, smem)?;
    let dims = Dims {
        grid: (sq.div_ceil(BLOCK_M) as u32, h as u32, b as u32),
        block: (THREADS, 1, 1),
        smem,
    };
    let scale_log2 = (default_scale(d) * std::f64::consts::LOG2_E) as f32;
    let args = [
        KernelArg::TensorMap(tm_q),
        KernelArg::TensorMap(tm_k),
        KernelArg::TensorMap(tm_v),
        KernelArg::Ptr(o),
        KernelArg::I32(h as i32),
        KernelArg::I32(hkv as i32),
        KernelArg::I32(sq as i32),
        KernelArg::I32(sk as i32),
        KernelArg::F32(scale_log2),
    ];
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s,
        source_hash: hash,
        variant: format!(
            "{name} (tma+wgmma, 2 consumer WGs ping-pong, BM={BLOCK_M}, BN={BLOCK_N}, {} stages, intra-WG overlap)",
            stages(d)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smem_matches_the_kernel_recipe() {
        // The numbers in the header of kernels/mha_wgmma.cu.
        assert_eq!(smem_bytes(64), 115_968);
        assert_eq!(smem_bytes(128), 165_120);
        assert!(smem_bytes(128) <= 232_448);
    }

    #[test]
    fn entry_names() {
        assert_eq!(entry(Dtype::Bf16, 128, true), "mha_wgmma_bf16_d128_causal");
        assert_eq!(entry(Dtype::Fp16, 64, false), "mha_wgmma_fp16_d64");
    }
}
