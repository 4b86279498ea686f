#!/usr/bin/env bash
# Session 16 on an H200 (repo root, .devbin/ carried), everything under the duty-cycle hold.
# The quack suite comes first on each machine: its largest cases need more than 78 GiB, which
# is why these runs ask for an H200.
#   first:  quack and dsv3 whole (wall time, pass count, fractions of copy bandwidth); the gemm
#           suite (cuda + cuBLAS, same run) appended as a baseline round; attention_bars with
#           torch SDPA; then an UPDATE_BASELINES=append round of the default suite. The rounds
#           go into a copy of baselines/ returned as baselines.tar (this model's slug).
#   second: quack whole; then, on a fresh machine, the default suite and the gemm suite gated
#           against the baselines in the tree (after the first machine's round was merged).
#           Their results are imported here as rounds (`kernelgate import`).
# Under $OUT: log-h200.txt, results-*.json, *.json of `kernelgate run`, baselines.tar, logs.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/h2
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-h200.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log-h200.txt"
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
slug=$($KG gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
cli() {  # name, then the suite; writes $OUT/<name>.json
  local name=$1 s=$2; shift 2
  local t0; t0=$(date +%s)
  $KG run --suite "$s" "$@" --output "$OUT/$name.json" > /tmp/h2/$name.log 2>&1
  log "$name ($s) rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/h2/$name.log)"
  grep -iE "skip|WRONG|error" /tmp/h2/$name.log | head -8 | cut -c1-200 | tee -a "$OUT/log-h200.txt"
}
suite() {  # name, then the environment and arguments of the test binary
  local name=$1; shift
  local t0; t0=$(date +%s)
  env KERNELGATE_RESULTS_DIR=/tmp/h2/res-$name "$@" > /tmp/h2/$name.log 2>&1
  log "$name: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/h2/$name.log)"
  grep -E "^verdicts|^ambiguous|REGRESSION:|WRONG" /tmp/h2/$name.log | head -12 | cut -c1-260 | tee -a "$OUT/log-h200.txt"
  cp "$(ls -t /tmp/h2/res-$name/*.json | head -1)" "$OUT/results-$name.json" 2>/dev/null
}
cli quack quack --backends cuda
if [ "${1:-first}" = first ]; then
  cli dsv3 dsv3 --backends cuda
  suite gemm KERNELGATE_SUITE=gemm KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels
  python3 scripts/gemm-table.py "$OUT/results-gemm.json" | tail -4 | tee -a "$OUT/log-h200.txt"
  cli bars attention_bars --backends cuda,torch
  suite append KERNELGATE_SUITE=default KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels
  tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
else
  suite gate KERNELGATE_SUITE=default .devbin/kernels
  suite gemmgate KERNELGATE_SUITE=gemm .devbin/kernels
  python3 scripts/gemm-table.py "$OUT/results-gemmgate.json" | tail -4 | tee -a "$OUT/log-h200.txt"
fi
tar -C /tmp/h2 -czf "$OUT/logs.tar.gz" $(cd /tmp/h2 && ls *.log)
