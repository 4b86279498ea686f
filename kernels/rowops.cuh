// kernelgate row-wise helpers shared by norms.cu, softmax.cu and elementwise.cu:
// dtype conversion, 16-byte vector packs, and a row reduction for blocks laid out as
// (threads per row) x (rows per block).
#pragma once
#include "kg_common.cuh"

template <typename T> __device__ __forceinline__ float kg_to_f(T x);
template <> __device__ __forceinline__ float kg_to_f<float>(float x) { return x; }
template <> __device__ __forceinline__ float kg_to_f<__half>(__half x) { return __half2float(x); }
// bf16 -> f32 through an opaque (volatile) move, so the compiler re-converts from the packed
// registers instead of keeping every unpacked float of the cached row alive (which nearly
// doubled the registers of the row kernels and cost occupancy).
template <> __device__ __forceinline__ float kg_to_f<__nv_bfloat16>(__nv_bfloat16 x) {
    float f;
    asm volatile("mov.b32 %0, {0, %1};" : "=f"(f) : "h"(__bfloat16_as_ushort(x)));
    return f;
}

template <typename T> __device__ __forceinline__ T kg_from_f(float x);
template <> __device__ __forceinline__ float kg_from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __half kg_from_f<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 kg_from_f<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// V elements loaded or stored as one aligned vector (16 bytes for the main tensors; 32 for
// an fp32 weight next to a 16-bit tensor, which the compiler splits into two 16-byte loads).
template <typename E, int V> struct alignas(sizeof(E) * V) KgPack { E v[V]; };

template <int V, typename E>
__device__ __forceinline__ KgPack<E, V> kg_ld(const E* p, long long v) {
    return reinterpret_cast<const KgPack<E, V>*>(p)[v];
}

template <int V, typename E>
__device__ __forceinline__ void kg_unpack(const KgPack<E, V>& pk, float (&f)[V]) {
#pragma unroll
    for (int j = 0; j < V; ++j) f[j] = kg_to_f<E>(pk.v[j]);
}

template <int V, typename E>
__device__ __forceinline__ void kg_ldf(const E* p, long long v, float (&f)[V]) {
    kg_unpack<V, E>(kg_ld<V, E>(p, v), f);
}

template <int V, typename E>
__device__ __forceinline__ KgPack<E, V> kg_pack(const float (&f)[V]) {
    KgPack<E, V> pk;
#pragma unroll
    for (int j = 0; j < V; ++j) pk.v[j] = kg_from_f<E>(f[j]);
    return pk;
}

template <int V, typename E>
__device__ __forceinline__ void kg_st(E* p, long long v, const KgPack<E, V>& pk) {
    reinterpret_cast<KgPack<E, V>*>(p)[v] = pk;
}

template <int V, typename E>
__device__ __forceinline__ void kg_stf(E* p, long long v, const float (&f)[V]) {
    kg_st<V, E>(p, v, kg_pack<V, E>(f));
}

struct KgSum {
    __device__ static __forceinline__ float op(float a, float b) { return a + b; }
    __device__ static __forceinline__ float id() { return 0.f; }
};
struct KgMax {
    __device__ static __forceinline__ float op(float a, float b) { return fmaxf(a, b); }
    __device__ static __forceinline__ float id() { return __int_as_float(0xff800000); }
};

