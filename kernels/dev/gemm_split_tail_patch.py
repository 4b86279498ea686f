#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu as of session 34 (it refuses the kernel since the
skewed tail, which replaced its loop; `git show 5183653:kernels/gemm_wgmma.cu` is the file it
patched). Measured on H200 f3aff4cf (docs/kernels/session35), not shipped: in the overlapped
128x256_ts path, the CTA's last tile runs its last STAGES K blocks column half by half. Every one of those stages is
resident (nothing is loaded after them), so the consumer issues columns 0..127 of all of them
(m64n128k16 into d[0..63]), then columns 128..255 (d[64..127], B's descriptor two 64-column
boxes on), waits for the first half only, and stages and stores boxes 0 and 1 while the second
half's wgmmas run. Only boxes 2 and 3 are left after the last MMA: half the write-out that every
CTA of a one-wave grid (2048^3: 128 CTAs, one tile each) issues at the same moment.

An m64n128 wgmma on the upper half of the m64n256 accumulators makes ptxas serialize every wgmma
of the entry (C7511, insufficient register resources), so the whole overlapped path issues each
k16 step as two m64n128k16 (columns 0..127, then 128..255) instead of one m64n256k16: each
warpgroup reads its A slice twice, as cuBLAS's 256x128 coopA kernel does.

gemm_split_tail_patch.py FILE [pairs|tail]: `pairs` makes only that change (the control for the
tail), `tail` (default) both. Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

ops = ", ".join(f'"+f"(d[O + {i}])' for i in range(64))
helper_old = """static __device__ __forceinline__ void wgmma_fence() {"""
helper_new = (
    """// Columns 64H*2 .. 64H*2 + 127 of an m64n256 accumulator (d[64H .. 64H + 63]: the register
// layout of m64n128 is the first half of m64n256's) as one m64n128k16.
template <bool BF16, int H>
static __device__ __forceinline__ void wgmma_half(float (&d)[128], unsigned long long da,
                                                  unsigned long long db) {
    constexpr int O = 64 * H;
    if constexpr (BF16) {
        asm volatile(GW_WGMMA_ASM_N128("bf16") : """
    + ops
    + """ : "l"(da), "l"(db), "r"(1));
    } else {
        asm volatile(GW_WGMMA_ASM_N128("f16") : """
    + ops
    + """ : "l"(da), "l"(db), "r"(1));
    }
}

static __device__ __forceinline__ void wgmma_fence() {"""
)

loop_old = """#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
                    for (int kb = 0; kb < num_k; ++kb, ++it) {"""
loop_new = """#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) d[i] = 0.0f;
                    // the CTA's last tile: its last STAGES blocks go column half by half (tail)
                    const int kmain = (u + ncl >= units && num_k >= STAGES) ? num_k - STAGES : num_k;
                    for (int kb = 0; kb < kmain; ++kb, ++it) {"""

tail_old = """                    wgmma_wait<0>();
                    if (num_k > 0 && leader) release((it - 1) % STAGES);
                    while (nbox < 4) store_next();  // K shorter than four blocks"""
