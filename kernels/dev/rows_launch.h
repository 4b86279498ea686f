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
//  * r_layout(n, elem) (the register-resident kernels, suffix _r: softmax, cross_entropy_bwd,
//    layernorm, rmsnorm_bwd): the same rows as p_layout (KG_R_CACHE = KG_P_CACHE = 4 vectors per
//    thread); the launch is the old kernels' (block (tpr, rpb), grid ceil(m / rpb), no dynamic
//    smem; rmsnorm_bwd: the old kernel's persistent grid sized by the _r kernel's occupancy, then
//    kg_rmsnorm_dw_<w>_p).
//  * cross_entropy's _r kernel (L2::evict_first loads) has the _p kernel's launch, on any
//    vectorised row.
//  * rows_variant(choice, family, m, n, elem): which generation runs (norms.rs rows_variant):
//    old -> old; all -> _p where it applies; reg -> _r where it applies, else old; auto (the
//    default): the per-shape rule at rows_variant below.
//  * The Rust side also falls back to the old kernels when the kernel set has no rows_p.cu
//    (a KERNELGATE_BASE revision from before it) or KERNELGATE_ROWS_KERNEL=old; the bench's
//    _p column is what KERNELGATE_ROWS_KERNEL=all runs, its _r column KERNELGATE_ROWS_KERNEL=reg.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

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

// The register-resident (_r) kernels take the rows of the _p ones (KG_R_CACHE vectors per thread).
static inline bool r_layout(long long n, int elem, RowLayout* out) { return p_layout(n, elem, out); }

enum RowsVariant { RV_OLD = 0, RV_P = 1, RV_R = 2 };
enum RowsChoice { RC_OLD, RC_AUTO, RC_ALL, RC_REG };

// norms.rs rows_variant: which kernels family `fam` runs on an m x n case of elem-byte elements.
// auto, from the H100 (GPU-e2f46ae1) and H200 (GPU-042d82ef) runs of session 8
// (kernels/dev/rows_bench.cu, docs/kernels/session8/):
//  * softmax: _r (r_layout);  rmsnorm, fused_add_rmsnorm: old;
//  * layernorm: _r for rows of >= 2048 elements (H200 11-18% faster, H100 within 2%), else old;
//  * cross_entropy_bwd: _r where r_layout applies (H200 1.1-1.5x _p);
//  * softmax_bwd: _p on short grids (m <= 8192) of rows of >= 4096 elements, else old;
//  * rmsnorm_bwd: _p on long grids (m >= 16384) when the old kernel's block has < 224 threads
//    (row_layout tpr * rpb: 2 such blocks per SM leave it < 14 warps), else old;
//  * cross_entropy: since session 17 the harness's auto runs the register-row forward of
//    kernels/cross_entropy_rows.cu (_w4/_w6/_w8, ce_fwd.rs cew_auto) on exact splits of rows of
//    at least 6 KB in inputs of at least 2^25 bytes (except rows under 8 KB under 2^26 bytes),
//    else (since session 14) the register-resident forward of kernels/cross_entropy_bulk.cu
//    (_g, ce_fwd.rs ceg_auto) on rows of at most 8 KB in inputs of at most 2^28 bytes, except
//    short grids of 4-6 KB rows; this bench builds neither module, so its auto below is the
//    rule without them:
//  * cross_entropy (vectorised rows): the bulk-staged _r kernel where ce_b_auto says (session 11:
//    rows of 4-6 KB, or of at most 16 KB on grids of 16384+ rows and at most 2^28 bytes), else _p
//    (H200 1.05-1.24x old; H100 0.97-0.98x old from 2^28 elements, 1.03-1.21x below).
// The bulk-staged cross-entropy forward (kg_cross_entropy_*_r) takes rows of 16-byte multiples
// of at most KG_CE_B_MAX_ROW_BYTES (norms.rs ce_b_applies; sm_90+, which the bench assumes).
static inline bool ce_b_applies(long long n, int elem) {
    return n > 0 && (n * elem) % 16 == 0 && n * elem <= KG_CE_B_MAX_ROW_BYTES;
}

// Where auto runs it (norms.rs ce_b_auto): rows of 4-6 KB, or rows of at most 16 KB on grids of
// at least 16384 rows holding at most 2^28 bytes.
static inline bool ce_b_auto(long long m, long long row_bytes) {
    return (row_bytes >= 4096 && row_bytes <= 6144) ||
           (row_bytes <= 16384 && m >= 16384 && m * row_bytes <= (1ll << 28));
}

static inline RowsVariant rows_variant(RowsChoice choice, const char* fam, long long m, long long n, int elem) {
    const std::string f = fam;
    RowLayout l;
    const RowLayout rl = row_layout(n, elem);
    const bool vec = rl.vec > 1;
    bool p_applies = false;
    if (f == "softmax" || f == "softmax_bwd" || f == "cross_entropy_bwd" || f == "layernorm" || f == "rmsnorm_bwd")
        p_applies = p_layout(n, elem, &l);
    else if (f == "cross_entropy")
        p_applies = vec;
    const bool r_applies = ((f == "softmax" || f == "cross_entropy_bwd" || f == "layernorm" || f == "rmsnorm_bwd") &&
                            r_layout(n, elem, &l)) ||
                           (f == "cross_entropy" && ce_b_applies(n, elem));
    switch (choice) {
    case RC_OLD: return RV_OLD;
    case RC_ALL: return p_applies ? RV_P : RV_OLD;
    case RC_REG: return r_applies ? RV_R : RV_OLD;
    case RC_AUTO:
        if (f == "softmax") return r_applies ? RV_R : RV_OLD;
        if (f == "layernorm") return r_applies && n >= 2048 ? RV_R : RV_OLD;
        if (f == "cross_entropy_bwd") return r_applies ? RV_R : RV_OLD;
        if (f == "softmax_bwd") return p_applies && m <= 8192 && n >= 4096 ? RV_P : RV_OLD;
        if (f == "rmsnorm_bwd") return p_applies && m >= 16384 && rl.tpr * rl.rpb < 224 ? RV_P : RV_OLD;
        if (f == "cross_entropy") return r_applies && ce_b_auto(m, n * elem) ? RV_R : p_applies ? RV_P : RV_OLD;
        return RV_OLD;
    }
    return RV_OLD;
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
