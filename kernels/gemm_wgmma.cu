// gemm_wgmma.cu -- Hopper (sm_90a) bf16 / fp16 GEMM: TMA + wgmma + mbarrier pipeline, several
// CTA tiles (chosen by shape on the host) and optional split-K.
//
// Semantics (all ROW-MAJOR):  C[M,N] = A[M,K] * B[K,N]
//   A: M x K, K contiguous (lda = K)      -> "K-major" wgmma operand (no transpose)
//   B: K x N, N contiguous (ldb = N)      -> "MN-major" wgmma operand (transpose bit = 1)
//   C: M x N, N contiguous (ldc = N), same element type as A/B, rounded (RN) from fp32.
//   fp32 accumulation. Requirements: N % 8 == 0, K % 8 == 0 (TMA 16-byte row strides),
//   M >= 1, N >= 8, K >= 8; the host meets them for any other shape with gemm_wgmma_pad16 /
//   gemm_wgmma_unpad16 (zero-padded copies of A or B and a padded result, see their comment). M/N/K need not be tile multiples (TMA zero-fills out-of-bounds
//   reads, C stores are bounds checked).
//
// ---------------------------------------------------------------------------------------
// TILE CONFIGURATIONS (one extern "C" entry per dtype and tile: gemm_wgmma_<bf16|f16>_<BM>x<BN>)
//
//   entry suffix  BM  BN  consumers threads stages  dyn. smem  CTAs/SM  accumulators/thread
//   128x256      128 256      2       384     4     197760       1        128  (the original)
//   128x128      128 128      2       384     6     197760       1         64
//   64x256        64 256      1       256     5     205952       1        128
//   64x128        64 128      1       256     4      99456       2         64
//   128x192      128 192      2       384     5     205952       1         96  (3072³ until session 28)
//   128x256_c2   128 256      2       384     4     197760       1        128  (2-CTA cluster)
//   128x128_c2   128 128      2       384     6     197760       1         64  (2-CTA cluster)
//   192x192      192 192      3       512     4     197760       1         96  (session 28)
//
//   dyn. smem = stages * (BM*64*2 + 64*BN*2) + 1024 (alignment slack) + 128 (mbarriers).
//
//   TMA-STORE ENTRIES (suffix _ts after the tile: 128x256_ts, 128x256_c2_ts, 128x128_ts,
//   128x128_c2_ts, session 32; 128x64_ts, 192x192_ts, session 33): the same tile with the
//   epilogue below ("TMA-store epilogue") and one more kernel parameter, the tensor map of C.
//   Their dynamic smem adds 1024 - 128 (the barriers' block rounded up to 1 KiB) and EPI_NBUF
//   8 KiB staging boxes per consumer warpgroup (two, or one where two do not fit):
//   stages * (BM*64*2 + 64*BN*2) + 2048 + consumers * EPI_NBUF * 8192 = 231424 bytes for the
//   128-row tiles (two boxes), 223232 for 192x192 (one box).
//   BM = 64 * consumers: each consumer warpgroup owns 64 rows x BN columns of the CTA tile and
//   issues BK/16 = 4 wgmma.m64n<BN>k16 per stage. K step BK = 64 for all tiles.
//
// DESIGN (common to all tiles)
//   * Warp-specialized: warpgroup 0 = producer (one elected thread issues the TMA loads: 1 box
//     for A, BN/64 boxes for B per stage), warpgroups 1..consumers = consumers. With two
//     consumers the producer does setmaxnreg.dec to 40 and the consumers setmaxnreg.inc to 232;
//     with three (192x192, 512 threads starting at 128 registers) to 40 and 152.
//   * mbarriers: full[s] (count 1, producer arrive.expect_tx + TMA complete_tx) and
//     empty[s] (count = consumers, one arrive per consumer warpgroup after wgmma.wait_group shows
//     that the stage has been consumed; one wgmma group is kept in flight: wait_group 1).
//   * 128-byte swizzle on both operands (bank-conflict-free wgmma smem reads):
//       A stage: one TMA box {64 K, BM M}: row m = 128 B of K, 1024 B per 8-row atom.
//                K-major SW128 descriptor, SBO = 1024 B, advance 32 B per k16 step; consumer c
//                reads rows 64c.. at +8 KiB*c.
//       B stage: BN/64 TMA boxes {64 N, 64 K} (SW128 limits the box inner dim to 128 B),
//                box c (N cols 64c..64c+63) at +8 KiB*c; row k = 128 B of N.
//                MN-major SW128 descriptor: LBO = 8192 B (next 64-wide N atom),
//                SBO = 1024 B (next 8 K rows), advance 2048 B per k16 step, trans-b = 1.
//   * Persistent: work units u = blockIdx.x, += gridDim.x over tiles x splits
//     (tile = u % numTiles, split = u / numTiles; any grid size >= 1 is correct); tiles are
//     rasterized in groups of 8 M-tiles for L2 reuse. The producer runs ahead into the next
//     unit while consumers do the epilogue.
//   * Split-K (splits > 1): split s covers K blocks [s*kbPer, min((s+1)*kbPer, numK)) with
//     kbPer = ceil(ceil(K/64) / splits) (an empty split writes zeros). Each unit writes its fp32
//     partial tile to P[s][M][N] (float2 stores, bounds checked); gemm_wgmma_reduce_<dt> then
//     adds P[0] + P[1] + ... + P[splits-1] in that fixed order per element and rounds to C:
//     bitwise deterministic, no atomics, no zeroing. With splits == 1, P is unused (may be null)
//     and the epilogue stores C directly.
//   * Epilogue (splits == 1): accumulators -> bf16x2/half2 (RN); the four lanes of each quad
//     exchange their pairs (4 shuffles per 32 columns and row) so that every lane holds 8
//     adjacent columns, and store them with one 16-byte store: a warp's store covers 64
//     contiguous bytes of each of 8 rows, two whole 32-byte sectors. Bounds checked against M
//     and N (N % 8 == 0, so a 16-byte chunk never straddles the edge). The first version
//     stored each pair with a 4-byte store, 16 bytes of a row per warp store (half a sector);
//     on an H100 (GPU-649307c1, same-run A/B through the harness) the 16-byte epilogue took
//     0.35x the time at 8192x8192x8 (160 -> 56 us, now at cuBLAS's 55) and 0.84-0.96x on every
//     other suite shape without split-K (GW_EPI16=0 builds the first version).
//
//   * TMA-store epilogue (_ts entries, splits == 1; with splits > 1 they write the fp32
//     partials as above): per 64-column box j of its 64-row slab, each consumer warpgroup
//     writes the rounded bf16x2/half2 pairs with stmatrix (four 8x8 matrices per instruction)
//     into staging box n % EPI_NBUF, n counting the boxes the warpgroup has staged over all its
//     tiles (a running count, so that a tile with an odd number of boxes, 128x64, still
//     alternates across tiles: indexed by j & 1, 128x64 overwrote a box its previous tile's
//     store was reading, wrong at 8192x8192x8 in session 32's bench; where a tile's box count
//     is a multiple of EPI_NBUF, j % EPI_NBUF is the same sequence and no count is kept), in the
//     128-byte-swizzled layout (16-byte chunk c of row r at chunk c ^ (r & 7): conflict-free),
//     fences the async proxy, meets at its named barrier (1 + warpgroup) and its leader stores
//     the box with one cp.async.bulk.tensor store; TMA clips rows >= M and columns >= N. Before
//     a box is rewritten the leader waits until at most EPI_NBUF - 1 bulk groups are still
//     reading (with two boxes: the store of two boxes ago has read its box; with one: the
//     previous store has); at the end of the kernel it waits for every store. Session 33 (dev
//     bench, H100 GPU-5b0df1fb, 3 processes, same process as cuBLAS): 192x192_ts 3072^3 77.15 /
//     79.52 us (bf16 / f16) against 78.37 / 80.64 for the register epilogue (1.005x / 0.996x
//     cuBLAS's time); 128x64_ts 1024^3 9.54 / 9.54 against 9.73 / 9.70. Measured in the dev bench against the register
//     epilogue above, same process as cuBLAS (session 32, docs/kernels/session32): 2048^3
//     0.5-1.4% faster, 4096^3-8192^3 about 2% faster (H200 GPU-3ad56ac7; H100 GPU-d45e9c4d
//     at 2048^3 and 4096^3), correct on every bench shape in both dtypes.
//
//   * 128x256_ts without K splits stores a tile while the next one runs (session 34): at the
//     end of a tile each consumer thread packs its 128 accumulators into 64 bf16x2 / half2
//     registers (the consumers hold up to 232 after setmaxnreg) and goes straight on to the
//     next tile; after issuing each of that tile's first four K blocks, while those wgmmas
//     run, the warpgroup stages and stores one 64 x 64 box of the packed tile exactly as
//     above (staging box j % 2, the leader's wait for the store two boxes back, the two named
//     barriers). Boxes still pending when a tile has fewer than four K blocks, and the CTA's
//     last tile, are stored at once. The dev trace (kernels/dev/gemm_trace_patch.py, 4096^3,
//     H100) had put about 2,400 cycles of idle tensor pipe at each tile boundary. Through the
//     harness, paired with the previous kernel in the same runs (H100 GPU-c626dff2, two
//     runs): 4096^3 0.982-0.992x the time, 6144^3 0.985-0.989x, 8192^3 0.983-0.987x,
//     8192x1024x8192 0.991-0.997x; 2048^3 (one tile per CTA) level; correct on every dev-bench
//     shape in both dtypes.
//     The CTA's last tile skews its tail (session 35): when K has more blocks than STAGES, its
//     last STAGES blocks (all resident: nothing is loaded after them) run one warpgroup after
//     the other. Consumer warpgroup 1 drains its wgmmas, releases its last main-loop stage
//     (the producer needs it for the tail's last block) and waits at named barrier 3 while
//     warpgroup 0 issues all STAGES blocks; then it issues its own. The tensor pipe finishes
//     warpgroup 0's rows about STAGES / 2 K blocks before the end, and its four boxes are
//     stored while warpgroup 1's MMAs run: half the write-out is left after the last MMA, where
//     a one-wave grid's CTAs (2048^3: 128, one tile each) all stored at once. Dev A/B through
//     the harness, paired with the unskewed loop (kernels/dev/gemm_skew_revert_patch.py
//     builds it) in the same runs, H200 GPU-53a7ac6e: 2048^3 0.958-0.973x the time; 4096^3 and
//     8192^3 level within the pairing's spread. Splitting the tail by column halves instead
//     needed m64n128 pairs in the whole loop (an m64n128 on the upper half of the m64n256
//     accumulators makes ptxas serialize every wgmma, C7511), 0.5-0.8% slower from 4096^3 on.
//
//   * CLUSTER ENTRIES (_c2, compiled with __cluster_dims__(2, 1, 1)): the grid is a whole
//     number of 2-CTA clusters (blockIdx.x 2c, 2c+1 = cluster c, %cluster_ctarank = 0, 1). A
//     work unit is a PAIR of vertically adjacent M tiles (2pm, 2pm+1) with the same N tile tn
//     (pairs rasterized like tiles, in groups of 8 pair-rows), x splits; cluster c takes units
//     c, c + gridDim.x/2, ... and rank r computes tile 2pm+r. Both CTAs load their own A box;
//     the B stage's BN/64 boxes are split between them (rank r loads boxes r, r+2, ...), each
//     multicast (cp.async.bulk.tensor ... .multicast::cluster, cta mask 0b11) to the same smem
//     offset of both CTAs, completing on the full barrier at the same offset in each; every
//     full barrier expects the whole stage (A + all of B). empty[s] has count 2 * consumers:
//     each consumer warpgroup releases a stage on BOTH CTAs' empty[s] (mapa +
//     mbarrier.arrive.release.cluster.shared::cluster), because the peer's producer writes
//     into this CTA's stage too. B traffic from L2 per CTA is halved. With an odd number of M
//     tiles the pair's second CTA past the edge loads the last real tile's A (so that its
//     half of B and its barrier arrivals still happen) and stores nothing (its rows are >= M).
//     A cluster barrier after the mbarrier init (before any multicast can reach the peer); at
//     the end each producer waits until both CTAs' consumers have released all of its stages
//     (a producer tail) instead of a second cluster barrier, whose release compiled to
//     MEMBAR.ALL.CTA + MEMBAR.ALL.GPU after the epilogue's stores (session 19, SASS).
//   * Measured, 128x256 (NVIDIA H200, CUDA 13.0, kernels/dev/gemm_wgmma_bench.cu): bf16 4096^3
//     716 TFLOP/s (0.92x cuBLAS), 6144^3 748 (0.94x), 8192^3 759 (1.12x); f16 4096^3 692 (0.92x).
//     The other tiles and split-K exist for problems with few 128x256 tiles (2048x512x4096 had
//     32 CTAs on 132 SMs: 0.33x cuBLAS); kernels/dev/run_gemm_wgmma_bench.sh times them all.
//
// ---------------------------------------------------------------------------------------
// HOST LAUNCH RECIPE (exact)
//   elem = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 for gemm_wgmma_bf16_*,
//          CU_TENSOR_MAP_DATA_TYPE_FLOAT16  for gemm_wgmma_f16_*   (2 bytes / element)
//
//   tmA = cuTensorMapEncodeTiled(&tmA, elem, rank = 2, globalAddress = A,
//           globalDim     = { K, M }                 (innermost first, cuuint64_t),
//           globalStrides = { K * 2 }                (bytes, rank-1 entries, cuuint64_t),
//           boxDim        = { 64, BM }               (cuuint32_t; BM of the entry's tile),
//           elementStrides= { 1, 1 },
//           CU_TENSOR_MAP_INTERLEAVE_NONE,
//           CU_TENSOR_MAP_SWIZZLE_128B,
//           CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
//           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)        (NONE = out-of-bounds reads give zeros)
//   tmB = cuTensorMapEncodeTiled(&tmB, elem, rank = 2, globalAddress = B,
//           globalDim     = { N, K },
//           globalStrides = { N * 2 },
//           boxDim        = { 64, 64 },               (every tile)
//           elementStrides= { 1, 1 },
//           CU_TENSOR_MAP_INTERLEAVE_NONE,
//           CU_TENSOR_MAP_SWIZZLE_128B,
//           CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
//           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
//   (A, B base addresses must be 16-byte aligned; 256-byte aligned cudaMalloc memory is fine.)
//
//   numTiles = ceil(M / BM) * ceil(N / BN);  units = numTiles * splits   (1 <= splits)
//   grid     = ( min(units, numSMs * CTAs/SM), 1, 1 )   (any grid.x >= 1 is correct)
//   _c2 entries: numTiles = ceil(M / (2*BM)) * 2 * ceil(N / BN) (M tiles padded to pairs),
//              grid = min(units, floor(numSMs / 2) * 2): any EVEN grid.x >= 2 is correct
//   block    = ( threads, 1, 1 )                        (table above: 128 * (consumers + 1))
//   dynamic shared memory = the table's bytes (no static smem); before the first launch:
//              cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)
//   cuLaunchKernel(f, grid, 1, 1, threads, 1, 1, bytes, stream, params, 0): no launch-time
//   cluster attribute, the _c2 entries carry their cluster dims (2, 1, 1) in the binary
//   params = { &tmA, &tmB, &C, &P, &M, &N, &K, &splits }  (tmA/tmB BY VALUE as
//            __grid_constant__ CUtensorMap; P = float* workspace of splits*M*N floats, 16-byte
//            aligned, or null when splits == 1; M, N, K, splits are int)
//   _ts entries: params = { ..., &splits, &tmC }, tmC BY VALUE:
//   tmC = cuTensorMapEncodeTiled(&tmC, elem, rank = 2, globalAddress = C,
//           globalDim = { N, M }, globalStrides = { N * 2 }, boxDim = { 64, 64 },
//           elementStrides = { 1, 1 }, INTERLEAVE_NONE, SWIZZLE_128B, L2_PROMOTION_L2_256B,
//           FLOAT_OOB_FILL_NONE)                      (C 16-byte aligned; N % 8 == 0)
//   split-K, after the GEMM in the same stream:
//     gemm_wgmma_reduce_<bf16|f16>(const float* P, T* C, unsigned long long elems = M*N,
//                                  int splits): block 256, any grid (grid-stride over
//                                  elems / 4 float4 groups; elems % 4 == 0 since N % 8 == 0),
//                                  e.g. min(ceil(elems / 1024), 8 * numSMs).
// ---------------------------------------------------------------------------------------

