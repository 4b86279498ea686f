#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 35): in the overlapped 128x256_ts path, the
CTA's last tile runs its last STAGES K blocks warpgroup by warpgroup. Every one of those stages
is resident (nothing is loaded after them). Consumer warpgroup 0 issues all of them; warpgroup 1
first drains its own wgmmas and releases its last main-loop stage (without it the producer could
not load the tail's last stage: a deadlock), then waits at named barrier 3 until warpgroup 0 has
issued its tail and waited down to LEAD pending groups, and only then issues its own. The tensor
pipe so finishes warpgroup 0's rows about STAGES / 2 K blocks before the end, and warpgroup 0
stages and stores its four boxes while warpgroup 1's MMAs finish: half the write-out after the
last MMA, with the m64n256 main loop unchanged (gemm_split_tail_patch.py needed m64n128 pairs,
0.7% slower from 4096^3 on).

gemm_wg_skew_patch.py FILE [LEAD]: LEAD (0..STAGES, default STAGES: at once after issuing) is
warpgroup 0's wgmma_wait before it lets warpgroup 1 go. Exit status 1 if a pattern is missing."""
import sys

from patchlib import patch_file

lead = sys.argv[2] if len(sys.argv) > 2 else "STAGES"

helper_old = """static __device__ __forceinline__ void named_bar_sync(unsigned id, unsigned threads) {"""
helper_new = """static __device__ __forceinline__ void named_bar_arrive(unsigned id, unsigned threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
static __device__ __forceinline__ void named_bar_sync(unsigned id, unsigned threads) {"""

loop_old = """#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
                    for (int kb = 0; kb < num_k; ++kb, ++it) {"""
loop_new = """#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
                    // the CTA's last tile: its last STAGES blocks warpgroup by warpgroup (tail)
                    const int kmain = (u + ncl >= units && num_k > STAGES) ? num_k - STAGES : num_k;
                    for (int kb = 0; kb < kmain; ++kb, ++it) {"""

tail_old = """                    wgmma_wait<0>();
                    if (num_k > 0 && leader) release((it - 1) % STAGES);
                    while (nbox < 4) store_next();  // K shorter than four blocks"""
tail_new = (
    """                    if (kmain < num_k) {
                        if (cw == 1) {
                            wgmma_wait<0>();
                            if (leader) release((it - 1) % STAGES);
                            named_bar_sync(3u, 256u);  // warpgroup 0's tail issued
                        }
                        const unsigned it0 = it;
#pragma unroll
                        for (int j = 0; j < STAGES; ++j) {
                            const unsigned s = (it0 + j) % STAGES;
                            mbar_wait(GW_FULL(s), ((it0 + j) / STAGES) & 1u);
                            const unsigned a_s = a_base + s * A_STAGE_BYTES + cw * (64 * 128);
                            const unsigned b_s = b_base + s * B_STAGE_BYTES;
                            wgmma_fence();
#pragma unroll
                            for (int kk = 0; kk < BK / 16; ++kk) {
                                const unsigned long long da = make_desc(a_s + kk * 32, 16, 1024);
                                const unsigned long long db =
                                    make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO);
                                wgmma_tile<BF16, BN>(d, da, db);
                            }
                            wgmma_commit();
                            if (j == 0 && cw == 0) {
                                wgmma_wait<1>();
                                if (leader) release((it0 - 1) % STAGES);
                            }
                        }
                        if (cw == 0) {
                            wgmma_wait<"""
    + lead
    + """>();
                            named_bar_arrive(3u, 256u);
                        }
                        wgmma_wait<0>();
                        if (leader)
                            for (int j = 0; j < STAGES; ++j) release((it0 + j) % STAGES);
                        it += STAGES;
                        while (nbox < 4) store_next();  // the previous tile, if still pending
                    } else {
                        wgmma_wait<0>();
                        if (num_k > 0 && leader) release((it - 1) % STAGES);
                    }
                    while (nbox < 4) store_next();  // K shorter than four blocks"""
)
patch_file(sys.argv[1], [(helper_old, helper_new), (loop_old, loop_new), (tail_old, tail_new)])
