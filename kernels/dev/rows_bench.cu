// Standalone correctness + speed bench of the memory-bound row kernels (../norms.cu,
// ../softmax.cu: the old kernels, _v/_s) next to the pipelined ones (../rows_p.cu, _p), same
// run, same process. Not part of the Rust harness. Run with kernels/dev/run_rows_bench.sh (repo root).
//
// The kernels are the real sources (#included), launched with the configuration of the Rust
// side, which rows_launch.h mirrors (read its header; change both together).
//
// Correctness (--check-only, or first): every family x dtype (bf16, fp16, fp32) x weight width
// (w16, w32 for the norms) x shape of a list of awkward and dsv3-like shapes, old and new
// launch, against a float64 CPU reference computed from the device's own inputs (the harness's
// input generator kg_input_value and ranges). Outputs are poisoned with NaN (0xff bytes) first
// and scanned whole for NaN/Inf; the sampled rows (all when m <= 64; else first, last and 14
// more; rmsnorm_bwd's dw over every row) are compared as the harness does: each element within
// atol * rms(ref) + rtol * |ref| and the relative L2 error within rel_l2, with the harness's
// tolerances (src/verify.rs Tolerance::for_dtype; cross_entropy 3e-5; rmsnorm_bwd n = 1: 0.1).
//
// Speed (--speed-only, or second): every family on the dsv3 shapes (M in {4096, 16384, 65536} x
// N in {6144, 7168, 8192}; cross-entropy N in {3072, 6144, 8192, 12288}) and 65536 x 4096, bf16,
// fp32 weights (w32), old and new. Each sample as the harness's timing: an L2 flush over 2 x L2
// bytes (--flush read, the default and the harness's since session 11: a read sweep, which
// leaves the L2 cold and clean; --flush memset: the write flush used before, which leaves it full
// of dirty lines), a 20 us + 3 us per launch spin kernel holding the stream (so the
// host's enqueue is not timed), CUDA events around `batch` launches; batch = 1 unless a warm
// launch takes < 20 us (then ceil(20 us / warm time), at most 256, as the harness). After a
// memset flush the timed launch writes the flush's dirty lines back as it evicts them, which
// weighs most on the M = 4096 inputs (25-100 MB, about the size of the L2: 50 MB H100, 60 MB
// H200) and on read-only kernels. Median of --samples (default 30) samples per case. Bytes are the harness's
// (src/family/norms.rs bytes()); "frac" = (bytes / median) / copy bandwidth, where copy
// bandwidth is the better of cudaMemcpyDeviceToDevice (1 GiB, what the harness measures) and a
// vectorised copy kernel, measured in this run. Each speed case's outputs are also checked
// against the CPU reference on three rows. cross_entropy's _r column is its bulk-staged kernel
// (rows staged whole in shared memory by cp.async.bulk); under each cross_entropy shape, the
// read-only ceiling of its logits (rb_read, same timing and flush, plain and evict-first loads)
// shows what a read-only kernel can reach there.
//
// Exit status 1 if any check failed.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../norms.cu"
#include "../rows_p.cu"
#include "../softmax.cu"
#include "../cross_entropy_bulk.cu"
#include "rows_launch.h"

#define CK(x)                                                                                                  \
    do {                                                                                                       \
        cudaError_t e_ = (x);                                                                                  \
        if (e_ != cudaSuccess) {                                                                               \
            printf("CUDA ERROR: %s (%s) at %s:%d\n", cudaGetErrorString(e_), #x, __FILE__, __LINE__);          \
            fflush(stdout);                                                                                    \
            exit(3);                                                                                           \
        }                                                                                                      \
    } while (0)

// ------------------------------------------------------------------------------------------------
// Device helpers.

extern "C" __global__ void rb_hold(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

template <typename T>
__global__ void rb_fill(T* p, long long count, unsigned long long seed, unsigned tensor, float lo, float hi) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
        p[i] = kg_from_f<T>(kg_input_value(seed, tensor, (unsigned long long)i, lo, hi));
}

// Read-only reference (cross_entropy's ceiling): reads nv 16-byte vectors, 8 loads in flight per
// thread, plain streaming loads (ef = 0, as kg_cross_entropy_*_p) or L2 evict-first ones (ef = 1,
// as kg_cross_entropy_*_r); writes one word per block (never, in practice: keeps the loads live).
__global__ void rb_read(const uint4* __restrict__ a, unsigned* __restrict__ out, long long nv, int ef) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < nv; i += 8 * stride) {
        uint4 q[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
            if (i + u * stride < nv) q[u] = ef ? kg_ld_stream_ef(a + i + u * stride) : kg_ld_stream(a + i + u * stride);
#pragma unroll
        for (int u = 0; u < 8; ++u)
            if (i + u * stride < nv) acc ^= q[u].x ^ q[u].y ^ q[u].z ^ q[u].w;
    }
    if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;
}

__global__ void rb_copy(const uint4* __restrict__ a, uint4* __restrict__ b, long long nv) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    for (; i + 3 * stride < nv; i += 4 * stride) {
        const uint4 x0 = a[i], x1 = a[i + stride], x2 = a[i + 2 * stride], x3 = a[i + 3 * stride];
        b[i] = x0;
        b[i + stride] = x1;
        b[i + 2 * stride] = x2;
        b[i + 3 * stride] = x3;
    }
    for (; i < nv; i += stride) b[i] = a[i];
}

// ------------------------------------------------------------------------------------------------
// Kernel registry: the extern "C" entry points by name, as the Rust side looks them up.