#include <cuda_bf16.h>
// Epilogue without split-K: 1 = 16-byte stores after a transpose inside each quad (every store
// of a warp covers 64 contiguous bytes of 8 rows), 0 = the first version's 4-byte stores (16
// bytes of a row per warp store: half a 32-byte sector).
#ifndef GW_EPI16
#define GW_EPI16 1
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

// B (MN-major, SW128) descriptor strides: LBO = byte distance between 64-element N atoms
// (the 4 TMA boxes, 8 KiB apart), SBO = byte distance between groups of 8 K rows (1 KiB).
constexpr unsigned B_DESC_LBO = B_BOX_BYTES;
constexpr unsigned B_DESC_SBO = 1024;

static __device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

static __device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

static __device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
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
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

static __device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// All threads of both CTAs of the cluster (not warp-aligned: the producer warp diverges).
static __device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
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

static __device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
static __device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
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
template <typename T, bool BF16, class CF, int CL, bool PN = false, bool TS = false>
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
    if constexpr (CL == 2)
        cluster_sync();
    else
        __syncthreads();
    // Launched as a dependent of a padding copy: the set-up above overlapped it; nothing below
    // may read A or B (or write C, P) before it has finished.
    pdl_launch_next();
    pdl_wait_previous();

    if (wg == 0) {
        // ------------------------------ producer ------------------------------
        if constexpr (NC >= 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
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
        // registers allow the 384 consumer threads 152 (a multiple of 8 below 128 + 88 / 3).
        if constexpr (NC == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        if constexpr (NC == 3) asm volatile("setmaxnreg.inc.sync.aligned.u32 152;");
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
        if constexpr (TS && BN == 256 && CL == 1 && !PN) {
            if (splits == 1) {
                // Overlapped epilogue (see "128x256_ts" in the header).
                unsigned pk[BN / 4];  // the previous tile, packed: box j's stmatrix operands
                int ptm = 0, ptn = 0;
                int nbox = 4;  // boxes of the previous tile already stored (4: none pending)
                const unsigned ebuf = epi_base + (unsigned)cw * (CF::EPI_NBUF * CF::EPI_BOX_BYTES);
                const int mi = lane >> 3;
                const int srow = warp * 16 + (mi & 1) * 8 + (lane & 7);
                // j is a constant at every call (the switch below), so that pk stays in registers
                auto store_box = [&](const int j) {
                    const unsigned buf = ebuf + (unsigned)(j % CF::EPI_NBUF) * CF::EPI_BOX_BYTES;
                    if (leader) bulk_wait_read<(int)CF::EPI_NBUF - 1>();
                    named_bar_sync(1u + (unsigned)cw, 128u);
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const int chunk = 2 * q + (mi >> 1);
                        stmatrix_x4(buf + (unsigned)srow * 128u + ((unsigned)(chunk ^ (srow & 7)) << 4),
                                    pk[16 * j + 4 * q + 0], pk[16 * j + 4 * q + 1],
                                    pk[16 * j + 4 * q + 2], pk[16 * j + 4 * q + 3]);
                    }
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    if (leader) {
                        tma_store_2d(tmC, buf, ptn * BN + 64 * j, ptm * BM + cw * 64);
                        bulk_commit();
                    }
                };
                auto store_next = [&]() {
                    switch (nbox) {
                        case 0: store_box(0); break;
                        case 1: store_box(1); break;
                        case 2: store_box(2); break;
                        case 3: store_box(3); break;
                        default: return;
                    }
                    ++nbox;
                };
                for (int u = cid; u < units; u += ncl) {
                    int pm, tn;
                    tile_coords(u, num_pm, num_pn, pm, tn);
                    const int tm = pm;
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
                        // last STAGES blocks first; warpgroup 1 drains, releases its last
                        // main-loop stage (the producer needs it for the tail's last block) and
                        // waits at barrier 3 until warpgroup 0 has issued them.
                        if (cw == 1) {
                            wgmma_wait<0>();
                            if (leader) release((it - 1) % STAGES);
                            named_bar_sync(3u, 256u);
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
                        if (cw == 0) named_bar_arrive(3u, 256u);
                        wgmma_wait<0>();
                        if (leader)
                            for (int j = 0; j < STAGES; ++j) release((it + j) % STAGES);
                        it += STAGES;
                    } else {
                        wgmma_wait<0>();
                        if (num_k > 0 && leader) release((it - 1) % STAGES);
                    }
                    while (nbox < 4) store_next();  // K shorter than four blocks
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
                while (nbox < 4) store_next();  // the CTA's last tile
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
                        unsigned p[4], o[4];
#pragma unroll
                        for (int q = 0; q < 4; ++q)
                            p[q] = pack2_bits<T>(d[4 * (4 * j + q) + 2 * h],
                                                 d[4 * (4 * j + q) + 2 * h + 1]);
#pragma unroll
                        for (int r = 0; r < 4; ++r) {
                            // lane s sends its pair of block 4j + ((s - r) & 3) and receives
                            // from lane (t + r) & 3 that lane's pair of block 4j + t
                            const unsigned v = __shfl_sync(0xffffffffu, sel4(p, (t - r) & 3),
                                                           qbase | ((t + r) & 3));
                            const int slot = (t + r) & 3;
#pragma unroll
                            for (int q = 0; q < 4; ++q) o[q] = slot == q ? v : o[q];
                        }
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

}  // namespace gemm_wgmma_detail

// One entry per dtype and tile: gemm_wgmma_<dt>_<BM>x<BN>, launch bounds (threads, CTAs/SM).
#define GW_ENTRY(NAME, T, BF16, CFG, MINB)                                                         \
    extern "C" __global__ void __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, MINB)           \
        NAME(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,     \
             T* C, float* P, int M, int N, int K, int splits) {                                    \
        gemm_wgmma_detail::gemm_body<T, BF16, gemm_wgmma_detail::CFG, 1>(&tmA, &tmB, C, P, M, N,  \
                                                                         K, splits);               \
    }
// 2-CTA cluster entries (compile-time cluster dims: a plain cuLaunchKernel with an even grid).
#define GW_ENTRY_C2(NAME, T, BF16, CFG)                                                            \
    extern "C" __global__ void __cluster_dims__(2, 1, 1)                                           \
        __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, 1)                                      \
            NAME(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, \
                 T* C, float* P, int M, int N, int K, int splits) {                                \
        gemm_wgmma_detail::gemm_body<T, BF16, gemm_wgmma_detail::CFG, 2>(&tmA, &tmB, C, P, M, N,  \
                                                                         K, splits);               \
    }
// 2-CTA cluster entries paired along N (A multicast; tmA's box is {64, 64}, see the header).
#define GW_ENTRY_N2(NAME, T, BF16, CFG)                                                            \
    extern "C" __global__ void __cluster_dims__(2, 1, 1)                                           \
        __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, 1)                                      \
            NAME(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, \
                 T* C, float* P, int M, int N, int K, int splits) {                                \
        gemm_wgmma_detail::gemm_body<T, BF16, gemm_wgmma_detail::CFG, 2, true>(                  \
            &tmA, &tmB, C, P, M, N, K, splits);                                                    \
    }

GW_ENTRY(gemm_wgmma_bf16_128x256, __nv_bfloat16, true, Cfg128x256, 1)
GW_ENTRY(gemm_wgmma_f16_128x256, __half, false, Cfg128x256, 1)
GW_ENTRY(gemm_wgmma_bf16_128x128, __nv_bfloat16, true, Cfg128x128, 1)
GW_ENTRY(gemm_wgmma_f16_128x128, __half, false, Cfg128x128, 1)
GW_ENTRY(gemm_wgmma_bf16_64x256, __nv_bfloat16, true, Cfg64x256, 1)
GW_ENTRY(gemm_wgmma_f16_64x256, __half, false, Cfg64x256, 1)
GW_ENTRY(gemm_wgmma_bf16_64x128, __nv_bfloat16, true, Cfg64x128, 2)
GW_ENTRY(gemm_wgmma_f16_64x128, __half, false, Cfg64x128, 2)
GW_ENTRY(gemm_wgmma_bf16_128x192, __nv_bfloat16, true, Cfg128x192, 1)
GW_ENTRY(gemm_wgmma_f16_128x192, __half, false, Cfg128x192, 1)
GW_ENTRY_C2(gemm_wgmma_bf16_128x256_c2, __nv_bfloat16, true, Cfg128x256)
GW_ENTRY_C2(gemm_wgmma_f16_128x256_c2, __half, false, Cfg128x256)
GW_ENTRY_C2(gemm_wgmma_bf16_128x128_c2, __nv_bfloat16, true, Cfg128x128)
GW_ENTRY_C2(gemm_wgmma_f16_128x128_c2, __half, false, Cfg128x128)
GW_ENTRY(gemm_wgmma_bf16_128x64, __nv_bfloat16, true, Cfg128x64, 1)
GW_ENTRY(gemm_wgmma_f16_128x64, __half, false, Cfg128x64, 1)
GW_ENTRY_N2(gemm_wgmma_bf16_128x64_n2, __nv_bfloat16, true, Cfg128x64)
GW_ENTRY_N2(gemm_wgmma_f16_128x64_n2, __half, false, Cfg128x64)
GW_ENTRY_N2(gemm_wgmma_bf16_128x128_n2, __nv_bfloat16, true, Cfg128x128)
GW_ENTRY_N2(gemm_wgmma_f16_128x128_n2, __half, false, Cfg128x128)
GW_ENTRY(gemm_wgmma_bf16_192x192, __nv_bfloat16, true, Cfg192x192, 1)
GW_ENTRY(gemm_wgmma_f16_192x192, __half, false, Cfg192x192, 1)
// TMA-store epilogue entries (_ts): one more parameter, the tensor map of C (box {64, 64},
// SW128), last so that the other parameters keep their places.
#define GW_TS_BODY(T, BF16, CFG, CLN)                                                               \
    gemm_wgmma_detail::gemm_body<T, BF16, gemm_wgmma_detail::CFG, CLN, false, true>(             \
        &tmA, &tmB, C, P, M, N, K, splits, &tmC);
#define GW_TS_PARAMS(T)                                                                              \
    (const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, T* C,         \
     float* P, int M, int N, int K, int splits, const __grid_constant__ CUtensorMap tmC)
#define GW_ENTRY_TS(NAME, T, BF16, CFG)                                                             \
    extern "C" __global__ void __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, 1)               \
        NAME GW_TS_PARAMS(T) { GW_TS_BODY(T, BF16, CFG, 1) }
