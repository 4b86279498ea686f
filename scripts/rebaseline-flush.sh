#!/usr/bin/env bash
# Session 11: the read L2 flush on a fresh machine (run from the repo root with .devbin/ carried).
#   scripts/rebaseline-flush.sh first   gate the default suite against the committed baselines,
#                                       append a round (flushed entries restart under the read
#                                       flush), then the dsv3 suite; QUACK=1 adds the quack suite.
#   scripts/rebaseline-flush.sh again   gate against the restarted entries, then append a round.
# Under $OUT: log.txt, results-gate.json, results-append1.json, baselines.tar, log-*.txt.gz,
# dsv3.json (first), quack.json (QUACK=1).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
export KERNELGATE_CACHE_DIR=/tmp/kgcache
APPENDS=1 bash scripts/gate-evidence.sh base-append
if [ "${1:-again}" = first ]; then
  for s in dsv3 ${QUACK:+quack}; do
    t0=$(date +%s)
    KERNELGATE_BASELINE_DIR=/tmp/kgb .devbin/kernelgate run --suite $s --backends cuda --output "$OUT/$s.json" > /tmp/$s.log 2>&1
    rc=$?
    echo "== $s rc=$rc wall $(( $(date +%s) - t0 )) s: $(grep -cE ' (OK|NEW|FASTER) ' /tmp/$s.log) ok-lines; $(tail -1 /tmp/$s.log)" | tee -a "$OUT/log.txt"
    grep -iE "skip|WRONG|FAIL" /tmp/$s.log | head -5 | tee -a "$OUT/log.txt"
  done
fi
