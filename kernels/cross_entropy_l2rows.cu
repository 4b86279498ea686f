// kernelgate cross-entropy forward, warp rows read through the L2 (suffix _c12; session 29,
// issue 13's 4096 x 3072 on the H200).
//
// Why: the register-row kernels (cross_entropy_rows.cu, `_w*`) load with
// ld.global.nc.L1::no_allocate, and the L2 keeps few of the lines such loads bring in: a second
// launch over the same logits reads them from DRAM again. A kernel as short as 4096 x 3072 is
// timed as a batch of launches after one L2 flush, and in a training step the logits come
// straight from the LM head's GEMM, partly still in the L2; both favour loads that allocate.
// kernels/dev/ce_probe.cu with the harness's own flush (H200 GPU-1a8e9d52, three launches
// replayed from a graph after it, per launch): this layout with ld.global.cg 8.25 us (0.71 of
// the copy bandwidth), the same with ld.global.nc 10.1, the bulk-staged `_r` that ran here
// before 9.7; a single cold launch 11.4-11.6 against 11.7 and 13.1-13.3.
//
// The scheme: a warp per row, rpb rows a block (threadIdx.y); lane l loads vectors
// v = l + 32 k (k < 12, 16 bytes each, ld.global.cg) before using any, takes their packed max,
// then sum(exp2(x log2e - max log2e)) (one FFMA + EX2 per element, two chains); the warp
// combines (max, sum) pairs by a butterfly. Lane 0 loads the target and its logit behind the
// row's loads and writes loss and lse (ignore_index -100 gives loss 0, a target outside [0, n)
// gives NaN), as the `_w*` kernels do.
// Launch (src/backend/cuda/ce_fwd.rs, cec_layout): 16-bit rows of exactly 32 x 12 vectors
// (n * sizeof(T) = 6144); block (32, rpb); grid ceil(m / rpb).
#include "cross_entropy_rows.cu"

#define KG_CEC_VPT 12

template <typename T>
__device__ __forceinline__ void ce_fwd_warp_rows(const T* __restrict__ x, const int* __restrict__ tgt,
                                                 float* __restrict__ loss, float* __restrict__ lse, int m,
                                                 int n) {
    constexpr int V = 16 / sizeof(T);
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= m) return;  // a whole warp: one row per warp
    const int lane = threadIdx.x;
    int t = 0;
    if (lane == 0) t = __ldg(tgt + row);
    const uint4* xr = reinterpret_cast<const uint4*>(x + row * n);
    uint4 q[KG_CEC_VPT];
#pragma unroll
    for (int k = 0; k < KG_CEC_VPT; ++k) q[k] = __ldcg(xr + lane + 32 * k);
    float xt = 0.f;
    if (lane == 0 && t >= 0 && t < n) xt = kg_to_f<T>(x[row * n + t]);
    float mx = __int_as_float(0xff800000);
#pragma unroll
    for (int k = 0; k < KG_CEC_VPT; ++k) mx = fmaxf(mx, kg_cew_max<T>(q[k]));
    // A lane of only -inf (masked logits) sums against 0 (exp2(-inf) = 0), not -inf (NaN).
    const float mb = mx == __int_as_float(0xff800000) ? 0.f : mx * KG_CEW_LOG2E;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int k = 0; k < KG_CEC_VPT; ++k) {
        float f[V];
        kg_cew_unpack<T>(q[k], f);
        float a = 0.f;
#pragma unroll
        for (int j = 0; j < V; ++j) a += kg_cew_ex2(fmaf(f[j], KG_CEW_LOG2E, -mb));
        if (k & 1) s1 += a;
        else s0 += a;
    }
    float s = s0 + s1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float mo = __shfl_xor_sync(0xffffffffu, mx, o), so = __shfl_xor_sync(0xffffffffu, s, o);
        kg_cew_merge(mx, s, mo, so);
    }
    if (lane == 0) {
        const float l = mx + logf(s);
        float out;
        if (t == KG_CEW_IGNORE_INDEX) out = 0.f;
        else if (t < 0 || t >= n) out = __int_as_float(0x7fc00000);
        else out = l - xt;
        loss[row] = out;
        lse[row] = l;
    }
}

#define KG_CEC(TN, T)                                                                          \
    extern "C" __global__ void __launch_bounds__(512) kg_cross_entropy_##TN##_c12(            \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n) {                   \
        ce_fwd_warp_rows<T>(x, tgt, loss, lse, m, n);                                          \
    }

KG_CEC(bf16, __nv_bfloat16)
KG_CEC(fp16, __half)
