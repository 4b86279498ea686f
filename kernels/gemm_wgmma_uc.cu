// gemm_wgmma_uc.cu -- the Hopper wgmma GEMM (gemm_wgmma.cuh) for N not a multiple of 8, with C
// written in place.
//
// TMA needs 16-byte row strides, so B (K x N) is still copied into rows of Np = N rounded up to
// 8 (gemm_wgmma_pad16, zeros in the added columns) and read through a tensor map of those rows.
// C is not: the entries here take N as C's own width. Their epilogue (uc_store_row in the
// header) realigns each row's register blocks by shuffles within the quad so that every lane
// stores a whole 16-byte chunk at an aligned address, whatever the row's alignment; the chunks
// at a tile's left and right edges and at column N are stored element by element.
// gemm_wgmma.cu computes into an M x Np buffer instead and copies its first N columns into C
// (gemm_wgmma_unpad16): at 4095 x 4097 x 64 that copy reads and writes the whole result a
// second time.
//
// Session 39's first version stored each lane's eight elements where they fell (a half word,
// three words and a half word on rows at odd elements): 4095 x 4097 x 64 took 53.3 us against
// 63.3 for the padded path and 39.8 for cuBLAS (H100 a997e97b): every such store of a warp
// touched about twenty sectors for a few bytes each.
//
// Entries: gemm_wgmma_<bf16|f16>_<tile>_uc for every register-epilogue tile of gemm_wgmma.cu,
// the same parameters (tmA, tmB, C, P, M, N, K, splits) with splits == 1 (P unused), and
// gemm_wgmma_pad16 as in gemm_wgmma.cu. They were put in a file of their own while adding entry
// points to gemm_wgmma.cu still changed its other entries' code hashes (symbol indices in their
// attribute records; src/cubin.rs names them since session 39).

#include "gemm_wgmma.cuh"

#define GW_UC_BODY(T, BF16, CFG, CLN, PNV)                                                         \
    gemm_wgmma_detail::gemm_body<T, BF16, gemm_wgmma_detail::CFG, CLN, PNV, false, true>(       \
        &tmA, &tmB, C, P, M, N, K, splits);
#define GW_UC_PARAMS(T)                                                                             \
    (const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, T* C,        \
     float* P, int M, int N, int K, int splits)
#define GW_ENTRY_UC(NAME, T, BF16, CFG, MINB)                                                      \
    extern "C" __global__ void __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, MINB)           \
        NAME GW_UC_PARAMS(T) { GW_UC_BODY(T, BF16, CFG, 1, false) }
// 2-CTA clusters: PNV false pairs along M (_c2), true along N (_n2).
#define GW_ENTRY_CL_UC(NAME, T, BF16, CFG, PNV)                                                    \
    extern "C" __global__ void __cluster_dims__(2, 1, 1)                                          \
        __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, 1) NAME GW_UC_PARAMS(T) {              \
        GW_UC_BODY(T, BF16, CFG, 2, PNV)                                                          \
    }
GW_ENTRY_UC(gemm_wgmma_bf16_128x256_uc, __nv_bfloat16, true, Cfg128x256, 1)
GW_ENTRY_UC(gemm_wgmma_f16_128x256_uc, __half, false, Cfg128x256, 1)
GW_ENTRY_UC(gemm_wgmma_bf16_128x128_uc, __nv_bfloat16, true, Cfg128x128, 1)
GW_ENTRY_UC(gemm_wgmma_f16_128x128_uc, __half, false, Cfg128x128, 1)
GW_ENTRY_UC(gemm_wgmma_bf16_64x256_uc, __nv_bfloat16, true, Cfg64x256, 1)
GW_ENTRY_UC(gemm_wgmma_f16_64x256_uc, __half, false, Cfg64x256, 1)
GW_ENTRY_UC(gemm_wgmma_bf16_64x128_uc, __nv_bfloat16, true, Cfg64x128, 2)
GW_ENTRY_UC(gemm_wgmma_f16_64x128_uc, __half, false, Cfg64x128, 2)
GW_ENTRY_UC(gemm_wgmma_bf16_128x192_uc, __nv_bfloat16, true, Cfg128x192, 1)
GW_ENTRY_UC(gemm_wgmma_f16_128x192_uc, __half, false, Cfg128x192, 1)
GW_ENTRY_UC(gemm_wgmma_bf16_128x64_uc, __nv_bfloat16, true, Cfg128x64, 1)
GW_ENTRY_UC(gemm_wgmma_f16_128x64_uc, __half, false, Cfg128x64, 1)
GW_ENTRY_UC(gemm_wgmma_bf16_192x192_uc, __nv_bfloat16, true, Cfg192x192, 1)
GW_ENTRY_UC(gemm_wgmma_f16_192x192_uc, __half, false, Cfg192x192, 1)
GW_ENTRY_CL_UC(gemm_wgmma_bf16_128x256_c2_uc, __nv_bfloat16, true, Cfg128x256, false)
GW_ENTRY_CL_UC(gemm_wgmma_f16_128x256_c2_uc, __half, false, Cfg128x256, false)
GW_ENTRY_CL_UC(gemm_wgmma_bf16_128x128_c2_uc, __nv_bfloat16, true, Cfg128x128, false)
GW_ENTRY_CL_UC(gemm_wgmma_f16_128x128_c2_uc, __half, false, Cfg128x128, false)
GW_ENTRY_CL_UC(gemm_wgmma_bf16_128x64_n2_uc, __nv_bfloat16, true, Cfg128x64, true)
GW_ENTRY_CL_UC(gemm_wgmma_f16_128x64_n2_uc, __half, false, Cfg128x64, true)
GW_ENTRY_CL_UC(gemm_wgmma_bf16_128x128_n2_uc, __nv_bfloat16, true, Cfg128x128, true)
GW_ENTRY_CL_UC(gemm_wgmma_f16_128x128_n2_uc, __half, false, Cfg128x128, true)
#undef GW_ENTRY_UC
#undef GW_ENTRY_CL_UC
#undef GW_UC_BODY
#undef GW_UC_PARAMS

extern "C" __global__ void __launch_bounds__(256)
    gemm_wgmma_pad16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                     int rows, int cols, int cols_p) {
    gemm_wgmma_detail::pad16_body(src, dst, rows, cols, cols_p);
}
