#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 34): a hybrid epilogue for the 128x256
TMA-store tile. The dev trace at 2048^3 (one tile per CTA, after the read sweep) puts the
epilogue at about 4,000 of a CTA's 40,000 cycles, and limited by the store path: staging the
whole tile and issuing every store at once (gemm_lastbox_patch.py) only moved the time from the
issue into the drain. This sends the odd 64-column boxes (1 and 3) of each warpgroup's slab
straight from the registers with 16-byte stores (the GW_EPI16 path's quad transpose), while the
even boxes (0 and 2) go through the staging boxes and the TMA as before, each in its own
staging box (slot j / 2), so that no box waits for an earlier store's read. The two paths
(LSU stores and the TMA unit) then run side by side. Other tiles are unchanged.

Measured against the kernel before 5183653 (session 34's overlapped epilogue). After it the
128x256 TMA-store entries no longer run the body this patches (it still applies, to no effect
on them); kept as the record of the measurement.

gemm_hybrid_epi_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

old = """                for (int j = 0; j < BN / 64; ++j) {
                    // a multiple of EPI_NBUF boxes per tile: the column block gives the same
                    // sequence as the running count, without a loop-carried register
                    unsigned slot;
                    if constexpr ((BN / 64) % CF::EPI_NBUF == 0)
                        slot = (unsigned)j % CF::EPI_NBUF;
                    else
                        slot = ebox++ % CF::EPI_NBUF;"""
new = """                for (int j = 0; j < BN / 64; ++j) {
                    if (BN == 256 && (j & 1)) {
                        // hybrid: this box straight from the registers (32 columns at a time)
                        const int t = lane & 3;
                        const int qbase = lane & ~3;
#pragma unroll
                        for (int jj = 2 * j; jj < 2 * j + 2; ++jj) {
                            const int col = tn * BN + 32 * jj + 8 * t;
#pragma unroll
                            for (int h = 0; h < 2; ++h) {
                                unsigned p[4], o[4];
#pragma unroll
                                for (int q = 0; q < 4; ++q)
                                    p[q] = pack2_bits<T>(d[4 * (4 * jj + q) + 2 * h],
                                                         d[4 * (4 * jj + q) + 2 * h + 1]);
#pragma unroll
                                for (int r = 0; r < 4; ++r) {
                                    const unsigned v = __shfl_sync(0xffffffffu, sel4(p, (t - r) & 3),
                                                                   qbase | ((t + r) & 3));
                                    const int sl = (t + r) & 3;
#pragma unroll
                                    for (int q = 0; q < 4; ++q) o[q] = sl == q ? v : o[q];
                                }
                                const int row = row0 + 8 * h;
                                if (row < M && col < N)
                                    *reinterpret_cast<uint4*>(C + (size_t)row * N + col) =
                                        make_uint4(o[0], o[1], o[2], o[3]);
                            }
                        }
                        continue;
                    }
                    // a multiple of EPI_NBUF boxes per tile: the column block gives the same
                    // sequence as the running count, without a loop-carried register
                    unsigned slot;
                    if constexpr (BN == 256)
                        slot = (unsigned)(j >> 1) % CF::EPI_NBUF;
                    else if constexpr ((BN / 64) % CF::EPI_NBUF == 0)
                        slot = (unsigned)j % CF::EPI_NBUF;
                    else
                        slot = ebox++ % CF::EPI_NBUF;"""
patch_file(sys.argv[1], [(old, new)])
