#!/usr/bin/env bash
# Session 45 (repo root, .devbin/ carried): GW_LASTSTAGE2 (128x256_ts's last warpgroup stores the
# CTA's last tile from the freed ring) against the checkout's kernels, same-run pairs through the
# harness on 2048^3 and 4096^3 (scripts/suites/sq-2048-4096.json, cuBLAS beside), ROUNDS rounds
# (default 3) with an A/A control; then the 2048^3 / 4096^3 trace of both builds.
# The switch measured slower (docs/kernels/session45/README.md section 3) and was removed; it is in
# kernels/gemm_wgmma.cuh of commit 01e1157, the kernels this script ran against (check that file
# out first to run it again: gemm_define_patch.py refuses a file without the switch).
set -u
ROUNDS=${ROUNDS:-3} VARIANTS="ls2:kernels/dev/gemm_define_patch.py+GW_LASTSTAGE2=1 aa:-" \
  PATCH_FILE=gemm_wgmma.cuh bash scripts/ab-variants.sh
# (ab-variants.sh archives its runs as ab-runs.tar.gz itself; session 45 archived them a second
# time here, which overwrote that archive with an empty one: its run files are lost.)
if [ "${TRACE:-1}" = 1 ]; then
  BATCHES=0 TRACE_TAG=-base bash scripts/session45-trace.sh
  BATCHES=0 TRACE_TAG=-ls2 TRACE_DEFS=-DGW_LASTSTAGE2=1 bash scripts/session45-trace.sh
fi
