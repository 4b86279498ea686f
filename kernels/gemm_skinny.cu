// kernelgate GEMM, skinny shapes: C[M,N] = A[M,K] · B[K,N], all row-major, where one of M or N
// is at most 16. Such a GEMM is a (multi-)GEMV: its time is reading the large operand once, so
// these kernels stream it with 16-byte loads and keep the small one in shared memory or L1.
// fp32 accumulation everywhere (fp32 inputs: plain FFMA, no TF32).
//
// gemm_skinny_m_<dt>_<MT> (M <= MT <= 16): B (K x N) is the big operand.
//   Grid (ceil(N / (256·VEC)), splits); 256 threads, each owning VEC = 16/sizeof(T) adjacent
//   columns. CTA (x, s) reads rows [s·kchunk, (s+1)·kchunk) of B once, coalesced (a warp reads
//   512 contiguous bytes of a row), and A's M x kchunk slice from shared memory (as fp32).
//   Eight rows of B are loaded before any is used so 8 x 16 bytes per thread are in flight.
//   splits == 1: the CTA writes C. splits > 1: CTA (x, s) writes its fp32 partial sums to
//   slice s of a [splits][M][N] workspace (a few MB, L2-resident) and gemm_skinny_reduce_<dt>
//   adds the slices in a fixed order (deterministic) and converts.
// gemm_skinny_n_<dt>_<NT> (N <= NT <= 16): A (M x K) is the big operand.
//   One warp per R rows (R = 8 for NT <= 8, else 4), 8 warps per CTA; grid (row groups, splits),
//   CTA (g, s) runs K range [s·kchunk, (s+1)·kchunk): lane l reads A[row, k..k+VEC) for
//   k = 32·VEC·i + VEC·l (16-byte loads; the next step's loads are issued before this step's
//   math), B's VEC x N block at k comes from L1/L2 (B is K·N·sizeof(T) bytes and every warp of
//   the CTA reads the same rows), and each lane keeps R x NT partial dot products, reduced
//   across the warp with shuffles at the end; split K writes partials as skinny_m does.
// gemm_skinny_ntc_<dt>_<NT>_r<R>h<H> (bf16/fp16, N <= NT in {8, 16}, compute capability >= 8.0):
//   the skinny-N product on tensor cores (mma.sync m16n8k16, fp32 accumulators). The FFMA kernel
//   above spends NT multiply-adds and NT loads of B per element of A and runs at a fraction of
//   the memory bandwidth; here a CTA of 4 warps owns 16·R rows of A (R m16 tiles) and its warps
//   take interleaved steps of 32·H columns of the CTA's K range. Lane (g, t) reads 16 bytes of
//   rows g and g+8 at k = 32h + 8t of the step (h < H), so a warp's loads cover 8 rows x 32·H·2
//   contiguous bytes; since a dot product does not care about the order of k, each 8 elements
//   are used as the fragment's k pairs (2t, 2t+1) and (2t+8, 2t+9) of two k16 MMAs, and B's
//   fragment is gathered with the same permutation: when N fills the tile (N = 8 or 16), each
//   warp copies B's 32·H x N block of the step into shared memory in that logical order and
//   ldmatrix.trans hands out the fragments; otherwise each lane gathers B[k][n] for its k
//   (n = g of each n-tile) with bounds-checked scalar loads. The four warps' partial tiles are
//   summed in shared memory in a fixed order; split K writes partials as the other kernels do,
//   and small outputs with 32 or more splits are reduced a warp per element
//   (gemm_skinny_reduce_w_*). Entries: NT = 8 with (R, H) = (1, 4), (1, 8), (2, 2), (2, 4);
//   NT = 16 with (1, 2), (2, 2); src/backend/cuda/gemm_skinny.rs (choose_ntc, ntc_splits) picks
//   one by shape and the entry's occupancy, KERNELGATE_SKINNY_NTC=r<R>h<H> forces one.
// Unaligned shapes (N for skinny_m, K for skinny_n not a multiple of VEC) fall back to scalar,
// bounds-checked loads; out-of-range elements count as zero.
// A's 16-byte loads in both skinny-N kernels carry the L2 prefetch-size hint .L2::256B (and
// .L1::no_allocate in the FFMA kernel): an L2 miss then fetches the whole 256-byte block from
// DRAM at once rather than sector by sector. Session 42 (kernels/dev/skinny_n_bench.cu, H100s):
// 8192x8x8192 bf16 62.4 -> 53.6 us (the tensor-core kernel, whose warp loads cover 64 bytes of
// each of 8 rows), fp32 196 -> 113 us (the FFMA kernel, 512 contiguous bytes per warp load).
#include "kg_common.cuh"