static std::map<std::string, const void*> g_k;
#define REG(name) g_k[#name] = (const void*)name
#define REG_NORMS(TN, WN)                                                                              \
    REG(kg_rmsnorm_##TN##_w##WN##_v);                                                                  \
    REG(kg_rmsnorm_##TN##_w##WN##_s);                                                                  \
    REG(kg_fused_add_rmsnorm_##TN##_w##WN##_v);                                                        \
    REG(kg_fused_add_rmsnorm_##TN##_w##WN##_s);                                                        \
    REG(kg_layernorm_##TN##_w##WN##_v);                                                                \
    REG(kg_layernorm_##TN##_w##WN##_s);                                                                \
    REG(kg_layernorm_##TN##_w##WN##_p);                                                                \
    REG(kg_layernorm_##TN##_w##WN##_r);                                                                \
    REG(kg_rmsnorm_bwd_##TN##_w##WN##_v);                                                              \
    REG(kg_rmsnorm_bwd_##TN##_w##WN##_s);                                                              \
    REG(kg_rmsnorm_bwd_##TN##_w##WN##_p);                                                              \
    REG(kg_rmsnorm_bwd_##TN##_w##WN##_r)
#define REG_SOFTMAX(TN)                                                                                \
    REG(kg_softmax_##TN##_v);                                                                          \
    REG(kg_softmax_##TN##_s);                                                                          \
    REG(kg_softmax_##TN##_p);                                                                          \
    REG(kg_softmax_##TN##_r);                                                                          \
    REG(kg_softmax_bwd_##TN##_v);                                                                      \
    REG(kg_softmax_bwd_##TN##_s);                                                                      \
    REG(kg_softmax_bwd_##TN##_p);                                                                      \
    REG(kg_cross_entropy_##TN##_v);                                                                    \
    REG(kg_cross_entropy_##TN##_s);                                                                    \
    REG(kg_cross_entropy_##TN##_p);                                                                    \
    REG(kg_cross_entropy_##TN##_r);                                                                    \
    REG(kg_cross_entropy_##TN##_b);                                                                    \
    REG(kg_cross_entropy_##TN##_bp);                                                                   \
    REG(kg_cross_entropy_bwd_##TN##_v);                                                                \
    REG(kg_cross_entropy_bwd_##TN##_s);                                                                \
    REG(kg_cross_entropy_bwd_##TN##_p);                                                                \
    REG(kg_cross_entropy_bwd_##TN##_r)

static void register_kernels() {
    REG_NORMS(bf16, bf16);
    REG_NORMS(bf16, fp32);
    REG_NORMS(fp16, fp16);
    REG_NORMS(fp16, fp32);
    REG_NORMS(fp32, fp32);
    REG_NORMS(fp32, bf16);
    REG_SOFTMAX(bf16);
    REG_SOFTMAX(fp16);
    REG_SOFTMAX(fp32);
    REG(kg_rmsnorm_dw_bf16);
    REG(kg_rmsnorm_dw_fp16);
    REG(kg_rmsnorm_dw_fp32);
    REG(kg_rmsnorm_dw_bf16_p);
    REG(kg_rmsnorm_dw_fp16_p);
    REG(kg_rmsnorm_dw_fp32_p);
}

static const void* kfn(const std::string& name) {
    auto it = g_k.find(name);
    if (it == g_k.end()) {
        printf("no kernel named %s\n", name.c_str());
        exit(3);
    }
    return it->second;
}

// ------------------------------------------------------------------------------------------------
// Cases.

enum Dt { BF16, FP16, FP32 };
static const char* dname(Dt d) { return d == BF16 ? "bf16" : d == FP16 ? "fp16" : "fp32"; }
static int dsize(Dt d) { return d == FP32 ? 4 : 2; }

enum Fam { RMS, RMS_BWD, FADD, LN, SM, SM_BWD, CE, CE_BWD, NFAM };
static const char* FAM[] = {"rmsnorm", "rmsnorm_bwd", "fused_add_rmsnorm", "layernorm",
                            "softmax", "softmax_bwd", "cross_entropy",     "cross_entropy_bwd"};
static bool is_norm(Fam f) { return f == RMS || f == RMS_BWD || f == FADD || f == LN; }
// Families with a pipelined kernel (the others run the same kernel as "old" and "new").
static bool has_new(Fam f) { return f != RMS && f != FADD; }
// Families with a register-resident (_r) kernel.
static bool has_r(Fam f) { return f == SM || f == CE_BWD || f == LN || f == CE || f == RMS_BWD; }
// Whether the _r kernel of family f serves rows of n elements of es bytes (cross_entropy: the
// bulk-staged kernel, rows of 16-byte multiples up to KG_CE_B_MAX_ROW_BYTES; the others: r_layout).
static bool r_applies(Fam f, long long n, int es) {
    RowLayout rl;
    return has_r(f) && (f == CE ? ce_b_applies(n, es) : r_layout(n, es, &rl));
}
// Whether variant var (RV_OLD, RV_P, RV_R) is a distinct kernel of family f.
static bool has_var(Fam f, int var) { return var == RV_OLD || (var == RV_P && has_new(f)) || (var == RV_R && has_r(f)); }
static const char* VNAME[] = {"old", "_p", "_r"};

struct Case {
    Fam f;
    Dt dt;
    int w;  // 16 or 32 (norms)
    long long m, n;
};
static Dt wdt(const Case& c) { return c.w == 32 ? FP32 : (c.dt == FP32 ? BF16 : c.dt); }

static int g_sms = 0;
static size_t g_l2 = 0;
static cudaStream_t g_s;
static const unsigned long long SEED = 0x5eed13ull;
static const float EPS = 1e-6f;

// Device tensors of one case.
struct Tensors {
    void* in[3] = {nullptr, nullptr, nullptr};
    void* out[2] = {nullptr, nullptr};
    int* tgt = nullptr;
};

// One kernel launch with its arguments stored by value (the pointer array cudaLaunchKernel
// takes is built at each launch, so a Step may be copied).
struct Step {
    const void* f;
    dim3 grid, block;
    unsigned smem;
    alignas(8) unsigned char store[10][8];
    int nargs = 0;
    template <typename A> void arg(A a) {
        static_assert(sizeof(A) <= 8, "arg");
        memcpy(store[nargs], &a, sizeof(A));
        ++nargs;
    }
};

struct Plan {
    std::vector<Step> steps;
    std::string desc;
    void* ws = nullptr;
};

static void launch(const Plan& p) {
    for (const Step& s : p.steps) {
        void* a[10];
        for (int i = 0; i < s.nargs; ++i) a[i] = const_cast<unsigned char*>(s.store[i]);
        // As the Rust launcher does (Gpu::set_max_dynamic_smem, unconditionally): static plus
        // dynamic shared memory above 48 KiB needs the function's opt-in.
        if (s.smem > 0)
            CK(cudaFuncSetAttribute(s.f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)s.smem));
        const cudaError_t e = cudaLaunchKernel(s.f, s.grid, s.block, a, s.smem, g_s);
        if (e != cudaSuccess) {
            printf("CUDA ERROR: %s launching %s: grid (%u,%u,%u) block (%u,%u,%u) dynamic smem %u B\n",
                   cudaGetErrorString(e), p.desc.c_str(), s.grid.x, s.grid.y, s.grid.z, s.block.x, s.block.y,
                   s.block.z, (unsigned)s.smem);
            fflush(stdout);
            exit(3);
        }
    }
}

static std::string fmt(const char* f, ...) {
    char b[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(b, sizeof b, f, ap);
    va_end(ap);
    return b;
}

// The launches of a case, mirroring src/backend/cuda/norms.rs prepare(): var = RV_OLD (the _v/_s
// kernels), RV_P (the _p kernels where they apply, KERNELGATE_ROWS_KERNEL=all) or RV_R (the _r
// kernels where they apply, else old: KERNELGATE_ROWS_KERNEL=reg).
static Plan make_plan(const Case& c, int var, const Tensors& t) {
    const bool nw = var == RV_P;
    const bool reg = var == RV_R && r_applies(c.f, c.n, dsize(c.dt));
    Plan p;
    const int es = dsize(c.dt);
    const std::string tn = dname(c.dt), wn = dname(wdt(c));
    const int mi = (int)c.m, ni = (int)c.n;
    RowLayout lay = c.f == CE ? ce_fwd_layout(c.m, c.n, es, g_sms) : row_layout(c.n, es);
    RowLayout pl;
    const bool staged = nw && (c.f == SM || c.f == SM_BWD || c.f == CE_BWD || c.f == LN || c.f == RMS_BWD) &&
                        p_layout(c.n, es, &pl);
    const char* suf = lay.vec == 1 ? "s" : "v";
    const long long groups = (c.m + lay.rpb - 1) / lay.rpb;
    Step s{};
    s.block = dim3(lay.tpr, lay.rpb, 1);
    s.grid = dim3((unsigned)groups, 1, 1);
    s.smem = 0;
    std::string name;
    int per_sm = 0;
    auto stage = [&](int nt) {  // the pipelined launch: persistent grid, dynamic shared memory
        s.smem = kg_p_smem_bytes(nt, lay.tpr * lay.rpb);
        s.grid = dim3(persistent_grid(s.f, lay.tpr * lay.rpb, s.smem, groups, g_sms), 1, 1);
        per_sm = (int)((s.grid.x + g_sms - 1) / g_sms);
    };
    switch (c.f) {
    case RMS:
        name = "kg_rmsnorm_" + tn + "_w" + wn + "_" + suf;
        s.f = kfn(name);
        s.arg(t.in[0]), s.arg(t.in[1]), s.arg(t.out[0]), s.arg(mi), s.arg(ni), s.arg(EPS);
        break;
    case FADD:
        name = "kg_fused_add_rmsnorm_" + tn + "_w" + wn + "_" + suf;
        s.f = kfn(name);
        s.arg(t.in[0]), s.arg(t.in[1]), s.arg(t.in[2]), s.arg(mi), s.arg(ni), s.arg(EPS);
        break;
    case LN:
        name = "kg_layernorm_" + tn + "_w" + wn + "_" + (staged ? "p" : reg ? "r" : suf);
        s.f = kfn(name);
        if (staged) stage(1);
        s.arg(t.in[0]), s.arg(t.in[1]), s.arg(t.in[2]), s.arg(t.out[0]), s.arg(mi), s.arg(ni), s.arg(EPS);
        break;
    case RMS_BWD: {
        name = "kg_rmsnorm_bwd_" + tn + "_w" + wn + "_" + (staged ? "p" : reg ? "r" : suf);
        s.f = kfn(name);
        if (staged) {
            stage(2);
        } else {
            s.grid = dim3(persistent_grid(s.f, lay.tpr * lay.rpb, 0, groups, g_sms), 1, 1);
            per_sm = (int)((s.grid.x + g_sms - 1) / g_sms);
        }
        const int blocks = (int)s.grid.x;
        CK(cudaMalloc(&p.ws, (size_t)blocks * c.n * 4));
        s.arg(t.in[0]), s.arg(t.in[1]), s.arg(t.in[2]), s.arg(t.out[0]), s.arg(p.ws), s.arg(mi), s.arg(ni),
            s.arg(EPS);
        p.steps.push_back(s);
        Step d{};
        d.f = kfn("kg_rmsnorm_dw_" + wn + (staged || reg ? "_p" : ""));
        d.grid = dim3((unsigned)((c.n + 31) / 32), 1, 1);
        d.block = dim3(32, 16, 1);
        d.smem = 0;
        d.arg(p.ws), d.arg(t.out[1]), d.arg(blocks), d.arg(ni);
        p.steps.push_back(d);
        p.desc = fmt("%s + dw (%dx%d thr, grid %d = %d/SM, smem %u)", name.c_str(), lay.tpr, lay.rpb, blocks,
                     per_sm, s.smem);
        return p;
    }
    case SM:
    case SM_BWD:
    case CE_BWD: {
        const char* fam = c.f == SM ? "softmax" : c.f == SM_BWD ? "softmax_bwd" : "cross_entropy_bwd";
        name = std::string("kg_") + fam + "_" + tn + "_" + (staged ? "p" : reg ? "r" : suf);
        s.f = kfn(name);
        if (staged) stage(c.f == SM_BWD ? 2 : 1);
        s.arg(t.in[0]);
        if (c.f == SM_BWD) s.arg(t.in[1]);
        if (c.f == CE_BWD) s.arg((void*)t.tgt), s.arg(t.in[2]);
        s.arg(t.out[0]), s.arg(mi), s.arg(ni);
        break;
    }
    case CE: {
        const bool pk = nw && lay.vec > 1;  // _p: the streamed kernel, same launch as old
        name = "kg_cross_entropy_" + tn + "_" + (pk ? "p" : reg ? "r" : suf);
        s.f = kfn(name);
        if (reg && getenv("CEB_WARPS")) {  // cross_entropy_bulk.cu: CEB_WARPS warps a block, CEB_STAGES buffers a warp, CEB_CHUNKS pieces a row, CEB_POLY=1 _bp
            const int th = 32 * std::max(1, std::min(32, atoi(getenv("CEB_WARPS"))));
            const int st = getenv("CEB_STAGES") ? std::max(1, std::min(KG_CEB_MAX_STAGES, atoi(getenv("CEB_STAGES")))) : 2;
            const bool poly = getenv("CEB_POLY") && atoi(getenv("CEB_POLY")) == 1;
            name = "kg_cross_entropy_" + tn + (poly ? "_bp" : "_b");
            s.f = kfn(name);
            s.block = dim3(th, 1, 1);
            s.smem = kg_ceb_smem_bytes((unsigned)(c.n * es), th, st);
            s.grid = dim3(persistent_grid(s.f, th, s.smem, (c.m + th / 32 - 1) / (th / 32), g_sms), 1, 1);
            per_sm = (int)((s.grid.x + g_sms - 1) / g_sms);
            lay.tpr = th, lay.rpb = 1;
            const int ch = getenv("CEB_CHUNKS") ? std::max(1, std::min(KG_CEB_MAX_CHUNKS, atoi(getenv("CEB_CHUNKS")))) : 1;
            s.arg(t.in[0]), s.arg((void*)t.tgt), s.arg(t.out[0]), s.arg(t.out[1]), s.arg(mi), s.arg(ni), s.arg(st), s.arg(ch);
            name += fmt(" S%d C%d", st, ch);
            break;
        } else if (reg) {  // the bulk-staged kernel: persistent blocks of KG_CE_B_THREADS, a warp per row
            s.block = dim3(KG_CE_B_THREADS, 1, 1);
            s.smem = kg_ce_b_smem_bytes((unsigned)(c.n * es), KG_CE_B_THREADS);
            s.grid = dim3(persistent_grid(s.f, KG_CE_B_THREADS, s.smem, (c.m + KG_CE_B_THREADS / 32 - 1) / (KG_CE_B_THREADS / 32), g_sms), 1, 1);
            per_sm = (int)((s.grid.x + g_sms - 1) / g_sms);
            lay.tpr = KG_CE_B_THREADS, lay.rpb = 1;
        }
        s.arg(t.in[0]), s.arg((void*)t.tgt), s.arg(t.out[0]), s.arg(t.out[1]), s.arg(mi), s.arg(ni);
        break;
    }
    default:
        exit(3);
    }
    p.steps.push_back(s);
    p.desc = fmt("%s (%dx%d thr, grid %u%s, smem %u)", name.c_str(), lay.tpr, lay.rpb, s.grid.x,
                 per_sm ? fmt(" = %d/SM", per_sm).c_str() : "", s.smem);
    return p;
}

static void free_plan(Plan& p) {
    if (p.ws) CK(cudaFree(p.ws));
    p.ws = nullptr;
}

// ------------------------------------------------------------------------------------------------
// Inputs (the harness's generator and ranges, src/family/norms.rs).

struct Range {
    float lo, hi;
};
static const Range SYM{-1.f, 1.f}, WEIGHT{0.5f, 1.5f}, LOGITS{-4.f, 4.f}, DLOSS{0.5f, 1.5f};
static Range probs(long long n, Dt d) {
    float hi = 2.f / (float)std::max<long long>(n, 1);
    if (d == FP16) hi = std::max(hi, 1.f / 512.f);
    return {0.f, hi};
}

static void fill(void* p, Dt d, long long count, unsigned tensor, Range r) {
    const int grid = (int)std::min<long long>((count + 255) / 256, (long long)g_sms * 32);
    if (count <= 0) return;
    if (d == BF16) rb_fill<__nv_bfloat16><<<grid, 256, 0, g_s>>>((__nv_bfloat16*)p, count, SEED, tensor, r.lo, r.hi);
    else if (d == FP16) rb_fill<__half><<<grid, 256, 0, g_s>>>((__half*)p, count, SEED, tensor, r.lo, r.hi);
    else rb_fill<float><<<grid, 256, 0, g_s>>>((float*)p, count, SEED, tensor, r.lo, r.hi);
    CK(cudaGetLastError());
}

static unsigned long long mix(unsigned long long x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}
// Targets as the harness: uniform in [0, n), about one row in 16 ignored (-100), the last row
// ignored when m > 1.
static std::vector<int> targets(long long m, long long n) {
    std::vector<int> t(m);
    for (long long i = 0; i < m; ++i) {
        const unsigned long long h = mix(SEED ^ (0x7a110001ull + (unsigned long long)i * 0x9e3779b97f4a7c15ull));
        if ((m > 1 && i == m - 1) || h % 16 == 0) t[i] = -100;
        else t[i] = (int)(mix(h) % (unsigned long long)n);
    }
    return t;
}

struct Shapes {
    std::vector<size_t> in, out;  // bytes
};
// Input i: 0 = m x n of T for all; see the families' tensor lists.
static Shapes shapes(const Case& c) {
    const size_t mn = (size_t)c.m * c.n, t = dsize(c.dt), w = dsize(wdt(c));
    switch (c.f) {
    case RMS: return {{mn * t, c.n * w}, {mn * t}};
    case RMS_BWD: return {{mn * t, c.n * w, mn * t}, {mn * t, c.n * w}};
    case FADD: return {{mn * t, mn * t, c.n * w}, {}};
    case LN: return {{mn * t, c.n * w, c.n * w}, {mn * t}};
    case SM: return {{mn * t}, {mn * t}};
    case SM_BWD: return {{mn * t, mn * t}, {mn * t}};
    case CE: return {{mn * t}, {(size_t)c.m * 4, (size_t)c.m * 4}};
    case CE_BWD: return {{mn * t, 0, (size_t)c.m * 4}, {mn * t}};
    default: exit(3);
    }
}

static void fill_inputs(const Case& c, Tensors& t) {
    const long long mn = c.m * c.n;
    const Dt w = wdt(c);
    switch (c.f) {
    case RMS: fill(t.in[0], c.dt, mn, 0, SYM), fill(t.in[1], w, c.n, 1, WEIGHT); break;
    case RMS_BWD: fill(t.in[0], c.dt, mn, 0, SYM), fill(t.in[1], w, c.n, 1, WEIGHT), fill(t.in[2], c.dt, mn, 2, SYM); break;
    case FADD: fill(t.in[0], c.dt, mn, 0, SYM), fill(t.in[1], c.dt, mn, 1, SYM), fill(t.in[2], w, c.n, 2, WEIGHT); break;
    case LN: fill(t.in[0], c.dt, mn, 0, SYM), fill(t.in[1], w, c.n, 1, WEIGHT), fill(t.in[2], w, c.n, 2, SYM); break;
    case SM: fill(t.in[0], c.dt, mn, 0, LOGITS); break;
    case SM_BWD: fill(t.in[0], c.dt, mn, 0, probs(c.n, c.dt)), fill(t.in[1], c.dt, mn, 1, SYM); break;
    case CE:
    case CE_BWD: {
        fill(t.in[0], c.dt, mn, 0, LOGITS);
        const std::vector<int> tg = targets(c.m, c.n);
        CK(cudaMemcpyAsync(t.tgt, tg.data(), c.m * 4, cudaMemcpyHostToDevice, g_s));
        if (c.f == CE_BWD) fill(t.in[2], FP32, c.m, 2, DLOSS);
        break;
    }
    default: exit(3);
    }
}

// ------------------------------------------------------------------------------------------------
// Host decoding and the float64 references (src/family/norms_ref.rs).

static double to_d(const void* p, Dt d, size_t i) {
    if (d == FP32) return ((const float*)p)[i];
    if (d == FP16) return (double)__half2float(((const __half*)p)[i]);
    unsigned u = (unsigned)((const unsigned short*)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double round_to(double x, Dt d) {  // x (a float) rounded to d, as the kernel stores it
    const float f = (float)x;
    if (d == FP32) return f;
    if (d == FP16) return (double)__half2float(__float2half_rn(f));
    return (double)__bfloat162float(__float2bfloat16_rn(f));
}

// The inputs on the host. When `rows` is not empty the m x n inputs hold only those rows, in
// that order (the speed shapes check three rows of inputs up to 1.6 GB).
struct Host {
    std::vector<std::vector<unsigned char>> in;
    std::vector<int> tgt;
    std::vector<long long> rows;
    long long at(long long i) const {  // the stored row of row i
        if (rows.empty()) return i;
        for (size_t r = 0; r < rows.size(); ++r)
            if (rows[r] == i) return (long long)r;
        printf("row %lld not stored\n", i);
        exit(3);
    }
};

// Whether input k of the case is an m x n tensor.
static bool is_mn(const Case& c, int k) {
    switch (c.f) {
    case RMS_BWD: return k == 0 || k == 2;
    case FADD:
    case SM_BWD: return k == 0 || k == 1;
    default: return k == 0;
    }
}

struct RowRef {  // reference values of one checked row per output (row-sized, or 1 for per-row)
    std::vector<std::vector<double>> out;
};

static RowRef ref_row(const Case& c, const Host& h, long long i) {
    const long long n = c.n;
    const Dt w = wdt(c);
    const long long ri = h.at(i);
    auto X = [&](int k, long long j) { return to_d(h.in[k].data(), c.dt, (size_t)(ri * n + j)); };
    auto Wv = [&](int k, long long j) { return to_d(h.in[k].data(), w, (size_t)j); };
    RowRef r;
    switch (c.f) {
    case RMS:
    case FADD: {
        std::vector<double> x(n);
        for (long long j = 0; j < n; ++j)
            x[j] = c.f == RMS ? X(0, j) : round_to((double)((float)X(0, j) + (float)X(1, j)), c.dt);
        double ss = 0;
        for (double v : x) ss += v * v;
        const double rs = 1.0 / std::sqrt(ss / n + 1e-6);
        std::vector<double> y(n);
        for (long long j = 0; j < n; ++j) y[j] = x[j] * rs * Wv(c.f == RMS ? 1 : 2, j);
        r.out.push_back(y);
        if (c.f == FADD) r.out.push_back(x);
        break;
    }
    case RMS_BWD: {
        double ss = 0, d = 0;
        for (long long j = 0; j < n; ++j) ss += X(0, j) * X(0, j), d += Wv(1, j) * X(2, j) * X(0, j);
        const double rs = 1.0 / std::sqrt(ss / n + 1e-6), coef = rs * rs * rs * d / n;
        std::vector<double> dx(n);
        for (long long j = 0; j < n; ++j) dx[j] = rs * Wv(1, j) * X(2, j) - coef * X(0, j);
        r.out.push_back(dx);
        break;
    }
    case LN: {
        double mean = 0, var = 0;
        for (long long j = 0; j < n; ++j) mean += X(0, j);
        mean /= n;
        for (long long j = 0; j < n; ++j) var += (X(0, j) - mean) * (X(0, j) - mean);
        const double rs = 1.0 / std::sqrt(var / n + 1e-6);
        std::vector<double> y(n);
        for (long long j = 0; j < n; ++j) y[j] = (X(0, j) - mean) * rs * Wv(1, j) + Wv(2, j);
        r.out.push_back(y);
        break;
    }
    case SM:
    case CE:
    case CE_BWD: {
        double mx = -INFINITY, s = 0;
        for (long long j = 0; j < n; ++j) mx = std::max(mx, X(0, j));
        for (long long j = 0; j < n; ++j) s += std::exp(X(0, j) - mx);
        const double l = mx + std::log(s);
        const int t = c.f == SM ? 0 : h.tgt[i];
        if (c.f == SM) {
            std::vector<double> y(n);
            for (long long j = 0; j < n; ++j) y[j] = std::exp(X(0, j) - l);
            r.out.push_back(y);
        } else if (c.f == CE) {
            const double loss = t == -100 ? 0.0 : (t < 0 || t >= n) ? NAN : l - X(0, t);
            r.out.push_back({loss});
            r.out.push_back({l});
        } else {
            const double g = ((const float*)h.in[2].data())[i];
            std::vector<double> dx(n, 0.0);
            if (t != -100)
                for (long long j = 0; j < n; ++j) dx[j] = g * (std::exp(X(0, j) - l) - (j == t ? 1.0 : 0.0));
            r.out.push_back(dx);
        }
        break;
    }
    case SM_BWD: {
        double d = 0;
        for (long long j = 0; j < n; ++j) d += X(0, j) * X(1, j);
        std::vector<double> dx(n);
        for (long long j = 0; j < n; ++j) dx[j] = X(0, j) * (X(1, j) - d);
        r.out.push_back(dx);
        break;
    }
    default: exit(3);
    }
    return r;
}

struct Tol {
    double rel_l2, atol, rtol;
};
static Tol tol(const Case& c) {
    if (c.f == CE) return {3e-5, 3e-5, 3e-5};
    if (c.f == RMS_BWD && c.n == 1) return {0.1, 0.1, 0.1};
    if (c.dt == BF16) return {1e-2, 1.6e-2, 1.6e-2};
    if (c.dt == FP16) return {1e-2, 4e-3, 4e-3};
    return {1e-5, 1e-5, 1e-5};
}

// The harness's check of one output: got/want over the checked elements.
static bool judge(const std::vector<double>& got, const std::vector<double>& want, Tol t, std::string* why) {
    double ref2 = 0, diff2 = 0, worst = -INFINITY;
    size_t wi = 0;
    for (double w : want) ref2 += w * w;
    const double scale = std::max(std::sqrt(ref2 / std::max<size_t>(want.size(), 1)), 2.2250738585072014e-308);
    for (size_t i = 0; i < want.size(); ++i) {
        double d = std::fabs(got[i] - want[i]);
        if (!std::isfinite(d)) d = INFINITY;
        diff2 += d * d;
        const double ex = d - (t.atol * scale + t.rtol * std::fabs(want[i]));
        if (ex > worst) worst = ex, wi = i;
    }
    const double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 == 0 ? 0 : INFINITY);
    if (rel > t.rel_l2 || worst > 0) {
        *why = fmt("rel_l2 %.3g (tol %.3g), worst element %zu: got %.9g want %.9g", rel, t.rel_l2, wi, got[wi], want[wi]);
        return false;
    }
    *why = fmt("rel_l2 %.2g", rel);
    return true;
}

// ------------------------------------------------------------------------------------------------
// One correctness case: old and new launch on the same inputs.

static int g_fail = 0, g_pass = 0;

static std::vector<long long> check_rows(long long m, bool all) {
    std::vector<long long> r;
    if (all || m <= 64) {
        for (long long i = 0; i < m; ++i) r.push_back(i);
        return r;
    }
    r.push_back(0);
    r.push_back(m - 1);
    unsigned long long s = 12345;
    while (r.size() < 16) {
        s = mix(s + 1);
        r.push_back((long long)(s % (unsigned long long)m));
    }
    return r;
}

static Dt out_dt(const Case& c, int o) {
    if (c.f == CE) return FP32;
    if (c.f == RMS_BWD && o == 1) return wdt(c);
    return c.dt;
}

// Runs plan (old or new) on freshly filled inputs and checks it; `rows_only` limits the
// reference to the given rows (speed shapes: no dw, no whole-output scan beyond those rows).
static bool run_and_check(const Case& c, int nw, Tensors& t, const Host& h, const std::vector<long long>& rows,
                          bool full_scan, std::string* desc) {
    const Shapes sh = shapes(c);
    fill_inputs(c, t);
    for (size_t o = 0; o < sh.out.size(); ++o) CK(cudaMemsetAsync(t.out[o], 0xff, sh.out[o], g_s));
    Plan p = make_plan(c, nw, t);
    *desc = p.desc;
    launch(p);
    CK(cudaStreamSynchronize(g_s));
    CK(cudaGetLastError());
    free_plan(p);
    // Outputs: FADD writes its inputs 0 and 1 in place.
    const int nout = c.f == FADD ? 2 : (int)sh.out.size();
    bool ok = true;
    std::string why_all;
    const long long n = c.n;
    for (int o = 0; o < nout; ++o) {
        void* dev = c.f == FADD ? t.in[o] : t.out[o];
        const size_t bytes = c.f == FADD ? sh.in[o] : sh.out[o];
        const Dt d = out_dt(c, o);
        const bool per_row = c.f == CE;
        const bool is_dw = c.f == RMS_BWD && o == 1;
        if (is_dw && !full_scan) continue;  // speed shapes: dw's reference would read every row
        std::vector<unsigned char> hb;
        if (full_scan || is_dw || per_row) {
            hb.resize(bytes);
            CK(cudaMemcpy(hb.data(), dev, bytes, cudaMemcpyDeviceToHost));
            const size_t cnt = bytes / dsize(d);
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < cnt; ++i)
                if (!std::isfinite(to_d(hb.data(), d, i))) {
                    if (!bad) first = i;
                    ++bad;
                }
            // Cross-entropy: rows whose target is out of range would be NaN by design; none here.
            if (bad) {
                ok = false;
                why_all += fmt(" [out%d: %zu non-finite, first %zu]", o, bad, first);
                continue;
            }
        }
        std::vector<double> got, want;
        if (is_dw) {
            // dw = sum over every row of dy * x * rstd.
            std::vector<double> dw(n, 0.0);
            for (long long i = 0; i < c.m; ++i) {
                double ss = 0;
                for (long long j = 0; j < n; ++j) {
                    const double x = to_d(h.in[0].data(), c.dt, (size_t)(i * n + j));
                    ss += x * x;
                }
                const double rs = 1.0 / std::sqrt(ss / n + 1e-6);
                for (long long j = 0; j < n; ++j)
                    dw[j] += to_d(h.in[2].data(), c.dt, (size_t)(i * n + j)) * to_d(h.in[0].data(), c.dt, (size_t)(i * n + j)) * rs;
            }
            for (long long j = 0; j < n; ++j) got.push_back(to_d(hb.data(), d, j)), want.push_back(dw[j]);
        } else {
            for (long long i : rows) {
                const RowRef r = ref_row(c, h, i);
                const std::vector<double>& w = r.out[o];
                if (per_row) {
                    got.push_back(to_d(hb.data(), d, i));
                    want.push_back(w[0]);
                } else if (!hb.empty()) {
                    for (long long j = 0; j < n; ++j) got.push_back(to_d(hb.data(), d, (size_t)(i * n + j))), want.push_back(w[j]);
                } else {
                    std::vector<unsigned char> rb(n * dsize(d));
                    CK(cudaMemcpy(rb.data(), (unsigned char*)dev + (size_t)i * n * dsize(d), rb.size(), cudaMemcpyDeviceToHost));
                    for (long long j = 0; j < n; ++j) {
                        const double g = to_d(rb.data(), d, j);
                        if (!std::isfinite(g)) ok = false, why_all += fmt(" [row %lld non-finite]", i);
                        got.push_back(g), want.push_back(w[j]);
                    }
                }
            }
        }
        std::string why;
        // An output stored in another dtype than the case's (dw in the weights' 16-bit type) is
        // judged by its own dtype's bounds, as the harness does.
        Case cd = c;
        cd.dt = d;
        if (!judge(got, want, tol(cd), &why)) ok = false;
        why_all += fmt(" out%d %s;", o, why.c_str());
    }
    if (!ok) *desc += " :" + why_all;
    return ok;
}

static Host read_inputs(const Case& c, Tensors& t, const std::vector<long long>& only_rows = {}) {
    const Shapes sh = shapes(c);
    fill_inputs(c, t);
    CK(cudaStreamSynchronize(g_s));
    Host h;
    h.rows = only_rows;
    for (size_t i = 0; i < sh.in.size(); ++i) {
        if (!only_rows.empty() && is_mn(c, (int)i)) {
            const size_t rb = (size_t)c.n * dsize(c.dt);
            h.in.emplace_back(rb * only_rows.size());
            for (size_t r = 0; r < only_rows.size(); ++r)
                CK(cudaMemcpy(h.in.back().data() + r * rb, (unsigned char*)t.in[i] + (size_t)only_rows[r] * rb, rb,
                              cudaMemcpyDeviceToHost));
            continue;
        }
        h.in.emplace_back(sh.in[i]);
        if (sh.in[i]) CK(cudaMemcpy(h.in.back().data(), t.in[i], sh.in[i], cudaMemcpyDeviceToHost));
    }
    if (c.f == CE || c.f == CE_BWD) h.tgt = targets(c.m, c.n);
    return h;
}

static Tensors alloc_tensors(const Case& c) {
    const Shapes sh = shapes(c);
    Tensors t;
    for (size_t i = 0; i < sh.in.size(); ++i)
        if (sh.in[i]) CK(cudaMalloc(&t.in[i], sh.in[i]));
    for (size_t o = 0; o < sh.out.size(); ++o) CK(cudaMalloc(&t.out[o], sh.out[o]));
    if (c.f == CE || c.f == CE_BWD) CK(cudaMalloc(&t.tgt, std::max<long long>(c.m, 1) * 4));
    return t;
}
static void free_tensors(Tensors& t) {
    for (void*& p : t.in) {
        if (p) CK(cudaFree(p));
        p = nullptr;
    }
    for (void*& p : t.out) {
        if (p) CK(cudaFree(p));
        p = nullptr;
    }
    if (t.tgt) CK(cudaFree(t.tgt));
    t.tgt = nullptr;
}

static std::string case_name(const Case& c) {
    std::string s = fmt("%s %s %lldx%lld", FAM[c.f], dname(c.dt), c.m, c.n);
    if (is_norm(c.f)) s += fmt(" w%d", c.w);
    return s;
}

static void correctness(const std::vector<int>& fams) {
    printf("\n== correctness (old = _v/_s launch, _p = the pipelined rules, _r = the register-resident rules; harness tolerances)\n");
    struct S {
        long long m, n;
    };
    const std::vector<S> base = {{1, 1},     {3, 1000},  {257, 4096}, {2, 262144}, {1000, 8},  {64, 768},
                                 {1, 4096},  {33, 4100}, {300, 3072}, {129, 6144}, {64, 7168}, {40, 8192},
                                 {7, 12288}, {5, 16384}, {3, 16392},  {4097, 1024}, {300000, 32},
                                 {4096, 7168}};
    const std::vector<S> fp32_extra = {{9, 8192}, {5, 8196}};
    for (int fi : fams) {
        const Fam f = (Fam)fi;
        for (Dt dt : {BF16, FP16, FP32}) {
            std::vector<S> list = base;
            if (dt == FP32) list.insert(list.end(), fp32_extra.begin(), fp32_extra.end());
            for (int w : {16, 32}) {
                if (!is_norm(f) && w == 16) continue;
                for (const S& sh : list) {
                    // Keep the CPU time bounded: dw of rmsnorm_bwd reads every row.
                    if (f == RMS_BWD && (long long)sh.m * sh.n > (1ll << 25)) continue;
                    Case c{f, dt, is_norm(f) ? w : 0, sh.m, sh.n};
                    Tensors t = alloc_tensors(c);
                    const Host h = read_inputs(c, t);
                    const std::vector<long long> rows = check_rows(c.m, false);
                    for (int nw = RV_OLD; nw <= RV_R; ++nw) {
                        if (!has_var(f, nw)) continue;
                        std::string desc;
                        const bool ok = run_and_check(c, nw, t, h, rows, true, &desc);
                        if (ok) ++g_pass;
                        else ++g_fail;
                        if (!ok) printf("  FAIL %-40s %s: %s\n", case_name(c).c_str(), VNAME[nw], desc.c_str());
                    }
                    free_tensors(t);
                }
            }
            printf("  %-18s %s: done (%d pass, %d fail so far)\n", FAM[f], dname(dt), g_pass, g_fail);
            fflush(stdout);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Speed.

static double bytes_of(const Case& c) {  // src/family/norms.rs bytes()
    const double m = (double)c.m, n = (double)c.n, t = dsize(c.dt), w = dsize(wdt(c)), mn = m * n;
    switch (c.f) {
    case RMS: return 2 * mn * t + n * w;
    case RMS_BWD: return 3 * mn * t + 2 * n * w;
    case FADD: return 4 * mn * t + n * w;
    case LN: return 2 * mn * t + 2 * n * w;
    case SM: return 2 * mn * t;
    case SM_BWD: return 3 * mn * t;
    case CE: return mn * t + 12 * m;
    case CE_BWD: return 2 * mn * t + 8 * m;
    default: return 0;
    }
}

static void* g_flush = nullptr;
static bool g_do_flush = true;
static int g_samples = 30;
// --flush memset (the harness's flush until session 11: leaves the L2 full of dirty lines) or read
// (a read of the whole flush buffer: the earlier dirty lines are written back during the flush and
// the L2 is left cold and clean); --flush-mult: the flush buffer in multiples of the L2 size.
static bool g_flush_read = true;
static int g_flush_mult = 2;
static unsigned* g_flush_sink = nullptr;

static void flush_l2() {
    if (!g_do_flush) return;
    const size_t bytes = (size_t)g_flush_mult * g_l2;
    if (g_flush_read)
        rb_read<<<g_sms * 8, 256, 0, g_s>>>((const uint4*)g_flush, g_flush_sink, (long long)(bytes / 16), 0);
    else
        CK(cudaMemsetAsync(g_flush, 0x5a, bytes, g_s));
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t k = v.size();
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

// Median µs per launch, timed as the harness does (see the header).
static double time_plan(const Plan& p, int* batch_out) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    // Warm-up (no flush) and the batch.
    double single = INFINITY;
    for (int i = 0; i < 5; ++i) {
        CK(cudaEventRecord(a, g_s));
        launch(p);
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        single = std::min(single, (double)ms * 1e3);
    }
    int batch = 1;
    if (single < 20.0) batch = std::min(256, std::max(2, (int)std::ceil(20.0 / std::max(single, 1e-3))));
    std::vector<double> us;
    for (int i = 0; i < g_samples; ++i) {
        flush_l2();
        rb_hold<<<1, 1, 0, g_s>>>((unsigned long long)((20.0 + 3.0 * batch) * 1e3));
        CK(cudaEventRecord(a, g_s));
        for (int k = 0; k < batch; ++k) launch(p);
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        us.push_back((double)ms * 1e3 / batch);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    *batch_out = batch;
    return median(us);
}

static double copy_bandwidth(double* memcpy_gbps, double* kernel_gbps) {
    const size_t bytes = 1ull << 30;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemsetAsync(a, 1, bytes, g_s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    auto med = [&](auto&& f) {
        for (int i = 0; i < 3; ++i) f();
        std::vector<double> ms;
        for (int i = 0; i < 15; ++i) {
            CK(cudaEventRecord(e0, g_s));
            f();
            CK(cudaEventRecord(e1, g_s));
            CK(cudaEventSynchronize(e1));
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            ms.push_back(t);
        }
        return median(ms);
    };
    const double m1 = med([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g_s)); });
    const double m2 = med([&] {
        rb_copy<<<g_sms * 8, 512, 0, g_s>>>((const uint4*)a, (uint4*)b, (long long)(bytes / 16));
    });
    CK(cudaGetLastError());
    *memcpy_gbps = 2.0 * bytes / (m1 * 1e-3) / 1e9;
    *kernel_gbps = 2.0 * bytes / (m2 * 1e-3) / 1e9;
    CK(cudaFree(a));
    CK(cudaFree(b));
    return std::max(*memcpy_gbps, *kernel_gbps);
}

static double bar_for(const Case& c) {
    if (c.m == 4096) return 0.75;
    return (c.f == CE || c.f == CE_BWD) ? 0.85 : 0.90;
}

static void speed(const std::vector<int>& fams) {
    double mc, kc;
    const double copy = copy_bandwidth(&mc, &kc);
    printf("\n== speed (bf16, w32; median of %d samples, %s)\n", g_samples,
           !g_do_flush ? "NO flush" : g_flush_read ? "read flush (clean L2) + 20 us hold before each sample" : "memset flush (dirty L2) + 20 us hold before each sample");
    printf("flush buffer: %d x L2\n", g_flush_mult);
    printf("copy bandwidth: cudaMemcpy D2D %.0f GB/s, copy kernel %.0f GB/s -> reference %.0f GB/s\n", mc, kc, copy);
    printf("columns: us and fraction of copy bandwidth (GB/s in the launch column) of old (_v/_s), _p, _r\n"
           "(cross_entropy's _r: the bulk-staged kernel, rows of 16-byte multiples up to 24 KB);\n"
           "auto = what KERNELGATE_ROWS_KERNEL=auto runs (rows_variant), best = the fastest measured,\n"
           "vs old = old us / auto us (>= 1: auto no slower than old). '-' = no such kernel for the shape.\n");
    g_flush = nullptr;
    CK(cudaMalloc(&g_flush, (size_t)g_flush_mult * g_l2));
    CK(cudaMemset(g_flush, 0x5a, (size_t)g_flush_mult * g_l2));
    CK(cudaMalloc(&g_flush_sink, (size_t)g_sms * 8 * 4));
    printf("%-18s %6s %6s | %8s %5s | %8s %5s | %8s %5s | %4s %4s %6s %5s | %s\n", "family", "M", "N", "old us", "frac",
           "_p us", "frac", "_r us", "frac", "auto", "best", "vs old", "bar", "auto launch, GB/s");
    int bars_met = 0, bars_total = 0, auto_slower = 0, auto_not_best = 0;
    for (int fi : fams) {
        const Fam f = (Fam)fi;
        std::vector<std::pair<long long, long long>> list;
        const std::vector<long long> ns = (f == CE || f == CE_BWD) ? std::vector<long long>{3072, 6144, 8192, 12288}
                                                                     : std::vector<long long>{6144, 7168, 8192};
        for (long long m : {4096ll, 16384ll, 65536ll})
            for (long long n : ns) list.push_back({m, n});
        list.push_back({65536, 4096});
        // Default-suite row shapes (fixtures/default.json; here in bf16, w32).
        list.push_back({4096, 1000});
        if (f == CE) list.push_back({4096, 131072});
        if (f == SM) list.push_back({16384, 8192});
        double lo = INFINITY, hi = 0;
        for (auto [m, n] : list) {
            Case c{f, BF16, 32, m, n};
            Tensors t = alloc_tensors(c);
            const std::vector<long long> rows = {0, m / 2, m - 1};
            const Host h = read_inputs(c, t, rows);
            double us[3] = {0, 0, 0};
            std::string desc[3];
            bool ok = true;
            int batch = 1;
            // A variant that does not apply to the shape runs the old kernel: time it only once.
            RowLayout tmp;
            const bool applies[3] = {true, has_new(f) && (f == CE ? row_layout(n, 2).vec > 1 : p_layout(n, 2, &tmp)),
                                     r_applies(f, n, 2)};
            for (int nw = RV_OLD; nw <= RV_R; ++nw) {
                if (!applies[nw]) {
                    us[nw] = -1;
                    continue;
                }
                std::string d;
                const bool good = run_and_check(c, nw, t, h, rows, false, &d);
                if (!good) {
                    ok = false;
                    ++g_fail;
                    printf("  FAIL (speed shape check) %s %s: %s\n", case_name(c).c_str(), VNAME[nw], d.c_str());
                } else {
                    ++g_pass;
                }
                fill_inputs(c, t);
                Plan p = make_plan(c, nw, t);
                desc[nw] = p.desc;
                int bt = 1;
                us[nw] = time_plan(p, &bt);
                batch = std::max(batch, bt);
                free_plan(p);
            }
            // cross_entropy: the read-only ceiling of its bytes (rb_read, same timing), plain and
            // evict-first loads.
            double rd_us[2] = {0, 0};
            if (f == CE) {
                unsigned* dummy;
                CK(cudaMalloc(&dummy, (size_t)g_sms * 8 * 4));
                for (int ef = 0; ef < 2; ++ef) {
                    Plan rp;
                    Step st{};
                    st.f = (const void*)rb_read;
                    st.grid = dim3(g_sms * 8, 1, 1);
                    st.block = dim3(256, 1, 1);
                    st.smem = 0;
                    st.arg((const void*)t.in[0]), st.arg((void*)dummy), st.arg((long long)(m * n * 2 / 16)), st.arg(ef);
                    rp.steps.push_back(st);
                    int bt = 1;
                    rd_us[ef] = time_plan(rp, &bt);
                }
                CK(cudaFree(dummy));
            }
            const int av = rows_variant(RC_AUTO, FAM[f], m, n, 2);
            int best = RV_OLD;
            for (int v = RV_P; v <= RV_R; ++v)
                if (us[v] > 0 && us[v] < us[best]) best = v;
            const double b = bytes_of(c);
            double fr[3];
            for (int v = 0; v < 3; ++v) fr[v] = us[v] > 0 ? b / (us[v] * 1e-6) / 1e9 / copy : 0;
            const double bar = bar_for(c);
            const bool suite = n == 1000 || n == 131072 || (f == SM && m == 16384 && n == 8192);
            if (!suite) {
                ++bars_total;
                if (fr[av] >= bar) ++bars_met;
                lo = std::min(lo, fr[av]);
                hi = std::max(hi, fr[av]);
            }
            // 2% slack: the run-to-run noise of one median.
            if (us[av] > 1.02 * us[RV_OLD]) ++auto_slower;
            if (us[av] > 1.02 * us[best]) ++auto_not_best;
            auto col = [&](int v) { return us[v] > 0 ? fmt("%8.1f %5.3f", us[v], fr[v]) : fmt("%8s %5s", "-", "-"); };
            printf("%-18s %6lld %6lld | %s | %s | %s | %4s %4s %5.2fx %5s | %s %.0f GB/s%s%s\n", FAM[f], m, n,
                   col(RV_OLD).c_str(), col(RV_P).c_str(), col(RV_R).c_str(), VNAME[av], VNAME[best],
                   us[RV_OLD] / us[av], suite ? "suite" : fr[av] >= bar ? "ok" : "MISS", desc[av].c_str(),
                   b / (us[av] * 1e-6) / 1e9, batch > 1 ? fmt(" [batch %d]", batch).c_str() : "",
                   ok ? "" : " [CHECK FAILED]");
            if (f == CE) {
                const double rb = (double)m * n * 2;
                printf("%-18s %6s %6s   read-only ceiling of the logits (rb_read): plain %.1f us %.3f, evict-first %.1f us %.3f\n",
                       "", "", "", rd_us[0], rb / (rd_us[0] * 1e-6) / 1e9 / copy, rd_us[1],
                       rb / (rd_us[1] * 1e-6) / 1e9 / copy);
            }
            fflush(stdout);
            free_tensors(t);
        }
        printf("%-18s auto frac range (dsv3 + 65536x4096) %.2f-%.2f\n", FAM[f], lo, hi);
    }
    printf("bars met (auto): %d of %d (M=4096: >= 0.75; M >= 16384 and 65536x4096: >= 0.90, cross-entropy >= 0.85)\n",
           bars_met, bars_total);
    printf("auto > 1.02x old on %d shapes; auto > 1.02x the best variant on %d shapes\n", auto_slower, auto_not_best);
    CK(cudaFree(g_flush));
    CK(cudaFree(g_flush_sink));
}

// ------------------------------------------------------------------------------------------------

int main(int argc, char** argv) {
    bool check = true, spd = true;
    std::vector<int> fams;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--check-only") spd = false;
        else if (a == "--speed-only") check = false;
        else if (a == "--no-flush") g_do_flush = false;
        else if (a == "--flush" && i + 1 < argc) {
            const std::string m = argv[++i];
            if (m == "read") g_flush_read = true;
            else if (m == "memset") g_flush_read = false;
            else if (m == "none") g_do_flush = false;
            else { printf("--flush: memset, read or none, not %s\n", m.c_str()); return 2; }
        } else if (a == "--flush-mult" && i + 1 < argc) g_flush_mult = std::max(1, atoi(argv[++i]));
        else if (a == "--samples" && i + 1 < argc) g_samples = atoi(argv[++i]);
        else if (a == "--fam" && i + 1 < argc) {
            const std::string f = argv[++i];
            for (int k = 0; k < NFAM; ++k)
                if (f == FAM[k]) fams.push_back(k);
        } else {
            printf("usage: %s [--check-only|--speed-only] [--no-flush] [--flush memset|read|none] [--flush-mult K] [--samples N] [--fam NAME]...\n", argv[0]);
            return 2;
        }
    }
    if (fams.empty())
        for (int k = 0; k < NFAM; ++k) fams.push_back(k);
    register_kernels();
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    g_l2 = prop.l2CacheSize;
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    printf("%s, %d SMs, L2 %.0f MB, cc %d.%d, KG_P_STAGES %d, KG_P_CACHE %d\n", prop.name, g_sms, g_l2 / 1048576.0,
           prop.major, prop.minor, KG_P_STAGES, KG_P_CACHE);
    // Registers and occupancy of the pipelined kernels at the dsv3 block sizes.
    for (const char* k : {"kg_softmax_bf16_p", "kg_softmax_bwd_bf16_p", "kg_cross_entropy_bf16_p",
                          "kg_cross_entropy_bwd_bf16_p", "kg_layernorm_bf16_wfp32_p", "kg_rmsnorm_bwd_bf16_wfp32_p",
                          "kg_softmax_bf16_v", "kg_layernorm_bf16_wfp32_v", "kg_rmsnorm_bwd_bf16_wfp32_v",
                          "kg_rmsnorm_bf16_wfp32_v", "kg_cross_entropy_bf16_v", "kg_cross_entropy_bwd_bf16_v",
                          "kg_softmax_bf16_r", "kg_cross_entropy_bwd_bf16_r", "kg_layernorm_bf16_wfp32_r",
                          "kg_cross_entropy_bf16_r", "kg_rmsnorm_bwd_bf16_wfp32_r"}) {
        cudaFuncAttributes at;
        CK(cudaFuncGetAttributes(&at, kfn(k)));
        const bool p = std::string(k).back() == 'p';  // _r and _v: no dynamic shared memory
        const int nt = (std::string(k).find("bwd") != std::string::npos &&
                        std::string(k).find("cross") == std::string::npos) ? 2 : 1;
        const unsigned smem = p && std::string(k).find("kg_cross_entropy_bf16") == std::string::npos
                                  ? kg_p_smem_bytes(nt, 256) : 0;
        if (smem > 0) CK(cudaFuncSetAttribute(kfn(k), cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kfn(k), 256, smem));
        printf("  %-32s %3d regs, %5zu B static smem, 256-thread blocks with %6u B dynamic: %d/SM\n", k, at.numRegs,
               at.sharedSizeBytes, smem, occ);
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (check) correctness(fams);
    const auto t1 = std::chrono::steady_clock::now();
    if (spd) speed(fams);
    const auto t2 = std::chrono::steady_clock::now();
    printf("\nchecks: %d pass, %d fail (correctness %.0f s, speed %.0f s)\n", g_pass, g_fail,
           std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
    printf(g_fail ? "rows_bench: FAILURES\n" : "rows_bench: ALL OK\n");
    return g_fail ? 1 : 0;
}
