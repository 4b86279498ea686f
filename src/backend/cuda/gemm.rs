//! `gemm` on our kernels: streaming kernels where M or N is at most 16, TMA + wgmma on Hopper
//! where it applies, WMMA tensor cores elsewhere, SIMT for fp32.

use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::Result;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Prepares C = A·B.
pub fn prepare(gpu: &mut Gpu, case: &Case, bind: &Bindings) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m") as i32, s.get("n") as i32, s.get("k") as i32);
    let (a, b, c) = (bind.inputs[0], bind.inputs[1], bind.outputs[0]);
    if let Some(kind) = super::gemm_skinny::which(m as u64, n as u64, k as u64) {
        return super::gemm_skinny::prepare(gpu, case, kind, (a, b, c));
    }
    if super::gemm_wgmma::applies(gpu, case) {
        return super::gemm_wgmma::prepare(gpu, case, a, b, c);
    }
    let module = gpu.module("gemm.cu")?;
    let (name, tile) = match case.dtype {
        Dtype::Bf16 => ("gemm_tc_bf16", 128),
        Dtype::Fp16 => ("gemm_tc_fp16", 128),
        Dtype::Fp32 => ("gemm_simt_fp32", 64),
    };
    let f = module.function(name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    let dims = Dims {
        grid: ((n as u32).div_ceil(tile), (m as u32).div_ceil(tile), 1),
        block: (256, 1, 1),
        smem: 0,
    };
    let args = [
        KernelArg::Ptr(a),
        KernelArg::Ptr(b),
        KernelArg::Ptr(c),
        KernelArg::I32(m),
        KernelArg::I32(n),
        KernelArg::I32(k),
    ];
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s,
        source_hash: hash,
        variant: name.to_string(),
    })
}
