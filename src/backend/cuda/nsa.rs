//! `nsa` on our kernels: `kernels/nsa.cu` ("grouped": one warp per (token, KV head, 16 query
//! heads), the G query heads of a KV head as the MMA's M dimension) and `kernels/nsa_tiled.cu`
//! ("tiled": one CTA per (batch, KV head, 64/G consecutive tokens), the union of the tile's
//! selected blocks, per-row masks). Both: mma.sync tensor cores, cp.async K/V chunks, online
//! softmax.
//!
//! # Which kernel
//!
//! The grouped kernel wastes `1 − G/16` of every tensor-core tile when `G = hq/h < 16`; the tiled
//! kernel wastes the keys of its union that a row did not select, which depends on how much
//! the tokens' selections overlap. Rows of the tiled kernel's warps are `16/G` tokens, so at
//! `G ≤ 4` the union of 4+ tokens is usually dense enough to win (it always costs at most the
//! grouped kernel's work per row up to barrier overheads, and far less when S·bs is a large
//! part of the causal prefix). The choice: tiled for `G ≤ TILED_MAX_G` (4) where it can run
//! ([`tiled_fits`]), else grouped. `KERNELGATE_NSA_KERNEL=grouped|tiled` forces one; forcing
//! `tiled` where it cannot run is an error. The record's `variant` names the kernel that ran.

use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::nsa::{Params, CHUNK, COUNTS, G_SLC, G_SWA, INDICES, K, Q, V};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable that forces the nsa kernel: `grouped` (kernels/nsa.cu) or `tiled`
/// (kernels/nsa_tiled.cu).
pub const KERNEL_ENV: &str = "KERNELGATE_NSA_KERNEL";

/// Which of our nsa kernels runs a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `kernels/nsa.cu`: one warp per token, its G query heads as the tile rows.
    Grouped,
    /// `kernels/nsa_tiled.cu`: 64 rows = G heads × 64/G consecutive tokens per CTA.
    Tiled,
}

/// The values of `KERNELGATE_NSA_KERNEL`.
const CHOICES: [(&str, Kernel); 2] = [("grouped", Kernel::Grouped), ("tiled", Kernel::Tiled)];

/// Parses a `KERNELGATE_NSA_KERNEL` value (`None`: unset or empty, automatic choice).
pub fn parse_forced(value: Option<&str>) -> std::result::Result<Option<Kernel>, String> {
    super::parse_choice(KERNEL_ENV, value, &CHOICES)
}

/// Largest G = hq/h for which the tiled kernel is the automatic choice.
pub const TILED_MAX_G: usize = 4;
/// Query rows per CTA of the tiled kernel (`NST_ROWS`: 4 warps × 16 rows).
pub const TILED_ROWS: usize = 64;
/// Threads per CTA of the tiled kernel.
pub const TILED_THREADS: u32 = 128;
/// Largest dynamic shared memory the tiled kernel is launched with (the K/V stages take
/// 32 KiB at d = 64 and 48 KiB at d = 128; the rest holds the token lists and block mask).
pub const TILED_MAX_SMEM: u32 = 96 * 1024;

/// cp.async stages of the tiled kernel for head dim `d` (`NST_KERNEL` in kernels/nsa_tiled.cu,
/// which traps when the shared memory is too small for them).
pub fn tiled_stages(d: usize) -> u32 {
    if d == 128 {
        3
    } else {
        4
    }
}

/// Tokens per CTA of the tiled kernel: `64 / G` (0 when G > 64: the kernel cannot run).
pub fn tiled_tokens(p: &Params) -> usize {
    TILED_ROWS / p.g()
}

/// Dynamic shared memory of the tiled kernel: K/V stages, `tokens·(S+1)` list entries and the
/// block bitmask (`⌈⌈T/bs⌉/32⌉` words), 4 bytes each.
pub fn tiled_smem_bytes(p: &Params) -> u64 {
    let words = p.blocks().div_ceil(32) as u64;
    let stages = tiled_stages(p.d) as u64 * 2 * CHUNK * p.d as u64 * 2;
    stages + 4 * (tiled_tokens(p) as u64 * (p.s as u64 + 1) + words)
}

/// Whether the tiled kernel can run a problem (`Err`: why not).
pub fn tiled_fits(p: &Params) -> std::result::Result<(), String> {
    if tiled_tokens(p) == 0 {
        return Err(format!(
            "G = {} query heads per KV head exceed its {TILED_ROWS} rows per CTA",
            p.g()
        ));
    }
    let smem = tiled_smem_bytes(p);
    if smem > TILED_MAX_SMEM as u64 {
        return Err(format!(
            "it would need {smem} bytes of shared memory (over {TILED_MAX_SMEM}: s or t/bs too large)"
        ));
    }
    Ok(())
}

/// The automatic choice for a problem: tiled for G ≤ [`TILED_MAX_G`] where it fits.
pub fn auto_kernel(p: &Params) -> Kernel {
    if p.g() <= TILED_MAX_G && tiled_fits(p).is_ok() {
        Kernel::Tiled
    } else {
        Kernel::Grouped
    }
}

/// The kernel for this case: the forced one (`KERNELGATE_NSA_KERNEL`; an unusable forced
/// choice is an error), else [`auto_kernel`].
fn choose(case: &Case, p: &Params) -> Result<Kernel> {
    match super::from_env(case, KERNEL_ENV, parse_forced)? {
        Some(Kernel::Tiled) => tiled_fits(p)
            .map(|_| Kernel::Tiled)
            .map_err(|why| Error::Case {
                case: case.name(),
                message: format!(
                    "{KERNEL_ENV}=tiled, but the tiled nsa kernel cannot run this case: {why}"
                ),
            }),
        Some(Kernel::Grouped) => Ok(Kernel::Grouped),
        None => Ok(auto_kernel(p)),
    }
}

