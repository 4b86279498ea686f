// Standalone correctness test + benchmark of the fp32 GEMM kernels of ../gemm.cu (not part of the
// Rust harness): gemm_simt_fp32 (the old kernel, KERNELGATE_GEMM_FP32=simple) and
// gemm_sgemm_<BM>x<BN>_<vec4|scalar> (the register-tiled kernel, the default), next to cuBLAS's
// fp32 SGEMM (no TF32). Build and run through run_sgemm_bench.sh, or by hand:
//   nvcc -O3 -std=c++17 -arch=native -I kernels -o /tmp/sgb kernels/dev/sgemm_bench.cu -lcublas
//   NVIDIA_TF32_OVERRIDE=0 /tmp/sgb            (--quick: fewer shapes; --no-perf: checks only)
//
// Correctness: every kernel (old, new with the launcher's automatic choice, and every new
// configuration forced, aligned and misaligned) on awkward and square shapes against a CPU
// float64 reference over sampled rows (all rows for small shapes; every column), with the Rust
// gate's fp32 tolerance (src/family/gemm.rs + src/verify.rs: rel_l2 <= 1e-5·g, |d| <= 2e-5·g·rms +
// 1e-5·|want|, g = max(1, sqrt(K/256))) and the rigorous fp32 summation bound
// |d| <= K·2^-24·Σ|a·b| (any summation order of K fp32 FMAs satisfies it; TF32 does not). C is
// pre-filled with NaN and surrounded by guard words, so unwritten and out-of-range writes fail.
// cuBLAS is checked the same way, which shows it ran without TF32.
//
// Speed: median of 11 timed batches (each >= ~2 ms of launches, after warm-up), same process,
// same buffers, for cuBLAS (cublasSgemm, CUBLAS_DEFAULT_MATH; and cublasGemmEx with
// CUBLAS_COMPUTE_32F_PEDANTIC), the old kernel, the new kernel as the launcher picks it, and each
// new configuration forced.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../gemm.cu"

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__,     \
                    __LINE__, #x);                                                                \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)
