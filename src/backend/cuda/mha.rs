//! `mha` on our kernel `kernels/mha.cu`: FlashAttention-2 style, mma.sync tensor cores,
//! 128 query rows per CTA of 8 warps, K/V tiles (128 keys for d = 128, 64 for d = 64)
//! double-buffered with cp.async (the design is at the head of the kernel file). One entry point per dtype × head dim × causal.

use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::mha::{default_scale, HEAD_DIMS};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable that forces the mha kernel: `mma` (kernels/mha.cu) or `wgmma`
/// (kernels/mha_wgmma.cu).
pub const KERNEL_ENV: &str = "KERNELGATE_MHA_KERNEL";

/// Which of our mha kernels runs a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `kernels/mha.cu`: mma.sync, any sm_80+ GPU.
    Mma,
    /// `kernels/mha_wgmma.cu`: TMA + wgmma, sm_90a only.
    Wgmma,
}

/// The values of `KERNELGATE_MHA_KERNEL`.
const CHOICES: [(&str, Kernel); 2] = [("mma", Kernel::Mma), ("wgmma", Kernel::Wgmma)];

/// Parses a `KERNELGATE_MHA_KERNEL` value (`None`: unset or empty, automatic choice).
pub fn parse_forced(value: Option<&str>) -> std::result::Result<Option<Kernel>, String> {
    super::parse_choice(KERNEL_ENV, value, &CHOICES)
}

/// The kernel for this case: the forced one (`KERNELGATE_MHA_KERNEL`; an unusable forced choice
/// is an error), else wgmma where it is usable, else mma.
fn choose(gpu: &Gpu, case: &Case) -> Result<Kernel> {
    let forced = super::from_env(case, KERNEL_ENV, parse_forced)?;
    let wgmma = super::mha_wgmma::usable(gpu, case);
    match forced {
        Some(Kernel::Wgmma) => wgmma.map(|_| Kernel::Wgmma).map_err(|why| Error::Case {
            case: case.name(),
            message: format!(
                "{KERNEL_ENV}=wgmma, but the wgmma mha kernel cannot run this case: {why}"
            ),
        }),
        Some(Kernel::Mma) => Ok(Kernel::Mma),
        None if wgmma.is_ok() => Ok(Kernel::Wgmma),
        None => Ok(Kernel::Mma),
    }
}

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
    if choose(gpu, case)? == Kernel::Wgmma {
        let (q, k, v) = (bind.inputs[0], bind.inputs[1], bind.inputs[2]);
        return super::mha_wgmma::prepare(gpu, case, q, k, v, bind.outputs[0]);
    }
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
        code_hash: String::new(),
        variant: format!(
            "{name} (mma.sync, BM={BLOCK_M}, BN={}, cp.async double buffer)",
            block_n(d as u32)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_kernel_parses() {
        assert_eq!(parse_forced(None), Ok(None));
        assert_eq!(parse_forced(Some("")), Ok(None));
        assert_eq!(parse_forced(Some("mma")), Ok(Some(Kernel::Mma)));
        assert_eq!(parse_forced(Some("wgmma")), Ok(Some(Kernel::Wgmma)));
        assert!(parse_forced(Some("fa3")).unwrap_err().contains("mma"));
    }
}
