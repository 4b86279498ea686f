#!/usr/bin/env bash
# Ran against commit dd261c7 (KERNELGATE_MHA_BN and the _bn160/_bn176/_bn192 entries), reverted after.
# Session 16 (repo root, .devbin/ carried): the key tile of the non-causal d128 attention entries
# (KERNELGATE_MHA_BN = 128 / 160 / 176 / 192). First every tile on scripts/suites/bn-check.json
# (awkward lengths, GQA, split-KV tail: correctness), then scripts/suites/bn-speed.json (cuda and
# torch SDPA) in ABCD ABCD order on the same machine, under the duty-cycle hold.
# Under $OUT: log-bn.txt and bn.tar.gz (every run's results and log).
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/bn
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-bn.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log-bn.txt"
for bn in 128 160 176 192; do
  KERNELGATE_MHA_BN=$bn $KG run --suite scripts/suites/bn-check.json --backends cuda -o /tmp/bn/check-$bn.json > /tmp/bn/check-$bn.log 2>&1
  log "check bn$bn rc=$?: $(tail -1 /tmp/bn/check-$bn.log)"
  grep -E "WRONG|error|FAIL" /tmp/bn/check-$bn.log | head -5 | cut -c1-200 | tee -a "$OUT/log-bn.txt"
done
for round in 1 2; do
  for bn in 128 160 176 192; do
    be=cuda; [ $bn = 128 ] && be=cuda,torch
    KERNELGATE_MHA_BN=$bn $KG run --suite scripts/suites/bn-speed.json --backends $be -o /tmp/bn/speed-$bn-r$round.json > /tmp/bn/speed-$bn-r$round.log 2>&1
    log "speed bn$bn round $round rc=$?"
    grep -E "^mha::" /tmp/bn/speed-$bn-r$round.log | awk '{print "   ", $1, $3, $4, $5}' | tee -a "$OUT/log-bn.txt"
  done
done
tar -C /tmp/bn -czf "$OUT/bn.tar.gz" .
