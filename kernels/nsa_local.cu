// kernelgate NSA forward, token-range kernel for one query head per KV head ("local"; session 21,
// issue 11's G = 1 shapes). Same semantics and inputs as kernels/nsa.cu, nsa_tiled.cu and
// nsa_pairs.cu (src/family/nsa.rs), selected branch only (the host runs it where w = 0, G = 1):
//
//   q [B,T,HQ,D], k/v [B,T,H,D], g_slc [B,T,HQ], block_indices [B,T,H,S] (int32),
//   block_counts [B,T,H] (int32)  ->  o [B,T,HQ,D].
//
// Why
// ---
// The pairs kernel (nsa_pairs.cu) fills its tiles by gathering, across the whole sequence, the
// rows that attend one block, and merges each row's partial softmax over its slots in a third
// launch: every (token, slot) pair's record (2·D + 8 bytes) goes to global memory and back, and
// the three launches are latency-bound (session 20: 97–100 µs at b2 t2048 s4, where 60 nominal
// TFLOP/s needs 36). Here one CTA owns R consecutive tokens of one (b, h), so all of a token's
// slots are computed by the same CTA and its partial records stay in shared memory:
//   0. bucket the CTA's (token, slot) pairs by block in shared memory (count, scan, scatter);
//      Meanwhile the CTA's R Q rows are copied to shared memory (cp.async).
//   1. each warp takes tiles of up to 16 pairs of one block: the block's K and V by cp.async into
//      the warp's own buffers (16-byte pieces XOR-swizzled by row % 8), the rows' Q gathered from
//      shared memory by ldmatrix, S = Q K^T and O = P V by m16n8k16, keys past the row's token
//      masked (only in a tile whose block reaches past a row's token), one base-2 softmax over
//      the block with the scale folded into the exponent; the row's record (O / l in the storage
//      dtype, (m, l) in fp32) goes to shared memory at (token, slot);
//   2. D/8 lanes merge one token's records (the slots phase 0 found valid) in slot order
//      (deterministic), 16 bytes a lane: M = max m,
//      o = g_slc · sum_s l_s 2^(m_s − M) Ohat_s / sum_s l_s 2^(m_s − M); no valid slot gives 0.
// Session 22's Nsight Compute profile of the first version (H100, b2 t2048 s4 bs32 d64, 128
// tokens x 16 warps) found it issue-bound (46% of issue slots, 2.1 IPC) at about 1440 warp
// instructions per tile: 670 in the tile, 440 in a merge of 2 elements a lane with shuffles,
// 160 gathering Q from global memory with integer divisions by S; hence Q in shared memory,
// entries that carry (record << 8 | token), the masked and scaled softmax above and this merge.
// The order of pairs inside a bucket depends on shared-memory atomics, which changes no result:
// every row of a tile is computed independently of the others. Tiles are 16 rows (one warp)
// because R tokens select a block ~R·S/(T/bs) times late in a long sequence, not 64 (a session-21
// simulation of the generator: 80% of the m16 rows are live at R = 256, t2048 s4 bs32).
//
// Launch (src/backend/cuda/nsa.rs, `Kernel::Local`): the arguments of nsa.cu and nsa_tiled.cu, then
// R; grid (ceil(T/R), B·H), NW warps (the entry's `_w<NW>`), dynamic shared memory as the host's
// `local_smem_bytes` lays it out:
//   [kv: warps x (K, V) x BS x D elems][q: R x D elems][rec_o: R·S x D elems][rec_ml: R·S float2]
//   [entries: R·S ints][tiles: max_tiles int2][count, start, fill: 3 x ceil(T/BS) ints]
//   [mask: R ints, each token's valid slots]
// with max_tiles = ceil(R·S/16) + min(ceil(T/BS), R·S), R <= 256 and R·S <= NSL_MAX_PAIRS.
#include "kg_common.cuh"
#include "mma_sync.cuh"
#include "bucket_scan.cuh"

#define NSL_MAX_PAIRS 2048  // (token, slot) pairs per CTA
#define NSL_ROWS 16         // rows per tile (one warp's m16)
#define NSL_NEG_INF (-__int_as_float(0x7f800000))
#define NSL_FULL 0xffffffffu

typedef unsigned int nsl_u32;



