// kernelgate GEMM for M <= 4 (GEMV-like): C[M,N] = A[M,K] · B[K,N], all row-major, fp32
// accumulation (fp32 inputs: plain FFMA, no TF32). B is the whole problem: it is read once, with
// every thread's loads in flight together, and the split-K partial sums are added in the same
// launch, so a case is one kernel.
//
// gemm_gemv_<dt>_<MT> (M <= MT, MT in {1, 2, 4, 8}; dt bf16, fp16, fp32), 256 threads (8 warps):
//   * Each thread loads VB bytes of a row of B at a time: VB = 16 with R = 16 rows in flight for
//     MT <= 4, VB = 8 with R = 32 rows for MT = 8. Both keep 256 bytes of B in flight per thread;
//     the narrower vector halves the columns a thread owns, so eight rows of accumulators cost
//     the registers four do at 16 bytes (an MT = 8 entry at 16 bytes, with only 8 rows in
//     flight, was slower than the wgmma tiles; session 18).
//   * Grid (strips, splits). A strip is SW = 32 · VEC columns (VEC = VB / sizeof(T): at VB = 16,
//     256 columns of a 16-bit type, 128 of fp32); lane l of every warp owns columns
//     strip·SW + VEC·l .. +VEC.
//   * CTA (x, s) covers rows [s·kchunk, min(K, (s+1)·kchunk)) of B in passes of 8·R rows: warp w
//     takes rows w·R .. w·R+R-1 of the pass, and issues all R of its VB-byte loads before it
//     touches any, then fills its own R x MT slice of A in shared memory while they land. Rows
//     past the range and columns past N read as zeros. N % VEC != 0 (rows not VB-byte aligned)
//     takes bounds-checked scalar loads instead.
//   * The eight warps' partial sums are added through shared memory in warp order (one row of C
//     at a time), so thread t < SW ends with column strip·SW + t of every row.
//   * splits == 1: the CTA writes C. splits > 1: it writes its fp32 partials to slice s of
//     part[splits][M][N], fences, and counts itself on done[strip]; the CTA that counts last
//     adds slices 0, 1, ..., splits-1 in that order for each of its columns (the same order
//     whichever CTA is last, so the result is bitwise deterministic), writes C and sets
//     done[strip] back to 0 for the next launch. done[] must be zero before the first launch.
//
// Launch: block 256, grid (ceil(N / SW), splits), no dynamic smem; params
//   { A, B, C, part (null when splits == 1), done (null when splits == 1), M, N, K, kchunk }
//   with kchunk a positive multiple of 8·R (R = 16, or 32 for MT = 8) and splits = ceil(K / kchunk). It may be launched as a
//   programmatic dependent of the stream's previous kernel (griddepcontrol.wait precedes every
//   memory access).
#include "kg_common.cuh"

#define GV_WARPS 8
#define GV_THREADS (GV_WARPS * 32)

