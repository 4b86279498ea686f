#!/usr/bin/env bash
# Session 12, a fresh machine (repo root, .devbin/ carried): the default suite gated against the
# committed baselines (scripts/gate-evidence.sh gate-only), two append rounds of the default
# suite's rmsnorm_bwd cases (their kernel changed this session) into a copy of the baselines,
# then scripts/session12-ce2.sh (cross-entropy launch configurations).
# Under $OUT: log.txt, fresh.tar.gz (gate results and log, rmsnorm_bwd results, baselines of this
# GPU model), ce2.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/fr
export KERNELGATE_CACHE_DIR=/tmp/kgcache
OUT=/tmp/fr bash scripts/gate-evidence.sh gate-only > /dev/null 2>&1
cat /tmp/fr/log.txt >> "$OUT/log.txt"
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
slug=$(.devbin/kernelgate gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
for i in 1 2; do
  KERNELGATE_BASELINE_DIR=/tmp/kgb KERNELGATE_RESULTS_DIR=/tmp/fr/res-rb$i UPDATE_BASELINES=append \
    .devbin/kernels rmsnorm_bwd > /tmp/fr/rb-append$i.log 2>&1
  echo "== rmsnorm_bwd append $i: $(grep -E '^test result|^verdicts' /tmp/fr/rb-append$i.log | tr '\n' ' ')" | tee -a "$OUT/log.txt"
done
tar -C /tmp/kgb -cf /tmp/fr/baselines.tar "$slug"
tar -C /tmp/fr -czf "$OUT/fresh.tar.gz" .
bash scripts/session12-ce2.sh > /dev/null 2>&1
