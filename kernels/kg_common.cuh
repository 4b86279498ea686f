// kernelgate common device code: the counter-based input generator.
// Must match src/inputs.rs bit for bit (see the Rust side for the contract).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned long long kg_fmix64(unsigned long long x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

__device__ __forceinline__ unsigned long long kg_hash(unsigned long long seed, unsigned int tensor, unsigned long long index) {
    unsigned long long key = kg_fmix64(seed ^ ((unsigned long long)tensor * 0x9e3779b97f4a7c15ULL));
    return kg_fmix64(key ^ (index * 0xbf58476d1ce4e5b9ULL));
}

// Uniform in [lo, hi): 24 random bits, exact conversion, explicitly rounded mul and add
// (no FMA contraction), so the CPU reproduces the same f32.
__device__ __forceinline__ float kg_input_value(unsigned long long seed, unsigned int tensor, unsigned long long index, float lo, float hi) {
    float u = (float)(unsigned int)(kg_hash(seed, tensor, index) >> 40) * (1.0f / 16777216.0f);
    float v = __fadd_rn(lo, __fmul_rn(__fsub_rn(hi, lo), u));
    // lo + span*u can round up to hi itself (e.g. [1, 2)): keep hi exclusive, as the CPU does.
    return (v >= hi && lo < hi) ? nextafterf(hi, lo) : v;
}

// Gate self-test (`kernelgate selftest`): compiled with -DKG_INJECT, a kernel that ends with
// KG_INJECT_EPILOGUE() makes its highest-numbered block (dispatched last, so among the last to
// finish) wait kg_inject_ns nanoseconds (a module global the harness writes before launching,
// so every delay shares one compiled module) on the global timer, so the launch ends about that much
// later while every other block runs exactly as before (no barrier, no atomic: a first version
// that counted finished blocks with one global atomic cost 37% on RMSNorm 65536x4096 by itself).
// Without the define the epilogue is empty and the kernel is unchanged.
#ifdef KG_INJECT
__device__ unsigned long long kg_inject_ns = 0;
__device__ __forceinline__ void kg_inject_epilogue() {
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0 && blockIdx.x == gridDim.x - 1 &&
        blockIdx.y == gridDim.y - 1 && blockIdx.z == gridDim.z - 1) {
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        } while (t - t0 < kg_inject_ns);
    }
}
#define KG_INJECT_EPILOGUE() kg_inject_epilogue()
#else
#define KG_INJECT_EPILOGUE() \
    do {                     \
    } while (0)
#endif
