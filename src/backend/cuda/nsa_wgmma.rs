//! The Hopper nsa kernel (`kernels/nsa_wgmma.cu`): the TMA + wgmma attention body of
//! `kernels/mha_wgmma.cu` over the key tiles a 128-token tile selected, masked per element by
//! each token's block multiplicities. Selected branch only (`w = 0`), bs 32 or 64, d 64 or 128,
//! T ≤ 8192 (the tile's list buffers in shared memory), sm_90.

use super::tma::tensor_map_16bit;
use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::nsa::{Params, COUNTS, G_SLC, INDICES, K, Q, V};
use crate::gpu::{Dims, Gpu, KernelArg};

/// The module.
pub const FILE: &str = "nsa_wgmma.cu";
/// Tokens per work tile (two consumer warpgroups of 64 rows).
pub const ROWS: usize = 128;
/// Keys per key tile.
pub const KEYS: usize = 128;
/// Threads per CTA (producer warpgroup and two consumer warpgroups).
pub const THREADS: u32 = 384;
/// Most key tiles per sequence (the union is two 32-bit words).
pub const MAX_KEY_TILES: usize = 64;
/// Most slots per token (multiplicities are bytes).
pub const MAX_SLOTS: usize = 255;
/// Largest dynamic shared memory of an sm_90 CTA.
pub const MAX_SMEM: u64 = 232_448;

/// K/V pipeline stages for head dim `d` (`MHA_WG_STAGES_D64` / `_D128`).
pub fn stages(d: usize) -> u64 {
    if d == 128 {
        2
    } else {
        4
    }
}

/// Key tiles of the longest work tile: `⌈T / 128⌉`.
pub fn key_tiles(p: &Params) -> usize {
    p.t.div_ceil(KEYS)
}

/// Dynamic shared memory: `Layout<D, 128, STAGES, 2, true>::SMEM` (Q, the K/V ring, alignment
/// slack and barriers), two list buffers of `nsa_words(128, ⌈T/128⌉)` words and the producer's
/// staging of 128 tokens' S block indices.
pub fn smem_bytes(p: &Params) -> u64 {
    let d = p.d as u64;
    let layout = 1024 + ROWS as u64 * d * 2 + 2 * stages(p.d) * KEYS as u64 * d * 2 + 256;
    let nkv = key_tiles(p) as u64;
    layout + 2 * 4 * (16 + nkv + ROWS as u64 * nkv) + 4 * ROWS as u64 * p.s as u64
}

/// Whether the kernel can run a problem on any sm_90 device (`Err`: why not).
pub fn fits(p: &Params) -> std::result::Result<(), String> {
    if p.w != 0 {
        return Err(format!(
            "it has no sliding-window branch (w = {}; only w = 0)",
            p.w
        ));
    }
    if p.bs != 32 && p.bs != 64 {
        return Err(format!("it has entries for bs 32 and 64, not {}", p.bs));
    }
    if p.d != 64 && p.d != 128 {
        return Err(format!("it supports d = 64 or 128, not {}", p.d));
    }
    if key_tiles(p) > MAX_KEY_TILES {
        return Err(format!(
            "t = {} needs {} key tiles of {KEYS} (at most {MAX_KEY_TILES}: t <= {})",
            p.t,
            key_tiles(p),
            MAX_KEY_TILES * KEYS
        ));
    }
    if p.s > MAX_SLOTS {
        return Err(format!("s = {} exceeds {MAX_SLOTS} slots", p.s));
    }
    let smem = smem_bytes(p);
    if smem > MAX_SMEM {
        return Err(format!(
            "it would need {smem} bytes of shared memory (over {MAX_SMEM})"
        ));
    }
    Ok(())
}

/// Whether this device can run the kernel (compute capability 9.0: wgmma and TMA of sm_90a).
pub fn device_fits(gpu: &Gpu) -> std::result::Result<(), String> {
    if gpu.info.compute_capability == "9.0" {
        Ok(())
    } else {
        Err(format!(
            "it needs compute capability 9.0 (sm_90a), this device is {}",
            gpu.info.compute_capability
        ))
    }
}

/// The entry point, e.g. `nsa_wgmma_bf16_d64_bs32`.
pub fn entry(dt: &str, p: &Params) -> String {
    format!("nsa_wgmma_{dt}_d{}_bs{}", p.d, p.bs)
}

/// Work tiles: `⌈T/128⌉` token tiles of every (batch, query head).
pub fn tiles(p: &Params) -> u64 {
    (p.t.div_ceil(ROWS) * p.hq * p.b) as u64
}

