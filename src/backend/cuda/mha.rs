//! `mha` on our kernel `kernels/mha.cu`: FlashAttention-2 style, mma.sync tensor cores,
//! 128 query rows per CTA of 8 warps, K/V tiles (128 keys for d = 128, 64 for d = 64)
//! double-buffered with cp.async (the design is at the head of the kernel file). One entry point per dtype × head dim × causal.

use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::mha::{default_scale, HEAD_DIMS};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Query rows per CTA.
pub const BLOCK_M: u32 = 128;
/// Keys per K/V tile for head dimension `d` (`MHA_BN_D64` / `MHA_BN_D128` in the kernel).
pub fn block_n(d: u32) -> u32 {
    if d == 128 {
        128
    } else {
        64
    }
}
/// Threads per CTA (8 warps of 16 query rows).
pub const THREADS: u32 = 256;

/// Dynamic shared memory for head dimension `d`: the Q tile and two stages of K and V tiles.
pub fn smem_bytes(d: u32) -> u32 {
    (BLOCK_M + 4 * block_n(d)) * d * 2
}

/// The kernel entry point for a dtype, head dimension and mask.
pub fn entry(dtype: Dtype, d: u64, causal: bool) -> Option<String> {
    let ty = match dtype {
        Dtype::Bf16 => "bf16",
        Dtype::Fp16 => "fp16",
        Dtype::Fp32 => return None,
    };
    if !HEAD_DIMS.contains(&d) {
        return None;
    }
    Some(format!(
        "mha_fwd_{ty}_d{d}{}",
        if causal { "_causal" } else { "" }
    ))
}

/// Prepares O = softmax(Q·Kᵀ/sqrt(d) + mask)·V.
pub fn prepare(gpu: &mut Gpu, case: &Case, bind: &Bindings) -> Result<Prepared> {
    let s = &case.shape;
    let (b, h, hkv) = (s.get("b"), s.get("h"), s.get("hkv"));
    let (sq, sk, d) = (s.get("sq"), s.get("sk"), s.get("d"));
    let causal = s.get("causal") == 1;
    let name = entry(case.dtype, d, causal).ok_or_else(|| Error::Case {
        case: case.name(),
        message: format!(
            "the cuda mha kernel supports bf16/fp16 with d = 64 or 128, not {} with d = {d}",
            case.dtype.name()
        ),
    })?;
    let module = gpu.module("mha.cu")?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    let smem = smem_bytes(d as u32);
    gpu.set_max_dynamic_smem(f, smem)?;
    let dims = Dims {
        grid: ((sq as u32).div_ceil(BLOCK_M), h as u32, b as u32),
        block: (THREADS, 1, 1),
        smem,
    };
    let scale_log2 = (default_scale(d) * std::f64::consts::LOG2_E) as f32;
    let args = [
        KernelArg::Ptr(bind.inputs[0]),
        KernelArg::Ptr(bind.inputs[1]),
        KernelArg::Ptr(bind.inputs[2]),
        KernelArg::Ptr(bind.outputs[0]),
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
        variant: name,
    })
}
