#!/usr/bin/env bash
# Session 16, a fresh H100 (repo root, .devbin/ carried), under the duty-cycle hold: the
# attention_scaling suite (ours and torch SDPA in the same run: TFLOP/s per sequence length) and
# the nsa suite (cuda: nominal TFLOP/s, G = 1 / 4 / 16). Results only, no baseline rounds.
# Under $OUT: log-scaling.txt, scaling.json, nsa.json.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/sc
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-scaling.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log-scaling.txt"
for s in attention_scaling:cuda,torch:scaling nsa:cuda:nsa; do
  IFS=: read -r suite be name <<< "$s"
  t0=$(date +%s)
  $KG run --suite $suite --backends $be -o "$OUT/$name.json" > /tmp/sc/$name.log 2>&1
  log "$suite rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/sc/$name.log)"
  grep -iE "WRONG|error" /tmp/sc/$name.log | head -5 | cut -c1-200 | tee -a "$OUT/log-scaling.txt"
done
