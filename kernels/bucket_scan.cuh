// kernelgate: the bucket scan shared by the NSA pair-bucketing kernels (nsa_local.cu,
// nsa_pairs.cu).
#pragma once

// Bucket starts and tile starts of `nb` buckets of count[j] entries each, cut into tiles of `rows`
// entries: thread tid sums a run of `seg` buckets, then an exclusive scan of the runs' sums over
// the NT threads of the block (warp shuffles, then the warps' totals by warp 0, through `wsum`).
// On return [j0, j1) is the thread's run of buckets, and be and bt the first entry and the first
// tile of bucket j0. Every thread of the block must call it (it synchronises the block).
template <int NT>
__device__ __forceinline__ void kg_bucket_scan(const int* count, int nb, int rows, int (&wsum)[2][NT / 32],
                                               int tid, int lane, int warp, int& j0, int& j1, int& be,
                                               int& bt) {
    const int seg = (nb + NT - 1) / NT;
    j0 = min(nb, tid * seg);
    j1 = min(nb, j0 + seg);
    int se = 0, st = 0;
    for (int j = j0; j < j1; ++j) {
        se += count[j];
        st += (count[j] + rows - 1) / rows;
    }
    int ie = se, it = st;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int a = __shfl_up_sync(0xffffffffu, ie, o), d = __shfl_up_sync(0xffffffffu, it, o);
        if (lane >= o) {
            ie += a;
            it += d;
        }
    }
    if (lane == 31) {
        wsum[0][warp] = ie;
        wsum[1][warp] = it;
    }
    __syncthreads();
    if (warp == 0) {
        const bool in = lane < NT / 32;
        const int a = in ? wsum[0][lane] : 0, d = in ? wsum[1][lane] : 0;
        int xa = a, xd = d;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int pa = __shfl_up_sync(0xffffffffu, xa, o), pd = __shfl_up_sync(0xffffffffu, xd, o);
            if (lane >= o) {
                xa += pa;
                xd += pd;
            }
        }
        if (in) {
            wsum[0][lane] = xa - a;  // exclusive prefix of the warps before
            wsum[1][lane] = xd - d;
        }
    }
    __syncthreads();
    be = wsum[0][warp] + ie - se;
    bt = wsum[1][warp] + it - st;
}
