//! Backends: who computes a case. Each turns a case plus bound device buffers into a
//! launcher that enqueues one run on the harness stream.

use crate::case::Case;
use crate::config::Config;
use crate::error::Result;
use crate::gpu::Gpu;

pub mod cublas;
pub mod cuda;
pub mod worker;

/// Enqueues one run of a prepared case on `gpu.stream`.
pub type Launcher = Box<dyn FnMut(&Gpu) -> Result<()> + Send>;

/// A case made ready to run on one device.
pub struct Prepared {
    /// The launcher.
    pub launch: Launcher,
    /// Seconds spent compiling kernels for it (0 when cached or not compiled).
    pub compile_s: f64,
    /// Hash of the kernel source and options (empty for vendor libraries).
    pub source_hash: String,
    /// Hash of the machine code of the entry points the case runs ([`crate::gpu::Gpu::code_log_hash`]):
    /// backends leave it empty and the runner fills it from what `prepare` looked up (empty for
    /// vendor libraries and workers).
    pub code_hash: String,
    /// Which implementation variant runs (e.g. `wgmma`, `tc`, `cublasGemmEx`).
    pub variant: String,
}

/// Device pointers of a case's tensors, in the family's order.
#[derive(Debug, Clone)]
pub struct Bindings {
    /// Input tensors.
    pub inputs: Vec<u64>,
    /// Output tensors.
    pub outputs: Vec<u64>,
}

/// A backend.
pub trait Backend: Send + Sync {
    /// Name, the second part of every case name.
    fn name(&self) -> &'static str;
    /// Prepares `case` over `bind` on `gpu`.
    fn prepare(
        &self,
        gpu: &mut Gpu,
        case: &Case,
        bind: &Bindings,
        cfg: &Config,
    ) -> Result<Prepared>;
}

/// The backend called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Backend> {
    match name {
        "cuda" => Some(&cuda::Cuda),
        "cublas" => Some(&cublas::Cublas),
        _ => None,
    }
}
