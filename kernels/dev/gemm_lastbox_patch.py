#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 33, dev bench only): on the CTA's last work
unit the TMA-store epilogue stages the whole tile in the stage ring instead of the staging
boxes. Once both consumer warpgroups have finished their last wgmma (a barrier over the
consumers), every load into the ring has landed and been read, so each warpgroup writes all
its 64 x 64 boxes there (8 KiB apart from the ring's start, SW128 layout as before), meets its
own barrier once and its leader issues all the box stores back to back: no wait for a store's
read and two barriers per box. Where every CTA has one tile (2048^3 on 128x256) this is the
whole epilogue.

Written against the kernel before 5183653 (session 34's overlapped epilogue), where the 128x256
TMA-store tile ran this body; it does not apply to the kernel after it (the anchor is no longer
unique), and is kept as the record of session 33's measurement.

gemm_lastbox_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

old = """                const unsigned ebuf = epi_base + (unsigned)cw * (CF::EPI_NBUF * CF::EPI_BOX_BYTES);"""
new = """                static_assert(NC * (BN / 64) * CF::EPI_BOX_BYTES <= STAGES * STAGE_BYTES,
                              "the tile fits the stage ring");
                if (u + ncl >= units) {
                    named_bar_sync(1u + (unsigned)NC, 128u * NC);
                    const unsigned rbuf = a_base + (unsigned)cw * (BN / 64) * CF::EPI_BOX_BYTES;
                    const int rmi = lane >> 3;
                    const int rrow = warp * 16 + (rmi & 1) * 8 + (lane & 7);
#pragma unroll
                    for (int j = 0; j < BN / 64; ++j) {
#pragma unroll
                        for (int q = 0; q < 4; ++q) {
                            const int b = 8 * j + 2 * q;
                            const int chunk = 2 * q + (rmi >> 1);
                            stmatrix_x4(rbuf + (unsigned)j * CF::EPI_BOX_BYTES +
                                            (unsigned)rrow * 128u +
                                            ((unsigned)(chunk ^ (rrow & 7)) << 4),
                                        pack2_bits<T>(d[4 * b + 0], d[4 * b + 1]),
                                        pack2_bits<T>(d[4 * b + 2], d[4 * b + 3]),
                                        pack2_bits<T>(d[4 * b + 4], d[4 * b + 5]),
                                        pack2_bits<T>(d[4 * b + 6], d[4 * b + 7]));
                        }
                    }
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    named_bar_sync(1u + (unsigned)cw, 128u);
                    if (leader) {
#pragma unroll
                        for (int j = 0; j < BN / 64; ++j)
                            tma_store_2d(tmC, rbuf + (unsigned)j * CF::EPI_BOX_BYTES,
                                         tn * BN + 64 * j, tm * BM + cw * 64);
                        bulk_commit();
                    }
                    continue;
                }
                const unsigned ebuf = epi_base + (unsigned)cw * (CF::EPI_NBUF * CF::EPI_BOX_BYTES);"""
patch_file(sys.argv[1], [(old, new)])