#define SKM_THREADS 256
#define SKM_KC 256  // most rows of B (and columns of A) one skinny_m CTA handles
#define SKN_WARPS 8

template <typename T> struct SkT;
template <> struct SkT<float> {
    static __device__ __forceinline__ float f(float x) { return x; }
    static __device__ __forceinline__ float t(float x) { return x; }
    // 4 floats from 16 bytes.
    static __device__ __forceinline__ void unpack(const uint4& u, float* o) {
        o[0] = __uint_as_float(u.x);
        o[1] = __uint_as_float(u.y);
        o[2] = __uint_as_float(u.z);
        o[3] = __uint_as_float(u.w);
    }
};
template <> struct SkT<__nv_bfloat16> {
    static __device__ __forceinline__ float f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 t(float x) { return __float2bfloat16_rn(x); }
    // 8 bf16 from 16 bytes: a bf16 is the high half of an fp32.
    static __device__ __forceinline__ void unpack(const uint4& u, float* o) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            o[2 * i] = __uint_as_float(w[i] << 16);
            o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
};
template <> struct SkT<__half> {
    static __device__ __forceinline__ float f(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half t(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ void unpack(const uint4& u, float* o) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            __half2 h = *reinterpret_cast<const __half2*>(&w[i]);
            float2 f = __half22float2(h);
            o[2 * i] = f.x;
            o[2 * i + 1] = f.y;
        }
    }
};

// ---- skinny M -------------------------------------------------------------------------------

