// Standalone bench (not part of the Rust harness) of the skinny-N GEMM, C[M,N] = A[M,K]·B[K,N]
// row-major with N <= 16 <= M, written in session 42 to find why 8192x8x8192 streams A at
// ~2.2 TB/s (0.87 of cuBLAS) on H100s. What it times, each launch alone after a 256 MiB read
// (L2 cold, as the harness's `read` flush), median of SNB_REPS cudaEvent pairs:
//   * read: a grid-stride 16-byte read of A alone (the bandwidth ceiling of this access);
//   * shipped: gemm_skinny_ntc_<dt>_<NT>_r2h2 + gemm_skinny_reduce(_w)_<dt> of ../gemm_skinny.cu
//     in the configuration shipped before session 42 (32 rows, 64-column steps, K split to about
//     4 CTAs per SM; the Rust rule since then is choose_ntc/ntc_splits, and the v.* copies cover
//     its configurations), and for fp32 gemm_skinny_n_fp32_8;
//   * v.<cps>.<hint>.<pipe>.<fused>: a copy of the tensor-core kernel with
//       - cps: the CTAs per SM the K split aims for,
//       - hint: A's loads as plain __ldg (0), with .L2::256B (1), or also .L1::no_allocate (2),
//       - pipe: the next step's A loads issued before this step's MMAs (1) or not (0),
//       - fused: the K-split partials added by the CTA that finishes last (counter per row group,
//         slices summed in split order, so bitwise deterministic) instead of a second launch;
//   * cublas: cublasGemmEx, default algorithm.
// Correctness: C poisoned (0xff) before the checked launch, compared with a float64 CPU reference
// (worst |got - want| over the reference's RMS). Build and run: bash
// kernels/dev/run_skinny_n_bench.sh (nvcc, cuBLAS; no Rust).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../gemm_skinny.cu"

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__,     \
                    __LINE__, #x);                                                                \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

namespace snb {

template <int HINT>
__device__ __forceinline__ uint4 ld16(const void* p) {
    uint4 v;
    if constexpr (HINT == 0) {
        v = __ldg(reinterpret_cast<const uint4*>(p));
    } else if constexpr (HINT == 1) {
        asm("ld.global.nc.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    } else {
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p));
    }
    return v;
}

template <int HINT>
__device__ __forceinline__ uint4 load8(const unsigned short* __restrict__ A, int row, int M, int K,
                                       int k, int kend, bool vec) {
    if (row < M && vec && k + 8 <= kend) return ld16<HINT>(A + (size_t)row * K + k);
    return sk_load8(A, row, M, K, k, kend, false);
}