#define CKB(x)                                                                                    \
    do {                                                                                          \
        cublasStatus_t s_ = (x);                                                                  \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            fprintf(stderr, "cuBLAS error %d at %s:%d: %s\n", (int)s_, __FILE__, __LINE__, #x);  \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

typedef void (*KernelFn)(const float*, const float*, float*, int, int, int);

// Experiments, not shipped: the 128x128 tile with other k-tile depths and stage counts (the
// shipped 128x128 entry points are BK = 16, 2 stages since session 20; BK = 8 with 3 stages before).
template <int BK, int ST, bool VEC>
__global__ void __launch_bounds__(256, 2) tune_128x128(const float* A, const float* B, float* C, int M, int N, int K) {
    sgemm_tiled<128, 128, BK, VEC, ST>(A, B, C, M, N, K);
}
struct Tune {
    KernelFn vec4, scalar;
    const char* name;
};
static const Tune TUNES[] = {
    {tune_128x128<8, 3, true>, tune_128x128<8, 3, false>, "128x128 bk8 3-stage"},
    {tune_128x128<8, 2, true>, tune_128x128<8, 2, false>, "128x128 bk8 2-stage"},
    {tune_128x128<8, 4, true>, tune_128x128<8, 4, false>, "128x128 bk8 4-stage"},
    {tune_128x128<16, 2, true>, tune_128x128<16, 2, false>, "128x128 bk16 2-stage"},
};
static void launch_tune(int i, bool vec, const float* A, const float* B, float* C, int M, int N, int K) {
    long tiles = (long)((M + 127) / 128) * ((N + 127) / 128);
    (vec ? TUNES[i].vec4 : TUNES[i].scalar)<<<dim3((unsigned)tiles), dim3(256)>>>(A, B, C, M, N, K);
}

struct Config {
    int bm, bn;
    KernelFn vec4, scalar;
    const char* name;
};
static const Config CONFIGS[3] = {
    {128, 128, gemm_sgemm_128x128_vec4, gemm_sgemm_128x128_scalar, "128x128"},
    {128, 64, gemm_sgemm_128x64_vec4, gemm_sgemm_128x64_scalar, "128x64"},
    {64, 64, gemm_sgemm_64x64_vec4, gemm_sgemm_64x64_scalar, "64x64"},
};

// Mirror of pick_tile() in src/backend/cuda/gemm.rs (keep the two in step): the largest
// configuration whose grid gives every SM about two CTAs (1.9 x SMs), else the smallest
// (measured: the table in pick_tile's doc comment).
static int pick_tile(long m, long n, int sms) {
    for (int c = 0; c < 3; c++) {
        long bm = CONFIGS[c].bm, bn = CONFIGS[c].bn;
        long tiles = ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
        if ((double)tiles >= 1.9 * sms) return c;
    }
    return 2;
}

static bool aligned16(const void* p) { return ((uintptr_t)p & 15) == 0; }

// The launcher's rule: 16-byte copies of B and float4 stores of C need N % 4 == 0 and B, C
// 16-byte aligned (A is always copied 4 bytes at a time).
static bool can_vec(const float* B, const float* C, int N) { return N % 4 == 0 && aligned16(B) && aligned16(C); }

static void launch_new(int cfg, bool vec, const float* A, const float* B, float* C, int M, int N, int K,
                       cudaStream_t st) {
    const Config& c = CONFIGS[cfg];
    long tiles = (long)((M + c.bm - 1) / c.bm) * ((N + c.bn - 1) / c.bn);
    int threads = (c.bm / 64) * (c.bn / 32) * 32;
    KernelFn f = vec ? c.vec4 : c.scalar;
    f<<<dim3((unsigned)tiles), dim3(threads), 0, st>>>(A, B, C, M, N, K);
}
static void launch_old(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t st) {
    gemm_simt_fp32<<<dim3((N + 63) / 64, (M + 63) / 64), dim3(256), 0, st>>>(A, B, C, M, N, K);
}
// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, no transposes.
static void launch_cublas(cublasHandle_t h, const float* A, const float* B, float* C, int M, int N, int K) {
    const float one = 1.f, zero = 0.f;
    CKB(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N));
}
static void launch_cublas_pedantic(cublasHandle_t h, const float* A, const float* B, float* C, int M, int N, int K) {
    const float one = 1.f, zero = 0.f;
    CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_32F, N, A, CUDA_R_32F, K, &zero, C,
                     CUDA_R_32F, N, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;
static float next_uniform() {  // [-1, 1), 24 random bits: exact in fp32
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(uint32_t)(g_rng >> 40) / 8388608.0 - 1.0);
}

struct Problem {
    int M, N, K;
    std::vector<float> A, B;
    std::vector<int> rows;              // rows of C checked
    std::vector<double> ref, absref;    // [rows.size() * N]: Σ a·b and Σ |a·b|
};

static void make_problem(Problem& p, int M, int N, int K, bool check, uint64_t seed) {
    p.M = M;
    p.N = N;
    p.K = K;
    g_rng = seed;
    p.A.resize((size_t)M * K);
    p.B.resize((size_t)K * N);
    for (auto& x : p.A) x = next_uniform();
    for (auto& x : p.B) x = next_uniform();
    p.rows.clear();
    p.ref.clear();
    p.absref.clear();
    if (!check) return;
    if ((double)M * N * K <= (double)(1 << 26)) {
        for (int r = 0; r < M; r++) p.rows.push_back(r);
    } else {
        // First and last rows, both sides of every tile boundary near the start and the end,
        // and some spread rows.
        int cand[] = {0, 1, 31, 32, 63, 64, 127, 128, M / 2, M - 129, M - 128, M - 65, M - 64, M - 2, M - 1};
        for (int r : cand)
            if (r >= 0 && r < M) p.rows.push_back(r);
        for (int i = 1; i <= 5; i++) p.rows.push_back((int)((long)M * i / 7));
        std::sort(p.rows.begin(), p.rows.end());
        p.rows.erase(std::unique(p.rows.begin(), p.rows.end()), p.rows.end());
    }
    p.ref.assign(p.rows.size() * (size_t)N, 0.0);
    p.absref.assign(p.rows.size() * (size_t)N, 0.0);
    for (size_t ri = 0; ri < p.rows.size(); ri++) {
        const float* a = &p.A[(size_t)p.rows[ri] * K];
        double* out = &p.ref[ri * N];
        double* aout = &p.absref[ri * N];
        for (int k = 0; k < K; k++) {
            const double av = a[k];
            const float* b = &p.B[(size_t)k * N];
            for (int j = 0; j < N; j++) {
                const double prod = av * (double)b[j];
                out[j] += prod;
                aout[j] += std::fabs(prod);
            }
        }
    }
}

// Device buffers with guard words around C; A, B and C may be shifted by one float to test the
// misaligned (scalar) path.
struct Dev {
    float *A = nullptr, *B = nullptr, *Cbase = nullptr;
    size_t cap_a = 0, cap_b = 0, cap_c = 0;
};
static const int GUARD = 64;  // floats on each side of C
static const uint32_t GUARD_BITS = 0x7fc0dead;  // a NaN payload the kernels never write

static void ensure(Dev& d, size_t a, size_t b, size_t c) {
    if (a + 4 > d.cap_a) {
        if (d.A) CK(cudaFree(d.A));
        CK(cudaMalloc(&d.A, (a + 4) * 4));
        d.cap_a = a + 4;
    }
    if (b + 4 > d.cap_b) {
        if (d.B) CK(cudaFree(d.B));
        CK(cudaMalloc(&d.B, (b + 4) * 4));
        d.cap_b = b + 4;
    }
    if (c + 2 * GUARD + 4 > d.cap_c) {
        if (d.Cbase) CK(cudaFree(d.Cbase));
        CK(cudaMalloc(&d.Cbase, (c + 2 * GUARD + 4) * 4));
        d.cap_c = c + 2 * GUARD + 4;
    }
}

struct CheckResult {
    bool pass;
    double rel_l2, worst_excess, max_bound_ratio;
    long nan_count, guard_hits;
};

// got: the whole C with guards (GUARD floats before, after).
static CheckResult check(const Problem& p, const std::vector<uint32_t>& got_bits) {
    CheckResult r{true, 0, 0, 0, 0, 0};
    const int M = p.M, N = p.N, K = p.K;
    const size_t total = (size_t)M * N;
    for (int i = 0; i < GUARD; i++) {
        if (got_bits[i] != GUARD_BITS) r.guard_hits++;
        if (got_bits[GUARD + total + i] != GUARD_BITS) r.guard_hits++;
    }
    const float* got = reinterpret_cast<const float*>(got_bits.data()) + GUARD;
    for (size_t i = 0; i < total; i++)
        if (!std::isfinite(got[i])) r.nan_count++;
    const double g = std::max(1.0, std::sqrt(K / 256.0));
    const double tol_l2 = 1e-5 * g, atol = 2e-5 * g, rtol = 1e-5;
    const double gamma = (double)K * std::ldexp(1.0, -24) * 1.01;
    double ref2 = 0, diff2 = 0;
    for (double w : p.ref) ref2 += w * w;
    const double n = std::max<size_t>(p.ref.size(), 1);
    const double scale = std::max(std::sqrt(ref2 / n), 1e-300);
    for (size_t ri = 0; ri < p.rows.size(); ri++) {
        for (int j = 0; j < N; j++) {
            const double w = p.ref[ri * N + j];
            const double gv = got[(size_t)p.rows[ri] * N + j];
            double d = std::fabs(gv - w);
            if (!std::isfinite(d)) d = INFINITY;
            diff2 += d * d;
            r.worst_excess = std::max(r.worst_excess, d - (atol * scale + rtol * std::fabs(w)));
            const double s = p.absref[ri * N + j];
            const double ratio = s > 0 ? d / s : (d > 0 ? INFINITY : 0.0);
            r.max_bound_ratio = std::max(r.max_bound_ratio, ratio);
        }
    }
    r.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 == 0 ? 0 : INFINITY);
    r.pass = r.nan_count == 0 && r.guard_hits == 0 && r.rel_l2 <= tol_l2 && r.worst_excess <= 0 &&
             r.max_bound_ratio <= gamma;
    return r;
}