__device__ __forceinline__ float nsl_rcp(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
// Whether slot s of token t (block index v, clamped count c) is attended (the reference's rule).
__device__ __forceinline__ bool nsl_valid(int s, int c, int v, int t, int nb, int BS) {
    return s < c && v >= 0 && v < nb && v <= t / BS;
}
__device__ __forceinline__ void nsl_cp16(nsl_u32 dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void nsl_ldsm(nsl_u32 addr, nsl_u32 (&r)[4], bool trans) {
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(addr));
}
// Byte offset of element (row, 8*chunk) in a [rows x D] tile with 16-byte chunks XOR row%8.
template <int D> __device__ __forceinline__ nsl_u32 nsl_swz(int row, int chunk) {
    return (nsl_u32)(row * D + ((chunk ^ (row & 7)) * 8)) * 2u;
}

// Phase 0: bucket the CTA's valid pairs (x = local token * S + slot) by block. Writes the tiles
// {block, (first entry << 8) | pairs} and each token's mask of valid slots, and returns the
// number of tiles (the same in every thread).
template <int NT>
__device__ __forceinline__ int nsl_bucket(const int* __restrict__ ind, const int* __restrict__ cnt, int* entries,
                                          int2* tiles, int* count, int* start, int* fill, unsigned* mask, int b,
                                          int h, int t0,
                                          int nt, int Tn, int H, int S, int BS) {
    __shared__ int wsum[2][NT / 32];
    __shared__ int total_tiles;
    constexpr int PER = NSL_MAX_PAIRS / NT;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nb = (Tn + BS - 1) / BS;
    const int nbl = min(nb, (t0 + nt - 1) / BS + 1);  // the blocks these tokens can see
    const int n = nt * S;
    for (int j = tid; j < nbl; j += NT) count[j] = fill[j] = 0;
    for (int j = tid; j < nt; j += NT) mask[j] = 0u;
    // Pair x = tid + u * NT for u < PER; steps past the CTA's n pairs are skipped whole (u * NT < n
    // is the same in every thread), so a CTA of few pairs pays for none of the rest. tlv: the
    // pair's local token (-1: none).
    int v[PER], tlv[PER];
#pragma unroll
    for (int u = 0; u < PER; ++u) {  // every load in flight before any is used
        v[u] = -1;
        tlv[u] = -1;
        const int x = tid + u * NT;
        if (u * NT < n && x < n) {
            const int tl = x / S;
            tlv[u] = tl;
            v[u] = __ldg(ind + (((size_t)b * Tn + t0 + tl) * H + h) * S + (x - tl * S));
        }
    }
    int c[PER];
#pragma unroll
    for (int u = 0; u < PER; ++u)
        c[u] = tlv[u] >= 0 ? min(max(__ldg(cnt + ((size_t)b * Tn + t0 + tlv[u]) * H + h), 0), S) : 0;
    __syncthreads();  // counts zeroed
#pragma unroll
    for (int u = 0; u < PER; ++u) {
        if (u * NT >= n) break;
        const int tl = tlv[u], sl = tid + u * NT - tl * S;
        if (tl < 0 || !nsl_valid(sl, c[u], v[u], t0 + tl, nb, BS)) v[u] = -1;
        if (v[u] >= 0) {
            atomicAdd(count + v[u], 1);
            atomicOr(mask + tl, 1u << sl);  // the token's valid slots, for the merge
        }
    }
    __syncthreads();
    // Bucket starts and tile starts (bucket_scan.cuh).
    int j0, j1, be, bt;
    kg_bucket_scan<NT>(count, nbl, NSL_ROWS, wsum, tid, lane, warp, j0, j1, be, bt);
    for (int j = j0; j < j1; ++j) {
        const int cj = count[j];
        start[j] = be;
        for (int p = 0; p * NSL_ROWS < cj; ++p)
            tiles[bt++] = make_int2(j, ((be + p * NSL_ROWS) << 8) | min(NSL_ROWS, cj - p * NSL_ROWS));
        be += cj;
    }
    if (tid == NT - 1) total_tiles = bt;  // the last run ends at the total
    __syncthreads();
#pragma unroll
    for (int u = 0; u < PER; ++u)
        if (v[u] >= 0)  // the pair's record (local token * S + slot) and local token
            entries[start[v[u]] + atomicAdd(fill + v[u], 1)] = ((tid + u * NT) << 8) | tlv[u];
    __syncthreads();
    return total_tiles;
}

template <typename T, int D, int BS, int NW, int ST>
__device__ __forceinline__ void nsl_forward(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                            const T* __restrict__ g_slc, const int* __restrict__ ind,
                                            const int* __restrict__ cnt, T* __restrict__ out, int Tn, int H, int S,
                                            int R, float scale_log2) {
    constexpr int NT = NW * 32;
    constexpr int ND = D / 8, NK = BS / 8;
    extern __shared__ __align__(128) unsigned char nsl_smem[];
    const int bh = blockIdx.y, b = bh / H, h = bh % H;  // G = 1: query head h
    const int t0 = blockIdx.x * R, nt = min(R, Tn - t0);
    const int nb = (Tn + BS - 1) / BS;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    {
        // A launch that disagrees with this entry (threads, pairs per CTA, shared memory) traps
        // instead of writing past its buffers.
        const long long need = 2LL * BS * D * 2 * NW * ST + 2LL * R * D + (long long)R * S * (2 * D + 8) +
                               4LL * (R * S + ((R * S) & 1)) +
                               8LL * ((R * S + NSL_ROWS - 1) / NSL_ROWS + min(nb, R * S)) + 12LL * nb + 4LL * R;
        unsigned dyn;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
        if (blockDim.x != NT || R > 256 || R * S > NSL_MAX_PAIRS || (long long)dyn < need) __trap();
    }
    // Shared memory (the host's local_smem_bytes lays it out the same way).
    T* kv = reinterpret_cast<T*>(nsl_smem);
    T* qs = kv + NW * ST * 2 * BS * D;  // the CTA's Q rows, [R x D] swizzled as the K/V tiles
    T* rec_o = qs + (size_t)R * D;
    float2* rec_ml = reinterpret_cast<float2*>(rec_o + (size_t)R * S * D);
    int* entries = reinterpret_cast<int*>(rec_ml + R * S);
    int2* tiles = reinterpret_cast<int2*>(entries + R * S + ((R * S) & 1));  // 8-byte aligned
    const int max_tiles = (R * S + NSL_ROWS - 1) / NSL_ROWS + min(nb, R * S);
    int* count = reinterpret_cast<int*>(tiles + max_tiles);
    int* start = count + nb;
    int* fill = start + nb;
    unsigned* mask = reinterpret_cast<unsigned*>(fill + nb);

    // The CTA's Q rows by cp.async while the pairs are bucketed (tiles gather them by ldmatrix).
    const size_t stride = (size_t)H * D;  // between tokens of one head
    const nsl_u32 q_s = (nsl_u32)__cvta_generic_to_shared(qs);
    {
        constexpr int PR = D * 2 / 16;  // 16-byte pieces per row
        const T* qb = q + ((size_t)b * Tn * H + h) * D;
        for (int p = tid; p < nt * PR; p += NT) {
            const int row = p / PR, c = p % PR;
            nsl_cp16(q_s + nsl_swz<D>(row, c), qb + (size_t)(t0 + row) * stride + c * 8);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    }
    const int ntiles =
        nsl_bucket<NT>(ind, cnt, entries, tiles, count, start, fill, mask, b, h, t0, nt, Tn, H, S, BS);
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();  // every thread's Q pieces have landed

    // Phase 1: each warp takes tiles warp, warp + NW, ... With ST = 2 stages a warp issues the
    // next tile's K/V copies and Q loads before it computes the current tile.
    constexpr int STAGE = 2 * BS * D;  // elements of one stage: K then V
    const nsl_u32 kv0 = (nsl_u32)__cvta_generic_to_shared(kv + warp * ST * STAGE);
    const T* kb = k + ((size_t)b * Tn * H + h) * D;
    const T* vb = v + ((size_t)b * Tn * H + h) * D;
    // The block's keys blk*BS .. +BS-1 into stage st (rows past T load row T-1: finite, always
    // masked), one cp.async group.
    // A block wholly inside the sequence (all but the last) walks one pointer by 32/PR rows a
    // step, V at a fixed distance from K: no clamp and no 64-bit multiply per piece.
    const ptrdiff_t v_off = vb - kb;
    auto issue_kv = [&](int blk, int st) {
        constexpr int PR = D * 2 / 16, RPI = 32 / PR;  // 16-byte pieces per row, rows per step
        const nsl_u32 k0 = kv0 + st * STAGE * 2, v0 = k0 + BS * D * 2;
        const int row0 = lane / PR, c = lane % PR;
        if (blk * BS + BS <= Tn) {
            const T* kp = kb + (size_t)(blk * BS + row0) * stride + c * 8;
#pragma unroll
            for (int i = 0; i < BS / RPI; ++i) {
                const nsl_u32 so = nsl_swz<D>(row0 + RPI * i, c);
                nsl_cp16(k0 + so, kp);
                nsl_cp16(v0 + so, kp + v_off);
                kp += RPI * stride;
            }
        } else {
#pragma unroll
            for (int i = 0; i < BS / RPI; ++i) {
                const int row = row0 + RPI * i, j = min(blk * BS + row, Tn - 1);
                nsl_cp16(k0 + nsl_swz<D>(row, c), kb + (size_t)j * stride + c * 8);
                nsl_cp16(v0 + nsl_swz<D>(row, c), vb + (size_t)j * stride + c * 8);
            }
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };
    // A tile's block, this lane's two rows (lane/4 and lane/4 + 8: record (local token * S + slot)
    // and token; dead rows: record -1, token -1) and the 16 rows' Q fragments, gathered from the
    // CTA's Q rows in shared memory by ldmatrix (a dead row reads the CTA's first token: finite,
    // never stored).
    struct Rows {
        int blk, rec[2], tr[2];
        nsl_u32 qf[D / 16][4];
    };
    auto load_rows = [&](int ti, Rows& r) {
        const int2 td = tiles[ti];
        const int e0 = td.y >> 8, len = td.y & 255;
        r.blk = td.x;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int row = (lane >> 2) + 8 * e;
            const int x = row < len ? entries[e0 + row] : -1;
            r.rec[e] = x < 0 ? -1 : x >> 8;
            r.tr[e] = x < 0 ? -1 : t0 + (x & 255);
        }
        // ldmatrix x4: lane l gives row (l & 7) + 8 * ((l >> 3) & 1) at 16-byte chunk l >> 4.
        const int arow = (lane & 7) + ((lane >> 3) & 1) * 8;
        const int ax = arow < len ? entries[e0 + arow] & 255 : 0;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) nsl_ldsm(q_s + nsl_swz<D>(ax, 2 * kk + (lane >> 4)), r.qf[kk], false);
    };
    Rows cur, nxt;
    if (warp < ntiles) {
        load_rows(warp, cur);
        issue_kv(cur.blk, 0);
    }
    int st = 0;
    for (int ti = warp; ti < ntiles; ti += NW) {
        const int tn = ti + NW;
        if (ST == 2 && tn < ntiles) {
            load_rows(tn, nxt);
            issue_kv(nxt.blk, st ^ 1);
            asm volatile("cp.async.wait_group 1;\n" ::);  // this tile's group (groups land in order)
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncwarp();  // every lane's pieces of this tile's K and V have landed
        const nsl_u32 sk = kv0 + st * STAGE * 2, sv = sk + BS * D * 2;

        // S = Q K^T: 16 rows x BS keys.
        float s[NK][4];
#pragma unroll
        for (int n = 0; n < NK; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int np = 0; np < NK / 2; ++np) {
                const int key = 16 * np + (lane & 7) + ((lane >> 4) << 3);
                nsl_u32 bf[4];
                nsl_ldsm(sk + nsl_swz<D>(key, 2 * kk + ((lane >> 3) & 1)), bf, false);
                KgMma<T>::mma(s[2 * np], cur.qf[kk], bf[0], bf[1]);
                KgMma<T>::mma(s[2 * np + 1], cur.qf[kk], bf[2], bf[3]);
            }
        }
        // Keys past a row's token masked: only where the block's last key lies past a live row's
        // token (the block on the diagonal; every other block lies wholly before its rows).
        const int last = cur.blk * BS + BS - 1;
        const bool cut = (cur.tr[0] >= 0 && last > cur.tr[0]) || (cur.tr[1] >= 0 && last > cur.tr[1]);
        if (__any_sync(NSL_FULL, cut)) {
#pragma unroll
            for (int n = 0; n < NK; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int key = cur.blk * BS + 8 * n + 2 * (lane & 3) + (e & 1);
                    if (key > cur.tr[e >> 1]) s[n][e] = NSL_NEG_INF;
                }
        }
        // Row max over the quad (raw scores; the softmax scale is folded into the exponent).
        float mx0 = NSL_NEG_INF, mx1 = NSL_NEG_INF;
#pragma unroll
        for (int n = 0; n < NK; ++n) {
            mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
            mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
        }
#pragma unroll
        for (int o = 1; o <= 2; o <<= 1) {
            mx0 = fmaxf(mx0, __shfl_xor_sync(NSL_FULL, mx0, o));
            mx1 = fmaxf(mx1, __shfl_xor_sync(NSL_FULL, mx1, o));
        }
        // Base-2 row maxima (0 for a row with every key masked: its p are 0).
        const float base0 = mx0 == NSL_NEG_INF ? 0.f : mx0 * scale_log2;
        const float base1 = mx1 == NSL_NEG_INF ? 0.f : mx1 * scale_log2;
        // P = 2^(s·scale − max) (rounded to the storage dtype as the A operand of P V), row sums.
        float l0 = 0.f, l1 = 0.f;
        nsl_u32 pa[BS / 16][4];
#pragma unroll
        for (int n = 0; n < NK; ++n) {
            const float p0 = kg_exp2(fmaf(s[n][0], scale_log2, -base0));
            const float p1 = kg_exp2(fmaf(s[n][1], scale_log2, -base0));
            const float p2 = kg_exp2(fmaf(s[n][2], scale_log2, -base1));
            const float p3 = kg_exp2(fmaf(s[n][3], scale_log2, -base1));
            l0 += p0 + p1;
            l1 += p2 + p3;
            pa[n >> 1][(n & 1) * 2 + 0] = KgMma<T>::pack(p0, p1);
            pa[n >> 1][(n & 1) * 2 + 1] = KgMma<T>::pack(p2, p3);
        }
#pragma unroll
        for (int o = 1; o <= 2; o <<= 1) {
            l0 += __shfl_xor_sync(NSL_FULL, l0, o);
            l1 += __shfl_xor_sync(NSL_FULL, l1, o);
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
                nsl_u32 bf[4];
                nsl_ldsm(sv + nsl_swz<D>(key, 2 * np + (lane >> 4)), bf, true);
                KgMma<T>::mma(o[2 * np], pa[ks], bf[0], bf[1]);
                KgMma<T>::mma(o[2 * np + 1], pa[ks], bf[2], bf[3]);
            }
        }
        // Records of the live rows, in shared memory at (local token, slot); 16-byte chunk n of
        // record r sits at chunk n ^ (r % 8), so the 8 rows of one store hit different banks.
        const float inv0 = l0 > 0.f ? nsl_rcp(l0) : 0.f, inv1 = l1 > 0.f ? nsl_rcp(l1) : 0.f;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int rec = cur.rec[e];
            if (rec < 0) continue;
            const float inv = e ? inv1 : inv0;
            unsigned char* dst = reinterpret_cast<unsigned char*>(rec_o) + 4 * (lane & 3);
#pragma unroll
            for (int n = 0; n < ND; ++n)
                *reinterpret_cast<nsl_u32*>(dst + nsl_swz<D>(rec, n)) =
                    KgMma<T>::pack(o[n][2 * e] * inv, o[n][2 * e + 1] * inv);
            if ((lane & 3) == 0) rec_ml[rec] = make_float2(e ? base1 : base0, e ? l1 : l0);
        }
        __syncwarp();  // this stage's K and V read by every lane before copies overwrite them
        if (ST == 2) {
            cur = nxt;
            st ^= 1;
        } else if (tn < ntiles) {
            load_rows(tn, cur);
            issue_kv(cur.blk, 0);
        }
    }
    __syncthreads();

    // Phase 2: D/8 lanes merge one token, 8 elements (16 bytes) a lane, so a warp merges 32/(D/8)
    // tokens at once; the CTA's NW warps take consecutive groups. The valid slots come from
    // phase 0's masks and are read in slot order (deterministic):
    // M = max m_s, o = g_slc · sum_s l_s 2^(m_s − M) Ohat_s / sum_s l_s 2^(m_s − M).
    constexpr int LPT = D / 8, TPW = 32 / LPT;
    for (int tt = warp * TPW + lane / LPT; tt < nt; tt += NW * TPW) {
        const int c = lane % LPT;
        const size_t row = ((size_t)b * Tn + t0 + tt) * H + h;  // G = 1: HQ = H
        const float gs = KgMma<T>::to_float(g_slc[row]);
        const unsigned vm0 = mask[tt];
        float m = NSL_NEG_INF;
        for (unsigned vm = vm0; vm; vm &= vm - 1) m = fmaxf(m, rec_ml[tt * S + __ffs(vm) - 1].x);
        float acc[8] = {}, wsum = 0.f;
        for (unsigned vm = vm0; vm; vm &= vm - 1) {
            const int rec = tt * S + __ffs(vm) - 1;
            const float2 ml = rec_ml[rec];
            const float w = ml.y * kg_exp2(ml.x - m);
            wsum += w;
            const uint4 u = *reinterpret_cast<const uint4*>(reinterpret_cast<const unsigned char*>(rec_o) +
                                                            nsl_swz<D>(rec, c));
            const nsl_u32 uw[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float2 f = KgMma<T>::unpack(uw[i]);
                acc[2 * i] = fmaf(w, f.x, acc[2 * i]);
                acc[2 * i + 1] = fmaf(w, f.y, acc[2 * i + 1]);
            }
        }
        const float scale = wsum > 0.f ? gs / wsum : 0.f;  // no valid slot: 0
        uint4 o;
        o.x = KgMma<T>::pack(acc[0] * scale, acc[1] * scale);
        o.y = KgMma<T>::pack(acc[2] * scale, acc[3] * scale);
        o.z = KgMma<T>::pack(acc[4] * scale, acc[5] * scale);
        o.w = KgMma<T>::pack(acc[6] * scale, acc[7] * scale);
        *reinterpret_cast<uint4*>(out + row * D + 8 * c) = o;
    }
}

