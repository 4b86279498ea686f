#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 34): the producer issues only the first N
stages of its first tile, waits until stage 0 has landed, and only then issues the rest, so that
the first stage of every CTA does not share the L2 -> SM fabric with the CTAs' later stages at
kernel start (the dev trace at 2048^3 after the read sweep: the first stage lands about 3,300
cycles after entry, 10% of a one-tile CTA's life). The producer is the only one who refills a
stage, so stage 0's full barrier cannot pass phase 0 before this wait returns.

gemm_first_stage_patch.py FILE N (N >= 1). Exit status 1 if the pattern is missing."""
import sys

from patchlib import patch_file

n = int(sys.argv[2])
assert n >= 1
old = """                    mbar_wait(GW_EMPTY(s), ph ^ 1u);
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);"""
new = f"""                    if (it == {n}u) mbar_wait(GW_FULL(0), 0u);
                    mbar_wait(GW_EMPTY(s), ph ^ 1u);
                    mbar_arrive_expect_tx(fb, STAGE_BYTES);"""
patch_file(sys.argv[1], [(old, new)])
