#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_mtc.cu (session 42, A/B only): its 16-byte cp.async of B (and
of A's rows) carries the L2 prefetch-size hint .L2::256B, so that an L2 miss fetches the whole
256-byte block from DRAM. The same hint took the skinny-N GEMM's 8192x8x8192 from 62.4 to 53.6 us
on an H100 (kernels/dev/skinny_n_bench.cu); a warp of gemm_mtc reads 128 bytes of each of 4 rows
of B per cp.async.

mtc_prefetch_patch.py FILE. Exit status 1 if the pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

old = '"cp.async.cg.shared.global [%0], [%1], 16, %2;"'
new = '"cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;"'
patch_file(sys.argv[1], [(old, new)])
