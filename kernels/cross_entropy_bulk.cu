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
// Most pieces a row's copy is cut into (each with its own mbarrier, so the warp starts on a
// row's first piece while the rest is still on its way).
#define KG_CEB_MAX_CHUNKS 4
// Vectors per exp step (KG_CEB_UNROLL = 2: two, 2 V independent EX2 chains a thread); a build
// option for the bench.
#ifndef KG_CEB_UNROLL
#define KG_CEB_UNROLL 1
#endif
#define KG_CEB_MAX_ROW_BYTES 49152
#define KG_CEB_IGNORE_INDEX (-100)
#define KG_CEB_LOG2E 1.4426950408889634f

__host__ __device__ constexpr unsigned kg_ceb_stage_bytes(unsigned row_bytes) { return (row_bytes + 127u) / 128u * 128u; }
// Bytes of mbarriers per warp at the start of the dynamic shared memory: one for each piece of
// each buffer (KG_CEB_MAX_STAGES x KG_CEB_MAX_CHUNKS, 8 bytes each; 128, so the row buffers
// after them stay 128-byte aligned).
#define KG_CEB_WARP_BAR_BYTES (KG_CEB_MAX_STAGES * KG_CEB_MAX_CHUNKS * 8)
// The mbarriers, then `stages` row buffers per warp.
__host__ __device__ constexpr unsigned kg_ceb_smem_bytes(unsigned row_bytes, int threads, int stages) {
    return (unsigned)(threads / 32) * (KG_CEB_WARP_BAR_BYTES + (unsigned)stages * kg_ceb_stage_bytes(row_bytes));
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
                                            int stages, int chunks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char kg_ceb_buf[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wpb = blockDim.x >> 5;
    const int nv = n / V;
    const unsigned row_bytes = (unsigned)n * (unsigned)sizeof(T);
    const unsigned stage = kg_ceb_stage_bytes(row_bytes);
    // launches the host must never make
    if (stages < 1 || stages > KG_CEB_MAX_STAGES || chunks < 1 || chunks > KG_CEB_MAX_CHUNKS) __trap();
    // Piece c of a row: vectors [c * cv, min((c + 1) * cv, nv)).
    const int cv = (nv + chunks - 1) / chunks;
    const unsigned bars = (unsigned)__cvta_generic_to_shared(kg_ceb_buf) + (unsigned)(warp * KG_CEB_WARP_BAR_BYTES);
    unsigned char* mine = kg_ceb_buf + (size_t)wpb * KG_CEB_WARP_BAR_BYTES + (size_t)warp * stages * stage;
    const unsigned mine_s = (unsigned)__cvta_generic_to_shared(mine);
    const long long warps = (long long)gridDim.x * wpb;
    const long long first = (long long)blockIdx.x * wpb + warp;
    auto bar_of = [&](int st, int c) { return bars + 8u * (unsigned)(st * KG_CEB_MAX_CHUNKS + c); };
    if (lane == 0) {
        for (int st = 0; st < stages; ++st)
            for (int c = 0; c < chunks; ++c)
                asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_of(st, c)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncwarp();
    // Lane 0: row `row` into buffer st, piece by piece (each piece's mbarrier expects its bytes).
    auto issue = [&](long long row, int st) {
        for (int c = 0; c < chunks; ++c) {
            const int v0 = c * cv, v1 = min(nv, v0 + cv);
            if (v0 >= v1) break;
            const unsigned bar = bar_of(st, c), off = (unsigned)v0 * 16u, bytes = (unsigned)(v1 - v0) * 16u;
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                             mine_s + st * stage + off),
                         "l"(reinterpret_cast<const unsigned char*>(x + row * n) + off), "r"(bytes), "r"(bar)
                         : "memory");
        }
    };
    if (lane == 0)
        for (int st = 0; st < stages; ++st)
            if (first + st * warps < m) issue(first + st * warps, st);
    // The target of the warp's next row, loaded a row ahead (lane 0).
    int t_next = lane == 0 && first < m ? tgt[first] : 0;
    unsigned phase = 0;  // bit st: the parity buffer st's mbarriers wait for next
    int st = 0;
    // 16-bit inputs: one FFMA (its rounding is far below the input's own); fp32: subtract
    // first (exact near the max), then scale.
    auto ex = [&](float f, float mx, float mb, int j) {
        const float a = sizeof(T) == 4 ? (f - mx) * KG_CEB_LOG2E : fmaf(f, KG_CEB_LOG2E, -mb);
        return (POLY && (j & 3) == 3) ? kg_ceb_ex2_poly(a) : kg_ceb_ex2(a);
    };
    for (long long row = first; row < m; row += warps) {
        const int t = t_next;
        if (lane == 0 && row + warps < m) t_next = tgt[row + warps];
        const uint4* sr = reinterpret_cast<const uint4*>(mine + st * stage);
        // Each lane keeps its own running max and sums (rescaled when a piece raises the max),
        // so a piece is summed as soon as it lands; the lanes combine once per row.
        float lm = __int_as_float(0xff800000);
        float acc[2][V];
#pragma unroll
        for (int j = 0; j < V; ++j) acc[0][j] = acc[1][j] = 0.f;
        for (int c = 0; c < chunks; ++c) {
            const int v0 = c * cv, v1 = min(nv, v0 + cv);
            if (v0 >= v1) break;
            const unsigned bar = bar_of(st, c);
            unsigned done = 0;
            while (!done)
                asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                             "selp.u32 %0, 1, 0, p;\n\t}"
                             : "=r"(done)
                             : "r"(bar), "r"((phase >> st) & 1u)
                             : "memory");
            float m0 = __int_as_float(0xff800000), m1 = m0;
            int v = v0 + lane;
            for (; v + 32 < v1; v += 64) {
                m0 = fmaxf(m0, kg_ceb_max16<T>(sr[v]));
                m1 = fmaxf(m1, kg_ceb_max16<T>(sr[v + 32]));
            }
            if (v < v1) m0 = fmaxf(m0, kg_ceb_max16<T>(sr[v]));
            const float cm = fmaxf(m0, m1);
            if (cm > lm) {
                // lm = -inf: the sums are still 0, and 0 * 2^-inf = 0 * 0
                const float r = kg_ceb_ex2((lm - cm) * KG_CEB_LOG2E);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    acc[0][j] *= r;
                    acc[1][j] *= r;
                }
                lm = cm;
            }
            // Only -inf so far in this lane (masked logits): shift by 0, not -inf (NaN); the
            // terms are 0 and lm stays -inf for the combine.
            const float lr = lm == __int_as_float(0xff800000) ? 0.f : lm;
            const float mb = lr * KG_CEB_LOG2E;
            v = v0 + lane;
            if (KG_CEB_UNROLL == 2) {
                for (; v + 32 < v1; v += 64) {
                    float f[V], g[V];
                    kg_ceb_unpack<T, V>(sr[v], f);
                    kg_ceb_unpack<T, V>(sr[v + 32], g);
#pragma unroll
                    for (int j = 0; j < V; ++j) {
                        acc[0][j] += ex(f[j], lr, mb, j);
                        acc[1][j] += ex(g[j], lr, mb, j);
                    }
                }
            }
            for (; v < v1; v += 32) {
                float f[V];
                kg_ceb_unpack<T, V>(sr[v], f);
#pragma unroll
                for (int j = 0; j < V; ++j) acc[0][j] += ex(f[j], lr, mb, j);
            }
        }
        phase ^= 1u << st;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < V; ++j) sum += acc[0][j] + acc[1][j];
        // Combine the lanes: the row max, then each lane's sum rescaled to it (a lane that saw
        // no element has sum 0 and max -inf: 0 * 2^-inf).
        float mx = lm;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        sum = lm == mx ? sum : sum * kg_ceb_ex2((lm - mx) * KG_CEB_LOG2E);
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

