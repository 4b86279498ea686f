//! The Hopper nsa kernel (`kernels/nsa_wgmma.cu`): the TMA + wgmma attention body of
//! `kernels/mha_wgmma.cu` over the key tiles a 128-token tile selected, masked per element by
//! each token's block multiplicities. Selected branch only (`w = 0`), bs 32 or 64, d 64 or 128,
//! T ≤ 8192 (the tile's list buffers in shared memory), sm_90.

use super::tma::tensor_map_16bit;
use super::MAX_DYNAMIC_SMEM;
use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::nsa::{Params, COUNTS, G_SLC, INDICES, K, Q, V};
use crate::gpu::{Dims, Gpu, KernelArg};

/// The module.
pub const FILE: &str = "nsa_wgmma.cu";
/// Tokens per work tile of the default entries (two consumer warpgroups of 64 rows).
pub const ROWS: usize = 128;
/// Tokens per work tile of the `_bm64` entries (d64: one consumer warpgroup, 2 K/V stages, two
/// CTAs an SM).
pub const SMALL_ROWS: usize = 64;
/// Environment variable that forces the tile: `64` or `128` tokens (unset: [`rows`]).
pub const ROWS_ENV: &str = "KERNELGATE_NSA_WGMMA_ROWS";
/// Keys per key tile.
pub const KEYS: usize = 128;
/// Threads per CTA of a `rows`-token tile: the producer warpgroup and one consumer warpgroup
/// per 64 rows.
pub fn threads(rows: usize) -> u32 {
    (128 * (rows / 64 + 1)) as u32
}
/// Most key tiles per sequence (the union is two 32-bit words).
pub const MAX_KEY_TILES: usize = 64;
/// Most slots per token (multiplicities are bytes).
pub const MAX_SLOTS: usize = 255;

/// K/V pipeline stages for head dim `d` and `rows`-token tiles (`MHA_WG_STAGES_D64` / `_D128`;
/// 2 for the `_bm64` entries).
pub fn stages(d: usize, rows: usize) -> u64 {
    if d == 128 || rows == SMALL_ROWS {
        2
    } else {
        4
    }
}

/// Parses a `KERNELGATE_NSA_WGMMA_ROWS` value (`None`: unset or empty).
pub fn parse_rows(value: Option<&str>) -> std::result::Result<Option<usize>, String> {
    super::parse_choice(ROWS_ENV, value, &[("64", SMALL_ROWS), ("128", ROWS)])
}

/// Tokens per tile for a problem: 64 (two CTAs an SM) at d64 where 128-token tiles give fewer
/// than [`SMALL_TILES_PER_SM`] tiles an SM, else 128. Measured on H100 GPU-ae363cc7 (session 27,
/// both forced, 2 interleaved rounds of the nsa suite), 128-token / 64-token time by 128-token
/// tiles per SM: 0.5–1.1 (t256, t512, t1001, t1111): 1.13–1.19; 1.9 (t1000 and t1024, b2 hq16;
/// t1024 b1 hq32): 0.976–1.065, geomean 1.02; 3.9 (t2048): 0.97–1.04, geomean 0.99.
pub fn rows(p: &Params, sm_count: usize) -> usize {
    let big = p.t.div_ceil(ROWS) * p.hq * p.b;
    if p.d == 64 && big < SMALL_TILES_PER_SM * sm_count {
        SMALL_ROWS
    } else {
        ROWS
    }
}

/// Tiles of 128 tokens per SM below which d64 problems take the 64-token tiles ([`rows`]).
pub const SMALL_TILES_PER_SM: usize = 2;

/// Key tiles of the longest work tile: `⌈T / 128⌉`.
pub fn key_tiles(p: &Params) -> usize {
    p.t.div_ceil(KEYS)
}