namespace gemm_gemv_detail {

// VB bytes of a row of B as loaded: one 16- or 8-byte vector.
template <int VB> struct VecT;
template <> struct VecT<16> {
    using type = uint4;
};
template <> struct VecT<8> {
    using type = uint2;
};

// fp32 <-> element conversions and 16-byte unpacking: the same as gemm_skinny.cu's SkT. They stay
// per file because a shared header is part of every module's source hash (kg_common.cuh), and
// moving them there would restart every family's baselines.
template <typename T> struct Cvt;
template <> struct Cvt<float> {
    static __device__ __forceinline__ float f(float x) { return x; }
    static __device__ __forceinline__ float t(float x) { return x; }
    static __device__ __forceinline__ void unpack(const uint4& u, float (&o)[4]) {
        o[0] = __uint_as_float(u.x);
        o[1] = __uint_as_float(u.y);
        o[2] = __uint_as_float(u.z);
        o[3] = __uint_as_float(u.w);
    }
    static __device__ __forceinline__ void unpack(const uint2& u, float (&o)[2]) {
        o[0] = __uint_as_float(u.x);
        o[1] = __uint_as_float(u.y);
    }
};
template <> struct Cvt<__nv_bfloat16> {
    static __device__ __forceinline__ float f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 t(float x) { return __float2bfloat16_rn(x); }
    // A bf16 is the high half of an fp32: element 2i is the low half of word i.
    static __device__ __forceinline__ void unpack(const uint4& u, float (&o)[8]) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            o[2 * i] = __uint_as_float(w[i] << 16);
            o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
    static __device__ __forceinline__ void unpack(const uint2& u, float (&o)[4]) {
        const unsigned w[2] = {u.x, u.y};
#pragma unroll
        for (int i = 0; i < 2; i++) {
            o[2 * i] = __uint_as_float(w[i] << 16);
            o[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
};
template <> struct Cvt<__half> {
    static __device__ __forceinline__ float f(__half x) { return __half2float(x); }
    static __device__ __forceinline__ __half t(float x) { return __float2half_rn(x); }
    static __device__ __forceinline__ void unpack(const uint4& u, float (&o)[8]) {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
            o[2 * i] = f.x;
            o[2 * i + 1] = f.y;
        }
    }
    static __device__ __forceinline__ void unpack(const uint2& u, float (&o)[4]) {
        const unsigned w[2] = {u.x, u.y};
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
            o[2 * i] = f.x;
            o[2 * i + 1] = f.y;
        }
    }
};

// VEC = VB / sizeof(T) elements of row `row` of B from column `col` as one VB-byte vector; zeros
// where row >= rows or a column is >= N. ALIGNED: N % VEC == 0, so one VB-byte load (col < N
// implies col + VEC <= N).
template <typename T, int VB, bool ALIGNED>
static __device__ __forceinline__ typename VecT<VB>::type load_b(const T* __restrict__ B, int row,
                                                                 int rows, int col, int N) {
    constexpr int VEC = VB / sizeof(T);
    if constexpr (ALIGNED) {
        // Volatile: the R loads of a pass stay together at the top of the pass. As plain loads
        // the compiler may sink each next to its use when registers are short, which exposes
        // one memory latency per row.
        if constexpr (VB == 16) {
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (row < rows && col < N)
                asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                             : "l"(B + (size_t)row * N + col));
            return v;
        } else {
            uint2 v = make_uint2(0u, 0u);
            if (row < rows && col < N)
                asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];"
                             : "=r"(v.x), "=r"(v.y)
                             : "l"(B + (size_t)row * N + col));
            return v;
        }
    } else {
        union {
            typename VecT<VB>::type u;
            T v[VEC];
        } x;
#pragma unroll
        for (int j = 0; j < VEC; j++)
            x.v[j] = (row < rows && col + j < N) ? B[(size_t)row * N + col + j] : Cvt<T>::t(0.0f);
        return x.u;
    }
}

template <typename T, int MT, int R, int VB, bool ALIGNED>
static __device__ __forceinline__ void gemv(const T* __restrict__ A, const T* __restrict__ B,
                                            T* __restrict__ C, float* __restrict__ part,
                                            unsigned* __restrict__ done, int M, int N, int K,
                                            int kchunk) {
    constexpr int VEC = VB / sizeof(T);
    constexpr int SW = 32 * VEC;
    constexpr int PASS = GV_WARPS * R;
    __shared__ float As[GV_WARPS][MT][R];
    __shared__ __align__(16) float red[GV_WARPS][SW];
    __shared__ unsigned is_last;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int col = blockIdx.x * SW + lane * VEC;
    const int k0 = blockIdx.y * kchunk;
    const int k1 = min(K, k0 + kchunk);
    // Launched as a programmatic dependent (the host's default on compute capability 9.0 and
    // up): let the next launch start its set-up now, and touch no memory before the previous
    // launch has finished. Both are no-ops for an ordinary launch; older GPUs have neither.
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif

    float acc[MT][VEC];
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int j = 0; j < VEC; j++) acc[m][j] = 0.0f;

    for (int kb = k0; kb < k1; kb += PASS) {
        const int r0 = kb + warp * R;
        // Aligned rows: all R loads issued here. Unaligned ones (scalar loads, VEC registers
        // each) are loaded one row at a time below instead.
        typename VecT<VB>::type raw[ALIGNED ? R : 1];
        if (ALIGNED) {
#pragma unroll
            for (int r = 0; r < R; r++) raw[ALIGNED ? r : 0] = load_b<T, VB, ALIGNED>(B, r0 + r, k1, col, N);
        }
        // This warp's slice of A while B's rows are in flight (the previous pass's reads of As
        // are done: __syncwarp).
        __syncwarp();
        for (int i = lane; i < MT * R; i += 32) {
            const int m = i / R;
            const int r = i - m * R;
            As[warp][m][r] = (m < M && r0 + r < k1) ? Cvt<T>::f(A[(size_t)m * K + r0 + r]) : 0.0f;
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < R; r++) {
            float b[VEC];
            Cvt<T>::unpack(ALIGNED ? raw[ALIGNED ? r : 0] : load_b<T, VB, ALIGNED>(B, r0 + r, k1, col, N), b);
#pragma unroll
            for (int m = 0; m < MT; m++) {
                const float a = As[warp][m][r];
#pragma unroll
                for (int j = 0; j < VEC; j++) acc[m][j] = fmaf(a, b[j], acc[m][j]);
            }
        }
    }

    // The warps' partial sums, added in warp order: thread t < SW ends with column t's rows.
    float out[MT];