// Register-resident forward (`kg_cross_entropy_*_g`, session 14), for short grids: the bulk-
// staged kernel above keeps a row's bytes in flight per warp and then computes on one warp;
// on the H200 at 4096 x 3072 that reaches 0.60-0.64 of copy bandwidth with a quarter of the
// SM's warps (shared memory bounds them) and the issue slots 30% busy (Nsight Compute). Here a
// block of tpr x rpb threads takes rpb rows (threadIdx.y), as rows_p.cu's register kernels do
// (the cross-entropy backward, which computes the same exponentials and also writes dx, ran at
// 0.86 there): every 16-byte vector of the row (v = tx + k * tpr, k < KG_CEG_CACHE) is loaded
// before any is used, then the packed max, one max reduction (butterfly, one barrier across
// the row's warps), sum(exp(x - max)) as one FFMA + EX2 per element into two chains, one sum
// reduction. Thread tx = 0 loads the target and its logit (the logit's load waits only for the
// target, behind the row's loads) and writes loss and lse. Launch: block (tpr, rpb) with
// rpb <= KG_CEG_ROWS and nv = n / V <= KG_CEG_CACHE * tpr (vectorised rows), grid
// ceil(m / rpb).
#define KG_CEG_CACHE 4
#define KG_CEG_ROWS 8

