// gemm_wgmma_sk.cu -- the 128x256 Hopper GEMM of gemm_wgmma.cu with a stream-K tail (issue 12,
// session 28): same operands, tensor maps, tile, smem ring, producer and consumers, but the
// persistent grid's work is split so that every CTA gets the same number of K blocks.
//
// Why: on the squares the 128x256 tiles number 128 (2048^3), 288 (3072^3), 512 (4096^3),
// 1152 (6144^3) and 2048 (8192^3) on 132 SMs, so the last round of tiles leaves 3-27% of the
// SMs idle (Nsight Compute, H100 GPU-8d65af2c: tensor pipe active 87% of the cycles at 4096^3).
//
// Schedule ("data-parallel + stream-K", computed identically by every thread of every CTA):
//   T tiles (raster order of gemm_wgmma.cu's tile_coords), G = gridDim.x CTAs, nk K blocks a tile.
//   With W = T / G full rounds and r = T % G: r == 0 -> every tile data-parallel; else the last
//   r + (W >= 1 ? G : 0) tiles are stream-K tiles and the first dp = T - sk are data-parallel
//   (CTA c takes tiles c, c + G, ... < dp whole). The stream-K tiles' I = sk * nk K blocks are
//   cut into G equal ranges [c*I/G, (c+1)*I/G); CTA c walks its range after its data-parallel
//   tiles as segments (tile, k0, k1), one per tile it touches.
//   * A segment with k0 == 0 and k1 == nk is a whole tile: stored as in gemm_wgmma.cu.
//   * A segment with k0 > 0 is the first segment of its CTA's range (a range starts inside at
//     most one tile): its consumer warpgroups write their fp32 accumulators, fragment order, to
//     the CTA's slot of the workspace P and set the slot's flag (release, GPU scope).
//   * A segment with k0 == 0 and k1 < nk (the last of its CTA's range) owns the tile: for each
//     later CTA whose range meets the tile, in increasing order, it waits for that CTA's flag
//     (acquire), adds its slot and resets the flag to 0; then it stores the tile. The order of
//     the additions is fixed, so results are bitwise reproducible run to run.
//   No deadlock: an owner waits only on later CTAs' FIRST segments (CTAs with an empty range,
//   possible when I < G, are skipped), which wait on nothing, and the grid is at most one CTA
//   per SM (all CTAs resident).
//
// Workspace P (host allocated, 16-byte aligned): G * 2 slots of 64 x 256 floats (one per
// consumer warpgroup), then G * 2 int flags, which must be 0 before the first launch (the
// kernel leaves them 0). Launch as gemm_wgmma_<dt>_128x256 (384 threads, 197760 bytes of
// dynamic smem, grid = min(T, SMs)); `splits` must be 1.
#include "gemm_wgmma.cu"

