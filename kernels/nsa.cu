// kernelgate NSA forward: DeepSeek Native Sparse Attention, selected-block branch plus the
// optional sliding-window branch (semantics: src/family/nsa.rs).
//
//   q [B,T,HQ,D], k/v [B,T,H,D], g_slc/g_swa [B,T,HQ], block_indices [B,T,H,S] (int32),
//   block_counts [B,T,H] (int32)  ->  o [B,T,HQ,D];  G = HQ/H query heads per KV head.
//
// Design
// ------
// * One warp = one task = (batch b, token t, KV head h, slice of 16 of its G query heads).
//   The query heads of the slice are the M = 16 rows of the tensor-core tiles (rows >= G are
//   zero queries whose results are never stored), so the K/V blocks a group selects are read
//   once for all its query heads. A CTA holds WARPS independent warps (tasks next to each
//   other); there is no CTA-wide synchronisation at all. Tasks run tokens in descending t
//   inside each (b, h), so the tokens with the most blocks start first, and the K/V of one
//   (b, h) (its working set) stays in L2 while its tokens run.
// * Keys are processed in chunks of CK = 32 (block sizes are multiples of 32, so a chunk
//   never straddles two blocks). The chunk sequence of a branch is produced by a cursor:
//   selected branch = slots s < block_counts, chunks of block idx = block_indices[s]
//   (negative, out-of-range and fully-future chunks skipped; duplicates processed twice);
//   window branch = chunks from max(0, t-W+1) up to t. Two cursors walk the same sequence:
//   a producer STAGES-1 chunks ahead issuing cp.async loads, and a consumer computing.
// * Per chunk: K and V tiles [32 x D] land in the warp's own shared memory ring of STAGES
//   stages (cp.async.cg 16 B, rows XOR-swizzled in 16-byte units by row%8 so ldmatrix is
//   conflict-free). Rows past t load the row of token t instead (finite, masked to p = 0).
//   S = Q K^T with mma.sync m16n8k16 (Q fragments held in registers for the whole task,
//   K fragments by ldmatrix), causal mask j > t -> -inf, online softmax in fp32 (base 2,
//   row max across the quad by shuffles), P re-packed from the S accumulators straight into
//   A fragments, O += P V with V fragments by ldmatrix.trans.
// * Epilogue: O / l (0 when no key was attended) times the gate; with W > 0 the window
//   branch runs the same loop with fresh softmax state and its gated result is added.
//   Stores are 4-byte pairs straight from the accumulator layout.
// * Shared memory: WARPS * STAGES * 2 * 32 * D * 2 bytes: D=128: 6 warps x 2 stages = 192 KiB,
//   D=64: 12 warps x 2 stages = 192 KiB (one CTA per SM; set by src/backend/cuda/nsa.rs, checked
//   here against %dynamic_smem_size). More warps beat deeper per-warp pipelines here
//   (kernels/dev/nsa_bench.cu, H200, bar case: 4x3 1.046 ms, 4x2 1.017, 6x2 0.957, 2x6 2.018;
//   D=64 B=2 T=2048 HQ=16 H=4 S=16 bs=32: 8x3 0.253 ms, 8x2 0.253, 6x4 0.301, 12x2 0.208).
#include "kg_common.cuh"
#include "mma_sync.cuh"

#define NSA_CK 32
#define NSA_NEG_INF (-__int_as_float(0x7f800000))

typedef unsigned int u32;





// Chunks of the selected branch: slot by slot, each block's chunks in order.
struct NsaSelCursor {
    const int* ind;
    int count, s, c, nc, bs, t, nblocks;
    __device__ __forceinline__ int next() {
        while (s < count) {
            int idx = __ldg(ind + s);
            int j0 = idx * bs + c * NSA_CK;  // only used when 0 <= idx < nblocks
            bool ok = idx >= 0 && idx < nblocks && j0 <= t;
            if (++c == nc) {
                c = 0;
                ++s;
            }
            if (ok) return j0;
        }
        return -1;
    }
};

