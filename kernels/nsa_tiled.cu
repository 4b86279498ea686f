// kernelgate NSA forward, token-tiled kernel for small GQA groups (G = HQ/H query heads per KV
// head, picked for G <= 4 by src/backend/cuda/nsa.rs). Same semantics and arguments as
// kernels/nsa.cu (the "grouped" kernel, kept for large G; semantics: src/family/nsa.rs):
//
//   q [B,T,HQ,D], k/v [B,T,H,D], g_slc/g_swa [B,T,HQ], block_indices [B,T,H,S] (int32),
//   block_counts [B,T,H] (int32)  ->  o [B,T,HQ,D].
//
// Why
// ---
// The grouped kernel puts the G query heads of one token in the 16 rows of an m16n8k16 tile,
// so at G = 1 only 1/16 of every tensor-core instruction is useful. Here the rows of a tile
// are G heads of 16/G *consecutive tokens*, which select different blocks: a tile computes the
// union of the blocks its tokens selected and masks per row what the row's token did not
// select. That pays when the tokens' selections overlap (S·bs a large part of the causal prefix:
// short sequences, many or large blocks); with the generator's random selection the union of
// 16 tokens is nearly every causal block at T <= 2048. Work per useful key is roughly
// |union of the warp's tokens| / (S per token), never worse than the grouped kernel's 16/G.
//
// Design
// ------
// * One CTA = NST_WARPS = 4 warps = 64 query rows of one (batch b, KV head h) (WARPS is a
//   template parameter; the bench also times 2 warps = 32 rows): row r is query
//   head h·G + r%G of token t0 + r/G, so a CTA holds TM = 64/G tokens (rows past TM·G and
//   tokens past T are dead: zero queries, everything masked, never stored). Warp w owns rows
//   16w..16w+15 as the M of its mma tiles. Requires G <= 64.
//   CTAs run the tiles with the most keys (late tokens) first: blockIdx.x = i·B·H + (b·H + h)
//   runs tile ntiles-1-i.
// * Set-up: the CTA's threads load the tile's slots together (8 per thread in flight) and
//   keep what the reference attends (s < clamp(block_counts, 0, S), 0 <= idx < ceil(T/bs),
//   idx·bs <= t; others become INT_MAX sentinels) in per-token shared-memory lists, ORing the
//   kept blocks into a CTA-wide bitmask (ceil(T/bs) bits); then one thread per token
//   insertion-sorts its list (duplicates kept; linear on the generator's sorted lists).
// * Selected branch: every thread walks the set bits of the bitmask in ascending block order,
//   each block as its 32-key chunks (bs/32 of them; chunks past the tile's last token are
//   skipped). K and V chunks [32 x D] are loaded by the whole CTA with cp.async into a ring of
//   NST_STAGES stages (rows XOR-swizzled by row%8 in 16-byte units so ldmatrix is conflict-free;
//   rows past the tile's last token load that token's row: finite, masked), one __syncthreads
//   per chunk. At each new block every thread advances a cursor in the sorted list of each of
//   its two rows and gets the row's multiplicity m of the block (0: not selected; 2: listed
//   twice, its keys count twice as in the reference). A key j of the chunk is live for a row
//   iff m > 0 and j <= t (causal). A warp skips the chunk's math (not the barrier) when no key
//   is live for any of its rows.
// * Math per chunk and warp, as in nsa.cu: S = Q K^T by mma.sync m16n8k16 (Q fragments in
//   registers for the whole CTA, K by ldmatrix), dead keys -> -inf, online softmax in fp32 base
//   2 (row max over the quad by shuffles), P = m·2^(s - max) packed straight from the
//   accumulators into A fragments (bf16/fp16), O += P V with V by ldmatrix.trans.
// * Sliding window (W > 0): a second pass with fresh softmax state over the contiguous keys
//   max(0, t0-W+1) ..= last token of the tile, live for a row iff t-W+1 <= j <= t; its gated
//   result is added to the gated selected result (both kept in registers).
// * Epilogue: O / l (0 for a row that attended nothing), times the gate; 4-byte stores from the
//   accumulator layout.
// * Shared memory (dynamic, checked against %dynamic_smem_size; the host sizes it with
//   src/backend/cuda/nsa.rs::tiled_smem_bytes): NST_STAGES·2·32·D·2 bytes of K/V stages,
//   TM·(S+1) ints of lists, ceil(ceil(T/bs)/32) words of bitmask.
#include "kg_common.cuh"
#include "mma_sync.cuh"