// Reduces v over the blockDim.x threads that share one row (threadIdx.y picks the row).
// blockDim.x is a power of two <= 32 or a multiple of 32 <= 1024; blockDim.x * blockDim.y is a
// multiple of 32. Every thread of the block must call it (it synchronises when a row spans
// several warps). smem holds 32 floats per row of the block. All threads of the row get the
// same value, and the order of operations is fixed (deterministic).
template <typename Op>
__device__ __forceinline__ float kg_row_reduce(float v, float* smem) {
    const int tpr = blockDim.x;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        if (o < tpr) v = Op::op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (tpr <= 32) return v;
    float* s = smem + threadIdx.y * 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();  // an earlier reduction may still be reading s
    if (lane == 0) s[warp] = v;
    __syncthreads();
    v = lane < (tpr >> 5) ? s[lane] : Op::id();
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = Op::op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Reduces N values at once over the blockDim.x threads of one row with the combine Comb
// (Comb::op(a, b) writes the combination of a and b into a; Comb::id(a) sets the identity).
// Same layout rules as kg_row_reduce; one pair of barriers for all N values (instead of N
// pairs). smem holds 32 * N floats per row of the block. Comb::op must be symmetric bit for
// bit (op(a, b) == op(b, a)), so every lane of the butterfly ends with the same value.
template <int N, typename Comb>
__device__ __forceinline__ void kg_row_reduce_n(float (&v)[N], float* smem) {
    const int tpr = blockDim.x;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        if (o < tpr) {
            float w[N];
#pragma unroll
            for (int i = 0; i < N; ++i) w[i] = __shfl_xor_sync(0xffffffffu, v[i], o);
            Comb::op(v, w);
        }
    if (tpr <= 32) return;
    float* s = smem + threadIdx.y * 32 * N;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();  // an earlier reduction may still be reading s
    if (lane == 0)
#pragma unroll
        for (int i = 0; i < N; ++i) s[i * 32 + warp] = v[i];
    __syncthreads();
    if (lane < (tpr >> 5)) {
#pragma unroll
        for (int i = 0; i < N; ++i) v[i] = s[i * 32 + lane];
    } else {
        Comb::id(v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float w[N];
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = __shfl_xor_sync(0xffffffffu, v[i], o);
        Comb::op(v, w);
    }
}

// Two independent sums.
struct KgSum2 {
    __device__ static __forceinline__ void op(float (&a)[2], const float (&b)[2]) {
        a[0] += b[0];
        a[1] += b[1];
    }
    __device__ static __forceinline__ void id(float (&a)[2]) { a[0] = a[1] = 0.f; }
};

// e^x through ex2 (about 2 ulp; fp32 accumulation is the larger error).
__device__ __forceinline__ float kg_exp(float x) { return exp2f(x * 1.4426950408889634f); }

// Largest rows per block times 32: the static shared memory of the row kernels.
#define KG_SMEM_ROWS 8

// Online logsumexp state {max, sum of exp(x - max)}: the combine rescales both sums to the
// larger max. A side with max = -inf (no elements) contributes nothing; the scale of the side
// that holds the max is exactly 1, so the combine is symmetric.
struct KgMaxSum {
    __device__ static __forceinline__ void op(float (&a)[2], const float (&b)[2]) {
        const float mx = fmaxf(a[0], b[0]);
        const float sa = a[0] == mx ? a[1] : a[1] * kg_exp(a[0] - mx);
        const float sb = b[0] == mx ? b[1] : b[1] * kg_exp(b[0] - mx);
        a[0] = mx;
        a[1] = sa + sb;
    }
    __device__ static __forceinline__ void id(float (&a)[2]) {
        a[0] = __int_as_float(0xff800000);
        a[1] = 0.f;
    }
};

// Adds V values to an online logsumexp state (max, sum): one rescale per call, not per element.
template <int V>
__device__ __forceinline__ void kg_lse_add(const float (&f)[V], float& mx, float& s) {
    float vm = f[0];
#pragma unroll
    for (int j = 1; j < V; ++j) vm = fmaxf(vm, f[j]);
    if (vm > mx) {
        s *= kg_exp(mx - vm);  // mx = -inf: s is 0 and exp(-inf) = 0
        mx = vm;
    }
#pragma unroll
    for (int j = 0; j < V; ++j) s += kg_exp(f[j] - mx);
}

// Mean and squared deviations {count, mean, M2} (Chan et al.): the combine is written
// symmetrically (weighted mean, squared difference), so both lanes of a shuffle agree.
struct KgMoments {
    __device__ static __forceinline__ void op(float (&a)[3], const float (&b)[3]) {
        const float n = a[0] + b[0];
        if (n == 0.f) return;  // both empty: a is already the identity
        const float d = b[1] - a[1];
        const float mean = (a[0] * a[1] + b[0] * b[1]) / n;
        const float m2 = a[2] + b[2] + d * d * (a[0] * b[0] / n);
        a[0] = n;
        a[1] = mean;
        a[2] = m2;
    }
    __device__ static __forceinline__ void id(float (&a)[3]) { a[0] = a[1] = a[2] = 0.f; }
};

// rmsnorm_bwd's second step, shared by norms.cu, rows_p.cu and rmsnorm_bwd_bulk.cu (each module
// holds both steps of its launches): dw[col] = sum over the P partial rows of part[p][col]. Each
// of the 16 lanes of a column (threadIdx.y) adds rows y, y + 16, ... into four interleaved sums,
// then the lanes are added in order (a fixed order: deterministic). Block (32, 16).
template <typename W>
__device__ __forceinline__ void kg_rmsnorm_dw(const float* __restrict__ part, W* __restrict__ dw, int P,
                                              int n) {
    __shared__ float sm[16][33];
    const int col = blockIdx.x * 32 + threadIdx.x;
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    if (col < n) {
        int p = threadIdx.y;
        for (; p + 48 < P; p += 64) {
            s0 += part[(long long)p * n + col];
            s1 += part[(long long)(p + 16) * n + col];
            s2 += part[(long long)(p + 32) * n + col];
            s3 += part[(long long)(p + 48) * n + col];
        }
        for (; p < P; p += 16) s0 += part[(long long)p * n + col];
    }
    sm[threadIdx.y][threadIdx.x] = (s0 + s1) + (s2 + s3);
    __syncthreads();
    if (threadIdx.y == 0 && col < n) {
        float t = 0.f;
#pragma unroll
        for (int i = 0; i < 16; ++i) t += sm[i][threadIdx.x];
        dw[col] = kg_from_f<W>(t);
    }
}
