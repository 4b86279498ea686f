// kernelgate elementwise kernels: GELU (erf and tanh forms), SiLU, and the MSE loss
// (a deterministic two-kernel reduction). Flat over count elements: a grid-stride loop over
// V-element vectors (V = 16 bytes when the count is a multiple of it, else 1).
// Names: kg_<op>_<dtype>_<v: vectorised, s: scalar> (gelu_erf for the family gelu).
#include "rowops.cuh"

__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }

// 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as x * sigmoid(2u)
// (the same function, without the cancellation of 1 + tanh(u) for negative x).
__device__ __forceinline__ float gelu_tanh(float x) {
    const float u = 0.79788456080286536f * fmaf(0.044715f * x, x * x, x);
    return x / (1.f + kg_exp(-2.f * u));
}

__device__ __forceinline__ float silu(float x) { return x / (1.f + kg_exp(-x)); }

template <typename T, int V, int OP>
__device__ __forceinline__ void unary(const T* __restrict__ x, T* __restrict__ y, long long nvec) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += stride) {
        float f[V];
        kg_ldf<V>(x, i, f);
#pragma unroll
        for (int j = 0; j < V; ++j) f[j] = OP == 0 ? gelu_erf(f[j]) : OP == 1 ? gelu_tanh(f[j]) : silu(f[j]);
        kg_stf<V>(y, i, f);
    }
}

// part[block] = sum over this block's vectors of (a - b)^2. Block (256, 1).
template <typename T, int V>
__device__ __forceinline__ void mse_partial(const T* __restrict__ a, const T* __restrict__ b,
                                            float* __restrict__ part, long long nvec) {
    __shared__ float smem[KG_SMEM_ROWS * 32];
    const long long stride = (long long)gridDim.x * blockDim.x;
    float s = 0.f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += stride) {
        float f[V], g[V];
        kg_ldf<V>(a, i, f);
        kg_ldf<V>(b, i, g);
#pragma unroll
        for (int j = 0; j < V; ++j) s = fmaf(f[j] - g[j], f[j] - g[j], s);
    }
    s = kg_row_reduce<KgSum>(s, smem);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

#define KG_ELEMENTWISE(TN, T, VN, V)                                                               \
    extern "C" __global__ void __launch_bounds__(256)                                              \
        kg_gelu_erf_##TN##_##VN(const T* x, T* y, long long nvec) {                                \
        unary<T, V, 0>(x, y, nvec);                                                                \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256)                                              \
        kg_gelu_tanh_##TN##_##VN(const T* x, T* y, long long nvec) {                               \
        unary<T, V, 1>(x, y, nvec);                                                                \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256)                                              \
        kg_silu_##TN##_##VN(const T* x, T* y, long long nvec) {                                    \
        unary<T, V, 2>(x, y, nvec);                                                                \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256)                                              \
        kg_mse_partial_##TN##_##VN(const T* a, const T* b, float* part, long long nvec) {          \
        mse_partial<T, V>(a, b, part, nvec);                                                       \
    }

KG_ELEMENTWISE(bf16, __nv_bfloat16, v, 8)
KG_ELEMENTWISE(bf16, __nv_bfloat16, s, 1)
KG_ELEMENTWISE(fp16, __half, v, 8)
KG_ELEMENTWISE(fp16, __half, s, 1)
KG_ELEMENTWISE(fp32, float, v, 4)
KG_ELEMENTWISE(fp32, float, s, 1)

// out[0] = (sum of part[0..P)) * inv_count, one block of 1024 threads (fixed order).
extern "C" __global__ void __launch_bounds__(1024)
    kg_mse_final(const float* part, int P, float* out, float inv_count) {
    __shared__ float smem[KG_SMEM_ROWS * 32];
    float s = 0.f;
    for (int i = threadIdx.x; i < P; i += blockDim.x) s += part[i];
    s = kg_row_reduce<KgSum>(s, smem);
    if (threadIdx.x == 0) out[0] = s * inv_count;
}
