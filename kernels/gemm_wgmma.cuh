// gemm_wgmma.cuh -- the Hopper wgmma GEMM's device code: tile configurations, the persistent
// CTA body (gemm_body), the split-K reduction and the padding copy. The design, the launch
// recipe and the measurements are in gemm_wgmma.cu's header; that file and gemm_wgmma_uc.cu
// (N not a multiple of 8, C written in place) define the entry points.
#pragma once

#include <cuda_bf16.h>
// Epilogue without split-K: 1 = 16-byte stores after a transpose inside each quad (every store
// of a warp covers 64 contiguous bytes of 8 rows), 0 = the first version's 4-byte stores (16
// bytes of a row per warp store: half a 32-byte sector).
#ifndef GW_EPI16
#define GW_EPI16 1
#endif
// GW_OVL3=0 builds 192x192_ts without the overlapped epilogue and skewed tail of session 44 (an
// A/B control: kernels/dev/gemm_define_patch.py sets these switches in a copy)
#ifndef GW_OVL3
#define GW_OVL3 1
#endif
// GW_LASTSTAGE=0 builds 192x192_ts's last warpgroup storing its last tile through its one staging
// box (as 128x256_ts does with its two) instead of all at once from the freed stage ring
#ifndef GW_LASTSTAGE
#define GW_LASTSTAGE 1
#endif
// GW_C2_OVL=1 gives 128x256_c2_ts the plain 128x256_ts's overlapped epilogue and skewed tail;
// GW_C2_RELAXED=1 makes the cluster entries' start-up cluster barrier arrive .relaxed (session 44;
// both off builds session 43's cluster entries, the A/B control)
#ifndef GW_C2_OVL
#define GW_C2_OVL 1
#endif
#ifndef GW_C2_RELAXED
#define GW_C2_RELAXED 1
#endif
#include <cuda_fp16.h>

#if !defined(__cuda_cuda_h__) && !defined(GEMM_WGMMA_HAVE_CUTENSORMAP)
#define GEMM_WGMMA_HAVE_CUTENSORMAP
struct alignas(64) CUtensorMap {
    unsigned long long opaque[16];
};
#endif

namespace gemm_wgmma_detail {

constexpr int BK = 64;
constexpr int GROUP_M = 8;
constexpr unsigned B_BOX_BYTES = 64 * BK * 2;  // 8192: one {64 N, 64 K} box of B

// One CTA tile configuration (see the table in the header): NC consumer warpgroups of 64 rows,
// BN columns, STAGES-deep smem ring.
template <int NC_, int BN_, int STAGES_>
struct Cfg {
    static constexpr int NC = NC_;
    static constexpr int BM = 64 * NC_;
    static constexpr int BN = BN_;
    static constexpr int STAGES = STAGES_;
    static constexpr int THREADS = 128 * (NC_ + 1);
    static constexpr unsigned A_STAGE_BYTES = BM * BK * 2;
    static constexpr unsigned B_STAGE_BYTES = BK * BN * 2;
    static constexpr unsigned STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    // tiles + 1024 B alignment slack + 128 B for the 2*STAGES mbarriers
    static constexpr unsigned SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + 128;
    // TS (TMA-store epilogue): the barriers' block rounded to 1024 B, then EPI_NBUF 64 x 64
    // staging boxes (8 KiB each, SW128) per consumer warpgroup: two where they fit in the
    // 227 KiB, else one (192x192: 4 stages + 2048 + 3 x 2 x 8 KiB = 247808 B would not).
    static constexpr unsigned EPI_BOX_BYTES = 64 * 64 * 2;
    static constexpr unsigned EPI_NBUF =
        STAGES * STAGE_BYTES + 2048 + NC_ * 2 * EPI_BOX_BYTES <= 232448 ? 2 : 1;
    static constexpr unsigned SMEM_BYTES_TS =
        STAGES * STAGE_BYTES + 1024 + 1024 + NC_ * EPI_NBUF * EPI_BOX_BYTES;
    static_assert(NC_ >= 1 && NC_ <= 3, "one to three consumer warpgroups");
    static_assert(BN_ == 64 || BN_ == 128 || BN_ == 192 || BN_ == 256,
                  "wgmma n64, n128, n192 or n256");
    static_assert(2 * STAGES_ * 8 <= 128, "mbarriers fit their 128 bytes");
    static_assert(SMEM_BYTES <= 232448, "at most 227 KiB of dynamic smem per CTA");
};

typedef Cfg<2, 256, 4> Cfg128x256;
typedef Cfg<2, 128, 6> Cfg128x128;
typedef Cfg<1, 256, 5> Cfg64x256;
typedef Cfg<1, 128, 4> Cfg64x128;
typedef Cfg<2, 192, 5> Cfg128x192;
typedef Cfg<2, 64, 8> Cfg128x64;
typedef Cfg<3, 192, 4> Cfg192x192;
// The host (src/backend/cuda/gemm_wgmma.rs, kernels/dev/gemm_wgmma_bench.cu) uses these sizes.
static_assert(Cfg128x256::SMEM_BYTES == 197760, "host recipe: 128x256 uses 197760 bytes");
static_assert(Cfg128x128::SMEM_BYTES == 197760, "host recipe: 128x128 uses 197760 bytes");
static_assert(Cfg64x256::SMEM_BYTES == 205952, "host recipe: 64x256 uses 205952 bytes");
static_assert(Cfg64x128::SMEM_BYTES == 99456, "host recipe: 64x128 uses 99456 bytes");
static_assert(Cfg128x192::SMEM_BYTES == 205952, "host recipe: 128x192 uses 205952 bytes");
static_assert(Cfg128x64::SMEM_BYTES == 197760, "host recipe: 128x64 uses 197760 bytes");
static_assert(Cfg192x192::SMEM_BYTES == 197760, "host recipe: 192x192 uses 197760 bytes");
static_assert(Cfg128x256::SMEM_BYTES_TS == 231424, "host recipe: 128x256_ts uses 231424 bytes");
static_assert(Cfg128x128::SMEM_BYTES_TS == 231424, "host recipe: 128x128_ts uses 231424 bytes");
static_assert(Cfg128x64::SMEM_BYTES_TS == 231424, "host recipe: 128x64_ts uses 231424 bytes");
static_assert(Cfg192x192::SMEM_BYTES_TS == 223232, "host recipe: 192x192_ts uses 223232 bytes");
static_assert(Cfg128x192::SMEM_BYTES_TS == 223232, "host recipe: 128x192_ts uses 223232 bytes");

// B (MN-major, SW128) descriptor strides: LBO = byte distance between 64-element N atoms
// (the 4 TMA boxes, 8 KiB apart), SBO = byte distance between groups of 8 K rows (1 KiB).
constexpr unsigned B_DESC_LBO = B_BOX_BYTES;
constexpr unsigned B_DESC_SBO = 1024;

#include "hopper_sync.cuh"

static __device__ __forceinline__ void tma_load_2d(unsigned dst, const CUtensorMap* map, unsigned bar,
                                                   int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1)
        : "memory");
}

