// kernelgate `mha` on Hopper (sm_90a): FlashAttention-3 style forward, TMA + wgmma + mbarrier,
// persistent CTAs.
//
// Semantics: exactly those of kernels/mha.cu. Q, O are [B, H, Sq, D]; K, V are [B, Hkv, Sk, D],
// contiguous, bf16 or fp16, D = 64 or 128. Query head h reads key/value head h / (H / Hkv)
// (GQA/MQA). Causal masking is aligned to the end: query i sees keys j <= i + (Sk - Sq); a row
// that sees no key (only when Sq > Sk) gets O = 0. Any Sq, Sk >= 1. fp32 softmax/accumulation.
// The host passes scale_log2 = scale * log2(e).
//
// ---------------------------------------------------------------------------------------
// DESIGN
//   * Work tile = BM = 64·NC query rows of one (batch, head); NC = 2 consumer warpgroups
//     (BM 128: d64 and d128) or 3 (BM 192: the `_bm192` d64 entries). Tiles are numbered
//     t = (b·H + h)·n_m + r (n_m = ceil(Sq/BM)); r is the m-block, reversed for causal
//     (m = n_m − 1 − r) so each head's longest tiles come first.
//   * Persistent grid: gridDim.x CTAs (the host passes min(#tiles, #SMs); #tiles gives the
//     classic one-tile-per-CTA launch with the same code). CTA i starts at tile i; its next
//     tiles come from
//       sched == nullptr: static round robin, t += gridDim.x (non-causal: equal tiles);
//       sched != nullptr: a global counter, t = gridDim.x + atomicAdd(sched, 1) (causal:
//         greedy longest-first), fetched when the producer issues a tile's last K/V loads.
//         The last CTA to finish (counter sched[1]) resets both words, so consecutive launches
//         in a stream need no memset; the host zeroes them once.
//   * 128·(NC+1) threads = NC+1 warpgroups:
//       WG0 = producer: one thread fetches the tiles, publishes each tile index in shared
//             memory with the Q barrier, and issues every TMA load; setmaxnreg.dec 24.
//       WG1..NC = consumers: WG1+c owns rows 64c..64c+63 of the tile; setmaxnreg.inc to 240
//             (NC = 2) or 160 (NC = 3).
//   * Shared memory (base rounded up to 1024 B, every tile 1024-B aligned, 128-byte swizzle):
//       Q:  D/64 TMA boxes {64 cols, BM rows} (q_full / q_empty: one Q buffer; consumers
//           release it after their last Q·Kᵀ of the tile, so the next tile's Q streams in
//           during the last P·V and the epilogue).
//       K:  STAGES x (D/64 boxes {64 cols, BN rows}, BN*128 B each)   ring, k_full/k_empty.
//       V:  STAGES x (D/64 boxes {64 cols, BN rows})                   ring, v_full/v_empty.
//       O:  NC x D/64 boxes {64 cols, 64 rows} (MHA_WG_TMA_STORE): epilogue staging.
//       Row r of a box is 128 B (64 elements), 16-B chunk c stored at chunk c ^ (r & 7) (TMA
//       SWIZZLE_128B), 8-row atoms of 1024 B. The K/V ring runs on one iteration counter over
//       all tiles of the CTA (stage = it % STAGES, parity = (it / STAGES) & 1), identical in
//       producer and consumers, so barrier phases carry across tiles. full: count 1 (producer
//       arrive.expect_tx + TMA bytes); empty: count 4·NC (lane 0 of each consumer warp).
//   * Consumer warpgroups whose 64 rows all lie past Sq (last m-block) are idle for the tile:
//       they only follow the ring (wait full, arrive empty) so the counts stay exact.
//   * Tensor maps are 3-D {D, S, B*heads} (innermost first), so rows past Sq / Sk are out of
//     bounds of their own head: TMA loads fill them with zeros (their scores are then masked
//     to -inf, never left at 0) and the TMA store of O skips them. The expect_tx byte count is
//     always the full box size.
//   * S = Q·Kᵀ per consumer WG: wgmma.m64n{BN}k16, A = Q (smem, K-major SW128 descriptor,
//     SBO = 1024, start + 32 B per k16 step inside a 64-col box, + box size for the next box;
//     or, with MHA_WG_QREG at d128, from registers loaded once per tile by ldmatrix, which
//     frees the Q buffer at the tile's start and takes 2 KiB per step off the shared-memory
//     reads of Q·Kᵀ), B = K tile
//     (smem, K-major: key rows of 128 B, same descriptor form), trans-b = 0; the first k16
//     step has scale-d = 0 (no zero fill of S).
//   * Online softmax in registers, log2 domain (as mha.cu): p = ex2(s·scale_log2 − m).
//     wgmma m64nN fp32 accumulator layout (per warp w of the WG: rows 16w..16w+15;
//     g = lane/4, t = lane%4):  acc[4i+0], acc[4i+1] = row g,   cols 8i+2t, 8i+2t+1
//                               acc[4i+2], acc[4i+3] = row g+8, cols 8i+2t, 8i+2t+1
//     so each thread holds 2 rows; row max/sum reduce over the 4 lanes of a quad (xor 1, 2).
//   * P is converted to 16-bit in registers and is the register A operand of
//     O += P·V (wgmma.m64n{D}k16, A from registers): the A fragment of k16 step kk is
//       a[0] = P(row g,   keys 16kk+2t..+1)   = pack(acc[8kk+0], acc[8kk+1])
//       a[1] = P(row g+8, keys 16kk+2t..+1)   = pack(acc[8kk+2], acc[8kk+3])
//       a[2] = P(row g,   keys 16kk+8+2t..+1) = pack(acc[8kk+4], acc[8kk+5])
//       a[3] = P(row g+8, keys 16kk+8+2t..+1) = pack(acc[8kk+6], acc[8kk+7])
//     (the mma.m16n8k16 A layout, which wgmma's register A uses per warp). B = V tile
//     (smem, MN-major SW128: key rows of 128 B of D), trans-b = 1, LBO = one V box
//     (BN*128 B: the next 64 columns of D), SBO = 1024 (next 8 keys), + 2048 B per k16 step.
//   * Intra-warpgroup overlap (FA3 algorithm 2, MHA_WG_OVERLAP): in iteration j the WG issues
//     S_j = Q·K_jᵀ and then O += P_{j-1}·V_{j-1} back to back, waits for S_j only
//     (wait_group 1), does the softmax of S_j while P_{j-1}·V_{j-1} runs on the tensor cores,
//     then waits for it, rescales O and converts P_j.
//   * Ping-pong between the active consumer warpgroups (MHA_WG_PINGPONG, FA3 section 3.1):
//     each issues its GEMMs only in its turn (bar.sync on named barrier 1 + c, 256 threads)
//     and hands the turn to the next one right after issuing (bar.arrive on barrier
//     1 + (c+1) % na), so one warpgroup's softmax overlaps the others' GEMMs. The mbarrier
//     waits for data happen before taking the turn. Per tile, the last active WG gives WG 0
//     the first turn and skips its own last hand-over, so every named-barrier phase gets
//     exactly 256 threads (all active warpgroups pass the same number of issue points) and
//     nothing is left half-arrived between tiles.
//   * Masking only where needed: key tiles wholly past the causal diagonal are never loaded;
//     the per-element mask (key >= Sk, or causal key > row + Sk − Sq) runs on tiles that cross
//     the end of the keys or the diagonal of this warpgroup's rows.
//   * Epilogue: O / l (l = 0: O = 0) rounded to T. MHA_WG_TMA_STORE (default): each consumer
//     WG writes its 64 rows into its swizzled staging boxes (4-byte st.shared, conflict free),
//     fence.proxy.async, then one thread issues the TMA store (rows >= Sq clipped by the map)
//     and the next tile only waits for that store's shared-memory reads before reusing the
//     staging area. Otherwise 4-byte stores straight from registers, rows >= Sq skipped.
// ---------------------------------------------------------------------------------------
// HOST LAUNCH RECIPE (src/backend/cuda/mha_wgmma.rs, kernels/dev/mha_wgmma_bench.cu)
//   elem = BFLOAT16 / FLOAT16; four 3-D maps, SWIZZLE_128B, INTERLEAVE_NONE,
//   L2_PROMOTION_L2_256B, FLOAT_OOB_FILL_NONE (zeros), elementStrides {1,1,1}:
//     tmQ: dims {D, Sq, B*H},   strides {D*2, Sq*D*2} bytes, box {64, BM, 1}
//     tmK: dims {D, Sk, B*Hkv}, strides {D*2, Sk*D*2},       box {64, BN, 1}
//     tmV: same as tmK on V
//     tmO: same as tmQ on O, box {64, 64, 1}
//   BM = 128 (entries mha_wgmma_{bf16,fp16}_d{64,128}[_causal]) or 192 (d64 only,
//   mha_wgmma_{bf16,fp16}_d64_bm192[_causal]); BN = MHA_WG_BN (128);
//   STAGES = MHA_WG_STAGES_D64 / _D128 (4 / 2).
//   dynamic smem = mha_wg::Layout<D, BN, STAGES, NC>::SMEM
//     = 1024 + BM*D*2 + 2*STAGES*BN*D*2 + (TMA store: BM*D*2) + 256 bytes
//     (BM 128: d64 165120, d128 197888; BM 192 d64: 181504), set MAX_DYNAMIC_SHARED_SIZE_BYTES
//   grid (G, 1, 1), G = min(#tiles, #SMs) persistent or #tiles; block 128*(NC+1); no clusters
//   params {tmQ, tmK, tmV, tmO (__grid_constant__ CUtensorMap by value), O, sched, B, H, Hkv,
//           Sq, Sk, scale_log2}; sched = nullptr (static round robin) or 2 zeroed u32 words
//           (dynamic tile counter; needs G >= 1 and no other launch using it concurrently).
//   Compile-time switches (defaults 1 unless noted), for A/B in kernels/dev/run_mha_wgmma.sh:
//     MHA_WG_OVERLAP, MHA_WG_PINGPONG, MHA_WG_TMA_STORE, MHA_WG_QREG (d128 only).
// ---------------------------------------------------------------------------------------
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if !defined(__cuda_cuda_h__) && !defined(GEMM_WGMMA_HAVE_CUTENSORMAP)
#define GEMM_WGMMA_HAVE_CUTENSORMAP
struct alignas(64) CUtensorMap {
    unsigned long long opaque[16];
};
#endif

