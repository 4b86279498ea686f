#!/usr/bin/env bash
# One fresh machine's part in rebuilding the compute-bound baselines under a timing policy
# change (the soak): first the whole default suite gated against the baselines in the tree
# (fresh-machine evidence), then the compute-bound families rewritten (MODE=new, the first
# machine of a GPU model) or appended (MODE=append, each further machine).
# Usage (GPU machine, repo root, .devbin carried): MODE=new|append bash scripts/rebaseline.sh
# Returns under $OUT: log.txt, results-gate.json, log-gate.txt.gz, baselines.tar (this model's).
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT"
MODE=${MODE:-append}; FILTERS=${FILTERS:-"gemm:: mha:: nsa::"}
export KERNELGATE_CACHE_DIR=/tmp/kgcache KERNELGATE_SUITE=default
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb && export KERNELGATE_BASELINE_DIR=/tmp/kgb
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
slug=$(.devbin/kernelgate gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
t0=$(date +%s)
KERNELGATE_RESULTS_DIR=/tmp/res-gate .devbin/kernels > "$OUT/log-gate.txt" 2>&1
echo "== gate: exit $? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/log.txt"
grep -E "^test result|REGRESSION|WRONG|FAILED|^verdicts|^ambiguous|^smallest|^WARNING" "$OUT/log-gate.txt" | head -30 | tee -a "$OUT/log.txt"
cp "$(ls -t /tmp/res-gate/*.json | head -1)" "$OUT/results-gate.json"
upd=append; [ "$MODE" = new ] && upd=1
for f in $FILTERS; do
  t1=$(date +%s)
  UPDATE_BASELINES=$upd KERNELGATE_RESULTS_DIR=/tmp/res-upd .devbin/kernels "$f" > "$OUT/log-upd.txt" 2>&1
  echo "== UPDATE_BASELINES=$upd $f: exit $? in $(( $(date +%s) - t1 )) s; $(grep -E '^test result' "$OUT/log-upd.txt")" | tee -a "$OUT/log.txt"
done
rm -f "$OUT/log-upd.txt"
tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
gzip -f "$OUT/log-gate.txt"
