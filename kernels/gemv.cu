// kernelgate GEMM for M <= 8 in 16-bit types (session 14, opt-in: KERNELGATE_GEMM_GEMV=1):
// C[M,N] = A[M,K] · B[K,N], row-major, fp32 accumulation. B is read once; the point is to keep
// enough of it in flight on every SM for the whole kernel. gemm_skinny.cu's skinny-M kernel gives
// each CTA 2048 columns, so N = 4096 has two column blocks and the only parallelism left is
// splitting K into many short slices (1x4096x4096: 128 slices of 32 rows, each CTA done after
// four rounds of loads, then a reduction over 128 partials); Nsight Compute read it at 61% of
// DRAM peak on an H100, the wgmma path as well (session 14).
//
// Here a CTA of 256 threads owns a strip of 512 columns (64 16-byte vectors) and a slice of K:
// thread (g, c) = (tid / 64, tid % 64) takes vector c of the strip and the slice's rows
// k0 + g, k0 + g + 4, ...; it issues GV_U rows' loads, then the next GV_U rows' loads, and only
// then multiplies the first batch (two batches in registers), so a warp always has loads in
// flight. A's M x slice is staged in shared memory as fp32 (broadcast reads). The four row
// groups are added in shared memory in a fixed order ((g0 + g2) + (g1 + g3)). One slice: the
// CTA writes C. Several: slice s writes its fp32 partial sums to part[s][M][N] and the host's
// strip's last CTA (a counter per strip) adds them in slice order (deterministic) and writes C,
// in the same launch when `counters` is given; else gemm_gemv_reduce_* does it afterwards.
//
// Launch: grid (ceil(N / 512), slices), block 256, no dynamic shared memory; N % 8 == 0 (the
// host falls back otherwise), M <= MT, kchunk <= GV_KC (rows of B per slice; the last slice may
// be shorter). Entries gemm_gemv_<bf16|fp16>_<MT>, MT in {1, 2, 4, 8}.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define GV_THREADS 256
#define GV_STRIP 64  // 16-byte vectors per CTA strip (512 columns of a 16-bit type)
#define GV_GROUPS (GV_THREADS / GV_STRIP)
#define GV_U 4        // rows per batch; two batches in flight
#define GV_KC 512     // most rows of B per slice

namespace gemv_detail {

template <typename T> struct Gv;
template <> struct Gv<__nv_bfloat16> {
    static __device__ __forceinline__ float f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ unsigned pack(float a, float b) {
        __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<unsigned*>(&v);
    }
    static __device__ __forceinline__ void unpack(const uint4& u, float (&o)[8]) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            o[2 * i] = __uint_as_float(w[i] << 16);
            o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
};
template <> struct Gv<__half> {
    static __device__ __forceinline__ float f(__half x) { return __half2float(x); }
    static __device__ __forceinline__ unsigned pack(float a, float b) {
        __half2 v = __floats2half2_rn(a, b);
        return *reinterpret_cast<unsigned*>(&v);
    }
    static __device__ __forceinline__ void unpack(const uint4& u, float (&o)[8]) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
            o[2 * i] = f.x;
            o[2 * i + 1] = f.y;
        }
    }
};

__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
    uint4 q;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w)
                 : "l"(p));
    return q;
}

