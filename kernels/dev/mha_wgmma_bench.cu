// Standalone correctness + speed bench for ../mha_wgmma.cu (Hopper TMA + wgmma attention) next to
// ../mha.cu (the mma.sync kernel), same run. Not part of the Rust harness.
// Build and run with kernels/dev/run_mha_wgmma.sh (from the repo root), or by hand:
//   nvcc -O3 -std=c++17 -arch=sm_90a -I kernels -o /tmp/mwb kernels/dev/mha_wgmma_bench.cu
//   /tmp/mwb [--check-only] [--speed-only] [--label NAME]
//
// Correctness: every shape × dtype × causal in the list below, both kernels, against a plain fp32
// reference kernel (one thread per (b, h, query row), two passes, expf) reading the same 16-bit
// inputs; outputs are NaN-poisoned before the launch. PASS when no NaN/Inf and
// max|out − ref| <= tol · max(max|ref|, 1e-3), tol = 2e-2 (bf16), 5e-3 (fp16).
// Speed: TFLOP/s = 4·B·H·Sq·Sk·D (halved for causal) / median of 20 timed launches (cudaEvent)
// after 3 warm-up launches.
// Robustness: the shapes run in a forked child process; a CUDA error or a launch that does not
// finish within 20 s (watchdog) ends the child with a message, the parent records FAIL for that
// shape and starts a fresh child at the next one. Exit status 1 when anything failed.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../mha.cu"
#include "../mha_wgmma.cu"

static const char* g_label = "wgmma";

#define CK(x)                                                                                           \
    do {                                                                                                \
        cudaError_t e_ = (x);                                                                           \
        if (e_ != cudaSuccess) {                                                                        \
            printf("  CUDA ERROR: %s (%s) at %s:%d\n", cudaGetErrorString(e_), #x, __FILE__, __LINE__); \
            fflush(stdout);                                                                             \
            _exit(3);                                                                                   \
        }                                                                                               \
    } while (0)

// Waits for the device with a watchdog: a kernel that has not finished after `limit_s` is a hang.
static void sync_watchdog(const char* what, double limit_s = 20.0) {
    auto t0 = std::chrono::steady_clock::now();
    for (;;) {
        cudaError_t e = cudaStreamQuery(0);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) {
            printf("  CUDA ERROR after %s: %s\n", what, cudaGetErrorString(e));
            fflush(stdout);
            _exit(3);
        }
        double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (el > limit_s) {
            printf("  HANG: %s did not finish in %.0f s (watchdog)\n", what, limit_s);
            fflush(stdout);
            _exit(4);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    CK(cudaGetLastError());
}

struct Shape {
    int b, h, hkv, sq, sk, d, causal;
};

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half(x); }

template <typename T>
__global__ void fill(T* p, size_t n, unsigned tensor, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = from_f<T>(kg_input_value(42, tensor, i, lo, hi));
}

// Obviously-correct fp32 reference: one thread per (b, h, query row).
template <typename T>
__global__ void ref_attn(const T* Q, const T* K, const T* V, float* O, int B, int H, int Hkv, int Sq, int Sk, int D,
                         int causal, float scale) {
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (idx >= (long long)B * H * Sq) return;
    const int i = (int)(idx % Sq);
    const int h = (int)((idx / Sq) % H);
    const int b = (int)(idx / ((long long)Sq * H));
    const int hk = h / (H / Hkv);
    const T* q = Q + (((size_t)b * H + h) * Sq + i) * D;
    const T* k = K + ((size_t)b * Hkv + hk) * Sk * D;
    const T* v = V + ((size_t)b * Hkv + hk) * Sk * D;
    float* o = O + (((size_t)b * H + h) * Sq + i) * D;
    int last = Sk - 1;
    if (causal) last = min(Sk - 1, i + Sk - Sq);
    float qf[128];
    for (int d = 0; d < D; ++d) qf[d] = (float)q[d];
    float mx = -INFINITY;
    for (int j = 0; j <= last; ++j) {
        float s = 0.f;
        for (int d = 0; d < D; ++d) s += qf[d] * (float)k[(size_t)j * D + d];
        mx = fmaxf(mx, s * scale);
    }
    float acc[128];
    for (int d = 0; d < D; ++d) acc[d] = 0.f;
    float sum = 0.f;
    for (int j = 0; j <= last; ++j) {
        float s = 0.f;
        for (int d = 0; d < D; ++d) s += qf[d] * (float)k[(size_t)j * D + d];
        float p = expf(s * scale - mx);
        sum += p;
        for (int d = 0; d < D; ++d) acc[d] += p * (float)v[(size_t)j * D + d];
    }
    for (int d = 0; d < D; ++d) o[d] = last >= 0 ? acc[d] / sum : 0.f;
}

static PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;

static CUtensorMap make_map(void* ptr, bool bf16, int D, int S, int BHs, int box_rows) {
    CUtensorMap m;
    cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)S, (cuuint64_t)BHs};
    cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)S * D * 2};
    cuuint32_t box[3] = {64, (cuuint32_t)box_rows, 1};
    cuuint32_t es[3] = {1, 1, 1};
    CUresult r = g_encode(&m, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, ptr, dims,
                          strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        printf("  cuTensorMapEncodeTiled failed: %d (D=%d S=%d BH=%d box_rows=%d)\n", (int)r, D, S, BHs, box_rows);
        fflush(stdout);
        _exit(3);
    }
    return m;
}

