#!/usr/bin/env bash
# Session 24, last fresh machines: SUITES gated through the test binary (fresh-machine
# evidence with the dense-sample mode rule and the one-wave 128x64_n2 pick), then the gemm
# suite's m2048_n512_k4096 cases (their entries restarted with the new pick).
# Under $OUT: log.txt, bundle.tgz (results files and logs).
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s24f
. scripts/device-lib.sh
for s in ${SUITES:-default}; do suite "$s" KERNELGATE_SUITE="$s" .devbin/kernels; done
suite gemm-2048x512 KERNELGATE_SUITE=gemm .devbin/kernels m2048_n512_k4096
grep -hE "m2048_n512_k4096" "$DEV_TMP"/default.log "$DEV_TMP"/gemm-2048x512.log 2>/dev/null | grep -E "^gemm" | cut -c1-200 | tee -a "$DEV_LOG"
grep -h "two modes" "$DEV_TMP"/*.log | cut -c1-300 | tee -a "$DEV_LOG"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf bundle.tgz results-*.json *.log && rm -f results-*.json *.log )
ls -la "$OUT"
