// kernelgate NSA forward, pair-bucketed kernel for small query groups ("pairs"; session 20, issue
// 11's G = 1 shapes). Same semantics and inputs as kernels/nsa.cu and kernels/nsa_tiled.cu
// (src/family/nsa.rs), selected branch only (the host runs it where w = 0):
//
//   q [B,T,HQ,D], k/v [B,T,H,D], g_slc [B,T,HQ], block_indices [B,T,H,S] (int32),
//   block_counts [B,T,H] (int32)  ->  o [B,T,HQ,D].
//
// Why
// ---
// The tiled kernel gives a CTA 64/G consecutive tokens and computes the union of the blocks they
// selected. With the generator's random earlier blocks, 64 tokens late in a long sequence select
// nearly every block, so at G = 1 it does about 8 times the selected work at T = 2048 (dense
// causal attention in effect). Here the unit of work is a *pair*: (token t, KV head h, slot s)
// with a valid block index. Pairs are bucketed by the block they name, so a CTA takes up to 64
// rows that all attend the same block: no key is loaded or multiplied for a row that did not
// select it. Each row's softmax over its block is a partial result; a last pass merges the
// partials of each query row over its slots.
//
// Three launches (src/backend/cuda/nsa.rs, `Kernel::Pairs`):
//  1. nsa_pairs_bucket, one CTA of NSP_BUCKET_THREADS per (b, h): counts the valid pairs per
//     block in shared memory (valid: s < clamp(block_counts, 0, S), 0 <= idx < ceil(T/bs),
//     idx*bs <= t, exactly the reference's rule; a block listed twice gives two pairs, so its
//     keys count twice as in the reference), scans the counts into bucket starts and the buckets
//     into tiles of NSP_ROWS / G pairs, writes the tile descriptors {block, first entry, pairs}
//     and the (b, h)'s tile count, then scatters each pair's t*S + s into its bucket. The order
//     inside a bucket depends on atomics, which changes no result: every row of a tile is
//     computed independently of the other rows (row-wise MMA outputs, row-wise softmax).
//  2. nsa_pairs_tile_<dt>_d<D>_bs<BS>, one CTA of 4 warps per tile (grid: max tiles x B*H; CTAs
//     past the (b, h)'s count exit): row r is query head h*G + r%G of pair r/G; the block's K and
//     V [BS x D] arrive by cp.async (16-byte pieces XOR-swizzled by row%8 so ldmatrix is
//     conflict-free) while each thread loads its two rows' Q fragments; S = Q K^T and O = P V by
//     mma.sync m16n8k16, keys past the row's token masked (causal), one softmax in base 2 (the
//     block is the whole key range of the pair). Each row writes its partial record: O / l
//     rounded to the storage dtype, and (m, l) in fp32 (m = the row max of the base-2 scores).
//  3. nsa_pairs_merge_<dt>_d<D>, one warp per query row (b, t, hq): the valid slots (same rule)
//     by ballot, M = max m, o = g_slc * sum_s l_s 2^(m_s - M) Ohat_s / sum_s l_s 2^(m_s - M),
//     in slot order (deterministic); a row with no valid slot gets 0.
//
// Records: rec_o [B*T*HQ][S][D] (storage dtype), rec_ml [B*T*HQ][S] float2; only valid slots are
// written and read. Workspace sizes and the tile bound: src/backend/cuda/nsa.rs (pairs_*).
#include "kg_common.cuh"
#include "mma_sync.cuh"
#include "bucket_scan.cuh"

#define NSP_ROWS 64             // query rows per tile CTA (4 warps x 16)
#define NSP_THREADS 128         // threads per tile CTA
#define NSP_BUCKET_THREADS 512  // threads per bucket CTA
#define NSP_MERGE_WARPS 8       // query rows (warps) per merge CTA
#define NSP_NEG_INF (-__int_as_float(0x7f800000))
#define NSP_FULL 0xffffffffu

typedef unsigned int nsp_u32;



// Whether slot s of token t (block index v, clamped count c) is attended (the reference's rule).
__device__ __forceinline__ bool nsp_valid(int s, int c, int v, int t, int nb, int BS) {
    return s < c && v >= 0 && v < nb && v <= t / BS;
}