// Chunks of the sliding window: from max(0, t-W+1) up to t.
struct NsaWinCursor {
    int j, t;
    __device__ __forceinline__ int next() {
        if (j > t) return -1;
        int r = j;
        j += NSA_CK;
        return r;
    }
};

// Loads keys j0..j0+31 (rows past t load row t) of K and V into one stage.
template <typename T, int D>
__device__ __forceinline__ void nsa_load_chunk(u32 sK, u32 sV, const T* kb, const T* vb, size_t stride, int j0,
                                               int t, int lane) {
    constexpr int PR = D * 2 / 16;         // 16-byte pieces per row
    constexpr int N = NSA_CK * PR / 32;    // pieces per lane per tile
#pragma unroll
    for (int i = 0; i < N; ++i) {
        int p = lane + 32 * i;
        int row = p / PR, c = p % PR;
        int j = min(j0 + row, t);
        u32 off = (u32)(row * D + ((c ^ (row & 7)) * 8)) * 2u;
        kg_cp_async16(sK + off, kb + (size_t)j * stride + c * 8);
        kg_cp_async16(sV + off, vb + (size_t)j * stride + c * 8);
    }
}

// One branch: online softmax attention of the warp's 16 query rows over the cursor's chunks.
// On return res[n][e] holds the normalised output (0 for rows that attended nothing),
// in the accumulator layout: rows lane/4 (e = 0,1) and lane/4 + 8 (e = 2,3),
// columns 8n + 2*(lane%4) + (e&1).
template <typename T, int D, int STAGES, class Cursor>
__device__ __forceinline__ void nsa_branch(Cursor prod, Cursor cons, const u32 (*qf)[4], u32 smem_warp,
                                           const T* kb, const T* vb, size_t stride, int t, float scale_log2,
                                           int lane, float (*res)[4]) {
    constexpr int ND = D / 8;  // output n-tiles
    constexpr u32 TILE = NSA_CK * D * 2;
    float o[ND][4];
#pragma unroll
    for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m0 = NSA_NEG_INF, m1 = NSA_NEG_INF, l0 = 0.f, l1 = 0.f;

#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        int j = prod.next();
        if (j >= 0) nsa_load_chunk<T, D>(smem_warp + st * 2 * TILE, smem_warp + st * 2 * TILE + TILE, kb, vb, stride, j, t, lane);
        kg_cp_commit();
    }
    int sc = 0, sp = STAGES - 1;
    for (;;) {
        int j0 = cons.next();
        if (j0 < 0) break;
        int jn = prod.next();
        if (jn >= 0) nsa_load_chunk<T, D>(smem_warp + sp * 2 * TILE, smem_warp + sp * 2 * TILE + TILE, kb, vb, stride, jn, t, lane);
        kg_cp_commit();
        kg_cp_wait<STAGES - 1>();
        __syncwarp();
        const u32 sK = smem_warp + sc * 2 * TILE, sV = sK + TILE;

        // S = Q K^T: 16 rows x 32 keys (4 n-tiles).
        float s[4][4];
#pragma unroll
        for (int n = 0; n < 4; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int np = 0; np < 2; ++np) {
                int key = 16 * np + (lane & 7) + ((lane >> 4) << 3);
                int ch = 2 * kk + ((lane >> 3) & 1);
                u32 b0, b1, b2, b3;
                kg_ldsm_x4(sK + (u32)(key * D + ((ch ^ (key & 7)) * 8)) * 2u, b0, b1, b2, b3);
                KgMma<T>::mma(s[2 * np], qf[kk], b0, b1);
                KgMma<T>::mma(s[2 * np + 1], qf[kk], b2, b3);
            }
        }
        // Scale to base 2, mask the future, row max.
        const bool partial = j0 + NSA_CK - 1 > t;
        float mx0 = NSA_NEG_INF, mx1 = NSA_NEG_INF;
