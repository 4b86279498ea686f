#!/usr/bin/env bash
# Session 15 (repo root, .devbin/ carried): the duty-cycle hold (timing::duty_hold_us, default
# ratio 1) on a fresh machine. Part `first`: the large GEMMs with cuBLAS and attention_bars with
# torch SDPA in the same run (ratios under equal duty cycles), then an UPDATE_BASELINES=append
# round of the default suite into a copy of the baselines. Part `second`: the default suite gated
# against the baselines in the tree (after the first machine's round was imported), then its own
# append round. Under $OUT: log-duty.txt, results, baselines.tar.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/du
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-duty.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-duty.txt"
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
slug=$($KG gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
suite() {  # name, then env/args of the test binary
  local name=$1; shift
  local t0; t0=$(date +%s)
  env KERNELGATE_RESULTS_DIR=/tmp/du/res-$name "$@" > /tmp/du/$name.log 2>&1
  log "$name: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/du/$name.log)"
  grep -E "^verdicts|^ambiguous|REGRESSION:|WRONG" /tmp/du/$name.log | head -12 | cut -c1-260 | tee -a "$OUT/log-duty.txt"
  cp "$(ls -t /tmp/du/res-$name/*.json | head -1)" "$OUT/results-$name.json" 2>/dev/null
}
if [ "${1:-first}" = first ]; then
  $KG run --suite scripts/suites/squares.json --backends cuda,cublas -o "$OUT/squares.json" > /tmp/du/sq.log 2>&1
  log "squares: $(tail -1 /tmp/du/sq.log)"
  python3 scripts/gemm-table.py "$OUT/squares.json" | tail -18 | tee -a "$OUT/log-duty.txt"
  $KG run --suite attention_bars --backends cuda,torch -o "$OUT/bars.json" > /tmp/du/bars.log 2>&1
  log "attention_bars: $(tail -1 /tmp/du/bars.log)"
else
  suite gate KERNELGATE_SUITE=default .devbin/kernels
fi
[ "${SKIP_APPEND:-0}" = 1 ] || suite append KERNELGATE_SUITE=default KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels
[ "${SKIP_APPEND:-0}" = 1 ] || tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
tar -C /tmp/du -czf "$OUT/logs.tar.gz" $(cd /tmp/du && ls *.log)