#ifndef MHA_WG_BN
#define MHA_WG_BN 128
#endif
// Key tile of the non-causal d128 entries (FA3 uses 176 there; 128 elsewhere). 160 and 176 are
// instantiable; at 176 the TMA-store staging no longer fits (Layout drops it) and Q·Kᵀ reads Q
// from shared memory (MHA_WG_QREG_MAX_BN).
#ifndef MHA_WG_BN_D128
#define MHA_WG_BN_D128 128
#endif
// Largest key tile at which Q stays in registers (MHA_WG_QREG): above it, S, P, O and Q's
// fragments do not fit in the consumers' 240 registers.
#ifndef MHA_WG_QREG_MAX_BN
#define MHA_WG_QREG_MAX_BN 128
#endif
#ifndef MHA_WG_STAGES_D64
#define MHA_WG_STAGES_D64 4
#endif
#ifndef MHA_WG_STAGES_D128
#define MHA_WG_STAGES_D128 2
#endif
#ifndef MHA_WG_OVERLAP
#define MHA_WG_OVERLAP 1
#endif
#ifndef MHA_WG_PINGPONG
#define MHA_WG_PINGPONG 1
#endif
#ifndef MHA_WG_TMA_STORE
#define MHA_WG_TMA_STORE 1
#endif
#ifndef MHA_WG_QREG
#define MHA_WG_QREG 1
#endif
// Ping-pong turn order carried across tiles (see `ring` in the consumers); 0: closed per tile.
#ifndef MHA_WG_RING
#define MHA_WG_RING 1
#endif

namespace mha_wg {

#include "hopper_sync.cuh"
// Adds `bytes` to the barrier's expected transaction count without arriving (the NSA producer's
// first Q load, issued before its lists are built; the arrival comes once they are).
static __device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void tma_load_3d(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1,
                                                   int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}
// 4-D tiled load (the NSA entries' {D, heads, T, B} maps of [B, T, heads, D] tensors).
static __device__ __forceinline__ void tma_load_4d(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1,
                                                   int c2, int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
}
// 4-byte cp.async (the NSA producer stages each token's block indices in shared memory).
static __device__ __forceinline__ void cp_async4(unsigned dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
static __device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
static __device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, unsigned src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(src), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}
static __device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// The shared-memory source of every committed bulk store has been read (it may be reused).
static __device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
static __device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
static __device__ __forceinline__ void st_shared_u32(unsigned addr, unsigned v) {
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
static __device__ __forceinline__ void st_shared_s32(unsigned addr, int v) {
    asm volatile("st.shared.s32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
static __device__ __forceinline__ int ld_shared_s32(unsigned addr) {
    int v;
    asm volatile("ld.shared.s32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
static __device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
// wgmma shared-memory matrix descriptor, 128-byte swizzle (as gemm_wgmma.cu).
static __device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo) {
    unsigned long long d = 0;
    d |= (unsigned long long)((addr & 0x3FFFF) >> 4);
    d |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
    d |= 1ull << 62;  // SWIZZLE_128B
    return d;
}
// Named barriers (0 is __syncthreads): 1..NC order the consumer warpgroups' GEMM issue
// (ping-pong, 256 threads = two warpgroups); NC+1+c is consumer warpgroup c's own (128).
static __device__ __forceinline__ void named_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
static __device__ __forceinline__ void named_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
static __device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
template <typename T> struct Pack;
template <> struct Pack<__nv_bfloat16> {
    static constexpr bool BF16 = true;
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&v);
    }
};
template <> struct Pack<__half> {
    static constexpr bool BF16 = false;
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __half2 v = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&v);
    }
};

// ---- wgmma wrappers (generated: one per N, f32 accumulate, bf16 or f16 inputs) ----
// D[64x64] (+)= A[64x16] (smem desc, K-major) * B[16x64] (smem desc, K-major); accum = 0 overwrites D.
template <bool BF16> static __device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], unsigned long long da, unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(accum));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(accum));
#undef MW_ASM
}
// D[64x64] (+)= A[64x16] (registers, 4 x b32) * B[16x64] (smem desc; TRANSB 1: MN-major, 0: K-major).
template <bool BF16, int TRANSB> static __device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, %38;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
#undef MW_ASM
}
// D[64x128] (+)= A[64x16] (smem desc, K-major) * B[16x128] (smem desc, K-major); accum = 0 overwrites D.
template <bool BF16> static __device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], unsigned long long da, unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(accum));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(accum));
#undef MW_ASM
}
// D[64x128] (+)= A[64x16] (registers, 4 x b32) * B[16x128] (smem desc; TRANSB 1: MN-major, 0: K-major).
template <bool BF16, int TRANSB> static __device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n" "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, %70;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
#undef MW_ASM
}
// D[64x192] (+)= A[64x16] (smem desc, K-major) * B[16x192] (smem desc, K-major); accum = 0 overwrites D.
template <bool BF16> static __device__ __forceinline__ void wgmma_ss_n192(float (&d)[96], unsigned long long da, unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n" "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) : "l"(da), "l"(db), "r"(accum));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) : "l"(da), "l"(db), "r"(accum));
#undef MW_ASM
}
// D[64x192] (+)= A[64x16] (registers, 4 x b32) * B[16x192] (smem desc; TRANSB 1: MN-major, 0: K-major).
template <bool BF16, int TRANSB> static __device__ __forceinline__ void wgmma_rs_n192(float (&d)[96], const unsigned (&a)[4], unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n" "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, {%96,%97,%98,%99}, %100, p, 1, 1, %102;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
#undef MW_ASM
}