template <typename T, int MT>
__device__ __forceinline__ void skinny_m(const T* __restrict__ A, const T* __restrict__ B,
                                         T* __restrict__ C, float* __restrict__ part, int M,
                                         int N, int K, int kchunk) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = 8;  // rows of B in flight per thread
    __shared__ float As[MT][SKM_KC];
    const int k0 = blockIdx.y * kchunk;
    const int kn = min(kchunk, K - k0);
    for (int i = threadIdx.x; i < MT * kn; i += SKM_THREADS) {
        const int m = i / kn, kk = i - m * kn;
        As[m][kk] = m < M ? SkT<T>::f(A[(size_t)m * K + k0 + kk]) : 0.0f;
    }
    __syncthreads();
    const int col = (blockIdx.x * SKM_THREADS + threadIdx.x) * VEC;
    if (col >= N || kn <= 0) return;
    float acc[MT][VEC];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < VEC; j++) acc[m][j] = 0.0f;
    // Rows of B are N·sizeof(T) bytes apart: 16-byte loads are aligned when N % VEC == 0.
    const bool vec = (N % VEC) == 0 && col + VEC <= N;
    const T* bp = B + (size_t)k0 * N + col;
    int kk = 0;
    if (vec) {
        for (; kk + U <= kn; kk += U) {
            uint4 raw[U];
#pragma unroll
            for (int u = 0; u < U; u++)
                raw[u] = __ldg(reinterpret_cast<const uint4*>(bp + (size_t)(kk + u) * N));
#pragma unroll
            for (int u = 0; u < U; u++) {
                float b[VEC];
                SkT<T>::unpack(raw[u], b);
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    const float a = As[m][kk + u];
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[m][j] = fmaf(a, b[j], acc[m][j]);
                }
            }
        }
        for (; kk < kn; kk++) {
            float b[VEC];
            SkT<T>::unpack(__ldg(reinterpret_cast<const uint4*>(bp + (size_t)kk * N)), b);
#pragma unroll
            for (int m = 0; m < MT; m++) {
                const float a = As[m][kk];
#pragma unroll
                for (int j = 0; j < VEC; j++) acc[m][j] = fmaf(a, b[j], acc[m][j]);
            }
        }
    } else {
        for (; kk < kn; kk++) {
            float b[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++)
                b[j] = col + j < N ? SkT<T>::f(bp[(size_t)kk * N + j]) : 0.0f;
#pragma unroll
            for (int m = 0; m < MT; m++) {
                const float a = As[m][kk];
#pragma unroll
                for (int j = 0; j < VEC; j++) acc[m][j] = fmaf(a, b[j], acc[m][j]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < MT; m++) {
        if (m >= M) break;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            if (col + j >= N) break;
            const size_t i = (size_t)m * N + col + j;
            if (part)
                part[(size_t)blockIdx.y * M * N + i] = acc[m][j];
            else
                C[i] = SkT<T>::t(acc[m][j]);
        }
    }
}

// ---- skinny N -------------------------------------------------------------------------------

// A 16-byte read-only load of streamed data with the L2 prefetch-size hint (see the header);
// NO_L1 also keeps it out of L1 (no line of A is read twice).
template <bool NO_L1>
__device__ __forceinline__ uint4 sk_ld16_stream(const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    uint4 v;
    if constexpr (NO_L1)
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    else
        asm("ld.global.nc.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    return v;
#else
    return __ldg(reinterpret_cast<const uint4*>(p));  // the hint needs sm_75
#endif
}

// acc[r][n] += a[r][j] * b[n] for the warp's R rows and NT columns: one row k + j of B.
template <int NT, int R, int VEC>
__device__ __forceinline__ void skinny_n_fma(float (&acc)[R][NT], const float (&a)[R][VEC], int j,
                                             const float (&b)[NT]) {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NT; n++) acc[r][n] = fmaf(a[r][j], b[n], acc[r][n]);
}

template <typename T, int NT, int R>
__device__ __forceinline__ void skinny_n_loadA(const T* __restrict__ A, int row0, int M, int K,
                                               int k, bool a_vec, uint4 (&raw)[R]) {
    constexpr int VEC = 16 / sizeof(T);
    if (a_vec && k + VEC <= K && row0 + R <= M) {
        // Every row in range: R loads with no branch between them.
#pragma unroll
        for (int r = 0; r < R; r++) raw[r] = sk_ld16_stream<true>(A + (size_t)(row0 + r) * K + k);
        return;
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = row0 + r;
        if (row < M && a_vec && k + VEC <= K) {
            raw[r] = sk_ld16_stream<true>(A + (size_t)row * K + k);
        } else {
            // Scalar, bounds-checked: assemble the 16 bytes by hand (zeros outside).
            union {
                uint4 u;
                T v[VEC];
            } x;
#pragma unroll
            for (int j = 0; j < VEC; j++)
                x.v[j] = (row < M && k + j < K) ? A[(size_t)row * K + k + j] : SkT<T>::t(0.0f);
            raw[r] = x.u;
        }
    }
}

template <typename T, int NT, int R>
__device__ __forceinline__ void skinny_n(const T* __restrict__ A, const T* __restrict__ B,
                                         T* __restrict__ C, float* __restrict__ part, int M,
                                         int N, int K, int kchunk) {
    constexpr int VEC = 16 / sizeof(T);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int row0 = (blockIdx.x * SKN_WARPS + warp) * R;
    if (row0 >= M) return;
    const int kbeg = blockIdx.y * kchunk;
    const int kend = min(K, kbeg + kchunk);
    float acc[R][NT];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NT; n++) acc[r][n] = 0.0f;
    // A's rows are K·sizeof(T) bytes apart (aligned 16-byte loads need K % VEC == 0); B's rows
    // N·sizeof(T) (vector loads of a B row need N % VEC == 0). kchunk is a multiple of VEC.
    const bool a_vec = (K % VEC) == 0;
    const bool b_vec = (N % VEC) == 0;
    constexpr int STEP = 32 * VEC;
    int k = kbeg + lane * VEC;
    uint4 cur[R], nxt[R];
    if (k < kend) skinny_n_loadA<T, NT, R>(A, row0, M, K, k, a_vec, cur);
    for (; k < kend; k += STEP) {
        if (k + STEP < kend) skinny_n_loadA<T, NT, R>(A, row0, M, K, k + STEP, a_vec, nxt);
        float a[R][VEC];
#pragma unroll
        for (int r = 0; r < R; r++) SkT<T>::unpack(cur[r], a[r]);
        if (N == NT && k + VEC <= kend) {
            // The common step: VEC whole rows of B, their loads issued together (the guarded
            // loop below breaks between rows, which serialises them: 196 against 113 us at
            // 8192x8x8192 fp32 on an H100, session 42).
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                float b[NT];
                const T* brow = B + (size_t)(k + j) * N;
#pragma unroll
                for (int v = 0; v < NT / VEC; v++)
                    SkT<T>::unpack(__ldg(reinterpret_cast<const uint4*>(brow + v * VEC)), b + v * VEC);
                skinny_n_fma<NT, R, VEC>(acc, a, j, b);
            }
#pragma unroll
            for (int r = 0; r < R; r++) cur[r] = nxt[r];
            continue;
        }
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            if (k + j >= kend) break;
            float b[NT];
            const T* brow = B + (size_t)(k + j) * N;
            if (b_vec) {
#pragma unroll
                for (int v = 0; v < NT / VEC; v++) {
                    if (v * VEC < N) {
                        SkT<T>::unpack(__ldg(reinterpret_cast<const uint4*>(brow + v * VEC)), b + v * VEC);
                    } else {
#pragma unroll
                        for (int q = 0; q < VEC; q++) b[v * VEC + q] = 0.0f;
                    }
                }
            } else {
#pragma unroll
                for (int n = 0; n < NT; n++) b[n] = n < N ? SkT<T>::f(brow[n]) : 0.0f;
            }
            skinny_n_fma<NT, R, VEC>(acc, a, j, b);
        }
