// kernelgate `mha`: multi-head attention forward, O = softmax(scale·Q·Kᵀ + mask)·V.
//
// Layout: Q, O are [B, H, Sq, D]; K, V are [B, Hkv, Sk, D], all contiguous, bf16 or fp16.
// Query head h reads key/value head h / (H / Hkv) (GQA/MQA). Causal masking is aligned to
// the end, as FlashAttention does: query i sees keys j <= i + (Sk - Sq); a query row that
// sees no key at all (only when Sq > Sk) gets O = 0. Softmax and all accumulation in fp32.
//
// Design (FlashAttention-2 style, mma.sync tensor cores; D = 64 or 128):
// - One CTA of 8 warps (256 threads) owns a tile of BM = 128 query rows of one (batch, head);
//   warp w owns rows 16w..16w+15. Grid (ceil(Sq/128), H, B); for causal the x index is
//   reversed so the CTAs with the most key tiles start first.
// - Q: 16-byte cp.async into shared memory, then each warp keeps its 16×D Q fragments in
//   registers for the whole loop (ldmatrix.x4).
// - K/V: tiles of BN keys (128 for D = 128, 64 for D = 64), double-buffered in shared memory
//   with cp.async: the loads of tile j+1 are in flight while tile j is computed. Rows are D·2
//   bytes; 16-byte chunks are XOR-swizzled by (row & 7) so ldmatrix reads are conflict free.
// - S = Q·Kᵀ: mma.sync.m16n8k16 (row.col) with K fragments from ldmatrix (non-transposed).
// - Online softmax in the log2 domain: p = ex2.approx(s·scale·log2(e) − m), one FFMA and one
//   MUFU per score (the max is taken on raw scores). The running max m and sum l of a row live
//   in the 4 lanes that hold it (two xor shuffles for the max; l is reduced once at the end).
// - P·V: the S accumulator fragments of two adjacent 8-key tiles are exactly the A fragment of a
//   k16 step, so P is packed to bf16/fp16 in registers without touching shared memory; V
//   fragments come from ldmatrix.trans.
// - Masking only where needed: key tiles past the causal diagonal are skipped entirely; the
//   per-element mask (causal and/or key index >= Sk) runs only on tiles that cross the diagonal
//   or the end of the keys.
// - Occupancy: D = 128 holds O (64 fp32), S (64 fp32) and Q (32 regs) per thread: one CTA
//   per SM (255 registers, 160 KiB shared). D = 64 is capped at 128 registers (8 bytes
//   spill) so that two CTAs (16 warps) share an SM and hide each other's softmax and barriers.
// - Tuning (kernels/dev/mha_bench.cu, H200, bf16, B=4 H=32 S=8192 for D=128 / B=2 for D=64,
//   TFLOP/s non-causal / causal): D=128 BN=64: 304 / 297, BN=128: 317 / 308; D=64 one CTA:
//   245 / 239, two CTAs: 273 / 258, BN=128: 270 / 266.
// - Epilogue: O / l is converted to the output dtype, staged through the warp's own rows of the
//   Q shared-memory tile, and written with coalesced 16-byte stores (rows >= Sq are skipped).
#include "kg_common.cuh"

#define MHA_BM 128
#define MHA_WARPS 8
// Per head dim: keys per K/V tile and the minimum CTAs per SM for __launch_bounds__. The host
// side (src/backend/cuda/mha.rs) sizes shared memory from the same values; the macros exist so
// that kernels/dev/mha_bench.cu can compile variants.
#ifndef MHA_BN_D64
#define MHA_BN_D64 64
#endif
#ifndef MHA_BN_D128
#define MHA_BN_D128 128
#endif
#ifndef MHA_MINB_D64
#define MHA_MINB_D64 2
#endif
#ifndef MHA_MINB_D128
#define MHA_MINB_D128 1
#endif
#define MHA_THREADS (MHA_WARPS * 32)
#define MHA_NEG_INF __int_as_float(0xff800000)

template <typename T> struct MhaPack;
template <> struct MhaPack<__nv_bfloat16> {
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&v);
    }
};
template <> struct MhaPack<__half> {
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __half2 v = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&v);
    }
};

