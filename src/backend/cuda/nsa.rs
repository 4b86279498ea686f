//! `nsa` on our kernel (`kernels/nsa.cu`): one warp per (token, KV head, 16 query heads),
//! mma.sync tensor cores, cp.async multi-stage K/V chunks, online softmax.

use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::nsa::{Params, CHUNK, COUNTS, G_SLC, G_SWA, INDICES, K, Q, V};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Warps per CTA and pipeline stages of the kernel for head dim `d` (as in `kernels/nsa.cu`,
/// which traps when the launch disagrees).
pub fn config(d: usize) -> Option<(u32, u32)> {
    match d {
        128 => Some((6, 2)),
        64 => Some((12, 2)),
        _ => None,
    }
}

/// Dynamic shared memory of one CTA: every warp owns `stages` K and V chunks.
pub fn smem_bytes(d: usize, warps: u32, stages: u32) -> u32 {
    warps * stages * 2 * CHUNK as u32 * d as u32 * 2
}

/// Prepares one NSA forward.
pub fn prepare(gpu: &mut Gpu, case: &Case, bind: &Bindings) -> Result<Prepared> {
    let p = Params::of(&case.shape);
    let unsupported = |m: String| Error::Case {
        case: case.name(),
        message: m,
    };
    let dt = match case.dtype {
        Dtype::Bf16 => "bf16",
        Dtype::Fp16 => "fp16",
        Dtype::Fp32 => return Err(unsupported("the nsa kernel has no fp32 variant".into())),
    };
    let (warps, stages) =
        config(p.d).ok_or_else(|| unsupported(format!("no nsa kernel for head dim {}", p.d)))?;
    let name = format!("nsa_fwd_{dt}_d{}", p.d);
    let module = gpu.module("nsa.cu")?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    let smem = smem_bytes(p.d, warps, stages);
    gpu.set_max_dynamic_smem(f, smem)?;
    let tasks = (p.b * p.h * p.g().div_ceil(16) * p.t) as u64;
    let grid = tasks.div_ceil(warps as u64);
    if grid > i32::MAX as u64 {
        return Err(unsupported(format!("{tasks} tasks exceed the grid limit")));
    }
    let dims = Dims {
        grid: (grid as u32, 1, 1),
        block: (warps * 32, 1, 1),
        smem,
    };
    let scale_log2 = (p.scale() * std::f64::consts::LOG2_E) as f32;
    let i = &bind.inputs;
    let args = [
        KernelArg::Ptr(i[Q]),
        KernelArg::Ptr(i[K]),
        KernelArg::Ptr(i[V]),
        KernelArg::Ptr(i[G_SLC]),
        KernelArg::Ptr(i[G_SWA]),
        KernelArg::Ptr(i[INDICES]),
        KernelArg::Ptr(i[COUNTS]),
        KernelArg::Ptr(bind.outputs[0]),
        KernelArg::I32(p.b as i32),
        KernelArg::I32(p.t as i32),
        KernelArg::I32(p.hq as i32),
        KernelArg::I32(p.h as i32),
        KernelArg::I32(p.s as i32),
        KernelArg::I32(p.bs as i32),
        KernelArg::I32(p.w as i32),
        KernelArg::F32(scale_log2),
    ];
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s,
        source_hash: hash,
        variant: format!("{name} (mma.sync m16n8k16, {warps} warps x {stages} cp.async stages)"),
    })
}