#pragma unroll
        for (int r = 0; r < R; r++) cur[r] = nxt[r];
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NT; n++) {
            float v = acc[r][n];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            acc[r][n] = v;
        }
    // Lane n (< N) of the warp writes column n of each of its rows.
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = row0 + r;
        if (row >= M) break;
#pragma unroll
        for (int n = 0; n < NT; n++)
            if (lane == n && n < N) {
                const size_t i = (size_t)row * N + n;
                if (part)
                    part[(size_t)blockIdx.y * M * N + i] = acc[r][n];
                else
                    C[i] = SkT<T>::t(acc[r][n]);
            }
    }
}


// ---- skinny N on tensor cores ----------------------------------------------------------------

#define SKT_WARPS 4

template <typename T> struct SkMma;
template <> struct SkMma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float (&d)[4], unsigned a0, unsigned a1,
                                               unsigned a2, unsigned a3, unsigned b0,
                                               unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
        __trap();
#endif
    }
};
template <> struct SkMma<__half> {
    static __device__ __forceinline__ void run(float (&d)[4], unsigned a0, unsigned a1,
                                               unsigned a2, unsigned a3, unsigned b0,
                                               unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
            "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
        __trap();
#endif
    }
};

__device__ __forceinline__ unsigned sk_word(const uint4& u, int i) {
    return i == 0 ? u.x : i == 1 ? u.y : i == 2 ? u.z : u.w;
}

