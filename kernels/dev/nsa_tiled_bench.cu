// Standalone correctness + speed bench of ../nsa_tiled.cu (token-tiled NSA forward for small G)
// next to ../nsa.cu (the grouped kernel), same run. Not part of the Rust harness.
// Build and run with kernels/dev/run_nsa_tiled.sh (from the repo root), or by hand:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -o /tmp/ntb kernels/dev/nsa_tiled_bench.cu
//   /tmp/ntb [--check-only | --speed-only]
//
// Correctness: every shape of the check list (G = 1, 2, 3, 4, 8, 16, 64; T not a multiple of
// the tile; s 1..16; bs 32/64/128; d 64/128; w = 0 and w > 0; bf16 and fp16; generated
// indices as src/family/nsa.rs makes them, and "adversarial" indices: unsorted, duplicated,
// negative, past the token, past the sequence, counts < 0 and > S), both kernels, against a
// float64 CPU reference of the semantics of src/family/nsa.rs reading the same 16-bit inputs,
// on sampled rows (every row of the first and last 128 tokens, plus 1500 random rows).
// Outputs are NaN-poisoned before the launch and every element is scanned for NaN/Inf.
// PASS when, on every checked row, |out - ref| <= atol·rms(ref row) + rtol·|ref| + floor
// element-wise (bf16: atol 3.2e-2, rtol 1e-2; fp16: 8e-3, 2e-3; as the harness's per-band
// bound) and the row's relative L2 error <= 1e-2 (bf16) / 3e-3 (fp16), relative to
// max(rms, floor). floor = 2^-14 for fp16 (its smallest normal: a row scaled by a tiny gate lands
// in fp16's subnormals, whose spacing 2^-24 is a large relative error), 0 for bf16.
// Speed: nominal FLOPs = B·T·HQ·4·D·(S·bs + w) (the harness's TFLOP/s), median of 20 launches
// (cudaEvent), each after an L2 flush (256 MiB memset), after 3 warm-ups. Both kernels run in the
// same process on the same inputs.
// Exit status 1 when any check failed; a CUDA error or a launch that runs for more than 20 s
// (watchdog) ends the run with status 3/4.
#include <cuda_runtime.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../nsa.cu"
#include "../nsa_tiled.cu"

// A 2-warp (32-row) variant of the tiled kernel, timed next to the harness's 4-warp one.
NST_KERNEL(nsa_tiled2_bf16_d128, __nv_bfloat16, 128, 3, 2, 3)
NST_KERNEL(nsa_tiled2_bf16_d64, __nv_bfloat16, 64, 4, 2, 6)
NST_KERNEL(nsa_tiled2_fp16_d128, __half, 128, 3, 2, 3)
NST_KERNEL(nsa_tiled2_fp16_d64, __half, 64, 4, 2, 6)

#define CK(x)                                                                                           \
    do {                                                                                                \
        cudaError_t e_ = (x);                                                                           \
        if (e_ != cudaSuccess) {                                                                        \
            printf("  CUDA ERROR: %s (%s) at %s:%d\n", cudaGetErrorString(e_), #x, __FILE__, __LINE__); \
            fflush(stdout);                                                                             \
            _exit(3);                                                                                   \
        }                                                                                               \
    } while (0)

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
    int B, T, HQ, H, D, S, BS, W;
    bool fp16, adv, time;
};

template <typename T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <> __device__ __forceinline__ __half from_f<__half>(float x) { return __float2half(x); }

template <typename T>
__global__ void fill(T* p, size_t n, unsigned tensor, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = from_f<T>(kg_input_value(42, tensor, i, lo, hi));
}

