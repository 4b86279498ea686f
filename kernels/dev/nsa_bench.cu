// Standalone benchmark of ../nsa.cu's warp/stage configurations (not part of the Rust harness;
// correctness is the harness's job, this only checks that the variants agree).
// Build (on an sm_90 machine):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/nb nsa_bench.cu
//   /tmp/nb
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <random>
#include <algorithm>
#include <cmath>

#include "../nsa.cu"

NSA_KERNEL(v128_w4_s2, __nv_bfloat16, 128, 4, 2)
NSA_KERNEL(v128_w4_s3, __nv_bfloat16, 128, 4, 3)
NSA_KERNEL(v128_w2_s6, __nv_bfloat16, 128, 2, 6)
NSA_KERNEL(v64_w8_s2, __nv_bfloat16, 64, 8, 2)
NSA_KERNEL(v64_w6_s4, __nv_bfloat16, 64, 6, 4)
NSA_KERNEL(v64_w8_s3, __nv_bfloat16, 64, 8, 3)

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

typedef void (*Kern)(const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*, const __nv_bfloat16*,
                     const __nv_bfloat16*, const int*, const int*, __nv_bfloat16*, int, int, int, int, int, int, int,
                     float);
struct Var {
    const char* name;
    Kern k;
    int d, warps, stages;
};

static __global__ void fill(__nv_bfloat16* p, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float u = (float)(kg_hash(seed, 0, i) >> 40) * (1.0f / 16777216.0f);
        p[i] = __float2bfloat16(lo + (hi - lo) * u);
    }
}

