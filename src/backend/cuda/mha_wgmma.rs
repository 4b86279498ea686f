//! Hopper fast path for `mha`: FlashAttention-3 style TMA + wgmma kernel (`kernels/mha_wgmma.cu`).
//!
//! The launch follows the recipe at the head of the kernel file: three 3-D tensor maps
//! (`{d, seq, batch·heads}`, 128-byte swizzle, boxes of 64 columns × 128 rows), a grid of
//! ceil(Sq/128) × H × B blocks of 384 threads (one producer and two consumer warpgroups) and the
//! dynamic shared memory of [`smem_bytes`].

use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::mha::default_scale;
use crate::gpu::{Dims, Gpu, KernelArg};
use cudarc::driver::sys;

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

/// A 3-D tensor map over a `[heads, seq, d]` tensor of 2-byte elements: dims `{d, seq, heads}`
/// innermost first, boxes `{64, box_rows, 1}`, 128-byte swizzle, zero fill out of bounds.
fn tensor_map(
    case: &Case,
    ptr: u64,
    d: u64,
    seq: u64,
    heads: u64,
    box_rows: u32,
) -> Result<sys::CUtensorMap> {
    let dt = match case.dtype {
        Dtype::Bf16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        _ => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    let dims: [u64; 3] = [d, seq, heads];
    let strides: [u64; 2] = [d * 2, seq * d * 2];
    let boxes: [u32; 3] = [64, box_rows, 1];
    let elem: [u32; 3] = [1, 1, 1];
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: all arrays have the lengths rank 3 requires; ptr is a live 256-byte-aligned
    // device allocation of d × seq × heads 2-byte elements.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            dt,
            3,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result().map_err(|e| {
        Error::driver(
            format!(
                "{}: encoding an mha TMA descriptor ({d}x{seq}x{heads}, box rows {box_rows})",
                case.name()
            ),
            e,
        )
    })?;
    // SAFETY: initialised by the successful call above.
    Ok(unsafe { map.assume_init() })
}

/// Prepares the wgmma kernel for O = softmax(Q·Kᵀ/sqrt(d) + mask)·V; q, k, v, o are device
/// pointers. The caller has checked [`usable`].
pub fn prepare(gpu: &mut Gpu, case: &Case, q: u64, k: u64, v: u64, o: u64) -> Result<Prepared> {
    let s = &case.shape;
    let (b, h, hkv) = (s.get("b"), s.get("h"), s.get("hkv"));
    let (sq, sk, d) = (s.get("sq"), s.get("sk"), s.get("d"));
    let causal = s.get("causal") == 1;
    let tm_q = tensor_map(case, q, d, sq, b * h, BLOCK_M as u32)?;
    let tm_k = tensor_map(case, k, d, sk, b * hkv, BLOCK_N as u32)?;
    let tm_v = tensor_map(case, v, d, sk, b * hkv, BLOCK_N as u32)?;
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