static float half_bits(uint16_t h, bool fp16) {
    if (!fp16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = std::ldexp((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = std::ldexp((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}

// Kernel entry points.
static const void* grouped_kernel(bool fp16, int d) {
    if (fp16) return d == 64 ? (const void*)nsa_fwd_fp16_d64 : (const void*)nsa_fwd_fp16_d128;
    return d == 64 ? (const void*)nsa_fwd_bf16_d64 : (const void*)nsa_fwd_bf16_d128;
}
static const void* tiled_kernel(bool fp16, int d, int warps) {
    if (warps == 2) {
        if (fp16) return d == 64 ? (const void*)nsa_tiled2_fp16_d64 : (const void*)nsa_tiled2_fp16_d128;
        return d == 64 ? (const void*)nsa_tiled2_bf16_d64 : (const void*)nsa_tiled2_bf16_d128;
    }
    if (fp16) return d == 64 ? (const void*)nsa_tiled_fp16_d64 : (const void*)nsa_tiled_fp16_d128;
    return d == 64 ? (const void*)nsa_tiled_bf16_d64 : (const void*)nsa_tiled_bf16_d128;
}
// As src/backend/cuda/nsa.rs: grouped (warps, stages) and tiled stages per head dim.
static void grouped_cfg(int d, int& warps, int& stages) {
    warps = d == 128 ? 6 : 12;
    stages = 2;
}
static int tiled_stages(int d) { return d == 128 ? 3 : 4; }
static int tiled_smem(const Shape& s, int warps) {
    int G = s.HQ / s.H, TM = warps * 16 / G;
    int nblocks = (s.T + s.BS - 1) / s.BS, words = (nblocks + 31) / 32;
    return tiled_stages(s.D) * 2 * 32 * s.D * 2 + (TM * (s.S + 1) + words) * 4;
}

struct Bufs {
    void *q, *k, *v, *gs, *gw, *o;
    int *ind, *cnt;
};

static void launch(int which, const Shape& s, const Bufs& bu) {
    const float sl2 = (float)(1.4426950408889634 / std::sqrt((double)s.D));
    int B = s.B, Tn = s.T, HQ = s.HQ, H = s.H, S = s.S, BS = s.BS, W = s.W;
    float sc = sl2;
    void *q = bu.q, *k = bu.k, *v = bu.v, *gs = bu.gs, *gw = bu.gw, *o = bu.o;
    int *ind = bu.ind, *cnt = bu.cnt;
    void* args[] = {&q, &k, &v, &gs, &gw, &ind, &cnt, &o, &B, &Tn, &HQ, &H, &S, &BS, &W, &sc};
    int G = HQ / H;
    if (which == 0) {
        int warps, stages;
        grouped_cfg(s.D, warps, stages);
        int smem = warps * stages * 2 * 32 * s.D * 2;
        const void* f = grouped_kernel(s.fp16, s.D);
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        long long tasks = (long long)B * H * ((G + 15) / 16) * Tn;
        CK(cudaLaunchKernel(f, dim3((unsigned)((tasks + warps - 1) / warps)), dim3(warps * 32), args, smem, 0));
    } else {
        const int warps = which == 1 ? NST_WARPS : 2;
        int smem = tiled_smem(s, warps);
        const void* f = tiled_kernel(s.fp16, s.D, warps);
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        int TM = warps * 16 / G;
        long long grid = (long long)((Tn + TM - 1) / TM) * B * H;
        CK(cudaLaunchKernel(f, dim3((unsigned)grid), dim3(warps * 32), args, smem, 0));
    }
}

// Host indices: "generated" as src/family/nsa.rs (own block + count-1 distinct earlier blocks,
// sorted, -1 pads; a different RNG), or adversarial.
static void make_indices(const Shape& s, std::vector<int>& ind, std::vector<int>& cnt, unsigned seed) {
    size_t nr = (size_t)s.B * s.T * s.H;
    ind.assign(nr * s.S, -1);
    cnt.assign(nr, 0);
    std::mt19937 rng(seed);
    const int nblocks = (s.T + s.BS - 1) / s.BS;
    std::vector<int> all;
    for (int b = 0; b < s.B; ++b)
        for (int t = 0; t < s.T; ++t)
            for (int h = 0; h < s.H; ++h) {
                size_t r = ((size_t)b * s.T + t) * s.H + h;
                int* sl = &ind[r * s.S];
                int own = t / s.BS;
                if (!s.adv) {
                    int c = std::min(s.S, own + 1);
                    std::vector<int> sel;
                    if (own < s.S) {
                        for (int x = 0; x <= own; ++x) sel.push_back(x);
                    } else {
                        all.resize(own);
                        for (int x = 0; x < own; ++x) all[x] = x;
                        for (int x = 0; x < c - 1; ++x) std::swap(all[x], all[x + rng() % (own - x)]);
                        sel.assign(all.begin(), all.begin() + c - 1);
                        sel.push_back(own);
                        std::sort(sel.begin(), sel.end());
                    }
                    for (int x = 0; x < c; ++x) sl[x] = sel[x];
                    cnt[r] = c;
                } else {
                    for (int x = 0; x < s.S; ++x) {
                        int kind = rng() % 10;
                        int val;
                        switch (kind) {
                            case 0: val = -1 - (int)(rng() % 3); break;                  // negative
                            case 1: val = x > 0 ? sl[x - 1] : own; break;                // duplicate
                            case 2: val = own + 1 + (int)(rng() % 3); break;             // future / past T
                            case 3: val = nblocks + (int)(rng() % 2) * 1000000; break;  // out of range
                            case 4: val = own; break;                                    // own (maybe twice)
                            default: val = (int)(rng() % (own + 1)); break;              // visible, unsorted
                        }
                        sl[x] = val;
                    }
                    int ck = rng() % 8;
                    cnt[r] = ck == 0 ? -1 - (int)(rng() % 2) : ck == 1 ? s.S + 1 + (int)(rng() % 3)
                                                                        : 1 + (int)(rng() % s.S);
                }
            }
}

struct Host {
    std::vector<uint16_t> q, k, v, gs, gw;
    std::vector<int> ind, cnt;
};

// float64 reference of one output row (b, t, hq) as src/family/nsa.rs::reference_row.
static void ref_row(const Shape& s, const Host& hs, int b, int t, int hq, std::vector<double>& out) {
    const int G = s.HQ / s.H, h = hq / G, D = s.D;
    const bool f16 = s.fp16;
    out.assign(D, 0.0);
    std::vector<double> qv(D);
    for (int d = 0; d < D; ++d) qv[d] = half_bits(hs.q[(((size_t)b * s.T + t) * s.HQ + hq) * D + d], f16);
    auto attend = [&](const std::vector<int>& keys, std::vector<double>& o) {
        o.assign(D, 0.0);
        if (keys.empty()) return;
        std::vector<double> sc(keys.size());
        double m = -INFINITY, scale = 1.0 / std::sqrt((double)D);
        for (size_t i = 0; i < keys.size(); ++i) {
            const uint16_t* kr = &hs.k[(((size_t)b * s.T + keys[i]) * s.H + h) * D];
            double a = 0;
            for (int d = 0; d < D; ++d) a += qv[d] * half_bits(kr[d], f16);
            sc[i] = a * scale;
            m = std::max(m, sc[i]);
        }
        double z = 0;
        for (size_t i = 0; i < keys.size(); ++i) {
            double e = std::exp(sc[i] - m);
            z += e;
            const uint16_t* vr = &hs.v[(((size_t)b * s.T + keys[i]) * s.H + h) * D];
            for (int d = 0; d < D; ++d) o[d] += e * half_bits(vr[d], f16);
        }
        for (int d = 0; d < D; ++d) o[d] /= z;
    };
    size_t r = ((size_t)b * s.T + t) * s.H + h;
    int count = hs.cnt[r];
    count = std::max(0, std::min(count, s.S));
    std::vector<int> keys;
    for (int x = 0; x < count; ++x) {
        long long idx = hs.ind[r * s.S + x];
        if (idx < 0) continue;
        for (long long j = idx * s.BS; j < idx * s.BS + s.BS; ++j)
            if (j <= t) keys.push_back((int)j);
    }
    std::vector<double> slc, swa;
    attend(keys, slc);
    keys.clear();
    if (s.W > 0)
        for (int j = std::max(0, t - s.W + 1); j <= t; ++j) keys.push_back(j);
    attend(keys, swa);
    size_t gi = ((size_t)b * s.T + t) * s.HQ + hq;
    double g1 = half_bits(hs.gs[gi], f16), g2 = half_bits(hs.gw[gi], f16);
    for (int d = 0; d < D; ++d) out[d] = g1 * slc[d] + (s.W > 0 ? g2 * swa[d] : 0.0);
}

static std::string name_of(const Shape& s) {
    char buf[160];
    snprintf(buf, sizeof buf, "b%d_t%d_hq%d_h%d_d%d_s%d_bs%d_w%d_%s%s", s.B, s.T, s.HQ, s.H, s.D, s.S, s.BS, s.W,
             s.fp16 ? "fp16" : "bf16", s.adv ? "_adv" : "");
    return buf;
}

struct Result {
    std::string name;
    double nominal;
    float us[3];
};

int main(int argc, char** argv) {
    bool check = true, speed = true;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--check-only")) speed = false;
        else if (!strcmp(argv[i], "--speed-only")) check = false;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    // {B, T, HQ, H, D, S, BS, W, fp16, adv, time}
    std::vector<Shape> shapes = {
        // G = 1
        {2, 512, 16, 16, 64, 8, 32, 0, false, false, true},
        {2, 1000, 16, 16, 64, 8, 32, 0, false, false, false},
        {1, 777, 4, 4, 128, 4, 64, 0, false, false, false},
        {1, 777, 4, 4, 128, 4, 64, 0, true, false, false},
        {2, 300, 8, 8, 64, 3, 32, 100, false, false, false},
        {2, 300, 8, 8, 64, 3, 32, 100, true, false, false},
        {1, 1500, 4, 4, 128, 16, 32, 64, false, false, false},
        {1, 200, 2, 2, 64, 1, 128, 0, false, false, false},
        {1, 700, 4, 4, 64, 6, 64, 0, false, true, false},
        {1, 700, 4, 4, 128, 6, 32, 37, true, true, false},
        // G = 2, 3, 4, 8
        {1, 999, 16, 8, 64, 8, 32, 0, false, false, false},
        {1, 1001, 12, 4, 64, 5, 32, 0, false, false, false},
        {1, 1001, 12, 4, 128, 5, 64, 200, true, false, false},
        {2, 1000, 16, 4, 128, 8, 64, 100, false, false, false},
        {2, 1000, 16, 4, 64, 16, 32, 0, true, false, false},
        {1, 555, 16, 4, 64, 4, 32, 0, false, true, false},
        {1, 555, 16, 4, 128, 4, 64, 77, false, true, false},
        {1, 1111, 16, 2, 64, 8, 64, 0, false, false, false},
        // G = 16, 64 (the tiled kernel still has to be right; the heuristic keeps grouped there)
        {1, 333, 16, 1, 128, 4, 32, 0, false, false, false},
        {1, 333, 16, 1, 64, 4, 32, 50, true, true, false},
        {1, 130, 64, 1, 64, 2, 64, 0, false, false, false},
        // timing shapes (fixtures/nsa.json), checked too
        {2, 256, 16, 16, 64, 4, 32, 0, false, false, true},
        {2, 512, 16, 16, 64, 16, 32, 0, false, false, true},
        {2, 1024, 16, 16, 64, 4, 32, 0, false, false, true},
        {2, 1024, 16, 16, 64, 8, 64, 0, false, false, true},
        {2, 1024, 16, 16, 64, 16, 64, 0, false, false, true},
        {2, 2048, 16, 16, 64, 4, 32, 0, false, false, true},
        {2, 2048, 16, 16, 64, 8, 32, 0, false, false, true},
        {2, 2048, 16, 16, 64, 16, 32, 0, false, false, true},
        {2, 2048, 16, 16, 64, 4, 64, 0, false, false, true},
        {2, 2048, 16, 16, 64, 8, 64, 0, false, false, true},
        {2, 2048, 16, 16, 64, 16, 64, 0, false, false, true},
        {2, 512, 16, 16, 128, 8, 32, 0, false, false, true},
        {2, 2048, 16, 16, 128, 16, 64, 0, false, false, true},
        {2, 1024, 16, 4, 64, 4, 32, 0, false, false, true},
        {2, 1024, 16, 4, 64, 16, 64, 0, false, false, true},
        {2, 2048, 16, 4, 64, 4, 32, 0, false, false, true},
        {2, 2048, 16, 4, 64, 8, 64, 0, false, false, true},
        {2, 2048, 16, 4, 64, 16, 64, 0, false, false, true},
        {2, 2048, 16, 2, 64, 8, 32, 0, false, false, true},
        {2, 2048, 16, 2, 64, 16, 64, 0, false, false, true},
        {2, 512, 16, 1, 128, 8, 32, 64, false, false, true},
        {32, 1024, 16, 1, 128, 16, 32, 0, false, false, true},
        {1, 8192, 16, 16, 64, 16, 64, 0, false, false, true},
    };
    void* flush;
    const size_t flush_n = 256u << 20;
    CK(cudaMalloc(&flush, flush_n));
    int fails = 0;
    std::vector<Result> results;
    for (const Shape& s : shapes) {
        if (!check && !s.time) continue;
        const std::string name = name_of(s);
        const int G = s.HQ / s.H;
        const size_t nq = (size_t)s.B * s.T * s.HQ * s.D, nk = (size_t)s.B * s.T * s.H * s.D;
        const size_t ng = (size_t)s.B * s.T * s.HQ, nr = (size_t)s.B * s.T * s.H;
        Bufs bu;
        CK(cudaMalloc(&bu.q, nq * 2));
        CK(cudaMalloc(&bu.o, nq * 2));
        CK(cudaMalloc(&bu.k, nk * 2));
        CK(cudaMalloc(&bu.v, nk * 2));
        CK(cudaMalloc(&bu.gs, ng * 2));
        CK(cudaMalloc(&bu.gw, ng * 2));
        CK(cudaMalloc(&bu.ind, nr * s.S * 4));
        CK(cudaMalloc(&bu.cnt, nr * 4));
        if (s.fp16) {
            fill<<<1024, 256>>>((__half*)bu.q, nq, 0, -1.f, 1.f);
            fill<<<1024, 256>>>((__half*)bu.k, nk, 1, -1.f, 1.f);
            fill<<<1024, 256>>>((__half*)bu.v, nk, 2, -1.f, 1.f);
            fill<<<1024, 256>>>((__half*)bu.gs, ng, 3, 0.f, 1.f);
            fill<<<1024, 256>>>((__half*)bu.gw, ng, 4, 0.f, 1.f);
        } else {
            fill<<<1024, 256>>>((__nv_bfloat16*)bu.q, nq, 0, -1.f, 1.f);
            fill<<<1024, 256>>>((__nv_bfloat16*)bu.k, nk, 1, -1.f, 1.f);
            fill<<<1024, 256>>>((__nv_bfloat16*)bu.v, nk, 2, -1.f, 1.f);
            fill<<<1024, 256>>>((__nv_bfloat16*)bu.gs, ng, 3, 0.f, 1.f);
            fill<<<1024, 256>>>((__nv_bfloat16*)bu.gw, ng, 4, 0.f, 1.f);
        }
        Host hs;
        make_indices(s, hs.ind, hs.cnt, 7u + (unsigned)s.T);
        CK(cudaMemcpy(bu.ind, hs.ind.data(), hs.ind.size() * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(bu.cnt, hs.cnt.data(), hs.cnt.size() * 4, cudaMemcpyHostToDevice));
        sync_watchdog("fill");
        const char* kname[3] = {"grouped", "tiled", "tiled2w"};
        const int nk_run = G <= 32 ? 3 : 2;  // the 2-warp variant holds at most 32 rows
        if (check) {
            hs.q.resize(nq);
            hs.k.resize(nk);
            hs.v.resize(nk);
            hs.gs.resize(ng);
            hs.gw.resize(ng);
            CK(cudaMemcpy(hs.q.data(), bu.q, nq * 2, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hs.k.data(), bu.k, nk * 2, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hs.v.data(), bu.v, nk * 2, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hs.gs.data(), bu.gs, ng * 2, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hs.gw.data(), bu.gw, ng * 2, cudaMemcpyDeviceToHost));
            // Sampled rows (b, t, hq): the first and last 128 tokens entirely, 1500 random rows.
            std::vector<size_t> rows;
            const size_t nrows = (size_t)s.B * s.T * s.HQ;
            for (int b = 0; b < s.B; ++b)
                for (int t = 0; t < s.T; ++t)
                    if (t < 128 || t >= s.T - 128)
                        for (int hq = 0; hq < s.HQ; ++hq) rows.push_back(((size_t)b * s.T + t) * s.HQ + hq);
            std::mt19937_64 rr(99);
            for (int i = 0; i < 1500; ++i) rows.push_back(rr() % nrows);
            std::sort(rows.begin(), rows.end());
            rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
            std::vector<double> ref(rows.size() * s.D);
            {
                unsigned nt = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
                std::vector<std::thread> th;
                for (unsigned w = 0; w < nt; ++w)
                    th.emplace_back([&, w]() {
                        std::vector<double> out;
                        for (size_t i = w; i < rows.size(); i += nt) {
                            size_t r = rows[i];
                            int hq = (int)(r % s.HQ), t = (int)((r / s.HQ) % s.T), b = (int)(r / s.HQ / s.T);
                            ref_row(s, hs, b, t, hq, out);
                            std::copy(out.begin(), out.end(), ref.begin() + i * s.D);
                        }
                    });
                for (auto& x : th) x.join();
            }
            const double atol = s.fp16 ? 8e-3 : 3.2e-2, rtol = s.fp16 ? 2e-3 : 1e-2, l2tol = s.fp16 ? 3e-3 : 1e-2;
            const double floor = s.fp16 ? std::ldexp(1.0, -14) : 0.0;
            for (int which = 0; which < nk_run; ++which) {
                CK(cudaMemset(bu.o, 0xff, nq * 2));  // NaN in both formats
                launch(which, s, bu);
                sync_watchdog(kname[which]);
                std::vector<uint16_t> o(nq);
                CK(cudaMemcpy(o.data(), bu.o, nq * 2, cudaMemcpyDeviceToHost));
                size_t nonfinite = 0;
                for (size_t i = 0; i < nq; ++i)
                    if (!std::isfinite(half_bits(o[i], s.fp16))) ++nonfinite;
                double worst_l2 = 0, worst_el = 0;
                size_t bad = 0, first_bad = SIZE_MAX;
                for (size_t i = 0; i < rows.size(); ++i) {
                    const double* rf = &ref[i * s.D];
                    double ss = 0;
                    for (int d = 0; d < s.D; ++d) ss += rf[d] * rf[d];
                    double rms = std::sqrt(ss / s.D), se = 0, el = 0;
                    bool ok = true;
                    for (int d = 0; d < s.D; ++d) {
                        double x = half_bits(o[rows[i] * s.D + d], s.fp16), e = std::fabs(x - rf[d]);
                        se += e * e;
                        if (!(e <= atol * rms + rtol * std::fabs(rf[d]) + floor)) ok = false;
                        if (rms > 0) el = std::max(el, e / rms);
                        else if (e > 0) el = INFINITY;
                    }
                    const double den = std::max(ss, s.D * floor * floor);
                    double l2 = den > 0 ? std::sqrt(se / den) : (se > 0 ? INFINITY : 0.0);
                    if (!(l2 <= l2tol)) ok = false;
                    worst_l2 = std::max(worst_l2, l2);
                    worst_el = std::max(worst_el, el);
                    if (!ok) {
                        ++bad;
                        if (first_bad == SIZE_MAX) first_bad = rows[i];
                    }
                }
                bool pass = nonfinite == 0 && bad == 0;
                if (!pass) ++fails;
                printf("%s %-44s G=%-2d %-7s rows %zu  worst rel-L2 %.2e  worst |err|/rms %.2e", pass ? "PASS" : "FAIL",
                       name.c_str(), G, kname[which], rows.size(), worst_l2, worst_el);
                if (nonfinite) printf("  NONFINITE %zu", nonfinite);
                if (bad) {
                    size_t r = first_bad;
                    printf("  BAD ROWS %zu (first b=%zu t=%zu hq=%zu)", bad, r / s.HQ / s.T, (r / s.HQ) % s.T, r % s.HQ);
                }
                printf("\n");
                fflush(stdout);
            }
        }
        if (speed && s.time) {
            Result res;
            res.name = name;
            res.nominal = (double)s.B * s.T * s.HQ * 4.0 * s.D * ((double)s.S * s.BS + s.W);
            res.us[2] = NAN;
            for (int which = 0; which < nk_run; ++which) {
                for (int i = 0; i < 3; ++i) launch(which, s, bu);
                sync_watchdog("warm-up");
                std::vector<float> ms;
                cudaEvent_t e0, e1;
                CK(cudaEventCreate(&e0));
                CK(cudaEventCreate(&e1));
                for (int it = 0; it < 20; ++it) {
                    CK(cudaMemsetAsync(flush, it, flush_n));
                    CK(cudaEventRecord(e0));
                    launch(which, s, bu);
                    CK(cudaEventRecord(e1));
                    sync_watchdog(kname[which]);
                    float m;
                    CK(cudaEventElapsedTime(&m, e0, e1));
                    ms.push_back(m);
                }
                CK(cudaEventDestroy(e0));
                CK(cudaEventDestroy(e1));
                std::sort(ms.begin(), ms.end());
                res.us[which] = ms[ms.size() / 2] * 1e3f;
            }
            results.push_back(res);
            printf("TIME %-44s grouped %9.2f us %6.1f TFLOP/s | tiled %9.2f us %6.1f TFLOP/s | speed-up %.2fx | "
                   "tiled2w %9.2f us %6.1f TFLOP/s\n",
                   name.c_str(), res.us[0], res.nominal / res.us[0] / 1e6, res.us[1], res.nominal / res.us[1] / 1e6,
                   res.us[0] / res.us[1], res.us[2], res.nominal / res.us[2] / 1e6);
            fflush(stdout);
        }
        cudaFree(bu.q); cudaFree(bu.k); cudaFree(bu.v); cudaFree(bu.o); cudaFree(bu.gs); cudaFree(bu.gw);
        cudaFree(bu.ind); cudaFree(bu.cnt);
    }
    if (!results.empty()) {
        printf("\n| shape | G | grouped µs | grouped TFLOP/s | tiled µs | tiled TFLOP/s | speed-up | tiled 2-warp µs |\n");
        printf("|---|---|---|---|---|---|---|---|\n");
        for (auto& r : results) {
            int hq = 0, h = 0;
            sscanf(strstr(r.name.c_str(), "_hq"), "_hq%d_h%d", &hq, &h);
            printf("| %s | %d | %.2f | %.1f | %.2f | %.1f | %.2fx | %.2f |\n", r.name.c_str(), hq / h, r.us[0],
                   r.nominal / r.us[0] / 1e6, r.us[1], r.nominal / r.us[1] / 1e6, r.us[0] / r.us[1], r.us[2]);
        }
    }
    printf("\n%s: %d check(s) failed\n", fails ? "FAILURES" : "ALL CHECKS PASSED", fails);
    return fails ? 1 : 0;
}
