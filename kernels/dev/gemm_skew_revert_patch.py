#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 35) back to the overlapped 128x256_ts path
without the skewed tail: every tile, the CTA's last included, runs all its K blocks in the main
loop with both consumer warpgroups in step (kmain = num_k, so the tail's branch is dead code).
The A/B control for the tail (scripts/ab-variants.sh, `old:kernels/dev/gemm_skew_revert_patch.py`).

gemm_skew_revert_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

skew = """const int kmain = (u + ncl >= units && num_k > STAGES) ? num_k - STAGES : num_k;"""
patch_file(sys.argv[1], [(skew, "const int kmain = num_k;")])
