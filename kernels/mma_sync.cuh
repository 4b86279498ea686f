// kernelgate: the mma.sync helpers shared by the NSA kernels (nsa.cu, nsa_tiled.cu,
// nsa_local.cu, nsa_pairs.cu).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

// The storage dtype's m16n8k16 MMA (fp32 accumulators), packing and conversion.
#define KG_MMA_OPS(T, PTX, PACK2, TOF)                                                                  \
    template <> struct KgMma<T> {                                                                       \
        static __device__ __forceinline__ void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) { \
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PTX "." PTX                          \
                         ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                \
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                               \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));               \
        }                                                                                               \
        static __device__ __forceinline__ unsigned pack(float lo, float hi) {                           \
            auto v = PACK2(lo, hi);                                                                     \
            return *reinterpret_cast<unsigned*>(&v);                                                    \
        }                                                                                               \
        static __device__ __forceinline__ float2 unpack(unsigned w) {                                   \
            const T* h = reinterpret_cast<const T*>(&w);                                                \
            return make_float2(TOF(h[0]), TOF(h[1]));                                                   \
        }                                                                                               \
        static __device__ __forceinline__ float to_float(T x) { return TOF(x); }                       \
    };
template <typename T> struct KgMma;
KG_MMA_OPS(__nv_bfloat16, "bf16", __floats2bfloat162_rn, __bfloat162float)
KG_MMA_OPS(__half, "f16", __floats2half2_rn, __half2float)
#undef KG_MMA_OPS

// 2^x, approximate (2 ulp); 2^-inf = +0.
__device__ __forceinline__ float kg_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
