// Launch configuration of the memory-bound row kernels (kernels/norms.cu, kernels/softmax.cu:
// the old _v/_s kernels; kernels/rows_p.cu: the pipelined _p kernels), host side, for the
// standalone bench kernels/dev/rows_bench.cu.
//
// THIS FILE MIRRORS src/backend/cuda/norms.rs (row_layout, ce_fwd_layout, p_layout and the
// arms of prepare()): change both together. The rules:
//
//  * row_layout(n, elem): vec = 16 / elem elements when n is a multiple of it, else 1 (scalar
//    kernels, suffix _s); want = ceil((n / vec) / 4) threads; tpr = want rounded up to a power
//    of two when want <= 32, else to a multiple of 32, at most 512; rpb = max(1, 256 / tpr).
//  * ce_fwd_layout(m, n, elem, sms): a warp per row (32 x 8) when n / vec >= 32 and
//    m >= sms * 16; else row_layout.
//  * p_layout(n, elem) (the pipelined kernels, suffix _p): row_layout when vec > 1 and
//    n / vec <= KG_P_CACHE * tpr (rows of at most 2048 vectors); else none (the _v/_s kernels).
//  * softmax, softmax_bwd, cross_entropy_bwd, layernorm, rmsnorm_bwd: the _p kernel when
//    p_layout gives one: persistent grid min(groups, sms * occupancy), block (tpr, rpb), dynamic
//    shared memory kg_p_smem_bytes(NT, tpr * rpb) (NT = 2 staged tensors for softmax_bwd and
//    rmsnorm_bwd, else 1; the function's limit raised to it first; occupancy computed with it).
//    Else the old kernels: a block per rpb rows (rmsnorm_bwd: persistent, occupancy-sized).
//  * cross_entropy: the _p kernel (streamed, not persistent) when vec > 1, with ce_fwd_layout,
//    grid ceil(m / rpb); else the _s kernel.
//  * rmsnorm, fused_add_rmsnorm: unchanged (_v/_s, grid ceil(m / rpb)).
//  * rmsnorm_bwd's second step: kg_rmsnorm_dw_<w> (kg_rmsnorm_dw_<w>_p after the _p kernel:
//    the same kernel in rows_p.cu), grid ceil(n / 32), block (32, 16), over P = the first
//    kernel's grid rows of fp32 partial sums.
//  * The Rust side also falls back to the old kernels when the kernel set has no rows_p.cu
//    (a KERNELGATE_BASE revision from before it) or KERNELGATE_ROWS_KERNEL=old. By default
//    (unset/auto) it runs the _p kernels of cross_entropy and cross_entropy_bwd only (the
//    others measured slower on some shapes); the bench's "new" column is what
//    KERNELGATE_ROWS_KERNEL=all runs.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

struct RowLayout {
    int vec, tpr, rpb;
};

static constexpr int KG_MAX_TPR = 512;
static constexpr int KG_CE_WARPS_PER_SM = 16;
static constexpr int KG_RMSNORM_BWD_CACHE = 4;  // C of the old rmsnorm_bwd kernel

static inline int next_pow2(int x) {
    int p = 1;
    while (p < x) p <<= 1;
    return p;
}

static inline RowLayout row_layout(long long n, int elem) {
    const int full = 16 / elem;
    const int vec = (n % full == 0) ? full : 1;
    const long long nv = n / vec;
    const long long want = std::max<long long>((nv + 3) / 4, 1);
    int tpr;
    if (want <= 32) tpr = next_pow2((int)want);
    else tpr = (int)std::min<long long>((want + 31) / 32 * 32, KG_MAX_TPR);
    const int rpb = std::max(256 / tpr, 1);
    return {vec, tpr, rpb};
}

static inline RowLayout ce_fwd_layout(long long m, long long n, int elem, int sms) {
    RowLayout l = row_layout(n, elem);
    if (n / l.vec >= 32 && m >= (long long)sms * KG_CE_WARPS_PER_SM) return {l.vec, 32, 8};
    return l;
}

// The layout of a pipelined (_p) staged kernel, or false when the row does not qualify.
static inline bool p_layout(long long n, int elem, RowLayout* out) {
    const RowLayout l = row_layout(n, elem);
    if (l.vec == 1 || n / l.vec > (long long)KG_P_CACHE * l.tpr) return false;
    *out = l;
    return true;
}

// Persistent grid of a kernel: as many blocks as fit at once on every SM (the occupancy of the
// compiled kernel with `smem` bytes of dynamic shared memory), at most `groups`.
static inline int persistent_grid(const void* f, int threads, unsigned smem, long long groups, int sms) {
    cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);  // static + dynamic > 48 KiB needs it
    int per_sm = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, threads, smem);
    if (e != cudaSuccess) {
        printf("occupancy query failed: %s\n", cudaGetErrorString(e));
        exit(3);
    }
    per_sm = std::max(per_sm, 1);
    return (int)std::max<long long>(1, std::min<long long>(groups, (long long)sms * per_sm));
}
