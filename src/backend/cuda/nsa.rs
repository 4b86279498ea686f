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
//! part of the causal prefix). The pairs kernel (`kernels/nsa_pairs.cu`) buckets (token, slot)
//! pairs by block, so its work follows the selection; it costs three launches and a bucketing
//! pass, and wins at G = 1 once the sequence holds many blocks per slot. The choice: local where
//! [`local_in_auto`] says, else pairs where [`pairs_in_auto`] says, else tiled for `G ≤ TILED_MAX_G` (4) where it can run
//! ([`tiled_fits`]), else tiled where [`tiled_shared_in_auto`] says (d128, G ≥ 16, a
//! selection that covers at least half the sequence: the tokens of a CTA share most blocks),
//! else grouped. The local kernel (`kernels/nsa_local.cu`, session 21) gives
//! a CTA R consecutive tokens of one KV head at G = 1, buckets their pairs by block in shared
//! memory and keeps the partial records there, in one launch; since session 22 the automatic
//! choice takes it first where [`local_in_auto`] says. On sm_90 the wgmma kernel
//! (`kernels/nsa_wgmma.cu`, session 27: the union of a 128-token tile's blocks at FlashAttention-3
//! speed) comes before all of them where [`wgmma_in_auto`] says.
//! `KERNELGATE_NSA_KERNEL=grouped|tiled|pairs|local|wgmma` forces one; forcing one
//! where it cannot run is an error. The record's `variant` names the kernel that ran.

use crate::backend::{Bindings, Prepared};
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::family::nsa::{Params, CHUNK, COUNTS, G_SLC, G_SWA, INDICES, K, Q, V};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable that forces the nsa kernel: `grouped` (kernels/nsa.cu), `tiled`
/// (kernels/nsa_tiled.cu), `pairs` (kernels/nsa_pairs.cu), `local` (kernels/nsa_local.cu) or
/// `wgmma` (kernels/nsa_wgmma.cu, sm_90).
pub const KERNEL_ENV: &str = "KERNELGATE_NSA_KERNEL";

/// Which of our nsa kernels runs a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `kernels/nsa.cu`: one warp per token, its G query heads as the tile rows.
    Grouped,
    /// `kernels/nsa_tiled.cu`: 64 rows = G heads × 64/G consecutive tokens per CTA.
    Tiled,
    /// `kernels/nsa_pairs.cu`: (token, KV head, slot) pairs bucketed by their block, 64 rows of
    /// one block per CTA, partial softmax records merged per query row (three launches).
    Pairs,
    /// `kernels/nsa_local.cu`: one CTA per R consecutive tokens of a (batch, KV head), their
    /// pairs bucketed by block in shared memory, 16-row tiles per warp, partial records merged
    /// in shared memory (one launch; G = 1; not in the automatic choice until measured).
    Local,
    /// `kernels/nsa_wgmma.cu`: 128 tokens of one query head per tile over the union of their
    /// blocks, TMA + wgmma (the `mha_wgmma` body), per-element multiplicity masks (sm_90, w = 0,
    /// T ≤ 8192; [`super::nsa_wgmma`]).
    Wgmma,
}

/// The values of `KERNELGATE_NSA_KERNEL`.
const CHOICES: [(&str, Kernel); 5] = [
    ("grouped", Kernel::Grouped),
    ("tiled", Kernel::Tiled),
    ("pairs", Kernel::Pairs),
    ("local", Kernel::Local),
    ("wgmma", Kernel::Wgmma),
];

/// The local kernel's module.
pub const LOCAL_FILE: &str = "nsa_local.cu";
/// Most (token, slot) pairs one CTA of the local kernel buckets (`NSL_MAX_PAIRS`).
pub const LOCAL_MAX_PAIRS: usize = 2048;
/// Most tokens one CTA of the local kernel takes (its bucket entries hold `record << 8 | token`).
pub const LOCAL_MAX_TOKENS: usize = 256;
/// Rows of one tile of the local kernel (`NSL_ROWS`: one warp's m16).
pub const LOCAL_ROWS: usize = 16;
/// Largest dynamic shared memory the local kernel is launched with: the 227 KiB an sm_90 CTA
/// may opt into, less 1 KiB for its static shared memory (the scan's sums, 128 bytes by ptxas).
pub const LOCAL_MAX_SMEM: u64 = super::MAX_DYNAMIC_SMEM - 1024;
/// Tokens per CTA the local kernel is tried with, largest first ([`local_config`]).
pub const LOCAL_TOKENS: [usize; 5] = [256, 128, 64, 32, 16];

/// Environment variable that sets the local kernel's launch, `R:NW` or `R:NW:ST` (tokens per CTA,
/// warps, K/V stages per warp; e.g. `128:16` or `128:8:2`), for tuning; unset: [`local_config`].
/// A launch that cannot run is an error.
pub const LOCAL_ENV: &str = "KERNELGATE_NSA_LOCAL";

/// The launches the local kernel is compiled with for head dim `d` and block size `bs`, as
/// (warps, K/V stages per warp) (its `_w<NW>` and `_w<NW>_s2` entries), in the order
/// [`local_config`] tries them: each warp owns `stages` K and V buffers of `bs × d` 2-byte
/// elements, 64–128 KiB in all; with two stages a warp copies the next tile while it computes
/// the current one.
pub fn local_launches(d: usize, bs: usize) -> &'static [(u32, u32)] {
    match (d, bs) {
        (64, 32) => &[(16, 1), (8, 2), (8, 1)],
        (64, 64) | (128, 32) => &[(8, 1), (4, 2), (4, 1)],
        (128, 64) => &[(4, 1), (2, 2), (2, 1)],
        _ => &[],
    }
}

/// Tile descriptors the local kernel reserves for `r` tokens: `⌈r·S/16⌉ + min(⌈T/bs⌉, r·S)`
/// (every bucket's pairs in tiles of 16, one partial tile per block).
pub fn local_max_tiles(p: &Params, r: usize) -> u64 {
    let pairs = (r * p.s) as u64;
    pairs.div_ceil(LOCAL_ROWS as u64) + (p.blocks() as u64).min(pairs)
}

