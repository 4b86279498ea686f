// kernelgate GEMM for M <= 8 on tensor cores: C[M,N] = A[M,K] · B[K,N], row-major, bf16 or fp16
// in, fp32 accumulation (mma.sync m16n8k16), compute capability 8.0 and up. Written in session 19
// as an experiment behind KERNELGATE_GEMM_MTC=1 (off by default): not yet run on a GPU.
//
// Why: the SIMT GEMV (gemm_gemv.cu) spends M multiply-adds per element of B, which at M = 5-8
// is more issue than the memory stream leaves room for (session 19: 8x8192x8192 bf16 took 64-68
// us against 41-51 for the wgmma tiles). Here B is the MMA's A operand (C^T = B^T · A^T): one
// m16n8k16 takes 16 columns x 16 rows of B against up to 8 rows of A, so the instruction count
// per byte of B does not grow with M.
//
// gemm_mtc_<dt> (dt bf16, fp16), 128 threads (4 warps); needs N % 8 == 0 (16-byte rows of B):
//   * Grid (strips, splits). A strip is BN = 128 columns of C; warp w owns columns
//     strip·128 + 32w .. +31 as two m16 tiles. CTA (x, s) covers rows [s·kchunk,
//     min(K, (s+1)·kchunk)) of B in tiles of BK = 32 rows.
//   * B streams through STAGES = 4 shared-memory stages (8 KB each) by 16-byte cp.async
//     (rows past the range and columns past N zero-filled), STAGES - 1 tiles in flight. A stage
//     row is 256 bytes; its 16-byte chunk c sits at chunk c ^ (row & 7), so the eight rows an
//     ldmatrix reads at one column fall in eight different bank groups.
//   * Per 16 rows of a tile, each m16 tile's fragment comes from one ldmatrix.x4.trans (the
//     stage holds B row by row; transposed, lane (g, t) gets B[k = 2t, 2t+1][n = g] etc., the
//     MMA's row-major A fragment over (n, k)); the MMA's B fragment is A[g][k = 2t, 2t+1] and
//     A[g][2t+8, 2t+9], read from global memory (A is small and stays in L1/L2), zero for
//     g >= M or k past the range.
//   * Accumulator of tile j: c0, c1 = C[2t][n0 + g], C[2t+1][n0 + g]; c2, c3 the same at
//     n0 + g + 8 (n0 = the tile's first column).
//   * splits == 1: the CTA writes C. splits > 1: fp32 partials to slice s of part[splits][M][N],
//     a fence, and a count on done[strip]; the CTA that counts last adds slices 0, 1, ...,
//     splits-1 in that order (bitwise deterministic), writes C and sets done[strip] back to 0.
//     done[] must be zero before the first launch.
//
// Launch: block 128, grid (ceil(N / 128), splits), no dynamic shared memory; params
//   { A, B, C, part (null when splits == 1), done (null when splits == 1), M, N, K, kchunk }
//   with kchunk a positive multiple of 32 and splits = ceil(K / kchunk). It may be launched as a
//   programmatic dependent of the stream's previous kernel (griddepcontrol.wait precedes every
//   memory access).
#include "kg_common.cuh"

#define MTC_THREADS 128
#define MTC_BN 128
#define MTC_BK 32
#define MTC_STAGES 4
#define MTC_ROW_BYTES (MTC_BN * 2)
#define MTC_STAGE_BYTES (MTC_BK * MTC_ROW_BYTES)

namespace gemm_mtc_detail {

// D += A·B on one m16n8k16 tile (row.col, fp32 accumulators) and fp32 -> T. The same MMA as
// gemm_skinny.cu's SkMma; shared code would go in a header, which is part of every module's
// source hash (sharing it would restart every family's baselines).
#define MTC_MMA(TY)                                                                                \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, "         \
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                                        \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                 \
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
template <typename T> struct IsBf16 {
    static constexpr bool value = false;
};
template <> struct IsBf16<__nv_bfloat16> {
    static constexpr bool value = true;
};
template <typename T> struct Mma {
    static __device__ __forceinline__ void run(float (&d)[4], unsigned a0, unsigned a1, unsigned a2,
                                               unsigned a3, unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
        if constexpr (IsBf16<T>::value)
            MTC_MMA("bf16");
        else
            MTC_MMA("f16");
#else
        __trap();
#endif
    }
    static __device__ __forceinline__ T t(float x) {
        if constexpr (IsBf16<T>::value)
            return __float2bfloat16_rn(x);
        else
            return __float2half_rn(x);
    }
};
#undef MTC_MMA

static __device__ __forceinline__ void cp16(unsigned dst, const void* src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(ok ? 16 : 0)
                 : "memory");
}
static __device__ __forceinline__ void cp_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> static __device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Byte offset in a stage of 16-byte chunk c (0..15) of row r.
static __device__ __forceinline__ unsigned swz(int r, int c) {
    return (unsigned)(r * MTC_ROW_BYTES + ((c ^ (r & 7)) << 4));
}

// A[row][k], A[row][k + 1] as one 32-bit word (low half first); zeros for row >= M or a column
// at or past kend.
static __device__ __forceinline__ unsigned a_pair(const unsigned short* __restrict__ A, int row,
                                                  int k, int M, int K, int kend) {
    if (row >= M) return 0u;
    const size_t base = (size_t)row * K;
    const unsigned lo = k < kend ? __ldg(A + base + k) : 0u;
    const unsigned hi = k + 1 < kend ? __ldg(A + base + k + 1) : 0u;
    return lo | (hi << 16);
}