#pragma unroll
        for (int n = 0; n < 4; ++n) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                int key = j0 + 8 * n + 2 * (lane & 3) + (e & 1);
                float x = s[n][e] * scale_log2;
                if (partial && key > t) x = NSA_NEG_INF;
                s[n][e] = x;
            }
            mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
            mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
        }
        kg_quad_max(mx0, mx1);
        float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        float base0 = mn0 == NSA_NEG_INF ? 0.f : mn0, base1 = mn1 == NSA_NEG_INF ? 0.f : mn1;
        float c0 = kg_exp2(m0 - base0), c1 = kg_exp2(m1 - base1);
        m0 = mn0;
        m1 = mn1;
        float ps0 = 0.f, ps1 = 0.f;
        u32 pa[2][4];
#pragma unroll
        for (int n = 0; n < 4; ++n) {
            float p0 = kg_exp2(s[n][0] - base0), p1 = kg_exp2(s[n][1] - base0);
            float p2 = kg_exp2(s[n][2] - base1), p3 = kg_exp2(s[n][3] - base1);
            ps0 += p0 + p1;
            ps1 += p2 + p3;
            pa[n >> 1][(n & 1) * 2 + 0] = KgMma<T>::pack(p0, p1);
            pa[n >> 1][(n & 1) * 2 + 1] = KgMma<T>::pack(p2, p3);
        }
        l0 = l0 * c0 + ps0;
        l1 = l1 * c1 + ps1;
        kg_scale_o(o, c0, c1);
        // O += P V: k = 32 keys (2 steps), n = D.
        kg_pv32<T, D>(o, pa, sV, lane);
        __syncwarp();
        sc = sc + 1 == STAGES ? 0 : sc + 1;
        sp = sp + 1 == STAGES ? 0 : sp + 1;
    }
    kg_cp_wait<0>();
    __syncwarp();
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
    for (int n = 0; n < ND; ++n) {
        res[n][0] = o[n][0] * i0;
        res[n][1] = o[n][1] * i0;
        res[n][2] = o[n][2] * i1;
        res[n][3] = o[n][3] * i1;
    }
}