template <typename T> __device__ __forceinline__ void mha_mma(float* c, const unsigned* a, unsigned b0, unsigned b1);
template <> __device__ __forceinline__ void mha_mma<__nv_bfloat16>(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mha_mma<__half>(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mha_ldsm_x4(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void mha_ldsm_x4_t(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// 16-byte async copy; src_bytes = 0 zero-fills the destination (rows past the end).
__device__ __forceinline__ void mha_cp16(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void mha_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void mha_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__device__ __forceinline__ float mha_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Element offset of (row, col) in a swizzled tile with D columns (col a multiple of 8 for
// 16-byte accesses): 16-byte chunk c of row r is stored at chunk c ^ (r & 7).
template <int D> __device__ __forceinline__ int mha_swz(int row, int col) {
    return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// Loads `rows` rows of D elements from global (row stride D) into a swizzled tile; rows at
// or past `valid` are zero-filled (their source address is clamped to a valid row).
template <typename T, int D, int ROWS>
__device__ __forceinline__ void mha_load_tile(T* smem, const T* gmem, int valid) {
    constexpr int CHUNKS = D / 8;
    const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
    static_assert((ROWS * CHUNKS) % MHA_THREADS == 0, "tile must split evenly over the CTA");
#pragma unroll
    for (int it = 0; it < ROWS * CHUNKS / MHA_THREADS; ++it) {
        const int i = threadIdx.x + it * MHA_THREADS;
        int r = i / CHUNKS, c = (i % CHUNKS) * 8;
        bool ok = r < valid;
        const T* src = gmem + (size_t)(ok ? r : 0) * D + c;
        mha_cp16(base + mha_swz<D>(r, c) * 2, src, ok ? 16 : 0);
    }
}

template <typename T, int D, int MHA_BN, bool CAUSAL>
__device__ __forceinline__ void mha_fwd(const T* __restrict__ Q, const T* __restrict__ K,
                                        const T* __restrict__ V, T* __restrict__ O, int H, int Hkv,
                                        int Sq, int Sk, float scale_log2) {
    extern __shared__ __align__(128) unsigned char mha_smem[];
    T* sQ = reinterpret_cast<T*>(mha_smem);
    T* sK = sQ + MHA_BM * D;      // 2 stages
    T* sV = sK + 2 * MHA_BN * D;  // 2 stages

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int m_block = CAUSAL ? (gridDim.x - 1 - blockIdx.x) : blockIdx.x;
    const int h = blockIdx.y, b = blockIdx.z;
    const int hk = h / (H / Hkv);
    const int m0 = m_block * MHA_BM;
    const T* q = Q + ((size_t)(b * H + h) * Sq + m0) * D;
    const T* k = K + (size_t)(b * Hkv + hk) * Sk * D;
    const T* v = V + (size_t)(b * Hkv + hk) * Sk * D;
    T* o = O + ((size_t)(b * H + h) * Sq + m0) * D;

    // Key tiles this CTA needs: all, or (causal) up to the one holding the last row's limit.
    const int diag = Sk - Sq;  // query i sees keys j <= i + diag
    int n_tiles = (Sk + MHA_BN - 1) / MHA_BN;
    if (CAUSAL) {
        int last_key = m0 + MHA_BM - 1 + diag;  // largest key any row of this tile sees
        int t = last_key < 0 ? 0 : last_key / MHA_BN + 1;
        n_tiles = t < n_tiles ? t : n_tiles;
    }

    const unsigned sQa = (unsigned)__cvta_generic_to_shared(sQ);
    const unsigned sKa = (unsigned)__cvta_generic_to_shared(sK);
    const unsigned sVa = (unsigned)__cvta_generic_to_shared(sV);

    mha_load_tile<T, D, MHA_BM>(sQ, q, Sq - m0);
    if (n_tiles > 0) {
        mha_load_tile<T, D, MHA_BN>(sK, k, Sk);
        mha_load_tile<T, D, MHA_BN>(sV, v, Sk);
    }
    mha_commit();

    float acc[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
    float row_m[2] = {MHA_NEG_INF, MHA_NEG_INF}, row_l[2] = {0.f, 0.f};
    unsigned qf[D / 16][4];

    const int g = lane >> 2, t4 = lane & 3;
    const int wr0 = warp * 16;  // first row of this warp within the tile

    for (int j = 0; j < n_tiles; ++j) {
        const int stage = j & 1;
        if (j + 1 < n_tiles) {
            const int n1 = (j + 1) * MHA_BN;
            mha_load_tile<T, D, MHA_BN>(sK + (stage ^ 1) * MHA_BN * D, k + (size_t)n1 * D, Sk - n1);
            mha_load_tile<T, D, MHA_BN>(sV + (stage ^ 1) * MHA_BN * D, v + (size_t)n1 * D, Sk - n1);
        }
        mha_commit();
        mha_wait<1>();
        __syncthreads();
        if (j == 0) {
            // Q fragments: matrix i of ldmatrix.x4 = rows 8·(i&1).., cols k0 + 8·(i>>1).
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                int r = wr0 + (lane & 7) + ((lane >> 3) & 1) * 8;
                int c = kk * 16 + (lane >> 4) * 8;
                mha_ldsm_x4(qf[kk], sQa + mha_swz<D>(r, c) * 2);
            }
        }
        const unsigned kb = sKa + stage * MHA_BN * D * 2;
        const unsigned vb = sVa + stage * MHA_BN * D * 2;

        // S = Q·Kᵀ for 16 rows × 64 keys: 8 n-tiles of 8 keys.
        float s[MHA_BN / 8][4];
#pragma unroll
        for (int i = 0; i < MHA_BN / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int nn = 0; nn < MHA_BN / 16; ++nn) {
                unsigned kf[4];
                int r = nn * 16 + (lane & 7) + (lane >> 4) * 8;
                int c = kk * 16 + ((lane >> 3) & 1) * 8;
                mha_ldsm_x4(kf, kb + mha_swz<D>(r, c) * 2);
                mha_mma<T>(s[2 * nn], qf[kk], kf[0], kf[1]);
                mha_mma<T>(s[2 * nn + 1], qf[kk], kf[2], kf[3]);
            }
        }

        // Mask on edge tiles only (raw scores; the scale is folded into the exponent below).
        const int n0 = j * MHA_BN;
        const bool edge = (n0 + MHA_BN > Sk) || (CAUSAL && n0 + MHA_BN - 1 > m0 + diag);
        if (edge) {
#pragma unroll
            for (int i = 0; i < MHA_BN / 8; ++i) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    int key = n0 + i * 8 + t4 * 2 + (e & 1);
                    int row = m0 + wr0 + g + (e >> 1) * 8;
                    bool masked = key >= Sk || (CAUSAL && key > row + diag);
                    s[i][e] = masked ? MHA_NEG_INF : s[i][e];
                }
            }
        }
        // Online softmax in the log2 domain (row_m holds scale·log2(e)·max): rows g (e = 0, 1)
        // and g + 8 (e = 2, 3); p = exp2(s·scale_log2 − m) is one FFMA and one MUFU.
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
            float mx = MHA_NEG_INF;
#pragma unroll
            for (int i = 0; i < MHA_BN / 8; ++i) mx = fmaxf(mx, fmaxf(s[i][2 * rr], s[i][2 * rr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
            mx = fmaxf(row_m[rr], mx * scale_log2);
            // A row that has seen only masked keys keeps m = -inf: use 0 as the base so that
            // exp2(-inf - base) = 0 instead of NaN.
            const float base = mx == MHA_NEG_INF ? 0.f : mx;
            const float corr = mha_exp2(row_m[rr] - base);  // row_m = -inf -> 0
            row_m[rr] = mx;
            float sum = 0.f;
#pragma unroll
            for (int i = 0; i < MHA_BN / 8; ++i) {
                float p0 = mha_exp2(fmaf(s[i][2 * rr], scale_log2, -base));
                float p1 = mha_exp2(fmaf(s[i][2 * rr + 1], scale_log2, -base));
                s[i][2 * rr] = p0;
                s[i][2 * rr + 1] = p1;
                sum += p0 + p1;
            }
            row_l[rr] = row_l[rr] * corr + sum;
#pragma unroll
            for (int i = 0; i < D / 8; ++i) {
                acc[i][2 * rr] *= corr;
                acc[i][2 * rr + 1] *= corr;
            }
        }

        // O += P·V: k16 step kk uses S n-tiles 2kk and 2kk+1 as the A fragment.
#pragma unroll
        for (int kk = 0; kk < MHA_BN / 16; ++kk) {
            unsigned pf[4];
            pf[0] = MhaPack<T>::pack(s[2 * kk][0], s[2 * kk][1]);
            pf[1] = MhaPack<T>::pack(s[2 * kk][2], s[2 * kk][3]);
            pf[2] = MhaPack<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
            pf[3] = MhaPack<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
            for (int dd = 0; dd < D / 16; ++dd) {
                unsigned vf[4];
                int r = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                int c = dd * 16 + (lane >> 4) * 8;
                mha_ldsm_x4_t(vf, vb + mha_swz<D>(r, c) * 2);
                mha_mma<T>(acc[2 * dd], pf, vf[0], vf[1]);
                mha_mma<T>(acc[2 * dd + 1], pf, vf[2], vf[3]);
            }
        }
        __syncthreads();  // this stage is refilled by the next iteration's loads
    }
    mha_wait<0>();
    __syncthreads();  // every warp is done with sQ (n_tiles == 0 never read it)

    // Epilogue: normalise, stage through this warp's own 16 rows of sQ, store 16-byte chunks.
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
        float l = row_l[rr];
        l += __shfl_xor_sync(0xffffffff, l, 1);
        l += __shfl_xor_sync(0xffffffff, l, 2);
        const float inv = l > 0.f ? 1.f / l : 0.f;  // no visible key: O = 0
        const int r = wr0 + g + rr * 8;
#pragma unroll
        for (int i = 0; i < D / 8; ++i) {
            unsigned pk = MhaPack<T>::pack(acc[i][2 * rr] * inv, acc[i][2 * rr + 1] * inv);
            int c = i * 8 + t4 * 2;
            *reinterpret_cast<unsigned*>(sQ + mha_swz<D>(r, c)) = pk;
        }
    }
    __syncwarp();
    constexpr int CHUNKS = D / 8;
#pragma unroll
    for (int it = 0; it < 16 * CHUNKS / 32; ++it) {
        const int i = lane + it * 32;
        int r = wr0 + i / CHUNKS, c = (i % CHUNKS) * 8;
        if (m0 + r < Sq) {
            *reinterpret_cast<uint4*>(o + (size_t)r * D + c) = *reinterpret_cast<const uint4*>(sQ + mha_swz<D>(r, c));
        }
    }
}

#define MHA_KERNEL(NAME, T, D, CAUSAL, BN, MINB)                                                    \
    extern "C" __global__ void __launch_bounds__(MHA_THREADS, MINB)                                \
        NAME(const T* Q, const T* K, const T* V, T* O, int H, int Hkv, int Sq, int Sk, float sl2) { \
        mha_fwd<T, D, BN, CAUSAL>(Q, K, V, O, H, Hkv, Sq, Sk, sl2);                                  \
    }

MHA_KERNEL(mha_fwd_bf16_d64, __nv_bfloat16, 64, false, MHA_BN_D64, MHA_MINB_D64)
MHA_KERNEL(mha_fwd_bf16_d64_causal, __nv_bfloat16, 64, true, MHA_BN_D64, MHA_MINB_D64)
MHA_KERNEL(mha_fwd_bf16_d128, __nv_bfloat16, 128, false, MHA_BN_D128, MHA_MINB_D128)
MHA_KERNEL(mha_fwd_bf16_d128_causal, __nv_bfloat16, 128, true, MHA_BN_D128, MHA_MINB_D128)
MHA_KERNEL(mha_fwd_fp16_d64, __half, 64, false, MHA_BN_D64, MHA_MINB_D64)
MHA_KERNEL(mha_fwd_fp16_d64_causal, __half, 64, true, MHA_BN_D64, MHA_MINB_D64)
MHA_KERNEL(mha_fwd_fp16_d128, __half, 128, false, MHA_BN_D128, MHA_MINB_D128)
MHA_KERNEL(mha_fwd_fp16_d128_causal, __half, 128, true, MHA_BN_D128, MHA_MINB_D128)