static const void* wg_kernel(bool bf16, int d, int causal) {
    if (bf16) {
        if (d == 64) return causal ? (const void*)mha_wgmma_bf16_d64_causal : (const void*)mha_wgmma_bf16_d64;
        return causal ? (const void*)mha_wgmma_bf16_d128_causal : (const void*)mha_wgmma_bf16_d128;
    }
    if (d == 64) return causal ? (const void*)mha_wgmma_fp16_d64_causal : (const void*)mha_wgmma_fp16_d64;
    return causal ? (const void*)mha_wgmma_fp16_d128_causal : (const void*)mha_wgmma_fp16_d128;
}
static const void* mma_kernel(bool bf16, int d, int causal) {
    if (bf16) {
        if (d == 64) return causal ? (const void*)mha_fwd_bf16_d64_causal : (const void*)mha_fwd_bf16_d64;
        return causal ? (const void*)mha_fwd_bf16_d128_causal : (const void*)mha_fwd_bf16_d128;
    }
    if (d == 64) return causal ? (const void*)mha_fwd_fp16_d64_causal : (const void*)mha_fwd_fp16_d64;
    return causal ? (const void*)mha_fwd_fp16_d128_causal : (const void*)mha_fwd_fp16_d128;
}
static int wg_smem(int d) {
    return d == 64 ? (int)mha_wg::Layout<64, MHA_WG_BN, MHA_WG_STAGES_D64>::SMEM
                   : (int)mha_wg::Layout<128, MHA_WG_BN, MHA_WG_STAGES_D128>::SMEM;
}
static int mma_smem(int d) { return (128 + 4 * (d == 64 ? MHA_BN_D64 : MHA_BN_D128)) * d * 2; }

struct Bufs {
    void *q, *k, *v, *o;
    CUtensorMap tq, tk, tv;
};

// One launch of kernel `which` (0 = wgmma, 1 = mma) on the stream, no sync.
static void launch(int which, const Shape& s, bool bf16, const Bufs& bu) {
    const float sl2 = (float)(1.4426950408889634 / std::sqrt((double)s.d));
    dim3 grid((s.sq + 127) / 128, s.h, s.b);
    int h = s.h, hkv = s.hkv, sq = s.sq, sk = s.sk;
    float sc = sl2;
    void* o = bu.o;
    if (which == 0) {
        const void* f = wg_kernel(bf16, s.d, s.causal);
        int smem = wg_smem(s.d);
        CUtensorMap tq = bu.tq, tk = bu.tk, tv = bu.tv;
        void* args[] = {&tq, &tk, &tv, &o, &h, &hkv, &sq, &sk, &sc};
        CK(cudaLaunchKernel(f, grid, dim3(384), args, smem, 0));
    } else {
        const void* f = mma_kernel(bf16, s.d, s.causal);
        int smem = mma_smem(s.d);
        void *q = bu.q, *k = bu.k, *v = bu.v;
        void* args[] = {&q, &k, &v, &o, &h, &hkv, &sq, &sk, &sc};
        CK(cudaLaunchKernel(f, grid, dim3(256), args, smem, 0));
    }
}