template <typename T, int D, int WARPS, int STAGES>
__device__ __forceinline__ void nsa_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                        const T* __restrict__ g_slc, const T* __restrict__ g_swa,
                                        const int* __restrict__ ind, const int* __restrict__ cnt, T* __restrict__ out,
                                        int B, int Tn, int HQ, int H, int S, int BS, int W, float scale_log2) {
    extern __shared__ __align__(128) unsigned char nsa_smem[];
    constexpr int ND = D / 8;
    constexpr u32 WARP_BYTES = STAGES * 2 * NSA_CK * D * 2;
    u32 dyn;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < WARPS * WARP_BYTES || blockDim.x != WARPS * 32) __trap();

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int G = HQ / H;
    const int slices = (G + 15) >> 4;
    const long long tasks = (long long)B * H * slices * Tn;
    const long long task = (long long)blockIdx.x * WARPS + warp;
    if (task >= tasks) return;
    const int t = Tn - 1 - (int)(task % Tn);
    long long rest = task / Tn;
    const int slice = (int)(rest % slices);
    rest /= slices;
    const int h = (int)(rest % H);
    const int b = (int)(rest / H);

    // This thread's two rows of the 16-row tile, their query heads and validity.
    const int r0 = slice * 16 + (lane >> 2), r1 = r0 + 8;
    const bool v0 = r0 < G, v1 = r1 < G;
    const int hq0 = h * G + r0, hq1 = h * G + r1;
    const size_t tok = (size_t)b * Tn + t;

    // Q fragments for the whole task.
    u32 qf[D / 16][4];
    {
        const T* q0 = q + (tok * HQ + hq0) * D;
        const T* q1 = q + (tok * HQ + hq1) * D;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            int c = 16 * kk + 2 * (lane & 3);
            qf[kk][0] = v0 ? __ldg(reinterpret_cast<const u32*>(q0 + c)) : 0u;
            qf[kk][1] = v1 ? __ldg(reinterpret_cast<const u32*>(q1 + c)) : 0u;
            qf[kk][2] = v0 ? __ldg(reinterpret_cast<const u32*>(q0 + c + 8)) : 0u;
            qf[kk][3] = v1 ? __ldg(reinterpret_cast<const u32*>(q1 + c + 8)) : 0u;
        }
    }

    const size_t stride = (size_t)H * D;
    const T* kb = k + ((size_t)b * Tn * H + h) * D;
    const T* vb = v + ((size_t)b * Tn * H + h) * D;
    const u32 smem_warp = (u32)__cvta_generic_to_shared(nsa_smem) + warp * WARP_BYTES;

    const size_t row = tok * H + h;
    int count = __ldg(cnt + row);
    count = count < 0 ? 0 : (count > S ? S : count);
    NsaSelCursor sel{ind + row * S, count, 0, 0, BS / NSA_CK, BS, t, (Tn + BS - 1) / BS};
    float acc[ND][4];
    nsa_branch<T, D, STAGES>(sel, sel, qf, smem_warp, kb, vb, stride, t, scale_log2, lane, acc);
    const float gs0 = v0 ? KgMma<T>::to_float(g_slc[tok * HQ + hq0]) : 0.f;
    const float gs1 = v1 ? KgMma<T>::to_float(g_slc[tok * HQ + hq1]) : 0.f;
    kg_scale_o(acc, gs0, gs1);
    if (W > 0) {
        int ws = t - W + 1;
        NsaWinCursor win{ws < 0 ? 0 : ws, t};
        float wacc[ND][4];
        nsa_branch<T, D, STAGES>(win, win, qf, smem_warp, kb, vb, stride, t, scale_log2, lane, wacc);
        const float gw0 = v0 ? KgMma<T>::to_float(g_swa[tok * HQ + hq0]) : 0.f;
        const float gw1 = v1 ? KgMma<T>::to_float(g_swa[tok * HQ + hq1]) : 0.f;
        kg_add_scaled(acc, wacc, gw0, gw1);
    }
    T* o0 = out + (tok * HQ + hq0) * D;
    T* o1 = out + (tok * HQ + hq1) * D;
#pragma unroll
    for (int n = 0; n < ND; ++n) {
        int c = 8 * n + 2 * (lane & 3);
        if (v0) *reinterpret_cast<u32*>(o0 + c) = KgMma<T>::pack(acc[n][0], acc[n][1]);
        if (v1) *reinterpret_cast<u32*>(o1 + c) = KgMma<T>::pack(acc[n][2], acc[n][3]);
    }
}

#define NSA_KERNEL(NAME, T, D, WARPS, STAGES)                                                                   \
    extern "C" __global__ void __launch_bounds__(WARPS * 32, 1)                                                 \
        NAME(const T* q, const T* k, const T* v, const T* g_slc, const T* g_swa, const int* ind, const int* cnt, \
             T* out, int B, int Tn, int HQ, int H, int S, int BS, int W, float scale_log2) {                     \
        nsa_fwd<T, D, WARPS, STAGES>(q, k, v, g_slc, g_swa, ind, cnt, out, B, Tn, HQ, H, S, BS, W, scale_log2); \
    }

// Keep WARPS and STAGES in sync with src/backend/cuda/nsa.rs (the kernel traps otherwise).
NSA_KERNEL(nsa_fwd_bf16_d128, __nv_bfloat16, 128, 6, 2)
NSA_KERNEL(nsa_fwd_bf16_d64, __nv_bfloat16, 64, 12, 2)
NSA_KERNEL(nsa_fwd_fp16_d128, __half, 128, 6, 2)
NSA_KERNEL(nsa_fwd_fp16_d64, __half, 64, 12, 2)
