// kernelgate normalisation kernels: RMSNorm forward and backward, fused residual add +
// RMSNorm (in place, as vLLM), LayerNorm forward. One row per (threadIdx.y, block) with
// blockDim.x threads on it; each thread keeps up to C vectors of its row in registers, so the
// row is read from memory once (longer rows re-read the rest). fp32 accumulation throughout.
// Names: kg_<op>_<dtype>_w<weight dtype>_<v: vectorised, s: scalar>.
#include "rowops.cuh"

// The RMSNorm output pass: out = f * r * w over the row's vectors, the first C from the cached
// packs c (loaded by the statistics pass), the rest read again from `tail` (the row, or the
// stored residual).
template <typename T, typename W, int V, int C>
__device__ __forceinline__ void kg_rms_out(const KgPack<T, V> (&c)[C], const T* tail, const W* __restrict__ w,
                                           T* out, float r, bool live, int nv, int tid, int tpr) {
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float f[V], g[V];
            kg_unpack<V>(c[k], f);
            kg_ldf<V>(w, v, g);
#pragma unroll
            for (int j = 0; j < V; ++j) f[j] = f[j] * r * g[j];
            kg_stf<V>(out, v, f);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float f[V], g[V];
        kg_ldf<V>(tail, v, f);
        kg_ldf<V>(w, v, g);
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = f[j] * r * g[j];
        kg_stf<V>(out, v, f);
    }
}

// y = x * rsqrt(mean(x^2) + eps) * w
template <typename T, typename W, int V, int C>
__device__ __forceinline__ void rmsnorm_fwd(const T* __restrict__ x, const W* __restrict__ w,
                                            T* __restrict__ y, int m, int n, float eps) {
    __shared__ float smem[KG_SMEM_ROWS * 32];
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < m;
    const int nv = n / V, tid = threadIdx.x, tpr = blockDim.x;
    const T* xr = x + (long long)row * n;
    T* yr = y + (long long)row * n;
    KgPack<T, V> c[C];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            c[k] = kg_ld<V>(xr, v);
            float f[V];
            kg_unpack<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) ss = fmaf(f[j], f[j], ss);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float f[V];
        kg_ldf<V>(xr, v, f);
#pragma unroll
        for (int j = 0; j < V; ++j) ss = fmaf(f[j], f[j], ss);
    }
    ss = kg_row_reduce<KgSum>(ss, smem);
    const float r = rsqrtf(ss / (float)n + eps);
    kg_rms_out<T, W, V, C>(c, xr, w, yr, r, live, nv, tid, tpr);
}

// In place, as vLLM's fused_add_rms_norm: residual = T(x + residual); x = T(rmsnorm(residual) * w).
// The statistics use the stored (rounded) residual.
template <typename T, typename W, int V, int C>
__device__ __forceinline__ void fused_add_rmsnorm(T* __restrict__ x, T* __restrict__ res,
                                                  const W* __restrict__ w, int m, int n, float eps) {
    __shared__ float smem[KG_SMEM_ROWS * 32];
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < m;
    const int nv = n / V, tid = threadIdx.x, tpr = blockDim.x;
    T* xr = x + (long long)row * n;
    T* rr = res + (long long)row * n;
    KgPack<T, V> c[C];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float a[V], b[V];
            kg_ldf<V>(xr, v, a);
            kg_ldf<V>(rr, v, b);
#pragma unroll
            for (int j = 0; j < V; ++j) a[j] += b[j];
            c[k] = kg_pack<V, T>(a);
            kg_st<V>(rr, v, c[k]);
            kg_unpack<V>(c[k], a);
#pragma unroll
            for (int j = 0; j < V; ++j) ss = fmaf(a[j], a[j], ss);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float a[V], b[V];
        kg_ldf<V>(xr, v, a);
        kg_ldf<V>(rr, v, b);
#pragma unroll
        for (int j = 0; j < V; ++j) a[j] += b[j];
        const KgPack<T, V> p = kg_pack<V, T>(a);
        kg_st<V>(rr, v, p);
        kg_unpack<V>(p, a);
#pragma unroll
        for (int j = 0; j < V; ++j) ss = fmaf(a[j], a[j], ss);
    }
    ss = kg_row_reduce<KgSum>(ss, smem);
    const float r = rsqrtf(ss / (float)n + eps);
    // The tail reads the residual back: the same thread wrote each of its vectors above, so
    // the read is ordered after the write.
    kg_rms_out<T, W, V, C>(c, rr, w, xr, r, live, nv, tid, tpr);
}

