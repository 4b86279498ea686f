// kernelgate `mha` on Hopper (sm_90a): FlashAttention-3 style forward, TMA + wgmma + mbarrier.
//
// Semantics: exactly those of kernels/mha.cu. Q, O are [B, H, Sq, D]; K, V are [B, Hkv, Sk, D],
// contiguous, bf16 or fp16, D = 64 or 128. Query head h reads key/value head h / (H / Hkv)
// (GQA/MQA). Causal masking is aligned to the end: query i sees keys j <= i + (Sk - Sq); a row
// that sees no key (only when Sq > Sk) gets O = 0. Any Sq, Sk >= 1. fp32 softmax/accumulation.
// The host passes scale_log2 = scale * log2(e).
//
// ---------------------------------------------------------------------------------------
// DESIGN
//   * CTA = 128 query rows of one (batch, head); grid (ceil(Sq/128), H, B), x reversed for
//     causal so the CTAs with the most key tiles start first. 384 threads = 3 warpgroups:
//       WG0 = producer: one thread issues all TMA loads; setmaxnreg.dec to 24 registers.
//       WG1, WG2 = consumers: WG1+c owns query rows 64c..64c+63 of the tile;
//                 setmaxnreg.inc to 240 registers.
//   * Shared memory (base rounded up to 1024 B, every tile 1024-B aligned, 128-byte swizzle):
//       Q:  D/64 TMA boxes {64 cols, 128 rows}, 16 KiB each (loaded once, barrier q_full).
//       K:  STAGES x (D/64 boxes {64 cols, BN rows}, BN*128 B each)   ring, k_full/k_empty.
//       V:  STAGES x (D/64 boxes {64 cols, BN rows})                   ring, v_full/v_empty.
//       Row r of a box is 128 B (64 elements), 16-B chunk c stored at chunk c ^ (r & 7) (TMA
//       SWIZZLE_128B), 8-row atoms of 1024 B. K and V have separate barriers so S = Q·Kᵀ can
//       start before V has landed. full: count 1 (producer arrive.expect_tx + TMA bytes);
//       empty: count 8 (lane 0 of each of the 8 consumer warps, after its wgmma.wait_group).
//   * Tensor maps are 3-D {D, S, B*heads} (innermost first), so rows past Sq / Sk are out of
//     bounds of their own head and TMA fills them with zeros (their scores are then masked to
//     -inf, never left at 0). The expect_tx byte count is always the full box size.
//   * S = Q·Kᵀ per consumer WG: wgmma.m64n{BN}k16, A = Q (smem, K-major SW128 descriptor,
//     SBO = 1024, start + 32 B per k16 step inside a 64-col box, + box size for the next box),
//     B = K tile (smem, K-major: key rows of 128 B, same descriptor form), trans-b = 0; the
//     first k16 step has scale-d = 0 (no zero fill of S).
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
//   * Intra-warpgroup overlap (FA3 algorithm 2, OVERLAP = true): in iteration j the WG issues
//     S_j = Q·K_jᵀ and then O += P_{j-1}·V_{j-1} back to back, waits for S_j only
//     (wait_group 1), does the softmax of S_j while P_{j-1}·V_{j-1} runs on the tensor cores,
//     then waits for it, rescales O and converts P_j.
//   * Ping-pong between the two consumer warpgroups (PINGPONG = true, FA3 section 3.1): each
//     warpgroup issues its GEMMs only in its turn (bar.sync on named barrier 1 + c, 256
//     threads) and hands the turn over right after issuing (bar.arrive on the other's barrier),
//     so one warpgroup's softmax overlaps the other's GEMMs. The mbarrier waits for data happen
//     before taking the turn. WG 1 gives WG 0 the first turn and skips its last hand-over, so
//     every named-barrier phase gets exactly 256 threads (both warpgroups pass the same number
//     of issue points; none when the CTA has no key tile).
//   * Masking only where needed: key tiles wholly past the causal diagonal are never loaded;
//     the per-element mask (key >= Sk, or causal key > row + Sk − Sq) runs on tiles that cross
//     the end of the keys or the diagonal of this warpgroup's rows.
//   * Epilogue: O / l (l = 0: O = 0) rounded to T, 4-byte stores straight from registers,
//     rows >= Sq skipped.
// ---------------------------------------------------------------------------------------
// HOST LAUNCH RECIPE (src/backend/cuda/mha.rs, kernels/dev/mha_wgmma_bench.cu)
//   elem = BFLOAT16 / FLOAT16; three 3-D maps, SWIZZLE_128B, INTERLEAVE_NONE,
//   L2_PROMOTION_L2_256B, FLOAT_OOB_FILL_NONE (zeros), elementStrides {1,1,1}:
//     tmQ: dims {D, Sq, B*H},   strides {D*2, Sq*D*2} bytes, box {64, 128, 1}
//     tmK: dims {D, Sk, B*Hkv}, strides {D*2, Sk*D*2},       box {64, BN, 1}
//     tmV: same as tmK on V
//   BN = MHA_WG_BN (128), STAGES = MHA_WG_STAGES_D64 / _D128 (3 / 2); MHA_WG_OVERLAP and
//   MHA_WG_PINGPONG (default 1) switch the two overlap features off for debugging.
//   dynamic smem = 1024 + 128*D*2 + 2*STAGES*BN*D*2 + 256 bytes
//     (D=64: 115968, D=128: 165120), set MAX_DYNAMIC_SHARED_SIZE_BYTES before launch
//   grid (ceil(Sq/128), H, B), block 384, no clusters
//   params {tmQ, tmK, tmV (__grid_constant__ CUtensorMap by value), O, H, Hkv, Sq, Sk, scale_log2}
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
#ifndef MHA_WG_STAGES_D64
#define MHA_WG_STAGES_D64 3
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