tail_new = """                    if (kmain < num_k) {
                        while (nbox < 4) store_next();  // the previous tile, if still pending
                        const unsigned it0 = it;
#pragma unroll
                        for (int j = 0; j < STAGES; ++j) {
                            const unsigned s = (it0 + j) % STAGES;
                            mbar_wait(GW_FULL(s), ((it0 + j) / STAGES) & 1u);
                            const unsigned a_s = a_base + s * A_STAGE_BYTES + cw * (64 * 128);
                            const unsigned b_s = b_base + s * B_STAGE_BYTES;
                            wgmma_fence();
#pragma unroll
                            for (int kk = 0; kk < BK / 16; ++kk)
                                wgmma_half<BF16, 0>(d, make_desc(a_s + kk * 32, 16, 1024),
                                                    make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO));
                            wgmma_commit();
                            if (j == 0) {
                                wgmma_wait<1>();
                                if (kmain > 0 && leader) release((it0 - 1) % STAGES);
                            }
                        }
#pragma unroll
                        for (int j = 0; j < STAGES; ++j) {
                            const unsigned s = (it0 + j) % STAGES;
                            const unsigned a_s = a_base + s * A_STAGE_BYTES + cw * (64 * 128);
                            const unsigned b_s = b_base + s * B_STAGE_BYTES + 2 * B_BOX_BYTES;
                            wgmma_fence();
#pragma unroll
                            for (int kk = 0; kk < BK / 16; ++kk)
                                wgmma_half<BF16, 1>(d, make_desc(a_s + kk * 32, 16, 1024),
                                                    make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO));
                            wgmma_commit();
                        }
                        wgmma_wait<STAGES>();  // columns 0..127 final
                        ptm = tm;
                        ptn = tn;
#pragma unroll
                        for (int j = 0; j < 2; ++j)
#pragma unroll
                            for (int q = 0; q < 4; ++q) {
                                const int b = 8 * j + 2 * q;
                                pk[16 * j + 4 * q + 0] = pack2_bits<T>(d[4 * b + 0], d[4 * b + 1]);
                                pk[16 * j + 4 * q + 1] = pack2_bits<T>(d[4 * b + 2], d[4 * b + 3]);
                                pk[16 * j + 4 * q + 2] = pack2_bits<T>(d[4 * b + 4], d[4 * b + 5]);
                                pk[16 * j + 4 * q + 3] = pack2_bits<T>(d[4 * b + 6], d[4 * b + 7]);
                            }
                        store_box(0);
                        store_box(1);
                        wgmma_wait<0>();
                        if (leader)
                            for (int j = 0; j < STAGES; ++j) release((it0 + j) % STAGES);
                        it += STAGES;
#pragma unroll
                        for (int j = 2; j < 4; ++j)
#pragma unroll
                            for (int q = 0; q < 4; ++q) {
                                const int b = 8 * j + 2 * q;
                                pk[16 * j + 4 * q + 0] = pack2_bits<T>(d[4 * b + 0], d[4 * b + 1]);
                                pk[16 * j + 4 * q + 1] = pack2_bits<T>(d[4 * b + 2], d[4 * b + 3]);
                                pk[16 * j + 4 * q + 2] = pack2_bits<T>(d[4 * b + 4], d[4 * b + 5]);
                                pk[16 * j + 4 * q + 3] = pack2_bits<T>(d[4 * b + 6], d[4 * b + 7]);
                            }
                        store_box(2);
                        store_box(3);
                        nbox = 4;
                        break;  // the CTA's last tile
                    }
                    wgmma_wait<0>();
                    if (num_k > 0 && leader) release((it - 1) % STAGES);
                    while (nbox < 4) store_next();  // K shorter than four blocks"""
pair_old = """                        for (int kk = 0; kk < BK / 16; ++kk) {
                            const unsigned long long da = make_desc(a_s + kk * 32, 16, 1024);
                            const unsigned long long db =
                                make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO);
                            wgmma_tile<BF16, BN>(d, da, db);
                        }"""
pair_new = """                        for (int kk = 0; kk < BK / 16; ++kk) {
                            const unsigned long long da = make_desc(a_s + kk * 32, 16, 1024);
                            wgmma_half<BF16, 0>(d, da, make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO));
                            wgmma_half<BF16, 1>(d, da, make_desc(b_s + 2 * B_BOX_BYTES + kk * 2048,
                                                                 B_DESC_LBO, B_DESC_SBO));
                        }"""
mode = sys.argv[2] if len(sys.argv) > 2 else "tail"
if mode not in ("pairs", "tail"):
    sys.exit(f"mode {mode!r}: pairs or tail")
edits = [(helper_old, helper_new), (pair_old, pair_new)]
if mode == "tail":
    edits += [(loop_old, loop_new), (tail_old, tail_new)]
patch_file(sys.argv[1], edits)
