//! `gemm` on our kernels: the tensor-core GEMV `gemm_mtc` for the 16-bit M ≤ 8 shapes its
//! `chosen` names (N a multiple of 8, 32+ strips of 64 columns, M·K ≤ 16384 at M = 5–8, K from
//! 1024 to 8192 at M ≤ 4; compute capability 8.0+; `KERNELGATE_GEMM_MTC` `0` / `1` turns it off /
//! on for every M ≤ 8 it can take); the SIMT GEMV kernels for the other M ≤ 8 (any dtype and
//! architecture, see `gemm_gemv`), streaming kernels where M or N is at most 16 (on Hopper only the
//! skinny shapes [`skinny_on_wgmma`] leaves them), TMA + wgmma for every other 16-bit shape on
//! Hopper (odd K through a padded copy of A, odd N through a padded copy of B with C written in
//! place, see `gemm_wgmma`),
//! WMMA tensor cores elsewhere; fp32 on the register-tiled SIMT kernel
//! (`gemm_sgemm_*`, plain FFMA, no TF32) with a tile chosen by shape (on Hopper the 64x64 tile
//! of a small output splits K over a thread-block cluster, [`pick_fp32_splits`]), or the first
//! simple one under `KERNELGATE_GEMM_FP32=simple`.

use super::gemm_skinny::Skinny;
use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::Result;
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

/// CTAs per SM a tile's grid must reach for [`pick_tile`] to take it: about two (1.9, so a grid
/// of 256 on 132 SMs counts).
const MIN_CTAS_PER_SM: f64 = 1.9;

/// Which fp32 kernel runs a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp32Kernel {
    /// `gemm_simt_fp32`: the first, simple kernel (kept for A/B).
    Simple,
    /// `gemm_sgemm_*`: the register-tiled kernel, with a forced tile or (`None`) the one
    /// [`pick_tile`] chooses.
    Tiled(Option<Tile>),
}

/// The values of `KERNELGATE_GEMM_FP32`: `tiled` (automatic tile), `simple`, or one tile of
/// [`TILES`] forced.
const FP32_CHOICES: [(&str, Fp32Kernel); 5] = [
    ("tiled", Fp32Kernel::Tiled(None)),
    ("simple", Fp32Kernel::Simple),
    ("128x128", Fp32Kernel::Tiled(Some(TILES[0]))),
    ("128x64", Fp32Kernel::Tiled(Some(TILES[1]))),
    ("64x64", Fp32Kernel::Tiled(Some(TILES[2]))),
];

/// Parses a `KERNELGATE_GEMM_FP32` value (unset or empty: the tiled kernel, automatic tile).
pub fn parse_fp32_kernel(value: Option<&str>) -> std::result::Result<Fp32Kernel, String> {
    super::parse_choice(FP32_KERNEL_ENV, value, &FP32_CHOICES)
        .map(|k| k.unwrap_or(Fp32Kernel::Tiled(None)))
}

/// The largest of [`TILES`] whose grid gives every SM about two CTAs
/// ([`MIN_CTAS_PER_SM`]), else the smallest. Measured on an H100 with
/// `kernels/dev/run_sgemm_bench.sh` (every tile timed, µs for 128x128 / 128x64 / 64x64):
/// 1024³ 120.7 / 90.0 / 76.2, 2048³ 423 / 521 / 510, 4096³ 3354 / 4111 / 4262,
/// 8192³ 26933 / 31832 / 32568, 2000×3000×1000 303 / 334 / 325, 129×257×513 66.6 / 42.0 / 33.8:
/// the big tile wins once the grid holds two CTAs per SM, below that the smallest does (two
/// independent 2-warp CTAs beat one 4-warp CTA at equal work). Since session 20 the 128x128
/// tile runs BK 16 with 2 stages and is faster still where it is picked (through the harness on
/// H100s: 2048³ 405–407 µs, 4096³ 3168–3186, 2000×3000×1000 312), so the rule stands. Mirrored
/// by `pick_tile` in `kernels/dev/sgemm_bench.cu`.
pub fn pick_tile(m: u64, n: u64, sms: u64) -> Tile {
    let need = MIN_CTAS_PER_SM * sms.max(1) as f64;
    TILES
        .iter()
        .copied()
        .find(|t| t.ctas(m, n) as f64 >= need)
        .unwrap_or(TILES[TILES.len() - 1])
}

/// Environment variable that forces the K split of the 64x64 fp32 tile on Hopper: `1` (no
/// split), `2`, `4` or `8` CTAs of a cluster sharing one output tile (unset or empty: chosen by
/// shape, [`pick_fp32_splits`]). Ignored for the other tiles and before compute capability 9.0.
pub const FP32_SPLITK_ENV: &str = "KERNELGATE_GEMM_FP32_SPLITK";

