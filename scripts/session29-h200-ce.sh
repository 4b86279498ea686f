#!/usr/bin/env bash
# Session 29, one fresh H200 (repo root, .devbin/ carried, nvcc): QUACK=1 the quack suite (its
# largest cases need more than 78 GiB: why an H200 is asked for); then the cross-entropy probe
# with the harness's own L2 flush (kernels/dev/ce_probe.cu: read ceilings with ld.global.nc and
# with plain loads, the row layouts with both loads, the product's kernels) twice, the second time
# beside its pre-session-29 flush (--nc-flush); then SUITES (default "default") gated.
# Under $OUT: log.txt, quack.json, ce-probe-*.txt, gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
(
  DEV_TMP=/tmp/s29q
  . scripts/device-lib.sh
  [ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
  for f in "" --nc-flush ""; do
    n=$((${n:-0} + 1))
    OUT_DIR=/tmp/ce_probe timeout 200 bash kernels/dev/run_ce_probe.sh $f > "$OUT/ce-probe-$n.txt" 2>&1
    log "ce probe $n ($f) rc=$?"
    grep -E "^==|^  (read|readp|product|ce/32/2|cep/32/2|xor/32/2|xorp/32/2) " "$OUT/ce-probe-$n.txt" | cut -c1-150 | tee -a "$DEV_LOG"
  done
)
SUITES="${SUITES:-default}" bash scripts/session25-run.sh
