#!/usr/bin/env bash
# Session 35, one fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS): the skewed tail of
# the 128x256_ts overlapped path (its source hash moved, so every gemm_wgmma entry restarts on
# import).
# 1. GATE: scripts/session33-gate.sh with AB=0: the gemm cases of default, gemm and gemm_edges
#    through the CLI against the committed baselines (their gemm_wgmma entries timed the kernel
#    before the tail: `older code`), the dev bench's checks of every tile and shape, both dtypes,
#    and gemm-table.md (ours / cuBLAS).
# 2. AB=1: scripts/ab-variants.sh on scripts/suites/st35.json, the shipped kernel against `old`
#    (kernels/dev/gemm_skew_revert_patch.py: the unskewed loop, byte-identical to session 34's
#    entries) and `aa` (an unpatched copy: the pairing's own bias), ROUNDS rounds.
# 3. MAIN=1: the README's main command (scripts/session33-main.sh).
# Under $OUT: log.txt, gate.tgz, gemm-table.md, bench-checks.txt, and ab-table.md, ab-runs.tar.gz
# (AB=1), results-main.json, main.log (MAIN=1).
set -u
AB=0 bash scripts/session33-gate.sh
if [ "${AB:-0}" = 1 ]; then
  VARIANTS="aa:- old:kernels/dev/gemm_skew_revert_patch.py" SUITE=scripts/suites/st35.json \
    ROUNDS=${ROUNDS:-2} bash scripts/ab-variants.sh > /dev/null
fi
[ "${MAIN:-0}" = 1 ] && bash scripts/session33-main.sh
true
