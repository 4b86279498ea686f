//! `gemm` on our kernels: streaming kernels where M or N is at most 16, TMA + wgmma on Hopper
//! where it applies, WMMA tensor cores elsewhere; fp32 on the register-tiled SIMT kernel
//! (`gemm_sgemm_*`, plain FFMA, no TF32) with a tile chosen by shape, or the first simple one
//! under `KERNELGATE_GEMM_FP32=simple`.

use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable that picks the fp32 kernel: `simple` (`gemm_simt_fp32`, 64x64x16 tile,
/// 4x4 outputs per thread), `tiled` (the default: `gemm_sgemm_*` with the tile [`pick_tile`]
/// chooses), or a forced tile of it: `128x128`, `128x64`, `64x64`.
pub const FP32_KERNEL_ENV: &str = "KERNELGATE_GEMM_FP32";

/// A block tile of the register-tiled fp32 kernel (`gemm_sgemm_<bm>x<bn>_*` in `kernels/gemm.cu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// Rows of C per CTA.
    pub bm: u32,
    /// Columns of C per CTA.
    pub bn: u32,
}

impl Tile {
    /// Threads per CTA: one warp per 64 x 32 slab of the tile, each lane 8 x 8 outputs.
    pub fn threads(self) -> u32 {
        (self.bm / 64) * (self.bn / 32) * 32
    }
    /// CTAs of this tile over an `m x n` output.
    pub fn ctas(self, m: u64, n: u64) -> u64 {
        m.div_ceil(self.bm as u64) * n.div_ceil(self.bn as u64)
    }
}

/// The tiles the kernel file instantiates, largest first.
pub const TILES: [Tile; 3] = [
    Tile { bm: 128, bn: 128 },
    Tile { bm: 128, bn: 64 },
    Tile { bm: 64, bn: 64 },
];

/// Modelled issue efficiency of each of [`TILES`] relative to 128x128 (smaller tiles load more
/// bytes per FFMA). Assumed, not measured: `kernels/dev/run_sgemm_bench.sh` times every tile on
/// its shapes, to check the choice.
const TILE_EFFICIENCY: [f64; 3] = [1.0, 0.95, 0.88];

/// Which fp32 kernel runs a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp32Kernel {
    /// `gemm_simt_fp32`: the first, simple kernel (kept for A/B).
    Simple,
    /// `gemm_sgemm_*`: the register-tiled kernel, with a forced tile or (`None`) the one
    /// [`pick_tile`] chooses.
    Tiled(Option<Tile>),
}

/// Parses a `KERNELGATE_GEMM_FP32` value (unset or empty: the tiled kernel, automatic tile).
pub fn parse_fp32_kernel(value: Option<&str>) -> std::result::Result<Fp32Kernel, String> {
    match value.map(str::trim) {
        None | Some("") | Some("tiled") => Ok(Fp32Kernel::Tiled(None)),
        Some("simple") => Ok(Fp32Kernel::Simple),
        Some(other) => TILES
            .iter()
            .find(|t| format!("{}x{}", t.bm, t.bn) == other)
            .map(|&t| Fp32Kernel::Tiled(Some(t)))
            .ok_or_else(|| {
                format!(
                    "{FP32_KERNEL_ENV}={other:?} is not an fp32 GEMM kernel: use `simple`, `tiled`, `128x128`, `128x64` or `64x64`"
                )
            }),
    }
}

/// The tile with the least modelled time for an `m x n` output on `sms` SMs. Every tile holds
/// up to 16 warps per SM (at most 128 registers per thread); the busiest SM runs
/// ceil(CTAs / SMs) CTAs; with fewer than 8 resident warps an SM issues less often
/// (throughput min(1, 0.5 + warps/16)); smaller tiles pay [`TILE_EFFICIENCY`]. Mirrored by
/// `pick_tile` in `kernels/dev/sgemm_bench.cu`.
pub fn pick_tile(m: u64, n: u64, sms: u64) -> Tile {
    let sms = sms.max(1);
    let mut best = (f64::INFINITY, TILES[0]);
    for (t, eff) in TILES.iter().zip(TILE_EFFICIENCY) {
        let per_sm = t.ctas(m, n).div_ceil(sms);
        let warps_per_cta = (t.threads() / 32) as u64;
        let resident = per_sm.min(16 / warps_per_cta) * warps_per_cta;
        let throughput = (0.5 + resident as f64 / 16.0).min(1.0);
        let cost = (per_sm * t.bm as u64 * t.bn as u64) as f64 / (throughput * eff);
        if cost < best.0 * (1.0 - 1e-9) {
            best = (cost, *t);
        }
    }
    best.1
}

/// Whether the tiled kernel may copy B 16 bytes at a time and store C as float4: N a multiple
/// of 4 and both buffers 16-byte aligned (A is always copied 4 bytes at a time).
pub fn fp32_vec4(n: u64, b: u64, c: u64) -> bool {
    n.is_multiple_of(4) && b.is_multiple_of(16) && c.is_multiple_of(16)
}

