// kernelgate NSA forward (selected-block branch) on Hopper, split-KV: the entries of
// kernels/nsa_wgmma.cu with each long tile's key range cut into chunks, for launches whose tiles
// do not fill the GPU (b1 t777 hq4 d128: 28 tiles of 128 tokens for 132 SMs; each tile's key
// tiles ran one after another on one SM while the others idled).
//
// What differs from kernels/nsa_wgmma.cu (see mha_body, NSA_SPLIT; decode_nsa_split)
// -------------------------------------------------------------------------------------
// * Work units m-block-major as there, but a tile whose causal bound holds more than `len` key
//   tiles becomes ⌈bound / len⌉ units; chunk c visits the key tiles of the tile's union list in
//   [c·len, c·len + len). Each unit builds the tile's whole list (the producer's build is cheap
//   beside a key tile's GEMMs) and loads only its chunk's key tiles.
// * Each chunk's consumer warpgroups write their unnormalised O, row max and row sum to `part`
//   (per thread, in fragment order); the warpgroup that completes the tile's count in
//   `part_cnt` merges every chunk's record, multiplies by g_slc and stores O, and resets the
//   count for the next launch (mha_wgmma.cu's split-KV tail, here in causal NSA launches).
//
// HOST LAUNCH RECIPE (src/backend/cuda/nsa_wgmma.rs)
//   As kernels/nsa_wgmma.cu, plus: len >= 1 (key tiles per chunk);
//   part: tiles · ⌈nkv_max / len⌉ · NC · 128 · (D/2 + 4) floats (NC = rows / 64);
//   part_cnt: tiles · NC u32, zeroed once; grid = min(units, CTAs an SM · #SMs),
//   units = Σ over m-blocks of B·HQ·⌈bound / len⌉.
//   params {tmQ, tmK, tmV, o, g_slc, block_indices, block_counts, sched, B, T, HQ, H, S,
//           nkv_max, scale·log2(e), len, part, part_cnt}.
#define MHA_WG_NO_ENTRIES
#include "mha_wgmma.cu"

#define NSA_WG_SPLIT_KERNEL(NAME, T, D, STAGES, BS, NC, MINB)                                                  \
    extern "C" __global__ void __launch_bounds__(128 * (NC + 1), MINB)                                         \
        NAME(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,                 \
             const __grid_constant__ CUtensorMap tmV, T* O, const T* g_slc, const int* idx, const int* cnt,    \
             unsigned* sched, int B, int Tn, int HQ, int H, int S, int nkv_max, float sl2, int len,            \
             float* part, unsigned* part_cnt) {                                                                \
        const mha_wg::NsaArgs<T> nsa{g_slc, idx, cnt, S, nkv_max};                                              \
        mha_wg::mha_body<T, D, MHA_WG_BN, STAGES, NC, true, MHA_WG_OVERLAP, MHA_WG_PINGPONG, BS, true>(      \
            &tmQ, &tmK, &tmV, &tmQ, O, sched, B, HQ, H, Tn, Tn, sl2, 0, len, part, part_cnt, nsa);             \
    }

NSA_WG_SPLIT_KERNEL(nsa_wgmma_bf16_d64_bs32_split, __nv_bfloat16, 64, MHA_WG_STAGES_D64, 32, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_bf16_d64_bs64_split, __nv_bfloat16, 64, MHA_WG_STAGES_D64, 64, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_bf16_d128_bs32_split, __nv_bfloat16, 128, MHA_WG_STAGES_D128, 32, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_bf16_d128_bs64_split, __nv_bfloat16, 128, MHA_WG_STAGES_D128, 64, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_fp16_d64_bs32_split, __half, 64, MHA_WG_STAGES_D64, 32, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_fp16_d64_bs64_split, __half, 64, MHA_WG_STAGES_D64, 64, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_fp16_d128_bs32_split, __half, 128, MHA_WG_STAGES_D128, 32, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_fp16_d128_bs64_split, __half, 128, MHA_WG_STAGES_D128, 64, 2, 1)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_bf16_d64_bs32_bm64_split, __nv_bfloat16, 64, 2, 32, 1, 2)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_bf16_d64_bs64_bm64_split, __nv_bfloat16, 64, 2, 64, 1, 2)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_fp16_d64_bs32_bm64_split, __half, 64, 2, 32, 1, 2)
NSA_WG_SPLIT_KERNEL(nsa_wgmma_fp16_d64_bs64_bm64_split, __half, 64, 2, 64, 1, 2)