/// Dynamic shared memory of the local kernel with `r` tokens per CTA, `nw` warps and `stages`
/// K/V buffers per warp, laid out as in `kernels/nsa_local.cu` (which traps when it is given
/// less): the warps' K/V buffers, the CTA's Q rows (`r × d`),
/// one record per (token, slot) (its output row in the storage dtype and (max, sum) in fp32),
/// the bucket entries (4 bytes per pair, padded to 8), the tile descriptors (8 bytes each),
/// three ints per block of the sequence and one mask of valid slots per token.
pub fn local_smem_bytes(p: &Params, r: usize, nw: u32, stages: u32) -> u64 {
    let pairs = (r * p.s) as u64;
    let kv = (nw * stages) as u64 * 2 * (p.bs * p.d) as u64 * 2;
    kv + 2 * (r * p.d) as u64
        + pairs * (2 * p.d as u64 + 8)
        + 4 * (pairs + (pairs & 1))
        + 8 * local_max_tiles(p, r)
        + 12 * p.blocks() as u64
        + 4 * r as u64
}

/// Whether the local kernel can launch `r` tokens per CTA with `nw` warps of `stages` K/V
/// buffers each (`Err`: why not).
pub fn local_launch_fits(
    p: &Params,
    r: usize,
    nw: u32,
    stages: u32,
) -> std::result::Result<(), String> {
    if !local_launches(p.d, p.bs).contains(&(nw, stages)) {
        return Err(format!(
            "{nw} warps x {stages} stages: d{} bs{} is compiled with (warps, stages) {:?}",
            p.d,
            p.bs,
            local_launches(p.d, p.bs)
        ));
    }
    if r == 0 || r > LOCAL_MAX_TOKENS {
        return Err(format!(
            "{r} tokens a CTA: 1 to {LOCAL_MAX_TOKENS} (a bucket entry holds the token in 8 bits)"
        ));
    }
    if r * p.s > LOCAL_MAX_PAIRS {
        return Err(format!(
            "{r} tokens x {} slots: 1 to {LOCAL_MAX_PAIRS} pairs a CTA",
            p.s
        ));
    }
    let smem = local_smem_bytes(p, r, nw, stages);
    if smem > LOCAL_MAX_SMEM {
        return Err(format!(
            "{r} tokens with {nw} warps x {stages} stages need {smem} bytes of shared memory (over {LOCAL_MAX_SMEM})"
        ));
    }
    Ok(())
}

/// A launch of the local kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalLaunch {
    /// Tokens per CTA.
    pub r: usize,
    /// Warps per CTA.
    pub warps: u32,
    /// K/V buffers per warp (2: the next tile's copies overlap the current tile).
    pub stages: u32,
}

impl LocalLaunch {
    /// The entry point for dtype name `dt` ("bf16") and problem `p`.
    pub fn entry(&self, dt: &str, p: &Params) -> String {
        let s2 = if self.stages == 2 { "_s2" } else { "" };
        format!("nsa_local_{dt}_d{}_bs{}_w{}{s2}", p.d, p.bs, self.warps)
    }
}

/// The local kernel's default launch: the first of [`local_launches`] (most warps first) with
/// the largest of [`LOCAL_TOKENS`] that fits ([`local_launch_fits`]) (`None`: none fits). More
/// warps keep more tiles' K/V loads in flight; more tokens fill the tiles better (a session-21
/// simulation of the suite's generator at t2048 s4 bs32: 66% of the rows live at 128 tokens,
/// 80% at 256). Which matters more is to be measured (`KERNELGATE_NSA_LOCAL`).
pub fn local_config(p: &Params) -> Option<LocalLaunch> {
    local_launches(p.d, p.bs)
        .iter()
        .find_map(|&(warps, stages)| {
            LOCAL_TOKENS
                .into_iter()
                .find(|&r| local_launch_fits(p, r, warps, stages).is_ok())
                .map(|r| LocalLaunch { r, warps, stages })
        })
}

/// Parses a `KERNELGATE_NSA_LOCAL` value, `R:NW` or `R:NW:ST` (`None`: unset or empty).
pub fn parse_local(value: Option<&str>) -> std::result::Result<Option<LocalLaunch>, String> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let bad = || {
        format!(
            "{LOCAL_ENV}={v:?}: expected R:NW or R:NW:ST (tokens per CTA, warps, K/V stages; e.g. 128:16 or 128:8:2)"
        )
    };
    let parts: Vec<&str> = v.split(':').map(str::trim).collect();
    if parts.len() != 2 && parts.len() != 3 {
        return Err(bad());
    }
    let r = parts[0].parse().map_err(|_| bad())?;
    let warps = parts[1].parse().map_err(|_| bad())?;
    let stages = match parts.get(2) {
        Some(x) => x.parse().map_err(|_| bad())?,
        None => 1,
    };
    Ok(Some(LocalLaunch { r, warps, stages }))
}

/// Whether the local kernel can run a problem (`Err`: why not): G = 1, no sliding window,
/// head dim 64 or 128, blocks of 32 or 64 keys, at most 32 slots (a merge warp's lanes), and
/// some [`local_config`].
pub fn local_fits(p: &Params) -> std::result::Result<(), String> {
    if p.g() != 1 {
        return Err(format!(
            "it takes one query head per KV head, not G = {}",
            p.g()
        ));
    }
    if p.w > 0 {
        return Err("it has no sliding-window branch (w > 0)".into());
    }
    if p.d != 64 && p.d != 128 {
        return Err(format!("it takes head dim 64 or 128, not {}", p.d));
    }
    if p.bs != 32 && p.bs != 64 {
        return Err(format!("it takes blocks of 32 or 64 keys, not {}", p.bs));
    }
    if p.s > 32 {
        return Err(format!("it merges at most 32 slots, not {}", p.s));
    }
    if (p.b * p.h) as u64 > 65_535 {
        return Err("b·h exceeds the grid's second dimension".into());
    }
    if local_config(p).is_none() {
        return Err(format!(
            "{} slots and {} blocks leave no token range whose records fit {LOCAL_MAX_SMEM} bytes of shared memory",
            p.s,
            p.blocks()
        ));
    }
    Ok(())
}

/// Query rows per tile CTA of the pairs kernel (`NSP_ROWS`).
pub const PAIRS_ROWS: usize = 64;
/// Threads of its bucketing CTA (`NSP_BUCKET_THREADS`).
pub const PAIRS_BUCKET_THREADS: u32 = 512;
/// Query rows (warps) per CTA of its merge (`NSP_MERGE_WARPS`).
pub const PAIRS_MERGE_WARPS: u32 = 8;
/// Threads of its tile CTA (`NSP_THREADS`: 4 warps of 16 rows).
pub const PAIRS_TILE_THREADS: u32 = 128;
/// Shared memory of its bucketing CTA per block of the sequence: three ints (count, start, fill).
pub const PAIRS_BUCKET_SMEM_PER_BLOCK: usize = 12;
/// Most blocks per sequence it buckets: as many as the bucketing CTA's 48 KiB of shared memory
/// holds without an opt-in.
pub const PAIRS_MAX_BLOCKS: usize = 48 * 1024 / PAIRS_BUCKET_SMEM_PER_BLOCK;
/// Largest workspace (bucket entries, tile descriptors, partial records) it allocates.
pub const PAIRS_MAX_WORKSPACE: u64 = 4 << 30;