namespace gemm_sk_detail {
using namespace gemm_wgmma_detail;

// Floats in one consumer warpgroup's slot (its 64 x 256 fp32 accumulators).
constexpr int SLOT_FLOATS = 64 * 256;

struct Plan {
    int dp;           // data-parallel tiles (a multiple of G)
    int nk;           // K blocks a tile
    int g;            // CTAs
    long long iters;  // stream-K K blocks (sk tiles x nk)
};

static __device__ __forceinline__ Plan make_plan(int tiles, int nk, int g) {
    const int rem = tiles % g;
    const int sk = rem == 0 ? 0 : rem + (tiles / g >= 1 ? g : 0);
    return Plan{tiles - sk, nk, g, (long long)sk * nk};
}

// First stream-K K block of CTA c.
static __device__ __forceinline__ long long range_start(const Plan& p, int c) {
    return p.iters * c / p.g;
}

// Calls f(tile, k0, k1) for every segment of CTA c in order: its data-parallel tiles, then its
// stream-K range.
template <class F>
static __device__ __forceinline__ void for_each_segment(const Plan& p, int c, F&& f) {
    for (int t = c; t < p.dp; t += p.g) f(t, 0, p.nk);
    const long long b = range_start(p, c + 1);
    for (long long pos = range_start(p, c); pos < b;) {
        const int t = (int)(pos / p.nk);
        const int k0 = (int)(pos - (long long)t * p.nk);
        const int k1 = (int)min((long long)p.nk, k0 + (b - pos));
        f(p.dp + t, k0, k1);
        pos += k1 - k0;
    }
}

static __device__ __forceinline__ void wg_sync(int cw) {
    asm volatile("bar.sync %0, 128;" ::"r"(1 + cw) : "memory");
}
static __device__ __forceinline__ int load_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void store_release(int* p, int v) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Rounds a consumer warpgroup's 64 x 256 accumulators and stores them at rows row_base.. and
// columns col_base.. of C, 16 bytes a store after a transpose inside each quad (gemm_wgmma.cu's
// epilogue).
template <typename T>
static __device__ __forceinline__ void store_tile(const float (&d)[128], T* __restrict__ C, int M,
                                                  int N, int row_base, int col_base) {
    const int lane = threadIdx.x & 31;
    const int warp = (threadIdx.x >> 5) & 3;
    const int t = lane & 3;
    const int qbase = lane & ~3;
    const int row0 = row_base + warp * 16 + (lane >> 2);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const int col = col_base + 32 * j + 8 * t;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            unsigned p[4], o[4];
#pragma unroll
            for (int q = 0; q < 4; ++q)
                p[q] = pack2_bits<T>(d[4 * (4 * j + q) + 2 * h], d[4 * (4 * j + q) + 2 * h + 1]);
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const unsigned v =
                    __shfl_sync(0xffffffffu, sel4(p, (t - r) & 3), qbase | ((t + r) & 3));
#pragma unroll
                for (int q = 0; q < 4; ++q) o[q] = ((t + r) & 3) == q ? v : o[q];
            }
            const int row = row0 + 8 * h;
            if (row < M && col < N)
                *reinterpret_cast<uint4*>(C + (size_t)row * N + col) =
                    make_uint4(o[0], o[1], o[2], o[3]);
        }
    }
}