// D[64x160] (+)= A[64x16] (smem desc, K-major) * B[16x160] (smem desc, K-major); accum = 0 overwrites D.
template <bool BF16> static __device__ __forceinline__ void wgmma_ss_n160(float (&d)[80], unsigned long long da, unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n" "wgmma.mma_async.sync.aligned.m64n160k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, %80, %81, p, 1, 1, 0, 0;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]) : "l"(da), "l"(db), "r"(accum));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]) : "l"(da), "l"(db), "r"(accum));
#undef MW_ASM
}
// D[64x160] (+)= A[64x16] (registers, 4 x b32) * B[16x160] (smem desc; TRANSB 1: MN-major, 0: K-major).
template <bool BF16, int TRANSB> static __device__ __forceinline__ void wgmma_rs_n160(float (&d)[80], const unsigned (&a)[4], unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %85, 0;\n" "wgmma.mma_async.sync.aligned.m64n160k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, {%80,%81,%82,%83}, %84, p, 1, 1, %86;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
#undef MW_ASM
}
// D[64x176] (+)= A[64x16] (smem desc, K-major) * B[16x176] (smem desc, K-major); accum = 0 overwrites D.
template <bool BF16> static __device__ __forceinline__ void wgmma_ss_n176(float (&d)[88], unsigned long long da, unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n" "wgmma.mma_async.sync.aligned.m64n176k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]) : "l"(da), "l"(db), "r"(accum));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]) : "l"(da), "l"(db), "r"(accum));
#undef MW_ASM
}
// D[64x176] (+)= A[64x16] (registers, 4 x b32) * B[16x176] (smem desc; TRANSB 1: MN-major, 0: K-major).
template <bool BF16, int TRANSB> static __device__ __forceinline__ void wgmma_rs_n176(float (&d)[88], const unsigned (&a)[4], unsigned long long db, int accum) {
#define MW_ASM(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %93, 0;\n" "wgmma.mma_async.sync.aligned.m64n176k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87}, {%88,%89,%90,%91}, %92, p, 1, 1, %94;\n}\n"
    if constexpr (BF16) asm volatile(MW_ASM("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
    else asm volatile(MW_ASM("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accum), "n"(TRANSB));
#undef MW_ASM
}
template <bool BF16, int N>
static __device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long da, unsigned long long db, int accum) {
    if constexpr (N == 192) wgmma_ss_n192<BF16>(d, da, db, accum);
    else if constexpr (N == 176) wgmma_ss_n176<BF16>(d, da, db, accum);
    else if constexpr (N == 160) wgmma_ss_n160<BF16>(d, da, db, accum);
    else if constexpr (N == 128) wgmma_ss_n128<BF16>(d, da, db, accum);
    else {
        static_assert(N == 64, "wgmma_ss: N must be 64, 128, 160, 176 or 192");
        wgmma_ss_n64<BF16>(d, da, db, accum);
    }
}
template <bool BF16, int N, int TRANSB>
static __device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long db, int accum) {
    if constexpr (N == 192) wgmma_rs_n192<BF16, TRANSB>(d, a, db, accum);
    else if constexpr (N == 176) wgmma_rs_n176<BF16, TRANSB>(d, a, db, accum);
    else if constexpr (N == 160) wgmma_rs_n160<BF16, TRANSB>(d, a, db, accum);
    else if constexpr (N == 128) wgmma_rs_n128<BF16, TRANSB>(d, a, db, accum);
    else {
        static_assert(N == 64, "wgmma_rs: N must be 64, 128, 160, 176 or 192");
        wgmma_rs_n64<BF16, TRANSB>(d, a, db, accum);
    }
}

#define MW_NEG_INF __int_as_float(0xff800000)

template <int D, int BN, int STAGES, int NC, bool NSA = false> struct Layout {
    static constexpr int BM = 64 * NC;
    static constexpr unsigned Q_BOX = BM * 128;          // one 64-col box of Q
    static constexpr unsigned Q_BYTES = Q_BOX * (D / 64);
    static constexpr unsigned KV_BOX = BN * 128;         // one 64-col box of a K or V tile
    static constexpr unsigned KV_TILE = KV_BOX * (D / 64);
    static constexpr unsigned O_BOX = 64 * 128;          // one consumer WG's 64 rows x 64 cols of O
    // The TMA-store staging area, when it fits beside Q and the K/V ring (not at d128 BN 176).
    static constexpr unsigned MAIN_BYTES = Q_BYTES + 2 * STAGES * KV_TILE;
    static constexpr unsigned STAGING = O_BOX * (D / 64) * NC;
    // (The NSA entries store O from registers: their output is [B, T, HQ, D] and gated.)
    static constexpr bool STORE = !NSA && MHA_WG_TMA_STORE && 1024 + MAIN_BYTES + STAGING + 256 <= 232448;
    static constexpr unsigned O_BYTES = STORE ? STAGING : 0;
    static constexpr unsigned Q_OFF = 0;
    static constexpr unsigned K_OFF = Q_BYTES;
    static constexpr unsigned V_OFF = K_OFF + STAGES * KV_TILE;
    static constexpr unsigned O_OFF = V_OFF + STAGES * KV_TILE;
    static constexpr unsigned BAR_OFF = O_OFF + O_BYTES;
    static constexpr unsigned SMEM = 1024 + BAR_OFF + 256;  // + alignment slack + barriers
    // mbarriers, the published unit (4 B + 4 pad), one split-KV flag per consumer WG (4 B each)
    static_assert(8 * (2 + 4 * STAGES) + 8 + 4 * NC <= 256, "barrier area");
    static_assert(SMEM <= 232448, "shared memory");
    static_assert(KV_BOX % 1024 == 0, "SW128 atoms need 1024-B aligned boxes");
};

// The online-softmax update of a masked score tile: running max and sum, s turned into p in
// place, the O correction factors in corr.
template <int BN>
static __device__ __forceinline__ void row_update(float (&s)[BN / 2], float (&row_m)[2], float (&row_l)[2],
                                                  float (&corr)[2], float scale_log2) {
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
        float mx = MW_NEG_INF;
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * rr], s[4 * i + 2 * rr + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
        mx = fmaxf(row_m[rr], mx * scale_log2);
        // A row that has seen only masked keys keeps m = -inf: base 0 so exp2(-inf) = 0, not NaN.
        const float base = mx == MW_NEG_INF ? 0.f : mx;
        corr[rr] = fast_exp2(row_m[rr] - base);  // row_m = -inf -> 0
        row_m[rr] = mx;
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
            const float p0 = fast_exp2(fmaf(s[4 * i + 2 * rr], scale_log2, -base));
            const float p1 = fast_exp2(fmaf(s[4 * i + 2 * rr + 1], scale_log2, -base));
            s[4 * i + 2 * rr] = p0;
            s[4 * i + 2 * rr + 1] = p1;
            sum += p0 + p1;
        }
        row_l[rr] = row_l[rr] * corr[rr] + sum;  // per-thread partial sum, reduced in the epilogue
    }
}

// One consumer warpgroup's softmax step on a fresh score tile `s` (raw Q·Kᵀ): masks (when
// `edge`), updates the running max/sum, turns s into p in place and returns the O correction
// factors (corr[rr] for row rr of this thread).
template <int BN, bool CAUSAL>
static __device__ __forceinline__ void softmax_step(float (&s)[BN / 2], float (&row_m)[2], float (&row_l)[2],
                                                    float (&corr)[2], bool edge, int n0, int row0, int Sk,
                                                    int diag, float scale_log2) {
    const int lane = threadIdx.x & 31;
    const int t = lane & 3;
    if (edge) {
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = n0 + i * 8 + t * 2 + (e & 1);
                const int row = row0 + (e >> 1) * 8;
                const bool masked = key >= Sk || (CAUSAL && key > row + diag);
                s[4 * i + e] = masked ? MW_NEG_INF : s[4 * i + e];
            }
        }
    }
    row_update<BN>(s, row_m, row_l, corr, scale_log2);
}

// NSA entries: the score tile of key tile n0 .. n0 + BN − 1 for this thread's rows (tokens)
// row0 and row0 + 8. mult[rr] holds row rr's multiplicity of each of the tile's BN / BS blocks
// (byte kb: how many of the token's valid slots name block kb of the tile; 0 = not selected).
// A key is live for a row iff its block's multiplicity is nonzero and key <= token (causal);
// a block listed m times counts m times in the softmax (p and the row sum times m). The block
// mask is one add per element (0 or −inf per row and block); the causal compare runs only on
// tiles that reach past the warpgroup's first token (`diag`).
template <int BN, int BS>
static __device__ __forceinline__ void softmax_nsa(float (&s)[BN / 2], float (&row_m)[2], float (&row_l)[2],
                                                   float (&corr)[2], const unsigned (&mult)[2], int n0, int row0,
                                                   bool diag, float scale_log2) {
    const int t = threadIdx.x & 3;
    float bias[2][BN / BS];
#pragma unroll
    for (int rr = 0; rr < 2; ++rr)
#pragma unroll
        for (int kb = 0; kb < BN / BS; ++kb) bias[rr][kb] = (mult[rr] >> (8 * kb)) & 0xffu ? 0.f : MW_NEG_INF;
#pragma unroll
    for (int i = 0; i < BN / 8; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[4 * i + e] += bias[e >> 1][(i * 8) / BS];
    if (diag) {
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = n0 + i * 8 + t * 2 + (e & 1);
                s[4 * i + e] = key > row0 + (e >> 1) * 8 ? MW_NEG_INF : s[4 * i + e];
            }
        }
    }
    row_update<BN>(s, row_m, row_l, corr, scale_log2);
    if (((mult[0] | mult[1]) & 0xfefefefeu) != 0u) {
        // A block listed more than once (never in the generated inputs): scale its weights.
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int rr = e >> 1;
                const float m = (float)((mult[rr] >> (8 * ((i * 8) / BS))) & 0xffu);
                row_l[rr] += (m - 1.f) * s[4 * i + e];
                s[4 * i + e] *= m;
            }
        }
    }
}

template <typename T, int BN>
static __device__ __forceinline__ void convert_p(const float (&s)[BN / 2], unsigned (&p)[BN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        p[kk][0] = Pack<T>::pack(s[8 * kk + 0], s[8 * kk + 1]);
        p[kk][1] = Pack<T>::pack(s[8 * kk + 2], s[8 * kk + 3]);
        p[kk][2] = Pack<T>::pack(s[8 * kk + 4], s[8 * kk + 5]);
        p[kk][3] = Pack<T>::pack(s[8 * kk + 6], s[8 * kk + 7]);
    }
}

