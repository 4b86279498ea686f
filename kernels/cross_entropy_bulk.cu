// kernelgate cross-entropy forward with a block per row, rows staged by the bulk-copy engine
// (sm_90+; suffix _b). Written in session 12 for issue 13's short grids on the H200, where the
// warp-per-row kernel of rows_p.cu (kg_cross_entropy_*_r) reached only 0.60-0.77 of copy
// bandwidth (4096 x 3072, 4096 x 6144, 16384 x 3072) against a read-only ceiling of 0.87-0.95:
// with a warp per row, the rows that land last are each reduced by one warp alone (3072 EX2 per
// warp, one after the other for a warp's two rows), and the target of a row was loaded from
// global memory only after its row was reduced, so its latency was paid once per row.
// Its own module (no header of its own), so no other module's hash, and no baseline, moves.
//
// The scheme (a persistent grid; one block works on one row at a time):
//  * thread 0 asks the copy engine for the block's next rows (one cp.async.bulk per row,
//    completion counted in bytes on the row buffer's mbarrier), KG_CEB_STAGES rows ahead, and
//    loads the row's target before it waits for the row, so that load hides under the wait;
//  * every thread takes the columns v = tid + k * blockDim.x of the staged row: the row max
//    (packed 16-bit maxima, a warp butterfly, a slot per warp, one barrier), then the sum of
//    exp(x - max) (FFMA + EX2, a butterfly, a slot per warp, a second barrier);
//  * thread 0 adds the warps' sums in a fixed order (deterministic), writes loss and lse (the
//    target's logit read from the staged row; ignore_index -100 gives loss 0, a target outside
//    [0, n) gives NaN), then refills the buffer, which every thread finished reading before the
//    second barrier.
// KG_CEB_POLY=1 (a build option, for the bench): every other exponential on the FMA pipe (a
// degree-5 polynomial of 2^f on [-0.5, 0.5], relative error below 3e-6 and an exponent add), the other half on MUFU.EX2.
// Launch (src/backend/cuda/norms.rs, ceb_threads/ceb_smem_bytes): rows of n elements with
// n * sizeof(T) a multiple of 16 and at most KG_CEB_MAX_ROW_BYTES; blockDim.x a multiple of 32,
// at most 1024; dynamic shared memory kg_ceb_smem_bytes(n * sizeof(T)); grid = as many blocks as
// fit at once, at most m.
#include "rowops.cuh"

#ifndef KG_CEB_STAGES
#define KG_CEB_STAGES 2
#endif
#ifndef KG_CEB_POLY
#define KG_CEB_POLY 0
#endif
#define KG_CEB_MAX_ROW_BYTES 49152
#define KG_CEB_IGNORE_INDEX (-100)
#define KG_CEB_LOG2E 1.4426950408889634f

__host__ __device__ constexpr unsigned kg_ceb_stage_bytes(unsigned row_bytes) { return (row_bytes + 127u) / 128u * 128u; }
// 128 bytes of mbarriers, then the row buffers.
__host__ __device__ constexpr unsigned kg_ceb_smem_bytes(unsigned row_bytes) {
    return 128u + KG_CEB_STAGES * kg_ceb_stage_bytes(row_bytes);
}

// 2^x on MUFU.EX2 (ex2.approx.ftz: about 2 ulp; results below 2^-126 flush to 0).
__device__ __forceinline__ float kg_ceb_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
// 2^x on the FMA pipe for x <= 0: x = j + f with j an integer (round to nearest by the 1.5 * 2^23
// trick) and f in [-0.5, 0.5], 2^f by its degree-5 Taylor polynomial (relative error below
// 3e-6), j added to the exponent; x at or below -126 gives 0.
__device__ __forceinline__ float kg_ceb_ex2_poly(float x) {
    x = fmaxf(x, -127.f);
    const float t = x + 12582912.f;
    const float j = t - 12582912.f;
    const float f = x - j;
    float p = 1.3333558e-3f;
    p = fmaf(p, f, 9.6181291e-3f);
    p = fmaf(p, f, 5.5504109e-2f);
    p = fmaf(p, f, 2.4022651e-1f);
    p = fmaf(p, f, 6.9314718e-1f);
    p = fmaf(p, f, 1.f);
    const int e = __float_as_int(t) << 23;  // j in the low mantissa bits of t, shifted to the exponent
    const float r = __int_as_float(__float_as_int(p) + e);
    return x > -126.f ? r : 0.f;
}

template <typename T> __device__ __forceinline__ float kg_ceb_max16(const uint4& q);
template <> __device__ __forceinline__ float kg_ceb_max16<float>(const uint4& q) {
    return fmaxf(fmaxf(__uint_as_float(q.x), __uint_as_float(q.y)), fmaxf(__uint_as_float(q.z), __uint_as_float(q.w)));
}
template <> __device__ __forceinline__ float kg_ceb_max16<__nv_bfloat16>(const uint4& q) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&q);
    const __nv_bfloat162 m = __hmax2(__hmax2(h[0], h[1]), __hmax2(h[2], h[3]));
    return fmaxf(__low2float(m), __high2float(m));
}
template <> __device__ __forceinline__ float kg_ceb_max16<__half>(const uint4& q) {
    const __half2* h = reinterpret_cast<const __half2*>(&q);
    const __half2 m = __hmax2(__hmax2(h[0], h[1]), __hmax2(h[2], h[3]));
    return fmaxf(__low2float(m), __high2float(m));
}