#define NST_CK 32
#define NST_WARPS 4               // warps per CTA of the kernels the harness runs
#define NST_ROWS (NST_WARPS * 16)  // their query rows per CTA
#define NST_SETUP_BATCH 8          // slots each thread loads at once in the set-up
#define NST_NEG_INF (-__int_as_float(0x7f800000))
#define NST_SENTINEL 0x7fffffff

typedef unsigned int nst_u32;




__device__ __forceinline__ int nst_lds(nst_u32 addr) {
    int x;
    asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(x) : "r"(addr));
    return x;
}


// Chunks of the selected branch: the set bits of the CTA's block mask in ascending order, each
// block as its chunks j0 = blk·bs + 32c with j0 <= tl (the tile's last token). Every thread of
// the CTA walks the same sequence.
struct NstSelCursor {
    const nst_u32* mask;
    int words, wi;
    nst_u32 bits;
    int blk, c, nc, bs, tl;
    __device__ __forceinline__ int next() {
        if (blk >= 0 && c + 1 < nc && blk * bs + (c + 1) * NST_CK <= tl) {
            ++c;
            return blk * bs + c * NST_CK;
        }
        while (bits == 0) {
            if (++wi >= words) return -1;
            bits = mask[wi];
        }
        blk = wi * 32 + (__ffs(bits) - 1);
        bits &= bits - 1;
        c = 0;
        return blk * bs;
    }
};

// Chunks of the sliding window of the whole tile: from max(0, t0-W+1) up to tl.
struct NstWinCursor {
    int j, tl, blk, c;
    __device__ __forceinline__ int next() {
        if (j > tl) return -1;
        int r = j;
        j += NST_CK;
        return r;
    }
};

// The CTA (WARPS warps) loads keys j0..j0+31 (rows past tl load row tl) of K and V into one
// stage.
template <typename T, int D, int WARPS>
__device__ __forceinline__ void nst_load_chunk(nst_u32 sK, nst_u32 sV, const T* kb, const T* vb, size_t stride,
                                               int j0, int tl, int tid) {
    constexpr int PR = D * 2 / 16;                 // 16-byte pieces per row
    constexpr int N = NST_CK * PR / (WARPS * 32);  // pieces per thread per tile
#pragma unroll
    for (int i = 0; i < N; ++i) {
        int p = tid + WARPS * 32 * i;
        int row = p / PR, c = p % PR;
        int j = min(j0 + row, tl);
        nst_u32 off = (nst_u32)(row * D + ((c ^ (row & 7)) * 8)) * 2u;
        kg_cp_async16(sK + off, kb + (size_t)j * stride + c * 8);
        kg_cp_async16(sV + off, vb + (size_t)j * stride + c * 8);
    }
}

