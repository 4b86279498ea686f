// Standalone correctness test + benchmark for ../gemm_wgmma.cu (not part of the Rust harness).
// Build (on an sm_90 machine):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/b gemm_wgmma_bench.cu -lcuda -lcublas
//   /tmp/b
// Launches the kernels exactly as the host recipe in gemm_wgmma.cu describes (driver API:
// cuTensorMapEncodeTiled, cuFuncSetAttribute, cuLaunchKernel), checks against a fp32 reference
// GPU kernel, and times against cublasGemmEx (row-major via swapped operands).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cmath>

#include "../gemm_wgmma.cu"

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__,   \
                    __LINE__, #x);                                                              \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)
#define CKD(x)                                                                                  \
    do {                                                                                        \
        CUresult r_ = (x);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                               \
            const char* s_ = nullptr;                                                           \
            cuGetErrorString(r_, &s_);                                                          \
            fprintf(stderr, "CU error %d (%s) at %s:%d: %s\n", (int)r_, s_ ? s_ : "?", __FILE__, \
                    __LINE__, #x);                                                              \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)
#define CKB(x)                                                                                  \
    do {                                                                                        \
        cublasStatus_t s_ = (x);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                      \
            fprintf(stderr, "cuBLAS error %d at %s:%d\n", (int)s_, __FILE__, __LINE__);        \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

template <typename T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 from_f(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ __half from_f(float x) { return __float2half_rn(x); }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }

template <typename T>
__global__ void fill_kernel(T* p, size_t n, unsigned seed) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long h = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((unsigned long long)seed << 32);
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        float u = (float)(h >> 40) * (1.0f / 16777216.0f);  // [0,1)
        p[i] = from_f<T>(2.0f * u - 1.0f);
    }
}

// fp32 reference: C = A(MxK,row) * B(KxN,row), 16x16 smem tiles
template <typename T>
__global__ void ref_kernel(const T* A, const T* B, float* C, int M, int N, int K) {
    __shared__ float As[16][17], Bs[16][17];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[ty][tx] = (row < M && k0 + tx < K) ? to_f(A[(size_t)row * K + k0 + tx]) : 0.f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? to_f(B[(size_t)(k0 + ty) * N + col]) : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

template <typename T>
__global__ void err_kernel(const T* C, const float* R, size_t n, unsigned* maxabs, double* sq_diff,
                           double* sq_ref, unsigned long long* nonfinite) {
    double sd = 0, sr = 0;
    float mx = 0;
    unsigned long long nf = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float c = to_f(C[i]), r = R[i];
        if (!isfinite(c)) { nf++; continue; }
        float d = fabsf(c - r);
        mx = fmaxf(mx, d);
        sd += (double)d * d;
        sr += (double)r * r;
    }
    for (int o = 16; o; o >>= 1) {
        sd += __shfl_xor_sync(0xffffffff, sd, o);
        sr += __shfl_xor_sync(0xffffffff, sr, o);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
        nf += __shfl_xor_sync(0xffffffff, nf, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sq_diff, sd);
        atomicAdd(sq_ref, sr);
        atomicMax(maxabs, __float_as_uint(mx));
        atomicAdd(nonfinite, nf);
    }
}

struct Err {
    float maxabs;
    double rel_l2;
    unsigned long long nonfinite;
};

template <typename T>
Err compare(const T* C, const float* R, size_t n) {
    unsigned* dmx;
    double* dd;
    unsigned long long* dnf;
    CK(cudaMalloc(&dmx, 4));
    CK(cudaMalloc(&dd, 16));
    CK(cudaMalloc(&dnf, 8));
    CK(cudaMemset(dmx, 0, 4));
    CK(cudaMemset(dd, 0, 16));
    CK(cudaMemset(dnf, 0, 8));
    err_kernel<T><<<1024, 256>>>(C, R, n, dmx, dd, dd + 1, dnf);
    CK(cudaGetLastError());
    unsigned hmx;
    double hd[2];
    unsigned long long hnf;
    CK(cudaMemcpy(&hmx, dmx, 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hd, dd, 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&hnf, dnf, 8, cudaMemcpyDeviceToHost));
    cudaFree(dmx);
    cudaFree(dd);
    cudaFree(dnf);
    Err e;
    memcpy(&e.maxabs, &hmx, 4);
    e.rel_l2 = hd[1] > 0 ? sqrt(hd[0] / hd[1]) : sqrt(hd[0]);
    e.nonfinite = hnf;
    return e;
}

static CUtensorMap make_map(CUtensorMapDataType dt, const void* ptr, unsigned long long inner,
                            unsigned long long outer, unsigned box_inner, unsigned box_outer) {
    CUtensorMap m;
    cuuint64_t gdim[2] = {inner, outer};
    cuuint64_t gstride[1] = {inner * 2};
    cuuint32_t box[2] = {box_inner, box_outer};
    cuuint32_t estr[2] = {1, 1};
    CKD(cuTensorMapEncodeTiled(&m, dt, 2, const_cast<void*>(ptr), gdim, gstride, box, estr,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    return m;
}

static int g_num_sms = 0;
static const unsigned SMEM = 197760;

template <typename T>
struct KInfo;
template <>
struct KInfo<__nv_bfloat16> {
    static const void* sym() { return (const void*)gemm_wgmma_bf16; }
    static constexpr CUtensorMapDataType tdt = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    static constexpr cudaDataType cdt = CUDA_R_16BF;
    static const char* name() { return "bf16"; }
};
template <>
struct KInfo<__half> {
    static const void* sym() { return (const void*)gemm_wgmma_f16; }
    static constexpr CUtensorMapDataType tdt = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    static constexpr cudaDataType cdt = CUDA_R_16F;
    static const char* name() { return "f16"; }
};

template <typename T>
static void launch(CUfunction f, const CUtensorMap& ta, const CUtensorMap& tb, T* C, int M, int N,
                   int K, int grid) {
    CUtensorMap a = ta, b = tb;
    void* params[] = {&a, &b, &C, &M, &N, &K};
    CKD(cuLaunchKernel(f, grid, 1, 1, 384, 1, 1, SMEM, 0, params, nullptr));
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename F>
static float time_it(F fn, int reps = 25) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 5; ++i) fn();
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(e0));
        fn();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ts.push_back(ms);
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return median(ts);
}

static int g_fail = 0;

template <typename T>
static void run_case(cublasHandle_t h, int M, int N, int K, bool bench) {
    CUfunction f;
    CK(cudaGetFuncBySymbol((cudaFunction_t*)&f, KInfo<T>::sym()));
    CKD(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SMEM));
    T *A, *B, *C, *Cb;
    float* R;
    CK(cudaMalloc(&A, (size_t)M * K * sizeof(T)));
    CK(cudaMalloc(&B, (size_t)K * N * sizeof(T)));
    CK(cudaMalloc(&C, (size_t)M * N * sizeof(T)));
    CK(cudaMalloc(&Cb, (size_t)M * N * sizeof(T)));
    CK(cudaMalloc(&R, (size_t)M * N * sizeof(float)));
    fill_kernel<T><<<2048, 256>>>(A, (size_t)M * K, 1234u + M);
    fill_kernel<T><<<2048, 256>>>(B, (size_t)K * N, 777u + N);
    CK(cudaMemset(C, 0xFF, (size_t)M * N * sizeof(T)));  // NaN pattern: catches unwritten outputs
    ref_kernel<T><<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(A, B, R, M, N, K);
    CK(cudaGetLastError());

    CUtensorMap ta = make_map(KInfo<T>::tdt, A, K, M, 64, 128);
    CUtensorMap tb = make_map(KInfo<T>::tdt, B, N, K, 64, 64);
    int tiles = ((M + 127) / 128) * ((N + 255) / 256);
    int grid = std::min(tiles, g_num_sms);
    launch<T>(f, ta, tb, C, M, N, K, grid);
    CK(cudaDeviceSynchronize());
    Err e = compare<T>(C, R, (size_t)M * N);

    float one = 1.f, zero = 0.f;
    auto cublas_call = [&]() {
        CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, KInfo<T>::cdt, N, A,
                         KInfo<T>::cdt, K, &zero, Cb, KInfo<T>::cdt, N, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT));
    };
    cublas_call();
    CK(cudaDeviceSynchronize());
    Err eb = compare<T>(Cb, R, (size_t)M * N);
    bool ok = e.nonfinite == 0 && e.rel_l2 < 1e-2 && e.rel_l2 <= 3.0 * eb.rel_l2 + 1e-3;
    if (!ok) g_fail++;
    printf("%-4s M=%5d N=%5d K=%5d | mine: maxabs %.3e relL2 %.3e nonfinite %llu | cublas: maxabs %.3e "
           "relL2 %.3e | %s\n",
           KInfo<T>::name(), M, N, K, e.maxabs, e.rel_l2, e.nonfinite, eb.maxabs, eb.rel_l2,
           ok ? "PASS" : "FAIL");
    if (bench) {
        double flop = 2.0 * M * N * (double)K;
        float tm = time_it([&]() { launch<T>(f, ta, tb, C, M, N, K, grid); });
        float tm2 = time_it([&]() { launch<T>(f, ta, tb, C, M, N, K, tiles); });
        float tb_ = time_it(cublas_call);
        printf("  BENCH %-4s %5dx%5dx%5d: mine %.3f ms %.1f TFLOP/s (grid=numTiles: %.1f) | cuBLAS %.3f "
               "ms %.1f TFLOP/s | ratio %.3f\n",
               KInfo<T>::name(), M, N, K, tm, flop / tm * 1e-9, flop / tm2 * 1e-9, tb_,
               flop / tb_ * 1e-9, tb_ / tm);
        // re-check output after the timing runs
        Err e2 = compare<T>(C, R, (size_t)M * N);
        if (e2.nonfinite || e2.rel_l2 >= 1e-2) {
            printf("  FAIL after bench: relL2 %.3e\n", e2.rel_l2);
            g_fail++;
        }
    }
    CK(cudaFree(A));
    CK(cudaFree(B));
    CK(cudaFree(C));
    CK(cudaFree(Cb));
    CK(cudaFree(R));
}

