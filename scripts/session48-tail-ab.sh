#!/usr/bin/env bash
# Session 48 (repo root, .devbin/ carried): the harness A/B (scripts/ab-variants.sh, same-run
# pairs against the checkout's kernels, cuBLAS beside, an A/A control) of
#   tail: kernels/dev/gemm_nsplit_patch.py with GW_NSPLIT_MAIN=0 (the 256-column tiles' skewed
#         tail issues m64n128 halves and stores the first half's boxes while the second runs;
#         the main loop keeps its m64n256 wgmmas);
#   both: that and kernels/dev/gemm_stagger_patch.py 1100 (the first four stages' loads 1,100
#         cycles apart);
# on SUITE (default scripts/suites/sq-2048-4096.json), ROUNDS rounds (default 4). VARIANTS
# overrides the list (the second run: "tail:... aa:-" alone, since `both` serialized its wgmmas
# and ran 10-16% slow, and a run after it read the tail about 3% worse than one after the tail
# or the A/A control).
# Under $OUT: log.txt, ab-table.md, ab-runs.tar.gz.
set -u
ROUNDS=${ROUNDS:-4} PATCH_FILE=gemm_wgmma.cuh \
  VARIANTS=${VARIANTS:-"tail:kernels/dev/gemm_nsplit_patch.py+GW_NSPLIT_MAIN=0 both:kernels/dev/gemm_nsplit_patch.py+GW_NSPLIT_MAIN=0,kernels/dev/gemm_stagger_patch.py+1100 aa:-"} \
  bash scripts/ab-variants.sh