// One branch for the warp's 16 rows over the cursor's chunks (SEL: selected blocks with
// per-row multiplicities from the sorted lists; else the sliding window). Row e of this
// thread (e = 0: lane/4, e = 1: lane/4 + 8) has token tr[e] (-1: dead row) and, for SEL, its
// list at lst[e] (shared-memory byte address). On return res[n][e] holds the normalised
// output (0 for rows that attended nothing) in the accumulator layout.
template <typename T, int D, int STAGES, int WARPS, bool SEL, class Cursor>
__device__ __forceinline__ void nst_branch(Cursor prod, Cursor cons, const nst_u32 (*qf)[4], nst_u32 sbase,
                                           const T* kb, const T* vb, size_t stride, int tl, const int* tr,
                                           const nst_u32* lst, int W, float scale_log2, int tid, int lane,
                                           float (*res)[4]) {
    constexpr int ND = D / 8;
    constexpr nst_u32 TILE = NST_CK * D * 2;
    float o[ND][4];
#pragma unroll
    for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m0 = NST_NEG_INF, m1 = NST_NEG_INF, l0 = 0.f, l1 = 0.f;
    // Live key range [lo, hi] of each row for the current chunk, and its weight (multiplicity).
    int lo0 = 0, lo1 = 0, hi0 = -1, hi1 = -1;
    float wt0 = 0.f, wt1 = 0.f;
    bool dup = false;
    nst_u32 cur0 = lst[0], cur1 = lst[1];
    if (!SEL) {
        lo0 = tr[0] - W + 1;
        lo1 = tr[1] - W + 1;
        hi0 = tr[0];
        hi1 = tr[1];
    }

#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
        int j = prod.next();
        if (j >= 0) nst_load_chunk<T, D, WARPS>(sbase + st * 2 * TILE, sbase + st * 2 * TILE + TILE, kb, vb, stride, j, tl, tid);
        kg_cp_commit();
    }
    int sc = 0, sp = STAGES - 1;
    for (;;) {
        const int j0 = cons.next();
        if (j0 < 0) break;
        kg_cp_wait<STAGES - 2>();
        __syncthreads();  // chunk j0 is in stage sc for everyone; stage sp is free
        {
            int jn = prod.next();
            if (jn >= 0) nst_load_chunk<T, D, WARPS>(sbase + sp * 2 * TILE, sbase + sp * 2 * TILE + TILE, kb, vb, stride, jn, tl, tid);
            kg_cp_commit();
        }
        if (SEL && cons.c == 0) {
            // New block: the multiplicity of block cons.blk in each row's sorted list.
            const int blk = cons.blk;
            int c0 = 0, c1 = 0, x;
            while ((x = nst_lds(cur0)) <= blk) {
                c0 += x == blk;
                cur0 += 4;
            }
            while ((x = nst_lds(cur1)) <= blk) {
                c1 += x == blk;
                cur1 += 4;
            }
            hi0 = c0 > 0 ? tr[0] : -1;
            hi1 = c1 > 0 ? tr[1] : -1;
            wt0 = (float)c0;
            wt1 = (float)c1;
            dup = __any_sync(0xffffffffu, c0 > 1 || c1 > 1);
        }
        const int je = j0 + NST_CK - 1;
        const bool live = max(lo0, j0) <= min(hi0, je) || max(lo1, j0) <= min(hi1, je);
        if (__any_sync(0xffffffffu, live)) {
            const nst_u32 sK = sbase + sc * 2 * TILE, sV = sK + TILE;
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
                    nst_u32 b0, b1, b2, b3;
                    kg_ldsm_x4(sK + (nst_u32)(key * D + ((ch ^ (key & 7)) * 8)) * 2u, b0, b1, b2, b3);
                    KgMma<T>::mma(s[2 * np], qf[kk], b0, b1);
                    KgMma<T>::mma(s[2 * np + 1], qf[kk], b2, b3);
                }
            }
            // Scale to base 2, mask dead keys, row max.
            const bool full = lo0 <= j0 && je <= hi0 && lo1 <= j0 && je <= hi1;
            const bool mask = !__all_sync(0xffffffffu, full);
            float mx0 = NST_NEG_INF, mx1 = NST_NEG_INF;
#pragma unroll
            for (int n = 0; n < 4; ++n) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    int key = j0 + 8 * n + 2 * (lane & 3) + (e & 1);
                    float x = s[n][e] * scale_log2;
                    if (mask) {
                        bool ok = e < 2 ? (key >= lo0 && key <= hi0) : (key >= lo1 && key <= hi1);
                        x = ok ? x : NST_NEG_INF;
                    }
                    s[n][e] = x;
                }
                mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
                mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
            }
            kg_quad_max(mx0, mx1);
            float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
            float base0 = mn0 == NST_NEG_INF ? 0.f : mn0, base1 = mn1 == NST_NEG_INF ? 0.f : mn1;
            float c0 = kg_exp2(m0 - base0), c1 = kg_exp2(m1 - base1);
            m0 = mn0;
            m1 = mn1;
            float ps0 = 0.f, ps1 = 0.f;
            nst_u32 pa[2][4];
#pragma unroll
            for (int n = 0; n < 4; ++n) {
                float p0 = kg_exp2(s[n][0] - base0), p1 = kg_exp2(s[n][1] - base0);
                float p2 = kg_exp2(s[n][2] - base1), p3 = kg_exp2(s[n][3] - base1);
                if (SEL && dup) {
                    p0 *= wt0;
                    p1 *= wt0;
                    p2 *= wt1;
                    p3 *= wt1;
                }
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
        }
        sc = sc + 1 == STAGES ? 0 : sc + 1;
        sp = sp + 1 == STAGES ? 0 : sp + 1;
    }
    kg_cp_wait<0>();
    __syncthreads();  // every warp is done with the stages before the next branch refills them
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

