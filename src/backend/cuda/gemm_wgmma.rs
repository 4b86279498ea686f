//! Hopper fast path for bf16/fp16 GEMM: TMA + wgmma (`kernels/gemm_wgmma.cu`).
//!
//! The launch follows the recipe at the head of the kernel file: two 2-D tensor maps with
//! 128-byte swizzle (A boxes 64 K × 128 M, B boxes 64 N × 64 K), a persistent grid of
//! min(tiles, SMs) blocks of 384 threads, 197 760 bytes of dynamic shared memory.

use super::tma::tensor_map_16bit;
use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::Result;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Dynamic shared memory of the kernel (4 stages × 48 KiB + alignment slack + barriers).
pub const SMEM_BYTES: u32 = 197_760;
/// Output tile.
pub const TILE_M: u64 = 128;
/// Output tile.
pub const TILE_N: u64 = 256;

/// Whether the wgmma kernel handles this case on this device: compute capability 9.0,
/// 16-bit dtype, N and K multiples of 8 and at least 8 (TMA needs 16-byte row strides).
/// `KERNELGATE_NO_WGMMA=1` forces the portable kernel.
pub fn applies(gpu: &Gpu, case: &Case) -> bool {
    let (n, k) = (case.shape.get("n"), case.shape.get("k"));
    gpu.info.compute_capability == "9.0"
        && matches!(case.dtype, Dtype::Bf16 | Dtype::Fp16)
        && n % 8 == 0
        && k % 8 == 0
        && n >= 8
        && k >= 8
        && std::env::var("KERNELGATE_NO_WGMMA")
            .map(|v| v != "1")
            .unwrap_or(true)
}

/// Prepares the wgmma kernel for C = A·B.
pub fn prepare(gpu: &mut Gpu, case: &Case, a: u64, b: u64, c: u64) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m"), s.get("n"), s.get("k"));
    let tm_a = tensor_map_16bit(case, a, &[k, m], &[64, 128])?;
    let tm_b = tensor_map_16bit(case, b, &[n, k], &[64, 64])?;
    let sms = gpu.info.sm_count as u64;
    let module = gpu.module("gemm_wgmma.cu")?;
    let name = if case.dtype == Dtype::Bf16 {
        "gemm_wgmma_bf16"
    } else {
        "gemm_wgmma_f16"
    };
    let f = module.function(name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    gpu.set_max_dynamic_smem(f, SMEM_BYTES)?;
    let tiles = m.div_ceil(TILE_M) * n.div_ceil(TILE_N);
    let dims = Dims {
        grid: (tiles.min(sms) as u32, 1, 1),
        block: (384, 1, 1),
        smem: SMEM_BYTES,
    };
    let args = [
        KernelArg::TensorMap(tm_a),
        KernelArg::TensorMap(tm_b),
        KernelArg::Ptr(c),
        KernelArg::I32(m as i32),
        KernelArg::I32(n as i32),
        KernelArg::I32(k as i32),
    ];
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s,
        source_hash: hash,
        variant: format!("{name} (tma+wgmma 128x256x64, 4 stages)"),
    })
}