// The shipped skinny_ntc with the options above. Same lane mapping, B staging and MMA order.
template <typename T, int NT, int HINT, bool PIPE, bool FUSED, int R = 2, int H = 2>
__global__ void __launch_bounds__(SKT_WARPS * 32)
    ntc(const T* __restrict__ A_, const T* __restrict__ B_, T* __restrict__ C,
        float* __restrict__ part, unsigned* __restrict__ done, int M, int N, int K, int kchunk) {
    constexpr int NJ = NT / 8;
    __shared__ float red[SKT_WARPS][16 * R][NT];
    __shared__ __align__(16) unsigned short bs[SKT_WARPS][2 * H][16][NT];
    __shared__ unsigned last;
    const unsigned short* A = reinterpret_cast<const unsigned short*>(A_);
    const unsigned short* B = reinterpret_cast<const unsigned short*>(B_);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int row0 = blockIdx.x * 16 * R;
    const int kbeg = blockIdx.y * kchunk;
    const int kend = min(K, kbeg + kchunk);
    const bool vec = (K & 7) == 0;
    const bool staged = N == NT;
    float acc[R][NJ][4];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) acc[r][j][q] = 0.0f;
    uint4 a[R][2][H], an[R][2][H];
    auto load_a = [&](int k0, uint4 (&dst)[R][2][H]) {
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int rr = 0; rr < 2; rr++)
#pragma unroll
                for (int h = 0; h < H; h++)
                    dst[r][rr][h] = load8<HINT>(A, row0 + 16 * r + 8 * rr + g, M, K,
                                                k0 + 32 * h + 8 * t, kend, vec);
    };
    constexpr int STEP = 32 * H;
    const int stride = SKT_WARPS * STEP;
    int k0 = kbeg + warp * STEP;
    if (PIPE && k0 < kend) load_a(k0, a);
    for (; k0 < kend; k0 += stride) {
        if (PIPE) {
            if (k0 + stride < kend) load_a(k0 + stride, an);
        } else {
            load_a(k0, a);
        }
        unsigned b[NJ][H][4];
        if (staged) {
            __syncwarp();
#pragma unroll
            for (int q = 0; q < NT * H / 8; q++) {
                const int idx = lane + 32 * q, pr = idx / (NT / 8), c = idx - pr * (NT / 8);
                const int h = pr >> 5, tt = (pr >> 3) & 3, w = pr & 7;
                const int ss = w >> 2, hi = (w >> 1) & 1, i = w & 1;
                const int L = 2 * tt + i + 8 * hi;
                uint4 v = make_uint4(0u, 0u, 0u, 0u);
                if (k0 + pr < kend) v = __ldg(reinterpret_cast<const uint4*>(B + (size_t)(k0 + pr) * N) + c);
                *reinterpret_cast<uint4*>(&bs[warp][2 * h + ss][L][8 * c]) = v;
            }
            __syncwarp();
#pragma unroll
            for (int h = 0; h < H; h++)
#pragma unroll
                for (int ss = 0; ss < 2; ss++) {
                    const int mq = lane >> 3, rr = lane & 7;
                    const unsigned short* rowp =
                        &bs[warp][2 * h + ss][rr + 8 * (mq & 1)][8 * ((mq >> 1) % NJ)];
                    const unsigned addr = (unsigned)__cvta_generic_to_shared(rowp);
                    if (NJ == 2) {
                        asm volatile(
                            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                            : "=r"(b[0][h][2 * ss]), "=r"(b[0][h][2 * ss + 1]),
                              "=r"(b[NJ - 1][h][2 * ss]), "=r"(b[NJ - 1][h][2 * ss + 1])
                            : "r"(addr));
                    } else {
                        asm volatile(
                            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                            : "=r"(b[0][h][2 * ss]), "=r"(b[0][h][2 * ss + 1])
                            : "r"(addr));
                    }
                }
        } else {
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const int n = 8 * j + g;
#pragma unroll
                for (int h = 0; h < H; h++)
#pragma unroll
                    for (int p = 0; p < 4; p++) {
                        const int k = k0 + 32 * h + 8 * t + 2 * p;
                        const unsigned lo = (n < N && k < kend) ? __ldg(B + (size_t)k * N + n) : 0u;
                        const unsigned hi =
                            (n < N && k + 1 < kend) ? __ldg(B + (size_t)(k + 1) * N + n) : 0u;
                        b[j][h][p] = lo | (hi << 16);
                    }
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int h = 0; h < H; h++)
#pragma unroll
                for (int s = 0; s < 2; s++)
#pragma unroll
                    for (int j = 0; j < NJ; j++)
                        SkMma<T>::run(acc[r][j], sk_word(a[r][0][h], 2 * s),
                                      sk_word(a[r][1][h], 2 * s), sk_word(a[r][0][h], 2 * s + 1),
                                      sk_word(a[r][1][h], 2 * s + 1), b[j][h][2 * s],
                                      b[j][h][2 * s + 1]);
        if (PIPE) {
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
                for (int rr = 0; rr < 2; rr++)
#pragma unroll
                    for (int h = 0; h < H; h++) a[r][rr][h] = an[r][rr][h];
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            red[warp][16 * r + g][8 * j + 2 * t] = acc[r][j][0];
            red[warp][16 * r + g][8 * j + 2 * t + 1] = acc[r][j][1];
            red[warp][16 * r + g + 8][8 * j + 2 * t] = acc[r][j][2];
            red[warp][16 * r + g + 8][8 * j + 2 * t + 1] = acc[r][j][3];
        }
    __syncthreads();
    const int splits = gridDim.y;
    for (int i = threadIdx.x; i < 16 * R * NT; i += SKT_WARPS * 32) {
        const int rl = i / NT, n = i - rl * NT, row = row0 + rl;
        if (row >= M || n >= N) continue;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < SKT_WARPS; w++) v += red[w][rl][n];
        const size_t o = (size_t)row * N + n;
        if (splits > 1)
            part[(size_t)blockIdx.y * M * N + o] = v;
        else
            C[o] = SkT<T>::t(v);
    }
    if (!FUSED || splits == 1) return;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&done[blockIdx.x], 1u) == (unsigned)splits - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int i = threadIdx.x; i < 16 * R * NT; i += SKT_WARPS * 32) {
        const int rl = i / NT, n = i - rl * NT, row = row0 + rl;
        if (row >= M || n >= N) continue;
        const size_t o = (size_t)row * N + n;
        float v = 0.0f;
        for (int s = 0; s < splits; s++) v += __ldcg(part + (size_t)s * M * N + o);
        C[o] = SkT<T>::t(v);
    }
    if (threadIdx.x == 0) done[blockIdx.x] = 0;
}