/// The K splits the fp32 kernel file instantiates for the 64x64 tile (`gemm_sgemm_64x64_*_k<S>`,
/// clusters of S CTAs), largest first.
pub const FP32_SPLITS: [u32; 3] = [8, 4, 2];

/// Fewest k tiles (of 8) a split CTA keeps: below this its pipeline fill and the cluster
/// reduction cost more than the FFMAs it takes over.
pub const FP32_MIN_KTILES_PER_SPLIT: u64 = 4;

/// Fewest k tiles (of 8) a case needs before it splits at all: with short K the unsplit CTAs are
/// short already and the cluster's barriers and partial traffic do not pay (H100 GPU-5da6bd3e,
/// µs unsplit / 2 splits: 1000×1000×100 10.58 / 12.73, 640×640×64 6.25 / 7.41).
pub const FP32_MIN_KTILES_TO_SPLIT: u64 = 32;

/// Most CTAs per SM a split grid may reach (64-thread CTAs; 30 KB of shared memory each lets
/// seven reside).
pub const FP32_SPLIT_CTAS_PER_SM: u64 = 4;

/// The values of [`FP32_SPLITK_ENV`].
const FP32_SPLIT_CHOICES: [(&str, u32); 4] = [("1", 1), ("2", 2), ("4", 4), ("8", 8)];

/// Parses a [`FP32_SPLITK_ENV`] value: `None` (unset or empty) lets the shape choose.
pub fn parse_fp32_splits(value: Option<&str>) -> std::result::Result<Option<u32>, String> {
    super::parse_choice(FP32_SPLITK_ENV, value, &FP32_SPLIT_CHOICES)
}

/// How many CTAs of a cluster split K for `tile` over `m × n × k` on `sms` SMs of compute
/// capability major `cc_major`: only the 64x64 tile (the pick where 128-row tiles leave SMs
/// without two CTAs) on Hopper and newer, only with at least [`FP32_MIN_KTILES_TO_SPLIT`] k
/// tiles; then the largest of [`FP32_SPLITS`] whose grid stays within
/// [`FP32_SPLIT_CTAS_PER_SM`] CTAs per SM and leaves every split at least
/// [`FP32_MIN_KTILES_PER_SPLIT`] k tiles; else 1.
///
/// Measured through the harness on an H100 (GPU-5da6bd3e, two interleaved rounds, µs for 1 / 2 /
/// 4 / 8 splits; cuBLAS in the same runs): 256³ 18.06 / 12.49 / 8.32 / **7.18** (cuBLAS 8.50),
/// 512³ 34.40 / 20.58 / 19.38 / **16.65** (14.49), 1024³ 77.54 / **71.25** / 93.17 / 88.93
/// (60.88), 129×257×513 35.84 / 22.66 / 13.06 / **8.75** (10.04), 300×200×2000 123.86 / 66.99 /
/// 36.32 / **23.58** (16.70), 128×128×4096 244.22 / 127.74 / 66.00 / **36.16** (12.51); the rule
/// picks the bold one in each.
pub fn pick_fp32_splits(tile: Tile, m: u64, n: u64, k: u64, sms: u64, cc_major: u32) -> u32 {
    let tiles = tile.ctas(m, n);
    let k_tiles = k.div_ceil(8);
    if cc_major < 9 || tile != TILES[2] || k_tiles < FP32_MIN_KTILES_TO_SPLIT {
        return 1;
    }
    FP32_SPLITS
        .into_iter()
        .find(|&s| {
            tiles * s as u64 <= FP32_SPLIT_CTAS_PER_SM * sms
                && k_tiles / s as u64 >= FP32_MIN_KTILES_PER_SPLIT
        })
        .unwrap_or(1)
}

/// Whether the tiled kernel may copy B 16 bytes at a time and store C as float4: N a multiple
/// of 4 and both buffers 16-byte aligned (A is always copied 4 bytes at a time).
pub fn fp32_vec4(n: u64, b: u64, c: u64) -> bool {
    n.is_multiple_of(4) && b.is_multiple_of(16) && c.is_multiple_of(16)
}

/// The fp32 kernel for this case: `KERNELGATE_GEMM_FP32` (an unknown value is an error), else
/// the tiled kernel.
fn fp32_kernel(case: &Case) -> Result<Fp32Kernel> {
    super::from_env(case, FP32_KERNEL_ENV, parse_fp32_kernel)
}

