"""What the dev trace patches (kernels/dev/gemm_trace_patch.py for session 34's kernel,
gemm_trace45_patch.py for session 44's) add to a copy of gemm_wgmma.cu alike: the per-CTA
record buffer the dev bench's -DGW_TRACE mode reads (8 words per CTA, see trace_report in
kernels/dev/gemm_wgmma_bench.cu), %globaltimer, and gw_record, which one thread calls at the
CTA's exit."""

# gw_record(entry globaltimer, entry clock64, PDL wait done, first full stage, last wgmma, last
# store issued): writes the CTA's 8 words (offsets from entry; exit time and %smid added here).
RECORD = """static __device__ __forceinline__ void gw_record(unsigned long long g0, long long c0,
                                                 long long c1, long long c2, long long c3,
                                                 long long c5) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    unsigned long long* tr = gw_trace + 8 * blockIdx.x;
    const long long c4 = clock64();
    tr[0] = g0;
    tr[1] = gw_gt();
    tr[2] = (unsigned long long)(c1 - c0);
    tr[3] = (unsigned long long)(c2 - c0);
    tr[4] = (unsigned long long)(c3 - c0);
    tr[5] = (unsigned long long)(c4 - c0);
    tr[6] = smid;
    tr[7] = (unsigned long long)(c5 - c0);
}
"""


def namespace_edit(patch):
    """The (old, new) edit that opens the detail namespace with the buffer, gw_gt and gw_record;
    `patch` names the patch file in the buffer's comment."""
    return (
        "namespace gemm_wgmma_detail {\n",
        f"""namespace gemm_wgmma_detail {{
// GW_TRACE: 8 words per CTA (see kernels/dev/{patch})
__device__ unsigned long long gw_trace[4096 * 8];
static __device__ __forceinline__ unsigned long long gw_gt() {{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}}
"""
        + RECORD,
    )
