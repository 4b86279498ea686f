//! The memory-bound families on our kernels (`kernels/norms.cu`, `softmax.cu`,
//! `elementwise.cu`).
//!
//! Row kernels run blocks of (threads per row) × (rows per block): 16-byte vectors when the
//! row length allows it (else scalar), about four vectors per thread held in registers, a
//! power of two ≤ 32 threads per row for short rows (sub-warp shuffles) or a multiple of 32
//! up to 512, and about 256 threads per block, so many rows are in flight on every SM.

use crate::backend::{Bindings, Prepared};
use crate::case::Case;
use crate::error::{Error, Result};
use crate::family::norms::{weight_dtype, EPS};
use crate::gpu::{Dims, Gpu, KernelArg};

/// The launch layout of a row kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLayout {
    /// Elements per vector (16 bytes' worth, or 1 when the row length is not a multiple).
    pub vec: usize,
    /// Threads per row (blockDim.x).
    pub tpr: u32,
    /// Rows per block (blockDim.y).
    pub rpb: u32,
}

/// Threads per row are at most this (the kernels' `__launch_bounds__`).
pub const MAX_TPR: usize = 512;

/// The layout for rows of `n` elements of `elem` bytes.
pub fn row_layout(n: usize, elem: usize) -> RowLayout {
    let full = 16 / elem;
    let vec = if n.is_multiple_of(full) { full } else { 1 };
    let nv = n / vec;
    let want = nv.div_ceil(4).max(1);
    let tpr = if want <= 32 {
        want.next_power_of_two()
    } else {
        (want.div_ceil(32) * 32).min(MAX_TPR)
    };
    let rpb = (256 / tpr).max(1);
    RowLayout {
        vec,
        tpr: tpr as u32,
        rpb: rpb as u32,
    }
}

fn suffix(l: &RowLayout) -> &'static str {
    if l.vec == 1 {
        "s"
    } else {
        "v"
    }
}