// y = (x - mean) * rsqrt(var + eps) * w + b, biased variance (two passes over the cached row).
template <typename T, typename W, int V, int C>
__device__ __forceinline__ void layernorm_fwd(const T* __restrict__ x, const W* __restrict__ w,
                                              const W* __restrict__ b, T* __restrict__ y, int m,
                                              int n, float eps) {
    __shared__ float smem[KG_SMEM_ROWS * 32];
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < m;
    const int nv = n / V, tid = threadIdx.x, tpr = blockDim.x;
    const T* xr = x + (long long)row * n;
    T* yr = y + (long long)row * n;
    KgPack<T, V> c[C];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            c[k] = kg_ld<V>(xr, v);
            float f[V];
            kg_unpack<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) s += f[j];
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float f[V];
        kg_ldf<V>(xr, v, f);
#pragma unroll
        for (int j = 0; j < V; ++j) s += f[j];
    }
    const float mean = kg_row_reduce<KgSum>(s, smem) / (float)n;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float f[V];
            kg_unpack<V>(c[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) q = fmaf(f[j] - mean, f[j] - mean, q);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float f[V];
        kg_ldf<V>(xr, v, f);
#pragma unroll
        for (int j = 0; j < V; ++j) q = fmaf(f[j] - mean, f[j] - mean, q);
    }
    const float r = rsqrtf(kg_row_reduce<KgSum>(q, smem) / (float)n + eps);
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * tpr;
        if (live && v < nv) {
            float f[V], g[V], h[V];
            kg_unpack<V>(c[k], f);
            kg_ldf<V>(w, v, g);
            kg_ldf<V>(b, v, h);
#pragma unroll
            for (int j = 0; j < V; ++j) f[j] = fmaf((f[j] - mean) * r, g[j], h[j]);
            kg_stf<V>(yr, v, f);
        }
    }
    for (int v = tid + C * tpr; live && v < nv; v += tpr) {
        float f[V], g[V], h[V];
        kg_ldf<V>(xr, v, f);
        kg_ldf<V>(w, v, g);
        kg_ldf<V>(b, v, h);
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = fmaf((f[j] - mean) * r, g[j], h[j]);
        kg_stf<V>(yr, v, f);
    }
}

// Floats of the shared buffer that combines the rows of a block in rmsnorm_bwd:
// C * V * blockDim.x * blockDim.y for blocks of several rows (C = 4, V <= 8, <= 256 threads).
#define KG_BWD_RED 8192

