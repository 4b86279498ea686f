#!/usr/bin/env bash
# Session 36, a fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS).
# - H200: the owed gate of session 35's skewed GEMM tail (scripts/session35-gate.sh with AB=0:
#   the gemm cases of default, gemm and gemm_edges against the committed baselines, whose H200
#   gemm_wgmma entries timed session 34's kernel; the dev bench's checks; gemm-table.md), then
#   with MAIN=1 the README's main command.
# - H100: the same gemm gate without the main command (another fresh H100 for issue 12's
#   squares, 2048^3 above all).
# Under $OUT: log.txt, gate.tgz, gemm-table.md, bench-checks.txt (+ results-main.json, main.log).
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
  AB=0 bash scripts/session35-gate.sh
else
  AB=0 MAIN=0 bash scripts/session35-gate.sh
fi