#define GW_ENTRY_C2_TS(NAME, T, BF16, CFG)                                                          \
    extern "C" __global__ void __cluster_dims__(2, 1, 1)                                           \
        __launch_bounds__(gemm_wgmma_detail::CFG::THREADS, 1) NAME GW_TS_PARAMS(T) {               \
        GW_TS_BODY(T, BF16, CFG, 2)                                                                \
    }
GW_ENTRY_TS(gemm_wgmma_bf16_128x256_ts, __nv_bfloat16, true, Cfg128x256)
GW_ENTRY_TS(gemm_wgmma_f16_128x256_ts, __half, false, Cfg128x256)
GW_ENTRY_C2_TS(gemm_wgmma_bf16_128x256_c2_ts, __nv_bfloat16, true, Cfg128x256)
GW_ENTRY_C2_TS(gemm_wgmma_f16_128x256_c2_ts, __half, false, Cfg128x256)
GW_ENTRY_TS(gemm_wgmma_bf16_128x128_ts, __nv_bfloat16, true, Cfg128x128)
GW_ENTRY_TS(gemm_wgmma_f16_128x128_ts, __half, false, Cfg128x128)
GW_ENTRY_C2_TS(gemm_wgmma_bf16_128x128_c2_ts, __nv_bfloat16, true, Cfg128x128)
GW_ENTRY_C2_TS(gemm_wgmma_f16_128x128_c2_ts, __half, false, Cfg128x128)
GW_ENTRY_TS(gemm_wgmma_bf16_128x64_ts, __nv_bfloat16, true, Cfg128x64)
GW_ENTRY_TS(gemm_wgmma_f16_128x64_ts, __half, false, Cfg128x64)
GW_ENTRY_TS(gemm_wgmma_bf16_192x192_ts, __nv_bfloat16, true, Cfg192x192)
GW_ENTRY_TS(gemm_wgmma_f16_192x192_ts, __half, false, Cfg192x192)
#undef GW_ENTRY_TS
#undef GW_ENTRY_C2_TS
#undef GW_TS_BODY
#undef GW_TS_PARAMS
#undef GW_ENTRY
#undef GW_ENTRY_C2
#undef GW_ENTRY_N2