// 8 consecutive 16-bit elements of row `row` from column k (zeros outside M x [.., kend)).
__device__ __forceinline__ uint4 sk_load8(const unsigned short* __restrict__ A, int row, int M,
                                          int K, int k, int kend, bool vec) {
    if (row < M && vec && k + 8 <= kend) return sk_ld16_stream<false>(A + (size_t)row * K + k);
    unsigned w[4];
#pragma unroll
    for (int p = 0; p < 4; p++) {
        const unsigned lo = (row < M && k + 2 * p < kend) ? A[(size_t)row * K + k + 2 * p] : 0u;
        const unsigned hi =
            (row < M && k + 2 * p + 1 < kend) ? A[(size_t)row * K + k + 2 * p + 1] : 0u;
        w[p] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

template <typename T, int NT, int R, int H>
__device__ __forceinline__ void skinny_ntc(const T* __restrict__ A_, const T* __restrict__ B_,
                                           T* __restrict__ C, float* __restrict__ part, int M,
                                           int N, int K, int kchunk) {
    constexpr int NJ = NT / 8;     // n8 tiles
    constexpr int STEP = 32 * H;   // columns of A per warp step: H halves of 32
    __shared__ float red[SKT_WARPS][16 * R][NT];
    // Per warp: B's block of one step as 2H 16 x NT tiles (half h, MMA s), logical k order.
    __shared__ __align__(16) unsigned short bs[SKT_WARPS][2 * H][16][NT];
    const unsigned short* A = reinterpret_cast<const unsigned short*>(A_);
    const unsigned short* B = reinterpret_cast<const unsigned short*>(B_);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int row0 = blockIdx.x * 16 * R;
    const int kbeg = blockIdx.y * kchunk;
    const int kend = min(K, kbeg + kchunk);
    const bool vec = (K & 7) == 0;
    // Whole 16-byte rows of B when N fills the tile (B's rows then start 16-byte aligned).
    const bool staged = N == NT;
    float acc[R][NJ][4];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) acc[r][j][q] = 0.0f;
    for (int k0 = kbeg + warp * STEP; k0 < kend; k0 += SKT_WARPS * STEP) {
        uint4 a[R][2][H];  // [m tile][row g, g + 8][half of the step]
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int rr = 0; rr < 2; rr++)
#pragma unroll
                for (int h = 0; h < H; h++)
                    a[r][rr][h] = sk_load8(A, row0 + 16 * r + 8 * rr + g, M, K,
                                           k0 + 32 * h + 8 * t, kend, vec);
        unsigned b[NJ][H][4];  // [n tile][half][k pair]: (B[k][n], B[k + 1][n])
        if (staged) {
            // B's 64 x NT block of the step, whole rows, into this warp's shared tiles in the
            // MMAs' logical k order (physical row 32h + 8t + 4s + 2hi + i is logical row
            // 2t + i + 8hi of tile (h, s)); ldmatrix.trans then hands each lane its fragment.
            __syncwarp();
#pragma unroll
            for (int q = 0; q < NT * H / 8; q++) {
                const int idx = lane + 32 * q, pr = idx / (NT / 8), c = idx - pr * (NT / 8);
                const int h = pr >> 5, tt = (pr >> 3) & 3, w = pr & 7;
                const int ss = w >> 2, hi = (w >> 1) & 1, i = w & 1;
                const int L = 2 * tt + i + 8 * hi;
                uint4 v = make_uint4(0u, 0u, 0u, 0u);
                if (k0 + pr < kend) v = __ldg(reinterpret_cast<const uint4*>(B + (size_t)(k0 + pr) * N) + c);
                *reinterpret_cast<uint4*>(&bs[warp][2 * h + ss][L][8 * c]) = v;
            }
            __syncwarp();
#pragma unroll
            for (int h = 0; h < H; h++)
#pragma unroll
                for (int ss = 0; ss < 2; ss++) {
                    const int mq = lane >> 3, rr = lane & 7;
                    const unsigned short* rowp =
                        &bs[warp][2 * h + ss][rr + 8 * (mq & 1)][8 * ((mq >> 1) % NJ)];
                    const unsigned addr = (unsigned)__cvta_generic_to_shared(rowp);
                    if (NJ == 2) {
                        asm volatile(
                            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                            : "=r"(b[0][h][2 * ss]), "=r"(b[0][h][2 * ss + 1]),
                              "=r"(b[NJ - 1][h][2 * ss]), "=r"(b[NJ - 1][h][2 * ss + 1])
                            : "r"(addr));
                    } else {
                        asm volatile(
                            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                            : "=r"(b[0][h][2 * ss]), "=r"(b[0][h][2 * ss + 1])
                            : "r"(addr));
                    }
                }
        } else {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int n = 8 * j + g;
#pragma unroll
                for (int h = 0; h < H; h++)
#pragma unroll
                    for (int p = 0; p < 4; p++) {
                        const int k = k0 + 32 * h + 8 * t + 2 * p;
                        const unsigned lo =
                            (n < N && k < kend) ? __ldg(B + (size_t)k * N + n) : 0u;
                        const unsigned hi =
                            (n < N && k + 1 < kend) ? __ldg(B + (size_t)(k + 1) * N + n) : 0u;
                        b[j][h][p] = lo | (hi << 16);
                    }
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int h = 0; h < H; h++)
#pragma unroll
                for (int s = 0; s < 2; s++)
#pragma unroll
                    for (int j = 0; j < NJ; j++)
                        SkMma<T>::run(acc[r][j], sk_word(a[r][0][h], 2 * s),
                                      sk_word(a[r][1][h], 2 * s), sk_word(a[r][0][h], 2 * s + 1),
                                      sk_word(a[r][1][h], 2 * s + 1), b[j][h][2 * s],
                                      b[j][h][2 * s + 1]);
    }
    // Accumulator (r, j): c0, c1 at row g, columns 8j + 2t, +1; c2, c3 at row g + 8.
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            red[warp][16 * r + g][8 * j + 2 * t] = acc[r][j][0];
            red[warp][16 * r + g][8 * j + 2 * t + 1] = acc[r][j][1];
            red[warp][16 * r + g + 8][8 * j + 2 * t] = acc[r][j][2];
            red[warp][16 * r + g + 8][8 * j + 2 * t + 1] = acc[r][j][3];
        }
    __syncthreads();
    for (int i = threadIdx.x; i < 16 * R * NT; i += SKT_WARPS * 32) {
        const int rl = i / NT, n = i - rl * NT, row = row0 + rl;
        if (row >= M || n >= N) continue;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < SKT_WARPS; w++) v += red[w][rl][n];
        const size_t o = (size_t)row * N + n;
        if (part)
            part[(size_t)blockIdx.y * M * N + o] = v;
        else
            C[o] = SkT<T>::t(v);
    }
}

