// kernelgate cross-entropy forward, register rows with one combine (suffix _w; session 17, issue
// 13's short grids on the H200).
//
// Why: kernels/dev/ce_probe.cu on an H200 (GPU-08c0e416, each launch after a read-flush of the
// L2) put the loads-only version of a register row kernel at the grid-stride read ceiling, and
// showed that what the computing kernels lose on top of it is the order of their work, not the
// exponentials (MUFU.EX2 runs 16 a clock per SM for f32, f16x2 and bf16x2 alike, so packed
// exponentials gain nothing). The register kernel of cross_entropy_bulk.cu (`_g`) reduces the
// row's max across the block, waits at a barrier, then exponentiates; here every thread
// exponentiates against its own max as soon as its loads land, and the row combines
// (max, sum) pairs once: one reduction, no barrier between the loads and the exponentials.
//
// The scheme: a block of tpr x rpb threads takes rpb rows (threadIdx.y); thread tx loads
// vectors v = tx + k * tpr (k < KG_CEW_CAP, 16 bytes each, streamed past L1) before using any,
// takes their max (packed 16-bit maxima), then sum(exp2(x log2e - max log2e)) as one FFMA + EX2
// per element into two chains; the row's (max, sum) pairs combine through kg_row_reduce_n with
// KgMaxSum (butterfly, one slot per warp, fixed order). Thread tx = 0 loads the target and its
// logit behind the row's loads and writes loss and lse (ignore_index -100 gives loss 0, a target
// outside [0, n) gives NaN).
// Launch (src/backend/cuda/norms.rs, cew_layout): rows of n elements with n * sizeof(T) a
// multiple of 16; block (tpr, rpb) with tpr a power of two <= 32 or a multiple of 32 <= 512,
// rpb <= KG_SMEM_ROWS, n * sizeof(T) / 16 <= KG_CEW_CAP * tpr; grid ceil(m / rpb).
#include "rowops.cuh"

#define KG_CEW_CAP 8
#define KG_CEW_IGNORE_INDEX (-100)
#define KG_CEW_LOG2E 1.4426950408889634f

// 2^x on MUFU.EX2 (ex2.approx.ftz: about 2 ulp; results below 2^-126 flush to 0).
__device__ __forceinline__ float kg_cew_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// 16 bytes of the row, streamed (no L1 allocation: every byte is read once).
__device__ __forceinline__ uint4 kg_cew_ld(const uint4* p) {
    uint4 q;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(q.x), "=r"(q.y), "=r"(q.z), "=r"(q.w)
                 : "l"(p));
    return q;
}

// The largest element of 16 bytes of T: 16-bit types as three packed maxima and one scalar.
template <typename P> __device__ __forceinline__ float kg_cew_pair_max(const uint4& q) {
    const P* h = reinterpret_cast<const P*>(&q);
    const P a = __hmax2(h[0], h[1]), b = __hmax2(h[2], h[3]);
    const P c = __hmax2(a, b);
    return fmaxf(__low2float(c), __high2float(c));
}
template <typename T> __device__ __forceinline__ float kg_cew_max(const uint4& q);
template <> __device__ __forceinline__ float kg_cew_max<float>(const uint4& q) {
    const float* f = reinterpret_cast<const float*>(&q);
    return fmaxf(fmaxf(f[0], f[1]), fmaxf(f[2], f[3]));
}
template <> __device__ __forceinline__ float kg_cew_max<__half>(const uint4& q) { return kg_cew_pair_max<__half2>(q); }
template <> __device__ __forceinline__ float kg_cew_max<__nv_bfloat16>(const uint4& q) {
    return kg_cew_pair_max<__nv_bfloat162>(q);
}

// The V elements of 16 bytes of T as floats (bf16: shifts; fp16: packed conversions).
template <typename T> __device__ __forceinline__ void kg_cew_unpack(const uint4& q, float (&f)[16 / sizeof(T)]);
template <> __device__ __forceinline__ void kg_cew_unpack<float>(const uint4& q, float (&f)[4]) {
    const float* p = reinterpret_cast<const float*>(&q);
#pragma unroll
    for (int j = 0; j < 4; ++j) f[j] = p[j];
}
template <> __device__ __forceinline__ void kg_cew_unpack<__half>(const uint4& q, float (&f)[8]) {
    const __half2* h = reinterpret_cast<const __half2*>(&q);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float2 p = __half22float2(h[j]);
        f[2 * j] = p.x;
        f[2 * j + 1] = p.y;
    }
}
template <> __device__ __forceinline__ void kg_cew_unpack<__nv_bfloat16>(const uint4& q, float (&f)[8]) {
    const unsigned* w = reinterpret_cast<const unsigned*>(&q);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        f[2 * j] = __uint_as_float(w[j] << 16);
        f[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
    }
}

