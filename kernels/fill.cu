// kernelgate input generation on the device: tensor[i] = kg_input_value(seed, tensor, i, lo, hi)
// rounded to the storage dtype (round to nearest even), grid-stride.
#include "kg_common.cuh"

#define KG_FILL(NAME, T, CONV)                                                                     \
    extern "C" __global__ void NAME(T* out, unsigned long long n, unsigned long long seed,         \
                                    unsigned int tensor, float lo, float hi) {                     \
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;                    \
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;     \
             i < n; i += stride) {                                                                 \
            out[i] = CONV(kg_input_value(seed, tensor, i, lo, hi));                                \
        }                                                                                          \
    }

KG_FILL(kg_fill_bf16, __nv_bfloat16, __float2bfloat16_rn)
KG_FILL(kg_fill_fp16, __half, __float2half_rn)
KG_FILL(kg_fill_fp32, float, )