// Multicast variant: the box lands at the same smem offset in every CTA of cta_mask, and each
// of those CTAs' mbarrier at offset `bar` receives the complete_tx of its bytes.
static __device__ __forceinline__ void tma_load_2d_mc(unsigned dst, const CUtensorMap* map,
                                                      unsigned bar, int c0, int c1,
                                                      unsigned short cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1), "h"(cta_mask)
        : "memory");
}

// Arrive on the mbarrier at local offset `bar` of cluster CTA `rank` (possibly this one), with
// the default (.cta) release: the arrival only says that this warpgroup's wgmma reads of the
// stage are complete (wgmma.wait_group before it), and the peer's producer overwrites the
// stage through the async proxy after its wait on the barrier. `.release.cluster` compiled to
// MEMBAR.ALL.CTA + MEMBAR.ALL.GPU before each arrive (two per stage per consumer warpgroup, in
// the main loop), which made the _c2 tiles 1.35-4x slower than the plain ones (session 14,
// Nsight Compute on an H100: membar and long-scoreboard stalls; SASS of the entries).
static __device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_map(bar, rank)) : "memory");
}

// Programmatic dependent launch (the host launches every kernel of a sequence after the first
// with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION): let the next kernel of the stream
// start its launch now, and wait until the previous one has finished and its writes are
// visible. Both are no-ops for a kernel launched the ordinary way.
static __device__ __forceinline__ void pdl_launch_next() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
static __device__ __forceinline__ void pdl_wait_previous() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

// TMA-store epilogue pieces: four 8x8 b16 matrices from registers into shared memory (lane
// 8i + r gives the address of row r of matrix i), a 2-D tensor store of a staged box, the bulk
// group bookkeeping, and a named barrier over one consumer warpgroup.
static __device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned r0, unsigned r1,
                                                   unsigned r2, unsigned r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr),
                 "r"(r0), "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}
static __device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, unsigned src, int c0,
                                                    int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
}
static __device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
static __device__ __forceinline__ void bulk_wait_all() {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
static __device__ __forceinline__ void named_bar_arrive(unsigned id, unsigned threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
static __device__ __forceinline__ void named_bar_sync(unsigned id, unsigned threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// wgmma shared-memory matrix descriptor, 128-byte swizzle.
static __device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo,
                                                               unsigned sbo) {
    unsigned long long d = 0;
    d |= (unsigned long long)((addr & 0x3FFFF) >> 4);
    d |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;
    d |= 1ull << 62;  // SWIZZLE_128B
    return d;
}

#define GW_WGMMA_ASM_N256(TY)                                                   \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                  \
    "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {"          \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"  \
    "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"  \
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"  \
    "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"  \
    "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"  \
    "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"  \
    "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,"  \
    "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"  \
    "}, %128, %129, p, 1, 1, 0, 1;\n}\n"

#define GW_D_OPERANDS_N256 \
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

#define GW_WGMMA_ASM_N128(TY)                                                   \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                  \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {"          \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"  \
    "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"  \
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"  \
    "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"  \
    "}, %64, %65, p, 1, 1, 0, 1;\n}\n"

#define GW_D_OPERANDS_N128 \
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

#define GW_WGMMA_ASM_N192(TY)                                                   \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"                  \
    "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY " {"          \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"  \
    "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"  \
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"  \
    "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"  \
    "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,"  \
    "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95"  \
    "}, %96, %97, p, 1, 1, 0, 1;\n}\n"

#define GW_D_OPERANDS_N192 \
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])

#define GW_WGMMA_ASM_N64(TY)                                                    \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                  \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {"          \
    "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"  \
    "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"  \
    "}, %32, %33, p, 1, 1, 0, 1;\n}\n"

#define GW_D_OPERANDS_N64 \
        "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

template <bool BF16, int BN>
static __device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], unsigned long long da,
                                                  unsigned long long db) {
    if constexpr (BN == 256) {
        if constexpr (BF16) {
            asm volatile(GW_WGMMA_ASM_N256("bf16") : GW_D_OPERANDS_N256 : "l"(da), "l"(db), "r"(1));
        } else {
            asm volatile(GW_WGMMA_ASM_N256("f16") : GW_D_OPERANDS_N256 : "l"(da), "l"(db), "r"(1));
        }
    } else if constexpr (BN == 64) {
        if constexpr (BF16) {
            asm volatile(GW_WGMMA_ASM_N64("bf16") : GW_D_OPERANDS_N64 : "l"(da), "l"(db), "r"(1));
        } else {
            asm volatile(GW_WGMMA_ASM_N64("f16") : GW_D_OPERANDS_N64 : "l"(da), "l"(db), "r"(1));
        }
    } else if constexpr (BN == 192) {
        if constexpr (BF16) {
            asm volatile(GW_WGMMA_ASM_N192("bf16") : GW_D_OPERANDS_N192 : "l"(da), "l"(db), "r"(1));
        } else {
            asm volatile(GW_WGMMA_ASM_N192("f16") : GW_D_OPERANDS_N192 : "l"(da), "l"(db), "r"(1));
        }
    } else {
        if constexpr (BF16) {
            asm volatile(GW_WGMMA_ASM_N128("bf16") : GW_D_OPERANDS_N128 : "l"(da), "l"(db), "r"(1));
        } else {
            asm volatile(GW_WGMMA_ASM_N128("f16") : GW_D_OPERANDS_N128 : "l"(da), "l"(db), "r"(1));
        }
    }
}