/// Environment variable that keeps every skinny shape on the streaming kernels of
/// `gemm_skinny.cu` (`0`) instead of sending the ones [`skinny_on_wgmma`] names to the wgmma
/// tiles on Hopper.
pub const SKINNY_WGMMA_ENV: &str = "KERNELGATE_SKINNY_WGMMA";

/// Whether a skinny shape runs faster on the wgmma tiles than on its streaming kernel (Hopper,
/// 16-bit). Measured on H100s, same runs, µs streaming / wgmma:
/// - M ≤ 16 (GPU-f6238019): 16×8192×8192 166 / 52, 5×3000×1000 16.5 / 8.1, 1×4096×4096
///   16.4 / 16.1 (64-row tiles, rows past M read as zeros, split-K);
/// - N ≤ 16 (N ≤ M): never since session 42's tensor-core streaming kernel (occupancy-sized
///   grid, L2 prefetch-size hint). Harness, every launch alone, two interleaved rounds, µs
///   streaming / wgmma (H100 GPU-8f42cc54): 8192×16×4096 29.0 / 31.0, 2048×9×64 3.5 / 5.1,
///   4096×12×1000 8.8 / 9.9, 65536×16×1024 50.3 / 51.0, 4097×16×4104 20.6 / 20.6. Before it
///   (GPU-5e9bc939) the wgmma tiles won 9 ≤ N ≤ 16 with M ≥ 2048: 8192×16×4096 43.0 / 34.5.
pub fn skinny_on_wgmma(kind: Skinny) -> bool {
    kind == Skinny::M
}

/// Whether [`SKINNY_WGMMA_ENV`] allows [`skinny_on_wgmma`] (unset, empty or `1`; `0` does not;
/// another value is an error of `case`).
fn skinny_wgmma_allowed(case: &Case) -> Result<bool> {
    super::from_env(case, SKINNY_WGMMA_ENV, |v| {
        super::parse_switch(SKINNY_WGMMA_ENV, v)
    })
}