template <typename T, int D, int STAGES, int WARPS>
__device__ __forceinline__ void nst_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                        const T* __restrict__ g_slc, const T* __restrict__ g_swa,
                                        const int* __restrict__ ind, const int* __restrict__ cnt, T* __restrict__ out,
                                        int B, int Tn, int HQ, int H, int S, int BS, int W, float scale_log2) {
    extern __shared__ __align__(128) unsigned char nst_smem[];
    constexpr int ND = D / 8;
    constexpr nst_u32 STAGE_BYTES = STAGES * 2 * NST_CK * D * 2;
    const int G = HQ / H;
    constexpr int THREADS = WARPS * 32;
    const int TM = WARPS * 16 / G;  // tokens per CTA (G <= 16·WARPS, checked by the host)
    const int nblocks = (Tn + BS - 1) / BS;
    const int words = (nblocks + 31) / 32;
    {
        nst_u32 dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        nst_u32 need = STAGE_BYTES + (nst_u32)(TM * (S + 1) + words) * 4u;
        if (TM < 1 || dyn < need || blockDim.x != THREADS) __trap();
    }
    int* lists = reinterpret_cast<int*>(nst_smem + STAGE_BYTES);
    nst_u32* mask = reinterpret_cast<nst_u32*>(lists + TM * (S + 1));

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int BH = B * H;
    const int ntiles = (Tn + TM - 1) / TM;
    const int tile = ntiles - 1 - (int)(blockIdx.x / BH);
    const int bh = (int)(blockIdx.x % BH);
    const int b = bh / H, h = bh % H;
    const int t0 = tile * TM;
    const int tl = min(Tn, t0 + TM) - 1;  // the tile's last token
    const int ntok = tl - t0 + 1;

    // This thread's two rows: token, query head, list; their Q fragments (dead rows: zeros),
    // loaded first so that their latency overlaps the set-up.
    int tr[2], hq[2];
    nst_u32 lst[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        const int r = warp * 16 + (lane >> 2) + 8 * e;
        const int i = r / G;
        const bool ok = i < ntok;  // also false for rows past TM·G (i >= TM >= ntok)
        tr[e] = ok ? t0 + i : -1;
        hq[e] = h * G + r % G;
        lst[e] = (nst_u32)__cvta_generic_to_shared(lists + min(i, TM - 1) * (S + 1));
    }
    nst_u32 qf[D / 16][4];
    {
        const T* q0 = q + (((size_t)b * Tn + max(tr[0], 0)) * HQ + hq[0]) * D;
        const T* q1 = q + (((size_t)b * Tn + max(tr[1], 0)) * HQ + hq[1]) * D;
        const bool v0 = tr[0] >= 0, v1 = tr[1] >= 0;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            int c = 16 * kk + 2 * (lane & 3);
            qf[kk][0] = v0 ? __ldg(reinterpret_cast<const nst_u32*>(q0 + c)) : 0u;
            qf[kk][1] = v1 ? __ldg(reinterpret_cast<const nst_u32*>(q1 + c)) : 0u;
            qf[kk][2] = v0 ? __ldg(reinterpret_cast<const nst_u32*>(q0 + c + 8)) : 0u;
            qf[kk][3] = v1 ? __ldg(reinterpret_cast<const nst_u32*>(q1 + c + 8)) : 0u;
        }
    }

    // Set-up: per-token sorted lists of valid slots and the CTA's block mask. All threads load
    // slots (token i = x / S, slot s = x % S) NST_SETUP_BATCH at a time so that the loads
    // overlap; a slot that the reference ignores becomes a sentinel; then one thread per token
    // sorts its list.
    const int used_words = (tl / BS) / 32 + 1;  // blocks past tl/bs are never valid here
    for (int i = tid; i < used_words; i += THREADS) mask[i] = 0u;
    __syncthreads();
    const int nslots = TM * S;
    const int* ind_tile = ind + (((size_t)b * Tn + t0) * H + h) * S;  // token i, slot s: + i·H·S + s
    const int* cnt_tile = cnt + ((size_t)b * Tn + t0) * H + h;        // token i: + i·H
    for (int base = 0; base < nslots; base += NST_SETUP_BATCH * THREADS) {
        int idx[NST_SETUP_BATCH], c[NST_SETUP_BATCH];
#pragma unroll
        for (int u = 0; u < NST_SETUP_BATCH; ++u) {
            const int x = base + u * THREADS + tid, i = x / S, s = x - i * S;
            const bool live = x < nslots && i < ntok;
            idx[u] = live ? __ldg(ind_tile + (size_t)i * H * S + s) : -1;
            c[u] = live ? __ldg(cnt_tile + (size_t)i * H) : 0;
        }
#pragma unroll
        for (int u = 0; u < NST_SETUP_BATCH; ++u) {
            const int x = base + u * THREADS + tid, i = x / S, s = x - i * S;
            if (x < nslots) {
                const int t = t0 + i, v = idx[u];
                // Kept iff s < clamp(count, 0, S) (s < S always), 0 <= idx < nblocks, idx·bs <= t.
                const bool ok = s < c[u] && v >= 0 && v < nblocks && v <= t / BS;
                lists[i * (S + 1) + s] = ok ? v : NST_SENTINEL;
                if (ok) atomicOr(mask + (v >> 5), 1u << (v & 31));
            }
        }
    }
    __syncthreads();
    for (int i = tid; i < TM; i += THREADS) {
        int* L = lists + i * (S + 1);
        L[S] = NST_SENTINEL;
        // Insertion sort (sentinels go last; one comparison per element on sorted input).
        for (int a = 1; a < S; ++a) {
            const int x = L[a];
            int j = a;
            while (j > 0 && L[j - 1] > x) {
                L[j] = L[j - 1];
                --j;
            }
            L[j] = x;
        }
    }
    __syncthreads();  // lists and mask complete

    const size_t stride = (size_t)H * D;
    const T* kb = k + ((size_t)b * Tn * H + h) * D;
    const T* vb = v + ((size_t)b * Tn * H + h) * D;
    const nst_u32 sbase = (nst_u32)__cvta_generic_to_shared(nst_smem);

    NstSelCursor sel{mask, used_words, 0, mask[0], -1, 0, BS / NST_CK, BS, tl};
    float acc[ND][4];
    nst_branch<T, D, STAGES, WARPS, true>(sel, sel, qf, sbase, kb, vb, stride, tl, tr, lst, W, scale_log2, tid, lane, acc);
    const bool v0 = tr[0] >= 0, v1 = tr[1] >= 0;
    const size_t g0 = ((size_t)b * Tn + max(tr[0], 0)) * HQ + hq[0];
    const size_t g1 = ((size_t)b * Tn + max(tr[1], 0)) * HQ + hq[1];
    {
        const float gs0 = v0 ? KgMma<T>::to_float(g_slc[g0]) : 0.f;
        const float gs1 = v1 ? KgMma<T>::to_float(g_slc[g1]) : 0.f;
        kg_scale_o(acc, gs0, gs1);
    }
    if (W > 0) {
        const int ws = t0 - W + 1;
        NstWinCursor win{ws < 0 ? 0 : ws, tl, 0, 0};
        float wacc[ND][4];
        nst_branch<T, D, STAGES, WARPS, false>(win, win, qf, sbase, kb, vb, stride, tl, tr, lst, W, scale_log2, tid, lane,
                                        wacc);
        const float gw0 = v0 ? KgMma<T>::to_float(g_swa[g0]) : 0.f;
        const float gw1 = v1 ? KgMma<T>::to_float(g_swa[g1]) : 0.f;
        kg_add_scaled(acc, wacc, gw0, gw1);
    }
    T* o0 = out + g0 * D;
    T* o1 = out + g1 * D;
