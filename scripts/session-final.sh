#!/usr/bin/env bash
# One fresh-machine pass of everything a closing note reports, from the repo root with .devbin/
# carried (scripts/build-device.sh): the default suite gated against the committed baselines
# and appended onto them (scripts/gate-evidence.sh base-append), then the harness tables of the
# kernels under work (scripts/kernels-check.sh PARTS, default "gemm bars rows"; PARTS=none skips
# them, so a second call on the same warm machine can run them).
# Everything that must come back is under $OUT: log.txt, results-*.json, baselines.tar (this
# GPU model's baselines with this machine's rounds added) and check.tgz (the harness tables'
# results and logs).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
t0=$(date +%s)
APPENDS=${APPENDS:-1} bash scripts/gate-evidence.sh base-append > /dev/null 2>&1
echo "== gate-evidence base-append: $(( $(date +%s) - t0 )) s" >> "$OUT/log.txt"
# SCALING=1: the attention_scaling suite (ours and torch SDPA, same run) appended onto the same
# baselines, its results kept; the baselines tar is rewritten with it.
if [ "${SCALING:-0}" = 1 ]; then
  t1=$(date +%s)
  slug=$(.devbin/kernelgate gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
  KERNELGATE_CACHE_DIR=/tmp/kgcache KERNELGATE_BASELINE_DIR=/tmp/kgb KERNELGATE_SUITE=attention_scaling \
    UPDATE_BASELINES=append KERNELGATE_RESULTS_DIR=/tmp/res-scaling .devbin/kernels > "$OUT/log-scaling.txt" 2>&1
  echo "== attention_scaling append: exit $? after $(( $(date +%s) - t1 )) s" >> "$OUT/log.txt"
  grep -E "^test result|WRONG|FAILED" "$OUT/log-scaling.txt" | head -5 >> "$OUT/log.txt"
  cp "$(ls -t /tmp/res-scaling/*.json | head -1)" "$OUT/results-scaling.json" 2>/dev/null
  tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
  gzip -f "$OUT/log-scaling.txt"
fi
[ "${PARTS-gemm bars rows}" = none ] && exit 0
PARTS=${PARTS:-gemm bars rows} bash scripts/kernels-check.sh > /dev/null 2>&1
echo "== total $(( $(date +%s) - t0 )) s" >> "$OUT/log.txt"