template <typename T, int MT>
__device__ __forceinline__ void gemv(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                     float* __restrict__ part, unsigned* __restrict__ counters, int M,
                                     int N, int K, int kchunk) {
    // A's slice as fp32, then (after the main loop) the row groups' partial sums.
    __shared__ __align__(16) float smem[(MT * GV_KC > 2 * GV_STRIP * MT * 8) ? MT * GV_KC : 2 * GV_STRIP * MT * 8];
    const int tid = threadIdx.x, c = tid % GV_STRIP, g = tid / GV_STRIP;
    const int k0 = blockIdx.y * kchunk;
    const int kn = min(kchunk, K - k0);
    for (int i = tid; i < MT * kn; i += GV_THREADS) {
        const int m = i / kn, kk = i - m * kn;
        smem[m * GV_KC + kk] = m < M ? Gv<T>::f(A[(size_t)m * K + k0 + kk]) : 0.0f;
    }
    __syncthreads();
    const int vcol = blockIdx.x * GV_STRIP + c;  // 16-byte vector index in a row of B
    const bool live = vcol * 8 < N;
    float acc[MT][8];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < 8; j++) acc[m][j] = 0.0f;
    const uint4* bp = reinterpret_cast<const uint4*>(B) + (size_t)k0 * (N / 8) + vcol;
    const size_t row_v = (size_t)(N / 8);
    // Row r of the slice (r = g + GV_GROUPS * i) is in flight as batch slot i % (2 * GV_U).
    uint4 q[2][GV_U];
    auto load = [&](int b, int r0) {
#pragma unroll
        for (int u = 0; u < GV_U; u++) {
            const int r = r0 + GV_GROUPS * u;
            q[b][u] = (live && r < kn) ? ld_stream(bp + (size_t)r * row_v) : make_uint4(0, 0, 0, 0);
        }
    };
    auto use = [&](int b, int r0) {
#pragma unroll
        for (int u = 0; u < GV_U; u++) {
            const int r = r0 + GV_GROUPS * u;
            if (r < kn) {
                float f[8];
                Gv<T>::unpack(q[b][u], f);
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    const float a = smem[m * GV_KC + r];
#pragma unroll
                    for (int j = 0; j < 8; j++) acc[m][j] = fmaf(a, f[j], acc[m][j]);
                }
            }
        }
    };
    constexpr int STEP = GV_GROUPS * GV_U;  // rows of the slice per batch, over the 4 groups
    int r0 = g;
    load(0, r0);
    for (; r0 < kn; r0 += 2 * STEP) {
        load(1, r0 + STEP);
        use(0, r0);
        load(0, r0 + 2 * STEP);
        use(1, r0 + STEP);
    }
    // The four row groups' sums, in the order (g0 + g2) + (g1 + g3).
    __syncthreads();  // every thread is done reading A's slice
    float* red = smem;
    auto slot = [&](int which, int m, int j) -> float& {
        return red[((which * MT + m) * 8 + j) * GV_STRIP + c];
    };
    if (g >= 2)
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int j = 0; j < 8; j++) slot(g - 2, m, j) = acc[m][j];
    __syncthreads();
    if (g < 2)
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[m][j] += slot(g, m, j);
    __syncthreads();
    if (g == 1)
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int j = 0; j < 8; j++) slot(0, m, j) = acc[m][j];
    __syncthreads();
    if (g == 0 && live) {
#pragma unroll
        for (int m = 0; m < MT; m++) {
            if (m >= M) break;
            float o[8];
#pragma unroll
            for (int j = 0; j < 8; j++) o[j] = acc[m][j] + slot(0, m, j);
            const size_t at = (size_t)m * N + (size_t)vcol * 8;
            if (gridDim.y == 1) {
                *reinterpret_cast<uint4*>(C + at) = make_uint4(Gv<T>::pack(o[0], o[1]), Gv<T>::pack(o[2], o[3]),
                                                               Gv<T>::pack(o[4], o[5]), Gv<T>::pack(o[6], o[7]));
            } else {
                float4* p = reinterpret_cast<float4*>(part + (size_t)blockIdx.y * M * N + at);
                p[0] = make_float4(o[0], o[1], o[2], o[3]);
                p[1] = make_float4(o[4], o[5], o[6], o[7]);
            }
        }
    }
    if (gridDim.y == 1 || counters == nullptr) return;
    // Several slices, fused reduction: the strip's last CTA to finish adds every slice's
    // partial in slice order (deterministic whatever order the CTAs ran in) and writes C; it
    // resets the strip's counter for the next launch.
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        const unsigned prev = atomicAdd(&counters[blockIdx.x], 1u);
        last = prev == gridDim.y - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    // 256 threads over the strip's M x 512 outputs, two adjacent columns each step.
    const int cols = min(GV_STRIP * 8, N - (int)blockIdx.x * GV_STRIP * 8);
    const int S = gridDim.y;
    for (int i = tid; i < M * (cols / 2); i += GV_THREADS) {
        const int m = i / (cols / 2), cc = 2 * (i - m * (cols / 2));
        const size_t at = (size_t)m * N + (size_t)blockIdx.x * GV_STRIP * 8 + cc;
        float2 t = make_float2(0.f, 0.f);
#pragma unroll 8
        for (int q = 0; q < S; q++) {
            const float2 v = __ldcg(reinterpret_cast<const float2*>(part + (size_t)q * M * N + at));
            t.x += v.x;
            t.y += v.y;
        }
        *reinterpret_cast<unsigned*>(C + at) = Gv<T>::pack(t.x, t.y);
    }
    if (tid == 0) counters[blockIdx.x] = 0;
}

}  // namespace gemv_detail

