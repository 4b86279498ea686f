// kernelgate GEMM, portable kernels: C[M,N] = A[M,K] · B[K,N], all row-major.
//
// gemm_tc_{bf16,fp16}: tensor cores through WMMA (16x16x16, fp32 accumulate), any M, N, K.
//   Block tile 128x128x32, 8 warps as 2 (M) x 4 (N), each warp 64x32 = 4x2 fragments.
//   Tiles are staged in padded shared memory (row pitch +8 elements against bank conflicts),
//   with 16-byte vector loads when K (for A) or N (for B) is a multiple of 8 and scalar,
//   bounds-checked loads otherwise; out-of-range elements load as zero. The epilogue goes
//   through a per-warp fp32 scratch tile so edge tiles store with bounds checks.
//   This is the general fallback; Hopper's fast path is gemm_wgmma.cu.
// gemm_sgemm_{128x128,128x64,64x64}_{vec4,scalar}: the fp32 path, register-tiled SIMT (plain
//   FFMA, fp32 accumulate, no TF32; each output is one sequential fmaf chain over k, the same
//   exactness class as cuBLAS's fp32 SGEMM). Design at the head of that section, below.
//   gemm_sgemm_64x64_{vec4,scalar}_k{2,4,8} (sm_90+): the 64x64 tile with K split over the
//   CTAs of a 2-, 4- or 8-CTA cluster, partials added in rank order through distributed shared
//   memory (each output is then a fixed-order sum of S fmaf chains).
// gemm_simt_fp32: the first fp32 kernel (block tile 64x64x16, 256 threads each computing 4x4
//   outputs), kept for A/B (KERNELGATE_GEMM_FP32=simple).
#include "kg_common.cuh"
#include <mma.h>
using namespace nvcuda;

#define TC_BM 128
#define TC_BN 128
#define TC_BK 32
#define TC_PAD 8

