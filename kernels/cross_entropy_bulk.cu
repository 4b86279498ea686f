// kernelgate cross-entropy forward, rows staged by the bulk-copy engine (sm_90+; suffix _b, and
// _bp with a quarter of the exponentials on the FMA pipe). Written in session 12 for issue 13's
// short grids on the H200, where rows_p.cu's bulk-staged kernel (kg_cross_entropy_*_r: four
// warps a block, two row buffers a warp, fixed at compile time) reaches 0.60-0.79 of copy
// bandwidth (4096 x 3072, 4096 x 6144, 16384 x 3072) against a read-only ceiling of 0.87-0.93.
// Nsight Compute on an H100 (4096 x 3072): 25% occupancy (shared memory), 0.46 eligible warps
// per scheduler, most stalls waiting for data. This kernel takes the warps per block and the
// row buffers per warp at launch, so the host can trade buffers for warps per shape.
// Its own module (no header of its own), so no other module's hash, and no baseline, moves.
// Measured in session 12 on H100s only (docs/kernels/README.md): 8 warps x 1 buffer takes
// 0.91x `_r`'s time at 4096 x 3072 and 1.05-1.08x at 4096 x 6144 and 16384 x 3072; the _bp
// variant and the other launches were slower. Opt-in (KERNELGATE_CE_FWD) until an H200 run.
// (A first version, a block per row with each warp copying its own chunk, was slower the smaller
// its copies: 0.38-0.61 of copy bandwidth at 4096 x 3072 on an H200; replaced.)
//
// The scheme (a persistent grid; a warp works on one row at a time):
//  * lane 0 asks the copy engine for the warp's next rows (one cp.async.bulk per row,
//    completion counted in bytes on the buffer's mbarrier), `stages` rows ahead, and loads the
//    target of the warp's next row a row ahead;
//  * the row max (packed 16-bit maxima, two chains, a butterfly), then the sum of exp(x - max)
//    (FFMA + EX2, V independent chains a thread, a butterfly);
//  * lane 0 writes loss and lse (the target's logit read from the staged row; ignore_index -100
//    gives loss 0, a target outside [0, n) gives NaN); the warp syncs and lane 0 refills the
//    buffer (fence.proxy.async orders the lanes' reads before the copy engine's writes).
// _bp: every fourth exponential by a degree-5 polynomial of 2^f on [-0.5, 0.5] (relative error
// below 3e-6) and an exponent add, on the FMA pipe, to take load off MUFU.
// Launch (src/backend/cuda/norms.rs, CeConfig): rows of n elements with n * sizeof(T) a multiple
// of 16 and at most KG_CEB_MAX_ROW_BYTES; blockDim.x a multiple of 32 (at most 1024); `stages`
// in 1..=KG_CEB_MAX_STAGES; dynamic shared memory kg_ceb_smem_bytes(n * sizeof(T), blockDim.x,
// stages); grid = as many blocks as fit at once, at most the rows over the warps per block.
#include "rowops.cuh"

#define KG_CEB_MAX_STAGES 4
// Vectors per exp step (KG_CEB_UNROLL = 2: two, 2 V independent EX2 chains a thread); a build
// option for the bench.
#ifndef KG_CEB_UNROLL
#define KG_CEB_UNROLL 1
#endif
#define KG_CEB_MAX_ROW_BYTES 49152
#define KG_CEB_IGNORE_INDEX (-100)
#define KG_CEB_LOG2E 1.4426950408889634f

