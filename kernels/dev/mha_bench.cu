// Standalone variant benchmark for ../mha.cu (not part of the Rust harness).
// Build (on an sm_90 machine), one executable per variant of the tuning macros:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/mb mha_bench.cu [-DMHA_BN_D64=128 ...]
//   /tmp/mb out_prefix
// Times the key shapes (median of 20 launches after warm-up, L2 not flushed: the shapes are
// compute-bound) and writes the outputs of small shapes to out_prefix_*.bin so that a script
// can compare variants with each other and with PyTorch.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#include <string>

#ifdef MHA_OLD  // a previous version copied next to mha.cu, for comparison
#include "../mha_old.cu"
#else
#include "../mha.cu"
#endif

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

__global__ void fill(__nv_bfloat16* p, size_t n, unsigned tensor, float lo, float hi) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = __float2bfloat16(kg_input_value(42, tensor, i, lo, hi));
}

typedef void (*Kern)(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int, int, int, int, float);

struct Shape { int b, h, hkv, sq, sk, d, causal; };

static float run(const Shape& s, bool dump, const std::string& prefix, int iters) {
    size_t nq = (size_t)s.b * s.h * s.sq * s.d, nkv = (size_t)s.b * s.hkv * s.sk * s.d;
    __nv_bfloat16 *q, *k, *v, *o;
    CK(cudaMalloc(&q, nq * 2)); CK(cudaMalloc(&k, nkv * 2)); CK(cudaMalloc(&v, nkv * 2)); CK(cudaMalloc(&o, nq * 2));
    fill<<<1024, 256>>>(q, nq, 0, -4.f, 4.f);
    fill<<<1024, 256>>>(k, nkv, 1, -1.f, 1.f);
    fill<<<1024, 256>>>(v, nkv, 2, -1.f, 1.f);
    Kern f = s.d == 64 ? (s.causal ? mha_fwd_bf16_d64_causal : mha_fwd_bf16_d64)
                       : (s.causal ? mha_fwd_bf16_d128_causal : mha_fwd_bf16_d128);
    int bn = s.d == 64 ? MHA_BN_D64 : MHA_BN_D128;
    int smem = (128 + 4 * bn) * s.d * 2;
    CK(cudaFuncSetAttribute((const void*)f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    dim3 grid((s.sq + 127) / 128, s.h, s.b);
    float sl2 = (float)(1.4426950408889634 / std::sqrt((double)s.d));
    for (int i = 0; i < 3; ++i) f<<<grid, 256, smem>>>(q, k, v, o, s.h, s.hkv, s.sq, s.sk, sl2);
    CK(cudaDeviceSynchronize());
    std::vector<float> ms;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int i = 0; i < iters; ++i) {
        CK(cudaEventRecord(e0));
        f<<<grid, 256, smem>>>(q, k, v, o, s.h, s.hkv, s.sq, s.sk, sl2);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float t; CK(cudaEventElapsedTime(&t, e0, e1)); ms.push_back(t);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    float med = ms[ms.size() / 2];
    if (dump) {
        std::vector<unsigned short> host(nq);
        CK(cudaMemcpy(host.data(), o, nq * 2, cudaMemcpyDeviceToHost));
        char name[256];
        snprintf(name, sizeof name, "%s_b%d_h%d_hkv%d_sq%d_sk%d_d%d_c%d.bin", prefix.c_str(), s.b, s.h, s.hkv, s.sq, s.sk, s.d, s.causal);
        FILE* fp = fopen(name, "wb"); fwrite(host.data(), 2, nq, fp); fclose(fp);
        // The inputs too (the same for every variant), for an outside reference.
        const __nv_bfloat16* ins[3] = {q, k, v};
        const size_t lens[3] = {nq, nkv, nkv};
        for (int t = 0; t < 3; ++t) {
            std::vector<unsigned short> in(lens[t]);
            CK(cudaMemcpy(in.data(), ins[t], lens[t] * 2, cudaMemcpyDeviceToHost));
            snprintf(name, sizeof name, "%s_in%d_b%d_h%d_hkv%d_sq%d_sk%d_d%d.bin", prefix.c_str(), t, s.b, s.h, s.hkv, s.sq, s.sk, s.d);
            fp = fopen(name, "wb"); fwrite(in.data(), 2, lens[t], fp); fclose(fp);
        }
    }
    cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o);
    return med;
}

int main(int argc, char** argv) {
    std::string prefix = argc > 1 ? argv[1] : "/tmp/mha";
    Shape small[] = {{1, 4, 2, 1000, 1000, 64, 0}, {1, 4, 2, 1000, 1000, 64, 1}, {1, 4, 2, 1000, 1000, 128, 0}, {1, 4, 2, 1000, 1000, 128, 1}};
    for (auto& s : small) run(s, true, prefix, 1);
    Shape big[] = {{4, 32, 32, 8192, 8192, 128, 0}, {4, 32, 32, 8192, 8192, 128, 1}, {2, 32, 32, 8192, 8192, 64, 0},
                   {2, 32, 32, 8192, 8192, 64, 1}, {16, 16, 16, 1024, 1024, 128, 1}, {16, 32, 32, 1024, 1024, 64, 0}};
    for (auto& s : big) {
        float ms = run(s, false, prefix, 10);
        double fl = 4.0 * s.b * s.h * (double)s.sq * s.sk * s.d * (s.causal ? 0.5 : 1.0);
        printf("b%d h%d s%d d%d causal%d: %.3f ms %.1f TFLOP/s\n", s.b, s.h, s.sq, s.d, s.causal, ms, fl / ms / 1e9);
    }
    return 0;
}
