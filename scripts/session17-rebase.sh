#!/usr/bin/env bash
# Session 17: baselines and evidence for the register-row cross-entropy forward (repo root,
# .devbin/ carried). On an H200 the quack suite runs first (its largest cases need more than
# 78 GiB: the reason these runs ask for an H200).
#   first: UPDATE_BASELINES=append rounds of the cross-entropy forward cases of the default,
#          norms, dsv3 (and on an H200 quack) suites into a copy of baselines/ (cases whose
#          kernel changed start over: their old rounds timed other code), returned as
#          baselines.tar (this model's slug); then the dsv3 suite whole (`kernelgate run`).
#   gate:  on a fresh machine after the first machine's rounds were merged: the default and
#          dsv3 suites gated against the baselines in the tree (results imported as rounds).
# Under $OUT: log.txt, quack.json (H200), dsv3.json (first), results-*.json, baselines.tar.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/rb
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
slug=$($KG gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
cli() {  # name, then the suite and options; writes $OUT/<name>.json
  local n=$1 s=$2; shift 2
  local t0; t0=$(date +%s)
  $KG run --suite "$s" "$@" --output "$OUT/$n.json" > /tmp/rb/$n.log 2>&1
  log "$n ($s) rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/rb/$n.log)"
  grep -iE "skip|WRONG|error" /tmp/rb/$n.log | head -6 | cut -c1-200 | tee -a "$OUT/log.txt"
}
suite() {  # name, then the environment and arguments of the test binary
  local n=$1; shift
  local t0; t0=$(date +%s)
  env KERNELGATE_RESULTS_DIR=/tmp/rb/res-$n "$@" > /tmp/rb/$n.log 2>&1
  log "$n: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/rb/$n.log)"
  grep -E "^verdicts|^ambiguous|REGRESSION:|WRONG" /tmp/rb/$n.log | head -12 | cut -c1-260 | tee -a "$OUT/log.txt"
  cp "$(ls -t /tmp/rb/res-$n/*.json | head -1)" "$OUT/results-$n.json" 2>/dev/null
}
case "$name" in *H200*) cli quack quack --backends cuda ;; esac
if [ "${1:-first}" = first ]; then
  for s in default norms dsv3; do
    suite "append-$s" KERNELGATE_SUITE=$s KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels cross_entropy::cuda::
  done
  case "$name" in *H200*)
    suite append-quack KERNELGATE_SUITE=quack KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels cross_entropy::cuda:: ;;
  esac
  tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
  cli dsv3 dsv3 --backends cuda
else
  suite gate KERNELGATE_SUITE=default .devbin/kernels
  suite dsv3gate KERNELGATE_SUITE=dsv3 .devbin/kernels
fi
