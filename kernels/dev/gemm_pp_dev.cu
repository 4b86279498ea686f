// gemm_pp_dev.cu -- experiment (session 28, issue 12): a "ping-pong" schedule for the Hopper
// bf16/fp16 GEMM of ../gemm_wgmma.cu, for the dev bench only (gemm_wgmma_bench.cu includes this
// file; the harness does not load it).
//
// Why: Nsight Compute of the shipped 128x256 tile (H100 GPU-8d65af2c, session 28) had the
// tensor pipe active 87% of the cycles at 4096^3 (4 tiles an SM) and 68% at 2048^3 (1 tile an
// SM), where the mainloop alone would keep it at ~97% and ~97%: each tile pays a prologue and an
// epilogue with both consumer warpgroups off the tensor cores. Here each consumer warpgroup owns
// a whole output tile (WM x BN, WM = 64 or 128) and the two take the CTA's tiles in turn: one
// issues its mainloop while the other stores its previous tile, so only the CTA's last epilogue
// is exposed.
//
// Same operands, tensor maps (A box {64, WM}), smem layout of a stage (A then B, SW128), producer
// and launch as gemm_wgmma.cu's CL = 1 tiles, splits == 1 only. Consumer warpgroup w takes the
// CTA's units j = w, w + 2, ...; its smem ring iteration counter starts at j * num_k (every unit
// has num_k K blocks). Order: warpgroup w waits on named barrier 1 + w before its mainloop (not
// for its first unit) and, once it has issued its last wgmma of a unit, arrives on the other's
// barrier if the CTA has a next unit (each arrive meets exactly one wait). Stage release: one
// arrive per stage (empty barriers count 1), one wgmma group kept in flight as in gemm_wgmma.cu.
#include "../gemm_wgmma.cu"