extern "C" __global__ void __launch_bounds__(256)
    gemm_wgmma_reduce_bf16(const float* P, __nv_bfloat16* C, unsigned long long elems, int splits) {
    gemm_wgmma_detail::reduce_body<__nv_bfloat16>(P, C, elems, splits);
}

extern "C" __global__ void __launch_bounds__(256)
    gemm_wgmma_reduce_f16(const float* P, __half* C, unsigned long long elems, int splits) {
    gemm_wgmma_detail::reduce_body<__half>(P, C, elems, splits);
}

// Padding for shapes whose row strides TMA cannot take (K or N not a multiple of 8): the host
// copies A (M x K) into M x Kp, or B (K x N) into K x Np, with zeros in the added columns
// (a multiple of 8 wide, so every padded row is 16-byte aligned), runs the GEMM on the padded
// operands (rows of B past K are out of bounds of its tensor map: TMA fills them with zeros)
// and, when N was padded, copies the first N columns of the M x Np result back into C.
// dst[r][c] = c < cols ? src[r][c] : 0 for r < rows, c < cols_p; 16-bit elements, cols_p % 8 == 0,
// one thread per 8 elements of dst (one 16-byte store).
extern "C" __global__ void __launch_bounds__(256)
    gemm_wgmma_pad16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                     int rows, int cols, int cols_p) {
    gemm_wgmma_detail::pdl_launch_next();
    gemm_wgmma_detail::pdl_wait_previous();
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

// dst[r][c] = src[r][c] for r < rows, c < cols, src rows cols_p long (the padded result).
extern "C" __global__ void __launch_bounds__(256)
    gemm_wgmma_unpad16(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst,
                       int rows, int cols, int cols_p) {
    gemm_wgmma_detail::pdl_launch_next();
    gemm_wgmma_detail::pdl_wait_previous();
    const unsigned long long n = (unsigned long long)rows * cols;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long r = i / cols;
        dst[i] = src[r * cols_p + (i - r * cols)];
    }
}
