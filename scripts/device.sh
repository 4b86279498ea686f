#!/usr/bin/env bash
# Runs on the GPU machine from the repo root, with the stripped test binary in .devbin/.
# Usage: scripts/device.sh MODE   (MODE: check | baselines | calibrate)
# Everything that must come back is written under $OUT (results, baselines, logs).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
BIN=.devbin/kernels
export KERNELGATE_RESULTS_DIR=${KERNELGATE_RESULTS_DIR:-$OUT/results} KERNELGATE_CACHE_DIR=/tmp/kgcache
log() { echo "== $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/log.txt"
case "${1:-check}" in
  check)
    log "smoke"; KERNELGATE_SUITE=smoke $BIN --test-threads 1 2>&1 | tee -a "$OUT/log.txt" | tail -30
    log "default"; KERNELGATE_SUITE=default $BIN 2>&1 | tee -a "$OUT/log.txt" | tail -45
    ;;
  baselines)
    for s in ${SUITES:-default}; do
      log "update $s"; UPDATE_BASELINES=1 KERNELGATE_BASELINE_DIR=$OUT/baselines KERNELGATE_SUITE=$s $BIN 2>&1 | tee -a "$OUT/log.txt" | tail -45
      for i in $(seq 1 ${APPEND_RUNS:-0}); do
        log "append $s run $i"; UPDATE_BASELINES=append KERNELGATE_BASELINE_DIR=$OUT/baselines KERNELGATE_SUITE=$s $BIN 2>&1 | tee -a "$OUT/log.txt" | grep "test result"
      done
      for i in $(seq 1 ${GATE_RUNS:-1}); do
        log "gate $s run $i"; KERNELGATE_BASELINE_DIR=$OUT/baselines KERNELGATE_SUITE=$s $BIN 2>&1 | tee -a "$OUT/log.txt" | grep -E "test result|REGRESSION|WRONG" | head
      done
    done
    ;;
  calibrate)
    export KERNELGATE_SUITE=calibration KERNELGATE_BASELINE_DIR=$OUT/baselines
    log "fresh calibration baselines"; UPDATE_BASELINES=1 $BIN 2>&1 | grep "test result" | tee -a "$OUT/log.txt"
    for i in $(seq 1 ${RUNS:-20}); do
      r=$($BIN 2>&1 | grep "test result"); echo "unchanged run $i: $r" | tee -a "$OUT/calibration.txt"
    done
    for sc in 1.10 1.03; do
      for i in $(seq 1 ${SCALED_RUNS:-5}); do
        r=$(KERNELGATE_SPIN_SCALE=$sc $BIN 2>&1 | grep "test result"); echo "scale $sc run $i: $r" | tee -a "$OUT/calibration.txt"
      done
    done
    ;;
  final)
    # Baselines for the torch cases of the default suite, then a gate run of the whole suite.
    rm -rf /tmp/kgb && cp -r baselines /tmp/kgb && export KERNELGATE_BASELINE_DIR=/tmp/kgb KERNELGATE_RESULTS_DIR=/tmp/res
    log "append torch baselines"; UPDATE_BASELINES=append timeout ${APPEND_S:-240} $BIN ::torch:: 2>&1 | tee -a "$OUT/log.txt" | grep -E "test result|FAILED|WRONG|panicked" | head -40
    log "gate default"; timeout ${GATE_S:-240} $BIN 2>&1 | tee -a "$OUT/log.txt" | grep -vE "^test .* ok$" | tail -150
    cp "$(ls -t /tmp/res/default-* | head -1)" "$OUT/default-results.json"
    tar -C /tmp/kgb -cf "$OUT/baselines.tar" .
    ;;
  recheck)
    # Re-check a few cases after a fix: append baselines for them, then gate them.
    rm -rf /tmp/kgb && cp -r baselines /tmp/kgb && export KERNELGATE_BASELINE_DIR=/tmp/kgb KERNELGATE_RESULTS_DIR=/tmp/res
    for f in $FILTERS; do
      log "append $f"; UPDATE_BASELINES=append $BIN $f 2>&1 | tee -a "$OUT/log.txt" | grep -E "test result|WRONG|FAILED" | head
      log "gate $f"; $BIN $f 2>&1 | tee -a "$OUT/log.txt" | grep -vE "^test .* ok$" | tail -12
    done
    tar -C /tmp/kgb -cf "$OUT/baselines.tar" .
    ;;
  faults)
    export KERNELGATE_SUITE=calibration KERNELGATE_BASELINE_DIR=/tmp/nobase
    log "fault in spin us10, the others must pass"; KERNELGATE_SPIN_FAULT=10 $BIN 2>&1 | grep -E "^test |ILLEGAL|error|test result" | tee -a "$OUT/log.txt"
    log "hang: every spin 3000x longer, hang limit 2 s"; KERNELGATE_HANG_S=2 KERNELGATE_SPIN_SCALE=3000 $BIN 2>&1 | grep -E "^test |did not finish|unusable|test result" | tee -a "$OUT/log.txt"
    log "torch worker missing: KERNELGATE_PYTHON=/nonexistent"; KERNELGATE_PYTHON=/nonexistent KERNELGATE_SUITE=torch_check $BIN torch 2>&1 | grep -E "^test |test result" | head -4 | tee -a "$OUT/log.txt"
    ;;
esac