// The shipped skinny_n (FFMA) with A's loads hinted as in ntc<HINT> and the fused reduction.
template <typename T, int NT, int R, int HINT, bool FUSED>
__global__ void __launch_bounds__(SKN_WARPS * 32)
    skn(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
        float* __restrict__ part, unsigned* __restrict__ done, int M, int N, int K, int kchunk) {
    constexpr int VEC = 16 / sizeof(T);
    __shared__ unsigned last;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int row0 = (blockIdx.x * SKN_WARPS + warp) * R;
    const int kbeg = blockIdx.y * kchunk;
    const int kend = min(K, kbeg + kchunk);
    const int splits = gridDim.y;
    float acc[R][NT];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int n = 0; n < NT; n++) acc[r][n] = 0.0f;
    constexpr int STEP = 32 * VEC;
    auto loadA = [&](int k, uint4 (&raw)[R]) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = row0 + r;
            raw[r] = (row < M && k + VEC <= K) ? ld16<HINT>(A + (size_t)row * K + k) : make_uint4(0, 0, 0, 0);
        }
    };
    int k = kbeg + lane * VEC;
    uint4 cur[R], nxt[R];
    if (row0 < M) {
        if (k < kend) loadA(k, cur);
        for (; k < kend; k += STEP) {
            if (k + STEP < kend) loadA(k + STEP, nxt);
            float a[R][VEC];
#pragma unroll
            for (int r = 0; r < R; r++) SkT<T>::unpack(cur[r], a[r]);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                float b[NT];
                const T* brow = B + (size_t)(k + j) * N;
#pragma unroll
                for (int v = 0; v < NT / VEC; v++)
                    SkT<T>::unpack(__ldg(reinterpret_cast<const uint4*>(brow + v * VEC)), b + v * VEC);
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int n = 0; n < NT; n++) acc[r][n] = fmaf(a[r][j], b[n], acc[r][n]);
            }
#pragma unroll
            for (int r = 0; r < R; r++) cur[r] = nxt[r];
        }
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int n = 0; n < NT; n++) {
                float v = acc[r][n];
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
                acc[r][n] = v;
            }
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = row0 + r;
            if (row >= M) break;
#pragma unroll
            for (int n = 0; n < NT; n++)
                if (lane == n && n < N) {
                    const size_t i = (size_t)row * N + n;
                    if (splits > 1)
                        part[(size_t)blockIdx.y * M * N + i] = acc[r][n];
                    else
                        C[i] = SkT<T>::t(acc[r][n]);
                }
        }
    }
    if (!FUSED || splits == 1) return;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(&done[blockIdx.x], 1u) == (unsigned)splits - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const int rows = SKN_WARPS * R, rbase = blockIdx.x * rows;
    for (int i = threadIdx.x; i < rows * N; i += SKN_WARPS * 32) {
        const int row = rbase + i / N, n = i % N;
        if (row >= M) continue;
        const size_t o = (size_t)row * N + n;
        float v = 0.0f;
        for (int s = 0; s < splits; s++) v += __ldcg(part + (size_t)s * M * N + o);
        C[o] = SkT<T>::t(v);
    }
    if (threadIdx.x == 0) done[blockIdx.x] = 0;
}

