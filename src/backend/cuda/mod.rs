//! `cuda`: kernelgate's own kernels from `kernels/*.cu`, compiled by NVRTC for the device.

use super::{Backend, Bindings, Prepared};
use crate::case::Case;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

mod gemm;
mod gemm_skinny;
mod gemm_wgmma;
mod mha;
mod mha_wgmma;
mod norms;
mod nsa;
mod spin;

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
        // One module per family; a new family adds a module and an arm here.
        match case.kernel.as_str() {
            "gemm" => gemm::prepare(gpu, case, bind),
            "spin" => spin::prepare(gpu, case, bind, cfg),
            "mha" => mha::prepare(gpu, case, bind),
            "nsa" => nsa::prepare(gpu, case, bind),
            "rmsnorm" | "rmsnorm_bwd" | "fused_add_rmsnorm" | "layernorm" | "softmax"
            | "softmax_bwd" | "cross_entropy" | "cross_entropy_bwd" | "mse" | "gelu"
            | "gelu_tanh" | "silu" => norms::prepare(gpu, case, bind),
            other => Err(Error::Case {
                case: case.name(),
                message: format!("the cuda backend has no kernel for family {other}"),
            }),
        }
    }
}
