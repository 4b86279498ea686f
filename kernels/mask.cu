// kernelgate input masking on the device: after the uniform fill, the first `lead` and the last
// `pad` columns of every row of `row` elements are set to -inf (vocabulary padding, masked
// logits). The CPU reference applies the same mask (src/inputs.rs, ColMask). Grid-stride over
// the masked elements only: rows * (lead + pad) of them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define KG_MASK(NAME, T, NEG_INF)                                                                  \
    extern "C" __global__ void NAME(T* x, unsigned long long rows, unsigned long long row,         \
                                    unsigned long long lead, unsigned long long pad) {             \
        const unsigned long long per = lead + pad;                                                 \
        const unsigned long long n = rows * per;                                                   \
        const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;              \
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;     \
             i < n; i += stride) {                                                                 \
            const unsigned long long r = i / per, k = i - r * per;                                 \
            const unsigned long long col = k < lead ? k : row - pad + (k - lead);                  \
            x[r * row + col] = NEG_INF;                                                            \
        }                                                                                          \
    }

KG_MASK(kg_mask_cols_bf16, __nv_bfloat16, __ushort_as_bfloat16((unsigned short)0xff80))
KG_MASK(kg_mask_cols_fp16, __half, __ushort_as_half((unsigned short)0xfc00))
KG_MASK(kg_mask_cols_fp32, float, __int_as_float(0xff800000))
