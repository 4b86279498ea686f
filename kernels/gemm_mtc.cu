// kernelgate GEMM for M <= 8 on tensor cores: C[M,N] = A[M,K] · B[K,N], row-major, bf16 or fp16
// in, fp32 accumulation (mma.sync m16n8k16), compute capability 8.0 and up.
//
// Why: the SIMT GEMV (gemm_gemv.cu) spends M multiply-adds per element of B, which at M = 5-8 is
// more issue than the memory stream leaves room for. Here B is the MMA's A operand
// (C^T = B^T · A^T): one m16n8k16 takes 16 columns x 16 rows of B against the (up to) 8 rows of A,
// so the instructions per byte of B do not grow with M.
//
// Session 41 rewrite (the session-19 version, measured 1.1-3.2x slower than the default paths in
// session 40, read A from global memory inside its MMA loop and added K splits through global
// partials in a second pass): kernels/dev/gemv_ring_bench.cu measured the steps one by one with
// per-CTA clocks on an H100, and this layout is what came out of it.
//
// gemm_mtc_<dt> (dt bf16, fp16), 256 threads (8 warps); needs N % 8 == 0 (16-byte rows of B):
//   * Grid (ceil(N / 64)): CTA x owns columns 64x .. 64x+63 of C over all of K (no K split:
//     splitting K over a cluster or through global partials cost more in the epilogue than it
//     gained in bandwidth on every shape measured).
//   * A first. The CTA's M rows of A go to shared memory, [m][k] as 16-bit with rows of
//     arows = K rounded up to 128 (+ 16 bytes of padding per row), BEFORE any of B is requested:
//     by 16-byte cp.async when K % 8 == 0, 4-byte when K is even, plain loads otherwise, zeros past
//     K. (Requested behind B's stream, A's few lines waited microseconds and held every warp.)
//   * B streams through a per-warp ring of MTC_STAGES stages. Warp w takes rows
//     128·i + 16w .. +15 (one k16 step) of B for i = 0, 1, ...; a stage is those 16 rows x 64
//     columns (2 KiB), brought in by 16-byte cp.async (lane l: chunk l % 8 of rows l / 8 + 4j),
//     chunk c of row r stored at chunk c ^ (r & 7), so the ldmatrix below reads 8 rows without
//     bank conflicts. Rows past K and columns past N are zero-filled. Each warp waits only for its
//     own copies (cp.async.wait_group; one CTA barrier before the first step, for A).
//   * Per step: the m16n8k16 B fragment (A's rows g = lane / 4, k = 2t, 2t+1 and +8; zero for
//     g >= M) from shared memory, then per 16 columns one ldmatrix.x4.trans (B^T's 16 x 16 A
//     fragment) and one MMA into that warp's fp32 accumulators (64 columns x 8 rows).
//   * Epilogue: the eight warps' accumulators through shared memory (the ring, drained), added in
//     warp order (deterministic), C written once.
//
// Launch: block 256, grid (ceil(N / 64)), dynamic shared memory MTC_RING_BYTES + M · a_stride(K)
// bytes (98304 + M · (2 · ceil(K / 128) · 128 + 16); src/backend/cuda/gemm_mtc.rs mirrors it);
// params { A, B, C, M, N, K } with 1 <= M <= 8, N % 8 == 0. May be launched as a programmatic
// dependent of the stream's previous kernel (griddepcontrol.wait precedes every memory access).
#include "kg_common.cuh"

#define MTC_WARPS 8
#define MTC_THREADS (MTC_WARPS * 32)
#define MTC_BN 64
#define MTC_STAGES 6
#define MTC_ROW_BYTES (MTC_BN * 2)
#define MTC_STAGE_BYTES (16 * MTC_ROW_BYTES)
#define MTC_GROUP (16 * MTC_WARPS)
// The ring (every warp's stages), reused for the warps' partial sums (8 warps x 8 rows x 64
// columns of fp32 = 16 KiB, smaller than the ring).
#define MTC_RING_BYTES (MTC_STAGES * MTC_WARPS * MTC_STAGE_BYTES)

namespace gemm_mtc_detail {

// Bytes of a row of A in shared memory for K: whole 128-row groups of 16-bit, + 16 bytes of padding.
static __host__ __device__ __forceinline__ int a_stride(int K) {
    return (K + MTC_GROUP - 1) / MTC_GROUP * MTC_GROUP * 2 + 16;
}

template <typename T> struct IsBf16 {
    static constexpr bool value = false;
};
template <> struct IsBf16<__nv_bfloat16> {
    static constexpr bool value = true;
};

// d += a · b on one m16n8k16 tile (row.col, fp32 accumulators).
template <typename T>
static __device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (IsBf16<T>::value)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    __trap();
#endif
}

template <typename T> static __device__ __forceinline__ T to_t(float x) {
    if constexpr (IsBf16<T>::value)
        return __float2bfloat16_rn(x);
    else
        return __float2half_rn(x);
}

static __device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// BYTES (4 or 16) from src to shared address dst, of which `valid` are read and the rest zeroed.
template <int BYTES>
static __device__ __forceinline__ void cp_async(unsigned dst, const void* src, int valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid)
                     : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(valid)
                     : "memory");
#endif
}
static __device__ __forceinline__ void cp_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> static __device__ __forceinline__ void cp_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

