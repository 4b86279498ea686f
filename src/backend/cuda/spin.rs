//! `spin` (calibration) on our kernel.

use crate::backend::{Bindings, Prepared};
use crate::case::Case;
use crate::config::Config;
use crate::error::Result;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Prepares a spin of `us` microseconds times `KERNELGATE_SPIN_SCALE`.
pub fn prepare(gpu: &mut Gpu, case: &Case, bind: &Bindings, cfg: &Config) -> Result<Prepared> {
    let module = gpu.module("spin.cu")?;
    let f = module.function("kg_spin")?;
    let ns = (case.shape.get("us") as f64 * 1000.0 * cfg.spin_scale).round() as u64;
    // KERNELGATE_SPIN_FAULT: an address no allocation has, so the kernel faults like a buggy one.
    let out = if cfg.spin_fault == Some(case.shape.get("us")) {
        0x10
    } else {
        bind.outputs[0]
    };
    let args = [KernelArg::Ptr(out), KernelArg::U64(ns)];
    let dims = Dims {
        grid: (1, 1, 1),
        block: (1, 1, 1),
        smem: 0,
    };
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s: module.compile_s,
        source_hash: module.source_hash.clone(),
        code_hash: String::new(),
        variant: if cfg.spin_scale == 1.0 {
            "kg_spin".into()
        } else {
            format!("kg_spin x{}", cfg.spin_scale)
        },
    })
}