/// Tile descriptors the pairs kernel reserves per (batch, KV head): every bucket's pairs in
/// tiles of `64 / G`, at most `⌈T·S / (64/G)⌉ + ⌈T/bs⌉` (one partial tile per block).
pub fn pairs_max_tiles(p: &Params) -> u64 {
    let rp = (PAIRS_ROWS / p.g()).max(1) as u64;
    ((p.t * p.s) as u64).div_ceil(rp) + p.blocks() as u64
}

/// The pairs kernel's device workspace, bytes: bucket entries (4 per slot), tile descriptors
/// (16 each) and counts (4 per (batch, KV head)), and one partial record per (query row, slot):
/// its output row in the storage dtype (2·D bytes) and (max, sum) in fp32 (8 bytes).
pub fn pairs_workspace(p: &Params) -> [u64; 5] {
    let bh = (p.b * p.h) as u64;
    let rows = (p.b * p.t * p.hq * p.s) as u64;
    [
        4 * bh * (p.t * p.s) as u64,
        16 * bh * pairs_max_tiles(p),
        4 * bh,
        2 * p.d as u64 * rows,
        8 * rows,
    ]
}

/// Whether the pairs kernel can run a problem (`Err`: why not): no sliding window (it computes
/// the selected branch only), block sizes 32 or 64, at most 32 slots (a merge warp's lanes), G
/// dividing its 64 rows, at most [`PAIRS_MAX_BLOCKS`] blocks, and a workspace of at most
/// [`PAIRS_MAX_WORKSPACE`].
pub fn pairs_fits(p: &Params) -> std::result::Result<(), String> {
    if p.w > 0 {
        return Err("it has no sliding-window branch (w > 0)".into());
    }
    if p.bs != 32 && p.bs != 64 {
        return Err(format!("it takes blocks of 32 or 64 keys, not {}", p.bs));
    }
    if p.s > 32 {
        return Err(format!("it merges at most 32 slots, not {}", p.s));
    }
    if p.g() == 0 || !PAIRS_ROWS.is_multiple_of(p.g()) {
        return Err(format!(
            "G = {} does not divide its {PAIRS_ROWS} rows per tile",
            p.g()
        ));
    }
    if p.blocks() > PAIRS_MAX_BLOCKS {
        return Err(format!(
            "{} blocks exceed its {PAIRS_MAX_BLOCKS}",
            p.blocks()
        ));
    }
    if (p.t * p.s) as u64 >= i32::MAX as u64 || (p.b * p.h) as u64 > 65_535 {
        return Err("t·s or b·h too large for its indexing".into());
    }
    let bytes: u64 = pairs_workspace(p).iter().sum();
    if bytes > PAIRS_MAX_WORKSPACE {
        return Err(format!(
            "it would need {bytes} bytes of workspace (over {PAIRS_MAX_WORKSPACE})"
        ));
    }
    Ok(())
}

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

/// Blocks per slot from which the automatic choice takes the pairs kernel at G = 1
/// ([`pairs_in_auto`]).
pub const PAIRS_MIN_BLOCKS_PER_SLOT: usize = 16;

/// Whether the automatic choice runs the pairs kernel: G = 1, no window, and at least
/// [`PAIRS_MIN_BLOCKS_PER_SLOT`] blocks in the sequence per selected slot, where it can run.
/// The tiled kernel computes the union of 64 consecutive tokens' blocks, which approaches every
/// causal block as T/bs grows past S, while the pairs kernel's work follows the selection.
/// Measured through the harness, pairs / tiled time in the same run (H100 GPU-e07ca4d5 and
/// GPU-54f53eb9, `docs/kernels/session20/`), G = 1 by blocks per slot:
/// - 4 (t2048 s16 bs32, t4096 s16 bs64): 1.6–2.2× slower;
/// - 8: slower at t1024 s4 bs32 (1.2×) and t2048 s8 bs32 (1.2–1.3×), faster at t2048 s4 bs64
///   (0.87–0.88) and t8192 s16 bs64 (0.90);
/// - 16 and up: faster everywhere measured — t2048 s4 bs32 0.80–0.83, t4096 s8 bs32 0.88,
///   t8192 s16 bs32 0.84, t4096 s4 bs32 0.61, t8192 s4 bs32 0.44, d128 t4096 s4 bs64 0.60 and
///   t16384 s16 bs64 0.54;
/// - below 8 (t ≤ 1024): 1.2–3× slower (three launches and a bucketing pass cost about 15 µs
///   even on small problems).
///
/// At G = 4 it was mixed (0.96 at t8192 s4 bs32, 1.07–1.13 at t2048 s4 bs32), so G > 1 stays on
/// the tiled kernel.
pub fn pairs_in_auto(p: &Params) -> bool {
    p.g() == 1 && p.blocks() >= PAIRS_MIN_BLOCKS_PER_SLOT * p.s && pairs_fits(p).is_ok()
}

/// The pairs kernel's module. A kernel set without it (a `KERNELGATE_BASE` revision from before
/// session 20) gets the choice it had, so a same-run A/B times what that revision ran.
pub const PAIRS_FILE: &str = "nsa_pairs.cu";

/// Blocks per slot from which the automatic choice takes the local kernel at G = 1
/// ([`local_in_auto`]).
pub const LOCAL_MIN_BLOCKS_PER_SLOT: usize = 8;

/// Whether the automatic choice runs the local kernel: G = 1, no window, not d128 with 64-key
/// blocks, at least [`LOCAL_MIN_BLOCKS_PER_SLOT`] blocks in the sequence per selected slot,
/// where it can run ([`local_fits`]). Measured through the harness on an H100 (GPU-90b83895,
/// session 22, `docs/kernels/session22/`), local / the fastest of pairs and tiled in the same run:
/// - 8 or more blocks per slot, d64: t1024 s4 bs32 0.66, t2048 s4 bs32 0.57, t2048 s8 bs32 0.76,
///   t2048 s4 bs64 0.72, t4096 s4 bs32 0.64, t8192 s4 bs32 0.79, t8192 s16 bs32 0.95; d128 bs32:
///   t2049 s8 0.69;
/// - d128 with 64-key blocks (4 warps of 64-key K/V, 64 tokens a CTA): 1.06–3.1× slower than
///   pairs (t777 s4, t4096 s4, t16384 s16);
/// - fewer blocks per slot: tiled is ahead (t512 s8 0.88, t1000 s8 0.91, t2048 s16 0.75,
///   t1024 s16 bs64 0.47 of local's time), but for t1500 s32 hq4 (1.24× slower) and t300 s8
///   (1.14×), which stay on tiled.
pub fn local_in_auto(p: &Params) -> bool {
    p.g() == 1
        && p.w == 0
        && !(p.d == 128 && p.bs == 64)
        && p.blocks() >= LOCAL_MIN_BLOCKS_PER_SLOT * p.s
        && local_fits(p).is_ok()
}