template <typename T, bool BF16>
static __device__ __forceinline__ void sk_body(const CUtensorMap* tmA, const CUtensorMap* tmB,
                                               T* __restrict__ C, float* __restrict__ P, int M,
                                               int N, int K) {
    typedef Cfg128x256 CF;
    constexpr int BM = CF::BM;
    constexpr int BN = CF::BN;
    constexpr int STAGES = CF::STAGES;
    constexpr unsigned A_STAGE_BYTES = CF::A_STAGE_BYTES;
    constexpr unsigned B_STAGE_BYTES = CF::B_STAGE_BYTES;
    extern __shared__ __align__(16) unsigned char gw_smem[];
    const unsigned base = (smem_u32(gw_smem) + 1023u) & ~1023u;
    const unsigned a_base = base;
    const unsigned b_base = base + STAGES * A_STAGE_BYTES;
    const unsigned bar_base = base + STAGES * CF::STAGE_BYTES;
    auto full = [&](unsigned s) { return bar_base + 8u * s; };
    auto empty = [&](unsigned s) { return bar_base + 8u * (STAGES + s); };

    const int tid = threadIdx.x;
    const int wg = tid >> 7;
    const int num_tm = (M + BM - 1) / BM;
    const int num_tn = (N + BN - 1) / BN;
    const int cid = blockIdx.x;
    const Plan plan = make_plan(num_tm * num_tn, (K + BK - 1) / BK, gridDim.x);
    int* flags = reinterpret_cast<int*>(P + (size_t)plan.g * 2 * SLOT_FLOATS);

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), 2);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    pdl_launch_next();
    pdl_wait_previous();

    if (wg == 0) {
        // ------------------------------ producer ------------------------------
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmA))
                         : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmB))
                         : "memory");
            unsigned it = 0;
            for_each_segment(plan, cid, [&](int tile, int k0, int k1) {
                int tm, tn;
                tile_coords(tile, num_tm, num_tn, tm, tn);
                for (int kb = k0; kb < k1; ++kb, ++it) {
                    const unsigned s = it % STAGES;
                    mbar_wait(empty(s), ((it / STAGES) & 1u) ^ 1u);
                    mbar_arrive_expect_tx(full(s), CF::STAGE_BYTES);
                    tma_load_2d(a_base + s * A_STAGE_BYTES, tmA, full(s), kb * BK, tm * BM);
#pragma unroll
                    for (int c = 0; c < BN / 64; ++c)
                        tma_load_2d(b_base + s * B_STAGE_BYTES + c * B_BOX_BYTES, tmB, full(s),
                                    tn * BN + 64 * c, kb * BK);
                }
            });
        }
    } else {
        // ------------------------------ consumers ------------------------------
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int cw = wg - 1;
        const int tl = tid & 127;
        const bool leader = tl == 0;
        unsigned it = 0;
        float d[128];
        for_each_segment(plan, cid, [&](int tile, int k0, int k1) {
            int tm, tn;
            tile_coords(tile, num_tm, num_tn, tm, tn);
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.0f;
            for (int kb = k0; kb < k1; ++kb, ++it) {
                const unsigned s = it % STAGES;
                mbar_wait(full(s), (it / STAGES) & 1u);
                const unsigned a_s = a_base + s * A_STAGE_BYTES + cw * (64 * 128);
                const unsigned b_s = b_base + s * B_STAGE_BYTES;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    wgmma_tile<BF16, BN>(d, make_desc(a_s + kk * 32, 16, 1024),
                                         make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO));
                wgmma_commit();
                wgmma_wait<1>();
                if (kb > k0 && leader) mbar_arrive(empty((it - 1) % STAGES));
            }
            wgmma_wait<0>();
            if (k1 > k0 && leader) mbar_arrive(empty((it - 1) % STAGES));

            float4* const mine = reinterpret_cast<float4*>(P + (size_t)(cid * 2 + cw) * SLOT_FLOATS);
            if (k0 > 0) {
                // the later part of a tile that an earlier CTA owns: hand the partial sums over
#pragma unroll
                for (int i = 0; i < 32; ++i)
                    __stcg(mine + i * 128 + tl, make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2],
                                                            d[4 * i + 3]));
                __threadfence();
                wg_sync(cw);
                if (leader) store_release(flags + cid * 2 + cw, 1);
                return;
            }
            if (k1 < plan.nk) {
                // the owner: add the later CTAs' partial sums of this tile, in CTA order
                const long long tile_end = (long long)(tile - plan.dp + 1) * plan.nk;
                for (int c = cid + 1; c < plan.g && range_start(plan, c) < tile_end; ++c) {
                    if (range_start(plan, c + 1) == range_start(plan, c)) continue;  // empty range
                    int* flag = flags + c * 2 + cw;
                    if (leader)
                        while (load_acquire(flag) == 0) {
                        }
                    wg_sync(cw);
                    const float4* src =
                        reinterpret_cast<const float4*>(P + (size_t)(c * 2 + cw) * SLOT_FLOATS);
#pragma unroll
                    for (int i = 0; i < 32; ++i) {
                        const float4 v = __ldcg(src + i * 128 + tl);
                        d[4 * i] += v.x;
                        d[4 * i + 1] += v.y;
                        d[4 * i + 2] += v.z;
                        d[4 * i + 3] += v.w;
                    }
                    wg_sync(cw);
                    if (leader) *flag = 0;
                }
            }
            store_tile<T>(d, C, M, N, tm * BM + cw * 64, tn * BN);
        });
    }
}
}  // namespace gemm_sk_detail

// Same parameters as gemm_wgmma.cu's entries; P is the stream-K workspace (see the header) and
// splits must be 1.
#define GSK_ENTRY(NAME, T, BF16)                                                                   \
    extern "C" __global__ void __launch_bounds__(384, 1)                                           \
        NAME(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,     \
             T* C, float* P, int M, int N, int K, int splits) {                                    \
        (void)splits;                                                                              \
        gemm_sk_detail::sk_body<T, BF16>(&tmA, &tmB, C, P, M, N, K);                               \
    }
GSK_ENTRY(gemm_wgmma_bf16_128x256_sk, __nv_bfloat16, true)
GSK_ENTRY(gemm_wgmma_f16_128x256_sk, __half, false)
#undef GSK_ENTRY
