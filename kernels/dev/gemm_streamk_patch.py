#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu with gemm_wgmma.cuh inlined (scripts/device-lib.sh's
bench_copy) with stream-K entries, gemm_wgmma_{bf16,f16}_{128x256,128x192,128x128}_sk, and the
bench copy beside it (dev/gemm_wgmma_bench.cu) with `*_sk` rows (checked, twice for bitwise
determinism, and timed beside the others; never the pick). Session 46's lead: on unseen mid-size
shapes our best tile sits at 0.73-0.85 of cuBLAS, mostly shapes under one wave of tiles or
ending on a partial wave, and dividing the K blocks evenly over the SMs would come within
0.9-1.2x of cuBLAS's time on each (docs/kernels/session46/README.md section 3).

The scheme (the body's template flag SK; the TMA-store epilogue, not the overlapped one):
- The grid's G CTAs split the W = tiles x K blocks iterations, tile-major: CTA b takes
  [b*W/G, (b+1)*W/G). Producer and consumers walk the same segments (a tile and a K-block range).
- A segment that is a whole tile is stored as usual.
- A segment that starts after its tile's first K block is the first segment of its CTA's range.
  Each consumer warpgroup writes its fp32 accumulators to the CTA's slot of P (element i of
  thread t at i * 128 + t, L2 only), fences, meets at its named barrier, and its leader adds 1
  to the tile's flag for that warpgroup (red.release.gpu).
- A segment that holds its tile's first K block but not its last is the last segment of its
  CTA's range (so, in practice, the later parts are long done when it gets there). Each
  warpgroup's leader waits (ld.acquire.gpu) until the flag counts every later CTA of the tile,
  resets it to 0 for the next launch, and the warpgroup adds those CTAs' slots in CTA order
  (bitwise deterministic), then stores the tile.
- P: the flags (tiles x 2 words, rounded up to 64) and then G slots of BM x BN floats. The host
  zeroes it once; every launch leaves the flags at 0. No second launch.

gemm_streamk_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import os
import sys

from patchlib import patch_file

