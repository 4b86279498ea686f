#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu with gemm_wgmma.cuh inlined (scripts/device-lib.sh's
bench_copy; session 45's lead) with a TMA-store 128x192 tile on the overlapped epilogue and the
skewed tail of 128x256_ts: the overlapped body's condition takes BN = 192 with two consumer
warpgroups (three 64-column boxes a warpgroup, one staging box each: 5 stages of 40 KiB leave no
room for two), and entries gemm_wgmma_{bf16,f16}_128x192_ts (223,232 B of dynamic smem, the
192x192_ts size). The bench copy beside it (dev/gemm_wgmma_bench.cu) gets the tile as a
`128x192_ts` row of REG_TILES, timed and checked beside the others, never the pick.

Why: on long-K shapes whose 192x192 tiles fill whole waves, 192x192_ts ran 5.7-6.7% faster
than the pick's 128x192 (register epilogue, no overlap), and the pick's linear cost model cannot
separate the two (docs/kernels/session45/README.md section 4). A 128x192 with 192x192_ts's
epilogue would show whether the gap is the epilogue.

gemm_128x192_ts_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import os
import sys

from patchlib import patch_file

path = sys.argv[1]
patch_file(path, [
    ("""                       (BN == 192 && NC == 3 && CL == 1 && GW_OVL3))) {""",
     """                       (BN == 192 && NC == 3 && CL == 1 && GW_OVL3) ||
                       (BN == 192 && NC == 2 && CL == 1))) {"""),
    ("""GW_ENTRY_TS(gemm_wgmma_f16_192x192_ts, __half, false, Cfg192x192)
""",
     """GW_ENTRY_TS(gemm_wgmma_f16_192x192_ts, __half, false, Cfg192x192)
GW_ENTRY_TS(gemm_wgmma_bf16_128x192_ts, __nv_bfloat16, true, Cfg128x192)
GW_ENTRY_TS(gemm_wgmma_f16_128x192_ts, __half, false, Cfg128x192)
"""),
])
bench = os.path.join(os.path.dirname(path), "dev", "gemm_wgmma_bench.cu")
if os.path.exists(bench):
    patch_file(bench, [
        ("""    {"192x192_regs", 192, 192, 4, 1, 860, 8000, 1, false, (const void*)gemm_wgmma_bf16_192x192, (const void*)gemm_wgmma_f16_192x192},
};""",
         """    {"192x192_regs", 192, 192, 4, 1, 860, 8000, 1, false, (const void*)gemm_wgmma_bf16_192x192, (const void*)gemm_wgmma_f16_192x192},
    {"128x192_ts", 128, 192, 5, 1, 575, 7200, 1, false, (const void*)gemm_wgmma_bf16_128x192_ts, (const void*)gemm_wgmma_f16_128x192_ts, true},
};"""),
    ])