template <typename T>
struct Pack2;
template <>
struct Pack2<__nv_bfloat16> {
    typedef __nv_bfloat162 type;
    static __device__ __forceinline__ type make(float a, float b) {
        return __floats2bfloat162_rn(a, b);
    }
};
template <>
struct Pack2<__half> {
    typedef __half2 type;
    static __device__ __forceinline__ type make(float a, float b) { return __floats2half2_rn(a, b); }
};

// The bits of a rounded pair (lo = a) as one 32-bit word.
template <typename T>
static __device__ __forceinline__ unsigned pack2_bits(float a, float b) {
    typename Pack2<T>::type v = Pack2<T>::make(a, b);
    return *reinterpret_cast<unsigned*>(&v);
}

// p[i] for a run-time i in 0..3, by selects (no local-memory array).
static __device__ __forceinline__ unsigned sel4(const unsigned (&p)[4], int i) {
    const unsigned lo = (i & 1) ? p[1] : p[0];
    const unsigned hi = (i & 1) ? p[3] : p[2];
    return (i & 2) ? hi : lo;
}

// The EPI16 epilogue's quad transpose: lane t of a quad gets block 4j + t (eight consecutive
// columns) of row half h as four packed pairs, element 2q in the low half of o[q]; d is the
// warpgroup's m64nBN accumulator fragment.
template <typename T, int BN>
static __device__ __forceinline__ void quad_block(const float (&d)[BN / 2], int j, int h, int t,
                                                  int qbase, unsigned (&o)[4]) {
    unsigned p[4];
#pragma unroll
    for (int q = 0; q < 4; ++q)
        p[q] = pack2_bits<T>(d[4 * (4 * j + q) + 2 * h], d[4 * (4 * j + q) + 2 * h + 1]);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        // lane s sends its pair of block 4j + ((s - r) & 3) and receives from lane (t + r) & 3
        // that lane's pair of block 4j + t
        const unsigned v = __shfl_sync(0xffffffffu, sel4(p, (t - r) & 3), qbase | ((t + r) & 3));
        const int slot = (t + r) & 3;
#pragma unroll
        for (int q = 0; q < 4; ++q) o[q] = slot == q ? v : o[q];
    }
}

// Elements lo .. hi - 1 (clamped to 0 .. 7) of eight (o: four packed pairs, element 2q in the
// low half of o[q]) at p, 16-byte aligned: one vector store when all eight are wanted, else at
// most five stores of naturally aligned pieces (16, 32, 64, 32, 16 bits; three at most for a
// run that starts or ends the chunk).
static __device__ __forceinline__ void store8_span(unsigned short* p, const unsigned (&o)[4], int lo,
                                                   int hi) {
    int a = lo < 0 ? 0 : lo;
    const int b = hi > 8 ? 8 : hi;
    if (a == 0 && b == 8) {
        *reinterpret_cast<uint4*>(p) = make_uint4(o[0], o[1], o[2], o[3]);
        return;
    }
    if (a < b && (a & 1)) {
        p[a] = (unsigned short)(sel4(o, a >> 1) >> 16);
        ++a;
    }
    if (a + 2 <= b && (a & 2)) {
        *reinterpret_cast<unsigned*>(p + a) = sel4(o, a >> 1);
        a += 2;
    }
    if (a + 4 <= b) {  // a is 0 or 4 here
        *reinterpret_cast<uint2*>(p + a) = a == 0 ? make_uint2(o[0], o[1]) : make_uint2(o[2], o[3]);
        a += 4;
    }
    if (a + 2 <= b) {
        *reinterpret_cast<unsigned*>(p + a) = sel4(o, a >> 1);
        a += 2;
    }
    if (a < b) p[a] = (unsigned short)sel4(o, a >> 1);
}

// Elements e .. e + 7 of (prev ++ own), sixteen elements as eight packed pairs, e = 1 .. 8 at run
// time (k = e / 2): words k .. k + 4 by selects, then shifted by one element when e is odd.
static __device__ __forceinline__ void realign8(const unsigned (&prev)[4], const unsigned (&own)[4],
                                                int e, unsigned (&out)[4]) {
    const int k = e >> 1;
    const unsigned w[8] = {prev[0], prev[1], prev[2], prev[3], own[0], own[1], own[2], own[3]};
    unsigned a[7], b[5];
#pragma unroll
    for (int i = 0; i < 7; ++i) a[i] = (k & 1) ? w[i + 1] : w[i];
#pragma unroll
    for (int i = 0; i < 5; ++i) b[i] = (k & 2) ? a[i + 2] : a[i];
#pragma unroll
    for (int i = 0; i < 4; ++i) b[i] = (k & 4) ? w[i + 4] : b[i];
#pragma unroll
    for (int q = 0; q < 4; ++q) out[q] = __funnelshift_r(b[q], b[q + 1], 16 * (e & 1));
}