int main() {
    CK(cudaSetDevice(0));
    CKD(cuInit(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_num_sms = prop.multiProcessorCount;
    printf("device: %s, %d SMs, cc %d.%d\n", prop.name, g_num_sms, prop.major, prop.minor);
    cublasHandle_t h;
    CKB(cublasCreate(&h));

    struct S {
        int M, N, K;
        bool bench;
    };
    std::vector<S> shapes = {
        {4096, 4096, 4096, true}, {8192, 8192, 8192, true}, {2048, 512, 4096, true},
        {1, 4096, 4096, true},    {1000, 1000, 1000, true}, {1000, 1000, 8, false},
        {1000, 4096, 4096, false}, {4096, 1000, 4096, false}, {1, 8, 8, false},
        {130, 264, 72, false},    {777, 1000, 136, false},  {8192, 8192, 8, false},
        {4096, 4096, 4104, false}, {6144, 6144, 6144, true},
    };
    for (auto& s : shapes) run_case<__nv_bfloat16>(h, s.M, s.N, s.K, s.bench);
    std::vector<S> shapes16 = {
        {4096, 4096, 4096, true}, {1000, 1000, 1000, false}, {1, 4096, 4096, false},
        {777, 1000, 136, false},  {1000, 1000, 8, false},
    };
    for (auto& s : shapes16) run_case<__half>(h, s.M, s.N, s.K, s.bench);
    printf("%s (%d failures)\n", g_fail ? "SOME FAILED" : "ALL PASSED", g_fail);
    cublasDestroy(h);
    return g_fail ? 1 : 0;
}
