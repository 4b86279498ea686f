//! Hopper fast path for `mha`: FlashAttention-3 style TMA + wgmma kernel (`kernels/mha_wgmma.cu`).
//!
//! The launch follows the recipe at the head of the kernel file: four 3-D tensor maps
//! (`{d, seq, batch·heads}`, 128-byte swizzle; Q boxes of 64 columns × BM rows, K/V boxes of
//! 64 × [`BLOCK_N`], O boxes of 64 × 64 for the TMA-store epilogue), a persistent 1-D grid of
//! [`Config::grid`] CTAs of [`threads`] threads (one producer and BM/64 consumer warpgroups)
//! that walk the (m-block, head, batch) tiles, and the dynamic shared memory of [`smem_bytes`].
//! [`choose`] picks the configuration per shape and the record's variant names it.

use super::tma::tensor_map_16bit;
use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::Result;
use crate::family::mha::default_scale;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Keys per K/V tile (`MHA_WG_BN` in the kernel).
pub const BLOCK_N: u64 = 128;

/// One launch configuration of the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Query rows per work tile: 128 (two consumer warpgroups) or 192 (three; d = 64 only).
    pub block_m: u64,
    /// CTAs launched: min(tiles, resident CTAs) for the persistent launch.
    pub grid: u64,
    /// Tiles come from the self-resetting global counter (greedy, for causal's unequal tiles)
    /// rather than the static round robin.
    pub dynamic: bool,
    /// Split-KV tail ([`split_tail`]): tiles from this index on are split; the tile count when
    /// none is.
    pub split_from: u64,
    /// Chunks of the key range per split tile (1: no split).
    pub split_c: u64,
}

/// Fewest key tiles per chunk of a split tile: below it the chunk's pipeline ramp and its
/// partial record cost more than the tail it removes.
pub const SPLIT_MIN_KEY_TILES: u64 = 4;
/// Most chunks per split tile: the WG that merges them reads every other chunk's record.
pub const SPLIT_MAX: u64 = 16;

/// The split-KV tail of a non-causal launch: when the last wave is partial (`rem` = tiles mod
/// `resident` CTAs, or every tile when there are fewer tiles than CTAs), each of those `rem`
/// tiles' `n_kv` key tiles are cut into c = min(resident / rem, n_kv / 4, 16) chunks, one work
/// unit each, so the tail takes about 1/c of a tile instead of a whole one; the warpgroup that
/// finishes a tile's last chunk merges the chunks' partial O, max and sum. Returns
/// (split_from, c): tiles from `split_from` on are split; (tiles, 1) when none is (causal, no
/// partial wave, or c < 2). b1 h32 s16384 d128 on 132 SMs: 4096 tiles = 31 waves + 4 and 128
/// key tiles, c = 16, so the last wave costs 1/16 of a tile, not a whole one (3% of the run);
/// b4 h32 s4096: 32 key tiles, c = 8.
pub fn split_tail(tiles: u64, resident: u64, n_kv: u64, causal: bool) -> (u64, u64) {
    if causal || resident == 0 {
        return (tiles, 1);
    }
    let rem = tiles % resident;
    if rem == 0 {
        return (tiles, 1);
    }
    let c = (resident / rem)
        .min(n_kv / SPLIT_MIN_KEY_TILES)
        .min(SPLIT_MAX);
    if c < 2 {
        (tiles, 1)
    } else {
        (tiles - rem, c)
    }
}

/// Work units of a launch: whole tiles, then `split_c` chunks of each split tile.
pub fn units(cfg: &Config, tiles: u64) -> u64 {
    cfg.split_from + (tiles - cfg.split_from) * cfg.split_c
}

/// Floats of one consumer thread's partial record: its O fragment (d / 2) and its two rows'
/// max and sum.
pub fn split_record_floats(d: u64) -> u64 {
    d / 2 + 4
}

/// Query rows per tile: 192 (three consumer warpgroups) for d = 64 without the causal mask,
/// else 128. Measured on H100 and H200 (docs/kernels/README.md): d64 non-causal gains 5-18%
/// from 192-row tiles; d64 causal is faster at 128 (less work on masked diagonal tiles). The
/// bench's `auto_cfg` in kernels/dev/mha_wgmma_bench.cu is the same rule.
pub fn block_m(d: u64, causal: bool) -> u64 {
    if d == 64 && !causal {
        192
    } else {
        128
    }
}