template <int D>
static __device__ __forceinline__ void rescale_o(float (&o)[D / 2], const float (&corr)[2]) {
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
        o[4 * i + 0] *= corr[0];
        o[4 * i + 1] *= corr[0];
        o[4 * i + 2] *= corr[1];
        o[4 * i + 3] *= corr[1];
    }
}

// What one work tile covers; computed identically by the producer and the consumers (the K/V
// ring's iteration counter depends on n_kv).
struct Tile {
    int m0;    // first query row
    int bh;    // b*H + h
    int bhkv;  // b*Hkv + h / (H / Hkv)
    int na;    // consumer warpgroups with at least one row < Sq
    int n_kv;  // key tiles to visit
    int j0;    // first key tile (0 unless the unit is one chunk of a split tile)
    int slot;  // split tiles: index among them (partials and counters); -1 for a whole tile
    int chunk; // split tiles: which chunk of the key range
};
template <int BM, int BN, bool CAUSAL>
static __device__ __forceinline__ Tile decode_tile(int tile, int n_m, int H, int Hkv, int Sq, int Sk) {
    Tile w;
    w.bh = tile / n_m;
    const int r = tile - w.bh * n_m;
    const int m_block = CAUSAL ? n_m - 1 - r : r;
    const int b = w.bh / H, h = w.bh - b * H;
    w.bhkv = b * Hkv + h / (H / Hkv);
    w.m0 = m_block * BM;
    const int rows = min(BM, Sq - w.m0);
    w.na = (rows + 63) / 64;
    int n = (Sk + BN - 1) / BN;
    if (CAUSAL) {
        const int last_key = w.m0 + rows - 1 + (Sk - Sq);  // largest key any valid row sees
        const int tt = last_key < 0 ? 0 : last_key / BN + 1;
        n = tt < n ? tt : n;
    }
    w.n_kv = n;
    w.j0 = 0;
    w.slot = -1;
    w.chunk = 0;
    return w;
}
// NSA work tile u: m-block-major (u = r·B·H + b·H + h, m-block n_m − 1 − r), so every head's
// last (longest) tile comes before any head's second-longest: the tile counter hands out work
// longest first across the whole launch, not per head.
template <int BM, int BN>
static __device__ __forceinline__ Tile decode_nsa(int u, int n_m, int B, int H, int Hkv, int Sq) {
    const int r = u / (B * H);
    return decode_tile<BM, BN, true>((u - r * B * H) * n_m + r, n_m, H, Hkv, Sq, Sq);
}
// Work unit u: tiles below split_from are whole; each tile from split_from on is split into
// split_c chunks of its key range (units split_from + slot·split_c + chunk), the split-KV tail.
template <int BM, int BN, bool CAUSAL>
static __device__ __forceinline__ Tile decode_unit(int u, int n_m, int H, int Hkv, int Sq, int Sk, int split_from,
                                                   int split_c) {
    if (CAUSAL || u < split_from) return decode_tile<BM, BN, CAUSAL>(u, n_m, H, Hkv, Sq, Sk);
    const int q = u - split_from;
    const int slot = q / split_c, chunk = q - slot * split_c;
    Tile w = decode_tile<BM, BN, CAUSAL>(split_from + slot, n_m, H, Hkv, Sq, Sk);
    const int n = w.n_kv;
    w.j0 = chunk * n / split_c;
    w.n_kv = (chunk + 1) * n / split_c - w.j0;
    w.slot = slot;
    w.chunk = chunk;
    return w;
}

// What the NSA entries add (kernels/nsa_wgmma.cu; unused when NSA_BS = 0).
template <typename T> struct NsaArgs {
    const T* g_slc;   // [B, T, HQ] gate of the selected branch
    const int* idx;   // [B, T, H, S] block indices
    const int* cnt;   // [B, T, H] block counts
    int S;            // slots per token
    int nkv_max;      // ceil(T / BN): key tiles of the longest tile (<= 64)
};
// NSA shared memory, after the barrier area: two list buffers of nsa_words(BM, nkv_max) words,
// each: [0] the tile's key-tile count n, [8 + 2w], [9 + 2w] producer warp w's union bits,
// [16, 16 + nkv_max) the ascending key tiles, then the multiplicities masks[kvt·BM + row];
// then BM·S words where producer thread i stages its token's S block indices.
static __host__ __device__ constexpr int nsa_words(int bm, int nkv_max) { return 16 + nkv_max + bm * nkv_max; }