namespace mha_wg {

constexpr int BM = 128;
constexpr int EMPTY_ARRIVALS = 8;  // lane 0 of each consumer warp

static __device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
static __device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
static __device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}
static __device__ __forceinline__ void tma_load_3d(unsigned dst, const CUtensorMap* map, unsigned bar, int c0, int c1,
                                                   int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
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
static __device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
static __device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> static __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Named barriers 1 and 2 (0 is __syncthreads) order the two consumer warpgroups' GEMM issue
// (ping-pong): 256 threads = both consumer warpgroups.
static __device__ __forceinline__ void named_sync(int id) {
    asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory");
}
static __device__ __forceinline__ void named_arrive(int id) {
    asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory");
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

// D[64x64] (+)= A[64x16] (smem desc) * B[16x64] (smem desc, K-major: trans-b = 0).
template <bool BF16>
static __device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], unsigned long long da, unsigned long long db, int accum) {
#define MW_SS(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
    if constexpr (BF16) asm volatile(MW_SS("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(accum));
    else asm volatile(MW_SS("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "l"(da), "l"(db), "r"(accum));
#undef MW_SS
}

// D[64x64] += A[64x16] (registers, 4 x b32 per thread) * B[16x64] (smem desc, MN-major: trans-b = 1).
template <bool BF16>
static __device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db) {
#define MW_RS(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
    if constexpr (BF16) asm volatile(MW_RS("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    else asm volatile(MW_RS("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#undef MW_RS
}

// D[64x128] (+)= A[64x16] (smem desc) * B[16x128] (smem desc, K-major: trans-b = 0).
template <bool BF16>
static __device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], unsigned long long da, unsigned long long db, int accum) {
#define MW_SS(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
    if constexpr (BF16) asm volatile(MW_SS("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(accum));
    else asm volatile(MW_SS("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "l"(da), "l"(db), "r"(accum));
#undef MW_SS
}

// D[64x128] += A[64x16] (registers, 4 x b32 per thread) * B[16x128] (smem desc, MN-major: trans-b = 1).
template <bool BF16>
static __device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db) {
#define MW_RS(TY) "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
    if constexpr (BF16) asm volatile(MW_RS("bf16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
    else asm volatile(MW_RS("f16") : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#undef MW_RS
}

template <bool BF16, int N>
static __device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long da, unsigned long long db, int accum) {
    if constexpr (N == 128) wgmma_ss_n128<BF16>(d, da, db, accum);
    else wgmma_ss_n64<BF16>(d, da, db, accum);
}
template <bool BF16, int N>
static __device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long db) {
    if constexpr (N == 128) wgmma_rs_n128<BF16>(d, a, db);
    else wgmma_rs_n64<BF16>(d, a, db);
}

#define MW_NEG_INF __int_as_float(0xff800000)

template <int D, int BN, int STAGES> struct Layout {
    static constexpr unsigned Q_BOX = BM * 128;          // one 64-col box of Q
    static constexpr unsigned Q_BYTES = Q_BOX * (D / 64);
    static constexpr unsigned KV_BOX = BN * 128;         // one 64-col box of a K or V tile
    static constexpr unsigned KV_TILE = KV_BOX * (D / 64);
    static constexpr unsigned Q_OFF = 0;
    static constexpr unsigned K_OFF = Q_BYTES;
    static constexpr unsigned V_OFF = K_OFF + STAGES * KV_TILE;
    static constexpr unsigned BAR_OFF = V_OFF + STAGES * KV_TILE;
    static constexpr unsigned SMEM = 1024 + BAR_OFF + 256;  // + alignment slack + barriers
    static_assert(8 * (1 + 4 * STAGES) <= 256, "barrier area");
    static_assert(SMEM <= 232448, "shared memory");
};

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

template <typename T, int D, int BN, int STAGES, bool CAUSAL, bool OVERLAP, bool PINGPONG>
static __device__ __forceinline__ void mha_body(const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                                const CUtensorMap* tmV, T* __restrict__ O, int H, int Hkv,
                                                int Sq, int Sk, float scale_log2) {
    using L = Layout<D, BN, STAGES>;
    constexpr bool BF16 = Pack<T>::BF16;
    extern __shared__ __align__(16) unsigned char mw_smem[];
    const unsigned base = (smem_u32(mw_smem) + 1023u) & ~1023u;  // SW128 atoms: 1024 B aligned
    const unsigned q_s = base + L::Q_OFF;
    const unsigned k_s = base + L::K_OFF;
    const unsigned v_s = base + L::V_OFF;
    const unsigned bar = base + L::BAR_OFF;
    // barriers: q_full, k_full[S], k_empty[S], v_full[S], v_empty[S]
#define MW_QFULL (bar)
#define MW_KFULL(s) (bar + 8u * (1u + (unsigned)(s)))
#define MW_KEMPTY(s) (bar + 8u * (1u + STAGES + (unsigned)(s)))
#define MW_VFULL(s) (bar + 8u * (1u + 2 * STAGES + (unsigned)(s)))
#define MW_VEMPTY(s) (bar + 8u * (1u + 3 * STAGES + (unsigned)(s)))

    const int tid = threadIdx.x;
    const int wg = tid >> 7;
    const int m_block = CAUSAL ? (gridDim.x - 1 - blockIdx.x) : blockIdx.x;
    const int h = blockIdx.y, b = blockIdx.z;
    const int hk = h / (H / Hkv);
    const int m0 = m_block * BM;
    const int diag = Sk - Sq;  // query i sees keys j <= i + diag
    int n_tiles = (Sk + BN - 1) / BN;
    if (CAUSAL) {
        const int last_key = m0 + BM - 1 + diag;  // largest key any row of this CTA sees
        const int tt = last_key < 0 ? 0 : last_key / BN + 1;
        n_tiles = tt < n_tiles ? tt : n_tiles;
    }

    if (tid == 0) {
        mbar_init(MW_QFULL, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(MW_KFULL(s), 1);
            mbar_init(MW_KEMPTY(s), EMPTY_ARRIVALS);
            mbar_init(MW_VFULL(s), 1);
            mbar_init(MW_VEMPTY(s), EMPTY_ARRIVALS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // ------------------------------ producer ------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
        if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmQ)) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmK)) : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmV)) : "memory");
            const int bh_q = b * H + h, bh_kv = b * Hkv + hk;
            mbar_arrive_expect_tx(MW_QFULL, L::Q_BYTES);
#pragma unroll
            for (int c = 0; c < D / 64; ++c) tma_load_3d(q_s + c * L::Q_BOX, tmQ, MW_QFULL, 64 * c, m0, bh_q);
            for (int j = 0; j < n_tiles; ++j) {
                const unsigned s = (unsigned)j % STAGES;
                const unsigned ph = ((unsigned)j / STAGES) & 1u;
                mbar_wait(MW_KEMPTY(s), ph ^ 1u);
                mbar_arrive_expect_tx(MW_KFULL(s), L::KV_TILE);
#pragma unroll
                for (int c = 0; c < D / 64; ++c)
                    tma_load_3d(k_s + s * L::KV_TILE + c * L::KV_BOX, tmK, MW_KFULL(s), 64 * c, j * BN, bh_kv);
                mbar_wait(MW_VEMPTY(s), ph ^ 1u);
                mbar_arrive_expect_tx(MW_VFULL(s), L::KV_TILE);
#pragma unroll
                for (int c = 0; c < D / 64; ++c)
                    tma_load_3d(v_s + s * L::KV_TILE + c * L::KV_BOX, tmV, MW_VFULL(s), 64 * c, j * BN, bh_kv);
            }
        }
    } else {
        // ------------------------------ consumers ------------------------------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
        const int cw = wg - 1;  // which 64-row half of the CTA tile
        const int warp = (tid >> 5) & 3;
        const int lane = tid & 31;
        const int g = lane >> 2, t = lane & 3;
        const int wg_row0 = m0 + cw * 64;            // first query row of this warpgroup
        const int row0 = wg_row0 + warp * 16 + g;    // this thread's rows: row0, row0 + 8
        const unsigned q_wg = q_s + cw * 64 * 128;   // this WG's 64 rows inside each Q box

        float o[D / 2];
#pragma unroll
        for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
        float row_m[2] = {MW_NEG_INF, MW_NEG_INF}, row_l[2] = {0.f, 0.f};
        float s[BN / 2];
        unsigned p[BN / 16][4];
        float corr[2];

        mbar_wait(MW_QFULL, 0);

        // Whether key tile j needs the per-element mask for this warpgroup's rows.
        auto edge_of = [&](int j) {
            const int n0 = j * BN;
            return (n0 + BN > Sk) || (CAUSAL && n0 + BN - 1 > wg_row0 + diag);
        };
        auto issue_s = [&](int j) {
            const unsigned st = (unsigned)j % STAGES;
            const unsigned kt = k_s + st * L::KV_TILE;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const unsigned long long da = make_desc(q_wg + (kk / 4) * L::Q_BOX + (kk % 4) * 32, 16, 1024);
                const unsigned long long db = make_desc(kt + (kk / 4) * L::KV_BOX + (kk % 4) * 32, 16, 1024);
                wgmma_ss<BF16, BN>(s, da, db, kk > 0 ? 1 : 0);
            }
        };
        auto issue_pv = [&](int j) {
            const unsigned st = (unsigned)j % STAGES;
            const unsigned vt = v_s + st * L::KV_TILE;
#pragma unroll
            for (int kk = 0; kk < BN / 16; ++kk) {
                const unsigned long long db = make_desc(vt + kk * 2048, L::KV_BOX, 1024);
                wgmma_rs<BF16, D>(o, p[kk], db);
            }
        };

        // Ping-pong: warpgroup c issues its GEMMs only in its turn (named barrier 1 + c) and then
        // hands the turn to the other one (barrier 2 - c), so one warpgroup's softmax runs while
        // the other's GEMMs use the tensor cores. Both warpgroups pass the same number of issue
        // points (n_tiles + 1 with OVERLAP, 2 n_tiles without); WG 1 gives WG 0 the first turn
        // and skips its last hand-over, so every barrier phase gets exactly 256 threads and
        // none is left half-arrived at exit.
        int turns_left = OVERLAP ? n_tiles + 1 : 2 * n_tiles;
        if (PINGPONG && cw == 1 && n_tiles > 0) named_arrive(1);
        auto turn_begin = [&]() {
            if (PINGPONG) named_sync(1 + cw);
        };
        auto turn_end = [&]() {
            --turns_left;
            if (PINGPONG && (cw == 0 || turns_left > 0)) named_arrive(2 - cw);
        };

        if constexpr (!OVERLAP) {
            for (int j = 0; j < n_tiles; ++j) {
                const unsigned st = (unsigned)j % STAGES;
                const unsigned ph = ((unsigned)j / STAGES) & 1u;
                mbar_wait(MW_KFULL(st), ph);
                turn_begin();
                wgmma_fence();
                issue_s(j);
                wgmma_commit();
                turn_end();
                wgmma_wait<0>();
                if (lane == 0) mbar_arrive(MW_KEMPTY(st));
                softmax_step<BN, CAUSAL>(s, row_m, row_l, corr, edge_of(j), j * BN, row0, Sk, diag, scale_log2);
                rescale_o<D>(o, corr);
                convert_p<T, BN>(s, p);
                mbar_wait(MW_VFULL(st), ph);
                turn_begin();
                wgmma_fence();
                issue_pv(j);
                wgmma_commit();
                turn_end();
                wgmma_wait<0>();
                if (lane == 0) mbar_arrive(MW_VEMPTY(st));
            }
        } else if (n_tiles > 0) {
            // Tile 0: S_0, softmax, P_0.
            mbar_wait(MW_KFULL(0), 0);
            turn_begin();
            wgmma_fence();
            issue_s(0);
            wgmma_commit();
            turn_end();
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(MW_KEMPTY(0));
            softmax_step<BN, CAUSAL>(s, row_m, row_l, corr, edge_of(0), 0, row0, Sk, diag, scale_log2);
            convert_p<T, BN>(s, p);  // O is still 0: no rescale
            for (int j = 1; j < n_tiles; ++j) {
                const unsigned st = (unsigned)j % STAGES;
                const unsigned ph = ((unsigned)j / STAGES) & 1u;
                const unsigned sp = (unsigned)(j - 1) % STAGES;
                const unsigned php = ((unsigned)(j - 1) / STAGES) & 1u;
                mbar_wait(MW_KFULL(st), ph);
                mbar_wait(MW_VFULL(sp), php);
                turn_begin();
                wgmma_fence();
                issue_s(j);  // S_j = Q·K_jᵀ
                wgmma_commit();
                issue_pv(j - 1);  // O += P_{j-1}·V_{j-1}
                wgmma_commit();
                turn_end();
                wgmma_wait<1>();  // S_j done (P·V may still run)
                if (lane == 0) mbar_arrive(MW_KEMPTY(st));
                softmax_step<BN, CAUSAL>(s, row_m, row_l, corr, edge_of(j), j * BN, row0, Sk, diag, scale_log2);
                wgmma_wait<0>();  // P_{j-1}·V_{j-1} done: O and p are free
                if (lane == 0) mbar_arrive(MW_VEMPTY(sp));
                rescale_o<D>(o, corr);
                convert_p<T, BN>(s, p);
            }
            const int jl = n_tiles - 1;
            const unsigned sl = (unsigned)jl % STAGES;
            mbar_wait(MW_VFULL(sl), ((unsigned)jl / STAGES) & 1u);
            turn_begin();
            wgmma_fence();
            issue_pv(jl);
            wgmma_commit();
            turn_end();
            wgmma_wait<0>();
            if (lane == 0) mbar_arrive(MW_VEMPTY(sl));
        }

        // ------------------------------ epilogue ------------------------------
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
            float l = row_l[rr];
            l += __shfl_xor_sync(0xffffffff, l, 1);
            l += __shfl_xor_sync(0xffffffff, l, 2);
            const float inv = l > 0.f ? 1.f / l : 0.f;  // no visible key: O = 0
            const int row = row0 + rr * 8;
            if (row < Sq) {
                T* orow = O + ((size_t)(b * H + h) * Sq + row) * D + 2 * t;
#pragma unroll
                for (int i = 0; i < D / 8; ++i)
                    *reinterpret_cast<unsigned*>(orow + 8 * i) =
                        Pack<T>::pack(o[4 * i + 2 * rr] * inv, o[4 * i + 2 * rr + 1] * inv);
            }
        }
    }
