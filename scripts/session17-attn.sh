#!/usr/bin/env bash
# Session 17: duty-held baseline rounds for the attention suites (repo root, .devbin/ carried):
# UPDATE_BASELINES=append of attention_bars and attention_scaling (our kernel and torch SDPA in
# the same run) into a copy of baselines/, returned as baselines.tar (this model's slug); their
# results double as issue 11's tables. On an H200 the quack suite runs first (its largest cases
# need more than 78 GiB: the reason the run asks for an H200).
# Under $OUT: log.txt, results-bars.json, results-scaling.json, baselines.tar (quack.json).
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/at
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
slug=$($KG gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
case "$name" in *H200*)
  t0=$(date +%s)
  $KG run --suite quack --backends cuda --output "$OUT/quack.json" > /tmp/at/quack.log 2>&1
  log "quack rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/at/quack.log)" ;;
esac
for s in bars:attention_bars scaling:attention_scaling; do
  n=${s%%:*}; suite=${s#*:}
  t0=$(date +%s)
  env KERNELGATE_RESULTS_DIR=/tmp/at/res-$n KERNELGATE_SUITE=$suite KERNELGATE_BASELINE_DIR=/tmp/kgb \
    UPDATE_BASELINES=append .devbin/kernels > /tmp/at/$n.log 2>&1
  log "$n: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/at/$n.log)"
  grep -E "^verdicts|WRONG|ERROR" /tmp/at/$n.log | head -6 | cut -c1-220 | tee -a "$OUT/log.txt"
  cp "$(ls -t /tmp/at/res-$n/*.json | head -1)" "$OUT/results-$n.json" 2>/dev/null
done
tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
