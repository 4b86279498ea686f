// kernelgate RMSNorm backward with rows staged by the bulk-copy engine (sm_90+; suffix _b).
// Written in session 11 for issue 13, where the previous kernels reach only 0.62-0.90 of copy
// bandwidth on the H200 (norms.cu's register kernel: persistent, 124 registers, 2 blocks of 256
// threads per SM, so loads are in flight only between a block's stores and its next loads).
// The default on rows of 8-16 KB since session 12 (norms.rs rb_auto; KERNELGATE_RMSNORM_BWD):
// dsv3 shapes at 0.78-0.98 of copy bandwidth on an H200, 0.90-0.98 on an H100.
// Its own module (no header of its own), so no other module's hash, and no baseline, moves.
//
// The scheme (a persistent grid; one block works on one row at a time):
//  * the block's thread 0 asks the copy engine for the x and dy rows of the block's next rows
//    (cp.async.bulk, two per row, completion counted in bytes on the row buffer's mbarrier),
//    KG_RB_STAGES rows ahead, so the loads are in flight whatever the block computes and no
//    register holds data in flight;
//  * a thread owns C 16-byte vectors of the row (columns v = tid + k * blockDim.x), holds the
//    weights of its columns and the dw sums of its columns in registers across all rows (C * V
//    each), and copies its vectors of x and dy from the staged row into registers;
//  * one block reduction per row of {sum x^2, sum w*dy*x} (warp butterfly, a slot per warp in one
//    of two alternating shared buffers, one barrier): that barrier is also where every thread has
//    finished reading the staged row, so thread 0 refills its buffer right after it;
//  * dx = r*w*dy - x * r^3 * sum(w*dy*x) / n, stored with 16-byte stores; dw += dy * x * r;
//  * at the end each block stores its dw sums as one fp32 row of `part`, and kg_rmsnorm_dw_*_b
//    adds the blocks' rows in a fixed order (deterministic), as the other rmsnorm_bwd kernels do.
// Launch (src/backend/cuda/norms.rs, rmsnorm_bwd_bulk_*): rows of n elements with n * sizeof(T) a
// multiple of 16 and at most C * 1024 vectors; blockDim.x = the row's vectors / C rounded up to
// a warp (at most 1024); dynamic shared memory kg_rb_smem_bytes(n * sizeof(T)); grid = as many
// blocks as fit at once, at most m.
#include "rowops.cuh"

#define KG_RB_STAGES 2
#define KG_RB_C 2

__host__ __device__ constexpr unsigned kg_rb_stage_bytes(unsigned row_bytes) { return (row_bytes + 127u) / 128u * 128u; }
// 128 bytes of mbarriers, then per stage the x row and the dy row.
__host__ __device__ constexpr unsigned kg_rb_smem_bytes(unsigned row_bytes) {
    return 128u + KG_RB_STAGES * 2u * kg_rb_stage_bytes(row_bytes);
}

template <typename T, typename W, int V, int C>
__device__ __forceinline__ void rmsnorm_bwd_b(const T* __restrict__ x, const W* __restrict__ w,
                                              const T* __restrict__ dy, T* __restrict__ dx,
                                              float* __restrict__ part, int m, int n, float eps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char kg_rb_buf[];
    __shared__ float red[2][2][32];  // [alternating buffer][sum][warp]
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5, warps = nt >> 5;
    const int nv = n / V;
    const unsigned row_bytes = (unsigned)n * (unsigned)sizeof(T);
    const unsigned stage = kg_rb_stage_bytes(row_bytes);
    const unsigned bars = (unsigned)__cvta_generic_to_shared(kg_rb_buf);
    const unsigned rows_s = bars + 128;
    if (C * nt < nv) __trap();  // a launch the host must never make
    float wr[C][V], acc[C][V];
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * nt;
#pragma unroll
        for (int j = 0; j < V; ++j) wr[k][j] = acc[k][j] = 0.f;
        if (v < nv) kg_ldf<V>(w, v, wr[k]);
    }
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < KG_RB_STAGES; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bars + 8 * s) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    // Thread 0: the x and dy rows of `row` into stage s (its mbarrier expects both).
    auto issue = [&](long long row, int s) {
        const unsigned bar = bars + 8 * s, dst = rows_s + 2 * s * stage;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(2 * row_bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                     "l"(x + row * n), "r"(row_bytes), "r"(bar)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         dst + stage),
                     "l"(dy + row * n), "r"(row_bytes), "r"(bar)
                     : "memory");
    };
    if (tid == 0)