#undef MW_QFULL
#undef MW_KFULL
#undef MW_KEMPTY
#undef MW_VFULL
#undef MW_VEMPTY
}

}  // namespace mha_wg

#define MHA_WG_KERNEL(NAME, T, D, STAGES, CAUSAL, OVERLAP)                                                      \
    extern "C" __global__ void __launch_bounds__(384, 1)                                                     \
        NAME(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,               \
             const __grid_constant__ CUtensorMap tmV, T* O, int H, int Hkv, int Sq, int Sk, float sl2) {     \
        mha_wg::mha_body<T, D, MHA_WG_BN, STAGES, CAUSAL, OVERLAP, MHA_WG_PINGPONG>(&tmQ, &tmK, &tmV, O, H, Hkv, Sq, Sk, sl2); \
    }

MHA_WG_KERNEL(mha_wgmma_bf16_d64, __nv_bfloat16, 64, MHA_WG_STAGES_D64, false, MHA_WG_OVERLAP)
MHA_WG_KERNEL(mha_wgmma_bf16_d64_causal, __nv_bfloat16, 64, MHA_WG_STAGES_D64, true, MHA_WG_OVERLAP)
MHA_WG_KERNEL(mha_wgmma_bf16_d128, __nv_bfloat16, 128, MHA_WG_STAGES_D128, false, MHA_WG_OVERLAP)
MHA_WG_KERNEL(mha_wgmma_bf16_d128_causal, __nv_bfloat16, 128, MHA_WG_STAGES_D128, true, MHA_WG_OVERLAP)
MHA_WG_KERNEL(mha_wgmma_fp16_d64, __half, 64, MHA_WG_STAGES_D64, false, MHA_WG_OVERLAP)
MHA_WG_KERNEL(mha_wgmma_fp16_d64_causal, __half, 64, MHA_WG_STAGES_D64, true, MHA_WG_OVERLAP)
MHA_WG_KERNEL(mha_wgmma_fp16_d128, __half, 128, MHA_WG_STAGES_D128, false, MHA_WG_OVERLAP)
MHA_WG_KERNEL(mha_wgmma_fp16_d128_causal, __half, 128, MHA_WG_STAGES_D128, true, MHA_WG_OVERLAP)