static int g_fail = 0, g_checks = 0;

// Runs `launch` into a NaN-filled, guarded C (optionally shifted by `shift` floats) and checks it.
template <typename F>
static void run_check(const char* shape, const char* what, const Problem& p, Dev& d, int shift, F launch) {
    const size_t total = (size_t)p.M * p.N;
    float* C = d.Cbase + GUARD + shift;
    std::vector<uint32_t> fill(total + 2 * GUARD);
    for (size_t i = 0; i < fill.size(); i++) fill[i] = i < (size_t)GUARD || i >= total + GUARD ? GUARD_BITS : 0x7fffffffu;
    CK(cudaMemcpy(C - GUARD, fill.data(), fill.size() * 4, cudaMemcpyHostToDevice));
    launch(d.A + shift, d.B + shift, C);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<uint32_t> got(fill.size());
    CK(cudaMemcpy(got.data(), C - GUARD, got.size() * 4, cudaMemcpyDeviceToHost));
    CheckResult r = check(p, got);
    g_checks++;
    if (!r.pass) g_fail++;
    const double g = std::max(1.0, std::sqrt(p.K / 256.0));
    printf("  %-4s %-18s %-34s rel_l2 %.2e (tol %.1e)  max|d|/Σ|ab| %.2e (K·2^-24 %.1e)  elem-excess %s  nan %ld guard %ld\n",
           r.pass ? "PASS" : "FAIL", shape, what, r.rel_l2, 1e-5 * g, r.max_bound_ratio,
           p.K * std::ldexp(1.0, -24), r.worst_excess <= 0 ? "none" : "YES", r.nan_count, r.guard_hits);
    fflush(stdout);
}