namespace gemm_pp_detail {
using namespace gemm_wgmma_detail;

template <int WM_, int BN_, int STAGES_>
struct PpCfg {
    static constexpr int WM = WM_;
    static constexpr int BN = BN_;
    static constexpr int STAGES = STAGES_;
    static constexpr int THREADS = 384;
    static constexpr unsigned A_STAGE_BYTES = WM * BK * 2;
    static constexpr unsigned B_STAGE_BYTES = BK * BN * 2;
    static constexpr unsigned STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    static constexpr unsigned SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + 128;
    static_assert(WM * BN == 16384, "128 fp32 accumulators a thread");
    static_assert(2 * STAGES_ * 8 <= 128, "mbarriers fit their 128 bytes");
    static_assert(SMEM_BYTES <= 232448, "at most 227 KiB of dynamic smem per CTA");
};

// Rounds and stores one 64-row slab of accumulators (d: the m64nBN wgmma fragment) at rows
// row_base.. and columns col_base.. of C: within each quad the 4 lanes exchange their bf16x2
// pairs so that each holds 8 adjacent columns, one 16-byte store each (bounds checked; N % 8 == 0).
template <typename T, int BN>
static __device__ __forceinline__ void store_slab(const float (&d)[BN / 2], T* __restrict__ C,
                                                  int M, int N, int row_base, int col_base) {
    const int lane = threadIdx.x & 31;
    const int warp = (threadIdx.x >> 5) & 3;
    const int t = lane & 3;
    const int qbase = lane & ~3;
    const int row0 = row_base + warp * 16 + (lane >> 2);
#pragma unroll
    for (int j = 0; j < BN / 32; ++j) {
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

static __device__ __forceinline__ void named_sync(int id) {
    asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory");
}
static __device__ __forceinline__ void named_arrive(int id) {
    asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory");
}

template <typename T, bool BF16, class CF>
static __device__ __forceinline__ void pp_body(const CUtensorMap* tmA, const CUtensorMap* tmB,
                                               T* __restrict__ C, int M, int N, int K) {
    constexpr int WM = CF::WM;
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
    const int num_tm = (M + WM - 1) / WM;
    const int num_tn = (N + BN - 1) / BN;
    const int units = num_tm * num_tn;
    const int num_k = (K + BK - 1) / BK;
    const int cid = blockIdx.x;
    const int ncl = gridDim.x;
    const int total = cid < units ? (units - cid + ncl - 1) / ncl : 0;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full(s), 1);
            mbar_init(empty(s), 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    pdl_launch_next();
    pdl_wait_previous();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmA))
                         : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmB))
                         : "memory");
            unsigned it = 0;
            for (int j = 0; j < total; ++j) {
                int tm, tn;
                tile_coords(cid + j * ncl, num_tm, num_tn, tm, tn);
                for (int kb = 0; kb < num_k; ++kb, ++it) {
                    const unsigned s = it % STAGES;
                    mbar_wait(empty(s), ((it / STAGES) & 1u) ^ 1u);
                    mbar_arrive_expect_tx(full(s), CF::STAGE_BYTES);
                    tma_load_2d(a_base + s * A_STAGE_BYTES, tmA, full(s), kb * BK, tm * WM);
#pragma unroll
                    for (int c = 0; c < BN / 64; ++c)
                        tma_load_2d(b_base + s * B_STAGE_BYTES + c * B_BOX_BYTES, tmB, full(s),
                                    tn * BN + 64 * c, kb * BK);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int w = wg - 1;
        const bool leader = (tid & 127) == 0;
        float d0[BN / 2];
        float d1[WM == 128 ? BN / 2 : 1];
        for (int j = w; j < total; j += 2) {
            int tm, tn;
            tile_coords(cid + j * ncl, num_tm, num_tn, tm, tn);
            unsigned it = (unsigned)j * (unsigned)num_k;
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) d0[i] = 0.0f;
            if constexpr (WM == 128) {
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) d1[i] = 0.0f;
            }
            if (j > 0) named_sync(1 + w);
            for (int kb = 0; kb < num_k; ++kb, ++it) {
                const unsigned s = it % STAGES;
                mbar_wait(full(s), (it / STAGES) & 1u);
                const unsigned a_s = a_base + s * A_STAGE_BYTES;
                const unsigned b_s = b_base + s * B_STAGE_BYTES;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    const unsigned long long db = make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO);
                    wgmma_tile<BF16, BN>(d0, make_desc(a_s + kk * 32, 16, 1024), db);
                    if constexpr (WM == 128)
                        wgmma_tile<BF16, BN>(d1, make_desc(a_s + 8192 + kk * 32, 16, 1024), db);
                }
                wgmma_commit();
                wgmma_wait<1>();
                if (kb > 0 && leader) mbar_arrive(empty((it - 1) % STAGES));
            }
            // every wgmma of this unit is issued: the other warpgroup may start its mainloop
            if (j + 1 < total) named_arrive(1 + (1 - w));
            wgmma_wait<0>();
            if (num_k > 0 && leader) mbar_arrive(empty((it - 1) % STAGES));
            store_slab<T, BN>(d0, C, M, N, tm * WM, tn * BN);
            if constexpr (WM == 128) store_slab<T, BN>(d1, C, M, N, tm * WM + 64, tn * BN);
        }
    }
}

typedef PpCfg<128, 128, 6> Pp128x128;
typedef PpCfg<64, 256, 5> Pp64x256;
}  // namespace gemm_pp_detail

// Same parameters as gemm_wgmma.cu's entries (P and splits unused: splits must be 1).
#define GPP_ENTRY(NAME, T, BF16, CFG)                                                              \
    extern "C" __global__ void __launch_bounds__(384, 1)                                           \
        NAME(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,     \
             T* C, float* P, int M, int N, int K, int splits) {                                    \
        (void)P;                                                                                   \
        (void)splits;                                                                              \
        gemm_pp_detail::pp_body<T, BF16, gemm_pp_detail::CFG>(&tmA, &tmB, C, M, N, K);             \
    }
GPP_ENTRY(gemm_wgmma_bf16_128x128_pp, __nv_bfloat16, true, Pp128x128)
GPP_ENTRY(gemm_wgmma_f16_128x128_pp, __half, false, Pp128x128)
GPP_ENTRY(gemm_wgmma_bf16_64x256_pp, __nv_bfloat16, true, Pp64x256)
GPP_ENTRY(gemm_wgmma_f16_64x256_pp, __half, false, Pp64x256)
#undef GPP_ENTRY
