// kernelgate GEMM, skinny shapes: C[M,N] = A[M,K] · B[K,N], all row-major, where one of M or N
// is at most 16. Such a GEMM is a (multi-)GEMV: its time is reading the large operand once, so
// these kernels stream it with 16-byte loads and keep the small one in shared memory or L1.
// fp32 accumulation everywhere (fp32 inputs: plain FFMA, no TF32).
//
// gemm_skinny_m_<dt>_<MT> (M <= MT <= 16): B (K x N) is the big operand.
//   Grid (ceil(N / (256·VEC)), splits); 256 threads, each owning VEC = 16/sizeof(T) adjacent
//   columns. CTA (x, s) reads rows [s·kchunk, (s+1)·kchunk) of B once, coalesced (a warp reads
//   512 contiguous bytes of a row), and A's M x kchunk slice from shared memory (as fp32).
//   Eight rows of B are loaded before any is used so 8 x 16 bytes per thread are in flight.
//   splits == 1: the CTA writes C. splits > 1: CTA (x, s) writes its fp32 partial sums to
//   slice s of a [splits][M][N] workspace (a few MB, L2-resident) and gemm_skinny_reduce_<dt>
//   adds the slices in a fixed order (deterministic) and converts.
// gemm_skinny_n_<dt>_<NT> (N <= NT <= 16): A (M x K) is the big operand.
//   One warp per R rows (R = 8 for NT <= 8, else 4), 8 warps per CTA; grid (row groups, splits),
//   CTA (g, s) runs K range [s·kchunk, (s+1)·kchunk): lane l reads A[row, k..k+VEC) for
//   k = 32·VEC·i + VEC·l (16-byte loads; the next step's loads are issued before this step's
//   math), B's VEC x N block at k comes from L1/L2 (B is K·N·sizeof(T) bytes and every warp of
//   the CTA reads the same rows), and each lane keeps R x NT partial dot products, reduced
//   across the warp with shuffles at the end; split K writes partials as skinny_m does.
// Unaligned shapes (N for skinny_m, K for skinny_n not a multiple of VEC) fall back to scalar,
// bounds-checked loads; out-of-range elements count as zero.
#include "kg_common.cuh"

#define SKM_THREADS 256
#define SKM_KC 256  // most rows of B (and columns of A) one skinny_m CTA handles
#define SKN_WARPS 8

template <typename T> struct SkT;
template <> struct SkT<float> {
    static __device__ __forceinline__ float f(float x) { return x; }
    static __device__ __forceinline__ float t(float x) { return x; }
    // 4 floats from 16 bytes.
    static __device__ __forceinline__ void unpack(const uint4& u, float* o) {
        o[0] = __uint_as_float(u.x);
        o[1] = __uint_as_float(u.y);
        o[2] = __uint_as_float(u.z);
        o[3] = __uint_as_float(u.w);
    }
};
template <> struct SkT<__nv_bfloat16> {
    static __device__ __forceinline__ float f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 t(float x) { return __float2bfloat16_rn(x); }
    // 8 bf16 from 16 bytes: a bf16 is the high half of an fp32.
    static __device__ __forceinline__ void unpack(const uint4& u, float* o) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            o[2 * i] = __uint_as_float(w[i] << 16);
            o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
};
template <> struct SkT<__half> {
    static __device__ __forceinline__ float f(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half t(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ void unpack(const uint4& u, float* o) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            __half2 h = *reinterpret_cast<const __half2*>(&w[i]);
            float2 f = __half22float2(h);
            o[2 * i] = f.x;
            o[2 * i + 1] = f.y;
        }
    }
};

// ---- skinny M -------------------------------------------------------------------------------