/// Prepares one case of a family of [`crate::family::norms`].
pub fn prepare(gpu: &mut Gpu, case: &Case, bind: &Bindings) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n) = (s.us("m"), s.us("n"));
    let dt = case.dtype;
    let tn = dt.name();
    let kind = case.kernel.as_str();
    let lay = row_layout(n, dt.size());
    let (mi, ni) = (m as i32, n as i32);
    let eps = KernelArg::F32(EPS as f32);
    let i = &bind.inputs;
    let o = &bind.outputs;
    let row_dims = Dims {
        grid: (m.div_ceil(lay.rpb as usize) as u32, 1, 1),
        block: (lay.tpr, lay.rpb, 1),
        smem: 0,
    };
    let sms = gpu.info.sm_count;
    // The weight dtype picks the weight/bias/dw element type of the norm kernels.
    let wn = weight_dtype(s, dt).name();
    let row = |name: &str| format!("kg_{name}_{tn}_{}", suffix(&lay));
    let norm = |name: &str| format!("kg_{name}_{tn}_w{wn}_{}", suffix(&lay));
    // Each arm picks the file and pushes its launches (function, dims, args) in order.
    let mut steps: Vec<(String, Dims, Vec<KernelArg>)> = Vec::new();
    let mut workspace = None;
    let file = match kind {
        "rmsnorm" => {
            steps.push((
                norm("rmsnorm"),
                row_dims,
                vec![
                    KernelArg::Ptr(i[0]),
                    KernelArg::Ptr(i[1]),
                    KernelArg::Ptr(o[0]),
                    KernelArg::I32(mi),
                    KernelArg::I32(ni),
                    eps,
                ],
            ));
            "norms.cu"
        }
        "fused_add_rmsnorm" => {
            steps.push((
                norm("fused_add_rmsnorm"),
                row_dims,
                vec![
                    KernelArg::Ptr(i[0]),
                    KernelArg::Ptr(i[1]),
                    KernelArg::Ptr(i[2]),
                    KernelArg::I32(mi),
                    KernelArg::I32(ni),
                    eps,
                ],
            ));
            "norms.cu"
        }
        "layernorm" => {
            steps.push((
                norm("layernorm"),
                row_dims,
                vec![
                    KernelArg::Ptr(i[0]),
                    KernelArg::Ptr(i[1]),
                    KernelArg::Ptr(i[2]),
                    KernelArg::Ptr(o[0]),
                    KernelArg::I32(mi),
                    KernelArg::I32(ni),
                    eps,
                ],
            ));
            "norms.cu"
        }
        "rmsnorm_bwd" => {
            // A persistent grid: as many blocks as fit at once (about 1024 threads per SM),
            // each slot (block, row of the block) keeping one fp32 row of dw partial sums.
            let groups = m.div_ceil(lay.rpb as usize);
            let per_sm = (1024 / (lay.tpr * lay.rpb) as usize).max(1);
            let blocks = groups.min(sms as usize * per_sm).max(1);
            let slots = blocks * lay.rpb as usize;
            let ws = gpu.alloc(slots * n * 4, &format!("{} dw partial sums", case.name()))?;
            let dims = Dims {
                grid: (blocks as u32, 1, 1),
                ..row_dims
            };
            steps.push((
                norm("rmsnorm_bwd"),
                dims,
                vec![
                    KernelArg::Ptr(i[0]),
                    KernelArg::Ptr(i[1]),
                    KernelArg::Ptr(i[2]),
                    KernelArg::Ptr(o[0]),
                    KernelArg::Ptr(ws.ptr()),
                    KernelArg::I32(mi),
                    KernelArg::I32(ni),
                    eps,
                ],
            ));
            steps.push((
                format!("kg_rmsnorm_dw_{}", weight_dtype(s, dt).name()),
                Dims {
                    grid: (n.div_ceil(32) as u32, 1, 1),
                    block: (32, 8, 1),
                    smem: 0,
                },
                vec![
                    KernelArg::Ptr(ws.ptr()),
                    KernelArg::Ptr(o[1]),
                    KernelArg::I32(slots as i32),
                    KernelArg::I32(ni),
                ],
            ));
            workspace = Some(ws);
            "norms.cu"
        }
        // The row kernels of softmax.cu take every input, then every output, then (m, n).
        "softmax" | "softmax_bwd" | "cross_entropy" | "cross_entropy_bwd" => {
            let mut args: Vec<KernelArg> = i
                .iter()
                .chain(o.iter())
                .map(|&p| KernelArg::Ptr(p))
                .collect();
            args.extend([KernelArg::I32(mi), KernelArg::I32(ni)]);
            steps.push((row(kind), row_dims, args));
            "softmax.cu"
        }
        "gelu" | "gelu_tanh" | "silu" | "mse" => {
            let total = m * n;
            let full = 16 / dt.size();
            let vec = if total.is_multiple_of(full) { full } else { 1 };
            let v = if vec == 1 { "s" } else { "v" };
            let nvec = (total / vec) as u64;
            let blocks = (nvec.div_ceil(256) as usize).clamp(1, sms as usize * 16);
            let flat = Dims {
                grid: (blocks as u32, 1, 1),
                block: (256, 1, 1),
                smem: 0,
            };
            let name = if kind == "gelu" { "gelu_erf" } else { kind };
            if kind == "mse" {
                let ws = gpu.alloc(blocks * 4, &format!("{} partial sums", case.name()))?;
                steps.push((
                    format!("kg_mse_partial_{tn}_{v}"),
                    flat,
                    vec![
                        KernelArg::Ptr(i[0]),
                        KernelArg::Ptr(i[1]),
                        KernelArg::Ptr(ws.ptr()),
                        KernelArg::U64(nvec),
                    ],
                ));
                steps.push((
                    "kg_mse_final".to_string(),
                    Dims {
                        grid: (1, 1, 1),
                        block: (1024, 1, 1),
                        smem: 0,
                    },
                    vec![
                        KernelArg::Ptr(ws.ptr()),
                        KernelArg::I32(blocks as i32),
                        KernelArg::Ptr(o[0]),
                        KernelArg::F32((1.0 / total as f64) as f32),
                    ],
                ));
                workspace = Some(ws);
            } else {
                steps.push((
                    format!("kg_{name}_{tn}_{v}"),
                    flat,
                    vec![
                        KernelArg::Ptr(i[0]),
                        KernelArg::Ptr(o[0]),
                        KernelArg::U64(nvec),
                    ],
                ));
            }
            "elementwise.cu"
        }
        other => {
            return Err(Error::Case {
                case: case.name(),
                message: format!("the cuda backend has no kernel for family {other}"),
            })
        }
    };
    let module = gpu.module(file)?;
    let mut launches = Vec::new();
    let mut names = Vec::new();
    for (name, dims, args) in steps {
        launches.push((module.function(&name)?, dims, args));
        names.push(name);
    }
    let variant = if file == "elementwise.cu" {
        names.join(" + ")
    } else {
        format!(
            "{} (vec {}, {}x{} threads)",
            names.join(" + "),
            lay.vec,
            lay.tpr,
            lay.rpb
        )
    };
    let (compile_s, source_hash) = (module.compile_s, module.source_hash.clone());
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| {
            // The workspace lives as long as the launcher.
            let _keep = &workspace;
            for (f, dims, args) in &launches {
                gpu.launch(*f, *dims, args)?;
            }
            Ok(())
        }),
        compile_s,
        source_hash,
        variant,
    })
}