template <typename T, int D, int BN, int STAGES, int NC, bool CAUSAL, bool OVERLAP, bool PINGPONG, int NSA_BS = 0>
static __device__ __forceinline__ void mha_body(const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                                const CUtensorMap* tmV, const CUtensorMap* tmO,
                                                T* __restrict__ O, unsigned* sched, int B, int H, int Hkv,
                                                int Sq, int Sk, float scale_log2, int split_from, int split_c,
                                                float* __restrict__ part, unsigned* __restrict__ part_cnt,
                                                const NsaArgs<T> nsa = {}) {
    // NSA_BS > 0: the NSA selected-block branch (kernels/nsa_wgmma.cu). Rows of a tile are BM
    // consecutive tokens of one query head (H = HQ, Hkv = KV heads, Sq = Sk = T), the key tiles
    // are those holding a block some row selected, and each element is masked by its row's
    // multiplicity of the key's block and by causality (softmax_nsa).
    constexpr bool NSA = NSA_BS > 0;
    static_assert(!NSA || (CAUSAL && NC <= 2 && BN % NSA_BS == 0), "NSA: causal, 1 or 2 consumer WGs, BS | BN");
    using L = Layout<D, BN, STAGES, NC, NSA>;
    constexpr int BM = L::BM;
    constexpr bool BF16 = Pack<T>::BF16;
    // Q in registers for Q·Kᵀ (MHA_WG_QREG): d128 with 2 consumer warpgroups (240 registers;
    // at BM 192 the 160-register budget would spill, and at d64 it measured no better), and
    // only with OVERLAP: without it, ptxas 13.0 gave the P fragments the Q fragments' registers
    // (the P conversion overwrote Q; wrong results from the second key tile on).
    constexpr bool QREG = MHA_WG_QREG && NC == 2 && D == 128 && OVERLAP && BN <= MHA_WG_QREG_MAX_BN;
    constexpr unsigned EMPTY_ARRIVALS = 4 * NC;  // lane 0 of each consumer warp
    extern __shared__ __align__(16) unsigned char mw_smem[];
    const unsigned base = (smem_u32(mw_smem) + 1023u) & ~1023u;  // SW128 atoms: 1024 B aligned
    const unsigned q_s = base + L::Q_OFF;
    const unsigned k_s = base + L::K_OFF;
    const unsigned v_s = base + L::V_OFF;
    const unsigned bar = base + L::BAR_OFF;
    // barriers: q_full, q_empty, k_full[S], k_empty[S], v_full[S], v_empty[S]; then the
    // published tile index (s32).
#define MW_QFULL (bar)
#define MW_QEMPTY (bar + 8u)
#define MW_KFULL(s) (bar + 8u * (2u + (unsigned)(s)))
#define MW_KEMPTY(s) (bar + 8u * (2u + STAGES + (unsigned)(s)))
#define MW_VFULL(s) (bar + 8u * (2u + 2 * STAGES + (unsigned)(s)))
#define MW_VEMPTY(s) (bar + 8u * (2u + 3 * STAGES + (unsigned)(s)))
#define MW_SLOT (bar + 8u * (2u + 4 * STAGES))
// NSA: list_empty[2] (consumers are done with a list buffer) and the next tile for the producer WG.
#define MW_LEMPTY(b) (bar + 192u + 8u * (unsigned)(b))
#define MW_NEXT (bar + 208u)
    const unsigned nsa_s = base + L::BAR_OFF + 256u;
    const int nsa_bufw = NSA ? nsa_words(L::BM, nsa.nkv_max) : 0;

    const int tid = threadIdx.x;
    const int wg = tid >> 7;
    const int n_m = (Sq + BM - 1) / BM;
    const int total = n_m * H * B;
    // Work units: whole tiles below split_from, then split_c chunks of each later tile.
    // (Causal launches ignore the split arguments.)
    const int units = CAUSAL ? total : split_from + (total - split_from) * split_c;
    const int diag = Sk - Sq;                    // query i sees keys j <= i + diag

    if (tid == 0) {
        mbar_init(MW_QFULL, 1);
        mbar_init(MW_QEMPTY, EMPTY_ARRIVALS);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(MW_KFULL(s), 1);
            mbar_init(MW_KEMPTY(s), EMPTY_ARRIVALS);
            mbar_init(MW_VFULL(s), 1);
            mbar_init(MW_VEMPTY(s), EMPTY_ARRIVALS);
        }
        if constexpr (NSA) {
            mbar_init(MW_LEMPTY(0), EMPTY_ARRIVALS);
            mbar_init(MW_LEMPTY(1), EMPTY_ARRIVALS);
            unsigned dyn;
            asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
            if (dyn < L::SMEM + 2u * 4u * (unsigned)nsa_bufw + 4u * (unsigned)(BM * nsa.S) || nsa.nkv_max > 64 ||
                nsa.nkv_max * BN < Sq)
                __trap();
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // ------------------------------ producer ------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
        if constexpr (NSA) {
            // The whole producer warpgroup builds each tile's lists (thread i: token m0 + i),
            // then thread 0 publishes the tile and issues its TMA loads; the others wait for
            // the next tile index on named barrier NSA_BAR. Building tile k waits only for the
            // consumers to finish tile k − 2 (the other list buffer), so it overlaps the last
            // key tiles of tile k − 1.
            constexpr int NSA_BAR = 8;
            const int nkv_max = nsa.nkv_max;
            const int pw = tid >> 5, pl = tid & 31;
            if (tid == 0) {
                asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmQ)) : "memory");
                asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmK)) : "memory");
                asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmV)) : "memory");
            }
            int tile = blockIdx.x;
            unsigned it = 0;
            for (unsigned k = 0;; ++k) {
                if (tile >= units) {
                    if (tid == 0) {
                        mbar_wait(MW_QEMPTY, (k & 1u) ^ 1u);
                        st_shared_s32(MW_SLOT, -1);
                        mbar_arrive(MW_QFULL);  // publishes -1: the consumers stop
                    }
                    break;
                }
                const Tile w = decode_nsa<BM, BN>(tile, n_m, B, H, Hkv, Sq);
                const int b = w.bh / H, hq = w.bh - b * H, hkv = w.bhkv - b * Hkv;
                const unsigned buf = nsa_s + (k & 1u) * 4u * (unsigned)nsa_bufw;
                const unsigned masks = buf + 4u * (16u + (unsigned)nkv_max);
                const bool mine = tid < BM;  // producer threads past BM (NC = 1) build no token
                const int tok = w.m0 + tid;
                const int ext = (min(Sq, w.m0 + BM) - 1) / BN + 1;  // key tiles up to the last token
                // The CTA's first tile: Q's load goes out before the lists are built (its latency
                // and the build's overlap at launch); Q_FULL completes only with the arrival
                // after the build. Later tiles load Q after the build, once the consumers have
                // released the previous Q (Q_EMPTY), as mha does.
                if (k == 0 && tid == 0) {
                    st_shared_s32(MW_SLOT, tile);
                    mbar_expect_tx(MW_QFULL, L::Q_BYTES);
#pragma unroll
                    for (int c = 0; c < D / 64; ++c) tma_load_4d(q_s + c * L::Q_BOX, tmQ, MW_QFULL, 64 * c, hq, w.m0, b);
                }
                // This token's S slots, all in flight at once (cp.async into its staging row),
                // and its count, before waiting for the list buffer.
                const unsigned stage = nsa_s + 8u * (unsigned)nsa_bufw + 4u * (unsigned)(tid * nsa.S);
                int c = 0;
                if (mine && tok < Sq) {
                    const long long row = ((long long)b * Sq + tok) * Hkv + hkv;
                    const int* ip = nsa.idx + row * nsa.S;
                    for (int q = 0; q < nsa.S; ++q) cp_async4(stage + 4u * (unsigned)q, ip + q);
                    c = __ldg(nsa.cnt + row);
                    c = c < 0 ? 0 : (c > nsa.S ? nsa.S : c);
                }
                mbar_wait(MW_LEMPTY(k & 1u), ((k >> 1) & 1u) ^ 1u);
                if (mine)
                    for (int j = 0; j < ext; ++j) st_shared_u32(masks + 4u * (unsigned)(j * BM + tid), 0u);
                unsigned u0 = 0u, u1 = 0u;  // key tiles this token selected a block of
                cp_async_wait_all();
                for (int q = 0; q < c; ++q) {
                    const int id = ld_shared_s32(stage + 4u * (unsigned)q);
                    // Kept as the reference keeps it: 0 <= idx and idx·bs <= token.
                    if (id >= 0 && id <= tok / NSA_BS) {
                        const int kvt = id * NSA_BS / BN, kb = (id * NSA_BS % BN) / NSA_BS;
                        const unsigned a = masks + 4u * (unsigned)(kvt * BM + tid);
                        st_shared_u32(a, (unsigned)ld_shared_s32(a) + (1u << (8 * kb)));
                        if (kvt < 32) u0 |= 1u << kvt;
                        else u1 |= 1u << (kvt - 32);
                    }
                }
                u0 = __reduce_or_sync(0xffffffffu, u0);
                u1 = __reduce_or_sync(0xffffffffu, u1);
                if (pl == 0) {
                    st_shared_u32(buf + 4u * (8u + 2u * pw), u0);
                    st_shared_u32(buf + 4u * (9u + 2u * pw), u1);
                }
                named_sync(NSA_BAR, 128);
                if (tid == 0) {
                    unsigned a0 = 0u, a1 = 0u;
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        a0 |= (unsigned)ld_shared_s32(buf + 4u * (8u + 2u * q));
                        a1 |= (unsigned)ld_shared_s32(buf + 4u * (9u + 2u * q));
                    }
                    int n = 0;
                    for (; a0; a0 &= a0 - 1u) st_shared_s32(buf + 4u * (16u + n++), __ffs(a0) - 1);
                    for (; a1; a1 &= a1 - 1u) st_shared_s32(buf + 4u * (16u + n++), __ffs(a1) + 31);
                    st_shared_s32(buf, n);
                    if (k == 0) {
                        mbar_arrive(MW_QFULL);  // Q is on its way (above); the lists are ready
                    } else {
                        mbar_wait(MW_QEMPTY, (k & 1u) ^ 1u);
                        st_shared_s32(MW_SLOT, tile);
                        mbar_arrive_expect_tx(MW_QFULL, L::Q_BYTES);
#pragma unroll
                        for (int c = 0; c < D / 64; ++c)
                            tma_load_4d(q_s + c * L::Q_BOX, tmQ, MW_QFULL, 64 * c, hq, w.m0, b);
                    }
                    int next = 0;
                    auto fetch_next = [&]() {
                        next = sched ? (int)gridDim.x + (int)atomicAdd(sched, 1u) : tile + (int)gridDim.x;
                    };
                    if (n == 0) fetch_next();
                    for (int j = 0; j < n; ++j, ++it) {
                        if (j == n - 1) fetch_next();
                        const int key0 = ld_shared_s32(buf + 4u * (16u + j)) * BN;
                        const unsigned st = it % STAGES;
                        const unsigned ph = (it / STAGES) & 1u;
                        mbar_wait(MW_KEMPTY(st), ph ^ 1u);
                        mbar_arrive_expect_tx(MW_KFULL(st), L::KV_TILE);
#pragma unroll
                        for (int c = 0; c < D / 64; ++c)
                            tma_load_4d(k_s + st * L::KV_TILE + c * L::KV_BOX, tmK, MW_KFULL(st), 64 * c, hkv, key0, b);
                        mbar_wait(MW_VEMPTY(st), ph ^ 1u);
                        mbar_arrive_expect_tx(MW_VFULL(st), L::KV_TILE);
#pragma unroll
                        for (int c = 0; c < D / 64; ++c)
                            tma_load_4d(v_s + st * L::KV_TILE + c * L::KV_BOX, tmV, MW_VFULL(st), 64 * c, hkv, key0, b);
                    }
                    st_shared_s32(MW_NEXT, next);
                }
                named_sync(NSA_BAR, 128);
                tile = ld_shared_s32(MW_NEXT);
            }
            if (sched && tid == 0) {
                __threadfence();
                if (atomicAdd(sched + 1, 1u) == gridDim.x - 1) {
                    atomicExch(sched, 0u);
                    atomicExch(sched + 1, 0u);
                }
            }
        } else if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmQ)) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmK)) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmV)) : "memory");
            int tile = blockIdx.x;  // work unit (decode_unit)
            unsigned it = 0;  // K/V ring iteration over all tiles of this CTA
            for (unsigned k = 0;; ++k) {
                const bool valid = tile < units;
                // The next tile is fetched just before this tile's last K/V loads: late enough that
                // a CTA commits to it only about STAGES key tiles before it is free (balance at the
                // end of a causal launch), early enough that the atomic's latency stays hidden.
                int next = 0;
                auto fetch_next = [&]() {
                    next = sched ? (int)gridDim.x + (int)atomicAdd(sched, 1u) : tile + (int)gridDim.x;
                };
                // The consumers have read the previous index and finished with the previous Q.
                mbar_wait(MW_QEMPTY, (k & 1u) ^ 1u);
                st_shared_s32(MW_SLOT, valid ? tile : -1);
                if (!valid) {
                    mbar_arrive(MW_QFULL);  // publishes -1: the consumers stop
                    break;
                }
                const Tile w = decode_unit<BM, BN, CAUSAL>(tile, n_m, H, Hkv, Sq, Sk, split_from, split_c);
                mbar_arrive_expect_tx(MW_QFULL, L::Q_BYTES);
#pragma unroll
                for (int c = 0; c < D / 64; ++c) tma_load_3d(q_s + c * L::Q_BOX, tmQ, MW_QFULL, 64 * c, w.m0, w.bh);
                if (w.n_kv == 0) fetch_next();
                for (int j = 0; j < w.n_kv; ++j, ++it) {
                    if (j == w.n_kv - 1) fetch_next();
                    const unsigned s = it % STAGES;
                    const unsigned ph = (it / STAGES) & 1u;
                    mbar_wait(MW_KEMPTY(s), ph ^ 1u);
                    mbar_arrive_expect_tx(MW_KFULL(s), L::KV_TILE);
#pragma unroll
                    for (int c = 0; c < D / 64; ++c)
                        tma_load_3d(k_s + s * L::KV_TILE + c * L::KV_BOX, tmK, MW_KFULL(s), 64 * c, (w.j0 + j) * BN, w.bhkv);
                    mbar_wait(MW_VEMPTY(s), ph ^ 1u);
                    mbar_arrive_expect_tx(MW_VFULL(s), L::KV_TILE);
#pragma unroll
                    for (int c = 0; c < D / 64; ++c)
                        tma_load_3d(v_s + s * L::KV_TILE + c * L::KV_BOX, tmV, MW_VFULL(s), 64 * c, (w.j0 + j) * BN, w.bhkv);
                }
                tile = next;
            }
            if (sched) {
                // Every CTA's last fetch came before its increment here: the last CTA resets
                // the counter for the next launch.
                __threadfence();
                if (atomicAdd(sched + 1, 1u) == gridDim.x - 1) {
                    atomicExch(sched, 0u);
                    atomicExch(sched + 1, 0u);
                }
            }
        }
    } else {
        // ------------------------------ consumers ------------------------------
        if constexpr (NC == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
        else if constexpr (NC == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");  // NSA _bm64: 2 CTAs an SM
        else asm volatile("setmaxnreg.inc.sync.aligned.u32 160;");
        const int cw = wg - 1;  // which 64-row slice of the CTA tile
        const int warp = (tid >> 5) & 3;
        const int lane = tid & 31;
        const int g = lane >> 2, t = lane & 3;
        const unsigned q_wg = q_s + cw * 64 * 128;  // this WG's 64 rows inside each Q box
        const int ep_bar = NC + 1 + cw;             // this WG's own named barrier
        const unsigned o_wg = base + L::O_OFF + cw * (D / 64) * L::O_BOX;  // staging (L::STORE)
        const bool store_leader = L::STORE && warp == 0 && lane == 0;

        float o[D / 2];
        float s[BN / 2];
        unsigned p[BN / 16][4];
        unsigned qf[QREG ? D / 16 : 1][4];
        float row_m[2], row_l[2], corr[2];

        // Turn ring across tiles (MHA_WG_RING): when every tile has all NC consumer warpgroups
        // active (the last m-block too), the ping-pong order runs on from one tile to the next
        // (the last warpgroup's last hand-over of a tile gives warpgroup 0 its first turn of the
        // next), so warpgroup 0 issues the next tile's first Q·Kᵀ while the others finish the
        // tile's last P·V and epilogue, instead of waiting for all of them to reach the next
        // tile. The ring is opened once here and closed by warpgroup 0 at exit, so every
        // named-barrier phase still gets exactly 256 threads. Otherwise (a last m-block with
        // fewer active warpgroups) each tile runs its own closed order as before.
        // Causal entries with 2 consumer warpgroups only: measured on an H100 (GPU-d984dbeb,
        // kernels/dev/run_mha_wgmma.sh, ring vs -DMHA_WG_RING=0 in the same run) causal gained
        // 1-7% (b16 h32 s1024 d64 318 vs 297 TFLOP/s, b4 h32 s4096 d128 561 vs 552) while every
        // non-causal shape lost 0.5-2% (b1 h32 s16384 d128 638 vs 646). The BM 192 causal
        // entries (unused by the launcher) would spill 8 bytes for the flag at 160 registers.
        constexpr bool RING = MHA_WG_RING && PINGPONG && NC == 2 && CAUSAL && !NSA;
        const bool ring = RING && (Sq % BM == 0 || Sq % BM > 64 * (NC - 1));
        if (ring && cw == NC - 1) named_arrive(1, 256);
        unsigned it = 0;  // K/V ring iteration (as the producer's)
        for (unsigned k = 0;; ++k) {
            mbar_wait(MW_QFULL, k & 1u);
            const int tile = ld_shared_s32(MW_SLOT);
            if (tile < 0) {
                if (ring && cw == 0) named_sync(1, 256);  // the last warpgroup's final hand-over
                break;
            }
            const Tile w = NSA ? decode_nsa<BM, BN>(tile, n_m, B, H, Hkv, Sq)
                               : decode_unit<BM, BN, CAUSAL>(tile, n_m, H, Hkv, Sq, Sk, split_from, split_c);
            // NSA: this tile's list buffer (its key-tile count, the key tiles, the masks).
            const unsigned nbuf = NSA ? nsa_s + (k & 1u) * 4u * (unsigned)nsa_bufw : 0u;
            const int n_tiles = NSA ? ld_shared_s32(nbuf) : w.n_kv;
            const int jb = w.j0;  // key tile of loop index 0
            const int na = w.na;

            if (cw >= na) {
                // All 64 rows past Sq: no work, but the ring's arrival counts must stay exact.
                if (lane == 0) mbar_arrive(MW_QEMPTY);
                for (int j = 0; j < n_tiles; ++j, ++it) {
                    const unsigned st = it % STAGES;
                    const unsigned ph = (it / STAGES) & 1u;
                    mbar_wait(MW_KFULL(st), ph);
                    if (lane == 0) mbar_arrive(MW_KEMPTY(st));
                    mbar_wait(MW_VFULL(st), ph);
                    if (lane == 0) mbar_arrive(MW_VEMPTY(st));
                }
                if (NSA && lane == 0) mbar_arrive(MW_LEMPTY(k & 1u));
                continue;
            }

            const int wg_row0 = w.m0 + cw * 64;          // first query row of this warpgroup
            const int row0 = wg_row0 + warp * 16 + g;    // this thread's rows: row0, row0 + 8
            // NSA: the rows' gates g_slc[b, token, hq], loaded now and used in the epilogue.
            float gate[2] = {0.f, 0.f};
            if constexpr (NSA) {
                const int b = w.bh / H, hq = w.bh - b * H;
#pragma unroll
                for (int rr = 0; rr < 2; ++rr)
                    if (row0 + rr * 8 < Sq)
                        gate[rr] = static_cast<float>(nsa.g_slc[((size_t)b * Sq + row0 + rr * 8) * H + hq]);
            }
#pragma unroll
            for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
            row_m[0] = row_m[1] = MW_NEG_INF;
            row_l[0] = row_l[1] = 0.f;

            if constexpr (QREG) {
                // Q A-fragments of this warp's 16 rows (the mma.m16n8k16 A layout), then Q's
                // shared memory is released at once.
                const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;  // row in the WG slice
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk) {
                    const int chunk = 2 * (kk % 4) + (lane >> 4);
                    ldmatrix_x4(q_wg + (kk / 4) * L::Q_BOX + r * 128 + ((chunk ^ (r & 7)) << 4), qf[kk]);
                }
                __syncwarp();
                if (lane == 0) mbar_arrive(MW_QEMPTY);
            }
            // Q's shared memory is released after this WG's last Q·Kᵀ of the tile.
            auto release_q = [&](int j) {
                if (!QREG && j == n_tiles - 1 && lane == 0) mbar_arrive(MW_QEMPTY);
            };
            if (n_tiles == 0) release_q(-1);

            // Whether key tile j needs the per-element mask for this warpgroup's rows.
            auto edge_of = [&](int j) {
                const int n0 = (jb + j) * BN;
                return (n0 + BN > Sk) || (CAUSAL && n0 + BN - 1 > wg_row0 + diag);
            };
            // NSA: key tile j's index and this thread's rows' block multiplicities, read from the
            // list buffer by load_j (issued before the wait for S_j, so the shared-memory latency
            // hides under the GEMMs), used by softmax_j.
            int nkvt = 0;
            unsigned nmult[2] = {0u, 0u};
            auto load_j = [&](int j) {
                if constexpr (NSA) {
                    nkvt = ld_shared_s32(nbuf + 4u * (16u + (unsigned)j));
                    const unsigned mrow = nbuf + 4u * (16u + (unsigned)nsa.nkv_max + (unsigned)(nkvt * BM) +
                                                       (unsigned)(cw * 64 + warp * 16 + g));
                    nmult[0] = (unsigned)ld_shared_s32(mrow);
                    nmult[1] = (unsigned)ld_shared_s32(mrow + 32u);
                }
            };
            // The softmax step of key tile j (loop index).
            auto softmax_j = [&](int j) {
                if constexpr (NSA) {
                    softmax_nsa<BN, NSA_BS>(s, row_m, row_l, corr, nmult, nkvt * BN, row0,
                                            nkvt * BN + BN - 1 > wg_row0, scale_log2);
                } else {
                    softmax_step<BN, CAUSAL>(s, row_m, row_l, corr, edge_of(j), (jb + j) * BN, row0, Sk, diag, scale_log2);
                }
            };
            // K/V descriptors. PRE_DESC: the ring's base descriptors are built once, split in
            // words, and each wgmma adds its byte offset >> 4 to the low word (no carry: the
            // address field stays below 2^14); otherwise each wgmma builds its own. Measured on
            // H100 GPU-cd010b20 (kernels/dev/mha_wgmma_bench.cu, then the harness against the
            // stored baselines): built once, d128 and d64 non-causal ran 0.5-4% faster, d64
            // causal 3-6% slower (b4 h32 s4096 672 vs 639 us), so d64 causal builds per wgmma.
            constexpr bool PRE_DESC = !(D == 64 && CAUSAL);
            const unsigned long long k_desc0 = make_desc(k_s, 16, 1024);
            const unsigned long long v_desc0 = make_desc(v_s, L::KV_BOX, 1024);
            const unsigned k_lo = (unsigned)k_desc0, v_lo = (unsigned)v_desc0;
            const unsigned long long k_hi = k_desc0 & ~0xFFFFFFFFull, v_hi = v_desc0 & ~0xFFFFFFFFull;
            auto issue_s = [&](unsigned itj) {
                const unsigned st = itj % STAGES;
                const unsigned kd = k_lo + ((st * L::KV_TILE) >> 4);
                const unsigned kt = k_s + st * L::KV_TILE;
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk) {
                    const unsigned long long db = PRE_DESC
                        ? k_hi | (unsigned long long)(kd + (((kk / 4) * L::KV_BOX + (kk % 4) * 32) >> 4))
                        : make_desc(kt + (kk / 4) * L::KV_BOX + (kk % 4) * 32, 16, 1024);
                    if constexpr (QREG) {
                        wgmma_rs<BF16, BN, 0>(s, qf[kk], db, kk > 0 ? 1 : 0);
                    } else {
                        const unsigned long long da =
                            make_desc(q_wg + (kk / 4) * L::Q_BOX + (kk % 4) * 32, 16, 1024);
                        wgmma_ss<BF16, BN>(s, da, db, kk > 0 ? 1 : 0);
                    }
                }
            };
            auto issue_pv = [&](unsigned itj) {
                const unsigned st = itj % STAGES;
                const unsigned vd = v_lo + ((st * L::KV_TILE) >> 4);
                const unsigned vt = v_s + st * L::KV_TILE;
#pragma unroll
                for (int kk = 0; kk < BN / 16; ++kk) {
                    const unsigned long long db = PRE_DESC ? v_hi | (unsigned long long)(vd + ((kk * 2048) >> 4))
                                                           : make_desc(vt + kk * 2048, L::KV_BOX, 1024);
                    wgmma_rs<BF16, D, 1>(o, p[kk], db, 1);
                }
            };

            // Ping-pong among the na active warpgroups: c issues in its turn (barrier 1 + c)
            // and hands the turn to (c + 1) % na. All pass the same number of issue points
            // (n_tiles + 1 with OVERLAP, 2 n_tiles without); the last one gives WG 0 the first
            // turn and skips its own last hand-over, so every barrier phase gets exactly 256
            // threads and none is left half-arrived when the tile ends.
            const bool pp = PINGPONG && na > 1;
            int turns_left = OVERLAP ? n_tiles + 1 : 2 * n_tiles;
            if (!ring && pp && cw == na - 1 && n_tiles > 0) named_arrive(1, 256);
            auto turn_begin = [&]() {
                if (pp) named_sync(1 + cw, 256);
            };
            auto turn_end = [&]() {
                --turns_left;
                if (pp && (ring || cw != na - 1 || turns_left > 0))
                    named_arrive(1 + (cw + 1 == na ? 0 : cw + 1), 256);
            };

            if constexpr (!OVERLAP) {
                for (int j = 0; j < n_tiles; ++j, ++it) {
                    const unsigned st = it % STAGES;
                    const unsigned ph = (it / STAGES) & 1u;
                    mbar_wait(MW_KFULL(st), ph);
                    turn_begin();
                    wgmma_fence();
                    issue_s(it);
                    wgmma_commit();
                    turn_end();
                    wgmma_wait<0>();
                    if (lane == 0) mbar_arrive(MW_KEMPTY(st));
                    release_q(j);
                    load_j(j);
                    softmax_j(j);
                    rescale_o<D>(o, corr);
                    convert_p<T, BN>(s, p);
                    mbar_wait(MW_VFULL(st), ph);
                    turn_begin();
                    wgmma_fence();
                    issue_pv(it);
                    wgmma_commit();
                    turn_end();
                    wgmma_wait<0>();
                    if (lane == 0) mbar_arrive(MW_VEMPTY(st));
                }
            } else if (n_tiles > 0) {
                // Tile 0: S_0, softmax, P_0.
                {
                    const unsigned st = it % STAGES;
                    mbar_wait(MW_KFULL(st), (it / STAGES) & 1u);
                    turn_begin();
                    wgmma_fence();
                    issue_s(it);
                    wgmma_commit();
                    turn_end();
                    load_j(0);
                    wgmma_wait<0>();
                    if (lane == 0) mbar_arrive(MW_KEMPTY(st));
                    release_q(0);
                    softmax_j(0);
                    convert_p<T, BN>(s, p);  // O is still 0: no rescale
                }
                for (int j = 1; j < n_tiles; ++j) {
                    const unsigned itj = it + j, itp = itj - 1;
                    const unsigned st = itj % STAGES, sp = itp % STAGES;
                    mbar_wait(MW_KFULL(st), (itj / STAGES) & 1u);
                    mbar_wait(MW_VFULL(sp), (itp / STAGES) & 1u);
                    turn_begin();
                    wgmma_fence();
                    issue_s(itj);  // S_j = Q·K_jᵀ
                    wgmma_commit();
                    issue_pv(itp);  // O += P_{j-1}·V_{j-1}
                    wgmma_commit();
                    turn_end();
                    load_j(j);
                    wgmma_wait<1>();  // S_j done (P·V may still run)
                    if (lane == 0) mbar_arrive(MW_KEMPTY(st));
                    release_q(j);
                    softmax_j(j);
                    wgmma_wait<0>();  // P_{j-1}·V_{j-1} done: O and p are free
                    if (lane == 0) mbar_arrive(MW_VEMPTY(sp));
                    rescale_o<D>(o, corr);
                    convert_p<T, BN>(s, p);
                }
                const unsigned itl = it + n_tiles - 1;
                const unsigned sl = itl % STAGES;
                mbar_wait(MW_VFULL(sl), (itl / STAGES) & 1u);
                turn_begin();
                wgmma_fence();
                issue_pv(itl);
                wgmma_commit();
                turn_end();
                wgmma_wait<0>();
                if (lane == 0) mbar_arrive(MW_VEMPTY(sl));
                it += n_tiles;
            }

            // ------------------------------ epilogue ------------------------------
            if (NSA && lane == 0) mbar_arrive(MW_LEMPTY(k & 1u));  // done with the list buffer
            float lsum[2];
#pragma unroll
            for (int rr = 0; rr < 2; ++rr) {
                float l = row_l[rr];
                l += __shfl_xor_sync(0xffffffff, l, 1);
                l += __shfl_xor_sync(0xffffffff, l, 2);
                lsum[rr] = l;
            }
            // Split units exist only in non-causal launches (the host never splits a causal one;
            // compiling the merge there would cost the d128 causal entries a register spill).
            if (!CAUSAL && w.slot >= 0) {
                // One chunk of a split tile: this WG's unnormalised O, row max (log2 domain) and
                // row sum go to its partial record (per thread, in the thread's own fragment
                // order); the WG that completes the tile's count merges every chunk's record
                // into its registers and stores O as usual, the others go on to their next unit.
                constexpr int REC = D / 2 + 4;  // floats per thread
                const int tl = tid & 127;
                auto rec = [&](int chunk) {
                    return part + ((size_t)((w.slot * split_c + chunk) * NC + cw) * 128 + tl) * REC;
                };
                float* mine = rec(w.chunk);
#pragma unroll
                for (int i = 0; i < D / 8; ++i)
                    __stcg(reinterpret_cast<float4*>(mine) + i, make_float4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]));
                __stcg(reinterpret_cast<float4*>(mine) + D / 8, make_float4(row_m[0], row_m[1], lsum[0], lsum[1]));
                __threadfence();
                named_sync(ep_bar, 128);
                const unsigned flag = MW_SLOT + 8u + 4u * (unsigned)cw;
                if (warp == 0 && lane == 0) {
                    unsigned* cnt = part_cnt + w.slot * NC + cw;
                    const bool last = atomicAdd(cnt, 1u) == (unsigned)split_c - 1u;
                    if (last) atomicExch(cnt, 0u);  // every chunk has arrived: reset for the next launch
                    st_shared_s32(flag, last ? 1 : 0);
                }
                named_sync(ep_bar, 128);
                if (!ld_shared_s32(flag)) continue;
                __threadfence();
                float mx[2] = {row_m[0], row_m[1]};
                for (int c = 0; c < split_c; ++c) {
                    if (c == w.chunk) continue;
                    const float4 ml = __ldcg(reinterpret_cast<const float4*>(rec(c)) + D / 8);
                    mx[0] = fmaxf(mx[0], ml.x);
                    mx[1] = fmaxf(mx[1], ml.y);
                }
                // A row no chunk saw a key of keeps -inf: base 0, every scale exp2(-inf) = 0.
                const float b0 = mx[0] == MW_NEG_INF ? 0.f : mx[0], b1 = mx[1] == MW_NEG_INF ? 0.f : mx[1];
                {
                    const float s0 = fast_exp2(row_m[0] - b0), s1 = fast_exp2(row_m[1] - b1);
                    lsum[0] *= s0;
                    lsum[1] *= s1;
#pragma unroll
                    for (int i = 0; i < D / 8; ++i) {
                        o[4 * i] *= s0;
                        o[4 * i + 1] *= s0;
                        o[4 * i + 2] *= s1;
                        o[4 * i + 3] *= s1;
                    }
                }
                for (int c = 0; c < split_c; ++c) {
                    if (c == w.chunk) continue;
                    const float4* r = reinterpret_cast<const float4*>(rec(c));
                    const float4 ml = __ldcg(r + D / 8);
                    const float s0 = fast_exp2(ml.x - b0), s1 = fast_exp2(ml.y - b1);
                    lsum[0] += ml.z * s0;
                    lsum[1] += ml.w * s1;
#pragma unroll
                    for (int i = 0; i < D / 8; ++i) {
                        const float4 v = __ldcg(r + i);
                        o[4 * i] += v.x * s0;
                        o[4 * i + 1] += v.y * s0;
                        o[4 * i + 2] += v.z * s1;
                        o[4 * i + 3] += v.w * s1;
                    }
                }
            }
            float inv[2];