template <typename T, int MT>
__device__ __forceinline__ void skinny_m(const T* __restrict__ A, const T* __restrict__ B,
                                         T* __restrict__ C, float* __restrict__ part, int M,
                                         int N, int K, int kchunk) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = 8;  // rows of B in flight per thread
    __shared__ float As[MT][SKM_KC];
    const int k0 = blockIdx.y * kchunk;
    const int kn = min(kchunk, K - k0);
    for (int i = threadIdx.x; i < MT * kn; i += SKM_THREADS) {
        const int m = i / kn, kk = i - m * kn;
        As[m][kk] = m < M ? SkT<T>::f(A[(size_t)m * K + k0 + kk]) : 0.0f;
    }
    __syncthreads();
    const int col = (blockIdx.x * SKM_THREADS + threadIdx.x) * VEC;
    if (col >= N || kn <= 0) return;
    float acc[MT][VEC];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < VEC; j++) acc[m][j] = 0.0f;
    // Rows of B are N·sizeof(T) bytes apart: 16-byte loads are aligned when N % VEC == 0.
    const bool vec = (N % VEC) == 0 && col + VEC <= N;
    const T* bp = B + (size_t)k0 * N + col;
    int kk = 0;
    if (vec) {
        for (; kk + U <= kn; kk += U) {
            uint4 raw[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                raw[u] = __ldg(reinterpret_cast<const uint4*>(bp + (size_t)(kk + u) * N));
#pragma unroll
            for (int u = 0; u < U; u++) {
                float b[VEC];
                SkT<T>::unpack(raw[u], b);
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    const float a = As[m][kk + u];
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[m][j] = fmaf(a, b[j], acc[m][j]);
                }
            }
        }
        for (; kk < kn; kk++) {
            float b[VEC];
            SkT<T>::unpack(__ldg(reinterpret_cast<const uint4*>(bp + (size_t)kk * N)), b);
#pragma unroll
            for (int m = 0; m < MT; m++) {
                const float a = As[m][kk];
#pragma unroll
                for (int j = 0; j < VEC; j++) acc[m][j] = fmaf(a, b[j], acc[m][j]);
            }
        }
    } else {
        for (; kk < kn; kk++) {
            float b[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++)
                b[j] = col + j < N ? SkT<T>::f(bp[(size_t)kk * N + j]) : 0.0f;
#pragma unroll
            for (int m = 0; m < MT; m++) {
                const float a = As[m][kk];
#pragma unroll
                for (int j = 0; j < VEC; j++) acc[m][j] = fmaf(a, b[j], acc[m][j]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MT; m++) {
        if (m >= M) break;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            if (col + j >= N) break;
            const size_t i = (size_t)m * N + col + j;
            if (part)
                part[(size_t)blockIdx.y * M * N + i] = acc[m][j];
            else
                C[i] = SkT<T>::t(acc[m][j]);
        }
    }
}

// ---- skinny N -------------------------------------------------------------------------------

template <typename T, int NT, int R>
__device__ __forceinline__ void skinny_n_loadA(const T* __restrict__ A, int row0, int M, int K,
                                               int k, bool a_vec, uint4 (&raw)[R]) {
    constexpr int VEC = 16 / sizeof(T);
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = row0 + r;
        if (row < M && a_vec && k + VEC <= K) {
            raw[r] = __ldg(reinterpret_cast<const uint4*>(A + (size_t)row * K + k));
        } else {
            // Scalar, bounds-checked: assemble the 16 bytes by hand (zeros outside).
            union {
                uint4 u;
                T v[VEC];
            } x;
#pragma unroll
            for (int j = 0; j < VEC; j++)
                x.v[j] = (row < M && k + j < K) ? A[(size_t)row * K + k + j] : SkT<T>::t(0.0f);
            raw[r] = x.u;
        }
    }
}

template <typename T, int NT, int R>
__device__ __forceinline__ void skinny_n(const T* __restrict__ A, const T* __restrict__ B,
                                         T* __restrict__ C, float* __restrict__ part, int M,
                                         int N, int K, int kchunk) {
    constexpr int VEC = 16 / sizeof(T);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int row0 = (blockIdx.x * SKN_WARPS + warp) * R;
    if (row0 >= M) return;
    const int kbeg = blockIdx.y * kchunk;
    const int kend = min(K, kbeg + kchunk);
    float acc[R][NT];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NT; n++) acc[r][n] = 0.0f;
    // A's rows are K·sizeof(T) bytes apart (aligned 16-byte loads need K % VEC == 0); B's rows
    // N·sizeof(T) (vector loads of a B row need N % VEC == 0). kchunk is a multiple of VEC.
    const bool a_vec = (K % VEC) == 0;
    const bool b_vec = (N % VEC) == 0;
    constexpr int STEP = 32 * VEC;
    int k = kbeg + lane * VEC;
    uint4 cur[R], nxt[R];
    if (k < kend) skinny_n_loadA<T, NT, R>(A, row0, M, K, k, a_vec, cur);
    for (; k < kend; k += STEP) {
        if (k + STEP < kend) skinny_n_loadA<T, NT, R>(A, row0, M, K, k + STEP, a_vec, nxt);
        float a[R][VEC];
#pragma unroll
        for (int r = 0; r < R; r++) SkT<T>::unpack(cur[r], a[r]);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            if (k + j >= kend) break;
            float b[NT];
            const T* brow = B + (size_t)(k + j) * N;
            if (b_vec) {
#pragma unroll
                for (int v = 0; v < NT / VEC; v++) {
                    if (v * VEC < N) {
                        SkT<T>::unpack(__ldg(reinterpret_cast<const uint4*>(brow + v * VEC)), b + v * VEC);
                    } else {
#pragma unroll
                        for (int q = 0; q < VEC; q++) b[v * VEC + q] = 0.0f;
                    }
                }
            } else {
#pragma unroll
                for (int n = 0; n < NT; n++) b[n] = n < N ? SkT<T>::f(brow[n]) : 0.0f;
            }
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int n = 0; n < NT; n++) acc[r][n] = fmaf(a[r][j], b[n], acc[r][n]);
        }