static Bufs alloc_inputs(const Shape& s, bool bf16) {
    Bufs bu;
    size_t nq = (size_t)s.b * s.h * s.sq * s.d, nkv = (size_t)s.b * s.hkv * s.sk * s.d;
    CK(cudaMalloc(&bu.q, nq * 2));
    CK(cudaMalloc(&bu.k, nkv * 2));
    CK(cudaMalloc(&bu.v, nkv * 2));
    CK(cudaMalloc(&bu.o, nq * 2));
    if (bf16) {
        fill<<<1024, 256>>>((__nv_bfloat16*)bu.q, nq, 0, -4.f, 4.f);
        fill<<<1024, 256>>>((__nv_bfloat16*)bu.k, nkv, 1, -1.f, 1.f);
        fill<<<1024, 256>>>((__nv_bfloat16*)bu.v, nkv, 2, -1.f, 1.f);
    } else {
        fill<<<1024, 256>>>((__half*)bu.q, nq, 0, -4.f, 4.f);
        fill<<<1024, 256>>>((__half*)bu.k, nkv, 1, -1.f, 1.f);
        fill<<<1024, 256>>>((__half*)bu.v, nkv, 2, -1.f, 1.f);
    }
    sync_watchdog("fill");
    bu.tq = make_map(bu.q, bf16, s.d, s.sq, s.b * s.h, 128);
    bu.tk = make_map(bu.k, bf16, s.d, s.sk, s.b * s.hkv, MHA_WG_BN);
    bu.tv = make_map(bu.v, bf16, s.d, s.sk, s.b * s.hkv, MHA_WG_BN);
    return bu;
}
static void free_bufs(Bufs& bu) {
    cudaFree(bu.q);
    cudaFree(bu.k);
    cudaFree(bu.v);
    cudaFree(bu.o);
}

