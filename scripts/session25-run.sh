#!/usr/bin/env bash
# Session 25, one fresh machine: SUITES gated through the test binary against the committed
# baselines (gate evidence for session 24's host-only rules: dense-sample modes, sharp lower
# modes, output-format resolution), then, with GEMM_MODES=1, scripts/session25-gemm-modes.sh.
# Under $OUT: log.txt, gate.tgz (results files and logs) and the modes script's files.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s25r
. scripts/device-lib.sh
for s in ${SUITES:-default}; do suite "$s" KERNELGATE_SUITE="$s" .devbin/kernels; done
grep -h "two modes" "$DEV_TMP"/*.log | cut -c1-300 | head -20 | tee -a "$DEV_LOG"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf gate.tgz results-*.json *.log && rm -f results-*.json *.log )
if [ "${GEMM_MODES:-0}" = 1 ]; then bash scripts/session25-gemm-modes.sh; fi
ls -la "$OUT"
