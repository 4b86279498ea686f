#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu with gemm_wgmma.cuh inlined (scripts/device-lib.sh's
bench_copy) with the per-CTA timeline the dev bench's -DGW_TRACE mode reads (8 words per CTA,
see trace_report in kernels/dev/gemm_wgmma_bench.cu), for the session 44 code: 128x256_ts's
overlapped body with the skewed tail. The second consumer warpgroup's leader (thread 256, the
warpgroup that finishes last) records %globaltimer at entry and exit and clock64 offsets from
entry of: the PDL wait done, the first full stage seen, its last wgmma done (after the skewed
tail), its last store issued (before the TMA-store drain) and the exit (after it), with %smid.
Session 34's kernels/dev/gemm_trace_patch.py did the same for that session's code (thread 128).
It also applies after kernels/dev/gemm_nsplit_patch.py (session 48), stamping that split tail's
last wgmma.

gemm_trace45_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file
from trace_record import namespace_edit


edits = [
    namespace_edit("gemm_trace45_patch.py"),
    ("""    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(GW_FULL(s), 1);""",
     """    const unsigned long long gw_g0 = gw_gt();
    const long long gw_c0 = clock64();
    long long gw_c1 = 0, gw_c2 = 0, gw_c3 = 0;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(GW_FULL(s), 1);"""),
    ("""    pdl_launch_next();
    pdl_wait_previous();

    if (wg == 0) {""",
     """    pdl_launch_next();
    pdl_wait_previous();
    if (tid == 256) gw_c1 = clock64();

    if (wg == 0) {"""),
    ("""                        mbar_wait(GW_FULL(s), (it / STAGES) & 1u);
                        issue_block(s);
                        store_next();""",
     """                        mbar_wait(GW_FULL(s), (it / STAGES) & 1u);
                        if (it == 0 && tid == 256) gw_c2 = clock64();
                        issue_block(s);
                        store_next();"""),
    ("""                    while (nbox < NB) store_next();  // the CTA's last tile
                }
                if (leader) bulk_wait_all();
                return;""",
     """                    while (nbox < NB) store_next();  // the CTA's last tile
                }
                const long long gw_c5 = clock64();
                if (leader) bulk_wait_all();
                if (tid == 256) gw_record(gw_g0, gw_c0, gw_c1, gw_c2, gw_c3, gw_c5);
                return;"""),
]
# The skewed tail's last wgmma: the checkout's indentation, or one level deeper where
# gemm_nsplit_patch.py (session 48) put the split tail beside it, whose own last wgmma is stamped
# too.
text = open(sys.argv[1]).read()
for ind in (" " * 24, " " * 28):
    old = f"{ind}wgmma_wait<0>();\n{ind}if constexpr (last_ring) {{"
    if text.count(old) == 1:
        edits.append((old, f"{ind}wgmma_wait<0>();\n{ind}if (tid == 256) gw_c3 = clock64();\n"
                           f"{ind}if constexpr (last_ring) {{"))
        break
else:
    sys.exit(f"{sys.argv[1]}: no skewed tail's last wgmma_wait<0>() found")
SPLIT = """                            wgmma_wait<0>();
                            if (leader)
                                for (int j = 0; j < STAGES; ++j) release((it + j) % STAGES);
                            it += STAGES;"""
if text.count(SPLIT) == 1:
    edits.append((SPLIT, SPLIT.replace("wgmma_wait<0>();\n", "wgmma_wait<0>();\n" + " " * 28 +
                                       "if (tid == 256) gw_c3 = clock64();\n", 1)))
patch_file(sys.argv[1], edits)