// (max, sum) pairs, each sum taken against its own max: b folded into a.
__device__ __forceinline__ void kg_cew_merge(float& m, float& s, float mo, float so) {
    const float mn = fmaxf(m, mo);
    if (mn == __int_as_float(0xff800000)) return;  // both sides empty
    s = s * kg_cew_ex2((m - mn) * KG_CEW_LOG2E) + so * kg_cew_ex2((mo - mn) * KG_CEW_LOG2E);
    m = mn;
}

// VPT > 0: every thread holds exactly VPT vectors (n / V == VPT * tpr); VPT = 0: up to
// KG_CEW_CAP, predicated on the row's length.
template <typename T, int VPT>
__device__ __forceinline__ void ce_fwd_rows(const T* __restrict__ x, const int* __restrict__ tgt,
                                            float* __restrict__ loss, float* __restrict__ lse, int m, int n) {
    constexpr int V = 16 / sizeof(T);
    constexpr int K = VPT > 0 ? VPT : KG_CEW_CAP;
    __shared__ float red[2][KG_SMEM_ROWS][32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < m;
    const int nv = n / V, tx = threadIdx.x, tpr = blockDim.x;
    const bool lead = live && tx == 0;
    auto has = [&](int k) { return live && (VPT > 0 || tx + k * tpr < nv); };
    int t = 0;
    if (lead) t = __ldg(tgt + row);
    const uint4* xr = reinterpret_cast<const uint4*>(x + row * n);
    uint4 q[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (has(k)) q[k] = kg_cew_ld(xr + tx + k * tpr);
    float xt = 0.f;
    if (lead && t >= 0 && t < n) xt = kg_to_f<T>(x[row * n + t]);
    // This thread's (max, sum of exp(x - max)); a thread without elements keeps (-inf, 0).
    float mx = __int_as_float(0xff800000);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (has(k)) mx = fmaxf(mx, kg_cew_max<T>(q[k]));
    // A thread whose elements are all -inf (masked logits) sums exp2(-inf) = 0 against 0 instead
    // of -inf, whose fmaf(-inf, log2e, +inf) would be NaN: it keeps (-inf, 0), which the merge
    // takes.
    const float mz = mx == __int_as_float(0xff800000) ? 0.f : mx;
    const float mb = mz * KG_CEW_LOG2E;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (has(k)) {
            float f[V];
            kg_cew_unpack<T>(q[k], f);
            float a = 0.f;
#pragma unroll
            for (int j = 0; j < V; ++j)
                // 16-bit inputs: one FFMA (its rounding is far below the input's own); fp32:
                // subtract first (exact near the max), then scale.
                a += kg_cew_ex2(sizeof(T) == 4 ? (f[j] - mz) * KG_CEW_LOG2E : fmaf(f[j], KG_CEW_LOG2E, -mb));
            if (k & 1) s1 += a;
            else s0 += a;
        }
    float s = s0 + s1;
    // The row's pairs: butterfly in the warp, then one slot per warp read in a fixed order.
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        if (o < tpr) {
            const float mo = __shfl_xor_sync(0xffffffffu, mx, o), so = __shfl_xor_sync(0xffffffffu, s, o);
            kg_cew_merge(mx, s, mo, so);
        }
    if (tpr > 32) {
        if ((tx & 31) == 0) {
            red[0][threadIdx.y][tx >> 5] = mx;
            red[1][threadIdx.y][tx >> 5] = s;
        }
        __syncthreads();
        if (tx == 0) {
            mx = red[0][threadIdx.y][0];
            s = red[1][threadIdx.y][0];
            for (int w = 1; w < tpr >> 5; ++w) kg_cew_merge(mx, s, red[0][threadIdx.y][w], red[1][threadIdx.y][w]);
        }
    }
    if (lead) {
        const float l = mx + logf(s);
        float out;
        if (t == KG_CEW_IGNORE_INDEX) out = 0.f;
        else if (t < 0 || t >= n) out = __int_as_float(0x7fc00000);
        else out = l - xt;
        loss[row] = out;
        lse[row] = l;
    }
}

#define KG_CEW_ONE(TN, T, SFX, VPT)                                                            \
    extern "C" __global__ void __launch_bounds__(512) kg_cross_entropy_##TN##_##SFX(          \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n) {                   \
        ce_fwd_rows<T, VPT>(x, tgt, loss, lse, m, n);                                          \
    }
#define KG_CEW(TN, T)             \
    KG_CEW_ONE(TN, T, w, 0)       \
    KG_CEW_ONE(TN, T, w4, 4)      \
    KG_CEW_ONE(TN, T, w6, 6)      \
    KG_CEW_ONE(TN, T, w8, 8)

KG_CEW(bf16, __nv_bfloat16)
KG_CEW(fp16, __half)
KG_CEW(fp32, float)