// The UC epilogue (gemm_wgmma_uc.cu: C N wide, N any) of one row of a tile: tile columns
// 0 .. BN - 1 are C's columns cbase .. cbase + BN - 1 of `row`, and row half h of the fragment.
// The row's first element sits s elements into a 16-byte chunk of memory (s = 0 .. 7, by the
// row's address). Each lane stores the aligned 16-byte chunk that starts s elements before its
// block of eight: the previous lane's last s elements, then its own first 8 - s (the quad's
// lane 0 takes the previous 32 columns' lane 3 block, carried over). So every store of a warp
// covers whole sectors, as in the aligned case. Three chunks per row are stored in pieces
// (store8_span) after the loop, where only part of them is this tile's: the first (before
// column 0 the neighbouring tile's), the one that column N cuts, and the s elements past the
// last aligned chunk. Keeping them out of the loop keeps the unrolled epilogue short (session
// 39: with an element-by-element path in every chunk, small shapes ran up to 1.5x slower).
template <typename T, int BN>
static __device__ __forceinline__ void uc_store_row(T* C, const float (&d)[BN / 2], int h, int row,
                                                    int M, int N, int cbase, int t, int qbase) {
    unsigned short* rowp = reinterpret_cast<unsigned short*>(C) + (size_t)row * N + cbase;
    const int s = (int)((reinterpret_cast<unsigned long long>(rowp) >> 1) & 7ull);
    const int e = 8 - s;  // where the chunk starts in (previous block ++ own block), 1 .. 8
    const int width = N - cbase;  // columns of the tile inside C
    unsigned carry[4] = {0u, 0u, 0u, 0u};
    unsigned first[4], cut[4], own[4];
    int cut_x0 = BN;  // no cut chunk
#pragma unroll
    for (int j = 0; j < BN / 32; ++j) {
        unsigned prev[4];
        quad_block<T, BN>(d, j, h, t, qbase, own);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            // the previous lane's block; lane 0 gets lane 3's, which it needs one step later
            const unsigned v = __shfl_sync(0xffffffffu, own[q], qbase | ((t + 3) & 3));
            prev[q] = t == 0 ? carry[q] : v;
            carry[q] = v;
        }
        unsigned out[4];
        realign8(prev, own, e, out);
        const int x0 = 32 * j + 8 * t - s;  // the chunk's first tile column
        if (j == 0) {
#pragma unroll
            for (int q = 0; q < 4; ++q) first[q] = out[q];
        } else if (x0 + 8 <= width) {
            if (row < M) *reinterpret_cast<uint4*>(rowp + x0) = make_uint4(out[0], out[1], out[2], out[3]);
        } else if (x0 < width) {
            cut_x0 = x0;
#pragma unroll
            for (int q = 0; q < 4; ++q) cut[q] = out[q];
        }
    }
    if (row >= M) return;
    store8_span(rowp - s + 8 * t, first, s - 8 * t, width + s - 8 * t);
    if (cut_x0 < BN) store8_span(rowp + cut_x0, cut, 0, width - cut_x0);
    // the s elements after the last aligned chunk: the quad's lane 3 block's last s
    if (t == 3 && s != 0) {
        const unsigned none[4] = {0u, 0u, 0u, 0u};
        unsigned tail[4];
        realign8(own, none, e, tail);
        store8_span(rowp + BN - s, tail, 0, s < width - (BN - s) ? s : width - (BN - s));
    }
}

static __device__ __forceinline__ void tile_coords(int t, int num_tm, int num_tn, int& tm, int& tn) {
    const int per_group = GROUP_M * num_tn;
    const int group = t / per_group;
    const int first_tm = group * GROUP_M;
    int gsize = num_tm - first_tm;
    gsize = gsize < GROUP_M ? gsize : GROUP_M;
    const int r = t - group * per_group;
    tm = first_tm + r % gsize;
    tn = r / gsize;
}


// One persistent CTA of tile configuration CF: units = tiles x splits (see the header).
// CL = 2: the CTA is one of a 2-CTA cluster working on vertically adjacent tiles (same B
// columns); see "CLUSTER ENTRIES" in the header.
// UC: N is C's own width, any value (gemm_wgmma_uc.cu); the register epilogue stores with
// uc_store_row. Without K splits only.
template <typename T, bool BF16, class CF, int CL, bool PN = false, bool TS = false,
          bool UC = false>