template <typename T>
static __device__ __forceinline__ void mtc(const T* __restrict__ A_, const T* __restrict__ B_,
                                           T* __restrict__ C, float* __restrict__ part,
                                           unsigned* __restrict__ done, int M, int N, int K,
                                           int kchunk) {
    __shared__ __align__(128) unsigned char bs[MTC_STAGES * MTC_STAGE_BYTES];
    __shared__ unsigned is_last;
    const unsigned short* A = reinterpret_cast<const unsigned short*>(A_);
    const unsigned short* B = reinterpret_cast<const unsigned short*>(B_);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int ncta = blockIdx.x * MTC_BN;
    const int kbeg = blockIdx.y * kchunk;
    const int kend = min(K, kbeg + kchunk);
    const int ntiles = (kend - kbeg + MTC_BK - 1) / MTC_BK;
    // Launched as a programmatic dependent (compute capability 9.0 and up): let the next launch
    // start its set-up now, and touch no memory before the previous launch has finished.
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const unsigned sbase = (unsigned)__cvta_generic_to_shared(bs);

    // Tile `it` (rows kbeg + 32·it ..) into stage it % STAGES: 512 chunks of 16 bytes, four per
    // thread; an empty commit past the last tile keeps the group count uniform.
    auto issue = [&](int it) {
        if (it < ntiles) {
            const int k0 = kbeg + it * MTC_BK;
            const unsigned st = sbase + (unsigned)((it % MTC_STAGES) * MTC_STAGE_BYTES);
#pragma unroll
            for (int i = 0; i < MTC_BK * MTC_BN / 8 / MTC_THREADS; i++) {
                const int q = tid + i * MTC_THREADS;
                const int r = q >> 4, c = q & 15;
                const int row = k0 + r, col = ncta + 8 * c;
                const bool ok = row < kend && col < N;
                cp16(st + swz(r, c), ok ? (const void*)(B + (size_t)row * N + col) : (const void*)B,
                     ok);
            }
        }
        cp_commit();
    };

    float acc[2][4];
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int q = 0; q < 4; q++) acc[j][q] = 0.0f;

#pragma unroll
    for (int s = 0; s < MTC_STAGES - 1; s++) issue(s);
    // ldmatrix.x4.trans addresses: lanes 8i..8i+7 give the rows of matrix i = (k half i >> 1,
    // n half i & 1) of a 16 x 16 block.
    const int mat = lane >> 3, r8 = lane & 7;
    for (int it = 0; it < ntiles; it++) {
        cp_wait<MTC_STAGES - 2>();
        __syncthreads();  // tile it has landed everywhere; every warp is done with tile it - 1
        issue(it + MTC_STAGES - 1);
        const unsigned st = sbase + (unsigned)((it % MTC_STAGES) * MTC_STAGE_BYTES);
        const int k0 = kbeg + it * MTC_BK;
#pragma unroll
        for (int ks = 0; ks < MTC_BK / 16; ks++) {
            const int k = k0 + 16 * ks + 2 * t;
            const unsigned b0 = a_pair(A, g, k, M, K, kend);
            const unsigned b1 = a_pair(A, g, k + 8, M, K, kend);
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const int r = 16 * ks + 8 * (mat >> 1) + r8;
                const int c = (32 * warp + 16 * j) / 8 + (mat & 1);
                unsigned a0, a1, a2, a3;
                asm volatile(
                    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                    : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
                    : "r"(st + swz(r, c)));
                Mma<T>::run(acc[j], a0, a1, a2, a3, b0, b1);
            }
        }
    }
    cp_wait<0>();

    // This lane's outputs: tile j, q = 0..3 -> row 2t + (q & 1), column n0 + g + 8 (q >> 1).
    auto om = [&](int q) { return 2 * t + (q & 1); };
    auto on = [&](int j, int q) { return ncta + 32 * warp + 16 * j + g + 8 * (q >> 1); };
    if (gridDim.y == 1) {
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (om(q) < M && on(j, q) < N)
                    C[(size_t)om(q) * N + on(j, q)] = Mma<T>::t(acc[j][q]);
        return;
    }
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (om(q) < M && on(j, q) < N)
                part[((size_t)blockIdx.y * M + om(q)) * N + on(j, q)] = acc[j][q];
    __threadfence();
    __syncthreads();
    if (tid == 0) is_last = atomicAdd(&done[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    const int splits = (int)gridDim.y;
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
            if (om(q) >= M || on(j, q) >= N) continue;
            const size_t o = (size_t)om(q) * N + on(j, q);
            float s = 0.0f;
#pragma unroll 4
            for (int p = 0; p < splits; p++) s += __ldcg(&part[(size_t)p * M * N + o]);
            C[o] = Mma<T>::t(s);
        }
    if (tid == 0) done[blockIdx.x] = 0u;
}

}  // namespace gemm_mtc_detail

#define MTC_ENTRY(NAME, T)                                                                         \
    extern "C" __global__ void __launch_bounds__(MTC_THREADS)                                      \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,                  \
             float* __restrict__ part, unsigned* __restrict__ done, int M, int N, int K,           \
             int kchunk) {                                                                         \
        gemm_mtc_detail::mtc<T>(A, B, C, part, done, M, N, K, kchunk);                             \
    }
MTC_ENTRY(gemm_mtc_bf16, __nv_bfloat16)
MTC_ENTRY(gemm_mtc_fp16, __half)
#undef MTC_ENTRY