__host__ __device__ constexpr unsigned kg_ceb_stage_bytes(unsigned row_bytes) { return (row_bytes + 127u) / 128u * 128u; }
// Bytes of mbarriers at the start of the dynamic shared memory: KG_CEB_MAX_STAGES per warp.
#define KG_CEB_BAR_BYTES (32 * KG_CEB_MAX_STAGES * 8)
// The mbarriers, then `stages` row buffers per warp.
__host__ __device__ constexpr unsigned kg_ceb_smem_bytes(unsigned row_bytes, int threads, int stages) {
    return KG_CEB_BAR_BYTES + (unsigned)(threads / 32) * (unsigned)stages * kg_ceb_stage_bytes(row_bytes);
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

template <typename T, int V, bool POLY>
__device__ __forceinline__ void ce_fwd_warp(const T* __restrict__ x, const int* __restrict__ tgt,
                                            float* __restrict__ loss, float* __restrict__ lse, int m, int n,
                                            int stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char kg_ceb_buf[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wpb = blockDim.x >> 5;
    const int nv = n / V;
    const unsigned row_bytes = (unsigned)n * (unsigned)sizeof(T);
    const unsigned stage = kg_ceb_stage_bytes(row_bytes);
    if (stages < 1 || stages > KG_CEB_MAX_STAGES) __trap();  // a launch the host must never make
    const unsigned bars = (unsigned)__cvta_generic_to_shared(kg_ceb_buf) + (unsigned)(warp * KG_CEB_MAX_STAGES * 8);
    unsigned char* mine = kg_ceb_buf + KG_CEB_BAR_BYTES + (size_t)warp * stages * stage;
    const unsigned mine_s = (unsigned)__cvta_generic_to_shared(mine);
    const long long warps = (long long)gridDim.x * wpb;
    const long long first = (long long)blockIdx.x * wpb + warp;
    if (lane == 0) {
        for (int st = 0; st < stages; ++st)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bars + 8 * st) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncwarp();
    // Lane 0: row `row` into buffer st (its mbarrier expects row_bytes).
    auto issue = [&](long long row, int st) {
        const unsigned bar = bars + 8 * st;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(row_bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         mine_s + st * stage),
                     "l"(x + row * n), "r"(row_bytes), "r"(bar)
                     : "memory");
    };
    if (lane == 0)
        for (int st = 0; st < stages; ++st)
            if (first + st * warps < m) issue(first + st * warps, st);
    // The target of the warp's next row, loaded a row ahead (lane 0).
    int t_next = lane == 0 && first < m ? tgt[first] : 0;
    unsigned phase = 0;  // bit st: the parity buffer st waits for next
    int st = 0;
    for (long long row = first; row < m; row += warps) {
        const int t = t_next;
        if (lane == 0 && row + warps < m) t_next = tgt[row + warps];
        const unsigned bar = bars + 8 * st;
        unsigned done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done)
                         : "r"(bar), "r"((phase >> st) & 1u)
                         : "memory");
        phase ^= 1u << st;
        const uint4* sr = reinterpret_cast<const uint4*>(mine + st * stage);
        float m0 = __int_as_float(0xff800000), m1 = m0;
        int v = lane;
        for (; v + 32 < nv; v += 64) {
            m0 = fmaxf(m0, kg_ceb_max16<T>(sr[v]));
            m1 = fmaxf(m1, kg_ceb_max16<T>(sr[v + 32]));
        }
        if (v < nv) m0 = fmaxf(m0, kg_ceb_max16<T>(sr[v]));
        float mx = fmaxf(m0, m1);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        const float mb = mx * KG_CEB_LOG2E;
        // 16-bit inputs: one FFMA (its rounding is far below the input's own); fp32: subtract
        // first (exact near the max), then scale.
        auto ex = [&](float f, int j) {
            const float a = sizeof(T) == 4 ? (f - mx) * KG_CEB_LOG2E : fmaf(f, KG_CEB_LOG2E, -mb);
            return (POLY && (j & 3) == 3) ? kg_ceb_ex2_poly(a) : kg_ceb_ex2(a);
        };
        float acc[2][V];
#pragma unroll
        for (int j = 0; j < V; ++j) acc[0][j] = acc[1][j] = 0.f;
        v = lane;
        if (KG_CEB_UNROLL == 2) {
            for (; v + 32 < nv; v += 64) {
                float f[V], g[V];
                kg_ceb_unpack<T, V>(sr[v], f);
                kg_ceb_unpack<T, V>(sr[v + 32], g);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    acc[0][j] += ex(f[j], j);
                    acc[1][j] += ex(g[j], j);
                }
            }
        }
        for (; v < nv; v += 32) {
            float f[V];
            kg_ceb_unpack<T, V>(sr[v], f);
#pragma unroll
            for (int j = 0; j < V; ++j) acc[0][j] += ex(f[j], j);
        }
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < V; ++j) sum += acc[0][j] + acc[1][j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (lane == 0) {
            const float l = mx + logf(sum);
            float out;
            if (t == KG_CEB_IGNORE_INDEX) out = 0.f;
            else if (t < 0 || t >= n) out = __int_as_float(0x7fc00000);
            else out = l - kg_to_f<T>(reinterpret_cast<const T*>(mine + st * stage)[t]);
            loss[row] = out;
            lse[row] = l;
        }
        // Every lane is done with the buffer before the copy engine refills it (the generic
        // proxy's reads ordered before the async proxy's writes).
        __syncwarp();
        if (lane == 0 && row + stages * warps < m) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            issue(row + stages * warps, st);
        }
        st = st + 1 == stages ? 0 : st + 1;
    }
#else
    __trap();  // the host launches the _b cross-entropy only on sm_90 and newer
#endif
}

#define KG_CEB(TN, T)                                                                              \
    extern "C" __global__ void __launch_bounds__(1024) kg_cross_entropy_##TN##_b(                  \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n, int stages) {           \
        ce_fwd_warp<T, 16 / sizeof(T), false>(x, tgt, loss, lse, m, n, stages);                    \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(1024) kg_cross_entropy_##TN##_bp(                 \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n, int stages) {           \
        ce_fwd_warp<T, 16 / sizeof(T), true>(x, tgt, loss, lse, m, n, stages);                     \
    }

KG_CEB(bf16, __nv_bfloat16)
KG_CEB(fp16, __half)
KG_CEB(fp32, float)