static __device__ __forceinline__ void gemm_body(const CUtensorMap* tmA, const CUtensorMap* tmB,
                                                 T* __restrict__ C, float* __restrict__ P, int M,
                                                 int N, int K, int splits,
                                                 const CUtensorMap* tmC = nullptr) {
    constexpr int BM = CF::BM;
    constexpr int BN = CF::BN;
    constexpr int STAGES = CF::STAGES;
    constexpr int NC = CF::NC;
    constexpr unsigned A_STAGE_BYTES = CF::A_STAGE_BYTES;
    constexpr unsigned B_STAGE_BYTES = CF::B_STAGE_BYTES;
    constexpr unsigned STAGE_BYTES = CF::STAGE_BYTES;
    extern __shared__ __align__(16) unsigned char gw_smem[];

    const unsigned base = (smem_u32(gw_smem) + 1023u) & ~1023u;  // SW128 atoms: 1024 B aligned
    const unsigned a_base = base;                           // STAGES x A stage
    const unsigned b_base = base + STAGES * A_STAGE_BYTES;  // STAGES x B stage
    const unsigned bar_base = base + STAGES * STAGE_BYTES;  // full[STAGES], empty[STAGES]
    const unsigned epi_base = bar_base + 1024;              // TS: NC x 2 staging boxes
    static_assert(!TS || CF::SMEM_BYTES_TS <= 232448, "TS staging fits the CTA's smem");
    static_assert(!TS || BN % 64 == 0, "TS stores 64-column boxes");
    static_assert(!UC || (!TS && GW_EPI16), "UC stores from registers, 16 bytes a lane");
#define GW_FULL(s) (bar_base + 8u * (unsigned)(s))
#define GW_EMPTY(s) (bar_base + 8u * (unsigned)(STAGES + (s)))

    const int tid = threadIdx.x;
    const int wg = tid >> 7;
    const int num_tm = (M + BM - 1) / BM;
    const int num_tn = (N + BN - 1) / BN;
    // CL = 2: a unit is a pair of M tiles (2pm, 2pm+1) sharing tn; rank r takes tile 2pm+r.
    // PN (pairs along N): a pair of N tiles (2pn, 2pn+1) sharing tm; rank r takes 2pn+r.
    static_assert(!PN || CL == 2, "N pairs are 2-CTA clusters");
    const int num_pm = PN ? num_tm : (num_tm + CL - 1) / CL;
    const int num_pn = PN ? (num_tn + 1) / 2 : num_tn;
    const int num_tiles = num_pm * num_pn;
    const unsigned rank = CL == 2 ? cluster_ctarank() : 0u;
    const int cid = (int)blockIdx.x / CL;
    const int ncl = (int)gridDim.x / CL;
    const int num_k = (K + BK - 1) / BK;
    const int kb_per = (num_k + splits - 1) / splits;
    const int units = num_tiles * splits;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(GW_FULL(s), 1);
            mbar_init(GW_EMPTY(s), NC * CL);  // CL = 2: both CTAs' consumers release a stage
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    // CL = 2: the peer's barriers must be initialised before our multicasts signal them.
    if constexpr (CL == 2) {
        if constexpr (GW_C2_RELAXED)
            cluster_sync_relaxed();  // the init thread's fence released the barriers above
        else
            cluster_sync();
    } else
        __syncthreads();
    // Launched as a dependent of a padding copy: the set-up above overlapped it; nothing below
    // may read A or B (or write C, P) before it has finished.
    pdl_launch_next();
    pdl_wait_previous();

    if (wg == 0) {
        // ------------------------------ producer ------------------------------
        if constexpr (NC == 2 || (NC == 3 && !(TS && GW_OVL3))) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if constexpr (NC == 3 && TS && GW_OVL3) asm volatile("setmaxnreg.dec.sync.aligned.u32 32;");
        if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmA))
                         : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmB))
                         : "memory");
            unsigned it = 0;
            for (int u = cid; u < units; u += ncl) {
                const int t = u % num_tiles;
                const int sp = u / num_tiles;
                int pm, tn;
                tile_coords(t, num_pm, num_pn, pm, tn);
                // A rows of this CTA's tile; the second CTA of a pair past the last M tile
                // (odd num_tm) loads the last real tile's A (never stored) so that it still
                // multicasts its half of B and keeps the barrier protocol in step. PN: the
                // same for the second CTA past the last N tile and its half of A.
                const int tm = PN ? pm : min(pm * CL + (int)rank, num_tm - 1);
                if constexpr (PN) tn = min(tn * 2 + (int)rank, num_tn - 1);
                const int m0 = tm * BM;
                const int n0 = tn * BN;
                const int kb0 = sp * kb_per;
                const int kb1 = min(kb0 + kb_per, num_k);
                for (int kb = kb0; kb < kb1; ++kb, ++it) {
                    const unsigned s = it % STAGES;
                    const unsigned ph = (it / STAGES) & 1u;
                    const unsigned fb = GW_FULL(s);
                    mbar_wait(GW_EMPTY(s), ph ^ 1u);
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);
                    const int k0 = kb * BK;
                    if constexpr (PN) {
                        // A's tile in two 64-row boxes, rank r loading rows 64r.. and
                        // multicasting them to both CTAs (each full barrier expects all of A);
                        // every CTA loads its own B.
                        tma_load_2d_mc(a_base + s * A_STAGE_BYTES + rank * (64 * 128), tmA, fb,
                                       k0, m0 + 64 * (int)rank, (unsigned short)0x3);
#pragma unroll
                        for (int c = 0; c < BN / 64; ++c)
                            tma_load_2d(b_base + s * B_STAGE_BYTES + c * B_BOX_BYTES, tmB, fb,
                                        n0 + 64 * c, k0);
                        continue;
                    }
                    tma_load_2d(a_base + s * A_STAGE_BYTES, tmA, fb, k0, m0);
                    if constexpr (CL == 1) {
#pragma unroll
                        for (int c = 0; c < BN / 64; ++c)
                            tma_load_2d(b_base + s * B_STAGE_BYTES + c * B_BOX_BYTES, tmB, fb,
                                        n0 + 64 * c, k0);
                    } else {
                        // half of B's boxes each, multicast to both CTAs (same smem offset,
                        // same barrier offset); each CTA's full barrier expects all of B.
#pragma unroll
                        for (int c = (int)rank; c < BN / 64; c += 2)
                            tma_load_2d_mc(b_base + s * B_STAGE_BYTES + c * B_BOX_BYTES, tmB, fb,
                                           n0 + 64 * c, k0, (unsigned short)0x3);
                    }
                }
            }
            // CL = 2, producer tail: wait, as if to load STAGES more iterations, until both
            // CTAs' consumers have released every stage of this CTA. After that no peer
            // arrives on this CTA's barriers and every multicast into its stages has landed (its
            // consumers waited on them), so the CTA may exit without a cluster barrier, whose
            // release compiles to MEMBAR.ALL.GPU (waiting on the epilogue's stores).
            if constexpr (CL == 2) {
                for (unsigned j = 0; j < (unsigned)STAGES; ++j, ++it)
                    mbar_wait(GW_EMPTY(it % STAGES), ((it / STAGES) & 1u) ^ 1u);
            }
        }
    } else {
        // ------------------------------ consumers ------------------------------
        // 512 threads (NC = 3) start at 128 registers each: the producer's 88 x 128 freed
        // registers allow the 384 consumer threads 152 (a multiple of 8 below 128 + 88 / 3);
        // with the overlapped epilogue (TS, GW_OVL3) the producer keeps 32 and they get 160.
        if constexpr (NC == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        if constexpr (NC == 3 && !(TS && GW_OVL3)) asm volatile("setmaxnreg.inc.sync.aligned.u32 152;");
        // GW_OVL3: the producer keeps 32, so that the consumers hold 160 (32 * 128 + 160 * 384 =
        // 65536), room for a packed tile (48) beside the accumulators (96)
        if constexpr (NC == 3 && TS && GW_OVL3) asm volatile("setmaxnreg.inc.sync.aligned.u32 160;");
        const int cw = wg - 1;  // which 64-row slab of the CTA tile
        const int warp = (tid >> 5) & 3;
        const int lane = tid & 31;
        const bool leader = (tid & 127) == 0;
        unsigned it = 0;
        unsigned ebox = 0;  // TS, odd box counts: staging boxes filled so far by this warpgroup
        float d[BN / 2];
        // Release a consumed stage: CL = 2 arrives on both CTAs' empty barrier, as the peer's
        // producer multicasts into this CTA's copy of the stage too.
        auto release = [&](unsigned st) {
            if constexpr (CL == 1) {
                mbar_arrive(GW_EMPTY(st));
            } else {
                mbar_arrive_cluster(GW_EMPTY(st), 0u);
                mbar_arrive_cluster(GW_EMPTY(st), 1u);
            }
        };
        // One K block from stage st: the warpgroup's BK / 16 wgmmas (m64nBNk16), one commit group.
        auto issue_block = [&](const unsigned st) {
            const unsigned a_s = a_base + st * A_STAGE_BYTES + cw * (64 * 128);
            const unsigned b_s = b_base + st * B_STAGE_BYTES;
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                const unsigned long long da = make_desc(a_s + kk * 32, 16, 1024);
                const unsigned long long db = make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO);
                wgmma_tile<BF16, BN>(d, da, db);
            }
            wgmma_commit();
        };
        if constexpr (TS && !PN &&
                      ((BN == 256 && NC == 2 && (CL == 1 || GW_C2_OVL)) ||
                       (BN == 192 && NC == 3 && CL == 1 && GW_OVL3) ||
                       (BN == 192 && NC == 2 && CL == 1))) {
            if (splits == 1) {
                // Overlapped epilogue (see "128x256_ts" and "192x192_ts" in the header).
                constexpr int NB = BN / 64;  // 64-column boxes a warpgroup stores per tile
                unsigned pk[BN / 4];  // the previous tile, packed: box j's stmatrix operands
                int ptm = 0, ptn = 0;
                int nbox = NB;  // boxes of the previous tile already stored (NB: none pending)
                const unsigned ebuf = epi_base + (unsigned)cw * (CF::EPI_NBUF * CF::EPI_BOX_BYTES);
                const int mi = lane >> 3;
                const int srow = warp * 16 + (mi & 1) * 8 + (lane & 7);
                // Box j of the packed tile into the 8 KiB staging box at buf (SW128 layout). j
                // is a constant at every call (the switch and unrolled loops below), so that pk
                // stays in registers.
                auto stage_box = [&](const unsigned buf, const int j) {
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const int chunk = 2 * q + (mi >> 1);
                        stmatrix_x4(buf + (unsigned)srow * 128u + ((unsigned)(chunk ^ (srow & 7)) << 4),
                                    pk[16 * j + 4 * q + 0], pk[16 * j + 4 * q + 1],
                                    pk[16 * j + 4 * q + 2], pk[16 * j + 4 * q + 3]);
                    }
                };
                auto store_box = [&](const int j) {
                    const unsigned buf = ebuf + (unsigned)(j % CF::EPI_NBUF) * CF::EPI_BOX_BYTES;
                    if (leader) bulk_wait_read<(int)CF::EPI_NBUF - 1>();
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    stage_box(buf, j);
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    if (leader) {
                        tma_store_2d(tmC, buf, ptn * BN + 64 * j, ptm * BM + cw * 64);
                        bulk_commit();
                    }
                };
                // The CTA's last tile, skewed, last warpgroup (GW_LASTSTAGE): every stage of the
                // ring has been read (the other warpgroups' wgmmas have completed: barrier 6),
                // and nothing more is loaded, so the warpgroup writes its NB boxes into the ring
                // at once, one 8 KiB box after the other from the first stage, and its leader
                // stores them back to back: no wait for a staging box to be read.
                auto store_all_from_ring = [&]() {
#pragma unroll
                    for (int j = 0; j < NB; ++j) stage_box(a_base + (unsigned)j * CF::EPI_BOX_BYTES, j);
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    if (leader) {
#pragma unroll
                        for (int j = 0; j < NB; ++j)
                            tma_store_2d(tmC, a_base + (unsigned)j * CF::EPI_BOX_BYTES,
                                         ptn * BN + 64 * j, ptm * BM + cw * 64);
                        bulk_commit();
                    }
                };
                bool ring_free = false;  // the last tile was skewed: the ring is free at its end
                // the last warpgroup stores the CTA's last tile from the ring (GW_LASTSTAGE)
                constexpr bool last_ring = GW_LASTSTAGE && NC == 3;
                auto store_next = [&]() {
                    switch (nbox) {
                        case 0: store_box(0); break;
                        case 1: store_box(1); break;
                        case 2: store_box(2); break;
                        case 3:
                            if constexpr (NB > 3) store_box(3);
                            break;
                        default: return;
                    }
                    ++nbox;
                };
                for (int u = cid; u < units; u += ncl) {
                    int pm, tn;
                    tile_coords(u, num_pm, num_pn, pm, tn);
                    // CL = 2: rank r's tile of the pair; past the last M tile (odd num_tm) its
                    // rows are >= M and the tensor stores write nothing
                    const int tm = pm * CL + (int)rank;
#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
                    // The CTA's last tile keeps its last STAGES blocks for the skewed tail below.
                    const int kmain = (u + ncl >= units && num_k > STAGES) ? num_k - STAGES : num_k;
                    for (int kb = 0; kb < kmain; ++kb, ++it) {
                        const unsigned s = it % STAGES;
                        mbar_wait(GW_FULL(s), (it / STAGES) & 1u);
                        issue_block(s);
                        store_next();  // one box of the previous tile while these wgmmas run
                        wgmma_wait<1>();
                        if (kb > 0 && leader) release((it - 1) % STAGES);
                    }
                    if (kmain < num_k) {
                        // Skewed tail (see "128x256_ts" in the header): warpgroup 0 issues the
                        // last STAGES blocks first; every other warpgroup drains, releases its
                        // last main-loop stage (the producer needs it for the tail's last block)
                        // and waits at barrier 1 + NC + cw - 1 (3 with two consumers; 4, 5 with
                        // three) until the warpgroup before it has issued them: a chain.
                        if (NC == 2 ? cw == 1 : cw > 0) {
                            wgmma_wait<0>();
                            if (leader) release((it - 1) % STAGES);
                            named_bar_sync(NC == 2 ? 3u : (unsigned)(NC + cw), 256u);
                        }
#pragma unroll
                        for (int j = 0; j < STAGES; ++j) {
                            const unsigned s = (it + j) % STAGES;
                            mbar_wait(GW_FULL(s), ((it + j) / STAGES) & 1u);
                            issue_block(s);
                            if (j == 0 && cw == 0) {
                                wgmma_wait<1>();
                                if (leader) release((it - 1) % STAGES);
                            }
                        }
                        if (NC == 2 ? cw == 0 : cw < NC - 1)
                            named_bar_arrive(NC == 2 ? 3u : (unsigned)(NC + 1 + cw), 256u);
                        wgmma_wait<0>();
                        if constexpr (last_ring) {
                            // the last warpgroup writes into the ring once every other
                            // warpgroup's wgmmas have read it
                            if (cw < NC - 1) named_bar_arrive(6u, 128u * NC);
                            ring_free = true;
                        }
                        if (leader)
                            for (int j = 0; j < STAGES; ++j) release((it + j) % STAGES);
                        it += STAGES;
                    } else {
                        wgmma_wait<0>();
                        if (num_k > 0 && leader) release((it - 1) % STAGES);
                    }
                    while (nbox < NB) store_next();  // K shorter than NB blocks
#pragma unroll
                    for (int j = 0; j < BN / 64; ++j)
#pragma unroll
                        for (int q = 0; q < 4; ++q) {
                            const int b = 8 * j + 2 * q;
                            pk[16 * j + 4 * q + 0] = pack2_bits<T>(d[4 * b + 0], d[4 * b + 1]);
                            pk[16 * j + 4 * q + 1] = pack2_bits<T>(d[4 * b + 2], d[4 * b + 3]);
                            pk[16 * j + 4 * q + 2] = pack2_bits<T>(d[4 * b + 4], d[4 * b + 5]);
                            pk[16 * j + 4 * q + 3] = pack2_bits<T>(d[4 * b + 6], d[4 * b + 7]);
                        }
                    ptm = tm;
                    ptn = tn;
                    nbox = 0;
                }
                if (last_ring && ring_free && cw == NC - 1) {
                    named_bar_sync(6u, 128u * NC);
                    store_all_from_ring();
                } else {
                    while (nbox < NB) store_next();  // the CTA's last tile
                }
                if (leader) bulk_wait_all();
                return;
            }
        }
        for (int u = cid; u < units; u += ncl) {
            const int t = u % num_tiles;
            const int sp = u / num_tiles;
            int pm, tn;
            tile_coords(t, num_pm, num_pn, pm, tn);
            // unclamped: past the last M (PN: N) tile every row (column) is >= M (N) and no
            // store happens
            const int tm = PN ? pm : pm * CL + (int)rank;
            if constexpr (PN) tn = tn * 2 + (int)rank;
            const int kb0 = sp * kb_per;
            const int kb1 = min(kb0 + kb_per, num_k);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;

            for (int kb = kb0; kb < kb1; ++kb, ++it) {
                const unsigned s = it % STAGES;
                const unsigned ph = (it / STAGES) & 1u;
                mbar_wait(GW_FULL(s), ph);
                issue_block(s);
                wgmma_wait<1>();
                // the group issued one iteration ago has completed: release its stage
                if (kb > kb0 && leader) release((it - 1) % STAGES);
            }
            wgmma_wait<0>();
            if (kb1 > kb0 && leader) release((it - 1) % STAGES);

            // ------------------------------ epilogue ------------------------------
            const int row0 = tm * BM + cw * 64 + warp * 16 + (lane >> 2);
            const int col0 = tn * BN + (lane & 3) * 2;
            if (TS && splits == 1) {
                // TMA-store epilogue: per 64-column box j, the warpgroup writes its 64 x 64 slab
                // (bf16x2 pairs, rounded RN) into its next staging box with stmatrix, in the SW128
                // layout (16-byte chunk c of row r at chunk c ^ (r & 7)); the leader stores the
                // box with one tensor store (TMA clips rows >= M and columns >= N). Before a box
                // is rewritten, the leader waits until the store issued EPI_NBUF boxes ago has
                // read it (at most EPI_NBUF - 1 groups pending), then the warpgroup meets at its
                // barrier. Odd box counts take the staging box from the running count ebox, not
                // from j (see the header).
                const unsigned ebuf = epi_base + (unsigned)cw * (CF::EPI_NBUF * CF::EPI_BOX_BYTES);
                const int mi = lane >> 3;  // which of the 4 matrices this lane addresses
                const int srow = warp * 16 + (mi & 1) * 8 + (lane & 7);
#pragma unroll
                for (int j = 0; j < BN / 64; ++j) {
                    // a multiple of EPI_NBUF boxes per tile: the column block gives the same
                    // sequence as the running count, without a loop-carried register
                    unsigned slot;
                    if constexpr ((BN / 64) % CF::EPI_NBUF == 0)
                        slot = (unsigned)j % CF::EPI_NBUF;
                    else
                        slot = ebox++ % CF::EPI_NBUF;
                    const unsigned buf = ebuf + slot * CF::EPI_BOX_BYTES;
                    if (leader) bulk_wait_read<(int)CF::EPI_NBUF - 1>();
                    named_bar_sync(1u + (unsigned)cw, 128u);
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const int b = 8 * j + 2 * q;  // 8-column blocks b, b + 1
                        const int chunk = 2 * q + (mi >> 1);
                        stmatrix_x4(buf + (unsigned)srow * 128u +
                                        ((unsigned)(chunk ^ (srow & 7)) << 4),
                                    pack2_bits<T>(d[4 * b + 0], d[4 * b + 1]),
                                    pack2_bits<T>(d[4 * b + 2], d[4 * b + 3]),
                                    pack2_bits<T>(d[4 * b + 4], d[4 * b + 5]),
                                    pack2_bits<T>(d[4 * b + 6], d[4 * b + 7]));
                    }
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    if (leader) {
                        tma_store_2d(tmC, buf, tn * BN + 64 * j, tm * BM + cw * 64);
                        bulk_commit();
                    }
                }
            } else if (splits == 1 && UC) {
                // C's rows at any alignment (uc_store_row)
#pragma unroll
                for (int h = 0; h < 2; ++h)
                    uc_store_row<T, BN>(C, d, h, row0 + 8 * h, M, N, tn * BN, lane & 3, lane & ~3);
            } else if (splits == 1 && GW_EPI16) {
                // 16-byte stores: per 32 columns (blocks 4j..4j+3 of 8) and row g or g+8, the
                // quad transposes its 4 x 4 bf16x2 pairs so that lane t holds block 4j+t whole.
                const int t = lane & 3;
                const int qbase = lane & ~3;
#pragma unroll
                for (int j = 0; j < BN / 32; ++j) {
                    const int col = tn * BN + 32 * j + 8 * t;
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        unsigned o[4];
                        quad_block<T, BN>(d, j, h, t, qbase, o);
                        const int row = row0 + 8 * h;
                        if (row < M && col < N)
                            *reinterpret_cast<uint4*>(C + (size_t)row * N + col) =
                                make_uint4(o[0], o[1], o[2], o[3]);
                    }
                }
            } else if (splits == 1) {
                typedef typename Pack2<T>::type T2;
#pragma unroll
                for (int b = 0; b < BN / 8; ++b) {
                    const int col = col0 + b * 8;
                    if (col < N) {
                        if (row0 < M)
                            *reinterpret_cast<T2*>(C + (size_t)row0 * N + col) =
                                Pack2<T>::make(d[4 * b + 0], d[4 * b + 1]);
                        if (row0 + 8 < M)
                            *reinterpret_cast<T2*>(C + (size_t)(row0 + 8) * N + col) =
                                Pack2<T>::make(d[4 * b + 2], d[4 * b + 3]);
                    }
                }
            } else {
                float* Ps = P + (size_t)sp * M * N;
#pragma unroll
                for (int b = 0; b < BN / 8; ++b) {
                    const int col = col0 + b * 8;
                    if (col < N) {
                        if (row0 < M)
                            *reinterpret_cast<float2*>(Ps + (size_t)row0 * N + col) =
                                make_float2(d[4 * b + 0], d[4 * b + 1]);
                        if (row0 + 8 < M)
                            *reinterpret_cast<float2*>(Ps + (size_t)(row0 + 8) * N + col) =
                                make_float2(d[4 * b + 2], d[4 * b + 3]);
                    }
                }
            }
        }
        // TS: the staging boxes must stay until every tensor store has completed.
        if (TS && leader) bulk_wait_all();
    }