/// Dynamic shared memory: `Layout<D, 128, STAGES, 2, true>::SMEM` (Q, the K/V ring, alignment
/// slack and barriers), two list buffers of `nsa_words(128, ⌈T/128⌉)` words and the producer's
/// staging of 128 tokens' S block indices.
pub fn smem_bytes(p: &Params, rows: usize) -> u64 {
    let (d, r) = (p.d as u64, rows as u64);
    let layout = 1024 + r * d * 2 + 2 * stages(p.d, rows) * KEYS as u64 * d * 2 + 256;
    let nkv = key_tiles(p) as u64;
    layout + 2 * 4 * (16 + nkv + r * nkv) + 4 * r * p.s as u64
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
    let smem = smem_bytes(p, ROWS);
    if smem > MAX_DYNAMIC_SMEM {
        return Err(format!(
            "it would need {smem} bytes of shared memory (over {MAX_DYNAMIC_SMEM})"
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

/// The entry point, e.g. `nsa_wgmma_bf16_d64_bs32` or `nsa_wgmma_bf16_d64_bs32_bm64`.
pub fn entry(dt: &str, p: &Params, rows: usize) -> String {
    let small = if rows == SMALL_ROWS { "_bm64" } else { "" };
    format!("nsa_wgmma_{dt}_d{}_bs{}{small}", p.d, p.bs)
}

/// Work tiles: `⌈T/rows⌉` token tiles of every (batch, query head).
pub fn tiles(p: &Params, rows: usize) -> u64 {
    (p.t.div_ceil(rows) * p.hq * p.b) as u64
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
    let rows = match super::from_env(case, ROWS_ENV, parse_rows)? {
        Some(SMALL_ROWS) if p.d != 64 => {
            return Err(Error::Case {
                case: case.name(),
                message: format!(
                    "{ROWS_ENV}=64: the 64-token tiles exist for d = 64 only, not {}",
                    p.d
                ),
            })
        }
        Some(r) => r,
        None => rows(p, gpu.info.sm_count as usize),
    };
    let threads = threads(rows);
    let name = entry(dt, p, rows);
    let module = gpu.module(FILE)?;
    let f = module.function(&name)?;
    let (compile_s, hash) = (module.compile_s, module.source_hash.clone());
    let smem = smem_bytes(p, rows) as u32;
    gpu.set_max_dynamic_smem(f, smem)?;
    let per_sm = gpu.max_active_blocks(f, threads, smem)? as u64;
    if per_sm == 0 {
        return Err(Error::Case {
            case: case.name(),
            message: format!("{name}: no CTA of {threads} threads and {smem} bytes fits an SM"),
        });
    }
    let n_tiles = tiles(p, rows);
    let grid = n_tiles.min(gpu.info.sm_count as u64 * per_sm);
    let i = &bind.inputs;
    let (b, t, hq, h, d) = (p.b as u64, p.t as u64, p.hq as u64, p.h as u64, p.d as u64);
    let tm_q = tensor_map_16bit(case, i[Q], &[d, hq, t, b], &[64, 1, rows as u32, 1])?;
    let tm_k = tensor_map_16bit(case, i[K], &[d, h, t, b], &[64, 1, KEYS as u32, 1])?;
    let tm_v = tensor_map_16bit(case, i[V], &[d, h, t, b], &[64, 1, KEYS as u32, 1])?;
    let sched = gpu.alloc(8, &format!("{} tile counter", case.name()))?;
    gpu.fill_pattern(&sched, 4, 0)?;
    let dims = Dims {
        grid: (grid as u32, 1, 1),
        block: (threads, 1, 1),
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
        code_hash: String::new(),
        variant: format!(
            "{name} (wgmma: {rows} tokens of one query head per tile, union of their selected \
             blocks in {KEYS}-key tiles, TMA + wgmma, {}, {} stages, {per_sm} CTA(s) an SM, \
             persistent grid {grid} of {n_tiles} tiles, dynamic)",
            if rows == ROWS {
                "2 consumer WGs ping-pong"
            } else {
                "1 consumer WG"
            },
            stages(p.d, rows)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::nsa::selected_keys;

    /// A host model of what the kernel's producer warpgroup builds for one tile of `rows` tokens
    /// from `m0` (kernels/mha_wgmma.cu, mha_body's NSA branch), given each token's slots and
    /// count: the ascending key tiles of the union, and per (key tile, row) one byte of block
    /// multiplicity per block of the tile. Kept line for line with the CUDA code.
    fn tile_lists(
        p: &Params,
        m0: usize,
        rows: usize,
        slots: &[(Vec<i32>, i32)],
    ) -> (Vec<usize>, Vec<Vec<u32>>) {
        let nkv = key_tiles(p);
        let mut masks = vec![vec![0u32; rows]; nkv];
        let mut union = 0u64;
        for (i, (idx, count)) in slots.iter().enumerate().take(rows) {
            let tok = m0 + i;
            if tok >= p.t {
                continue;
            }
            let c = (*count).clamp(0, p.s as i32) as usize;
            for &id in &idx[..c] {
                if id >= 0 && id as usize <= tok / p.bs {
                    let key = id as usize * p.bs;
                    let (kvt, kb) = (key / KEYS, (key % KEYS) / p.bs);
                    masks[kvt][i] += 1 << (8 * kb);
                    union |= 1 << kvt;
                }
            }
        }
        let list = (0..nkv).filter(|j| union >> j & 1 == 1).collect();
        (list, masks)
    }

    /// The keys row `i` attends through the lists: every key of a listed tile whose block has
    /// multiplicity m > 0 and key <= token, m times (softmax_nsa's mask and weights).
    fn attended(p: &Params, m0: usize, i: usize, list: &[usize], masks: &[Vec<u32>]) -> Vec<usize> {
        let tok = m0 + i;
        let mut keys = Vec::new();
        for &kvt in list {
            for key in kvt * KEYS..(kvt + 1) * KEYS {
                let m = masks[kvt][i] >> (8 * ((key % KEYS) / p.bs)) & 0xff;
                if key <= tok {
                    keys.extend(std::iter::repeat_n(key, m as usize));
                }
            }
        }
        keys
    }

    proptest::proptest! {
        /// Irregular slots (unsorted, repeated, negative, past the token or the sequence, counts
        /// outside 0..=S) give every row of a tile exactly the reference's key multiset.
        #[test]
        fn lists_attend_the_reference_keys(
            t in 1usize..1100,
            bs in proptest::sample::select(vec![32usize, 64]),
            s in 1usize..12,
            small in proptest::bool::ANY,
            raw in proptest::collection::vec((proptest::collection::vec(-3i32..40, 12), -2i32..14), 128),
            tile in 0usize..9,
        ) {
            let p = Params { b: 1, t, hq: 1, h: 1, d: 64, s, bs, w: 0 };
            let rows = if small { SMALL_ROWS } else { ROWS };
            let m0 = (tile * rows).min((t - 1) / rows * rows);
            let slots: Vec<(Vec<i32>, i32)> =
                raw.into_iter().map(|(idx, c)| (idx[..s].to_vec(), c)).collect();
            let (list, masks) = tile_lists(&p, m0, rows, &slots);
            for (i, (idx, count)) in slots.iter().enumerate().take(rows) {
                let tok = m0 + i;
                if tok >= t {
                    continue;
                }
                let mut want = selected_keys(&p, tok, idx, (*count).max(0) as usize);
                want.sort_unstable();
                let got = attended(&p, m0, i, &list, &masks);
                proptest::prop_assert_eq!(got, want, "token {} slots {:?} count {}", tok, idx, count);
            }
        }
    }

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
        let base =
            |d| smem_bytes(&params(128, d, 4, 32, 0), ROWS) - 2 * 4 * (16 + 1 + 128) - 512 * 4;
        assert_eq!(base(64), 148_736);
        assert_eq!(base(128), 165_120);
        // _bm64 (d64, 2 stages): Layout<64, 128, 2, 1, true>::SMEM = 75008; two fit an SM.
        let small = smem_bytes(&params(1024, 64, 16, 32, 0), SMALL_ROWS);
        assert_eq!(small, 75_008 + 8 * (16 + 8 + 64 * 8) + 4 * 64 * 16);
        assert!(2 * (small + 1024) <= 233_472);
        // t = 8192 fits at d64; at d128 the list buffers and the staging take too much.
        assert_eq!(
            smem_bytes(&params(8192, 128, 4, 32, 0), ROWS),
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
    fn tile_rows_by_grid() {
        let p = |b, t, hq, d| Params {
            b,
            t,
            hq,
            h: hq,
            d,
            s: 4,
            bs: 32,
            w: 0,
        };
        // 132 SMs: below 264 tiles of 128 tokens, 64-token tiles (d64 only).
        assert_eq!(rows(&p(2, 512, 16, 64), 132), SMALL_ROWS);
        assert_eq!(rows(&p(2, 1024, 16, 64), 132), SMALL_ROWS);
        assert_eq!(rows(&p(2, 2048, 16, 64), 132), ROWS);
        assert_eq!(rows(&p(1, 777, 4, 128), 132), ROWS);
        // A smaller GPU: the same problem fills it with 128-token tiles.
        assert_eq!(rows(&p(2, 1024, 16, 64), 100), ROWS);
    }

    #[test]
    fn names_and_tiles() {
        let p = params(1000, 64, 8, 32, 0);
        assert_eq!(entry("bf16", &p, ROWS), "nsa_wgmma_bf16_d64_bs32");
        assert_eq!(
            entry("fp16", &p, SMALL_ROWS),
            "nsa_wgmma_fp16_d64_bs32_bm64"
        );
        assert_eq!(key_tiles(&p), 8);
        assert_eq!(tiles(&p, ROWS), 8 * 16 * 2);
        assert_eq!(tiles(&p, SMALL_ROWS), 16 * 16 * 2);
        assert_eq!(threads(ROWS), 384);
        assert_eq!(threads(SMALL_ROWS), 256);
        assert_eq!(parse_rows(Some("64")), Ok(Some(SMALL_ROWS)));
        assert_eq!(parse_rows(None), Ok(None));
        assert!(parse_rows(Some("96")).unwrap_err().contains(ROWS_ENV));
    }
}