static void upload(const Problem& p, Dev& d, int shift) {
    ensure(d, p.A.size(), p.B.size(), (size_t)p.M * p.N);
    CK(cudaMemcpy(d.A + shift, p.A.data(), p.A.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d.B + shift, p.B.data(), p.B.size() * 4, cudaMemcpyHostToDevice));
}

// Median µs per launch over 11 batches, each long enough (>= ~2 ms) to swamp event overhead.
template <typename F>
static double time_us(F launch) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms1 = 0;
    CK(cudaEventElapsedTime(&ms1, e0, e1));
    int batch = (int)std::min(2000.0, std::max(1.0, std::ceil(2.0 / std::max(ms1, 1e-4f))));
    std::vector<double> t;
    for (int rep = 0; rep < 11; rep++) {
        CK(cudaEventRecord(e0));
        for (int i = 0; i < batch; i++) launch();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3 / batch);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char** argv) {
    bool quick = false, perf = true, correct = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--no-perf")) perf = false;
        else if (!strcmp(argv[i], "--no-check")) correct = false;
        else {
            fprintf(stderr, "usage: %s [--quick] [--no-perf] [--no-check]\n", argv[0]);
            return 2;
        }
    }
    int dev = 0;
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    const int sms = prop.multiProcessorCount;
    int cublas_ver = 0;
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    CKB(cublasGetVersion(h, &cublas_ver));
    CKB(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // no TF32 (that needs CUBLAS_TF32_TENSOR_OP_MATH)
    cublasHandle_t hp;
    CKB(cublasCreate(&hp));
    CKB(cublasSetMathMode(hp, CUBLAS_PEDANTIC_MATH));
    const char* tf32 = getenv("NVIDIA_TF32_OVERRIDE");
    int clock_khz = 0;  // cudaDeviceProp::clockRate is gone in CUDA 13; the attribute is not
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
    printf("device: %s (sm_%d%d, %d SMs, %.0f MHz), cuBLAS %d, NVIDIA_TF32_OVERRIDE=%s\n", prop.name, prop.major,
           prop.minor, sms, clock_khz / 1e3, cublas_ver, tf32 ? tf32 : "(unset)");
    for (const Config& c : CONFIGS) {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, c.vec4));
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, c.vec4, (c.bm / 64) * (c.bn / 32) * 32, 0));
        printf("  gemm_sgemm_%s_vec4: %d regs, %zu B static smem, %zu B local, %d CTAs/SM\n", c.name, fa.numRegs,
               fa.sharedSizeBytes, fa.localSizeBytes, occ);
    }
    Dev d;

    if (correct) {
        printf("\n== correctness (C pre-filled with NaN, guard words around it; shift 1 = A, B, C one float off 16-byte alignment)\n");
        struct S { int m, n, k; };
        std::vector<S> shapes = {{1, 1, 1},     {1, 1, 7},      {7, 1, 1},       {1, 9, 1},       {2, 3, 4},
                                 {17, 17, 17},  {33, 65, 9},    {64, 64, 64},    {127, 129, 8},   {128, 128, 128},
                                 {129, 257, 513}, {3, 5000, 77}, {200, 300, 17},  {65, 4100, 33},  {300, 68, 1000},
                                 {1000, 1000, 100}, {2000, 3000, 1000}, {1024, 1024, 1024}, {4096, 4096, 4096}};
        if (quick) shapes.resize(shapes.size() - 1);
        uint64_t seed = 1;
        for (const S& s : shapes) {
            Problem p;
            make_problem(p, s.m, s.n, s.k, true, seed++);
            char shape[64];
            snprintf(shape, sizeof shape, "%dx%dx%d", s.m, s.n, s.k);
            for (int shift = 0; shift <= 1; shift++) {
                upload(p, d, shift);
                const int M = s.m, N = s.n, K = s.k;
                if (shift == 0) {
                    run_check(shape, "old gemm_simt_fp32", p, d, 0,
                              [&](const float* A, const float* B, float* C) { launch_old(A, B, C, M, N, K, 0); });
                    run_check(shape, "cuBLAS cublasSgemm (default math)", p, d, 0,
                              [&](const float* A, const float* B, float* C) { launch_cublas(h, A, B, C, M, N, K); });
                }
                for (int cfg = 0; cfg < 3; cfg++) {
                    for (int vec = 1; vec >= 0; vec--) {
                        const float* B = d.B + shift;
                        const float* C = d.Cbase + GUARD + shift;
                        if (vec && !can_vec(B, C, N)) continue;
                        char what[80];
                        snprintf(what, sizeof what, "new gemm_sgemm_%s_%s%s%s", CONFIGS[cfg].name, vec ? "vec4" : "scalar",
                                 shift ? " shift1" : "", cfg == pick_tile(M, N, sms) && vec == (int)can_vec(B, C, N) ? " (auto)" : "");
                        run_check(shape, what, p, d, shift, [&](const float* A, const float* Bp, float* Cp) {
                            launch_new(cfg, vec, A, Bp, Cp, M, N, K, 0);
                        });
                    }
                }
            }
        }
        // The experimental variants, on one vec4 and one scalar shape.
        for (S s : std::vector<S>{{300, 68, 1000}, {129, 257, 513}}) {
            Problem p;
            make_problem(p, s.m, s.n, s.k, true, seed++);
            upload(p, d, 0);
            char shape[64];
            snprintf(shape, sizeof shape, "%dx%dx%d", s.m, s.n, s.k);
            const bool vec = can_vec(d.B, d.Cbase + GUARD, s.n);
            for (int i = 0; i < 3; i++) {
                char what[80];
                snprintf(what, sizeof what, "tune %s %s", TUNES[i].name, vec ? "vec4" : "scalar");
                run_check(shape, what, p, d, 0, [&](const float* A, const float* B, float* C) {
                    launch_tune(i, vec, A, B, C, s.m, s.n, s.k);
                });
            }
        }
        printf("correctness: %d checks, %d failed\n", g_checks, g_fail);
    }

    if (perf) {
        struct S { int m, n, k; };
        std::vector<S> shapes = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
                                 {8192, 8192, 8192}, {2000, 3000, 1000}, {129, 257, 513}};
        if (quick) shapes = {{1024, 1024, 1024}, {4096, 4096, 4096}, {129, 257, 513}};
        printf("\n== speed (median µs of 11 timed batches; TFLOP/s = 2MNK/t; ratio = cuBLAS time / our time, higher is better)\n");
        printf("%-16s | %9s %6s | %9s %6s | %9s %6s %6s | %9s %6s %6s | %-26s | %s\n", "shape", "cuBLAS", "TF/s",
               "pedantic", "TF/s", "old", "TF/s", "ratio", "new", "TF/s", "ratio", "new config (auto)",
               "forced configs µs: 128x128 / 128x64 / 64x64");
        for (const S& s : shapes) {
            Problem p;
            make_problem(p, s.m, s.n, s.k, false, 1000 + s.m);
            upload(p, d, 0);
            const int M = s.m, N = s.n, K = s.k;
            const float *A = d.A, *B = d.B;
            float* C = d.Cbase + GUARD;
            const double flop = 2.0 * M * N * K;
            const int cfg = pick_tile(M, N, sms);
            const bool vec = can_vec(B, C, N);
            double t_cb = time_us([&] { launch_cublas(h, A, B, C, M, N, K); });
            double t_cp = time_us([&] { launch_cublas_pedantic(hp, A, B, C, M, N, K); });
            double t_old = time_us([&] { launch_old(A, B, C, M, N, K, 0); });
            double t_new = time_us([&] { launch_new(cfg, vec, A, B, C, M, N, K, 0); });
            double forced[3];
            for (int c = 0; c < 3; c++)
                forced[c] = c == cfg ? t_new : time_us([&] { launch_new(c, vec, A, B, C, M, N, K, 0); });
            char shape[64], cfgname[64];
            snprintf(shape, sizeof shape, "%dx%dx%d", M, N, K);
            snprintf(cfgname, sizeof cfgname, "gemm_sgemm_%s_%s", CONFIGS[cfg].name, vec ? "vec4" : "scalar");
            printf("%-16s | %9.1f %6.2f | %9.1f %6.2f | %9.1f %6.2f %5.2fx | %9.1f %6.2f %5.2fx | %-26s | %.1f / %.1f / %.1f\n",
                   shape, t_cb, flop / t_cb * 1e-6, t_cp, flop / t_cp * 1e-6, t_old, flop / t_old * 1e-6, t_cb / t_old,
                   t_new, flop / t_new * 1e-6, t_cb / t_new, cfgname, forced[0], forced[1], forced[2]);
            fflush(stdout);
        }
    }
    if (perf) {
        printf("\n== experiments (not shipped): 128x128 tile, other k depths / stage counts; µs and ratio to cuBLAS\n");
        std::vector<int> sizes = quick ? std::vector<int>{4096} : std::vector<int>{2048, 4096};
        for (int sz : sizes) {
            Problem p;
            make_problem(p, sz, sz, sz, false, 1000 + sz);
            upload(p, d, 0);
            const float *A = d.A, *B = d.B;
            float* C = d.Cbase + GUARD;
            double t_cb = time_us([&] { launch_cublas(h, A, B, C, sz, sz, sz); });
            double t_ship = time_us([&] { launch_new(0, true, A, B, C, sz, sz, sz, 0); });
            printf("%dx%dx%d: cuBLAS %.1f | shipped bk16 2-stage %.1f (%.2fx)", sz, sz, sz, t_cb, t_ship, t_cb / t_ship);
            for (int i = 0; i < 3; i++) {
                double t = time_us([&] { launch_tune(i, true, A, B, C, sz, sz, sz); });
                printf(" | %s %.1f (%.2fx)", TUNES[i].name, t, t_cb / t);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    CKB(cublasDestroy(h));
    CKB(cublasDestroy(hp));
    if (correct) printf("\nsgemm_bench: %s (%d/%d checks passed)\n", g_fail ? "FAILURES" : "ALL CHECKS PASSED", g_checks - g_fail, g_checks);
    return g_fail ? 1 : 0;
}
