#!/usr/bin/env bash
# One fresh machine's part after a GEMM kernel change: the dev skinny suite (correctness and
# same-run cuBLAS ratios, if .devbin/skinny.json is there), the default suite's gemm cases gated
# against the baselines in the tree, then UPDATE_BASELINES=append of the default suite's gemm
# cases and of the whole gemm suite into a copy of the baselines (APPEND_KERNELS: more families).
# Usage (GPU machine, repo root, .devbin carried): bash scripts/gemm-rounds.sh
# Returns under $OUT: log.txt, results-{skinny,gate,gemm}.json, baselines.tar (this model's).
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT"
export KERNELGATE_CACHE_DIR=/tmp/kgcache
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb && export KERNELGATE_BASELINE_DIR=/tmp/kgb
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
slug=$(.devbin/kernelgate gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
step() {  # name, results dir, then the environment and arguments of the test binary
  local name=$1 res=$2; shift 2
  local t0; t0=$(date +%s); rm -rf "$res"
  env KERNELGATE_RESULTS_DIR="$res" "$@" > "$OUT/log-$name.txt" 2>&1
  echo "== $name: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' "$OUT/log-$name.txt")" | tee -a "$OUT/log.txt"
  grep -E "WRONG|REGRESSION|panicked|^verdicts|^ambiguous" "$OUT/log-$name.txt" | head -12 | tee -a "$OUT/log.txt"
  [ -d "$res" ] && cp "$(ls -t "$res"/*.json | head -1)" "$OUT/results-$name.json"
  gzip -f "$OUT/log-$name.txt"
}
[ -f .devbin/skinny.json ] && step skinny /tmp/res-skinny KERNELGATE_SUITE=.devbin/skinny.json .devbin/kernels
step gate /tmp/res-gate KERNELGATE_SUITE=default .devbin/kernels gemm::
step append /tmp/res-append KERNELGATE_SUITE=default UPDATE_BASELINES=append .devbin/kernels gemm::
step gemm /tmp/res-gemm KERNELGATE_SUITE=gemm UPDATE_BASELINES=append .devbin/kernels
# APPEND_KERNELS="k1 k2": also append those families' cases of the default and dsv3 suites
# (after a change to one of their kernels).
for f in ${APPEND_KERNELS:-}; do
  step append-$f /tmp/res-append-$f KERNELGATE_SUITE=default UPDATE_BASELINES=append .devbin/kernels $f::
  step dsv3-$f /tmp/res-dsv3-$f KERNELGATE_SUITE=dsv3 UPDATE_BASELINES=append .devbin/kernels $f::
done
tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
