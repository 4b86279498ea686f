// kernelgate: the mma.sync helpers shared by the NSA kernels (nsa.cu, nsa_tiled.cu,
// nsa_local.cu, nsa_pairs.cu): the MMA, cp.async and ldmatrix wrappers, and the steps of a
// 16-row tile's online softmax over a 32-key chunk that nsa.cu and nsa_tiled.cu share.
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

// cp.async of 16 bytes (global -> shared, L2 only), its commit and wait.
__device__ __forceinline__ void kg_cp_async16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void kg_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void kg_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// ldmatrix x4 (four 8x8 b16 tiles), plain and transposed.
__device__ __forceinline__ void kg_ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}
__device__ __forceinline__ void kg_ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

// The two rows' maxima over the quad of lanes that holds them (an m16n8 accumulator row).
__device__ __forceinline__ void kg_quad_max(float& mx0, float& mx1) {
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
}

// O (ND m16n8 accumulators) rescaled by the rows' correction factors c0 (row g) and c1 (g + 8).
template <int ND> __device__ __forceinline__ void kg_scale_o(float (&o)[ND][4], float c0, float c1) {
#pragma unroll
    for (int n = 0; n < ND; ++n) {
        o[n][0] *= c0;
        o[n][1] *= c0;
        o[n][2] *= c1;
        o[n][3] *= c1;
    }
}

// O += P V over a 32-key chunk: P in A fragments (pa[k step]), V's 32 rows of D in shared
// memory at sV, 16-byte chunks XOR-swizzled by the row (chunk c of row r at c ^ (r & 7)).
template <typename T, int D>
__device__ __forceinline__ void kg_pv32(float (&o)[D / 8][4], const unsigned (&pa)[2][4], unsigned sV, int lane) {
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
#pragma unroll
        for (int np = 0; np < D / 16; ++np) {
            int key = 16 * ks + (lane & 7) + (((lane >> 3) & 1) << 3);
            int ch = 2 * np + (lane >> 4);
            unsigned b0, b1, b2, b3;
            kg_ldsm_x4_t(sV + (unsigned)(key * D + ((ch ^ (key & 7)) * 8)) * 2u, b0, b1, b2, b3);
            KgMma<T>::mma(o[2 * np], pa[ks], b0, b1);
            KgMma<T>::mma(o[2 * np + 1], pa[ks], b2, b3);
        }
    }
}

// acc += w · x, rows g (w0) and g + 8 (w1): a gated branch added to the output.
template <int ND>
__device__ __forceinline__ void kg_add_scaled(float (&acc)[ND][4], const float (&x)[ND][4], float w0, float w1) {
#pragma unroll
    for (int n = 0; n < ND; ++n) {
        acc[n][0] += w0 * x[n][0];
        acc[n][1] += w0 * x[n][1];
        acc[n][2] += w1 * x[n][2];
        acc[n][3] += w1 * x[n][3];
    }
}