template <typename T>
__device__ __forceinline__ T kg_from_float(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 kg_from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half kg_from_float<__half>(float x) { return __float2half_rn(x); }

template <typename T>
__device__ __forceinline__ T kg_zero();
template <>
__device__ __forceinline__ __nv_bfloat16 kg_zero<__nv_bfloat16>() { return __float2bfloat16_rn(0.0f); }
template <>
__device__ __forceinline__ __half kg_zero<__half>() { return __float2half_rn(0.0f); }

template <typename T>
__device__ __forceinline__ void gemm_tc(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                        int M, int N, int K) {
    __shared__ __align__(128) T As[TC_BM][TC_BK + TC_PAD];
    __shared__ __align__(128) T Bs[TC_BK][TC_BN + TC_PAD];
    __shared__ __align__(128) float scratch[8][16 * 16];

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / 4;  // 0..1: 64-row slab
    const int wn = warp % 4;  // 0..3: 32-col slab
    const int row0 = blockIdx.y * TC_BM;
    const int col0 = blockIdx.x * TC_BN;
    const bool a_vec = (K % 8) == 0;
    const bool b_vec = (N % 8) == 0;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += TC_BK) {
        // A tile: 128 x 32.
        if (a_vec) {
            for (int v = tid; v < TC_BM * TC_BK / 8; v += 256) {
                int r = v / (TC_BK / 8), c = (v % (TC_BK / 8)) * 8;
                int gr = row0 + r, gc = k0 + c;
                uint4 val = make_uint4(0, 0, 0, 0);
                if (gr < M && gc < K) val = *reinterpret_cast<const uint4*>(A + (size_t)gr * K + gc);
                *reinterpret_cast<uint4*>(&As[r][c]) = val;
            }
        } else {
            for (int e = tid; e < TC_BM * TC_BK; e += 256) {
                int r = e / TC_BK, c = e % TC_BK;
                int gr = row0 + r, gc = k0 + c;
                As[r][c] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : kg_zero<T>();
            }
        }
        // B tile: 32 x 128.
        if (b_vec) {
            for (int v = tid; v < TC_BK * TC_BN / 8; v += 256) {
                int r = v / (TC_BN / 8), c = (v % (TC_BN / 8)) * 8;
                int gr = k0 + r, gc = col0 + c;
                uint4 val = make_uint4(0, 0, 0, 0);
                if (gr < K && gc < N) val = *reinterpret_cast<const uint4*>(B + (size_t)gr * N + gc);
                *reinterpret_cast<uint4*>(&Bs[r][c]) = val;
            }
        } else {
            for (int e = tid; e < TC_BK * TC_BN; e += 256) {
                int r = e / TC_BN, c = e % TC_BN;
                int gr = k0 + r, gc = col0 + c;
                Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : kg_zero<T>();
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TC_BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> af[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bf[2];
#pragma unroll
            for (int i = 0; i < 4; i++) wmma::load_matrix_sync(af[i], &As[wm * 64 + i * 16][kk], TC_BK + TC_PAD);
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(bf[j], &Bs[kk][wn * 32 + j * 16], TC_BN + TC_PAD);
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], af[i], bf[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            wmma::store_matrix_sync(scratch[warp], acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            int r0 = row0 + wm * 64 + i * 16;
            int c0 = col0 + wn * 32 + j * 16;
            for (int e = lane; e < 256; e += 32) {
                int r = r0 + e / 16, c = c0 + e % 16;
                if (r < M && c < N) C[(size_t)r * N + c] = kg_from_float<T>(scratch[warp][e]);
            }
            __syncwarp();
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) gemm_tc_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K) {
    gemm_tc<__nv_bfloat16>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(256) gemm_tc_fp16(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    gemm_tc<__half>(A, B, C, M, N, K);
}

#define S_BM 64
#define S_BN 64
#define S_BK 16

extern "C" __global__ void __launch_bounds__(256) gemm_simt_fp32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[S_BK][S_BM + 4];  // transposed: As[k][m]
    __shared__ float Bs[S_BK][S_BN + 4];
    const int tid = threadIdx.x;
    const int tr = (tid / 16) * 4;  // 16 x 16 threads, 4x4 outputs each
    const int tc = (tid % 16) * 4;
    const int row0 = blockIdx.y * S_BM;
    const int col0 = blockIdx.x * S_BN;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += S_BK) {
        for (int e = tid; e < S_BM * S_BK; e += 256) {
            int r = e / S_BK, c = e % S_BK;
            int gr = row0 + r, gc = k0 + c;
            As[c][r] = (gr < M && gc < K) ? A[(size_t)gr * K + gc] : 0.0f;
        }
        for (int e = tid; e < S_BK * S_BN; e += 256) {
            int r = e / S_BN, c = e % S_BN;
            int gr = k0 + r, gc = col0 + c;
            Bs[r][c] = (gr < K && gc < N) ? B[(size_t)gr * N + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < S_BK; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = As[kk][tr + i];
#pragma unroll
            for (int j = 0; j < 4; j++) b[j] = Bs[kk][tc + j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int r = row0 + tr + i, c = col0 + tc + j;
            if (r < M && c < N) C[(size_t)r * N + c] = acc[i][j];
        }
}

// ---------------------------------------------------------------------------------------------
// gemm_sgemm_*: register-tiled SIMT SGEMM, C = A·B, fp32, row-major, any M, N, K.
//
// Block tile BM x BN x BK (BM x BN = 128x128, 128x64 or 64x64, picked by the launcher by shape;
// BK = 16 with 2 stages for 128x128, SG_BK = 8 with SG_STAGES = 3 for the others; with BK = 16 the
// transposing stores are 2-way bank-conflicted).
// Every warp owns a 64 x 32 slab of C; its 32 lanes form 8 (M) x 4 (N) and each lane computes
// 8 x 8 outputs as 2 x 2 sub-tiles of 4 x 4: rows r, r+32 (+0..3) and columns c, c+16 (+0..3),
// with r = 4·(lane/4) and c = 4·(lane%4) inside the slab. Per k step a lane reads its 8 A
// values and 8 B values as four 16-byte shared loads and issues 64 FFMAs (each output is one
// sequential fmaf chain over k: plain fp32, no TF32). In one warp those loads touch 8 distinct
// float4 of A (128 contiguous bytes) and 4 of B (64 bytes), each shared by 4 or 8 lanes
// (broadcast), so they are free of bank conflicts.
//
// Shared memory: SG_STAGES stages of the A tile, transposed (As[k][m], row pitch BM + 4 so the
// two k-quads a warp writes fall in different banks when BK = 8), and of the B tile (Bs[k][n]). Tiles
// arrive by cp.async, which needs no staging registers: A as 4-byte copies (that is what
// transposes it), B as 16-byte copies when VEC, else 4-byte ones. Out-of-range elements are
// zero-filled (src-size 0), so a partial last k tile adds exact zeros. Pipeline: SG_STAGES - 1
// tiles are in flight; during the last k step of tile t each thread waits for its copies of
// tile t+1, one __syncthreads publishes them (and tells that every thread is done reading tile
// t's stage), the copies of tile t+SG_STAGES are issued into that stage, and the first
// fragments of tile t+1 are read while tile t's last FFMAs issue. Fragments are
// double-buffered in registers (step kk+1 is read during step kk).
//
// VEC (the launcher passes it when N % 4 == 0 and B, C are 16-byte aligned): 16-byte copies of
// B and float4 stores of C; otherwise element-wise. The epilogue stores rows < M, columns < N.
// Tiles are numbered on a 1-D grid (N fastest), so neither M nor N is limited by gridDim.y.
// Threads: (BM/64)·(BN/32)·32 = 256, 128 or 64, with at most 128 registers (launch bounds for
// 16 resident warps per SM in every configuration). Needs sm_80+ (cp.async).
#define SG_BK 8
#define SG_APAD 4
#define SG_STAGES 3

__device__ __forceinline__ void sg_cp4(unsigned dst, const float* src, bool ok) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
__device__ __forceinline__ void sg_cp16(unsigned dst, const float* src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void sg_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void sg_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include "hopper_sync.cuh"

// Split-K epilogue of sgemm_tiled (SPLIT CTAs of one thread-block cluster share a tile, each
// holding the partial sums of its k run in `acc`): every CTA stores its partial tile in its own
// shared memory; after a cluster barrier, CTA rank r adds rows [r·BM/SPLIT, (r+1)·BM/SPLIT) of
// all SPLIT partials, read through distributed shared memory in rank order (0, 1, ..., so the
// result does not depend on which CTA finished first), and stores them to C; a second barrier
// keeps every CTA's shared memory alive until all reads are done. No workspace, no atomics, one
// launch. Needs sm_90 (clusters).
template <int BM, int BN, bool VEC, int SPLIT, int THREADS>
__device__ __forceinline__ void sgemm_cluster_reduce(const float (&acc)[8][8], int tm, int tn, int row0, int col0,
                                                     float* __restrict__ C, int M, int N) {
    constexpr int P = BN + 4;  // row pitch of the staged tile (floats)
    constexpr int ROWS = BM / SPLIT;
    constexpr int V4 = ROWS * BN / 4;  // float4s this CTA reduces
    static_assert(BM % SPLIT == 0 && V4 % THREADS == 0, "split rows must divide evenly among the threads");
    __shared__ __align__(16) float part[BM * P];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            *reinterpret_cast<float4*>(&part[(tm + (i & 3) + (i >> 2) * 32) * P + tn + h * 16]) =
                make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
    cluster_sync_aligned();
    const unsigned rank = cluster_ctarank();
    const unsigned base = smem_u32(part);
#pragma unroll
    for (int j = 0; j < V4 / THREADS; j++) {
        const int e = (int)threadIdx.x + j * THREADS;
        const int r = (int)rank * ROWS + e / (BN / 4);
        const int c = (e % (BN / 4)) * 4;
        const unsigned local = base + (unsigned)((r * P + c) * 4);
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int q = 0; q < SPLIT; q++) {
            float4 v;
            asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                         : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                         : "r"(cluster_map(local, q))
                         : "memory");
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        const int gr = row0 + r, gc = col0 + c;
        if (gr < M) {
            float* p = C + (size_t)gr * N + gc;
            if (VEC) {
                if (gc < N) *reinterpret_cast<float4*>(p) = sum;
            } else {
                const float s4[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
                for (int t = 0; t < 4; t++)
                    if (gc + t < N) p[t] = s4[t];
            }
        }
    }
    cluster_sync_aligned();
}
#else
template <int BM, int BN, bool VEC, int SPLIT, int THREADS>
__device__ __forceinline__ void sgemm_cluster_reduce(const float (&)[8][8], int, int, int, int, float*, int, int) {
    __trap();  // split entries exist only for sm_90+; the launcher never picks them elsewhere
}
#endif

template <int BM, int BN, int BK, bool VEC, int STAGES, int SPLIT = 1>
__device__ __forceinline__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, int M, int N, int K) {
    constexpr int WARPS_N = BN / 32;
    constexpr int THREADS = (BM / 64) * WARPS_N * 32;
    constexpr int A_LOADS = BM * BK / 4 / THREADS;  // 4-element groups of A per thread per tile
    constexpr int B_LOADS = BK * BN / 4 / THREADS;  // 4-element groups of B per thread per tile
    constexpr int AP = BM + SG_APAD;
    constexpr int A_STAGE = BK * AP;  // floats
    constexpr int B_STAGE = BK * BN;
    static_assert(A_LOADS >= 1 && B_LOADS >= 1, "tile too small for the thread count");
    static_assert(A_LOADS * THREADS * 4 == BM * BK && B_LOADS * THREADS * 4 == BK * BN, "uneven tile loads");
    static_assert(STAGES >= 2 && BK % 4 == 0 && THREADS % (BK / 4) == 0, "at least two stages, k tile a multiple of 4");
    __shared__ __align__(16) float As[STAGES * A_STAGE];
    __shared__ __align__(16) float Bs[STAGES * B_STAGE];

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int tm = (warp / WARPS_N) * 64 + (lane >> 2) * 4;  // first row of this lane's outputs in the tile
    const int tn = (warp % WARPS_N) * 32 + (lane & 3) * 4;   // first column
    const int tiles_n = (N + BN - 1) / BN;
    // With SPLIT > 1 the SPLIT CTAs of a cluster share one output tile (grid x = tiles · SPLIT,
    // consecutive CTAs one cluster) and each takes an equal run of its k tiles (the last runs may
    // be shorter or empty); with SPLIT = 1 every expression below folds to the unsplit kernel.
    const unsigned tile = SPLIT > 1 ? blockIdx.x / SPLIT : blockIdx.x;
    const int row0 = (int)(tile / tiles_n) * BM;
    const int col0 = (int)(tile % tiles_n) * BN;
    const int k_tiles_all = (K + BK - 1) / BK;
    const int k_run = SPLIT > 1 ? (k_tiles_all + SPLIT - 1) / SPLIT : k_tiles_all;
    const int kt0 = SPLIT > 1 ? (int)(blockIdx.x % SPLIT) * k_run : 0;  // this CTA's first k tile
    const int k_tiles = SPLIT > 1 ? max(0, min(k_run, k_tiles_all - kt0)) : k_tiles_all;

    // This thread's share of each tile: A group i is row am(i), k offsets ak..ak+3 (ak is the
    // same for every i since THREADS is a multiple of BK/4); B group i is k row bk(i), columns
    // bn..bn+3.
    // Consecutive threads take consecutive groups. The source pointers start at k tile 0 and
    // advance one tile per issue; rows of A past M and columns of B past N are clamped to row
    // (column) 0 so every pointer stays inside its matrix (their copies are zero-filled).
    const int ak = (tid % (BK / 4)) * 4;
    const int bn = (tid % (BN / 4)) * 4;
    const float* pa[A_LOADS];
    const float* pb[B_LOADS];
    bool a_row_ok[A_LOADS];
    bool b_col_ok[4];
    int b_off[4];  // column offset inside a B group: j where column bn+j exists, else 0
#pragma unroll
    for (int i = 0; i < A_LOADS; i++) {
        const int gr = row0 + (tid + i * THREADS) / (BK / 4);
        a_row_ok[i] = gr < M;
        pa[i] = A + (size_t)(a_row_ok[i] ? gr : 0) * K + ak + (size_t)kt0 * BK;
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        b_col_ok[j] = col0 + bn + j < N;
        b_off[j] = b_col_ok[j] ? j : 0;
    }
    const int b_col = b_col_ok[0] ? col0 + bn : 0;
#pragma unroll
    for (int i = 0; i < B_LOADS; i++)
        pb[i] = B + ((size_t)kt0 * BK + (size_t)((tid + i * THREADS) / (BN / 4))) * N + b_col;
    const size_t b_step = (size_t)BK * N;
    const unsigned as0 = (unsigned)__cvta_generic_to_shared(As);
    const unsigned bs0 = (unsigned)__cvta_generic_to_shared(Bs);
    // Byte offsets inside a stage of this thread's destinations (group 0; group i adds a
    // compile-time step).
    const unsigned a_dst = (unsigned)((ak * AP + tid / (BK / 4)) * 4);
    const unsigned b_dst = (unsigned)(((tid / (BN / 4)) * BN + bn) * 4);

    // Issues the copies of the next k tile (the issue-th) into stage `s`, nothing past the last
    // tile, and commits them as one group (possibly empty, so group counting stays uniform).
    // Whole tiles need only the loop-invariant row/column predicates; the partial last tile
    // also checks k.
    int issued = 0;
    auto issue = [&](int s) {
        if (issued < k_tiles) {
            const int k0 = (kt0 + issued) * BK;
            const unsigned da = as0 + (unsigned)(s * A_STAGE * 4) + a_dst;
            const unsigned db = bs0 + (unsigned)(s * B_STAGE * 4) + b_dst;
            if (k0 + BK <= K) {
#pragma unroll
                for (int i = 0; i < A_LOADS; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        sg_cp4(da + (unsigned)((i * (THREADS / (BK / 4)) + j * AP) * 4), pa[i] + j, a_row_ok[i]);
#pragma unroll
                for (int i = 0; i < B_LOADS; i++) {
                    const unsigned d = db + (unsigned)(i * (THREADS / (BN / 4)) * BN * 4);
                    if (VEC) {
                        sg_cp16(d, pb[i], b_col_ok[0]);
                    } else {
#pragma unroll
                        for (int j = 0; j < 4; j++) sg_cp4(d + (unsigned)(j * 4), pb[i] + b_off[j], b_col_ok[j]);
                    }
                }
            } else {
#pragma unroll
                for (int i = 0; i < A_LOADS; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const bool ok = a_row_ok[i] && k0 + ak + j < K;
                        sg_cp4(da + (unsigned)((i * (THREADS / (BK / 4)) + j * AP) * 4), ok ? pa[i] + j : A, ok);
                    }
#pragma unroll
                for (int i = 0; i < B_LOADS; i++) {
                    const bool k_ok = k0 + (tid + i * THREADS) / (BN / 4) < K;
                    const unsigned d = db + (unsigned)(i * (THREADS / (BN / 4)) * BN * 4);
                    if (VEC) {
                        const bool ok = k_ok && b_col_ok[0];
                        sg_cp16(d, ok ? pb[i] : B, ok);
                    } else {
#pragma unroll
                        for (int j = 0; j < 4; j++) {
                            const bool ok = k_ok && b_col_ok[j];
                            sg_cp4(d + (unsigned)(j * 4), ok ? pb[i] + j : B, ok);
                        }
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < A_LOADS; i++) pa[i] += BK;
#pragma unroll
            for (int i = 0; i < B_LOADS; i++) pb[i] += b_step;
            issued++;
        }
        sg_commit();
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
    float4 fa[2][2], fb[2][2];  // [register stage][sub-tile]
    auto load_frag = [&](int s, int kk, int f) {
        const float* a = As + s * A_STAGE + kk * AP + tm;
        const float* b = Bs + s * B_STAGE + kk * BN + tn;
        fa[f][0] = *reinterpret_cast<const float4*>(a);
        fa[f][1] = *reinterpret_cast<const float4*>(a + 32);
        fb[f][0] = *reinterpret_cast<const float4*>(b);
        fb[f][1] = *reinterpret_cast<const float4*>(b + 16);
    };

    if (k_tiles > 0) {
#pragma unroll
        for (int t = 0; t < STAGES - 1; t++) issue(t);
        sg_wait<STAGES - 2>();
        __syncthreads();
        issue(STAGES - 1);
        load_frag(0, 0, 0);
    }
    int s = 0;  // stage of tile t
    for (int t = 0; t < k_tiles; t++) {
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            const int f = kk & 1;
            if (kk < BK - 1) {
                load_frag(s, kk + 1, f ^ 1);
            } else if (t + 1 < k_tiles) {
                // Tile t+1 has landed for every thread, and every thread has read all of tile
                // t's stage: refill that stage with tile t+STAGES, read tile t+1's first step.
                sg_wait<STAGES - 2>();
                __syncthreads();
                issue(s);
                load_frag(s + 1 == STAGES ? 0 : s + 1, 0, f ^ 1);
            }
            const float a[8] = {fa[f][0].x, fa[f][0].y, fa[f][0].z, fa[f][0].w,
                                fa[f][1].x, fa[f][1].y, fa[f][1].z, fa[f][1].w};
            const float b[8] = {fb[f][0].x, fb[f][0].y, fb[f][0].z, fb[f][0].w,
                                fb[f][1].x, fb[f][1].y, fb[f][1].z, fb[f][1].w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        s = s + 1 == STAGES ? 0 : s + 1;
    }
    sg_wait<0>();  // no copy may be outstanding at exit (they are all empty or consumed by now)

    if constexpr (SPLIT > 1) {
        sgemm_cluster_reduce<BM, BN, VEC, SPLIT, THREADS>(acc, tm, tn, row0, col0, C, M, N);
    } else {
        // Epilogue: rows tm + {0..3} and tm + 32 + {0..3}, columns tn + {0..3} and tn + 16 + {0..3}.
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int r = row0 + tm + (i & 3) + (i >> 2) * 32;
            if (r >= M) continue;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int c = col0 + tn + h * 16;
                float* p = C + (size_t)r * N + c;
                if (VEC) {
                    if (c < N)
                        *reinterpret_cast<float4*>(p) =
                            make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
                } else {
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        if (c + j < N) p[j] = acc[i][h * 4 + j];
                }
            }
        }
    }
}

// Entry points: gemm_sgemm_<BM>x<BN>_<vec4|scalar>; grid (ceil(M/BM)·ceil(N/BN), 1, 1), block
// ((BM/64)·(BN/32)·32, 1, 1), no dynamic shared memory. The 128x128 tile runs BK = 16 with 2
// stages (33 KB): kernels/dev/run_sgemm_bench.sh on an H100 (GPU-be034599, session 20) timed it
// at 3207 µs against 3345 for BK = 8 with 3 stages at 4096^3 (cuBLAS 2705; 0.84x against
// 0.81x), as session 7 had on 2048^3 and 4096^3. The smaller tiles keep SG_BK, SG_STAGES.
#define SG_ENTRY(BM, BN, MINB, BK, ST)                                                                     \
    extern "C" __global__ void __launch_bounds__((BM / 64) * (BN / 32) * 32, MINB)                          \
        gemm_sgemm_##BM##x##BN##_vec4(const float* A, const float* B, float* C, int M, int N, int K) {      \
        sgemm_tiled<BM, BN, BK, true, ST>(A, B, C, M, N, K);                                               \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__((BM / 64) * (BN / 32) * 32, MINB)                          \
        gemm_sgemm_##BM##x##BN##_scalar(const float* A, const float* B, float* C, int M, int N, int K) {    \
        sgemm_tiled<BM, BN, BK, false, ST>(A, B, C, M, N, K);                                              \
    }
SG_ENTRY(128, 128, 2, 16, 2)
SG_ENTRY(128, 64, 4, SG_BK, SG_STAGES)
SG_ENTRY(64, 64, 8, SG_BK, SG_STAGES)

// Split-K entries of the 64x64 tile (sm_90+): gemm_sgemm_64x64_<vec4|scalar>_k<S>, compiled with
// __cluster_dims__(S, 1, 1); grid (ceil(M/64)·ceil(N/64)·S, 1, 1), block (64, 1, 1). The S CTAs
// of a cluster split the k tiles of one output tile and add their partials through distributed
// shared memory (sgemm_cluster_reduce). For outputs too small to give every SM a CTA.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SG_SPLIT_ENTRY(S)                                                                                  \
    extern "C" __global__ void __cluster_dims__(S, 1, 1) __launch_bounds__(64, 4)                           \
        gemm_sgemm_64x64_vec4_k##S(const float* A, const float* B, float* C, int M, int N, int K) {        \
        sgemm_tiled<64, 64, SG_BK, true, SG_STAGES, S>(A, B, C, M, N, K);                                  \
    }                                                                                                      \
    extern "C" __global__ void __cluster_dims__(S, 1, 1) __launch_bounds__(64, 4)                           \
        gemm_sgemm_64x64_scalar_k##S(const float* A, const float* B, float* C, int M, int N, int K) {      \
        sgemm_tiled<64, 64, SG_BK, false, SG_STAGES, S>(A, B, C, M, N, K);                                 \
    }
SG_SPLIT_ENTRY(2)
SG_SPLIT_ENTRY(4)
SG_SPLIT_ENTRY(8)
#endif
