#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cuh (or the bench copy's gemm_wgmma.cu with it inlined),
session 48: the producer staggers its first STAGES loads by time. Stage j (0 < j < STAGES) of the
CTA's first round is issued no sooner than j * GW_STAGGER cycles after stage 0 (a clock64 spin of
the producer thread); later rounds are unchanged. Build with -DGW_STAGGER=N (default 0: the
checkout's code path, the spin compiled out).

Why: at 2048^3 the first stage lands about 3,100 cycles after CTA entry after the harness's read
sweep and 2,500 with a warm L2 (session 34), while a stage streams in about 770 cycles at 64 B a
cycle; all four stages' boxes are requested at once and their bytes interleave, so stage 0
completes about when all of them would. Session 34's gemm_first_stage_patch.py held stage 1 until
stage 0 had landed: the first stage came 400 cycles sooner but stage 1 as much later. A fixed
spacing in between lets stage 0 arrive alone and keeps the later stages ahead of the tensor pipe.

gemm_stagger_patch.py FILE [N]: N sets GW_STAGGER's default in the patched file (for the harness's
NVRTC builds, e.g. through scripts/ab-variants.sh). Exit status 1 if a pattern is missing."""
import sys

from patchlib import patch_file

default = int(sys.argv[2]) if len(sys.argv) > 2 else 0
patch_file(sys.argv[1], [
    ("""namespace gemm_wgmma_detail {
""", f"""#ifndef GW_STAGGER
#define GW_STAGGER {default}
#endif
namespace gemm_wgmma_detail {{
"""),
    ("""            unsigned it = 0;
            for (int u = cid; u < units; u += ncl) {
                const int t = u % num_tiles;""",
     """            unsigned it = 0;
            long long stagger_t0 = 0;  // GW_STAGGER: when stage 0 was issued
            for (int u = cid; u < units; u += ncl) {
                const int t = u % num_tiles;"""),
    ("""                    const unsigned fb = GW_FULL(s);
                    mbar_wait(GW_EMPTY(s), ph ^ 1u);
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);""",
     """                    const unsigned fb = GW_FULL(s);
                    if constexpr (GW_STAGGER > 0) {
                        if (it == 0) {
                            stagger_t0 = clock64();
                        } else if (it < (unsigned)STAGES) {
                            while (clock64() - stagger_t0 < (long long)it * GW_STAGGER) {
                            }
                        }
                    }
                    mbar_wait(GW_EMPTY(s), ph ^ 1u);
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);"""),
])