/// Work tiles of a launch: ceil(sq / block_m) m-blocks for each (batch, head).
pub fn tiles(b: u64, h: u64, sq: u64, block_m: u64) -> u64 {
    sq.div_ceil(block_m) * h * b
}

/// The configuration for a shape on a device where `resident` CTAs of the kernel fit at once
/// (SMs × CTAs per SM): a persistent grid of min(work units, resident) CTAs; tiles from the
/// dynamic counter when they differ in length (causal, where the kernel orders each head's
/// longest first, or a last m-block shorter than the others), else the static round robin;
/// a non-causal launch's partial last wave split over the key range ([`split_tail`]).
pub fn choose(b: u64, h: u64, sq: u64, sk: u64, d: u64, causal: bool, resident: u64) -> Config {
    let block_m = block_m(d, causal);
    let n = tiles(b, h, sq, block_m);
    let (split_from, split_c) = split_tail(n, resident, sk.div_ceil(BLOCK_N), causal);
    let mut cfg = Config {
        block_m,
        grid: 0,
        dynamic: causal || !sq.is_multiple_of(block_m),
        split_from,
        split_c,
    };
    cfg.grid = units(&cfg, n).min(resident.max(1));
    cfg
}

/// Threads per CTA: one producer warpgroup and block_m / 64 consumer warpgroups.
pub fn threads(block_m: u64) -> u32 {
    (128 * (block_m / 64 + 1)) as u32
}

/// K/V pipeline stages for head dimension `d` (`MHA_WG_STAGES_D64` / `_D128` in the kernel).
pub fn stages(d: u64) -> u64 {
    if d == 128 {
        2
    } else {
        4
    }
}

/// Dynamic shared memory: 1 KiB alignment slack, the Q tile, `stages` K and V tiles, the O
/// staging tile of the TMA-store epilogue and 256 bytes of mbarriers (`Layout::SMEM` in the
/// kernel).
pub fn smem_bytes(d: u64, block_m: u64) -> u32 {
    (1024 + block_m * d * 2 + 2 * stages(d) * BLOCK_N * d * 2 + block_m * d * 2 + 256) as u32
}

/// Whether the wgmma kernel can run this case on this device: compute capability 9.0,
/// bf16/fp16, head dimension 64 or 128. `Err` carries the reason when it cannot.
pub fn usable(gpu: &Gpu, case: &Case) -> std::result::Result<(), String> {
    let d = case.shape.get("d");
    if gpu.info.compute_capability != "9.0" {
        return Err(format!(
            "it needs compute capability 9.0 (sm_90a), this device is {}",
            gpu.info.compute_capability
        ));
    }
    if !matches!(case.dtype, Dtype::Bf16 | Dtype::Fp16) {
        return Err(format!("it supports bf16/fp16, not {}", case.dtype.name()));
    }
    if d != 64 && d != 128 {
        return Err(format!("it supports d = 64 or 128, not {d}"));
    }
    Ok(())
}

/// The kernel entry point for a dtype, head dimension, tile height and mask.
pub fn entry(dtype: Dtype, d: u64, block_m: u64, causal: bool) -> String {
    let ty = if dtype == Dtype::Bf16 { "bf16" } else { "fp16" };
    format!(
        "mha_wgmma_{ty}_d{d}{}{}",
        if block_m == 192 { "_bm192" } else { "" },
        if causal { "_causal" } else { "" }
    )
}

