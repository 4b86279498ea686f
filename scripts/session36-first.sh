#!/usr/bin/env bash
# Session 36, a fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS).
# - H200: the owed gate of session 35's skewed GEMM tail (scripts/session35-gate.sh with AB=0:
#   the gemm cases of default, gemm and gemm_edges against the committed baselines, whose H200
#   gemm_wgmma entries timed session 34's kernel; the dev bench's checks; gemm-table.md), then
#   with MAIN=1 the README's main command.
# - H100: with H100=main the README's main command (scripts/session33-main.sh; the fourth
#   request ran it), with H100=halves scripts/session36-halves.sh (the 2048^3 tail A/B), with
#   H100=modes scripts/session36-modes.sh (2048x512x4096's two modes under every tile), with
#   H100=n2 scripts/session36-n2.sh (the pick's 128x64_n2 there, then the gemm gate; N2=1 runs
#   it on an H200 too, in place of the plain gate), with H100=batch scripts/session36-batch.sh
#   (the gemm suite with ours and cuBLAS timed alike),
#   otherwise stop at once (keep the device time for H200s).
# Under $OUT: log.txt, gate.tgz, gemm-table.md, bench-checks.txt (+ results-main.json, main.log).
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
  if [ "${N2:-0}" = 1 ]; then bash scripts/session36-n2.sh; else AB=0 bash scripts/session35-gate.sh; fi
elif [ "${H100:-}" = main ]; then
  bash scripts/session33-main.sh
elif [ "${H100:-}" = halves ]; then
  bash scripts/session36-halves.sh
elif [ "${H100:-}" = modes ]; then
  bash scripts/session36-modes.sh
elif [ "${H100:-}" = n2 ]; then
  bash scripts/session36-n2.sh
elif [ "${H100:-}" = batch ]; then
  bash scripts/session36-batch.sh
else
  nvidia-smi --query-gpu=name,uuid --format=csv,noheader; echo "not an H200: stopping"
fi