/// Prepares one launch (the caller checked [`fits`] and [`device_fits`]).
pub fn prepare(
    gpu: &mut Gpu,
    case: &Case,
    bind: &Bindings,
    p: &Params,
    scale_log2: f32,
) -> Result<Prepared> {
    let dt = if case.dtype == Dtype::Bf16 {
        "bf16"
    } else {
        "fp16"
    };
    let name = entry(dt, p);
    let module = gpu.module(FILE)?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    let smem = smem_bytes(p) as u32;
    gpu.set_max_dynamic_smem(f, smem)?;
    let per_sm = gpu.max_active_blocks(f, THREADS, smem)? as u64;
    if per_sm == 0 {
        return Err(Error::Case {
            case: case.name(),
            message: format!("{name}: no CTA of {THREADS} threads and {smem} bytes fits an SM"),
        });
    }
    let n_tiles = tiles(p);
    let grid = n_tiles.min(gpu.info.sm_count as u64 * per_sm);
    let i = &bind.inputs;
    let (b, t, hq, h, d) = (p.b as u64, p.t as u64, p.hq as u64, p.h as u64, p.d as u64);
    let tm_q = tensor_map_16bit(case, i[Q], &[d, hq, t, b], &[64, 1, ROWS as u32, 1])?;
    let tm_k = tensor_map_16bit(case, i[K], &[d, h, t, b], &[64, 1, KEYS as u32, 1])?;
    let tm_v = tensor_map_16bit(case, i[V], &[d, h, t, b], &[64, 1, KEYS as u32, 1])?;
    let sched = gpu.alloc(8, &format!("{} tile counter", case.name()))?;
    gpu.fill_pattern(&sched, 4, 0)?;
    let dims = Dims {
        grid: (grid as u32, 1, 1),
        block: (THREADS, 1, 1),
        smem,
    };
    let args = [
        KernelArg::TensorMap(tm_q),
        KernelArg::TensorMap(tm_k),
        KernelArg::TensorMap(tm_v),
        KernelArg::Ptr(bind.outputs[0]),
        KernelArg::Ptr(i[G_SLC]),
        KernelArg::Ptr(i[INDICES]),
        KernelArg::Ptr(i[COUNTS]),
        KernelArg::Ptr(sched.ptr()),
        KernelArg::I32(p.b as i32),
        KernelArg::I32(p.t as i32),
        KernelArg::I32(p.hq as i32),
        KernelArg::I32(p.h as i32),
        KernelArg::I32(p.s as i32),
        KernelArg::I32(key_tiles(p) as i32),
        KernelArg::F32(scale_log2),
    ];
    Ok(Prepared {
        // gpu.launch wraps the driver call (see its SAFETY note); `args` follow the entry's
        // signature (kernels/nsa_wgmma.cu, HOST LAUNCH RECIPE).
        launch: Box::new(move |gpu: &Gpu| {
            let _keep = &sched;
            gpu.launch(f, dims, &args)
        }),
        compile_s,
        source_hash: hash,
        variant: format!(
            "{name} (wgmma: {ROWS} tokens of one query head per tile, union of their selected \
             blocks in {KEYS}-key tiles, TMA + wgmma, 2 consumer WGs ping-pong, {} stages, \
             persistent grid {grid} of {n_tiles} tiles, dynamic)",
            stages(p.d)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(t: usize, d: usize, s: usize, bs: usize, w: usize) -> Params {
        Params {
            b: 2,
            t,
            hq: 16,
            h: 16,
            d,
            s,
            bs,
            w,
        }
    }

    #[test]
    fn shared_memory_matches_the_kernel_recipe() {
        // Layout<D, 128, STAGES, 2, true>::SMEM: d64 148736, d128 165120 (kernels/nsa_wgmma.cu).
        let base = |d| smem_bytes(&params(128, d, 4, 32, 0)) - 2 * 4 * (16 + 1 + 128) - 512 * 4;
        assert_eq!(base(64), 148_736);
        assert_eq!(base(128), 165_120);
        // t = 8192 fits at d64; at d128 the list buffers and the staging take too much.
        assert_eq!(
            smem_bytes(&params(8192, 128, 4, 32, 0)),
            165_120 + 8 * (16 + 64 + 8192) + 512 * 4
        );
        assert!(fits(&params(8192, 64, 16, 64, 0)).is_ok());
        assert!(fits(&params(8192, 128, 4, 32, 0))
            .unwrap_err()
            .contains("shared memory"));
        assert!(fits(&params(4096, 128, 16, 32, 0)).is_ok());
    }

    #[test]
    fn limits_name_what_does_not_fit() {
        assert!(fits(&params(1024, 64, 4, 32, 100))
            .unwrap_err()
            .contains("window"));
        assert!(fits(&params(1024, 64, 4, 128, 0))
            .unwrap_err()
            .contains("bs 32 and 64"));
        assert!(fits(&params(1024, 96, 4, 32, 0))
            .unwrap_err()
            .contains("d = 64 or 128"));
        assert!(fits(&params(8193, 64, 4, 32, 0))
            .unwrap_err()
            .contains("key tiles"));
        assert!(fits(&params(1024, 64, 256, 32, 0))
            .unwrap_err()
            .contains("slots"));
    }

    #[test]
    fn names_and_tiles() {
        let p = params(1000, 64, 8, 32, 0);
        assert_eq!(entry("bf16", &p), "nsa_wgmma_bf16_d64_bs32");
        assert_eq!(key_tiles(&p), 8);
        assert_eq!(tiles(&p), 8 * 16 * 2);
    }
}