// v reduced over the row's blockDim.x threads (max when MAX, else sum): butterfly in the warp,
// then one slot per warp in s (KG_CEG_ROWS x 32 floats) and one barrier. All threads call it.
template <bool MAX> __device__ __forceinline__ float kg_ceg_reduce(float v, float* s) {
    const int tpr = blockDim.x;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        if (o < tpr) {
            const float w = __shfl_xor_sync(0xffffffffu, v, o);
            v = MAX ? fmaxf(v, w) : v + w;
        }
    if (tpr <= 32) return v;
    const int nw = tpr >> 5, lane = threadIdx.x & 31;
    float* r = s + threadIdx.y * 32;
    if (lane == 0) r[threadIdx.x >> 5] = v;
    __syncthreads();
    v = r[0];
    for (int i = 1; i < nw; ++i) v = MAX ? fmaxf(v, r[i]) : v + r[i];  // fixed order
    return v;
}

template <typename T, int V>
__device__ __forceinline__ void ce_fwd_regs(const T* __restrict__ x, const int* __restrict__ tgt,
                                            float* __restrict__ loss, float* __restrict__ lse, int m, int n) {
    __shared__ float red[2][KG_CEG_ROWS * 32];
    const long long row = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    const bool live = row < m;
    const int nv = n / V, tx = threadIdx.x, tpr = blockDim.x;
    const bool lead = live && tx == 0;
    int t = 0;
    if (lead) t = __ldg(tgt + row);
    const uint4* xr = reinterpret_cast<const uint4*>(x + row * n);
    uint4 q[KG_CEG_CACHE];
#pragma unroll
    for (int k = 0; k < KG_CEG_CACHE; ++k)
        if (live && tx + k * tpr < nv)
            asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(q[k].x), "=r"(q[k].y), "=r"(q[k].z), "=r"(q[k].w)
                         : "l"(xr + tx + k * tpr));
    float xt = 0.f;
    if (lead && t >= 0 && t < n) xt = kg_to_f<T>(x[row * n + t]);
    float mx = __int_as_float(0xff800000);
#pragma unroll
    for (int k = 0; k < KG_CEG_CACHE; ++k)
        if (live && tx + k * tpr < nv) mx = fmaxf(mx, kg_ceb_max16<T>(q[k]));
    mx = kg_ceg_reduce<true>(mx, red[0]);
    const float mb = mx * KG_CEB_LOG2E;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int k = 0; k < KG_CEG_CACHE; ++k)
        if (live && tx + k * tpr < nv) {
            float f[V];
            kg_ceb_unpack<T, V>(q[k], f);
#pragma unroll
            for (int j = 0; j < V; ++j) {
                const float a = sizeof(T) == 4 ? (f[j] - mx) * KG_CEB_LOG2E : fmaf(f[j], KG_CEB_LOG2E, -mb);
                if (j & 1) s1 += kg_ceb_ex2(a);
                else s0 += kg_ceb_ex2(a);
            }
        }
    const float sum = kg_ceg_reduce<false>(s0 + s1, red[1]);
    if (lead) {
        const float l = mx + logf(sum);
        float out;
        if (t == KG_CEB_IGNORE_INDEX) out = 0.f;
        else if (t < 0 || t >= n) out = __int_as_float(0x7fc00000);
        else out = l - xt;
        loss[row] = out;
        lse[row] = l;
    }
}

#define KG_CEB(TN, T)                                                                              \
    extern "C" __global__ void __launch_bounds__(1024) kg_cross_entropy_##TN##_b(                  \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n, int stages, int chunks) { \
        ce_fwd_warp<T, 16 / sizeof(T), false>(x, tgt, loss, lse, m, n, stages, chunks);            \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(1024) kg_cross_entropy_##TN##_bp(                 \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n, int stages, int chunks) { \
        ce_fwd_warp<T, 16 / sizeof(T), true>(x, tgt, loss, lse, m, n, stages, chunks);             \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(512) kg_cross_entropy_##TN##_g(                   \
        const T* x, const int* tgt, float* loss, float* lse, int m, int n) {                       \
        ce_fwd_regs<T, 16 / sizeof(T)>(x, tgt, loss, lse, m, n);                                   \
    }

KG_CEB(bf16, __nv_bfloat16)
KG_CEB(fp16, __half)
KG_CEB(fp32, float)