// RMSNorm backward, rstd recomputed from x (the row is read anyway):
//   r = rsqrt(mean(x^2) + eps), d = sum(w*dy*x),
//   dx = r*w*dy - x * r^3 * d / n,   dw = sum over rows of dy * x * r.
// A persistent grid walks the row groups, one block reduction per row for both sums (KgSum2).
// Every block owns one fp32 row of `part` (n floats) holding its dw partial sums: each row
// slot (threadIdx.y) accumulates its cached columns in registers, and at the end the slots are
// stored to shared memory, added in order y = 0, 1, ... and written once. Columns beyond the
// cache are accumulated in the row of `part` itself, which the host allows only for blocks of
// one row (threadIdx.y = 0 alone); kg_rmsnorm_dw_* then adds the blocks' rows in a fixed order
// (deterministic).
template <typename T, typename W, int V, int C>
__device__ __forceinline__ void rmsnorm_bwd(const T* __restrict__ x, const W* __restrict__ w,
                                            const T* __restrict__ dy, T* __restrict__ dx,
                                            float* __restrict__ part, int m, int n, float eps) {
    __shared__ float smem[KG_SMEM_ROWS * 32 * 2];
    __shared__ float red[KG_BWD_RED];
    const int nv = n / V, tid = threadIdx.x, tpr = blockDim.x;
    const int rpb = blockDim.y;
    // A layout the combine below cannot hold is a host bug: fail loudly, never silently.
    if (rpb > 1 && (C * V * tpr * rpb > KG_BWD_RED || nv > C * tpr)) __trap();
    float* pr = part + (long long)blockIdx.x * n;
    float acc[C][V];
#pragma unroll
    for (int k = 0; k < C; ++k)
#pragma unroll
        for (int j = 0; j < V; ++j) acc[k][j] = 0.f;
    for (int v = tid + C * tpr; v < nv; v += tpr) {
        float z[V];
#pragma unroll
        for (int j = 0; j < V; ++j) z[j] = 0.f;
        kg_stf<V>(pr, v, z);
    }
    const int groups = (m + rpb - 1) / rpb;
    for (int g = blockIdx.x; g < groups; g += gridDim.x) {
        const int row = g * rpb + threadIdx.y;
        const bool live = row < m;
        const T* xr = x + (long long)row * n;
        const T* dyr = dy + (long long)row * n;
        T* dxr = dx + (long long)row * n;
        KgPack<T, V> cx[C], cd[C];
#pragma unroll
        for (int k = 0; k < C; ++k) {
            const int v = tid + k * tpr;
            if (live && v < nv) {
                cx[k] = kg_ld<V>(xr, v);
                cd[k] = kg_ld<V>(dyr, v);
            }
        }
        float sd[2] = {0.f, 0.f};  // {sum x^2, sum w*dy*x}
#pragma unroll
        for (int k = 0; k < C; ++k) {
            const int v = tid + k * tpr;
            if (live && v < nv) {
                float a[V], e[V], h[V];
                kg_unpack<V>(cx[k], a);
                kg_unpack<V>(cd[k], e);
                kg_ldf<V>(w, v, h);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    sd[0] = fmaf(a[j], a[j], sd[0]);
                    sd[1] = fmaf(h[j] * e[j], a[j], sd[1]);
                }
            }
        }
        for (int v = tid + C * tpr; live && v < nv; v += tpr) {
            float a[V], e[V], h[V];
            kg_ldf<V>(xr, v, a);
            kg_ldf<V>(dyr, v, e);
            kg_ldf<V>(w, v, h);
#pragma unroll
            for (int j = 0; j < V; ++j) {
                sd[0] = fmaf(a[j], a[j], sd[0]);
                sd[1] = fmaf(h[j] * e[j], a[j], sd[1]);
            }
        }
        kg_row_reduce_n<2, KgSum2>(sd, smem);
        const float r = rsqrtf(sd[0] / (float)n + eps);
        const float coef = r * r * r * sd[1] / (float)n;
#pragma unroll
        for (int k = 0; k < C; ++k) {
            const int v = tid + k * tpr;
            if (live && v < nv) {
                float a[V], e[V], h[V], o[V];
                kg_unpack<V>(cx[k], a);
                kg_unpack<V>(cd[k], e);
                kg_ldf<V>(w, v, h);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    o[j] = r * h[j] * e[j] - coef * a[j];
                    acc[k][j] = fmaf(e[j], a[j] * r, acc[k][j]);
                }
                kg_stf<V>(dxr, v, o);
            }
        }
        for (int v = tid + C * tpr; live && v < nv; v += tpr) {
            float a[V], e[V], h[V], o[V], p[V];
            kg_ldf<V>(xr, v, a);
            kg_ldf<V>(dyr, v, e);
            kg_ldf<V>(w, v, h);
            kg_ldf<V>(pr, v, p);
#pragma unroll
            for (int j = 0; j < V; ++j) {
                o[j] = r * h[j] * e[j] - coef * a[j];
                p[j] = fmaf(e[j], a[j] * r, p[j]);
            }
            kg_stf<V>(dxr, v, o);
            kg_stf<V>(pr, v, p);
        }
    }
    if (rpb == 1) {
#pragma unroll
        for (int k = 0; k < C; ++k) {
            const int v = tid + k * tpr;
            if (v < nv) kg_stf<V>(pr, v, acc[k]);
        }
        return;
    }
    // Several rows per block (blockDim.x * blockDim.y <= 256): every slot stores its registers,
    // then each entry is summed over the slots in order y = 0, 1, ... (deterministic).
    const int e = C * V * tpr;  // entries per slot: entry (k * V + j) * tpr + tid