int main() {
    Var vars[] = {
        {"d128 w6 s2 (harness)", nsa_fwd_bf16_d128, 128, 6, 2}, {"d128 w4 s2", v128_w4_s2, 128, 4, 2},
        {"d128 w4 s3", v128_w4_s3, 128, 4, 3},
        {"d128 w2 s6", v128_w2_s6, 128, 2, 6},  {"d64 w12 s2 (harness)", nsa_fwd_bf16_d64, 64, 12, 2},
        {"d64 w8 s2", v64_w8_s2, 64, 8, 2},     {"d64 w6 s4", v64_w6_s4, 64, 6, 4},
        {"d64 w8 s3", v64_w8_s3, 64, 8, 3},
    };
    struct Shape { int B, T, HQ, H, D, S, BS, W; };
    Shape shapes[] = {{32, 1024, 16, 1, 128, 16, 32, 0}, {1, 16384, 64, 4, 128, 16, 64, 0},
                      {2, 2048, 16, 4, 64, 16, 32, 0},   {2, 512, 16, 16, 64, 8, 32, 0},
                      {2, 2048, 16, 16, 64, 16, 64, 0}};
    size_t flush_n = 256u << 20;
    void* flush;
    CK(cudaMalloc(&flush, flush_n));
    for (auto& sh : shapes) {
        size_t nq = (size_t)sh.B * sh.T * sh.HQ * sh.D, nk = (size_t)sh.B * sh.T * sh.H * sh.D;
        size_t ng = (size_t)sh.B * sh.T * sh.HQ, nr = (size_t)sh.B * sh.T * sh.H;
        __nv_bfloat16 *q, *k, *v, *gs, *gw, *o, *o0;
        int *ind, *cnt;
        CK(cudaMalloc(&q, nq * 2)); CK(cudaMalloc(&o, nq * 2)); CK(cudaMalloc(&o0, nq * 2));
        CK(cudaMalloc(&k, nk * 2)); CK(cudaMalloc(&v, nk * 2));
        CK(cudaMalloc(&gs, ng * 2)); CK(cudaMalloc(&gw, ng * 2));
        CK(cudaMalloc(&ind, nr * sh.S * 4)); CK(cudaMalloc(&cnt, nr * 4));
        fill<<<1024, 256>>>(q, nq, 1, -1, 1); fill<<<1024, 256>>>(k, nk, 2, -1, 1); fill<<<1024, 256>>>(v, nk, 3, -1, 1);
        fill<<<1024, 256>>>(gs, ng, 4, 0, 1); fill<<<1024, 256>>>(gw, ng, 5, 0, 1);
        std::vector<int> hi(nr * sh.S, -1), hc(nr);
        std::mt19937 rng(7);
        double keys = 0;
        for (int b = 0; b < sh.B; ++b)
            for (int t = 0; t < sh.T; ++t)
                for (int h = 0; h < sh.H; ++h) {
                    size_t r = ((size_t)b * sh.T + t) * sh.H + h;
                    int own = t / sh.BS, c = std::min(sh.S, own + 1);
                    std::vector<int> sel;
                    if (own < sh.S) { for (int x = 0; x <= own; ++x) sel.push_back(x); }
                    else {
                        std::vector<int> all(own);
                        for (int x = 0; x < own; ++x) all[x] = x;
                        std::shuffle(all.begin(), all.end(), rng);
                        sel.assign(all.begin(), all.begin() + c - 1);
                        sel.push_back(own);
                        std::sort(sel.begin(), sel.end());
                    }
                    for (int s = 0; s < c; ++s) hi[r * sh.S + s] = sel[s];
                    hc[r] = c;
                    keys += (double)(c - 1) * sh.BS + t % sh.BS + 1;
                }
        CK(cudaMemcpy(ind, hi.data(), hi.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(cnt, hc.data(), hc.size() * 4, cudaMemcpyHostToDevice));
        double nominal = (double)sh.B * sh.T * sh.HQ * 4.0 * sh.D * sh.S * sh.BS;
        double honest = keys * (sh.HQ / sh.H) * 4.0 * sh.D;
        printf("shape B=%d T=%d HQ=%d H=%d D=%d S=%d BS=%d: nominal %.3e honest %.3e\n", sh.B, sh.T, sh.HQ, sh.H,
               sh.D, sh.S, sh.BS, nominal, honest);
        float sl = (float)(1.0 / std::sqrt((double)sh.D) * 1.4426950408889634);
        bool first = true;
        for (auto& vr : vars) {
            if (vr.d != sh.D) continue;
            int smem = vr.warps * vr.stages * 2 * 32 * vr.d * 2;
            if (smem > 227 * 1024) continue;  // more than an H100/H200 SM holds
            CK(cudaFuncSetAttribute(vr.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            int G = sh.HQ / sh.H;
            long long tasks = (long long)sh.B * sh.H * ((G + 15) / 16) * sh.T;
            int grid = (int)((tasks + vr.warps - 1) / vr.warps);
            __nv_bfloat16* dst = first ? o0 : o;
            auto launch = [&]() {
                vr.k<<<grid, vr.warps * 32, smem>>>(q, k, v, gs, gw, ind, cnt, dst, sh.B, sh.T, sh.HQ, sh.H, sh.S,
                                                    sh.BS, sh.W, sl);
            };
            launch();
            CK(cudaDeviceSynchronize());
            double maxdiff = 0;
            if (!first) {
                std::vector<__nv_bfloat16> a(nq), bb(nq);
                CK(cudaMemcpy(a.data(), o0, nq * 2, cudaMemcpyDeviceToHost));
                CK(cudaMemcpy(bb.data(), o, nq * 2, cudaMemcpyDeviceToHost));
                for (size_t i = 0; i < nq; ++i)
                    maxdiff = std::max(maxdiff, (double)std::fabs(__bfloat162float(a[i]) - __bfloat162float(bb[i])));
            }
            first = false;
            std::vector<float> ms;
            cudaEvent_t e0, e1;
            cudaEventCreate(&e0); cudaEventCreate(&e1);
            for (int it = 0; it < 30; ++it) {
                CK(cudaMemsetAsync(flush, it, flush_n));
                cudaEventRecord(e0);
                launch();
                cudaEventRecord(e1);
                cudaEventSynchronize(e1);
                float m; cudaEventElapsedTime(&m, e0, e1);
                if (it >= 5) ms.push_back(m);
            }
            CK(cudaGetLastError());
            std::sort(ms.begin(), ms.end());
            float med = ms[ms.size() / 2];
            printf("  %-22s median %.4f ms  nominal %.1f TFLOP/s  honest %.1f TFLOP/s  maxdiff vs first %.2e\n", vr.name,
                   med, nominal / med / 1e9, honest / med / 1e9, maxdiff);
        }
        cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o); cudaFree(o0); cudaFree(gs); cudaFree(gw);
        cudaFree(ind); cudaFree(cnt);
    }
    return 0;
}