/// Smallest G at which [`tiled_shared_in_auto`] takes the tiled kernel over the grouped one.
pub const TILED_SHARED_MIN_G: usize = 16;

/// Whether the automatic choice takes the tiled kernel above [`TILED_MAX_G`]: head dim 128,
/// `G ≥` [`TILED_SHARED_MIN_G`], `2·S·bs ≥ T` (the selection covers at least half of the
/// sequence, so the 64/G tokens of a CTA share most of their blocks and the union it loads is
/// far smaller than the blocks the grouped kernel's warps load one token at a time) and a launch
/// that fits. Measured on H200 a4eca7c8 (session 24, both forced on the whole nsa suite, every
/// case checked): tiled took 0.76–0.96 of the grouped time on the four G = 16 d128 shapes with
/// `S·bs/T = 0.5` (b32 t1024 s16 bs32: 842 against 951 µs), and 1.52–1.74× on those with 0.06 and
/// 0.016 (t16384 and t65536, s16 bs64); at d64 it lost at G = 8 (0.46: 1.07×) and tied at G = 32
/// (0.25), so d64 stays grouped.
pub fn tiled_shared_in_auto(p: &Params) -> bool {
    p.d == 128 && p.g() >= TILED_SHARED_MIN_G && 2 * p.s * p.bs >= p.t && tiled_fits(p).is_ok()
}

/// How many keys the sequence may hold per selected key (`T ≤ r·S·bs`) for the automatic
/// choice to take the wgmma kernel over `other`, the choice without it ([`wgmma_in_auto`]):
/// the wgmma kernel's work grows with the causal prefix (about T/2 keys a token), the others'
/// with the selection (S·bs keys a token), at a third to a half of its speed.
pub fn wgmma_max_density(other: Kernel) -> usize {
    match other {
        // Both compute the union of a tile's blocks: wgmma at any density (`other` is never
        // wgmma itself; the arm keeps the match whole).
        Kernel::Tiled | Kernel::Wgmma => usize::MAX,
        Kernel::Pairs => 16,
        Kernel::Local => 8,
        Kernel::Grouped => 4,
    }
}

/// Whether the automatic choice runs the wgmma kernel (sm_90 only, [`KernelFiles::wgmma`]) in
/// place of `other`: where it can run ([`super::nsa_wgmma::fits`]) and the sequence holds at
/// most [`wgmma_max_density`]`(other)` keys per selected key. Measured on H200 GPU-36aeb9a0
/// (session 27, `docs/kernels/session27/`), wgmma forced / the choice without it, same run:
/// - every tiled case with w = 0: 0.48–0.98 (b32 t1024 hq16 h1 d128 s16: 416 against 836 µs
///   on the H100 baselines, session 26);
/// - local: T = 8·S·bs 0.77 (t2048 s8 bs32), 0.99 (t2048 s4 bs64), 1.06 (t1024 s4 bs32);
///   T = 16·S·bs 1.32 (t2048 s4 bs32); 64·S·bs 2.59 (t8192 s4 bs32);
/// - pairs: T = 16·S·bs 0.71 (d128 t4096 s4 bs64);
/// - grouped: G = 32 T = 4·S·bs 0.88 (t1024 s4 bs64), G = 8 2.2·S·bs 0.70 (t1111 s8 bs64,
///   on the H100 before the launch-wide tile order).
pub fn wgmma_in_auto(p: &Params, other: Kernel) -> bool {
    super::nsa_wgmma::fits(p).is_ok()
        && (p.t as u128) <= wgmma_max_density(other) as u128 * (p.s * p.bs) as u128
}

/// Which of the later nsa kernels a kernel set holds: an older revision given as a same-run
/// A/B base gets the choice it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelFiles {
    /// [`PAIRS_FILE`] is present.
    pub pairs: bool,
    /// [`LOCAL_FILE`] is present.
    pub local: bool,
    /// [`super::nsa_wgmma::FILE`] is present and the device can run it (sm_90).
    pub wgmma: bool,
}

impl KernelFiles {
    /// Every kernel present (this revision's kernel set; for tests).
    #[cfg(test)]
    pub const ALL: KernelFiles = KernelFiles {
        pairs: true,
        local: true,
        wgmma: true,
    };

    /// What the kernel set in `dir` holds; `hopper`: whether the device can run the wgmma
    /// kernel.
    pub fn in_dir(dir: &std::path::Path, hopper: bool) -> KernelFiles {
        KernelFiles {
            pairs: dir.join(PAIRS_FILE).is_file(),
            local: dir.join(LOCAL_FILE).is_file(),
            wgmma: hopper && dir.join(super::nsa_wgmma::FILE).is_file(),
        }
    }
}

/// The automatic choice for a problem: the wgmma kernel where [`wgmma_in_auto`] says (sm_90 and
/// a kernel set that has it), else local where [`local_in_auto`] says, else pairs where
/// [`pairs_in_auto`] says (each only if the kernel set has its file), else tiled for
/// G ≤ [`TILED_MAX_G`] where it fits or where [`tiled_shared_in_auto`] says, else grouped.
pub fn auto_kernel(p: &Params, files: KernelFiles) -> Kernel {
    let other = auto_before_wgmma(p, files);
    if files.wgmma && wgmma_in_auto(p, other) {
        Kernel::Wgmma
    } else {
        other
    }
}

/// The automatic choice among the mma.sync kernels (what ran before the wgmma kernel).
fn auto_before_wgmma(p: &Params, files: KernelFiles) -> Kernel {
    if files.local && local_in_auto(p) {
        return Kernel::Local;
    }
    if files.pairs && pairs_in_auto(p) {
        return Kernel::Pairs;
    }
    if (p.g() <= TILED_MAX_G && tiled_fits(p).is_ok()) || tiled_shared_in_auto(p) {
        Kernel::Tiled
    } else {
        Kernel::Grouped
    }
}

