#!/usr/bin/env bash
# One fresh machine's rounds for whole suites: each suite of SUITES is run once with
# UPDATE_BASELINES=append (so entries shared with other suites keep their rounds from other
# machines; rounds that recorded no batch drop out of the summary on their own), into a copy of
# the baselines. The results files double as the same-run comparisons with cuBLAS / SDPA.
# Usage (GPU machine, repo root, .devbin carried): SUITES="gemm attention_bars" bash scripts/suite-rounds.sh
# Returns under $OUT: log.txt, results-<suite>.json, log-<suite>.txt.gz, baselines.tar (this model's).
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT"
SUITES=${SUITES:-"gemm attention_bars"}; UPD=${UPD:-append}
export KERNELGATE_CACHE_DIR=/tmp/kgcache
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb && export KERNELGATE_BASELINE_DIR=/tmp/kgb
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
slug=$(.devbin/kernelgate gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
for s in $SUITES; do
  t0=$(date +%s); rm -rf "/tmp/res-$s"
  KERNELGATE_SUITE=$s UPDATE_BASELINES=$UPD KERNELGATE_RESULTS_DIR="/tmp/res-$s" .devbin/kernels > "$OUT/log-$s.txt" 2>&1
  echo "== $s (UPDATE_BASELINES=$UPD): exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' "$OUT/log-$s.txt")" | tee -a "$OUT/log.txt"
  grep -E "WRONG|FAILED|panicked" "$OUT/log-$s.txt" | head -10 | tee -a "$OUT/log.txt"
  cp "$(ls -t /tmp/res-$s/*.json | head -1)" "$OUT/results-$s.json"
  gzip -f "$OUT/log-$s.txt"
done
tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