__global__ void read_all(const uint4* __restrict__ p, size_t n, unsigned* sink) {
    unsigned x = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = __ldg(p + i + u * stride);
#pragma unroll
        for (int u = 0; u < 4; u++) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n; i += stride) {
        uint4 v = __ldg(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x12345678u) *sink = x;
}

__global__ void flush_read(const uint4* p, size_t n, unsigned* sink) {
    unsigned x = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcg(p + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x12345678u) *sink = x;
}

}  // namespace snb

static float to_f(const __nv_bfloat16& x) { return __bfloat162float(x); }
static float to_f(const __half& x) { return __half2float(x); }
static float to_f(const float& x) { return x; }
template <typename T> static T from_f(float x);
template <> __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __half from_f<__half>(float x) { return __float2half(x); }
template <> float from_f<float>(float x) { return x; }

struct Ctx {
    uint4* flush;
    size_t flush_n;
    unsigned* sink;
    unsigned* done;
    float* part;
    cudaEvent_t e0, e1;
    int sms, reps;
};

static float time_it(Ctx& c, const std::function<void()>& launch) {
    std::vector<float> t;
    for (int i = 0; i < c.reps + 2; i++) {
        snb::flush_read<<<c.sms * 4, 512>>>(c.flush, c.flush_n, c.sink);
        CK(cudaEventRecord(c.e0));
        launch();
        CK(cudaEventRecord(c.e1));
        CK(cudaEventSynchronize(c.e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, c.e0, c.e1));
        if (i >= 2) t.push_back(ms * 1000.0f);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <typename T>
struct Problem {
    int M, N, K;
    T *A, *B, *C;
    std::vector<double> ref;
    float tol;
};

static int g_fail = 0;

template <typename T>
static std::string check(Problem<T>& p) {
    std::vector<T> h((size_t)p.M * p.N);
    CK(cudaMemcpy(h.data(), p.C, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    double worst = 0, ss = 0;
    for (double r : p.ref) ss += r * r;
    const double rms = std::sqrt(ss / std::max<size_t>(1, p.ref.size())) + 1e-30;
    for (size_t i = 0; i < h.size(); i++) {
        const double g = to_f(h[i]);
        if (!std::isfinite(g)) return "FAIL(non-finite at " + std::to_string(i) + ")";
        worst = std::max(worst, std::fabs(g - p.ref[i]) / rms);
    }
    char b[64];
    snprintf(b, sizeof b, "%s(%.1e)", worst <= p.tol ? "ok" : "FAIL", worst);
    if (worst > p.tol) g_fail++;
    return b;
}

// Checked once (poisoned C), then timed; prints one line.
template <typename T>
static float measure(Ctx& c, Problem<T>& p, const std::string& tag, const std::function<void()>& launch,
                     double bytes, bool checked = true) {
    CK(cudaMemset(p.C, 0xff, (size_t)p.M * p.N * sizeof(T)));
    launch();
    CK(cudaDeviceSynchronize());
    const std::string ok = checked ? check(p) : std::string("-");
    const float us = time_it(c, launch);
    printf("   %-22s %8.2f us %6.2f TB/s %s\n", tag.c_str(), us, bytes / us / 1e6, ok.c_str());
    fflush(stdout);
    return us;
}

// The pre-session-42 Rust plan_ntc with `cps` CTAs per SM (K split to about cps CTAs per SM):
// (row groups, splits, kchunk).
static void plan(int M, int K, int sms, int cps, int& gx, int& splits, int& kchunk, int rows = 32,
                 int step = 64) {
    gx = std::max(1, (M + rows - 1) / rows);
    const int span = SKT_WARPS * step;
    const int want = std::max(1, (cps * sms + gx - 1) / gx);
    const int most = std::max(1, (K + span - 1) / span);
    const int s = std::min(want, most);
    kchunk = ((K + s - 1) / s + span - 1) / span * span;
    splits = (K + kchunk - 1) / kchunk;
}

template <typename T, int NT, int HINT, bool PIPE, bool FUSED, int R = 2, int H = 2>
static void run_v(Ctx& c, Problem<T>& p, int cps, double bytes) {
    int gx, splits, kchunk;
    plan(p.M, p.K, c.sms, cps, gx, splits, kchunk, 16 * R, 32 * H);
    auto f = snb::ntc<T, NT, HINT, PIPE, FUSED, R, H>;
    const bool two = splits > 1 && !FUSED;
    const long long mn = (long long)p.M * p.N;
    auto launch = [&] {
        f<<<dim3(gx, splits), SKT_WARPS * 32>>>(p.A, p.B, p.C, c.part, c.done, p.M, p.N, p.K, kchunk);
        if (two) {
            if constexpr (std::is_same<T, __nv_bfloat16>::value)
                gemm_skinny_reduce_bf16<<<(int)std::min<long long>((mn + 255) / 256, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
            else
                gemm_skinny_reduce_fp16<<<(int)std::min<long long>((mn + 255) / 256, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
        }
    };
    char tag[64];
    snprintf(tag, sizeof tag, "v.%d.%d.%d.%d.r%d.h%d [%dx%d]", cps, HINT, (int)PIPE, (int)FUSED, R, H, gx, splits);
    measure(c, p, tag, launch, bytes);
}

template <typename T>
static void cublas(Ctx& c, cublasHandle_t h, Problem<T>& p, double bytes) {
    const cudaDataType dt = std::is_same<T, float>::value ? CUDA_R_32F
                            : std::is_same<T, __half>::value ? CUDA_R_16F : CUDA_R_16BF;
    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&] {
        cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, p.N, p.M, p.K, &alpha, p.B, dt, p.N, p.A, dt, p.K,
                     &beta, p.C, dt, p.N,
                     std::is_same<T, float>::value ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
    };
    measure(c, p, "cublas", launch, bytes);
}

template <typename T>
static Problem<T> make(int M, int N, int K) {
    Problem<T> p{M, N, K};
    std::vector<T> hA((size_t)M * K), hB((size_t)K * N);
    unsigned s = 777u + M * 7 + N * 13 + K;
    auto rnd = [&] { s = s * 1664525u + 1013904223u; return ((s >> 8) & 0xffff) / 32768.0f - 1.0f; };
    for (auto& x : hA) x = from_f<T>(rnd());
    for (auto& x : hB) x = from_f<T>(rnd());
    p.ref.assign((size_t)M * N, 0.0);
    // float64 reference, rows over the host's threads.
    const int nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> th;
    for (int w = 0; w < nt; w++)
        th.emplace_back([&, w] {
            std::vector<double> bd((size_t)K * N);
            for (size_t i = 0; i < bd.size(); i++) bd[i] = to_f(hB[i]);
            for (int m = w; m < M; m += nt) {
                double* r = &p.ref[(size_t)m * N];
                for (int k = 0; k < K; k++) {
                    const double a = to_f(hA[(size_t)m * K + k]);
                    for (int n = 0; n < N; n++) r[n] += a * bd[(size_t)k * N + n];
                }
            }
        });
    for (auto& x : th) x.join();
    p.tol = sizeof(T) == 4 ? 1e-5f : 1.5e-2f;
    CK(cudaMalloc(&p.A, hA.size() * sizeof(T)));
    CK(cudaMalloc(&p.B, hB.size() * sizeof(T)));
    CK(cudaMalloc(&p.C, (size_t)M * N * sizeof(T)));
    CK(cudaMemcpy(p.A, hA.data(), hA.size() * sizeof(T), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.B, hB.data(), hB.size() * sizeof(T), cudaMemcpyHostToDevice));
    return p;
}

template <typename T>
static void release(Problem<T>& p) {
    CK(cudaFree(p.A));
    CK(cudaFree(p.B));
    CK(cudaFree(p.C));
}

template <typename T, int NT>
static void shape16(Ctx& c, cublasHandle_t h, int M, int N, int K) {
    Problem<T> p = make<T>(M, N, K);
    const double bytes = (double)M * K * sizeof(T);
    printf("%s %dx%dx%d (A %.1f MB)\n", sizeof(T) == 2 && std::is_same<T, __half>::value ? "fp16" : "bf16", M, N, K, bytes / 1e6);
    measure(c, p, "read A", [&] { snb::read_all<<<c.sms * 4, 512>>>(reinterpret_cast<const uint4*>(p.A), bytes / 16, c.sink); }, bytes, false);
    cublas(c, h, p, bytes);
    {
        // The shipped r2h2 entry and reduce in the pre-session-42 plan.
        int gx, splits, kchunk;
        plan(M, K, c.sms, 4, gx, splits, kchunk);
        const long long mn = (long long)M * N;
        auto f = std::is_same<T, __nv_bfloat16>::value
                     ? (NT == 8 ? (void*)gemm_skinny_ntc_bf16_8_r2h2 : (void*)gemm_skinny_ntc_bf16_16_r2h2)
                     : (NT == 8 ? (void*)gemm_skinny_ntc_fp16_8_r2h2 : (void*)gemm_skinny_ntc_fp16_16_r2h2);
        auto launch = [&] {
            float* part = splits > 1 ? c.part : nullptr;
            void* args[] = {&p.A, &p.B, &p.C, &part, (void*)&p.M, (void*)&p.N, (void*)&p.K, &kchunk};
            CK(cudaLaunchKernel(f, dim3(gx, splits), dim3(SKT_WARPS * 32), args, 0, 0));
            if (splits > 1) {
                const bool w = mn <= 8192 && splits >= 32;
                if constexpr (std::is_same<T, __nv_bfloat16>::value) {
                    if (w) gemm_skinny_reduce_w_bf16<<<(int)std::min<long long>((mn + 7) / 8, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
                    else gemm_skinny_reduce_bf16<<<(int)std::min<long long>((mn + 255) / 256, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
                } else {
                    if (w) gemm_skinny_reduce_w_fp16<<<(int)std::min<long long>((mn + 7) / 8, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
                    else gemm_skinny_reduce_fp16<<<(int)std::min<long long>((mn + 255) / 256, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
                }
            }
        };
        char tag[64];
        snprintf(tag, sizeof tag, "shipped [%dx%d]", gx, splits);
        measure(c, p, tag, launch, bytes);
    }
    run_v<T, NT, 0, false, false>(c, p, 4, bytes);  // the shipped kernel's copy (control)
    run_v<T, NT, 1, false, false>(c, p, 4, bytes);
    for (int cps : {1, 2, 4}) {
        run_v<T, NT, 1, false, false>(c, p, cps, bytes);
        run_v<T, NT, 1, false, false, 1, 2>(c, p, cps, bytes);
        run_v<T, NT, 1, false, false, 1, 4>(c, p, cps, bytes);
        run_v<T, NT, 1, false, false, 1, 8>(c, p, cps, bytes);
        run_v<T, NT, 1, false, false, 2, 4>(c, p, cps, bytes);
    }
    release(p);
}

static void shape32(Ctx& c, cublasHandle_t h, int M, int N, int K) {
    Problem<float> p = make<float>(M, N, K);
    const double bytes = (double)M * K * 4;
    printf("fp32 %dx%dx%d (A %.1f MB)\n", M, N, K, bytes / 1e6);
    measure(c, p, "read A", [&] { snb::read_all<<<c.sms * 4, 512>>>(reinterpret_cast<const uint4*>(p.A), bytes / 16, c.sink); }, bytes, false);
    cublas(c, h, p, bytes);
    // Rust's plan_n for fp32, N <= 8: 8 rows per warp, 8 warps, ~2 CTAs per SM.
    for (int cps : {1, 2, 3}) {
        const int gx = std::max(1, (M + 63) / 64), step = 32 * 4;  // 8 warps x 8 rows
        const int want = std::max(1, (cps * c.sms + gx - 1) / gx);
        const int most = std::max(1, (K + 2 * step - 1) / (2 * step));
        const int s = std::min(want, most);
        const int kchunk = ((K + s - 1) / s + step - 1) / step * step;
        const int splits = (K + kchunk - 1) / kchunk;
        const long long mn = (long long)M * N;
        auto launch = [&] {
            gemm_skinny_n_fp32_8<<<dim3(gx, splits), 256>>>(p.A, p.B, p.C, splits > 1 ? c.part : nullptr, M, N, K, kchunk);
            if (splits > 1)
                gemm_skinny_reduce_fp32<<<(int)std::min<long long>((mn + 255) / 256, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
        };
        char tag[64];
        snprintf(tag, sizeof tag, "shipped.%d [%dx%d]", cps, gx, splits);
        measure(c, p, tag, launch, bytes);
        auto launch1 = [&] {
            snb::skn<float, 8, 8, 1, true><<<dim3(gx, splits), 256>>>(p.A, p.B, p.C, c.part, c.done, M, N, K, kchunk);
        };
        snprintf(tag, sizeof tag, "skn.%d.1.fused [%dx%d]", cps, gx, splits);
        measure(c, p, tag, launch1, bytes);
        auto launch2 = [&] {
            snb::skn<float, 8, 8, 2, true><<<dim3(gx, splits), 256>>>(p.A, p.B, p.C, c.part, c.done, M, N, K, kchunk);
        };
        snprintf(tag, sizeof tag, "skn.%d.2.fused [%dx%d]", cps, gx, splits);
        measure(c, p, tag, launch2, bytes);
        auto launch3 = [&] {
            snb::skn<float, 8, 8, 2, false><<<dim3(gx, splits), 256>>>(p.A, p.B, p.C, c.part, c.done, M, N, K, kchunk);
            if (splits > 1)
                gemm_skinny_reduce_fp32<<<(int)std::min<long long>((mn + 255) / 256, 4LL * c.sms), 256>>>(c.part, p.C, mn, splits);
        };
        snprintf(tag, sizeof tag, "skn.%d.2.reduce [%dx%d]", cps, gx, splits);
        measure(c, p, tag, launch3, bytes);
    }
    release(p);
}

int main(int argc, char** argv) {
    Ctx c{};
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    c.sms = prop.multiProcessorCount;
    c.reps = getenv("SNB_REPS") ? std::max(1, atoi(getenv("SNB_REPS"))) : 15;
    printf("%s, %d SMs\n", prop.name, c.sms);
    c.flush_n = (256u << 20) / 16;
    CK(cudaMalloc(&c.flush, c.flush_n * 16));
    CK(cudaMemset(c.flush, 1, c.flush_n * 16));
    CK(cudaMalloc(&c.sink, 4));
    CK(cudaMalloc(&c.done, 1 << 20));
    CK(cudaMemset(c.done, 0, 1 << 20));
    CK(cudaMalloc(&c.part, 64u << 20));
    CK(cudaEventCreate(&c.e0));
    CK(cudaEventCreate(&c.e1));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 2;
    const std::string only = argc > 1 ? argv[1] : "";
    if (only.empty() || only == "16") {
        shape16<__nv_bfloat16, 8>(c, h, 8192, 8, 8192);
        shape16<__half, 8>(c, h, 8192, 8, 8192);
        shape16<__nv_bfloat16, 16>(c, h, 8192, 16, 4096);
        shape16<__nv_bfloat16, 16>(c, h, 4096, 12, 1000);
        shape16<__nv_bfloat16, 8>(c, h, 2048, 3, 777);
        shape16<__nv_bfloat16, 16>(c, h, 16, 16, 65536);
        shape16<__nv_bfloat16, 16>(c, h, 2048, 9, 64);
        shape16<__nv_bfloat16, 16>(c, h, 65536, 16, 1024);
        shape16<__nv_bfloat16, 8>(c, h, 1000, 5, 3000);
    }
    if (only.empty() || only == "32") shape32(c, h, 8192, 8, 8192);
    printf("%s\n", g_fail ? "SOME CHECKS FAILED" : "all checks ok");
    return g_fail ? 1 : 0;
}
