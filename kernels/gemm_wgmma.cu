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
//   128x192_ts   128 192      2       384     5     223232       1         96  (session 46)
//   128x256_c2   128 256      2       384     4     197760       1        128  (2-CTA cluster)
//   128x128_c2   128 128      2       384     6     197760       1         64  (2-CTA cluster)
//   192x192      192 192      3       512     4     197760       1         96  (session 28)
//
//   dyn. smem = stages * (BM*64*2 + 64*BN*2) + 1024 (alignment slack) + 128 (mbarriers).
//
//   TMA-STORE ENTRIES (suffix _ts after the tile: 128x256_ts, 128x256_c2_ts, 128x128_ts,
//   128x128_c2_ts, session 32; 128x64_ts, 192x192_ts, session 33; 128x192_ts, session 46): the same tile with the
//   epilogue below ("TMA-store epilogue") and one more kernel parameter, the tensor map of C.
//   Their dynamic smem adds 1024 - 128 (the barriers' block rounded up to 1 KiB) and EPI_NBUF
//   8 KiB staging boxes per consumer warpgroup (two, or one where two do not fit):
//   stages * (BM*64*2 + 64*BN*2) + 2048 + consumers * EPI_NBUF * 8192 = 231424 bytes for the
//   128-row tiles (two boxes), 223232 for 192x192 and 128x192 (one box: five 40 KiB stages
//   leave no room for two).
//   BM = 64 * consumers: each consumer warpgroup owns 64 rows x BN columns of the CTA tile and
//   issues BK/16 = 4 wgmma.m64n<BN>k16 per stage. K step BK = 64 for all tiles.
//
// DESIGN (common to all tiles)
//   * Warp-specialized: warpgroup 0 = producer (one elected thread issues the TMA loads: 1 box
//     for A, BN/64 boxes for B per stage), warpgroups 1..consumers = consumers. With two
//     consumers the producer does setmaxnreg.dec to 40 and the consumers setmaxnreg.inc to 232;
//     with three (192x192, 512 threads starting at 128 registers) to 40 and 152, and for
//     192x192_ts (its overlapped epilogue holds a packed tile, session 44) to 32 and 160.
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
//   * 192x192_ts and 128x256_c2_ts without K splits do the same (session 44): each tile is
//     stored during the next tile's first three (192x192) or four K blocks, and the CTA's last
//     tile skews its tail. With three consumer warpgroups the skew is a chain: warpgroup 1 waits
//     (named barrier 4) until warpgroup 0 has issued the last STAGES blocks, warpgroup 2
//     (barrier 5) until warpgroup 1 has; then warpgroup 2 waits (barrier 6) until the others'
//     wgmmas have completed and writes its three boxes into the freed stage ring at once, its
//     leader storing them back to back (GW_LASTSTAGE; with one staging box per warpgroup each
//     box otherwise waited for the previous store's read). The consumers hold 160 registers
//     (the producer 32) for the packed tile beside the accumulators; ptxas spills nothing.
//     Same-run A/B through the harness against session 43's 192x192_ts
//     (kernels/dev/gemm_define_patch.py GW_OVL3=0 GW_LASTSTAGE=0), three rounds each, 3072^3:
//     H200 GPU-2b001742 (without the ring store) 0.980-0.991x the time, H200 GPU-20c38226
//     0.981-0.990x, H100 GPU-fd5cc333 0.983-0.994x; the ring store alone is within the
//     pairing's noise (0.994-1.007). The cluster tile (GW_C2_OVL, with its start-up cluster
//     barrier arriving .relaxed, GW_C2_RELAXED: the init thread's fence.mbarrier_init already
//     releases the barriers to the peer), forced through the harness against the shipped
//     cluster entry, H100 GPU-05cd9fa8, two rounds: 2048^3 0.959-0.980x the time,
//     4096x1000x4096 0.988-0.989x, 4096^3 0.987-0.993x, 8192x1000x8192 0.996-0.997x.
//
//   * 128x192_ts without K splits takes 128x256_ts's path (session 46): each warpgroup packs its
//     64 x 192 slab (48 registers beside 96 accumulators), stores its three boxes during the
//     next tile's first three K blocks through its one staging box, and the CTA's last tile
//     skews its tail. Dev bench (L2 read-flushed, every config checked against the fp32
//     reference first), 50 shapes bf16, three sweeps (H200 GPU-3f669afb, GPU-967d376f, H100
//     GPU-3542898b; docs/kernels/session46): on the 17 shapes whose pick is 128x192, faster than
//     the register epilogue on 15-16 of them, 0.953-0.967x its time in geomean, from 0.84x
//     (2560x1152x512, H100) to 1.07x (6144x1536x12288, the first H200); the most where K is
//     short. Through the gate, 8191x264x128: 7.19-7.25 us against 8.06-8.20 on H100s, 6.90-6.99
//     against 7.65-7.82 on H200s.
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
#include "gemm_wgmma.cuh"

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
GW_ENTRY_TS(gemm_wgmma_bf16_128x192_ts, __nv_bfloat16, true, Cfg128x192)
GW_ENTRY_TS(gemm_wgmma_f16_128x192_ts, __half, false, Cfg128x192)
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
    gemm_wgmma_detail::pad16_body(src, dst, rows, cols, cols_p);
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
