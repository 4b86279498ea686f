#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cuh (or the bench copy's gemm_wgmma.cu with it inlined),
session 48: the tile raster's group height GROUP_M (tile_coords: GROUP_M M tiles down, then the
next N tile, group after group; the checkout's 8).

Why: at 4096^3 our time moved by up to 2.6% from one process to the next on H200 c4771ab0
(176.5-181.1 us bf16, eight processes) while cuBLAS's stayed within 0.5% (177.9-178.8). With
128x256 tiles and GROUP_M = 8, the 132 tiles in flight read 8 MB of A and all 32 MB of B, which
then has to stay in the L2 (50-60 MB) beside C's lines for the next wave to hit it; a taller group
(16: 16 MB of A and 16.5 MB of B per wave, A reused by the next wave) asks less of the L2.

gemm_groupm_patch.py FILE N. Exit status 1 if the pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

n = int(sys.argv[2])
assert n >= 1
patch_file(sys.argv[1], [("constexpr int GROUP_M = 8;\n", f"constexpr int GROUP_M = {n};\n")])