// ---- entry points -----------------------------------------------------------------------------

// C = Σ_s part[s] in a fixed order, converted (split-K epilogue of both kernels).
#define SK_REDUCE(NAME, T)                                                                         \
    extern "C" __global__ void NAME(const float* __restrict__ part, T* __restrict__ C,             \
                                    long long mn, int splits) {                                    \
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < mn;               \
             i += (long long)gridDim.x * blockDim.x) {                                             \
            float s = 0.0f;                                                                        \
            for (int q = 0; q < splits; q++) s += part[(size_t)q * mn + i];                        \
            C[i] = SkT<T>::t(s);                                                                   \
        }                                                                                          \
    }
SK_REDUCE(gemm_skinny_reduce_bf16, __nv_bfloat16)
SK_REDUCE(gemm_skinny_reduce_fp16, __half)
SK_REDUCE(gemm_skinny_reduce_fp32, float)

// The same sum for small outputs with many splits (a thread per element would walk hundreds of
// partials one after another): a warp per element, lane l adding splits l, l + 32, ... and the
// lanes combined by a fixed shuffle tree, so the result is still deterministic.
#define SK_REDUCE_W(NAME, T)                                                                       \
    extern "C" __global__ void NAME(const float* __restrict__ part, T* __restrict__ C,             \
                                    long long mn, int splits) {                                    \
        const int lane = threadIdx.x & 31;                                                         \
        const long long warps = (long long)gridDim.x * (blockDim.x >> 5);                          \
        for (long long i = blockIdx.x * (long long)(blockDim.x >> 5) + (threadIdx.x >> 5); i < mn; \
             i += warps) {                                                                         \
            float s = 0.0f;                                                                        \
            for (int q = lane; q < splits; q += 32) s += part[(size_t)q * mn + i];                 \
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);              \
            if (lane == 0) C[i] = SkT<T>::t(s);                                                    \
        }                                                                                          \
    }