#pragma unroll
    for (int n = 0; n < ND; ++n) {
        int c = 8 * n + 2 * (lane & 3);
        if (v0) *reinterpret_cast<nst_u32*>(o0 + c) = KgMma<T>::pack(acc[n][0], acc[n][1]);
        if (v1) *reinterpret_cast<nst_u32*>(o1 + c) = KgMma<T>::pack(acc[n][2], acc[n][3]);
    }
}

#define NST_KERNEL(NAME, T, D, STAGES, WARPS, MINB)                                                             \
    extern "C" __global__ void __launch_bounds__(WARPS * 32, MINB)                                              \
        NAME(const T* q, const T* k, const T* v, const T* g_slc, const T* g_swa, const int* ind, const int* cnt, \
             T* out, int B, int Tn, int HQ, int H, int S, int BS, int W, float scale_log2) {                     \
        nst_fwd<T, D, STAGES, WARPS>(q, k, v, g_slc, g_swa, ind, cnt, out, B, Tn, HQ, H, S, BS, W, scale_log2); \
    }

// Keep STAGES in sync with src/backend/cuda/nsa.rs::tiled_stages (the kernel traps when the
// dynamic shared memory is too small for it).
NST_KERNEL(nsa_tiled_bf16_d128, __nv_bfloat16, 128, 3, NST_WARPS, 2)
NST_KERNEL(nsa_tiled_bf16_d64, __nv_bfloat16, 64, 4, NST_WARPS, 3)
NST_KERNEL(nsa_tiled_fp16_d128, __half, 128, 3, NST_WARPS, 2)
NST_KERNEL(nsa_tiled_fp16_d64, __half, 64, 4, NST_WARPS, 3)