/// The fp32 kernel for this case: `KERNELGATE_GEMM_FP32` (an unknown value is an error), else
/// the tiled kernel.
fn fp32_kernel(case: &Case) -> Result<Fp32Kernel> {
    let env = std::env::var(FP32_KERNEL_ENV).ok();
    parse_fp32_kernel(env.as_deref()).map_err(|message| Error::Case {
        case: case.name(),
        message,
    })
}

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
    let (name, dims, variant) = match case.dtype {
        Dtype::Bf16 | Dtype::Fp16 => {
            let name = if case.dtype == Dtype::Bf16 {
                "gemm_tc_bf16"
            } else {
                "gemm_tc_fp16"
            };
            let dims = Dims {
                grid: ((n as u32).div_ceil(128), (m as u32).div_ceil(128), 1),
                block: (256, 1, 1),
                smem: 0,
            };
            (name.to_string(), dims, name.to_string())
        }
        Dtype::Fp32 => match fp32_kernel(case)? {
            Fp32Kernel::Simple => {
                let dims = Dims {
                    grid: ((n as u32).div_ceil(64), (m as u32).div_ceil(64), 1),
                    block: (256, 1, 1),
                    smem: 0,
                };
                let name = "gemm_simt_fp32";
                (
                    name.to_string(),
                    dims,
                    format!("{name} (SIMT 64x64x16, 4x4 per thread; {FP32_KERNEL_ENV}=simple)"),
                )
            }
            Fp32Kernel::Tiled(forced) => {
                let tile = forced
                    .unwrap_or_else(|| pick_tile(m as u64, n as u64, gpu.info.sm_count as u64));
                let vec = fp32_vec4(n as u64, b, c);
                let name = format!(
                    "gemm_sgemm_{}x{}_{}",
                    tile.bm,
                    tile.bn,
                    if vec { "vec4" } else { "scalar" }
                );
                let ctas = tile.ctas(m as u64, n as u64);
                let dims = Dims {
                    grid: (ctas as u32, 1, 1),
                    block: (tile.threads(), 1, 1),
                    smem: 0,
                };
                let variant = format!(
                    "{name} (SIMT FFMA {}x{}x8, {} thr x 8x8, 3-stage cp.async; {ctas} CTAs, tile {})",
                    tile.bm,
                    tile.bn,
                    tile.threads(),
                    if forced.is_some() { "forced" } else { "by shape" }
                );
                (name, dims, variant)
            }
        },
    };
    let module = gpu.module("gemm.cu")?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
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
        variant,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp32_kernel_env_values() {
        assert_eq!(parse_fp32_kernel(None), Ok(Fp32Kernel::Tiled(None)));
        assert_eq!(parse_fp32_kernel(Some(" ")), Ok(Fp32Kernel::Tiled(None)));
        assert_eq!(
            parse_fp32_kernel(Some("tiled")),
            Ok(Fp32Kernel::Tiled(None))
        );
        assert_eq!(parse_fp32_kernel(Some("simple")), Ok(Fp32Kernel::Simple));
        assert_eq!(
            parse_fp32_kernel(Some("128x64")),
            Ok(Fp32Kernel::Tiled(Some(Tile { bm: 128, bn: 64 })))
        );
        let err = parse_fp32_kernel(Some("fast")).unwrap_err();
        assert!(
            err.contains(FP32_KERNEL_ENV) && err.contains("simple"),
            "{err}"
        );
    }

    #[test]
    fn tiles_match_the_kernel_layout() {
        // One warp per 64 x 32 slab: 256, 128, 64 threads; at most 16 warps per SM each.
        let threads: Vec<u32> = TILES.iter().map(|t| t.threads()).collect();
        assert_eq!(threads, [256, 128, 64]);
        assert_eq!(TILES[0].ctas(129, 257), 2 * 3);
        assert_eq!(TILES[2].ctas(1, 1), 1);
    }

    #[test]
    fn tile_choice_fills_the_machine() {
        let t = |m, n| {
            let t = pick_tile(m, n, 132);
            (t.bm, t.bn)
        };
        // Large outputs: the largest tile.
        assert_eq!(t(4096, 4096), (128, 128));
        assert_eq!(t(8192, 8192), (128, 128));
        assert_eq!(t(2048, 2048), (128, 128));
        assert_eq!(t(2000, 3000), (128, 128));
        // 64 CTAs of 128x128 would leave half of 132 SMs idle.
        assert_eq!(t(1024, 1024), (128, 64));
        // Tiny outputs: the smallest.
        assert_eq!(t(129, 257), (64, 64));
        assert_eq!(t(17, 17), (64, 64));
    }

    #[test]
    fn vec4_needs_n_multiple_of_4_and_alignment() {
        assert!(fp32_vec4(4096, 0x7000_0000, 0x7100_0000));
        assert!(!fp32_vec4(4097, 0x7000_0000, 0x7100_0000));
        assert!(!fp32_vec4(4096, 0x7000_0004, 0x7100_0000));
        assert!(!fp32_vec4(4096, 0x7000_0000, 0x7100_0008));
    }
}