SK_REDUCE_W(gemm_skinny_reduce_w_bf16, __nv_bfloat16)
SK_REDUCE_W(gemm_skinny_reduce_w_fp16, __half)
SK_REDUCE_W(gemm_skinny_reduce_w_fp32, float)

#define SK_M(NAME, T, MT)                                                                          \
    extern "C" __global__ void __launch_bounds__(SKM_THREADS)                                      \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,                  \
             float* __restrict__ part, int M, int N, int K, int kchunk) {                          \
        skinny_m<T, MT>(A, B, C, part, M, N, K, kchunk);                                           \
    }
#define SK_M_ALL(DT, T)                                  \
    SK_M(gemm_skinny_m_##DT##_1, T, 1)                   \
    SK_M(gemm_skinny_m_##DT##_2, T, 2)                   \
    SK_M(gemm_skinny_m_##DT##_4, T, 4)                   \
    SK_M(gemm_skinny_m_##DT##_8, T, 8)                   \
    SK_M(gemm_skinny_m_##DT##_16, T, 16)
SK_M_ALL(bf16, __nv_bfloat16)
SK_M_ALL(fp16, __half)
SK_M_ALL(fp32, float)

#define SK_N(NAME, T, NT, R)                                                                       \
    extern "C" __global__ void __launch_bounds__(SKN_WARPS * 32)                                   \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,                  \
             float* __restrict__ part, int M, int N, int K, int kchunk) {                          \
        skinny_n<T, NT, R>(A, B, C, part, M, N, K, kchunk);                                        \
    }
// NT is a multiple of VEC (8 for 16-bit types, 4 for fp32) so B rows load as whole vectors.
SK_N(gemm_skinny_n_bf16_8, __nv_bfloat16, 8, 8)
SK_N(gemm_skinny_n_bf16_16, __nv_bfloat16, 16, 4)
SK_N(gemm_skinny_n_fp16_8, __half, 8, 8)
SK_N(gemm_skinny_n_fp16_16, __half, 16, 4)
SK_N(gemm_skinny_n_fp32_4, float, 4, 8)
SK_N(gemm_skinny_n_fp32_8, float, 8, 8)
SK_N(gemm_skinny_n_fp32_16, float, 16, 4)

#define SK_NTC(NAME, T, NT, R, H)                                                                  \
    extern "C" __global__ void __launch_bounds__(SKT_WARPS * 32)                                   \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,                  \
             float* __restrict__ part, int M, int N, int K, int kchunk) {                          \
        skinny_ntc<T, NT, R, H>(A, B, C, part, M, N, K, kchunk);                                   \
    }
#define SK_NTC_ALL(DT, T)                                 \
    SK_NTC(gemm_skinny_ntc_##DT##_8_r1h4, T, 8, 1, 4)     \
    SK_NTC(gemm_skinny_ntc_##DT##_8_r1h8, T, 8, 1, 8)     \
    SK_NTC(gemm_skinny_ntc_##DT##_8_r2h2, T, 8, 2, 2)     \
    SK_NTC(gemm_skinny_ntc_##DT##_8_r2h4, T, 8, 2, 4)     \
    SK_NTC(gemm_skinny_ntc_##DT##_16_r1h2, T, 16, 1, 2)   \
    SK_NTC(gemm_skinny_ntc_##DT##_16_r2h2, T, 16, 2, 2)
SK_NTC_ALL(bf16, __nv_bfloat16)
SK_NTC_ALL(fp16, __half)
