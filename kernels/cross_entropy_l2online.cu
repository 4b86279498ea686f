// kernelgate cross-entropy forward, warp rows read through the L2 and summed as they land
// (suffixes _o12, _o12p1, _o12p2; session 30, issue 13's 4096 x 3072 on the H200).
//
// Why: `_c12` (cross_entropy_l2rows.cu) waits for all twelve of a lane's vectors before its
// first exponential, because it takes the lane's max over all of them first. Every warp of an
// SM issues its loads at once and the memory system answers them interleaved, so every row's
// last vector lands near the end of the read and most of the exponentials run after it: on
// H200 GPU-1a8e9d52 the probe's loads-only layout took 9.63 us cold, the computing one 11.42.
// Here each lane takes its reference from its first vector alone and sums each later vector
// against it as soon as that vector lands, so the exponentials overlap the rest of the read.
//
// The scheme: a warp per row, rpb rows a block (threadIdx.y); lane l loads vectors
// v = l + 32 k (k < 12, 16 bytes each, ld.global.cg) before using any. Its reference r is the
// max of vector 0; it adds exp2(x log2e - r log2e) for every element of vectors 0..11 in
// order (two chains), keeping the packed max of all of them. If the lane's max lies more than
// 64 / log2e above r (a term could near fp32's range; an r of -inf; NaN), the lane sums its
// row again from the L2 against its own max, exactly as `_c12` does. The warp combines the
// (reference, sum) pairs by a butterfly. POLY of every 8 elements (0, 1 or 2) take exp2 as a
// polynomial on the FMA pipe instead of MUFU.EX2 (16 a clock per SM), which bounds the kernel
// once the logits sit in the L2. Lane 0 loads the target and its logit behind the row's loads
// and writes loss and lse (ignore_index -100 gives loss 0, a target outside [0, n) gives NaN),
// as `_c12` does.
// Launch (src/backend/cuda/ce_fwd.rs, ceo_layout): 16-bit rows of exactly 32 x 12 vectors
// (n * sizeof(T) = 6144); block (32, rpb); grid ceil(m / rpb). At most 64 registers a thread,
// so 32 warps an SM hold a whole 4096-row grid on 132 SMs in one wave.
#include "cross_entropy_rows.cu"

#define KG_CEO_VPT 12