// C = part[0] + part[1] + ... + part[splits-1] for each of the `elems` outputs, in that order,
// rounded to T. A block of 256 threads owns 32 consecutive outputs: warp w adds splits w, w + 8,
// ... of its lane's output (coalesced 128-byte loads, several in flight), then warp 0 adds the
// eight warps' sums in warp order. Grid ceil(elems / 32).
template <typename T>
__device__ __forceinline__ void gemv_reduce(const float* __restrict__ part, T* __restrict__ C,
                                            long long elems, int splits) {
    __shared__ float red[8][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long e = (long long)blockIdx.x * 32 + lane;
    float s = 0.0f;
    if (e < elems)
#pragma unroll 4
        for (int q = warp; q < splits; q += 8) s += part[(size_t)q * elems + e];
    red[warp][lane] = s;
    __syncthreads();
    if (warp == 0 && e < elems) {
        float t = red[0][lane];
#pragma unroll
        for (int w = 1; w < 8; w++) t += red[w][lane];
        if constexpr (sizeof(T) == 2) {
            const unsigned v = gemv_detail::Gv<T>::pack(t, 0.0f);
            C[e] = *reinterpret_cast<const T*>(&v);
        }
    }
}
extern "C" __global__ void __launch_bounds__(256) gemm_gemv_reduce_bf16(const float* part, __nv_bfloat16* C,
                                                                        long long elems, int splits) {
    gemv_reduce<__nv_bfloat16>(part, C, elems, splits);
}
extern "C" __global__ void __launch_bounds__(256) gemm_gemv_reduce_fp16(const float* part, __half* C,
                                                                        long long elems, int splits) {
    gemv_reduce<__half>(part, C, elems, splits);
}

#define GV_ENTRY(NAME, T, MT)                                                                      \
    extern "C" __global__ void __launch_bounds__(GV_THREADS) NAME(                                 \
        const T* A, const T* B, T* C, float* part, unsigned* counters, int M, int N, int K,         \
        int kchunk) {                                                                              \
        gemv_detail::gemv<T, MT>(A, B, C, part, counters, M, N, K, kchunk);                        \
    }
GV_ENTRY(gemm_gemv_bf16_1, __nv_bfloat16, 1)
GV_ENTRY(gemm_gemv_bf16_2, __nv_bfloat16, 2)
GV_ENTRY(gemm_gemv_bf16_4, __nv_bfloat16, 4)
GV_ENTRY(gemm_gemv_bf16_8, __nv_bfloat16, 8)
GV_ENTRY(gemm_gemv_fp16_1, __half, 1)
GV_ENTRY(gemm_gemv_fp16_2, __half, 2)
GV_ENTRY(gemm_gemv_fp16_4, __half, 4)
GV_ENTRY(gemm_gemv_fp16_8, __half, 8)
