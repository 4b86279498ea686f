// kernelgate softmax and cross-entropy kernels, row-wise with the layout of norms.cu:
// blockDim.x threads per row, blockDim.y rows per block, up to C vectors per thread cached in
// registers (longer rows re-read the rest), fp32 accumulation. The row max and the sum of
// exponentials come from one online pass (a running max with a rescaled sum per thread,
// combined across the row in a single reduction), so the cached row is read once and the
// block synchronises once per row.
// Names: kg_<op>_<dtype>_<v: vectorised, s: scalar>.
#include "rowops.cuh"

#define KG_ROW_BEGIN                                                                               \
    __shared__ float smem[KG_SMEM_ROWS * 32 * 2];                                                  \
    const int row = blockIdx.x * blockDim.y + threadIdx.y;                                         \
    const bool live = row < m;                                                                     \
    const int nv = n / V, tid = threadIdx.x, tpr = blockDim.x;                                     \
    const long long base = (long long)row * n;

// Streams vectors v0, v0 + tpr, ... < nv of a row into the online logsumexp state st =
// {max, sum}: U vectors are loaded before any is used (U * 16 bytes in flight per thread), and
// the sum is rescaled once per batch.
template <typename T, int V, int U>
__device__ __forceinline__ void lse_stream(const T* __restrict__ xr, int v0, int nv, int tpr, float (&st)[2]) {
    for (int v = v0; v < nv; v += U * tpr) {
        KgPack<T, V> p[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (v + u * tpr < nv) p[u] = kg_ld<V>(xr, v + u * tpr);
        float cm = __int_as_float(0xff800000);
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (v + u * tpr < nv) {
                float f[V];
                kg_unpack<V>(p[u], f);
#pragma unroll
                for (int j = 0; j < V; ++j) cm = fmaxf(cm, f[j]);
            }
        if (cm > st[0]) {
            st[1] *= kg_exp(st[0] - cm);  // st[0] = -inf: the sum is 0 and exp(-inf) = 0
            st[0] = cm;
        }
        // Only -inf so far (masked logits): sum against 0, as -inf - -inf would be NaN; the
        // terms are exp(-inf) = 0 and the state stays {-inf, 0}.
        const float ref = st[0] == __int_as_float(0xff800000) ? 0.f : st[0];
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (v + u * tpr < nv) {
                float f[V];
                kg_unpack<V>(p[u], f);
#pragma unroll
                for (int j = 0; j < V; ++j) st[1] += kg_exp(f[j] - ref);
            }
    }
}

// Row max and sum of exp(x - max) in one block reduction: every thread keeps an online
// {max, sum} of its part of the row (the first C vectors cached in c, the rest streamed),
// then the states are combined across the row (KgMaxSum). Dead rows get {0, 1}.
template <typename T, int V, int C>
__device__ __forceinline__ void row_lse(const T* __restrict__ xr, KgPack<T, V> (&c)[C], bool live, int nv,
                                        int tid, int tpr, float* smem, float& mx, float& s) {
    float lm = __int_as_float(0xff800000);  // -inf
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) c[k] = kg_ld<V>(xr, v);
    }
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float f[V];
            kg_unpack<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) lm = fmaxf(lm, f[j]);
        }
    }
    float st[2] = {lm, 0.f};
    // A thread whose cached elements are all -inf (masked logits) sums against 0, not -inf
    // (-inf - -inf = NaN): its terms are 0 and its state stays {-inf, 0}, which the combine takes.
    const float ref = lm == __int_as_float(0xff800000) ? 0.f : lm;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float f[V];
            kg_unpack<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) st[1] += kg_exp(f[j] - ref);
        }
    }
    if (live) lse_stream<T, V, 4>(xr, tid + C * tpr, nv, tpr, st);
    kg_row_reduce_n<2, KgMaxSum>(st, smem);
    mx = live ? st[0] : 0.f;  // dead rows: keep the arithmetic finite
    s = live ? st[1] : 1.f;
}

// y = exp(x - max) / sum(exp(x - max))
template <typename T, int V, int C>
__device__ __forceinline__ void softmax_fwd(const T* __restrict__ x, T* __restrict__ y, int m, int n) {
    KG_ROW_BEGIN
    KgPack<T, V> c[C];
    float mx, s;
    row_lse<T, V, C>(x + base, c, live, nv, tid, tpr, smem, mx, s);
    const float inv = 1.f / s;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float f[V];
            kg_unpack<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) f[j] = kg_exp(f[j] - mx) * inv;
            kg_stf<V>(y + base, v, f);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float f[V];
        kg_ldf<V>(x + base, v, f);
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = kg_exp(f[j] - mx) * inv;
        kg_stf<V>(y + base, v, f);
    }
}

// dx = y * (dy - sum(y * dy))
template <typename T, int V, int C>
__device__ __forceinline__ void softmax_bwd(const T* __restrict__ y, const T* __restrict__ dy,
                                            T* __restrict__ dx, int m, int n) {
    KG_ROW_BEGIN
    KgPack<T, V> cy[C], cd[C];
    float d = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            cy[k] = kg_ld<V>(y + base, v);
            cd[k] = kg_ld<V>(dy + base, v);
            float a[V], b[V];
            kg_unpack<V>(cy[k], a);
            kg_unpack<V>(cd[k], b);
#pragma unroll
            for (int j = 0; j < V; ++j) d = fmaf(a[j], b[j], d);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float a[V], b[V];
        kg_ldf<V>(y + base, v, a);
        kg_ldf<V>(dy + base, v, b);
#pragma unroll
        for (int j = 0; j < V; ++j) d = fmaf(a[j], b[j], d);
    }
    d = kg_row_reduce<KgSum>(d, smem);
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float a[V], b[V];
            kg_unpack<V>(cy[k], a);
            kg_unpack<V>(cd[k], b);