#pragma unroll
    for (int k = 0; k < C; ++k)
#pragma unroll
        for (int j = 0; j < V; ++j) red[threadIdx.y * e + (k * V + j) * tpr + tid] = acc[k][j];
    __syncthreads();
    for (int i = threadIdx.y * tpr + tid; i < e; i += tpr * rpb) {
        float t = 0.f;
        for (int y = 0; y < rpb; ++y) t += red[y * e + i];
        const int kj = i / tpr, v = i - kj * tpr + (kj / V) * tpr;
        if (v < nv) pr[v * V + kj % V] = t;
    }
}


#define KG_NORMS(TN, T, WN, W, VN, V)                                                              \
    extern "C" __global__ void __launch_bounds__(512)                                              \
        kg_rmsnorm_##TN##_##WN##_##VN(const T* x, const W* w, T* y, int m, int n, float eps) {     \
        rmsnorm_fwd<T, W, V, 8>(x, w, y, m, n, eps);                                               \
        KG_INJECT_EPILOGUE(); /* empty unless compiled for `kernelgate selftest` */                \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(512) kg_fused_add_rmsnorm_##TN##_##WN##_##VN(     \
        T* x, T* res, const W* w, int m, int n, float eps) {                                       \
        fused_add_rmsnorm<T, W, V, 8>(x, res, w, m, n, eps);                                       \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(512) kg_layernorm_##TN##_##WN##_##VN(             \
        const T* x, const W* w, const W* b, T* y, int m, int n, float eps) {                       \
        layernorm_fwd<T, W, V, 8>(x, w, b, y, m, n, eps);                                          \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(512) kg_rmsnorm_bwd_##TN##_##WN##_##VN(           \
        const T* x, const W* w, const T* dy, T* dx, float* part, int m, int n, float eps) {        \
        rmsnorm_bwd<T, W, V, 4>(x, w, dy, dx, part, m, n, eps);                                    \
    }

#define KG_NORMS_T(TN, T, WN, W)                                                                   \
    KG_NORMS(TN, T, w##WN, W, v, 16 / sizeof(T))                                                   \
    KG_NORMS(TN, T, w##WN, W, s, 1)

KG_NORMS_T(bf16, __nv_bfloat16, bf16, __nv_bfloat16)
KG_NORMS_T(bf16, __nv_bfloat16, fp32, float)
KG_NORMS_T(fp16, __half, fp16, __half)
KG_NORMS_T(fp16, __half, fp32, float)
KG_NORMS_T(fp32, float, fp32, float)
KG_NORMS_T(fp32, float, bf16, __nv_bfloat16)

#define KG_DW(WN, W)                                                                               \
    extern "C" __global__ void __launch_bounds__(512)                                              \
        kg_rmsnorm_dw_##WN(const float* part, W* dw, int P, int n) {                               \
        kg_rmsnorm_dw<W>(part, dw, P, n);                                                             \
    }
KG_DW(bf16, __nv_bfloat16)
KG_DW(fp16, __half)
KG_DW(fp32, float)