// exp2(x) on the FMA pipe for x <= 127: the nearest integer j of x by the 1.5 * 2^23 trick, a
// degree-4 minimax polynomial of 2^f on f = x - j in [-0.5, 0.5] (relative error under 3e-6),
// j added to the exponent bits. x is clamped to -126 first, so any input (-inf too) gives a
// normal float; below -126 that is 2^-126 where MUFU.EX2.FTZ gives 0, a difference under
// 2^-126 of a term the sum holds beside its reference's 1.
__device__ __forceinline__ float kg_ceo_ex2_fma(float x) {
    x = fmaxf(x, -126.f);
    const float t = x + 12582912.f;
    const float j = t - 12582912.f;
    const float f = x - j;
    float p = 9.57008265e-3f;
    p = fmaf(p, f, 5.59178442e-2f);
    p = fmaf(p, f, 2.40247443e-1f);
    p = fmaf(p, f, 6.93121791e-1f);
    p = fmaf(p, f, 9.99999285e-1f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// Packed max of two words of two 16-bit values each.
template <typename T> __device__ __forceinline__ unsigned kg_ceo_max2(unsigned a, unsigned b);
template <> __device__ __forceinline__ unsigned kg_ceo_max2<__nv_bfloat16>(unsigned a, unsigned b) {
    unsigned r;
    asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
template <> __device__ __forceinline__ unsigned kg_ceo_max2<__half>(unsigned a, unsigned b) {
    unsigned r;
    asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// The packed max of a vector folded into mm.
template <typename T> __device__ __forceinline__ unsigned kg_ceo_vmax(unsigned mm, const uint4& q) {
    return kg_ceo_max2<T>(kg_ceo_max2<T>(mm, kg_ceo_max2<T>(q.x, q.y)), kg_ceo_max2<T>(q.z, q.w));
}
// The larger of a packed pair, as a float.
template <typename T> __device__ __forceinline__ float kg_ceo_hmax(unsigned mm) {
    const uint4 q = make_uint4(mm, mm, mm, mm);
    float f[16 / sizeof(T)];
    kg_cew_unpack<T>(q, f);
    return fmaxf(f[0], f[1]);
}

template <typename T, int POLY>
__device__ __forceinline__ void ce_fwd_online_rows(const T* __restrict__ x, const int* __restrict__ tgt,
                                                   float* __restrict__ loss, float* __restrict__ lse, int m,
                                                   int n) {
    constexpr int V = 16 / sizeof(T);
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= m) return;  // a whole warp: one row per warp
    const int lane = threadIdx.x;
    int t = 0;
    if (lane == 0) t = __ldg(tgt + row);
    const uint4* xr = reinterpret_cast<const uint4*>(x + row * n);
    uint4 q[KG_CEO_VPT];
#pragma unroll
    for (int k = 0; k < KG_CEO_VPT; ++k) q[k] = __ldcg(xr + lane + 32 * k);
    float xt = 0.f;
    if (lane == 0 && t >= 0 && t < n) xt = kg_to_f<T>(x[row * n + t]);
    // The reference: vector 0's max.
    unsigned mm = kg_ceo_vmax<T>(q[0].x, q[0]);
    float r = kg_ceo_hmax<T>(mm);
    float rb = r * KG_CEW_LOG2E;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int k = 0; k < KG_CEO_VPT; ++k) {
        if (k > 0) mm = kg_ceo_vmax<T>(mm, q[k]);
        float f[V];
        kg_cew_unpack<T>(q[k], f);
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const float a = fmaf(f[j], KG_CEW_LOG2E, -rb);
            const bool fma_pipe = (POLY == 1 && j == V - 1) || (POLY == 2 && (j & 3) == 3);
            const float e = fma_pipe ? kg_ceo_ex2_fma(a) : kg_cew_ex2(a);
            if (j & 1) s1 += e;
            else s0 += e;
        }
    }
    float s = s0 + s1;
    const float mx = kg_ceo_hmax<T>(mm);
    if (!((mx - r) * KG_CEW_LOG2E <= 64.f)) {
        // Rare: a term far above the reference (or no finite reference). Sum again against the
        // lane's own max, from the L2, as `_c12` does.
        r = mx;
        // A lane of only -inf (masked logits) sums against 0 (exp2(-inf) = 0), not -inf (NaN).
        rb = mx == __int_as_float(0xff800000) ? 0.f : mx * KG_CEW_LOG2E;
        s = 0.f;
        for (int k = 0; k < KG_CEO_VPT; ++k) {
            float f[V];
            kg_cew_unpack<T>(__ldcg(xr + lane + 32 * k), f);
#pragma unroll
            for (int j = 0; j < V; ++j) s += kg_cew_ex2(fmaf(f[j], KG_CEW_LOG2E, -rb));
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ro = __shfl_xor_sync(0xffffffffu, r, o), so = __shfl_xor_sync(0xffffffffu, s, o);
        kg_cew_merge(r, s, ro, so);
    }
    if (lane == 0) {
        const float l = r + logf(s);
        float out;
        if (t == KG_CEW_IGNORE_INDEX) out = 0.f;
        else if (t < 0 || t >= n) out = __int_as_float(0x7fc00000);
        else out = l - xt;
        loss[row] = out;
        lse[row] = l;
    }
}

#define KG_CEO(TN, T, SUF, POLY)                                                                \
    extern "C" __global__ void __launch_bounds__(64, 16) kg_cross_entropy_##TN##_##SUF(        \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n) {                    \
        ce_fwd_online_rows<T, POLY>(x, tgt, loss, lse, m, n);                                   \
    }

KG_CEO(bf16, __nv_bfloat16, o12, 0)
KG_CEO(fp16, __half, o12, 0)
KG_CEO(bf16, __nv_bfloat16, o12p1, 1)
KG_CEO(fp16, __half, o12p1, 1)
KG_CEO(bf16, __nv_bfloat16, o12p2, 2)
KG_CEO(fp16, __half, o12p2, 2)
