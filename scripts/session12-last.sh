#!/usr/bin/env bash
# Session 12, last machine (repo root, .devbin/ carried): two append rounds of the default
# suite's rmsnorm_bwd cases into a copy of the baselines, then scripts/session12-ce2.sh.
# Under $OUT: log.txt, last.tar.gz (rmsnorm_bwd results, baselines of this GPU model), ce2.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/la
export KERNELGATE_CACHE_DIR=/tmp/kgcache
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
for i in 1 2; do
  KERNELGATE_BASELINE_DIR=/tmp/kgb KERNELGATE_RESULTS_DIR=/tmp/la/res-rb$i UPDATE_BASELINES=append \
    .devbin/kernels rmsnorm_bwd > /tmp/la/rb-append$i.log 2>&1
  echo "== rmsnorm_bwd append $i: $(grep -E '^test result|^verdicts' /tmp/la/rb-append$i.log | tr '\n' ' ')" | tee -a "$OUT/log.txt"
done
slug=$(.devbin/kernelgate gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
tar -C /tmp/kgb -cf /tmp/la/baselines.tar "$slug"
tar -C /tmp/la -czf "$OUT/last.tar.gz" .
bash scripts/session12-ce2.sh > /dev/null 2>&1