path = sys.argv[1]
patch_file(path, [
    # the body's flag
    ("""          bool UC = false>
static __device__ __forceinline__ void gemm_body(""",
     """          bool UC = false, bool SK = false>
static __device__ __forceinline__ void gemm_body("""),
    # the memory-model helpers
    ("""static __device__ __forceinline__ void pdl_launch_next() {""",
     """// Stream-K (SK): the tile flags' release / acquire at GPU scope.
static __device__ __forceinline__ unsigned sk_ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void sk_red_release(unsigned* p, unsigned v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// SK: the next segment of a CTA's range [i, end): tile t, K blocks [kb0, kb1); advances i.
static __device__ __forceinline__ void sk_next(long long& i, long long end, int num_k, int& t,
                                               int& kb0, int& kb1) {
    t = (int)(i / num_k);
    kb0 = (int)(i % num_k);
    kb1 = (int)min((long long)num_k, kb0 + (end - i));
    i += kb1 - kb0;
}

static __device__ __forceinline__ void pdl_launch_next() {"""),
    # this CTA's share of the iteration space
    ("""    const int units = num_tiles * splits;
""",
     """    const int units = num_tiles * splits;
    // SK: this CTA's iterations [sk_begin, sk_end) of the tiles x K blocks, tile-major
    const long long sk_w = (long long)num_tiles * num_k;
    const long long sk_g = (long long)gridDim.x;
    const long long sk_begin = (long long)blockIdx.x * sk_w / sk_g;
    const long long sk_end = ((long long)blockIdx.x + 1) * sk_w / sk_g;
    unsigned* const sk_flags = reinterpret_cast<unsigned*>(P);
    float* const sk_part = P + (size_t)((num_tiles * NC + 63) / 64) * 64;
"""),
    # producer: walk the segments
    ("""            for (int u = cid; u < units; u += ncl) {
                const int t = u % num_tiles;
                const int sp = u / num_tiles;
                int pm, tn;
                tile_coords(t, num_pm, num_pn, pm, tn);
                // A rows of this CTA's tile;""",
     """            long long sk_i = sk_begin;
            for (int u = cid; SK ? sk_i < sk_end : u < units; u += ncl) {
                int t = u % num_tiles;
                const int sp = u / num_tiles;
                int sk_kb0 = 0, sk_kb1 = 0;
                if constexpr (SK) sk_next(sk_i, sk_end, num_k, t, sk_kb0, sk_kb1);
                int pm, tn;
                tile_coords(t, num_pm, num_pn, pm, tn);
                // A rows of this CTA's tile;"""),
    ("""                const int kb0 = sp * kb_per;
                const int kb1 = min(kb0 + kb_per, num_k);
                for (int kb = kb0; kb < kb1; ++kb, ++it) {
                    const unsigned s = it % STAGES;
                    const unsigned ph = (it / STAGES) & 1u;
                    const unsigned fb = GW_FULL(s);""",
     """                const int kb0 = SK ? sk_kb0 : sp * kb_per;
                const int kb1 = SK ? sk_kb1 : min(kb0 + kb_per, num_k);
                for (int kb = kb0; kb < kb1; ++kb, ++it) {
                    const unsigned s = it % STAGES;
                    const unsigned ph = (it / STAGES) & 1u;
                    const unsigned fb = GW_FULL(s);"""),
    # consumers: never the overlapped path
    ("""        if constexpr (TS && !PN &&
                      ((BN == 256""",
     """        if constexpr (TS && !PN && !SK &&
                      ((BN == 256"""),
    # consumers: walk the segments
    ("""        for (int u = cid; u < units; u += ncl) {
            const int t = u % num_tiles;
            const int sp = u / num_tiles;
            int pm, tn;""",
     """        long long sk_i = sk_begin;
        for (int u = cid; SK ? sk_i < sk_end : u < units; u += ncl) {
            int t = u % num_tiles;
            const int sp = u / num_tiles;
            int sk_kb0 = 0, sk_kb1 = 0;
            if constexpr (SK) sk_next(sk_i, sk_end, num_k, t, sk_kb0, sk_kb1);
            int pm, tn;"""),
    ("""            const int kb0 = sp * kb_per;
            const int kb1 = min(kb0 + kb_per, num_k);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
""",
     """            const int kb0 = SK ? sk_kb0 : sp * kb_per;
            const int kb1 = SK ? sk_kb1 : min(kb0 + kb_per, num_k);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
"""),
    # the fix-up between the main loop and the epilogue
    ("""            if (kb1 > kb0 && leader) release((it - 1) % STAGES);

            // ------------------------------ epilogue ------------------------------
""",
     """            if (kb1 > kb0 && leader) release((it - 1) % STAGES);

            if constexpr (SK) {
                const int tw = tid & 127;
                unsigned* const flag = sk_flags + t * NC + cw;
                if (kb0 > 0) {
                    // a later part of tile t: this warpgroup's partial sums to the CTA's slot
                    float* const slot = sk_part + ((size_t)blockIdx.x * NC + cw) * (64 * BN);
#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) __stcg(slot + i * 128 + tw, d[i]);
                    __threadfence();
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    if (leader) sk_red_release(flag, 1u);
                    continue;
                }
                if (kb1 < num_k) {
                    // tile t's first part: the CTAs after this one up to the owner of the
                    // tile's last iteration hold its later parts
                    const long long last = ((long long)t + 1) * num_k;
                    const int c_last = (int)((last * sk_g - 1) / sk_w);
                    const unsigned want = (unsigned)(c_last - (int)blockIdx.x);
                    if (leader) {
                        while (sk_ld_acquire(flag) < want) __nanosleep(32);
                        *flag = 0u;  // the next launch starts from 0
                    }
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    for (int w = (int)blockIdx.x + 1; w <= c_last; ++w) {
                        const float* slot = sk_part + ((size_t)w * NC + cw) * (64 * BN);
#pragma unroll
                        for (int i = 0; i < BN / 2; ++i) d[i] += __ldcg(slot + i * 128 + tw);
                    }
                }
            }

            // ------------------------------ epilogue ------------------------------
"""),
    # the entries
    ("""GW_ENTRY_TS(gemm_wgmma_f16_128x192_ts, __half, false, Cfg128x192)
""",
     """GW_ENTRY_TS(gemm_wgmma_f16_128x192_ts, __half, false, Cfg128x192)
// Stream-K (kernels/dev/gemm_streamk_patch.py): P is the workspace (flags, then one BM x BN fp32
// slot per CTA, zeroed once); splits is ignored.
#define GW_ENTRY_SK(NAME, T, BF16, CFG)                                                             \\
    extern "C" __global__ void __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, 1)               \\
        NAME GW_TS_PARAMS(T) {                                                                     \\
        gemm_wgmma_detail::gemm_body<T, BF16, gemm_wgmma_detail::CFG, 1, false, true, false, true>( \\
            &tmA, &tmB, C, P, M, N, K, 1, &tmC);                                                  \\
    }
GW_ENTRY_SK(gemm_wgmma_bf16_128x256_sk, __nv_bfloat16, true, Cfg128x256)
GW_ENTRY_SK(gemm_wgmma_f16_128x256_sk, __half, false, Cfg128x256)
GW_ENTRY_SK(gemm_wgmma_bf16_128x192_sk, __nv_bfloat16, true, Cfg128x192)
GW_ENTRY_SK(gemm_wgmma_f16_128x192_sk, __half, false, Cfg128x192)
GW_ENTRY_SK(gemm_wgmma_bf16_128x128_sk, __nv_bfloat16, true, Cfg128x128)
GW_ENTRY_SK(gemm_wgmma_f16_128x128_sk, __half, false, Cfg128x128)
#undef GW_ENTRY_SK
"""),
])

