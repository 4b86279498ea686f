#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (the bench copy, gemm_wgmma.cuh inlined) and the dev
bench beside it (DIR/dev/gemm_wgmma_bench.cu), session 48: 64-row cluster tiles, the shape
cuBLAS picks on mid-size shapes (session 43's names: nvjet ..._128x64_64x8_1x2_h, 64 of our M
rows by 128 of our N columns, B shared by a 2-CTA cluster along M, 8 stages).
Session 47's trace put those shapes at the L2 -> SM rate (about 5.3 KB per cycle over the GPU):
a 64x128 CTA with B multicast loads 16 KB per K block for 1 MFLOP, against 24 KB for 2 MFLOP
with our 128x64 / 128x128 tiles. Adds, timed beside the others and never the pick (REG_TILES):
  64x128_c2     Cfg64x128 (4 stages, 2 CTAs per SM), B multicast over M pairs;
  64x128s8_c2   a 64x128 with 8 stages (1 CTA per SM), B multicast over M pairs;
  64x128s8      the same without the cluster (the control);
  64x256_c2     Cfg64x256 (5 stages), B multicast over M pairs.

gemm_c2small_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import os
import sys

from patchlib import patch_file

path = sys.argv[1]
patch_file(path, [
    ("typedef Cfg<1, 128, 4> Cfg64x128;\n",
     "typedef Cfg<1, 128, 4> Cfg64x128;\ntypedef Cfg<1, 128, 8> Cfg64x128s8;\n"),
    ("GW_ENTRY(gemm_wgmma_f16_64x128, __half, false, Cfg64x128, 2)\n",
     """GW_ENTRY(gemm_wgmma_f16_64x128, __half, false, Cfg64x128, 2)
GW_ENTRY(gemm_wgmma_bf16_64x128s8, __nv_bfloat16, true, Cfg64x128s8, 1)
GW_ENTRY(gemm_wgmma_f16_64x128s8, __half, false, Cfg64x128s8, 1)
"""),
    ("GW_ENTRY_C2(gemm_wgmma_f16_128x128_c2, __half, false, Cfg128x128)\n",
     "GW_ENTRY_C2(gemm_wgmma_f16_128x128_c2, __half, false, Cfg128x128)\n" + "".join(
         f"GW_ENTRY_C2(gemm_wgmma_{dt}_{name}, {ty}, {flag}, {cfg})\n"
         for name, cfg in (("64x128_c2", "Cfg64x128"), ("64x128s8_c2", "Cfg64x128s8"),
                           ("64x256_c2", "Cfg64x256"))
         for dt, ty, flag in (("bf16", "__nv_bfloat16", "true"), ("f16", "__half", "false")))),
])
bench = os.path.join(os.path.dirname(path), "dev", "gemm_wgmma_bench.cu")
rows = "".join(
    f'    {{"{n}", 64, {bn}, {st}, {cps}, 290, 5400, {cl}, false, (const void*)gemm_wgmma_bf16_{n}, (const void*)gemm_wgmma_f16_{n}}},\n'
    for n, bn, st, cps, cl in (("64x128s8", 128, 8, 1, 1), ("64x128_c2", 128, 4, 2, 2),
                               ("64x128s8_c2", 128, 8, 1, 2), ("64x256_c2", 256, 5, 1, 2)))
patch_file(bench, [
    ("static const TileCfg REG_TILES[] = {\n", "static const TileCfg REG_TILES[] = {\n" + rows),
])