// ---------------------------------------------------------------------------------------------
// 1. Bucketing. Dynamic shared memory: 3 * ceil(T/bs) ints (count, start, fill).

#define NSP_BATCH 8  // slots each bucketing thread loads at once

// The block indices of slots x0, x0 + NT, ... (NSP_BATCH of them, x = t*S + s) of one (b, h),
// -1 where the slot is past the end or not attended; all loads are issued before any is used.
__device__ __forceinline__ void nsp_load_slots(const int* ind_bh, const int* cnt_bh, int x0, int n, int H, int S,
                                               int nb, int BS, int (&v)[NSP_BATCH]) {
    int c[NSP_BATCH];
#pragma unroll
    for (int u = 0; u < NSP_BATCH; ++u) {
        const int x = x0 + u * NSP_BUCKET_THREADS, t = x / S;
        v[u] = x < n ? __ldg(ind_bh + (size_t)t * H * S + (x - t * S)) : -1;
        c[u] = x < n ? __ldg(cnt_bh + (size_t)t * H) : 0;
    }
#pragma unroll
    for (int u = 0; u < NSP_BATCH; ++u) {
        const int x = x0 + u * NSP_BUCKET_THREADS, t = x / S;
        if (x >= n || !nsp_valid(x - t * S, c[u], v[u], t, nb, BS)) v[u] = -1;
    }
}
extern "C" __global__ void __launch_bounds__(NSP_BUCKET_THREADS)
    nsa_pairs_bucket(const int* __restrict__ ind, const int* __restrict__ cnt, int* __restrict__ entries,
                     int4* __restrict__ tiles, int* __restrict__ tile_count, int Tn, int H, int S, int BS, int G,
                     int max_tiles) {
    extern __shared__ int nsp_bucket_smem[];
    __shared__ int wsum[2][NSP_BUCKET_THREADS / 32];
    const int nb = (Tn + BS - 1) / BS;
    int* count = nsp_bucket_smem;
    int* start = count + nb;
    int* fill = start + nb;
    const int bh = blockIdx.x, b = bh / H, h = bh % H;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    constexpr int NT = NSP_BUCKET_THREADS;
    const int rp = NSP_ROWS / G;  // pairs per tile
    for (int j = tid; j < nb; j += NT) count[j] = fill[j] = 0;
    __syncthreads();
    const int n = Tn * S;
    const int* ind_bh = ind + ((size_t)b * Tn * H + h) * S;  // token t, slot s: + t*H*S + s
    const int* cnt_bh = cnt + (size_t)b * Tn * H + h;        // token t: + t*H
    // Pass 1: count the valid pairs per block (NSP_BATCH slots a thread in flight).
    for (int base = 0; base < n; base += NSP_BATCH * NT) {
        int v[NSP_BATCH];
        nsp_load_slots(ind_bh, cnt_bh, base + tid, n, H, S, nb, BS, v);
#pragma unroll
        for (int u = 0; u < NSP_BATCH; ++u)
            if (v[u] >= 0) atomicAdd(count + v[u], 1);
    }
    __syncthreads();
    // Bucket starts and tile starts (bucket_scan.cuh).
    int j0, j1, be, bt;
    kg_bucket_scan<NT>(count, nb, rp, wsum, tid, lane, warp, j0, j1, be, bt);
    int4* tiles_bh = tiles + (size_t)bh * max_tiles;
    for (int j = j0; j < j1; ++j) {
        const int c = count[j];
        start[j] = be;
        for (int p = 0; p * rp < c; ++p) tiles_bh[bt++] = make_int4(j, be + p * rp, min(rp, c - p * rp), 0);
        be += c;
    }
    if (tid == NT - 1) tile_count[bh] = bt;  // the last run ends at the total
    __syncthreads();
    int* entries_bh = entries + (size_t)bh * n;
    // Pass 2: scatter each valid pair's t*S + s into its bucket.
    for (int base = 0; base < n; base += NSP_BATCH * NT) {
        int v[NSP_BATCH];
        nsp_load_slots(ind_bh, cnt_bh, base + tid, n, H, S, nb, BS, v);
#pragma unroll
        for (int u = 0; u < NSP_BATCH; ++u)
            if (v[u] >= 0) entries_bh[start[v[u]] + atomicAdd(fill + v[u], 1)] = base + tid + u * NT;
    }
}