template <typename T>
static __device__ __forceinline__ void mtc(const T* __restrict__ A, const T* __restrict__ B,
                                           T* __restrict__ C, int M, int N, int K) {
    constexpr int ST = MTC_STAGES, W = MTC_BN, ROWB = MTC_ROW_BYTES, GROUP = MTC_GROUP;
    extern __shared__ __align__(128) unsigned char smem[];
    float* red = reinterpret_cast<float*>(smem);
    unsigned char* As = smem + MTC_RING_BYTES;
    const int astride = a_stride(K);
    const int arows = (astride - 16) / 2;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int col0 = blockIdx.x * W;
    const int nsteps = (K + GROUP - 1) / GROUP;
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif

    // A first, in the oldest cp.async group.
    const unsigned as0 = smem_addr(As);
    const int vec = (K % 8 == 0) ? 8 : (K % 2 == 0) ? 2 : 0;
    if (vec) {
        const int per = arows / vec;
        for (int i = threadIdx.x; i < M * per; i += MTC_THREADS) {
            const int m = i / per, r = vec * (i - m * per);
            const int n = max(0, min(vec, K - r));  // elements that exist
            const void* src = n ? (const void*)(A + (size_t)m * K + r) : (const void*)A;
            if (vec == 8)
                cp_async<16>(as0 + m * astride + r * 2, src, 2 * n);
            else
                cp_async<4>(as0 + m * astride + r * 2, src, 2 * n);
        }
    }
    cp_commit();

    // This lane's 16-byte chunk of rows my_row + 4j of each stage.
    const int my_chunk = lane & 7, my_row = lane >> 3;
    const int col = col0 + my_chunk * 8;
    const unsigned ring0 = smem_addr(smem) + warp * MTC_STAGE_BYTES;
    auto issue = [&](int step) {
        if (step < nsteps) {  // uniform over the CTA; an empty group is still committed
            const unsigned st = ring0 + (step % ST) * MTC_WARPS * MTC_STAGE_BYTES;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int r = my_row + 4 * j;
                const int row = step * GROUP + warp * 16 + r;
                const bool ok = row < K && col < N;
                cp_async<16>(st + r * ROWB + ((my_chunk ^ (r & 7)) << 4),
                             ok ? (const void*)(B + (size_t)row * N + col) : (const void*)B, ok ? 16 : 0);
            }
        }
        cp_commit();
    };
#pragma unroll
    for (int s = 0; s < ST; s++) issue(s);
    if (!vec) {
        for (int i = threadIdx.x; i < M * arows; i += MTC_THREADS) {
            const int m = i / arows, r = i - m * arows;
            *reinterpret_cast<T*>(As + m * astride + r * 2) = r < K ? A[(size_t)m * K + r] : to_t<T>(0.0f);
        }
    }

    float acc[W / 16][4];
#pragma unroll
    for (int j = 0; j < W / 16; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) acc[j][i] = 0.0f;
    const int g = lane >> 2, t = lane & 3;
    // ldmatrix.x4.trans: lanes 8q..8q+7 give the rows of matrix q = (k half q >> 1, 8-column half q & 1).
    const int lq = lane >> 3, lk = (lq >> 1) * 8 + (lane & 7);
    const unsigned char* arow = As + (g < M ? g : 0) * astride;

    for (int step = 0; step < nsteps; step++) {
        cp_wait<ST - 1>();
        if (step == 0) __syncthreads();  // A (every thread's copies or stores) has landed
        __syncwarp();                     // every lane's copies of this stage have landed
        const unsigned st = ring0 + (step % ST) * MTC_WARPS * MTC_STAGE_BYTES;
        const int kl = step * GROUP + warp * 16;
        const unsigned b0 = g < M ? *reinterpret_cast<const unsigned*>(arow + (kl + 2 * t) * 2) : 0u;
        const unsigned b1 = g < M ? *reinterpret_cast<const unsigned*>(arow + (kl + 2 * t) * 2 + 16) : 0u;
#pragma unroll
        for (int j = 0; j < W / 16; j++) {
            unsigned a[4];
            const int c = 2 * j + (lq & 1);
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                         : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                         : "r"(st + lk * ROWB + ((c ^ (lk & 7)) << 4)));
            mma<T>(acc[j], a, b0, b1);
        }
        __syncwarp();  // every lane's reads of this stage are done before it is refilled
        issue(step + ST);
    }
    cp_wait<0>();
    __syncthreads();  // the ring is drained: it becomes red

    // acc[j]: rows n = 16j + g (+8 for i >= 2) of C^T, columns m = 2t (+1 for odd i).
#pragma unroll
    for (int j = 0; j < W / 16; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int n = 16 * j + g + (i >= 2 ? 8 : 0), m = 2 * t + (i & 1);
            if (m < M) red[(warp * 8 + m) * W + n] = acc[j][i];
        }
    __syncthreads();
    for (int o = threadIdx.x; o < M * W; o += MTC_THREADS) {
        const int m = o / W, c = col0 + (o - m * W);
        float v = red[m * W + (o - m * W)];
#pragma unroll
        for (int w = 1; w < MTC_WARPS; w++) v += red[(w * 8 + m) * W + (o - m * W)];
        if (c < N) C[(size_t)m * N + c] = to_t<T>(v);
    }
}

}  // namespace gemm_mtc_detail

#define MTC_ENTRY(NAME, T)                                                                         \
    extern "C" __global__ void __launch_bounds__(MTC_THREADS, 1)                                   \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, int M, int N,   \
             int K) {                                                                              \
        gemm_mtc_detail::mtc<T>(A, B, C, M, N, K);                                                 \
    }
MTC_ENTRY(gemm_mtc_bf16, __nv_bfloat16)
MTC_ENTRY(gemm_mtc_fp16, __half)
#undef MTC_ENTRY