#pragma unroll
            for (int rr = 0; rr < 2; ++rr) inv[rr] = lsum[rr] > 0.f ? 1.f / lsum[rr] : 0.f;  // no visible key: O = 0
            if constexpr (L::STORE) {
            // The previous tile's store has finished reading the staging boxes.
            if (store_leader) bulk_wait_read();
            named_sync(ep_bar, 128);
#pragma unroll
            for (int rr = 0; rr < 2; ++rr) {
                const int r = warp * 16 + g + rr * 8;  // row in this WG's 64
#pragma unroll
                for (int i = 0; i < D / 8; ++i) {
                    const unsigned a = o_wg + (i / 8) * L::O_BOX + r * 128 + ((((i % 8) ^ (r & 7))) << 4) + t * 4;
                    st_shared_u32(a, Pack<T>::pack(o[4 * i + 2 * rr] * inv[rr], o[4 * i + 2 * rr + 1] * inv[rr]));
                }
            }
            fence_proxy_async();
            named_sync(ep_bar, 128);
            if (store_leader) {
#pragma unroll
                for (int c = 0; c < D / 64; ++c) tma_store_3d(tmO, o_wg + c * L::O_BOX, 64 * c, wg_row0, w.bh);
                bulk_commit();
            }
            } else if constexpr (NSA) {
            // o [B, T, HQ, D], times the selected branch's gate g_slc [B, T, HQ].
            const int b = w.bh / H, hq = w.bh - b * H;
#pragma unroll
            for (int rr = 0; rr < 2; ++rr) {
                const int tok = row0 + rr * 8;
                if (tok < Sq) {
                    const size_t r = ((size_t)b * Sq + tok) * H + hq;
                    const float sc = inv[rr] * gate[rr];
                    T* orow = O + r * D + 2 * t;
#pragma unroll
                    for (int i = 0; i < D / 8; ++i)
                        *reinterpret_cast<unsigned*>(orow + 8 * i) =
                            Pack<T>::pack(o[4 * i + 2 * rr] * sc, o[4 * i + 2 * rr + 1] * sc);
                }
            }
            } else {
#pragma unroll
            for (int rr = 0; rr < 2; ++rr) {
                const int row = row0 + rr * 8;
                if (row < Sq) {
                    T* orow = O + ((size_t)w.bh * Sq + row) * D + 2 * t;
#pragma unroll
                    for (int i = 0; i < D / 8; ++i)
                        *reinterpret_cast<unsigned*>(orow + 8 * i) =
                            Pack<T>::pack(o[4 * i + 2 * rr] * inv[rr], o[4 * i + 2 * rr + 1] * inv[rr]);
                }
            }
            }
        }
        if (store_leader) bulk_wait_read();  // shared memory stays valid until the stores have read it
    }