/// Prepares the wgmma kernel for O = softmax(Q·Kᵀ/sqrt(d) + mask)·V; q, k, v, o are device
/// pointers. The caller has checked [`usable`].
pub fn prepare(gpu: &mut Gpu, case: &Case, q: u64, k: u64, v: u64, o: u64) -> Result<Prepared> {
    let s = &case.shape;
    let (b, h, hkv) = (s.get("b"), s.get("h"), s.get("hkv"));
    let (sq, sk, d) = (s.get("sq"), s.get("sk"), s.get("d"));
    let causal = s.get("causal") == 1;
    let block_m = block_m(d, causal);
    let name = entry(case.dtype, d, block_m, causal);
    let module = gpu.module("mha_wgmma.cu")?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    let smem = smem_bytes(d, block_m);
    gpu.set_max_dynamic_smem(f, smem)?;
    let per_sm = gpu.max_active_blocks(f, threads(block_m), smem)? as u64;
    let cfg = choose(b, h, sq, sk, d, causal, gpu.info.sm_count as u64 * per_sm);
    let n_tiles = tiles(b, h, sq, block_m);
    let tm_q = tensor_map_16bit(case, q, &[d, sq, b * h], &[64, block_m as u32, 1])?;
    let tm_k = tensor_map_16bit(case, k, &[d, sk, b * hkv], &[64, BLOCK_N as u32, 1])?;
    let tm_v = tensor_map_16bit(case, v, &[d, sk, b * hkv], &[64, BLOCK_N as u32, 1])?;
    let tm_o = tensor_map_16bit(case, o, &[d, sq, b * h], &[64, 64, 1])?;
    // The dynamic tile counter: two u32 words zeroed once here (in stream order before the
    // first launch); each launch's last CTA zeroes them again.
    let sched = if cfg.dynamic {
        let buf = gpu.alloc(8, &format!("{} tile counter", case.name()))?;
        gpu.fill_pattern(&buf, 4, 0)?;
        Some(buf)
    } else {
        None
    };
    // Split-KV tail: each chunk's partial records (one per consumer thread) and a counter per
    // (split tile, consumer warpgroup), zeroed once here; the merging warpgroup zeroes its
    // counter again for the next launch.
    let split = if cfg.split_c > 1 {
        let split_tiles = n_tiles - cfg.split_from;
        let wgs = block_m / 64;
        let floats = split_tiles * cfg.split_c * wgs * 128 * split_record_floats(d);
        let what = format!("{} split-KV partials", case.name());
        let part = gpu.alloc((floats * 4) as usize, &what)?;
        let cnt = gpu.alloc((split_tiles * wgs * 4) as usize, &what)?;
        gpu.fill_pattern(&cnt, 4, 0)?;
        Some((part, cnt))
    } else {
        None
    };
    let dims = Dims {
        grid: (cfg.grid as u32, 1, 1),
        block: (threads(block_m), 1, 1),
        smem,
    };
    let scale_log2 = (default_scale(d) * std::f64::consts::LOG2_E) as f32;
    let args = [
        KernelArg::TensorMap(tm_q),
        KernelArg::TensorMap(tm_k),
        KernelArg::TensorMap(tm_v),
        KernelArg::TensorMap(tm_o),
        KernelArg::Ptr(o),
        KernelArg::Ptr(sched.as_ref().map_or(0, |buf| buf.ptr())),
        KernelArg::I32(b as i32),
        KernelArg::I32(h as i32),
        KernelArg::I32(hkv as i32),
        KernelArg::I32(sq as i32),
        KernelArg::I32(sk as i32),
        KernelArg::F32(scale_log2),
        KernelArg::I32(cfg.split_from as i32),
        KernelArg::I32(cfg.split_c as i32),
        KernelArg::Ptr(split.as_ref().map_or(0, |(part, _)| part.ptr())),
        KernelArg::Ptr(split.as_ref().map_or(0, |(_, cnt)| cnt.ptr())),
    ];
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| {
            let _keep = (&sched, &split);
            gpu.launch(f, dims, &args)
        }),
        compile_s,
        source_hash: hash,
        code_hash: String::new(),
        variant: format!(
            "{name} (tma+wgmma, {} consumer WGs ping-pong, BM={block_m}, BN={BLOCK_N}, {} stages, \
             intra-WG overlap, TMA-store epilogue, persistent grid {} of {} tiles, {} tiles{})",
            block_m / 64,
            stages(d),
            cfg.grid,
            n_tiles,
            if cfg.dynamic { "dynamic" } else { "static" },
            if cfg.split_c > 1 {
                format!(
                    ", split-KV tail: last {} tiles in {} key chunks",
                    n_tiles - cfg.split_from,
                    cfg.split_c
                )
            } else {
                String::new()
            }
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smem_matches_the_kernel_recipe() {
        // The numbers in the header of kernels/mha_wgmma.cu.
        assert_eq!(smem_bytes(64, 128), 165_120);
        assert_eq!(smem_bytes(128, 128), 197_888);
        assert_eq!(smem_bytes(64, 192), 181_504);
        for (d, bm) in [(64, 128), (128, 128), (64, 192)] {
            assert!(u64::from(smem_bytes(d, bm)) <= super::super::MAX_DYNAMIC_SMEM);
        }
    }

    #[test]
    fn entry_names() {
        assert_eq!(
            entry(Dtype::Bf16, 128, 128, true),
            "mha_wgmma_bf16_d128_causal"
        );
        assert_eq!(entry(Dtype::Fp16, 64, 128, false), "mha_wgmma_fp16_d64");
        assert_eq!(
            entry(Dtype::Bf16, 64, 192, true),
            "mha_wgmma_bf16_d64_bm192_causal"
        );
    }

    #[test]
    fn block_m_per_shape() {
        assert_eq!(block_m(128, false), 128);
        assert_eq!(block_m(128, true), 128);
        assert_eq!(block_m(64, false), 192);
        assert_eq!(block_m(64, true), 128);
    }

    #[test]
    fn persistent_grid_and_scheduler() {
        let c = choose(4, 32, 4096, 4096, 128, true, 132);
        assert_eq!(
            c,
            Config {
                block_m: 128,
                grid: 132,
                dynamic: true,
                split_from: 4096,
                split_c: 1
            }
        );
        // Equal tiles: static round robin; 4096 tiles = 31 waves of 132 + 4, each split into
        // 8 chunks of 4 of the 32 key tiles.
        let nc = choose(4, 32, 4096, 4096, 128, false, 132);
        assert!(!nc.dynamic);
        assert_eq!((nc.grid, nc.split_from, nc.split_c), (132, 4092, 8));
        assert_eq!(units(&nc, 4096), 4092 + 32);
        // A short last m-block (512 = 2·192 + 128): dynamic; 3072 = 23 · 132 + 36 tiles, but
        // 4 key tiles are too few to split.
        let d64 = choose(32, 32, 512, 512, 64, false, 132);
        assert_eq!((d64.block_m, d64.grid, d64.dynamic), (192, 132, true));
        assert_eq!((d64.split_from, d64.split_c), (3072, 1));
        // Fewer tiles than SMs: one CTA per tile, unless the keys are long enough to split.
        assert_eq!(choose(1, 2, 17, 17, 128, false, 132).grid, 2);
        let few = choose(1, 2, 17, 8192, 128, false, 132);
        assert_eq!((few.split_from, few.split_c, few.grid), (0, 16, 32));
        assert_eq!(tiles(32, 32, 512, 192), 3 * 32 * 32);
        assert_eq!(threads(192), 512);
        assert_eq!(threads(128), 384);
    }

    #[test]
    fn split_tail_rule() {
        // Causal launches and full last waves never split.
        assert_eq!(split_tail(4096, 132, 32, true), (4096, 1));
        assert_eq!(split_tail(264, 132, 33, false), (264, 1));
        // Chunks: bounded by resident / rem, n_kv / 4 and 16.
        assert_eq!(split_tail(4096, 132, 128, false), (4092, 16));
        assert_eq!(split_tail(4096, 132, 32, false), (4092, 8));
        assert_eq!(split_tail(200, 132, 128, false), (200, 1));
        assert_eq!(split_tail(190, 132, 128, false), (132, 2));
        assert_eq!(split_tail(100, 132, 128, false), (100, 1));
        assert_eq!(split_tail(60, 132, 128, false), (0, 2));
        // Too few key tiles for two chunks of four.
        assert_eq!(split_tail(4096, 132, 7, false), (4096, 1));
        for tiles in 1..400u64 {
            for n_kv in [1u64, 4, 8, 9, 33, 128] {
                let (from, c) = split_tail(tiles, 132, n_kv, false);
                assert!(from <= tiles && (1..=SPLIT_MAX).contains(&c));
                if c > 1 {
                    // Every chunk unit has a CTA of its own in the last wave, and each chunk
                    // holds at least SPLIT_MIN_KEY_TILES key tiles.
                    assert!((tiles - from) * c <= 132);
                    assert!(n_kv / c >= SPLIT_MIN_KEY_TILES);
                    assert_eq!(from % 132, 0);
                }
            }
        }
    }
}