#pragma unroll
            for (int j = 0; j < V; ++j) a[j] = a[j] * (b[j] - d);
            kg_stf<V>(dx + base, v, a);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float a[V], b[V];
        kg_ldf<V>(y + base, v, a);
        kg_ldf<V>(dy + base, v, b);
#pragma unroll
        for (int j = 0; j < V; ++j) a[j] = a[j] * (b[j] - d);
        kg_stf<V>(dx + base, v, a);
    }
}

#define KG_IGNORE_INDEX (-100)

// loss[row] = lse - x[row, t] (0 where t == ignore_index), lse[row] = logsumexp(x[row, :]).
// A target outside [0, n) that is not ignore_index gives NaN, so it fails loudly.
// One pass over the row and nothing kept: each thread streams its vectors U at a time into an
// online {max, sum} (lse_stream), then one reduction combines the row (a warp per row when
// the host picks 32 threads per row: no barrier at all).
template <typename T, int V, int U>
__device__ __forceinline__ void ce_fwd(const T* __restrict__ x, const int* __restrict__ tgt,
                                       float* __restrict__ loss, float* __restrict__ lse, int m, int n) {
    KG_ROW_BEGIN
    // The target logit is fetched first, so its latency overlaps the row's loads.
    int t = KG_IGNORE_INDEX;
    float xt = 0.f;
    if (live && tid == 0) {
        t = tgt[row];
        if (t >= 0 && t < n) xt = kg_to_f<T>(x[base + t]);
    }
    float st[2] = {__int_as_float(0xff800000), 0.f};
    if (live) lse_stream<T, V, U>(x + base, tid, nv, tpr, st);
    kg_row_reduce_n<2, KgMaxSum>(st, smem);
    if (live && tid == 0) {
        const float l = st[0] + logf(st[1]);
        float out;
        if (t == KG_IGNORE_INDEX) out = 0.f;
        else if (t < 0 || t >= n) out = __int_as_float(0x7fc00000);
        else out = l - xt;
        loss[row] = out;
        lse[row] = l;
    }
}

// dx[row, j] = dloss[row] * (softmax(x[row])_j - [j == t]); rows with t == ignore_index get 0.
// Per-row upstream gradient (reduction = 'none'); the mean reduction is dloss = 1/count.
// The row statistics are recomputed from x, which is read anyway.
template <typename T, int V, int C>
__device__ __forceinline__ void ce_bwd(const T* __restrict__ x, const int* __restrict__ tgt,
                                       const float* __restrict__ dloss, T* __restrict__ dx, int m, int n) {
    KG_ROW_BEGIN
    int t = -1;
    float g = 0.f;
    if (live) {
        t = tgt[row];
        g = dloss[row];
        if (t == KG_IGNORE_INDEX) g = 0.f;
        else if (t < 0 || t >= n) g = __int_as_float(0x7fc00000);
    }
    KgPack<T, V> c[C];
    float mx, s;
    row_lse<T, V, C>(x + base, c, live, nv, tid, tpr, smem, mx, s);
    const float gs = g / s;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float f[V];
            kg_unpack<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) f[j] = kg_exp(f[j] - mx) * gs - (v * V + j == t ? g : 0.f);
            kg_stf<V>(dx + base, v, f);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float f[V];
        kg_ldf<V>(x + base, v, f);
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = kg_exp(f[j] - mx) * gs - (v * V + j == t ? g : 0.f);
        kg_stf<V>(dx + base, v, f);
    }
}

#define KG_SOFTMAX(TN, T, VN, V)                                                                   \
    extern "C" __global__ void __launch_bounds__(512)                                              \
        kg_softmax_##TN##_##VN(const T* x, T* y, int m, int n) {                                   \
        softmax_fwd<T, V, 4>(x, y, m, n);                                                          \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(512)                                              \
        kg_softmax_bwd_##TN##_##VN(const T* y, const T* dy, T* dx, int m, int n) {                 \
        softmax_bwd<T, V, 4>(y, dy, dx, m, n);                                                     \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(512) kg_cross_entropy_##TN##_##VN(                \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n) {                       \
        ce_fwd<T, V, 8>(x, tgt, loss, lse, m, n);                                                  \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(512) kg_cross_entropy_bwd_##TN##_##VN(            \
        const T* x, const int* tgt, const float* dloss, T* dx, int m, int n) {                     \
        ce_bwd<T, V, 4>(x, tgt, dloss, dx, m, n);                                                  \
    }

KG_SOFTMAX(bf16, __nv_bfloat16, v, 16 / sizeof(__nv_bfloat16))
KG_SOFTMAX(bf16, __nv_bfloat16, s, 1)
KG_SOFTMAX(fp16, __half, v, 16 / sizeof(__half))
KG_SOFTMAX(fp16, __half, s, 1)
KG_SOFTMAX(fp32, float, v, 4)
KG_SOFTMAX(fp32, float, s, 1)