#pragma unroll
    for (int m = 0; m < MT; m++) {
        out[m] = 0.0f;
        if (m < M) {  // uniform over the CTA
            if constexpr (VEC % 4 == 0) {
#pragma unroll
                for (int j = 0; j < VEC; j += 4)
                    *reinterpret_cast<float4*>(&red[warp][lane * VEC + j]) =
                        make_float4(acc[m][j], acc[m][j + 1], acc[m][j + 2], acc[m][j + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; j += 2)
                    *reinterpret_cast<float2*>(&red[warp][lane * VEC + j]) =
                        make_float2(acc[m][j], acc[m][j + 1]);
            }
            __syncthreads();
            if (threadIdx.x < SW) {
                float s = red[0][threadIdx.x];
#pragma unroll
                for (int w = 1; w < GV_WARPS; w++) s += red[w][threadIdx.x];
                out[m] = s;
            }
            __syncthreads();
        }
    }

    const int c = blockIdx.x * SW + threadIdx.x;
    const bool mine = threadIdx.x < SW && c < N;
    if (gridDim.y == 1) {
        if (mine)
#pragma unroll
            for (int m = 0; m < MT; m++)
                if (m < M) C[(size_t)m * N + c] = Cvt<T>::t(out[m]);
        return;
    }
    if (mine)
#pragma unroll
        for (int m = 0; m < MT; m++)
            if (m < M) part[((size_t)blockIdx.y * M + m) * N + c] = out[m];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(&done[blockIdx.x], 1u) == gridDim.y - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    if (mine) {
        // Four slices of every row at a time, all loads issued before any add (one L2 round
        // trip per four slices, not one per slice); the adds still go slice by slice.
        const int splits = (int)gridDim.y;
        float s[MT];
#pragma unroll
        for (int m = 0; m < MT; m++) s[m] = 0.0f;
        for (int q0 = 0; q0 < splits; q0 += 4) {
            float v[MT][4];
#pragma unroll
            for (int m = 0; m < MT; m++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    v[m][i] = (m < M && q0 + i < splits)
                                  ? __ldcg(&part[((size_t)(q0 + i) * M + m) * N + c])
                                  : 0.0f;
#pragma unroll
            for (int m = 0; m < MT; m++)
#pragma unroll
                for (int i = 0; i < 4; i++) s[m] += v[m][i];
        }
#pragma unroll
        for (int m = 0; m < MT; m++)
            if (m < M) C[(size_t)m * N + c] = Cvt<T>::t(s[m]);
    }
    if (threadIdx.x == 0) done[blockIdx.x] = 0u;
}

}  // namespace gemm_gemv_detail

#define GV_ENTRY(NAME, T, MT, R, VB)                                                               \
    extern "C" __global__ void __launch_bounds__(GV_THREADS, 2)                                    \
        NAME(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,                  \
             float* __restrict__ part, unsigned* __restrict__ done, int M, int N, int K,           \
             int kchunk) {                                                                         \
        if (N % (VB / (int)sizeof(T)) == 0)                                                        \
            gemm_gemv_detail::gemv<T, MT, R, VB, true>(A, B, C, part, done, M, N, K, kchunk);     \
        else                                                                                       \
            gemm_gemv_detail::gemv<T, MT, R, VB, false>(A, B, C, part, done, M, N, K, kchunk);    \
    }
#define GV_ALL(DT, T)                                \
    GV_ENTRY(gemm_gemv_##DT##_1, T, 1, 16, 16)       \
    GV_ENTRY(gemm_gemv_##DT##_2, T, 2, 16, 16)       \
    GV_ENTRY(gemm_gemv_##DT##_4, T, 4, 16, 16)       \
    GV_ENTRY(gemm_gemv_##DT##_8, T, 8, 32, 8)
GV_ALL(bf16, __nv_bfloat16)
GV_ALL(fp16, __half)
GV_ALL(fp32, float)
#undef GV_ALL
#undef GV_ENTRY
