//! `cuda`: kernelgate's own kernels from `kernels/*.cu`, compiled by NVRTC for the device.

use super::{Backend, Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Our own kernels.
pub struct Cuda;

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn prepare(
        &self,
        gpu: &mut Gpu,
        case: &Case,
        bind: &Bindings,
        cfg: &Config,
    ) -> Result<Prepared> {
        match case.kernel.as_str() {
            "gemm" => gemm(gpu, case, bind),
            "spin" => spin(gpu, case, bind, cfg),
            other => Err(Error::Case {
                case: case.name(),
                message: format!("the cuda backend has no kernel for family {other}"),
            }),
        }
    }
}

fn gemm(gpu: &mut Gpu, case: &Case, bind: &Bindings) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m") as i32, s.get("n") as i32, s.get("k") as i32);
    let (a, b, c) = (bind.inputs[0], bind.inputs[1], bind.outputs[0]);
    if super::cuda_wgmma::applies(gpu, case) {
        return super::cuda_wgmma::prepare(gpu, case, a, b, c);
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

fn spin(gpu: &mut Gpu, case: &Case, bind: &Bindings, cfg: &Config) -> Result<Prepared> {
    let module = gpu.module("spin.cu")?;
    let f = module.function("kg_spin")?;
    let ns = (case.shape.get("us") as f64 * 1000.0 * cfg.spin_scale).round() as u64;
    let args = [KernelArg::Ptr(bind.outputs[0]), KernelArg::U64(ns)];
    let dims = Dims {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        smem: 0,
    };
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s: module.compile_s,
        source_hash: module.source_hash.clone(),
        variant: if cfg.spin_scale == 1.0 {
            "kg_spin".into()
        } else {
            format!("kg_spin x{}", cfg.spin_scale)
        },
    })
}