static float h2f(unsigned short x, bool bf16) {
    if (bf16) {
        unsigned u = (unsigned)x << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    __half_raw r;
    r.x = x;
    return __half2float(__half(r));
}

// Returns true on PASS.
static bool check_one(const Shape& s, bool bf16) {
    Bufs bu = alloc_inputs(s, bf16);
    size_t nq = (size_t)s.b * s.h * s.sq * s.d;
    float* ref;
    CK(cudaMalloc(&ref, nq * 4));
    long long rows = (long long)s.b * s.h * s.sq;
    float scale = (float)(1.0 / std::sqrt((double)s.d));
    if (bf16)
        ref_attn<<<(unsigned)((rows + 127) / 128), 128>>>((const __nv_bfloat16*)bu.q, (const __nv_bfloat16*)bu.k,
                                                          (const __nv_bfloat16*)bu.v, ref, s.b, s.h, s.hkv, s.sq,
                                                          s.sk, s.d, s.causal, scale);
    else
        ref_attn<<<(unsigned)((rows + 127) / 128), 128>>>((const __half*)bu.q, (const __half*)bu.k,
                                                          (const __half*)bu.v, ref, s.b, s.h, s.hkv, s.sq, s.sk, s.d,
                                                          s.causal, scale);
    sync_watchdog("reference", 100.0);
    std::vector<float> hr(nq);
    CK(cudaMemcpy(hr.data(), ref, nq * 4, cudaMemcpyDeviceToHost));
    float refmax = 0.f;
    for (float x : hr) refmax = std::max(refmax, std::fabs(x));
    const double tol = (bf16 ? 2e-2 : 5e-3) * std::max(refmax, 1e-3f);
    bool all_ok = true;
    std::vector<unsigned short> ho(nq);
    for (int which = 0; which < 2; ++which) {
        CK(cudaMemset(bu.o, 0xff, nq * 2));  // NaN in bf16 and fp16
        launch(which, s, bf16, bu);
        sync_watchdog(which == 0 ? g_label : "mma");
        CK(cudaMemcpy(ho.data(), bu.o, nq * 2, cudaMemcpyDeviceToHost));
        double maxerr = 0.0;
        size_t worst = 0, nonfinite = 0, first_nf = 0;
        for (size_t i = 0; i < nq; ++i) {
            float g = h2f(ho[i], bf16);
            if (!std::isfinite(g)) {
                if (nonfinite++ == 0) first_nf = i;
                continue;
            }
            double e = std::fabs((double)g - hr[i]);
            if (e > maxerr) {
                maxerr = e;
                worst = i;
            }
        }
        bool ok = nonfinite == 0 && maxerr <= tol;
        all_ok &= ok;
        printf("  %-6s b%d h%d hkv%d sq%d sk%d d%d c%d %s  max|err| %.3e (tol %.1e, max|ref| %.3f)", which == 0 ? g_label : "mma",
               s.b, s.h, s.hkv, s.sq, s.sk, s.d, s.causal, bf16 ? "bf16" : "fp16", maxerr, tol, refmax);
        if (nonfinite) {
            size_t r = first_nf / s.d;
            printf("  %zu NaN/Inf, first at row %zu (query %zu) col %zu", nonfinite, r, r % s.sq, first_nf % s.d);
        } else if (!ok) {
            size_t r = worst / s.d;
            printf("  worst at row %zu (query %zu) col %zu: got %.5f want %.5f", r, r % s.sq, worst % s.d,
                   h2f(ho[worst], bf16), hr[worst]);
        }
        printf("  %s\n", ok ? "PASS" : "FAIL");
        fflush(stdout);
    }
    cudaFree(ref);
    free_bufs(bu);
    return all_ok;
}

static void speed_one(const Shape& s, bool bf16, int only_which) {
    Bufs bu = alloc_inputs(s, bf16);
    double fl = 4.0 * s.b * s.h * (double)s.sq * s.sk * s.d * (s.causal ? 0.5 : 1.0);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double tf[2] = {0, 0};
    float med_ms[2] = {0, 0};
    for (int which = 0; which < 2; ++which) {
        if (only_which >= 0 && which != only_which) continue;
        for (int i = 0; i < 3; ++i) launch(which, s, bf16, bu);
        sync_watchdog("warm-up");
        std::vector<float> ms;
        for (int i = 0; i < 20; ++i) {
            CK(cudaEventRecord(e0));
            launch(which, s, bf16, bu);
            CK(cudaEventRecord(e1));
            sync_watchdog(which == 0 ? g_label : "mma");
            float t;
            CK(cudaEventElapsedTime(&t, e0, e1));
            ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        med_ms[which] = ms[ms.size() / 2];
        tf[which] = fl / med_ms[which] / 1e9;
    }
    char name[96];
    snprintf(name, sizeof name, "b%d h%d hkv%d s%d/%d d%d %s %s", s.b, s.h, s.hkv, s.sq, s.sk, s.d,
             s.causal ? "causal" : "full  ", bf16 ? "bf16" : "fp16");
    if (only_which >= 0)
        printf("| %-40s | %8.3f ms %7.1f TF/s |\n", name, med_ms[only_which], tf[only_which]);
    else
        printf("| %-40s | %8.3f ms %7.1f | %8.3f ms %7.1f | %5.2fx |\n", name, med_ms[0], tf[0], med_ms[1], tf[1],
               tf[0] / tf[1]);
    fflush(stdout);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    free_bufs(bu);
}

static void print_attrs() {
    const char* names[8] = {"bf16_d64", "bf16_d64_causal", "bf16_d128", "bf16_d128_causal",
                            "fp16_d64", "fp16_d64_causal", "fp16_d128", "fp16_d128_causal"};
    for (int i = 0; i < 8; ++i) {
        bool bf16 = i < 4;
        int d = (i & 2) ? 128 : 64, c = i & 1;
        cudaFuncAttributes a, b;
        CK(cudaFuncGetAttributes(&a, wg_kernel(bf16, d, c)));
        CK(cudaFuncGetAttributes(&b, mma_kernel(bf16, d, c)));
        printf("  %-17s %s: %3d regs, %4zu B local (spill)  | mma: %3d regs, %4zu B local; %s smem %d B\n", names[i],
               g_label, a.numRegs, a.localSizeBytes, b.numRegs, b.localSizeBytes, g_label, wg_smem(d));
    }
}

// Runs `n` jobs in forked children; job i runs in a child and a crash of job i is reported and
// the next job starts in a fresh child. Returns the number of failed jobs.
template <typename F>
static int run_jobs(int n, F job) {
    int* progress = (int*)mmap(nullptr, 2 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int failed_shapes = 0;
    int start = 0;
    while (start < n) {
        progress[0] = start;
        progress[1] = 0;  // failures counted by the child
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = start; i < n; ++i) {
                progress[0] = i;
                if (!job(i)) progress[1]++;
            }
            fflush(stdout);
            _exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        failed_shapes += progress[1];
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) break;
        printf("  job %d FAIL: the child ended abnormally (%s %d); continuing with the next one in a fresh process\n",
               progress[0], WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        failed_shapes++;
        start = progress[0] + 1;
    }
    munmap(progress, 2 * sizeof(int));
    return failed_shapes;
}

int main(int argc, char** argv) {
    bool check = true, speed = true;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--check-only")) speed = false;
        else if (!strcmp(argv[i], "--speed-only")) check = false;
        else if (!strcmp(argv[i], "--label") && i + 1 < argc) g_label = argv[++i];
    }
    {
        pid_t pid = fork();  // the parent never touches CUDA (fork safety)
        if (pid == 0) {
            cudaDeviceProp p;
            CK(cudaGetDeviceProperties(&p, 0));
            printf("device: %s (sm_%d%d, %d SMs), wgmma variant '%s': BN=%d, stages d64/d128 = %d/%d, overlap=%d, pingpong=%d\n",
                   p.name, p.major, p.minor, p.multiProcessorCount, g_label, MHA_WG_BN, MHA_WG_STAGES_D64,
                   MHA_WG_STAGES_D128, MHA_WG_OVERLAP, MHA_WG_PINGPONG);
            print_attrs();
            fflush(stdout);
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            printf("could not query the device / kernel attributes\n");
            return 1;
        }
    }
    auto init = []() {
        static bool done = false;
        if (done) return;
        done = true;
        cudaDriverEntryPointQueryResult q;
        CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void**)&g_encode, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !g_encode) {
            printf("cuTensorMapEncodeTiled not found\n");
            _exit(3);
        }
        for (int i = 0; i < 8; ++i) {
            bool bf16 = i < 4;
            int d = (i & 2) ? 128 : 64, c = i & 1;
            CK(cudaFuncSetAttribute(wg_kernel(bf16, d, c), cudaFuncAttributeMaxDynamicSharedMemorySize, wg_smem(d)));
            CK(cudaFuncSetAttribute(mma_kernel(bf16, d, c), cudaFuncAttributeMaxDynamicSharedMemorySize, mma_smem(d)));
        }
    };
    int fails = 0;
    if (check) {
        // b, h, hkv, sq, sk, d, causal
        std::vector<Shape> shapes = {
            {1, 1, 1, 1, 1, 64, 0},         {1, 1, 1, 1, 1, 128, 1},        {1, 2, 2, 17, 300, 128, 1},
            {1, 2, 2, 17, 300, 64, 1},      {1, 2, 2, 300, 17, 64, 1},      {1, 2, 2, 300, 17, 128, 1},
            {1, 2, 2, 300, 17, 128, 0},     {1, 2, 1, 4097, 4097, 128, 1},  {1, 1, 1, 4097, 4097, 64, 0},
            {2, 4, 4, 200, 200, 64, 0},     {2, 3, 3, 129, 129, 128, 1},    {1, 2, 2, 191, 191, 128, 1},
            {1, 2, 2, 191, 191, 64, 1},     {1, 32, 8, 256, 256, 128, 1},   {2, 32, 8, 1000, 1000, 64, 1},
            {1, 8, 1, 333, 333, 128, 0},    {1, 8, 1, 500, 700, 64, 1},     {1, 4, 4, 64, 1000, 128, 1},
            {2, 4, 2, 1000, 64, 64, 0},     {1, 2, 2, 300, 200, 128, 0},    {2, 2, 2, 1024, 1024, 128, 0},
            {2, 2, 2, 1024, 1024, 64, 1},   {1, 2, 2, 128, 128, 128, 1},    {1, 2, 2, 2000, 2500, 128, 1},
        };
        printf("\n== correctness (%zu shapes x bf16/fp16; kernels '%s' and 'mma' vs the fp32 reference) ==\n",
               shapes.size(), g_label);
        int n = (int)shapes.size() * 2;
        fails += run_jobs(n, [&](int i) {
            init();
            return check_one(shapes[i / 2], (i & 1) == 0);
        });
        printf("correctness: %d failing job(s)\n", fails);
    }
    if (speed) {
        std::vector<Shape> sp = {
            {4, 32, 32, 4096, 4096, 128, 1}, {4, 32, 32, 4096, 4096, 128, 0}, {1, 32, 32, 16384, 16384, 128, 0},
            {16, 16, 16, 2048, 2048, 128, 1}, {2, 32, 8, 1000, 1000, 64, 1},   {8, 16, 16, 1024, 1024, 64, 0},
        };
        printf("\n== speed (median of 20 after 3 warm-up launches; TFLOP/s, causal halved) ==\n");
        printf("| %-40s | %-22s | %-22s | %-6s |\n", "shape", g_label, "mma (mha.cu)", "ratio");
        int n = (int)sp.size() * 2;
        fails += run_jobs(n, [&](int i) {
            init();
            speed_one(sp[i / 2], (i & 1) == 0, -1);
            return true;
        });
    }
    printf("\n%s\n", fails ? "SOME FAILURES" : "ALL OK");
    return fails ? 1 : 0;
}