/// The kernel for this case: the forced one (`KERNELGATE_NSA_KERNEL`; an unusable forced
/// choice is an error), else [`auto_kernel`].
fn choose(case: &Case, p: &Params, files: KernelFiles) -> Result<Kernel> {
    let forced = |k: Kernel, name: &str, fits: std::result::Result<(), String>| {
        fits.map(|_| k).map_err(|why| Error::Case {
            case: case.name(),
            message: format!(
                "{KERNEL_ENV}={name}, but the {name} nsa kernel cannot run this case: {why}"
            ),
        })
    };
    match super::from_env(case, KERNEL_ENV, parse_forced)? {
        Some(Kernel::Tiled) => forced(Kernel::Tiled, "tiled", tiled_fits(p)),
        Some(Kernel::Pairs) => forced(Kernel::Pairs, "pairs", pairs_fits(p)),
        Some(Kernel::Local) => forced(Kernel::Local, "local", local_fits(p)),
        Some(Kernel::Grouped) => Ok(Kernel::Grouped),
        Some(Kernel::Wgmma) if !files.wgmma => Err(Error::Case {
            case: case.name(),
            message: format!(
                "{KERNEL_ENV}=wgmma, but this device or kernel set cannot run it (it needs sm_90 and kernels/{})",
                super::nsa_wgmma::FILE
            ),
        }),
        Some(Kernel::Wgmma) => forced(Kernel::Wgmma, "wgmma", super::nsa_wgmma::fits(p)),
        None => Ok(auto_kernel(p, files)),
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
    let hopper = super::nsa_wgmma::device_fits(gpu).is_ok();
    let kernel = choose(case, &p, KernelFiles::in_dir(&gpu.kernel_set.dir, hopper))?;
    let scale_log2 = (p.scale() * std::f64::consts::LOG2_E) as f32;
    let i = &bind.inputs;
    // The grouped, tiled and local kernels take the same arguments (the local kernel then R).
    let mut args = vec![
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
        // Three launches with their own arguments and workspace.
        Kernel::Pairs => return prepare_pairs(gpu, case, bind, &p, dt, scale_log2),
        Kernel::Wgmma => return super::nsa_wgmma::prepare(gpu, case, bind, &p, scale_log2),
        Kernel::Local => {
            let l = match super::from_env(case, LOCAL_ENV, parse_local)? {
                Some(l) => {
                    local_launch_fits(&p, l.r, l.warps, l.stages)
                        .map_err(|why| unsupported(format!("{LOCAL_ENV}: {why}")))?;
                    l
                }
                None => local_config(&p).expect("local_fits checked that a launch fits"),
            };
            let name = l.entry(dt, &p);
            let dims = Dims {
                grid: (p.t.div_ceil(l.r) as u32, (p.b * p.h) as u32, 1),
                block: (l.warps * 32, 1, 1),
                // local_launch_fits bounded it by LOCAL_MAX_SMEM.
                smem: local_smem_bytes(&p, l.r, l.warps, l.stages) as u32,
            };
            args.push(KernelArg::I32(l.r as i32));
            let variant = format!(
                "{name} (local: {} tokens per CTA, pairs bucketed by block in shared memory, {LOCAL_ROWS}-row tiles per warp ({} warps x {} K/V stages), mma.sync m16n8k16, records merged in shared memory; 1 launch)",
                l.r, l.warps, l.stages
            );
            (LOCAL_FILE, name, dims, variant)
        }
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
        // match the signature the three kernels share (the local one with R last).
        launch: Box::new(move |gpu: &Gpu| gpu.launch(f, dims, &args)),
        compile_s,
        source_hash: hash,
        code_hash: String::new(),
        variant,
    })
}