bench = os.path.join(os.path.dirname(path), "dev", "gemm_wgmma_bench.cu")
if os.path.exists(bench):
    patch_file(bench, [
        ("""    bool ts = false;  // TMA-store epilogue entry (_ts): takes tmC last, staging boxes after the barriers
""",
         """    bool ts = false;  // TMA-store epilogue entry (_ts): takes tmC last, staging boxes after the barriers
    bool sk = false;  // stream-K entry (_sk, gemm_streamk_patch.py): P is its workspace, no splits
"""),
        ("""    {"192x192_regs", 192, 192, 4, 1, 860, 8000, 1, false, (const void*)gemm_wgmma_bf16_192x192, (const void*)gemm_wgmma_f16_192x192},
""",
         """    {"192x192_regs", 192, 192, 4, 1, 860, 8000, 1, false, (const void*)gemm_wgmma_bf16_192x192, (const void*)gemm_wgmma_f16_192x192},
    {"128x256_sk", 128, 256, 4, 1, 760, 8000, 1, false, (const void*)gemm_wgmma_bf16_128x256_sk, (const void*)gemm_wgmma_f16_128x256_sk, true, true},
    {"128x192_sk", 128, 192, 5, 1, 575, 7200, 1, false, (const void*)gemm_wgmma_bf16_128x192_sk, (const void*)gemm_wgmma_f16_128x192_sk, true, true},
    {"128x128_sk", 128, 128, 6, 1, 390, 6500, 1, false, (const void*)gemm_wgmma_bf16_128x128_sk, (const void*)gemm_wgmma_f16_128x128_sk, true, true},
"""),
        ("""static std::vector<long> splits_for(const TileCfg& t, long M, long N, long K, long pick_s, bool is_pick) {
""",
         """// Stream-K: G CTAs (one per SM, at least 4 K blocks each) and the workspace bytes (the kernel's
// layout: tiles x warpgroups flag words rounded up to 64, then G slots of BM x BN floats).
static long sk_grid(const TileCfg& t, long M, long N, long K) {
    long w = t.tiles(M, N) * ((K + 63) / 64);
    return std::max(1L, std::min<long>(g_num_sms, w / 4));
}
static size_t sk_bytes(const TileCfg& t, long M, long N, long K) {
    long flags = (t.tiles(M, N) * (t.bm / 64) + 63) / 64 * 64;
    return (size_t)(flags + sk_grid(t, M, N, K) * t.bm * t.bn) * sizeof(float);
}

static std::vector<long> splits_for(const TileCfg& t, long M, long N, long K, long pick_s, bool is_pick) {
    if (t.sk) return {1};
"""),
        ("""    if (max_s > 1) CK(cudaMalloc(&P, (size_t)max_s * M * N * sizeof(float)));
""",
         """    if (max_s > 1) CK(cudaMalloc(&P, (size_t)max_s * M * N * sizeof(float)));
    float* SKW = nullptr;  // the stream-K rows' workspace, zeroed once (each launch leaves it so)
    size_t skw_bytes = 0;
    for (int t = NT; t < NT + NTS; ++t)
        if (tile_at(t).sk && tile_selected(tile_at(t).name))
            skw_bytes = std::max(skw_bytes, sk_bytes(tile_at(t), M, N, K));
    if (skw_bytes) {
        CK(cudaMalloc(&SKW, skw_bytes));
        CK(cudaMemset(SKW, 0, skw_bytes));
    }
"""),
        ("""            Launch<T> L{f, fr, ta, tb, tc, C, s > 1 ? P : nullptr, M, N, K, (int)s,
                        (int)cfg.grid(units, g_num_sms), cfg.threads(),
                        cfg.smem()};""",
         """            Launch<T> L{f, fr, ta, tb, tc, C, cfg.sk ? SKW : (s > 1 ? P : nullptr), M, N, K, (int)s,
                        (int)(cfg.sk ? sk_grid(cfg, M, N, K) : cfg.grid(units, g_num_sms)),
                        cfg.threads(), cfg.smem()};
            // each tile's flags sit where another tile's partial slots were: zero it per row
            // (within a row, every launch leaves the flags at 0)
            if (cfg.sk) CK(cudaMemset(SKW, 0, skw_bytes));"""),
        ("""            if (s > 1) {  // run-to-run bitwise determinism
                CK(cudaMemcpy(C2, C, (size_t)M * N * sizeof(T), cudaMemcpyDeviceToDevice));
                CK(cudaMemset(C, 0xFF, (size_t)M * N * sizeof(T)));
                CK(cudaMemset(P, 0x7F, (size_t)s * M * N * sizeof(float)));""",
         """            if (s > 1 || cfg.sk) {  // run-to-run bitwise determinism (stream-K: the flags' reset too)
                CK(cudaMemcpy(C2, C, (size_t)M * N * sizeof(T), cudaMemcpyDeviceToDevice));
                CK(cudaMemset(C, 0xFF, (size_t)M * N * sizeof(T)));
                if (s > 1) CK(cudaMemset(P, 0x7F, (size_t)s * M * N * sizeof(float)));"""),
        ("""    if (P) CK(cudaFree(P));
""",
         """    if (P) CK(cudaFree(P));
    if (SKW) CK(cudaFree(SKW));
"""),
    ])