#undef GW_FULL
#undef GW_EMPTY
}

// C = P[0] + P[1] + ... + P[splits-1] (that order for every element), rounded to T.
template <typename T>
static __device__ __forceinline__ void reduce_body(const float* __restrict__ P, T* __restrict__ C,
                                                   unsigned long long elems, int splits) {
    pdl_launch_next();
    pdl_wait_previous();
    typedef typename Pack2<T>::type T2;
    const unsigned long long n4 = elems / 4;
    const float4* P4 = reinterpret_cast<const float4*>(P);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float4 acc = P4[i];
        for (int s = 1; s < splits; ++s) {
            const float4 v = P4[(unsigned long long)s * n4 + i];
            acc.x += v.x;
            acc.y += v.y;
            acc.z += v.z;
            acc.w += v.w;
        }
        T2* c2 = reinterpret_cast<T2*>(C + 4 * i);
        c2[0] = Pack2<T>::make(acc.x, acc.y);
        c2[1] = Pack2<T>::make(acc.z, acc.w);
    }
}

// dst[r][c] = c < cols ? src[r][c] : 0 for r < rows, c < cols_p; 16-bit elements, cols_p % 8 == 0,
// one thread per 8 elements of dst (one 16-byte store). The body of gemm_wgmma_pad16 (both
// kernel files define that entry).
static __device__ __forceinline__ void pad16_body(const unsigned short* __restrict__ src,
                                                  unsigned short* __restrict__ dst, int rows,
                                                  int cols, int cols_p) {
    pdl_launch_next();
    pdl_wait_previous();
    const unsigned long long chunks = (unsigned long long)rows * (cols_p / 8);
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < chunks;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long r = i / (cols_p / 8);
        const int c0 = (int)(i - r * (cols_p / 8)) * 8;
        unsigned short v[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = c0 + e < cols ? src[r * cols + c0 + e] : (unsigned short)0;
        *reinterpret_cast<uint4*>(dst + r * cols_p + c0) =
            make_uint4(v[0] | (unsigned)v[1] << 16, v[2] | (unsigned)v[3] << 16,
                       v[4] | (unsigned)v[5] << 16, v[6] | (unsigned)v[7] << 16);
    }
}

}  // namespace gemm_wgmma_detail