// One entry per dtype, head dim, block size, warp count NW and stages ST (each warp owns ST K and
// V buffers of BS x D: the launches instantiated keep them within 64–128 KiB; the host picks one).
// Names: nsa_local_<dt>_d<D>_bs<BS>_w<NW>, with `_s2` for two stages. The arguments are those of
// nsa.cu and nsa_tiled.cu, then R; a launch for another problem than the entry takes (a window,
// G != 1, another block size) traps.
#define NSL_ENTRY(TN, T, D, BS, NW, ST, SFX)                                                                    \
    extern "C" __global__ void __launch_bounds__(NW * 32, 1) nsa_local_##TN##_d##D##_bs##BS##_w##NW##SFX(       \
        const T* q, const T* k, const T* v, const T* g_slc, const T* g_swa, const int* ind, const int* cnt,      \
        T* out, int B, int Tn, int HQ, int H, int S, int bs, int W, float scale_log2, int R) {                    \
        if (HQ != H || bs != BS || W != 0) __trap();                                                             \
        nsl_forward<T, D, BS, NW, ST>(q, k, v, g_slc, ind, cnt, out, Tn, H, S, R, scale_log2);                   \
    }
#define NSL_DTYPE(TN, T)                  \
    NSL_ENTRY(TN, T, 64, 32, 16, 1, )     \
    NSL_ENTRY(TN, T, 64, 32, 8, 1, )      \
    NSL_ENTRY(TN, T, 64, 32, 8, 2, _s2)   \
    NSL_ENTRY(TN, T, 64, 64, 8, 1, )      \
    NSL_ENTRY(TN, T, 64, 64, 4, 1, )      \
    NSL_ENTRY(TN, T, 64, 64, 4, 2, _s2)   \
    NSL_ENTRY(TN, T, 128, 32, 8, 1, )     \
    NSL_ENTRY(TN, T, 128, 32, 4, 1, )     \
    NSL_ENTRY(TN, T, 128, 32, 4, 2, _s2)  \
    NSL_ENTRY(TN, T, 128, 64, 4, 1, )     \
    NSL_ENTRY(TN, T, 128, 64, 2, 1, )     \
    NSL_ENTRY(TN, T, 128, 64, 2, 2, _s2)
NSL_DTYPE(bf16, __nv_bfloat16)
NSL_DTYPE(fp16, __half)