#pragma unroll
        for (int r = 0; r < R; r++) cur[r] = nxt[r];
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NT; n++) {
            float v = acc[r][n];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            acc[r][n] = v;
        }
    // Lane n (< N) of the warp writes column n of each of its rows.
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = row0 + r;
        if (row >= M) break;
#pragma unroll
        for (int n = 0; n < NT; n++)
            if (lane == n && n < N) {
                const size_t i = (size_t)row * N + n;
                if (part)
                    part[(size_t)blockIdx.y * M * N + i] = acc[r][n];
                else
                    C[i] = SkT<T>::t(acc[r][n]);
            }
    }
}

// ---- entry points -----------------------------------------------------------------------------

// C = Σ_s part[s] in a fixed order, converted (split-K epilogue of both kernels).
#define SK_REDUCE(NAME, T)                                                                         \
    extern "C" __global__ void NAME(const float* __restrict__ part, T* __restrict__ C,             \
                                    long long mn, int splits) {                                    \
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < mn;               \
             i += (long long)gridDim.x * blockDim.x) {                                             \
            float s = 0.0f;                                                                        \
            for (int q = 0; q < splits; q++) s += part[(size_t)q * mn + i];                        \
            C[i] = SkT<T>::t(s);                                                                   \
        }                                                                                          \
    }
SK_REDUCE(gemm_skinny_reduce_bf16, __nv_bfloat16)
SK_REDUCE(gemm_skinny_reduce_fp16, __half)
SK_REDUCE(gemm_skinny_reduce_fp32, float)

#define SK_M(NAME, T, MT)                                                                          \
    extern "C" __global__ void __launch_bounds__(SKM_THREADS)                                      \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,                  \
             float* __restrict__ part, int M, int N, int K, int kchunk) {                          \
        skinny_m<T, MT>(A, B, C, part, M, N, K, kchunk);                                           \
    }
#define SK_M_ALL(DT, T)                                  \
    SK_M(gemm_skinny_m_##DT##_1, T, 1)                   \
    SK_M(gemm_skinny_m_##DT##_2, T, 2)                   \
    SK_M(gemm_skinny_m_##DT##_4, T, 4)                   \
    SK_M(gemm_skinny_m_##DT##_8, T, 8)                   \
    SK_M(gemm_skinny_m_##DT##_16, T, 16)
SK_M_ALL(bf16, __nv_bfloat16)
SK_M_ALL(fp16, __half)
SK_M_ALL(fp32, float)

#define SK_N(NAME, T, NT, R)                                                                       \
    extern "C" __global__ void __launch_bounds__(SKN_WARPS * 32)                                   \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,                  \
             float* __restrict__ part, int M, int N, int K, int kchunk) {                          \
        skinny_n<T, NT, R>(A, B, C, part, M, N, K, kchunk);                                        \
    }
// NT is a multiple of VEC (8 for 16-bit types, 4 for fp32) so B rows load as whole vectors.
SK_N(gemm_skinny_n_bf16_8, __nv_bfloat16, 8, 8)
SK_N(gemm_skinny_n_bf16_16, __nv_bfloat16, 16, 4)
SK_N(gemm_skinny_n_fp16_8, __half, 8, 8)
SK_N(gemm_skinny_n_fp16_16, __half, 16, 4)
SK_N(gemm_skinny_n_fp32_4, float, 4, 8)
SK_N(gemm_skinny_n_fp32_8, float, 8, 8)
SK_N(gemm_skinny_n_fp32_16, float, 16, 4)
