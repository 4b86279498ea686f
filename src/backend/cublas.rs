//! `cublas`: the vendor GEMM through `cublasGemmEx` (fp32 compute; pure fp32 for fp32, no TF32).

use super::{Backend, Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::cublas::sys as cb;

/// cuBLAS.
pub struct Cublas;

fn cublas_err(context: &str, s: cb::cublasStatus_t) -> Error {
    Error::Cublas {
        context: context.to_string(),
        message: format!("{s:?}"),
    }
}

impl Backend for Cublas {
    fn name(&self) -> &'static str {
        "cublas"
    }
    fn prepare(
        &self,
        gpu: &mut Gpu,
        case: &Case,
        bind: &Bindings,
        _cfg: &Config,
    ) -> Result<Prepared> {
        if case.kernel != "gemm" {
            return Err(Error::Case {
                case: case.name(),
                message: "cublas implements only gemm".into(),
            });
        }
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cb::is_culib_present() } {
            return Err(Error::NoGpu(
                "cuBLAS (libcublas.so) is not installed".into(),
            ));
        }
        if gpu.cublas.is_none() {
            let h =
                cudarc::cublas::CudaBlas::new(gpu.stream.clone()).map_err(|e| Error::Cublas {
                    context: "creating handle".into(),
                    message: format!("{e:?}"),
                })?;
            gpu.cublas = Some(h);
        }
        let s = &case.shape;
        let (m, n, k) = (s.get("m") as i32, s.get("n") as i32, s.get("k") as i32);
        let (a, b, c) = (bind.inputs[0], bind.inputs[1], bind.outputs[0]);
        let ty = match case.dtype {
            Dtype::Bf16 => cb::cudaDataType::CUDA_R_16BF,
            Dtype::Fp16 => cb::cudaDataType::CUDA_R_16F,
            Dtype::Fp32 => cb::cudaDataType::CUDA_R_32F,
        };
        let launch = move |gpu: &Gpu| -> Result<()> {
            let h = *gpu
                .cublas
                .as_ref()
                .expect("handle created in prepare")
                .handle();
            // SAFETY: pointers are live device buffers of the sizes the gemm family declares.
            unsafe { gemm_row_major(h, ty, (m, n, k), (a, b, c)) }
        };
        Ok(Prepared {
            launch: Box::new(launch),
            compile_s: 0.0,
            source_hash: library_version()?,
            code_hash: String::new(),
            variant: "cublasGemmEx".into(),
        })
    }
}

/// The loaded cuBLAS library's version, `"cuBLAS 13.1.0"`: the backend's code identity (a
/// record's `source_hash`), so that the gate knows a run timed the library its baseline timed
/// ([`crate::gate::same_code`]). Called by `prepare` once it has found the library.
fn library_version() -> Result<String> {
    let get = |t: cb::libraryPropertyType, what: &str| -> Result<i32> {
        let mut v: std::ffi::c_int = 0;
        // SAFETY: cublasGetProperty writes one int through a valid pointer; `prepare` checked
        // is_culib_present before calling, so the library can be loaded.
        let st = unsafe { cb::cublasGetProperty(t, &mut v) };
        if st != cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(cublas_err(&format!("reading the library's {what}"), st));
        }
        Ok(v)
    };
    Ok(format!(
        "cuBLAS {}.{}.{}",
        get(cb::libraryPropertyType::MAJOR_VERSION, "major version")?,
        get(cb::libraryPropertyType::MINOR_VERSION, "minor version")?,
        get(cb::libraryPropertyType::PATCH_LEVEL, "patch level")?
    ))
}

/// Enqueues row-major `C[m×n] = A[m×k] · B[k×n]` (all of type `ty`, fp32 compute, no TF32)
/// on the handle's stream.
///
/// # Safety
/// `a`, `b`, `c` must be live device buffers of at least m·k, k·n and m·n elements of `ty` in
/// the handle's context.
pub unsafe fn gemm_row_major(
    h: cb::cublasHandle_t,
    ty: cb::cudaDataType,
    (m, n, k): (i32, i32, i32),
    (a, b, c): (u64, u64, u64),
) -> Result<()> {
    let alpha: f32 = 1.0;
    let beta: f32 = 0.0;
    // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, no transposes.
    // SAFETY: the caller guarantees the buffers; alpha/beta live on the stack for the
    // duration of the (enqueueing) call.
    let st = unsafe {
        cb::cublasGemmEx(
            h,
            cb::cublasOperation_t::CUBLAS_OP_N,
            cb::cublasOperation_t::CUBLAS_OP_N,
            n,
            m,
            k,
            &alpha as *const f32 as *const _,
            b as *const _,
            ty,
            n,
            a as *const _,
            ty,
            k,
            &beta as *const f32 as *const _,
            c as *mut _,
            ty,
            n,
            cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    };
    if st != cb::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Err(cublas_err("cublasGemmEx", st));
    }
    Ok(())
}