/// Prepares C = A·B.
pub fn prepare(gpu: &mut Gpu, case: &Case, bind: &Bindings) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m") as i32, s.get("n") as i32, s.get("k") as i32);
    let (a, b, c) = (bind.inputs[0], bind.inputs[1], bind.outputs[0]);
    let (mu, nu, ku) = (s.get("m"), s.get("n"), s.get("k"));
    let cc = &gpu.info.compute_capability;
    let mtc = match super::gemm_mtc::mode(case)? {
        super::gemm_mtc::Mode::Off => false,
        mode => {
            let optin = gpu.max_dynamic_smem_optin()?;
            if mode == super::gemm_mtc::Mode::All {
                super::gemm_mtc::applies(mu, nu, ku, case.dtype, cc, optin)
            } else {
                super::gemm_mtc::chosen(mu, nu, ku, case.dtype, cc, optin)
            }
        }
    };
    if mtc {
        return super::gemm_mtc::prepare(gpu, case, (a, b, c));
    }
    if super::gemm_gemv::applies(mu, nu, ku) && super::gemm_gemv::allowed(case)? {
        return super::gemm_gemv::prepare(gpu, case, (a, b, c));
    }
    let wgmma = super::gemm_wgmma::applies(gpu, case);
    match super::gemm_skinny::which(mu, nu, ku) {
        Some(kind) if wgmma && skinny_on_wgmma(kind) && skinny_wgmma_allowed(case)? => {}
        Some(kind) => return super::gemm_skinny::prepare(gpu, case, kind, (a, b, c)),
        None => {}
    }
    if wgmma {
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
                let sms = gpu.info.sm_count as u64;
                let tile = forced.unwrap_or_else(|| pick_tile(m as u64, n as u64, sms));
                let vec = fp32_vec4(n as u64, b, c);
                let cc_major = super::compute_major(&gpu.info.compute_capability);
                let forced_splits = super::from_env(case, FP32_SPLITK_ENV, parse_fp32_splits)?;
                let splits = match forced_splits {
                    Some(s) if tile == TILES[2] && cc_major >= 9 => s,
                    Some(_) => 1,
                    None => pick_fp32_splits(tile, m as u64, n as u64, k as u64, sms, cc_major),
                };
                let mut name = format!(
                    "gemm_sgemm_{}x{}_{}",
                    tile.bm,
                    tile.bn,
                    if vec { "vec4" } else { "scalar" }
                );
                let ctas = tile.ctas(m as u64, n as u64);
                let dims = Dims {
                    grid: ((ctas * splits as u64) as u32, 1, 1),
                    block: (tile.threads(), 1, 1),
                    smem: 0,
                };
                // The unsplit text is what the stored rounds name: keep it as it is.
                let mut variant = format!(
                    "{name} (SIMT FFMA {}x{}x8, {} thr x 8x8, 3-stage cp.async; {ctas} CTAs, tile {})",
                    tile.bm,
                    tile.bn,
                    tile.threads(),
                    if forced.is_some() { "forced" } else { "by shape" }
                );
                if splits > 1 {
                    name = format!("{name}_k{splits}");
                    variant = format!(
                        "{name} (SIMT FFMA 64x64x8, 64 thr x 8x8, 3-stage cp.async; {ctas} tiles x \
                         K split {splits} ways over a {splits}-CTA cluster, partials added in \
                         rank order through distributed shared memory; split {})",
                        if forced_splits.is_some() { "forced" } else { "by shape" }
                    );
                }
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
        code_hash: String::new(),
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
        // Every tile is forceable under its own name.
        for t in TILES {
            let name = format!("{}x{}", t.bm, t.bn);
            assert_eq!(
                parse_fp32_kernel(Some(&name)),
                Ok(Fp32Kernel::Tiled(Some(t)))
            );
        }
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
        // 64 CTAs of 128x128 or 128 of 128x64 leave SMs with one CTA: 64x64 (measured fastest).
        assert_eq!(t(1024, 1024), (64, 64));
        assert_eq!(t(1000, 1000), (64, 64));
        // Tiny outputs: the smallest.
        assert_eq!(t(129, 257), (64, 64));
        assert_eq!(t(17, 17), (64, 64));
    }

    #[test]
    fn skinny_shapes_on_wgmma_follow_the_measurements() {
        // M ≤ 16 (16×8192×8192, 1×4096×4096) on the tiles; every skinny-N shape (8192×16×4096,
        // 65536×16×1024, 8192×8×8192, 16×16×65536, 2048×3×777) streams A (session 42).
        assert!(skinny_on_wgmma(Skinny::M));
        assert!(!skinny_on_wgmma(Skinny::N));
    }

    #[test]
    fn fp32_split_env_values() {
        assert_eq!(parse_fp32_splits(None), Ok(None));
        assert_eq!(parse_fp32_splits(Some("")), Ok(None));
        for s in [1, 2, 4, 8] {
            assert_eq!(parse_fp32_splits(Some(&s.to_string())), Ok(Some(s)));
        }
        let err = parse_fp32_splits(Some("3")).unwrap_err();
        assert!(err.contains(FP32_SPLITK_ENV), "{err}");
    }

    #[test]
    fn fp32_splits_follow_the_measurements() {
        let small = TILES[2];
        let s = |m, n, k| pick_fp32_splits(small, m, n, k, 132, 9);
        // The measured picks (see `pick_fp32_splits`).
        assert_eq!(s(256, 256, 256), 8);
        assert_eq!(s(512, 512, 512), 8);
        assert_eq!(s(1024, 1024, 1024), 2);
        assert_eq!(s(129, 257, 513), 8);
        assert_eq!(s(300, 200, 2000), 8);
        assert_eq!(s(128, 128, 4096), 8);
        // Short K does not split.
        assert_eq!(s(1000, 1000, 100), 1);
        assert_eq!(s(640, 640, 64), 1);
        // Before Hopper there are no clusters; only the 64x64 tile has split entries.
        assert_eq!(pick_fp32_splits(small, 256, 256, 256, 132, 8), 1);
        assert_eq!(pick_fp32_splits(TILES[0], 256, 256, 256, 132, 9), 1);
        // A grid that would pass four CTAs per SM splits less: 100 tiles, 4 · 132 = 528 slots.
        assert_eq!(s(640, 640, 4096), 4);
        assert_eq!(s(2048, 2048, 4096), 1);
        // Whatever it picks exists and keeps the bounds.
        for (m, n, k) in [
            (1, 1, 1),
            (17, 4000, 9000),
            (129, 257, 513),
            (640, 640, 300),
        ] {
            let sp = s(m, n, k);
            assert!(sp == 1 || FP32_SPLITS.contains(&sp));
            assert!(sp == 1 || small.ctas(m, n) * sp as u64 <= 4 * 132);
            assert!(sp == 1 || k.div_ceil(8) / sp as u64 >= FP32_MIN_KTILES_PER_SPLIT);
        }
    }

    #[test]
    fn vec4_needs_n_multiple_of_4_and_alignment() {
        assert!(fp32_vec4(4096, 0x7000_0000, 0x7100_0000));
        assert!(!fp32_vec4(4097, 0x7000_0000, 0x7100_0000));
        assert!(!fp32_vec4(4096, 0x7000_0004, 0x7100_0000));
        assert!(!fp32_vec4(4096, 0x7000_0000, 0x7100_0008));
    }
}