#undef MW_QFULL
#undef MW_QEMPTY
#undef MW_KFULL
#undef MW_KEMPTY
#undef MW_VFULL
#undef MW_VEMPTY
#undef MW_SLOT
#undef MW_LEMPTY
#undef MW_NEXT
}

}  // namespace mha_wg

#define MHA_WG_KERNEL(NAME, T, D, BN, STAGES, NC, CAUSAL)                                                            \
    extern "C" __global__ void __launch_bounds__(128 * (NC + 1), 1)                                             \
        NAME(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,                  \
             const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmO, T* O,            \
             unsigned* sched, int B, int H, int Hkv, int Sq, int Sk, float sl2, int split_from, int split_c,          \
             float* part, unsigned* part_cnt) {                                                                   \
        mha_wg::mha_body<T, D, BN, STAGES, NC, CAUSAL, MHA_WG_OVERLAP, MHA_WG_PINGPONG>(                 \
            &tmQ, &tmK, &tmV, &tmO, O, sched, B, H, Hkv, Sq, Sk, sl2, split_from, split_c, part, part_cnt);                                              \
    }

#ifndef MHA_WG_NO_ENTRIES  // kernels/nsa_wgmma.cu includes this file for its body only
MHA_WG_KERNEL(mha_wgmma_bf16_d64, __nv_bfloat16, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 2, false)
MHA_WG_KERNEL(mha_wgmma_bf16_d64_causal, __nv_bfloat16, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 2, true)
MHA_WG_KERNEL(mha_wgmma_bf16_d64_bm192, __nv_bfloat16, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 3, false)
MHA_WG_KERNEL(mha_wgmma_bf16_d64_bm192_causal, __nv_bfloat16, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 3, true)
MHA_WG_KERNEL(mha_wgmma_bf16_d128, __nv_bfloat16, 128, MHA_WG_BN_D128, MHA_WG_STAGES_D128, 2, false)
MHA_WG_KERNEL(mha_wgmma_bf16_d128_causal, __nv_bfloat16, 128, MHA_WG_BN, MHA_WG_STAGES_D128, 2, true)
MHA_WG_KERNEL(mha_wgmma_fp16_d64, __half, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 2, false)
MHA_WG_KERNEL(mha_wgmma_fp16_d64_causal, __half, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 2, true)
MHA_WG_KERNEL(mha_wgmma_fp16_d64_bm192, __half, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 3, false)
MHA_WG_KERNEL(mha_wgmma_fp16_d64_bm192_causal, __half, 64, MHA_WG_BN, MHA_WG_STAGES_D64, 3, true)
MHA_WG_KERNEL(mha_wgmma_fp16_d128, __half, 128, MHA_WG_BN_D128, MHA_WG_STAGES_D128, 2, false)
MHA_WG_KERNEL(mha_wgmma_fp16_d128_causal, __half, 128, MHA_WG_BN, MHA_WG_STAGES_D128, 2, true)
#endif