// The V elements of 16 bytes of T as floats.
template <typename T, int V> __device__ __forceinline__ void kg_ceb_unpack(const uint4& q, float (&f)[V]);
template <> __device__ __forceinline__ void kg_ceb_unpack<float, 4>(const uint4& q, float (&f)[4]) {
    f[0] = __uint_as_float(q.x);
    f[1] = __uint_as_float(q.y);
    f[2] = __uint_as_float(q.z);
    f[3] = __uint_as_float(q.w);
}
template <> __device__ __forceinline__ void kg_ceb_unpack<__nv_bfloat16, 8>(const uint4& q, float (&f)[8]) {
    const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
template <> __device__ __forceinline__ void kg_ceb_unpack<__half, 8>(const uint4& q, float (&f)[8]) {
    const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 p = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
        f[2 * i] = p.x;
        f[2 * i + 1] = p.y;
    }
}

template <typename T, int V>
__device__ __forceinline__ void ce_fwd_block(const T* __restrict__ x, const int* __restrict__ tgt,
                                             float* __restrict__ loss, float* __restrict__ lse, int m, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char kg_ceb_buf[];
    __shared__ float red[2][32];  // [max, sum][warp]
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, warps = nt >> 5;
    const int nv = n / V;
    const unsigned row_bytes = (unsigned)n * (unsigned)sizeof(T);
    const unsigned stage = kg_ceb_stage_bytes(row_bytes);
    const unsigned bars = (unsigned)__cvta_generic_to_shared(kg_ceb_buf);
    const unsigned rows_s = bars + 128;
    if (tid == 0) {
#pragma unroll
        for (int st = 0; st < KG_CEB_STAGES; ++st)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bars + 8 * st) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    // Thread 0: row `row` into buffer st (its mbarrier expects row_bytes).
    auto issue = [&](long long row, int st) {
        const unsigned bar = bars + 8 * st;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(row_bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         rows_s + st * stage),
                     "l"(x + row * n), "r"(row_bytes), "r"(bar)
                     : "memory");
    };
    if (tid == 0)
#pragma unroll
        for (int st = 0; st < KG_CEB_STAGES; ++st)
            if (blockIdx.x + (long long)st * gridDim.x < m) issue(blockIdx.x + (long long)st * gridDim.x, st);
    unsigned phase = 0;  // bit st: the parity buffer st waits for next
    int st = 0;
    for (long long row = blockIdx.x; row < m; row += gridDim.x) {
        int t = 0;
        if (tid == 0) t = tgt[row];  // in flight while the row lands
        const unsigned bar = bars + 8 * st;
        unsigned done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done)
                         : "r"(bar), "r"((phase >> st) & 1u)
                         : "memory");
        phase ^= 1u << st;
        const unsigned char* rowp = kg_ceb_buf + 128 + st * stage;
        const uint4* sr = reinterpret_cast<const uint4*>(rowp);
        float m0 = __int_as_float(0xff800000), m1 = m0;
        int v = tid;
        for (; v + nt < nv; v += 2 * nt) {
            m0 = fmaxf(m0, kg_ceb_max16<T>(sr[v]));
            m1 = fmaxf(m1, kg_ceb_max16<T>(sr[v + nt]));
        }
        if (v < nv) m0 = fmaxf(m0, kg_ceb_max16<T>(sr[v]));
        float mx = fmaxf(m0, m1);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        if (lane == 0) red[0][warp] = mx;
        __syncthreads();
        mx = red[0][0];
        for (int w = 1; w < warps; ++w) mx = fmaxf(mx, red[0][w]);
        const float mb = mx * KG_CEB_LOG2E;
        float acc[V];
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] = 0.f;
        for (v = tid; v < nv; v += nt) {
            float f[V];
            kg_ceb_unpack<T, V>(sr[v], f);
#pragma unroll
            for (int j = 0; j < V; ++j) {
                // 16-bit inputs: one FFMA (its rounding is far below the input's own); fp32:
                // subtract first (exact near the max), then scale.
                const float a = sizeof(T) == 4 ? (f[j] - mx) * KG_CEB_LOG2E : fmaf(f[j], KG_CEB_LOG2E, -mb);
                acc[j] += (KG_CEB_POLY && (j & 1)) ? kg_ceb_ex2_poly(a) : kg_ceb_ex2(a);
            }
        }
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < V; ++j) s += acc[j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) red[1][warp] = s;
        __syncthreads();
        if (tid == 0) {
            float sum = 0.f;
            for (int w = 0; w < warps; ++w) sum += red[1][w];
            const float l = mx + logf(sum);
            float out;
            if (t == KG_CEB_IGNORE_INDEX) out = 0.f;
            else if (t < 0 || t >= n) out = __int_as_float(0x7fc00000);
            else out = l - kg_to_f<T>(reinterpret_cast<const T*>(rowp)[t]);
            loss[row] = out;
            lse[row] = l;
            // Every thread finished reading the buffer before the barrier above; order those
            // generic-proxy reads (and this thread's) before the copy engine's writes.
            if (row + (long long)KG_CEB_STAGES * gridDim.x < m) {
                asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                issue(row + (long long)KG_CEB_STAGES * gridDim.x, st);
            }
        }
        st = st + 1 == KG_CEB_STAGES ? 0 : st + 1;
    }
#else
    __trap();  // the host launches the _b cross-entropy only on sm_90 and newer
#endif
}

#define KG_CEB(TN, T)                                                                              \
    extern "C" __global__ void __launch_bounds__(1024) kg_cross_entropy_##TN##_b(                  \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n) {                       \
        ce_fwd_block<T, 16 / sizeof(T)>(x, tgt, loss, lse, m, n);                                  \
    }

KG_CEB(bf16, __nv_bfloat16)
KG_CEB(fp16, __half)
KG_CEB(fp32, float)
