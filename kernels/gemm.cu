// kernelgate GEMM, portable kernels: C[M,N] = A[M,K] · B[K,N], all row-major.
//
// gemm_tc_{bf16,fp16}: tensor cores through WMMA (16x16x16, fp32 accumulate), any M, N, K.
//   Block tile 128x128x32, 8 warps as 2 (M) x 4 (N), each warp 64x32 = 4x2 fragments.
//   Tiles are staged in padded shared memory (row pitch +8 elements against bank conflicts),
//   with 16-byte vector loads when K (for A) or N (for B) is a multiple of 8 and scalar,
//   bounds-checked loads otherwise; out-of-range elements load as zero. The epilogue goes
//   through a per-warp fp32 scratch tile so edge tiles store with bounds checks.
//   This is the general fallback; Hopper's fast path is gemm_wgmma.cu.
// gemm_simt_fp32: fp32 FFMA, block tile 64x64x16, 256 threads each computing 4x4 outputs.
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