/// Prepares the pairs kernel's three launches (bucket, tiles, merge) with their workspace.
fn prepare_pairs(
    gpu: &mut Gpu,
    case: &Case,
    bind: &Bindings,
    p: &Params,
    dt: &str,
    scale_log2: f32,
) -> Result<Prepared> {
    let i = &bind.inputs;
    let what = format!("{} pairs workspace", case.name());
    let ws = pairs_workspace(p);
    let mut bufs = Vec::with_capacity(ws.len());
    for bytes in ws {
        bufs.push(gpu.alloc(bytes as usize, &what)?);
    }
    let [entries, tiles, tile_count, rec_o, rec_ml] = [0, 1, 2, 3, 4].map(|k| bufs[k].ptr());
    let bh = (p.b * p.h) as u32;
    let max_tiles = pairs_max_tiles(p);
    let (t, hq, h, s, bs) = (p.t as i32, p.hq as i32, p.h as i32, p.s as i32, p.bs as i32);
    let rows = (p.b * p.t * p.hq) as u64;
    let steps = vec![
        (
            "nsa_pairs_bucket".to_string(),
            Dims {
                grid: (bh, 1, 1),
                block: (PAIRS_BUCKET_THREADS, 1, 1),
                smem: (PAIRS_BUCKET_SMEM_PER_BLOCK * p.blocks()) as u32,
            },
            vec![
                KernelArg::Ptr(i[INDICES]),
                KernelArg::Ptr(i[COUNTS]),
                KernelArg::Ptr(entries),
                KernelArg::Ptr(tiles),
                KernelArg::Ptr(tile_count),
                KernelArg::I32(t),
                KernelArg::I32(h),
                KernelArg::I32(s),
                KernelArg::I32(bs),
                KernelArg::I32(p.g() as i32),
                KernelArg::I32(max_tiles as i32),
            ],
        ),
        (
            format!("nsa_pairs_tile_{dt}_d{}_bs{}", p.d, p.bs),
            Dims {
                grid: (max_tiles as u32, bh, 1),
                block: (PAIRS_TILE_THREADS, 1, 1),
                smem: 0,
            },
            vec![
                KernelArg::Ptr(i[Q]),
                KernelArg::Ptr(i[K]),
                KernelArg::Ptr(i[V]),
                KernelArg::Ptr(entries),
                KernelArg::Ptr(tiles),
                KernelArg::Ptr(tile_count),
                KernelArg::Ptr(rec_o),
                KernelArg::Ptr(rec_ml),
                KernelArg::I32(t),
                KernelArg::I32(hq),
                KernelArg::I32(h),
                KernelArg::I32(s),
                KernelArg::I32(max_tiles as i32),
                KernelArg::F32(scale_log2),
            ],
        ),
        (
            format!("nsa_pairs_merge_{dt}_d{}", p.d),
            Dims {
                grid: (rows.div_ceil(PAIRS_MERGE_WARPS as u64) as u32, 1, 1),
                block: (PAIRS_MERGE_WARPS * 32, 1, 1),
                smem: 0,
            },
            vec![
                KernelArg::Ptr(rec_o),
                KernelArg::Ptr(rec_ml),
                KernelArg::Ptr(i[G_SLC]),
                KernelArg::Ptr(i[INDICES]),
                KernelArg::Ptr(i[COUNTS]),
                KernelArg::Ptr(bind.outputs[0]),
                KernelArg::I32(p.b as i32),
                KernelArg::I32(t),
                KernelArg::I32(hq),
                KernelArg::I32(h),
                KernelArg::I32(s),
                KernelArg::I32(bs),
            ],
        ),
    ];
    let variant = format!(
        "nsa_pairs_{dt}_d{} (pairs: (token, slot) pairs bucketed by block, {} rows of one block per CTA, up to {max_tiles} tiles per (batch, KV head), mma.sync m16n8k16, partial records merged per query row; 3 launches)",
        p.d,
        PAIRS_ROWS
    );
    super::launch_sequence(
        gpu,
        PAIRS_FILE,
        steps,
        bufs,
        variant,
        super::Chain::Ordinary,
    )
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
        use Kernel::{Grouped, Local, Pairs, Tiled};
        // The mma.sync kernels' choice: a device without sm_90 (or a kernel set before session 27).
        let all = KernelFiles {
            wgmma: false,
            ..KernelFiles::ALL
        };
        // A kernel set without the local kernel (a --base revision before session 21), and one
        // without either (before session 20).
        let no_local = KernelFiles {
            pairs: true,
            local: false,
            wgmma: false,
        };
        let neither = KernelFiles {
            pairs: false,
            local: false,
            wgmma: false,
        };
        let window = Params {
            w: 64,
            ..params(2048, 16, 16, 64, 4, 32)
        };
        // (problem: t, hq, h, d, s, bs; kernel set; expected choice)
        let table = [
            // G = 1 with at least 8 blocks per slot: local (64 blocks, 4 or 8 slots; 256 blocks,
            // 16 slots; 32 blocks of 64 keys, 4 slots; d128 with 32-key blocks).
            (params(2048, 16, 16, 64, 4, 32), all, Local),
            (params(8192, 16, 16, 64, 16, 32), all, Local),
            (params(2048, 16, 16, 64, 8, 32), all, Local),
            (params(2048, 16, 16, 64, 4, 64), all, Local),
            (params(8192, 16, 16, 64, 4, 32), all, Local),
            (params(2049, 4, 4, 128, 8, 32), all, Local),
            // d128 with 64-key blocks: pairs from 16 blocks per slot.
            (params(4096, 8, 8, 128, 4, 64), all, Pairs),
            // Fewer blocks per slot, or a window: tiled.
            (params(2048, 16, 16, 64, 16, 64), all, Tiled),
            (params(2048, 16, 16, 64, 16, 32), all, Tiled),
            (params(1000, 16, 16, 64, 8, 32), all, Tiled),
            (params(512, 16, 16, 64, 8, 32), all, Tiled),
            (window, all, Tiled),
            // Older kernel sets get the choice they had.
            (params(2048, 16, 16, 64, 4, 32), no_local, Pairs),
            (params(2048, 16, 16, 64, 8, 32), no_local, Tiled),
            (params(2048, 16, 16, 64, 4, 32), neither, Tiled),
            // G = 4: tiled; G = 8, 16: grouped, except d128 at G >= 16 where the selection
            // covers half the sequence or more (2·S·bs >= T): tiled.
            (params(8192, 16, 4, 64, 4, 32), all, Tiled),
            (params(512, 16, 4, 64, 8, 32), all, Tiled),
            (params(512, 16, 2, 64, 8, 32), all, Grouped),
            (params(1024, 16, 1, 128, 16, 32), all, Tiled),
            (params(2048, 16, 1, 128, 16, 64), all, Tiled),
            (params(1025, 16, 1, 128, 16, 32), all, Grouped),
            (params(16384, 64, 4, 128, 16, 64), all, Grouped),
            (params(1024, 16, 2, 128, 16, 32), all, Grouped),
            (params(1024, 32, 1, 64, 16, 32), all, Grouped),
            // Too much shared memory for the lists: grouped.
            (params(65536, 16, 16, 128, 512, 32), all, Grouped),
        ];
        for (p, files, want) in table {
            assert_eq!(auto_kernel(&p, files), want, "{p:?} with {files:?}");
        }
    }

    #[test]
    fn automatic_choice_with_the_wgmma_kernel() {
        use Kernel::{Grouped, Local, Pairs, Tiled, Wgmma};
        let all = KernelFiles::ALL;
        let with = |w, p: Params| Params { w, ..p };
        // (problem; expected choice)
        let table = [
            // Where tiled ran (w = 0): wgmma, whatever the density.
            (params(1000, 16, 16, 64, 8, 32), Wgmma),
            (params(512, 16, 16, 64, 8, 32), Wgmma),
            (params(256, 16, 16, 64, 4, 32), Wgmma),
            (params(777, 4, 4, 128, 4, 64), Wgmma),
            (params(2048, 16, 4, 64, 4, 32), Wgmma),
            (params(1024, 16, 1, 128, 16, 32), Wgmma),
            // A window: tiled (wgmma has no window branch).
            (with(100, params(300, 8, 8, 64, 3, 32)), Tiled),
            // Local territory: wgmma up to T = 8·S·bs ...
            (params(2048, 16, 16, 64, 16, 32), Wgmma),
            (params(1024, 16, 16, 64, 4, 32), Wgmma),
            (params(2048, 16, 16, 64, 8, 32), Wgmma),
            // ... beyond it local.
            (params(2048, 16, 16, 64, 4, 32), Local),
            // Pairs territory: up to 16·S·bs.
            (params(4096, 8, 8, 128, 4, 64), Wgmma),
            (params(8192, 8, 8, 64, 4, 32), Local),
            (params(8193, 8, 8, 128, 4, 64), Pairs),
            // Grouped territory (G > 4): up to 4·S·bs.
            (params(1111, 16, 2, 64, 8, 64), Wgmma),
            (params(1024, 32, 1, 64, 4, 64), Wgmma),
            (params(1025, 32, 1, 64, 4, 64), Grouped),
            // Too long for its list buffers: the older choice.
            (params(16384, 64, 4, 128, 16, 64), Grouped),
            (params(8192, 16, 16, 64, 4, 32), Local),
        ];
        for (p, want) in table {
            assert_eq!(auto_kernel(&p, all), want, "{p:?}");
        }
    }

    #[test]
    fn local_layout_and_limits() {
        let launch = |r, warps, stages| LocalLaunch { r, warps, stages };
        assert_eq!(parse_forced(Some("local")), Ok(Some(Kernel::Local)));
        assert_eq!(parse_local(None), Ok(None));
        assert_eq!(parse_local(Some(" ")), Ok(None));
        assert_eq!(parse_local(Some("128:16")), Ok(Some(launch(128, 16, 1))));
        assert_eq!(parse_local(Some("128:8:2")), Ok(Some(launch(128, 8, 2))));
        assert!(parse_local(Some("128")).unwrap_err().contains("R:NW"));
        assert!(parse_local(Some("a:8")).unwrap_err().contains("R:NW"));
        assert!(parse_local(Some("1:2:3:4")).unwrap_err().contains("R:NW"));
        // The entries compiled: K/V buffers of 64-128 KiB.
        assert_eq!(local_launches(64, 32), &[(16, 1), (8, 2), (8, 1)]);
        assert_eq!(local_launches(128, 64), &[(4, 1), (2, 2), (2, 1)]);
        assert!(local_launches(96, 32).is_empty());
        // b2 t2048 hq16 h16 d64 s4 bs32, 256 tokens, 8 warps: 1024 pairs, 64 blocks.
        let p = params(2048, 16, 16, 64, 4, 32);
        assert_eq!(local_max_tiles(&p, 256), 64 + 64);
        assert_eq!(
            local_smem_bytes(&p, 256, 8, 1),
            65_536 + 2 * 256 * 64 + 1024 * 136 + 4 * 1024 + 8 * 128 + 12 * 64 + 4 * 256
        );
        assert_eq!(
            local_smem_bytes(&p, 128, 8, 2),
            local_smem_bytes(&p, 128, 16, 1)
        );
        // 256 tokens with 8 warps: 64 KiB of K/V, 32 KiB of Q and 136 KiB of records: too much.
        assert!(local_launch_fits(&p, 256, 8, 1)
            .unwrap_err()
            .contains("shared memory"));
        assert!(local_launch_fits(&p, 128, 8, 2).is_ok());
        assert_eq!(
            launch(256, 8, 1).entry("bf16", &p),
            "nsa_local_bf16_d64_bs32_w8"
        );
        assert_eq!(
            launch(128, 8, 2).entry("fp16", &p),
            "nsa_local_fp16_d64_bs32_w8_s2"
        );
        // The default: 16 warps (128 KiB of K/V), so 256 tokens' records no longer fit; 128 do.
        assert!(local_launch_fits(&p, 256, 16, 1)
            .unwrap_err()
            .contains("shared memory"));
        assert_eq!(local_config(&p), Some(launch(128, 16, 1)));
        assert!(local_fits(&p).is_ok());
        assert!(local_launch_fits(&p, 128, 12, 1)
            .unwrap_err()
            .contains("(16, 1)"));
        assert!(local_launch_fits(&p, 128, 16, 2)
            .unwrap_err()
            .contains("compiled with"));
        assert!(local_launch_fits(&p, 1024, 8, 1)
            .unwrap_err()
            .contains("1 to 256"));
        assert!(
            local_launch_fits(&params(2048, 16, 16, 64, 16, 32), 256, 8, 1)
                .unwrap_err()
                .contains("2048 pairs")
        );
        assert!(LOCAL_TOKENS.iter().all(|&r| r <= LOCAL_MAX_TOKENS));
        // d128 s4 bs64 t4096: 4 warps (128 KiB), records of 64 tokens (256 x 264 bytes).
        assert_eq!(
            local_config(&params(4096, 8, 8, 128, 4, 64)),
            Some(launch(64, 4, 1))
        );
        // 16 slots at d64: 16 warps leave room for 32 tokens' records.
        assert_eq!(
            local_config(&params(8192, 16, 16, 64, 16, 32)),
            Some(launch(32, 16, 1))
        );
        // What it refuses, and why.
        assert!(local_fits(&params(2048, 16, 4, 64, 4, 32))
            .unwrap_err()
            .contains("G = 4"));
        assert!(local_fits(&Params {
            w: 64,
            ..params(2048, 16, 16, 64, 4, 32)
        })
        .unwrap_err()
        .contains("window"));
        assert!(local_fits(&params(2048, 16, 16, 64, 4, 16))
            .unwrap_err()
            .contains("32 or 64"));
        assert!(local_fits(&params(2048, 16, 16, 64, 64, 32))
            .unwrap_err()
            .contains("32 slots"));
        assert!(local_fits(&params(1 << 20, 16, 16, 128, 32, 32))
            .unwrap_err()
            .contains("shared memory"));
    }

    #[test]
    fn kernel_files_follow_the_directory() {
        let dir = std::env::temp_dir().join(format!("kg-nsa-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let none = KernelFiles {
            pairs: false,
            local: false,
            wgmma: false,
        };
        assert_eq!(KernelFiles::in_dir(&dir, true), none);
        std::fs::write(dir.join(PAIRS_FILE), "").unwrap();
        let pairs = KernelFiles {
            pairs: true,
            ..none
        };
        assert_eq!(KernelFiles::in_dir(&dir, true), pairs);
        std::fs::write(dir.join(LOCAL_FILE), "").unwrap();
        std::fs::write(dir.join(super::super::nsa_wgmma::FILE), "").unwrap();
        assert_eq!(KernelFiles::in_dir(&dir, true), KernelFiles::ALL);
        // The wgmma kernel only where the device is sm_90.
        let no_hopper = KernelFiles {
            wgmma: false,
            ..KernelFiles::ALL
        };
        assert_eq!(KernelFiles::in_dir(&dir, false), no_hopper);
        std::fs::remove_dir_all(&dir).unwrap();
        // This revision's kernels directory holds all of them.
        let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        assert_eq!(KernelFiles::in_dir(&kernels, true), KernelFiles::ALL);
    }

    #[test]
    fn every_local_launch_has_its_entry() {
        // Each (warps, stages) the host may launch is instantiated in kernels/nsa_local.cu.
        let src = super::super::kernel_source("nsa_local.cu");
        let mut n = 0;
        for (d, bs) in [(64, 32), (64, 64), (128, 32), (128, 64)] {
            for &(nw, st) in local_launches(d, bs) {
                let sfx = if st == 2 { "_s2" } else { "" };
                let line = format!("NSL_ENTRY(TN, T, {d}, {bs}, {nw}, {st}, {sfx})");
                assert!(src.contains(&line), "{line} missing");
                n += 1;
            }
        }
        assert_eq!(src.matches("    NSL_ENTRY(TN, T, ").count(), n);
    }

    #[test]
    fn pairs_workspace_and_limits() {
        assert_eq!(parse_forced(Some("pairs")), Ok(Some(Kernel::Pairs)));
        // b2 t2048 hq16 h16 d64 s4 bs32: 8192 slots per (b, h), 128 full tiles + 64 blocks.
        let p = params(2048, 16, 16, 64, 4, 32);
        assert_eq!(pairs_max_tiles(&p), 128 + 64);
        let rows = 2 * 2048 * 16 * 4;
        assert_eq!(
            pairs_workspace(&p),
            [
                4 * 32 * 8192,
                16 * 32 * 192,
                4 * 32,
                2 * 64 * rows,
                8 * rows
            ]
        );
        assert!(pairs_fits(&p).is_ok());
        // G = 4: 16 pairs a tile.
        assert_eq!(
            pairs_max_tiles(&params(512, 16, 4, 64, 8, 32)),
            4096 / 16 + 16
        );
        let why = |p: Params| pairs_fits(&p).unwrap_err();
        assert!(why(Params { w: 64, ..p }).contains("sliding-window"));
        assert!(why(params(2048, 16, 16, 64, 4, 96)).contains("32 or 64"));
        assert!(why(params(2048, 16, 16, 64, 33, 32)).contains("32 slots"));
        assert!(why(params(2048, 48, 16, 64, 4, 32)).contains("does not divide"));
        assert!(why(params(262_144, 16, 16, 64, 4, 32)).contains("blocks exceed"));
        assert_eq!(PAIRS_MAX_BLOCKS, 4096);
        assert!(why(params(65_536, 64, 4, 128, 16, 64)).contains("workspace"));
    }

    /// `nsp_valid` of kernels/nsa_pairs.cu: slot `s` of token `t` (block index `idx`, stored
    /// count `count`) is a pair.
    fn pair_valid(s: usize, count: i32, idx: i32, t: usize, p: &Params) -> bool {
        (s as i32) < count.clamp(0, p.s as i32)
            && idx >= 0
            && (idx as usize) < p.blocks()
            && idx as usize <= t / p.bs
    }

    /// Per token of `p`, a count in -1 ..= s + 1 and `s` block indices in -2 ..= ⌈T/bs⌉ + 1
    /// (pads, duplicates, blocks past the token or the sequence), from an xorshift of `seed`.
    fn random_slots(p: &Params, seed: u64) -> Vec<(i32, Vec<i32>)> {
        let mut x = seed | 1;
        let mut next = |n: i64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as i64
        };
        let nb = p.blocks() as i64;
        (0..p.t)
            .map(|_| {
                let count = next(p.s as i64 + 3) as i32 - 1;
                let idxs = (0..p.s).map(|_| next(nb + 4) as i32 - 2).collect();
                (count, idxs)
            })
            .collect()
    }

    proptest::proptest! {
        /// On any block indices (pads, duplicates, blocks past the token or the sequence) and
        /// any counts: the pairs kernel's rule keeps exactly the slots that give the reference
        /// at least one key, and its buckets' tiles fit the descriptors the host reserves.
        #[test]
        fn pairs_follow_the_reference_and_fit_their_tiles(
            t_len in 1usize..300,
            s in 1usize..9,
            bs in proptest::sample::select(vec![32usize, 64]),
            g in proptest::sample::select(vec![1usize, 2, 4]),
            seed in 0u64..u64::MAX,
        ) {
            let p = Params { b: 1, t: t_len, hq: 4 * g, h: 4, d: 64, s, bs, w: 0 };
            let mut per_block = vec![0usize; p.blocks()];
            for (t, (count, idxs)) in random_slots(&p, seed).into_iter().enumerate() {
                for (slot, idx) in idxs.into_iter().enumerate() {
                    let valid = pair_valid(slot, count, idx, t, &p);
                    let in_count = (slot as i32) < count.clamp(0, s as i32);
                    let keys = crate::family::nsa::selected_keys(&p, t, &[idx], 1);
                    proptest::prop_assert_eq!(valid, in_count && !keys.is_empty(), "t {} idx {}", t, idx);
                    if valid {
                        per_block[idx as usize] += 1;
                    }
                }
            }
            let rp = PAIRS_ROWS / g;
            let tiles: usize = per_block.iter().map(|c| c.div_ceil(rp)).sum();
            proptest::prop_assert!(tiles as u64 <= pairs_max_tiles(&p), "{} tiles > {}", tiles, pairs_max_tiles(&p));
        }

        /// The local kernel's buckets, CTA by CTA (R tokens each), on any block indices and
        /// counts: every valid pair names a block below the CTA's `nbl` (the blocks its last
        /// token can see, the only ones it zeroes and scans), the pairs fit the CTA's R·S
        /// records, and its tiles of 16 fit the descriptors `local_max_tiles` reserves (whose
        /// packing, first entry << 8 | pairs, needs fewer than 2^23 entries and 16 pairs).
        #[test]
        fn local_buckets_fit_their_tiles(
            t_len in 1usize..700,
            s in 1usize..17,
            bs in proptest::sample::select(vec![32usize, 64]),
            d in proptest::sample::select(vec![64usize, 128]),
            seed in 0u64..u64::MAX,
        ) {
            let p = Params { b: 1, t: t_len, hq: 4, h: 4, d, s, bs, w: 0 };
            let l = local_config(&p).expect("small problems fit");
            let r = l.r;
            // The descriptors pack the first entry above 8 bits of pair count: 2^23 entries.
            const _: () = assert!(LOCAL_MAX_PAIRS < 1 << 23);
            proptest::prop_assert!(r * s <= LOCAL_MAX_PAIRS);
            proptest::prop_assert!(local_smem_bytes(&p, r, l.warps, l.stages) <= LOCAL_MAX_SMEM);
            let nb = p.blocks();
            let slots = random_slots(&p, seed);
            for t0 in (0..t_len).step_by(r) {
                let nt = r.min(t_len - t0);
                let nbl = nb.min((t0 + nt - 1) / bs + 1);
                let mut per_block = vec![0usize; nb];
                let mut pairs = 0;
                for (t, (count, idxs)) in slots.iter().enumerate().skip(t0).take(nt) {
                    for (slot, &idx) in idxs.iter().enumerate() {
                        if pair_valid(slot, *count, idx, t, &p) {
                            proptest::prop_assert!((idx as usize) < nbl, "block {} of {}", idx, nbl);
                            per_block[idx as usize] += 1;
                            pairs += 1;
                        }
                    }
                }
                proptest::prop_assert!(pairs <= r * s);
                let tiles: usize = per_block.iter().map(|c| c.div_ceil(LOCAL_ROWS)).sum();
                proptest::prop_assert!(tiles as u64 <= local_max_tiles(&p, r), "{} tiles > {}", tiles, local_max_tiles(&p, r));
            }
        }
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
