// kernelgate NSA forward (selected-block branch) on Hopper (sm_90a): the FlashAttention-3 style
// body of kernels/mha_wgmma.cu (TMA, wgmma, warp specialisation, ping-pong, intra-warpgroup
// overlap, persistent CTAs with a longest-first tile counter) run over the key tiles a tile's
// tokens selected, with a per-element mask. Same semantics as kernels/nsa_tiled.cu
// (src/family/nsa.rs) for W = 0 (no sliding window): the host takes this kernel only there.
//
//   q [B,T,HQ,D], k/v [B,T,H,D], g_slc [B,T,HQ], block_indices [B,T,H,S] (int32),
//   block_counts [B,T,H] (int32)  ->  o [B,T,HQ,D] = g_slc · softmax-weighted V of the selected keys.
//
// Why
// ---
// At G = HQ/H = 1 the grouped kernel's MMA rows are one token's heads (1 of 16 useful), and the
// tiled kernel (64 tokens a CTA, union of their blocks, mma.sync) runs at FlashAttention-2 speed
// over a union that, with the generator's random selection and T <= 2048, is nearly every
// causal block. This kernel computes that masked union at FA3 speed: the wasted work (keys in
// the union a row did not select) stays, so it pays where S·bs is a large part of the causal
// prefix (src/backend/cuda/nsa.rs, `wgmma_in_auto`).
//
// Design (what differs from mha_wgmma.cu; see mha_body, NSA_BS > 0)
// ------------------------------------------------------------------
// * Work tile = 128 consecutive tokens of one query head (b, hq), two consumer warpgroups; it
//   reads KV head hq / G. The `_bm64` entries (d64): 64 tokens, one consumer warpgroup, 2 K/V
//   stages, two CTAs an SM, for grids of few 128-token tiles (src/backend/cuda/nsa_wgmma.rs, rows).
//   Tiles are numbered m-block-major (decode_nsa): every head's last 128 tokens, then every
//   head's previous 128, ..., so the global tile counter hands out work longest first across
//   the launch (causal mha orders them per head).
// * 4-D tensor maps over the [B, T, heads, D] tensors: {D, heads, T, B}, box {64, 1, rows, 1}
//   (the box is the same 64-column, 128-byte-row SW128 tile as mha's 3-D box).
// * The producer warpgroup (128 threads, one token each) builds each tile's lists in shared
//   memory: for every valid slot of its token (s < clamp(count, 0, S), 0 <= idx,
//   idx·bs <= token) it adds 1 to the byte of the block's multiplicity in masks[key tile][row]
//   (a 32-bit word: one byte per block of the 128-key tile) and sets the key tile's union bit;
//   thread 0 turns the union into the ascending list of key tiles, publishes it with the tile
//   and TMA-loads those key tiles only. Two list buffers: building tile k waits for the
//   consumers to finish tile k − 2 (list_empty barriers).
// * Consumers: softmax_nsa masks element (row, key) unless its block's multiplicity m > 0 and
//   key <= token, and weights it by m (a block listed twice counts twice, as in the reference).
// * Epilogue: O / l times g_slc from registers into o [B, T, HQ, D]; a row that attended nothing
//   (no valid slot) gets 0.
//
// HOST LAUNCH RECIPE (src/backend/cuda/nsa.rs)
//   tmQ: dims {D, HQ, T, B}, box {64, 1, 128, 1}; tmK/tmV: dims {D, H, T, B}, box {64, 1, 128, 1};
//   16-bit, SWIZZLE_128B, zero OOB fill (as mha_wgmma.cu's maps).
//   nkv_max = ceil(T / 128) <= 64 (T <= 8192); bs = 32 or 64 (the entry's); S <= 255.
//   dynamic smem = mha_wg::Layout<D, 128, STAGES, 2, true>::SMEM + 2 · 4 · nsa_words(128, nkv_max)
//   + 4 · 128 · S (d64: 4 stages, 148736 + ...; d128: 2 stages, 165120 + ...), checked in the kernel.
//   _bm64: box rows 64 for Q, Layout<64, 128, 2, 1, true>::SMEM = 75008 + 2·4·nsa_words(64, nkv_max)
//   + 4·64·S, block 256, two CTAs an SM.
//   grid = min(#tiles, CTAs an SM · #SMs) (#tiles = ceil(T/rows)·HQ·B); block 384; sched: 2
//   zeroed u32 words.
//   params {tmQ, tmK, tmV, o, g_slc, block_indices, block_counts, sched, B, T, HQ, H, S,
//           nkv_max, scale·log2(e)}.
#define MHA_WG_NO_ENTRIES
#include "mha_wgmma.cu"

#define NSA_WG_KERNEL(NAME, T, D, STAGES, BS, NC, MINB)                                                        \
    extern "C" __global__ void __launch_bounds__(128 * (NC + 1), MINB)                                         \
        NAME(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,                 \
             const __grid_constant__ CUtensorMap tmV, T* O, const T* g_slc, const int* idx, const int* cnt,    \
             unsigned* sched, int B, int Tn, int HQ, int H, int S, int nkv_max, float sl2) {                   \
        const mha_wg::NsaArgs<T> nsa{g_slc, idx, cnt, S, nkv_max};                                              \
        mha_wg::mha_body<T, D, MHA_WG_BN, STAGES, NC, true, MHA_WG_OVERLAP, MHA_WG_PINGPONG, BS>(            \
            &tmQ, &tmK, &tmV, &tmQ, O, sched, B, HQ, H, Tn, Tn, sl2, 0, 1, nullptr, nullptr, nsa);             \
    }

NSA_WG_KERNEL(nsa_wgmma_bf16_d64_bs32, __nv_bfloat16, 64, MHA_WG_STAGES_D64, 32, 2, 1)
NSA_WG_KERNEL(nsa_wgmma_bf16_d64_bs64, __nv_bfloat16, 64, MHA_WG_STAGES_D64, 64, 2, 1)
NSA_WG_KERNEL(nsa_wgmma_bf16_d128_bs32, __nv_bfloat16, 128, MHA_WG_STAGES_D128, 32, 2, 1)
NSA_WG_KERNEL(nsa_wgmma_bf16_d128_bs64, __nv_bfloat16, 128, MHA_WG_STAGES_D128, 64, 2, 1)
NSA_WG_KERNEL(nsa_wgmma_fp16_d64_bs32, __half, 64, MHA_WG_STAGES_D64, 32, 2, 1)
NSA_WG_KERNEL(nsa_wgmma_fp16_d64_bs64, __half, 64, MHA_WG_STAGES_D64, 64, 2, 1)
NSA_WG_KERNEL(nsa_wgmma_fp16_d128_bs32, __half, 128, MHA_WG_STAGES_D128, 32, 2, 1)
NSA_WG_KERNEL(nsa_wgmma_fp16_d128_bs64, __half, 128, MHA_WG_STAGES_D128, 64, 2, 1)
// 64-token tiles, one consumer warpgroup, 2 K/V stages: two CTAs an SM (d64 only), for grids
// too small to fill the SMs with 128-token tiles.
NSA_WG_KERNEL(nsa_wgmma_bf16_d64_bs32_bm64, __nv_bfloat16, 64, 2, 32, 1, 2)
NSA_WG_KERNEL(nsa_wgmma_bf16_d64_bs64_bm64, __nv_bfloat16, 64, 2, 64, 1, 2)
NSA_WG_KERNEL(nsa_wgmma_fp16_d64_bs32_bm64, __half, 64, 2, 32, 1, 2)
NSA_WG_KERNEL(nsa_wgmma_fp16_d64_bs64_bm64, __half, 64, 2, 64, 1, 2)