/// Warps per CTA and pipeline stages of the grouped kernel for head dim `d` (as in
/// `kernels/nsa.cu`, which traps when the launch disagrees).
pub fn config(d: usize) -> Option<(u32, u32)> {
    match d {
        128 => Some((6, 2)),
        64 => Some((12, 2)),
        _ => None,
    }
}

/// Dynamic shared memory of one grouped CTA: every warp owns `stages` K and V chunks.
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
    let kernel = choose(case, &p)?;
    let scale_log2 = (p.scale() * std::f64::consts::LOG2_E) as f32;
    let i = &bind.inputs;
    // Both kernels take the same arguments.
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
    let (file, name, dims, variant) = match kernel {
        Kernel::Grouped => {
            let name = format!("nsa_fwd_{dt}_d{}", p.d);
            let tasks = (p.b * p.h * p.g().div_ceil(16) * p.t) as u64;
            let grid = tasks.div_ceil(warps as u64);
            if grid > i32::MAX as u64 {
                return Err(unsupported(format!("{tasks} tasks exceed the grid limit")));
            }
            let dims = Dims {
                grid: (grid as u32, 1, 1),
                block: (warps * 32, 1, 1),
                smem: smem_bytes(p.d, warps, stages),
            };
            let variant = format!(
                "{name} (grouped: mma.sync m16n8k16, {warps} warps x {stages} cp.async stages)"
            );
            ("nsa.cu", name, dims, variant)
        }
        Kernel::Tiled => {
            let name = format!("nsa_tiled_{dt}_d{}", p.d);
            let tm = tiled_tokens(&p);
            let grid = (p.t.div_ceil(tm) * p.b * p.h) as u64;
            if grid > i32::MAX as u64 {
                return Err(unsupported(format!("{grid} CTAs exceed the grid limit")));
            }
            let dims = Dims {
                grid: (grid as u32, 1, 1),
                block: (TILED_THREADS, 1, 1),
                // tiled_fits bounded it by TILED_MAX_SMEM.
                smem: tiled_smem_bytes(&p) as u32,
            };
            let variant = format!(
                "{name} (tiled: {tm} tokens x G={} heads per CTA, union of selected blocks, mma.sync m16n8k16, {} cp.async stages)",
                p.g(),
                tiled_stages(p.d)
            );
            ("nsa_tiled.cu", name, dims, variant)
        }
    };
    let module = gpu.module(file)?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    gpu.set_max_dynamic_smem(f, dims.smem)?;
    Ok(Prepared {
        // No unsafe block here: gpu.launch wraps the driver call (see its SAFETY note); `args`
        // match the signature both kernels share.
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s,
        source_hash: hash,
        variant,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(t: usize, hq: usize, h: usize, d: usize, s: usize, bs: usize) -> Params {
        Params {
            b: 2,
            t,
            hq,
            h,
            d,
            s,
            bs,
            w: 0,
        }
    }

    #[test]
    fn forced_kernel_parses() {
        assert_eq!(parse_forced(None), Ok(None));
        assert_eq!(parse_forced(Some("")), Ok(None));
        assert_eq!(parse_forced(Some("grouped")), Ok(Some(Kernel::Grouped)));
        assert_eq!(parse_forced(Some(" tiled ")), Ok(Some(Kernel::Tiled)));
        assert!(parse_forced(Some("mma")).unwrap_err().contains("grouped"));
    }

    #[test]
    fn automatic_choice_by_group_size() {
        // G = 1 and 4: tiled; G = 8, 16: grouped.
        assert_eq!(
            auto_kernel(&params(2048, 16, 16, 64, 16, 64)),
            Kernel::Tiled
        );
        assert_eq!(auto_kernel(&params(512, 16, 4, 64, 8, 32)), Kernel::Tiled);
        assert_eq!(auto_kernel(&params(512, 16, 2, 64, 8, 32)), Kernel::Grouped);
        assert_eq!(
            auto_kernel(&params(1024, 16, 1, 128, 16, 32)),
            Kernel::Grouped
        );
        // Too much shared memory for the lists: grouped.
        assert_eq!(
            auto_kernel(&params(65536, 16, 16, 128, 512, 32)),
            Kernel::Grouped
        );
    }

    #[test]
    fn tiled_shared_memory_and_limits() {
        // d = 64: 4 stages x 8 KiB; 64 tokens x 9 list entries; 16 blocks -> 1 word.
        let p = params(512, 16, 16, 64, 8, 32);
        assert_eq!(tiled_tokens(&p), 64);
        assert_eq!(tiled_smem_bytes(&p), 32768 + 4 * (64 * 9 + 1));
        // d = 128, G = 4: 3 stages x 16 KiB; 16 tokens x 17 entries; 33 blocks -> 2 words.
        let p = params(1050, 16, 4, 128, 16, 32);
        assert_eq!(tiled_tokens(&p), 16);
        assert_eq!(tiled_smem_bytes(&p), 49152 + 4 * (16 * 17 + 2));
        assert!(tiled_fits(&params(512, 128, 1, 64, 8, 32))
            .unwrap_err()
            .contains("exceed its 64 rows"));
        assert!(tiled_fits(&params(512, 64, 1, 64, 8, 32)).is_ok());
    }
}