#pragma unroll
        for (int s = 0; s < KG_RB_STAGES; ++s)
            if (blockIdx.x + (long long)s * gridDim.x < m) issue(blockIdx.x + (long long)s * gridDim.x, s);
    unsigned phase = 0;
    int s = 0, rb = 0;
    for (long long row = blockIdx.x; row < m; row += gridDim.x) {
        unsigned done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done)
                         : "r"(bars + 8 * s), "r"((phase >> s) & 1u)
                         : "memory");
        phase ^= 1u << s;
        const KgPack<T, V>* xs = reinterpret_cast<const KgPack<T, V>*>(kg_rb_buf + 128 + 2 * s * stage);
        const KgPack<T, V>* ds = reinterpret_cast<const KgPack<T, V>*>(kg_rb_buf + 128 + (2 * s + 1) * stage);
        KgPack<T, V> cx[C], cd[C];
        float sq = 0.f, sd = 0.f;
#pragma unroll
        for (int k = 0; k < C; ++k) {
            const int v = tid + k * nt;
            if (v < nv) {
                cx[k] = xs[v];
                cd[k] = ds[v];
                float a[V], e[V];
                kg_unpack<V>(cx[k], a);
                kg_unpack<V>(cd[k], e);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    sq = fmaf(a[j], a[j], sq);
                    sd = fmaf(wr[k][j] * e[j], a[j], sd);
                }
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            sq += __shfl_xor_sync(0xffffffffu, sq, o);
            sd += __shfl_xor_sync(0xffffffffu, sd, o);
        }
        if (lane == 0) {
            red[rb][0][warp] = sq;
            red[rb][1][warp] = sd;
        }
        // Every thread has its vectors of the staged row in registers and its sums in `red`.
        __syncthreads();
        if (tid == 0 && row + (long long)KG_RB_STAGES * gridDim.x < m) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            issue(row + (long long)KG_RB_STAGES * gridDim.x, s);
        }
        sq = lane < warps ? red[rb][0][lane] : 0.f;
        sd = lane < warps ? red[rb][1][lane] : 0.f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            sq += __shfl_xor_sync(0xffffffffu, sq, o);
            sd += __shfl_xor_sync(0xffffffffu, sd, o);
        }
        const float r = rsqrtf(sq / (float)n + eps);
        const float coef = r * r * r * sd / (float)n;
        T* dxr = dx + row * n;
#pragma unroll
        for (int k = 0; k < C; ++k) {
            const int v = tid + k * nt;
            if (v < nv) {
                float a[V], e[V], o[V];
                kg_unpack<V>(cx[k], a);
                kg_unpack<V>(cd[k], e);
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    o[j] = r * wr[k][j] * e[j] - coef * a[j];
                    acc[k][j] = fmaf(e[j], a[j] * r, acc[k][j]);
                }
                kg_stf<V>(dxr, v, o);
            }
        }
        s = s + 1 == KG_RB_STAGES ? 0 : s + 1;
        rb ^= 1;
    }
    float* pr = part + (long long)blockIdx.x * n;
#pragma unroll
    for (int k = 0; k < C; ++k) {
        const int v = tid + k * nt;
        if (v < nv) kg_stf<V>(pr, v, acc[k]);
    }
#else
    __trap();  // the host launches the _b kernels only on sm_90 and newer
#endif
}


#define KG_RB(TN, T, WN, W)                                                                        \
    extern "C" __global__ void __launch_bounds__(1024) kg_rmsnorm_bwd_##TN##_w##WN##_b(            \
        const T* x, const W* w, const T* dy, T* dx, float* part, int m, int n, float eps) {        \
        rmsnorm_bwd_b<T, W, 16 / sizeof(T), KG_RB_C>(x, w, dy, dx, part, m, n, eps);               \
    }

KG_RB(bf16, __nv_bfloat16, bf16, __nv_bfloat16)
KG_RB(bf16, __nv_bfloat16, fp32, float)
KG_RB(fp16, __half, fp16, __half)
KG_RB(fp16, __half, fp32, float)
KG_RB(fp32, float, fp32, float)
KG_RB(fp32, float, bf16, __nv_bfloat16)

#define KG_RB_DW(WN, W)                                                                            \
    extern "C" __global__ void __launch_bounds__(512) kg_rmsnorm_dw_##WN##_b(const float* part, W* dw, int P, \
                                                                             int n) {             \
        kg_rmsnorm_dw<W>(part, dw, P, n);                                                           \
    }
KG_RB_DW(bf16, __nv_bfloat16)
KG_RB_DW(fp16, __half)
KG_RB_DW(fp32, float)