// ---------------------------------------------------------------------------------------------
// 2. One tile: up to NSP_ROWS query rows that attend block `blk`.
__device__ __forceinline__ void nsp_cp16(nsp_u32 dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void nsp_ldsm(nsp_u32 addr, nsp_u32 (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void nsp_ldsm_t(nsp_u32 addr, nsp_u32 (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
// Byte offset of element (row, 8*chunk) in a [rows x D] tile with 16-byte chunks XOR row%8.
template <int D> __device__ __forceinline__ nsp_u32 nsp_swz(int row, int chunk) {
    return (nsp_u32)(row * D + ((chunk ^ (row & 7)) * 8)) * 2u;
}

template <typename T, int D, int BS>
__device__ __forceinline__ void nsp_tile(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                         const int* __restrict__ entries, const int4* __restrict__ tiles,
                                         const int* __restrict__ tile_count, T* __restrict__ rec_o,
                                         float2* __restrict__ rec_ml, int Tn, int HQ, int H, int S, int max_tiles,
                                         float scale_log2) {
    __shared__ __align__(128) T sk[BS * D];
    __shared__ __align__(128) T sv[BS * D];
    constexpr int ND = D / 8, NK = BS / 8;
    const int bh = blockIdx.y;
    if ((int)blockIdx.x >= tile_count[bh]) return;
    const int4 td = tiles[(size_t)bh * max_tiles + blockIdx.x];
    const int blk = td.x, e0 = td.y, len = td.z;
    const int b = bh / H, h = bh % H, G = HQ / H;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

    // The block's keys blk*BS .. +BS-1 (rows past T load row T-1: finite, always masked).
    const nsp_u32 k0 = (nsp_u32)__cvta_generic_to_shared(sk), v0 = (nsp_u32)__cvta_generic_to_shared(sv);
    {
        constexpr int PR = D * 2 / 16;  // 16-byte pieces per row
        const size_t stride = (size_t)H * D;
        const T* kb = k + ((size_t)b * Tn * H + h) * D;
        const T* vb = v + ((size_t)b * Tn * H + h) * D;
#pragma unroll
        for (int i = 0; i < BS * PR / NSP_THREADS; ++i) {
            const int p = tid + NSP_THREADS * i, row = p / PR, c = p % PR;
            const int j = min(blk * BS + row, Tn - 1);
            nsp_cp16(k0 + nsp_swz<D>(row, c), kb + (size_t)j * stride + c * 8);
            nsp_cp16(v0 + nsp_swz<D>(row, c), vb + (size_t)j * stride + c * 8);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    }
    // This thread's two rows (lane/4 and lane/4 + 8 of the warp's 16): token, slot, query head,
    // and their Q fragments (dead rows: token -1, zero Q).
    int tr[2], sl[2], hq[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        const int r = warp * 16 + (lane >> 2) + 8 * e, pi = r / G;
        const int x = pi < len ? __ldg(entries + (size_t)bh * Tn * S + e0 + pi) : -1;
        tr[e] = x < 0 ? -1 : x / S;
        sl[e] = x < 0 ? 0 : x - (x / S) * S;
        hq[e] = h * G + r % G;
    }
    nsp_u32 qf[D / 16][4];
    {
        const T* q0 = q + (((size_t)b * Tn + max(tr[0], 0)) * HQ + hq[0]) * D;
        const T* q1 = q + (((size_t)b * Tn + max(tr[1], 0)) * HQ + hq[1]) * D;
        const bool a0 = tr[0] >= 0, a1 = tr[1] >= 0;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int c = 16 * kk + 2 * (lane & 3);
            qf[kk][0] = a0 ? __ldg(reinterpret_cast<const nsp_u32*>(q0 + c)) : 0u;
            qf[kk][1] = a1 ? __ldg(reinterpret_cast<const nsp_u32*>(q1 + c)) : 0u;
            qf[kk][2] = a0 ? __ldg(reinterpret_cast<const nsp_u32*>(q0 + c + 8)) : 0u;
            qf[kk][3] = a1 ? __ldg(reinterpret_cast<const nsp_u32*>(q1 + c + 8)) : 0u;
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();
    if (warp * 16 >= len * G) return;  // a warp without live rows (no barrier follows)

    // S = Q K^T: 16 rows x BS keys.
    float s[NK][4];
#pragma unroll
    for (int n = 0; n < NK; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < NK / 2; ++np) {
            const int key = 16 * np + (lane & 7) + ((lane >> 4) << 3);
            nsp_u32 bf[4];
            nsp_ldsm(k0 + nsp_swz<D>(key, 2 * kk + ((lane >> 3) & 1)), bf);
            KgMma<T>::mma(s[2 * np], qf[kk], bf[0], bf[1]);
            KgMma<T>::mma(s[2 * np + 1], qf[kk], bf[2], bf[3]);
        }
    }
    // Base-2 scores, keys past the row's token masked, row max over the quad.
    float mx0 = NSP_NEG_INF, mx1 = NSP_NEG_INF;
#pragma unroll
    for (int n = 0; n < NK; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int key = blk * BS + 8 * n + 2 * (lane & 3) + (e & 1);
            s[n][e] = key <= tr[e >> 1] ? s[n][e] * scale_log2 : NSP_NEG_INF;
        }
        mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
        mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
    }
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
        mx0 = fmaxf(mx0, __shfl_xor_sync(NSP_FULL, mx0, o));
        mx1 = fmaxf(mx1, __shfl_xor_sync(NSP_FULL, mx1, o));
    }
    const float base0 = mx0 == NSP_NEG_INF ? 0.f : mx0, base1 = mx1 == NSP_NEG_INF ? 0.f : mx1;
    // P (rounded to the storage dtype as the A operand of P V) and its row sums.
    float l0 = 0.f, l1 = 0.f;
    nsp_u32 pa[BS / 16][4];
#pragma unroll
    for (int n = 0; n < NK; ++n) {
        const float p0 = kg_exp2(s[n][0] - base0), p1 = kg_exp2(s[n][1] - base0);
        const float p2 = kg_exp2(s[n][2] - base1), p3 = kg_exp2(s[n][3] - base1);
        l0 += p0 + p1;
        l1 += p2 + p3;
        pa[n >> 1][(n & 1) * 2 + 0] = KgMma<T>::pack(p0, p1);
        pa[n >> 1][(n & 1) * 2 + 1] = KgMma<T>::pack(p2, p3);
    }
#pragma unroll
    for (int o = 1; o <= 2; o <<= 1) {
        l0 += __shfl_xor_sync(NSP_FULL, l0, o);
        l1 += __shfl_xor_sync(NSP_FULL, l1, o);
    }
    // O = P V: k = BS keys, n = D.
    float o[ND][4];
#pragma unroll
    for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < BS / 16; ++ks) {
#pragma unroll
        for (int np = 0; np < D / 16; ++np) {
            const int key = 16 * ks + (lane & 7) + (((lane >> 3) & 1) << 3);
            nsp_u32 bf[4];
            nsp_ldsm_t(v0 + nsp_swz<D>(key, 2 * np + (lane >> 4)), bf);
            KgMma<T>::mma(o[2 * np], pa[ks], bf[0], bf[1]);
            KgMma<T>::mma(o[2 * np + 1], pa[ks], bf[2], bf[3]);
        }
    }
    // Partial records of the live rows: O / l in the storage dtype, (m, l) in fp32.
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        if (tr[e] < 0) continue;
        const size_t rec = (((size_t)b * Tn + tr[e]) * HQ + hq[e]) * S + sl[e];
        const float inv = e ? inv1 : inv0;
        T* dst = rec_o + rec * D;
#pragma unroll
        for (int n = 0; n < ND; ++n)
            *reinterpret_cast<nsp_u32*>(dst + 8 * n + 2 * (lane & 3)) =
                KgMma<T>::pack(o[n][2 * e] * inv, o[n][2 * e + 1] * inv);
        if ((lane & 3) == 0) rec_ml[rec] = make_float2(e ? base1 : base0, e ? l1 : l0);
    }
}

// ---------------------------------------------------------------------------------------------
// 3. Merge: one warp per query row (b, t, hq); lane i holds elements E*i .. E*i+E-1 (E = D/32).
template <typename T, int D>
__device__ __forceinline__ void nsp_merge(const T* __restrict__ rec_o, const float2* __restrict__ rec_ml,
                                          const T* __restrict__ g_slc, const int* __restrict__ ind,
                                          const int* __restrict__ cnt, T* __restrict__ out, int B, int Tn, int HQ,
                                          int H, int S, int BS) {
    constexpr int E = D / 32;
    const size_t row = (size_t)blockIdx.x * NSP_MERGE_WARPS + (threadIdx.x >> 5);
    if (row >= (size_t)B * Tn * HQ) return;
    const int lane = threadIdx.x & 31;
    const int hq = (int)(row % HQ);
    const size_t bt = row / HQ;  // b*T + t
    const int t = (int)(bt % Tn), h = hq / (HQ / H), nb = (Tn + BS - 1) / BS;
    const int c = min(max(__ldg(cnt + bt * H + h), 0), S);
    bool ok = false;
    if (lane < S) ok = nsp_valid(lane, c, __ldg(ind + (bt * H + h) * S + lane), t, nb, BS);
    unsigned vm = __ballot_sync(NSP_FULL, ok);
    float m = ok ? rec_ml[row * S + lane].x : NSP_NEG_INF;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(NSP_FULL, m, o));
    float acc[E] = {}, wsum = 0.f;
    while (vm) {
        const int s = __ffs(vm) - 1;
        vm &= vm - 1;
        const float2 ml = rec_ml[row * S + s];
        const float w = ml.y * kg_exp2(ml.x - m);
        wsum += w;
        const nsp_u32* src = reinterpret_cast<const nsp_u32*>(rec_o + (row * S + s) * D + E * lane);
#pragma unroll
        for (int i = 0; i < E / 2; ++i) {
            const float2 f = KgMma<T>::unpack(src[i]);
            acc[2 * i] += w * f.x;
            acc[2 * i + 1] += w * f.y;
        }
    }
    const float scale = wsum > 0.f ? KgMma<T>::to_float(g_slc[row]) / wsum : 0.f;
    nsp_u32* dst = reinterpret_cast<nsp_u32*>(out + row * D + E * lane);
#pragma unroll
    for (int i = 0; i < E / 2; ++i) dst[i] = KgMma<T>::pack(acc[2 * i] * scale, acc[2 * i + 1] * scale);
}

// MINB: resident CTAs an SM is asked for (d128 with 64-key blocks needs more than 128 registers).
#define NSP_TILE(TN, T, D, BS, MINB)                                                                             \
    extern "C" __global__ void __launch_bounds__(NSP_THREADS, MINB) nsa_pairs_tile_##TN##_d##D##_bs##BS(          \
        const T* q, const T* k, const T* v, const int* entries, const int4* tiles, const int* tile_count,        \
        T* rec_o, float2* rec_ml, int Tn, int HQ, int H, int S, int max_tiles, float scale_log2) {               \
        nsp_tile<T, D, BS>(q, k, v, entries, tiles, tile_count, rec_o, rec_ml, Tn, HQ, H, S, max_tiles,         \
                           scale_log2);                                                                          \
    }
#define NSP_MERGE(TN, T, D)                                                                                      \
    extern "C" __global__ void __launch_bounds__(NSP_MERGE_WARPS * 32) nsa_pairs_merge_##TN##_d##D(              \
        const T* rec_o, const float2* rec_ml, const T* g_slc, const int* ind, const int* cnt, T* out, int B,     \
        int Tn, int HQ, int H, int S, int BS) {                                                                  \
        nsp_merge<T, D>(rec_o, rec_ml, g_slc, ind, cnt, out, B, Tn, HQ, H, S, BS);                               \
    }
#define NSP_DTYPE(TN, T)       \
    NSP_TILE(TN, T, 64, 32, 6)  \
    NSP_TILE(TN, T, 64, 64, 4)  \
    NSP_TILE(TN, T, 128, 32, 4) \
    NSP_TILE(TN, T, 128, 64, 3) \
    NSP_MERGE(TN, T, 64)        \
    NSP_MERGE(TN, T, 128)
NSP_DTYPE(bf16, __nv_bfloat16)
NSP_DTYPE(fp16, __half)
