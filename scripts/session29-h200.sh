#!/usr/bin/env bash
# Session 29, one fresh H200 (repo root, .devbin/ carried): QUACK=1 the quack suite through the
# CLI (its largest cases need more than 78 GiB: why an H200 is asked for); SUITES (default
# "gemm gemm_edges nsa_irregular dsv3") gated through the test binary (scripts/session25-run.sh);
# then the cross-entropy probe (kernels/dev/run_ce_probe.sh: the read-only ceiling beside the
# computing row kernels at 4096 x 3072, cold / warm / in the harness's batch, same process).
# Under $OUT: log.txt, quack.json, gate.tgz, ce-probe.txt.
set -u
export OUT=${OUT:-/tmp/kgout}
(
  DEV_TMP=/tmp/s29q
  . scripts/device-lib.sh
  [ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
)
SUITES="${SUITES:-gemm gemm_edges nsa_irregular dsv3}" bash scripts/session25-run.sh
OUT_DIR=/tmp/ce_probe timeout 200 bash kernels/dev/run_ce_probe.sh > "$OUT/ce-probe.txt" 2>&1
echo "ce probe rc=$?" | tee -a "$OUT/log.txt"
grep -E "^==|read |ce/32/2 |xor/32/2 " "$OUT/ce-probe.txt" | head -20 | tee -a "$OUT/log.txt"
