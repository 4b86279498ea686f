#!/usr/bin/env bash
# Session 48 (repo root, .devbin/ carried): the tile raster's group height through the harness
# (scripts/ab-variants.sh: same-run pairs against the checkout's GROUP_M = 8, cuBLAS beside, an
# A/A control), kernels/dev/gemm_groupm_patch.py with 16 and 4, on SUITE (default
# scripts/suites/sq-2048-4096.json), ROUNDS rounds (default 5): each round's runs are separate
# processes, so the spread of each variant's own times over the rounds shows how much it moves
# from one process to the next. Under $OUT: log.txt, ab-table.md, ab-runs.tar.gz.
set -u
ROUNDS=${ROUNDS:-5} PATCH_FILE=gemm_wgmma.cuh \
  VARIANTS=${VARIANTS:-"g16:kernels/dev/gemm_groupm_patch.py+16 g4:kernels/dev/gemm_groupm_patch.py+4 aa:-"} \
  bash scripts/ab-variants.sh
