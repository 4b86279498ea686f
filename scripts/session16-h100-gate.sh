#!/usr/bin/env bash
# Session 16, a second fresh H100 (repo root, .devbin/ carried): the default suite and the gemm
# suite gated against the baselines in the tree, whose long gemm-suite entries hold one
# duty-held H100 round (GPU-f98a1c2a). The results are imported as rounds afterwards.
# Under $OUT: log-gate.txt, results-gate.json, results-gemmgate.json, logs.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/g2
export KERNELGATE_CACHE_DIR=/tmp/kgcache
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-gate.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log-gate.txt"
suite() {  # name, then the environment and arguments of the test binary
  local name=$1; shift
  local t0; t0=$(date +%s)
  env KERNELGATE_RESULTS_DIR=/tmp/g2/res-$name "$@" > /tmp/g2/$name.log 2>&1
  log "$name: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/g2/$name.log)"
  grep -E "^verdicts|^ambiguous|REGRESSION:|WRONG" /tmp/g2/$name.log | head -12 | cut -c1-260 | tee -a "$OUT/log-gate.txt"
  cp "$(ls -t /tmp/g2/res-$name/*.json | head -1)" "$OUT/results-$name.json" 2>/dev/null
}
suite gemmgate KERNELGATE_SUITE=gemm .devbin/kernels
python3 scripts/gemm-table.py "$OUT/results-gemmgate.json" | tail -3 | tee -a "$OUT/log-gate.txt"
suite gate KERNELGATE_SUITE=default .devbin/kernels
tar -C /tmp/g2 -czf "$OUT/logs.tar.gz" $(cd /tmp/g2 && ls *.log)
