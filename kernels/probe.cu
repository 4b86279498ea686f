// Machine probes: an empty kernel whose graph-replayed launches measure this machine's launch
// latency (one of the ceilings recorded with every run and baseline round).
extern "C" __global__ void kg_empty() {}

// Holds the stream for `ns` nanoseconds (global timer), launched just before a sample's start
// event: the host enqueues the event, the timed launches and the end event while the GPU is
// still busy here, so no host launch latency falls between the two events.
extern "C" __global__ void kg_hold(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

// Counts the non-finite (NaN/Inf: all exponent bits set) elements of a bf16/fp16
// (`elem_size` 2) or fp32 (4) buffer and finds the first one, on the device, so that an output
// too large to download is still scanned whole (the poisoned, unwritten elements included).
// out[0] += count, out[1] = min(out[1], first index). Launch with a multiple of 32 threads.
extern "C" __global__ void kg_nonfinite(const void* data, unsigned long long n,
                                        unsigned int elem_size, unsigned int exp_mask,
                                        unsigned long long* out) {
    unsigned long long count = 0, first = ~0ull;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        unsigned int bits = elem_size == 2 ? (unsigned int)((const unsigned short*)data)[i]
                                           : ((const unsigned int*)data)[i];
        if ((bits & exp_mask) == exp_mask) {
            count++;
            if (i < first) first = i;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        count += __shfl_down_sync(0xffffffffu, count, o);
        unsigned long long f = __shfl_down_sync(0xffffffffu, first, o);
        first = f < first ? f : first;
    }
    if ((threadIdx.x & 31) == 0 && count) {
        atomicAdd(&out[0], count);
        atomicMin(&out[1], first);
    }
}
