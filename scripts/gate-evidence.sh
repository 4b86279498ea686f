#!/usr/bin/env bash
# Latency-gate evidence on a fresh GPU machine (run from the repo root with .devbin/ carried).
# Usage: scripts/gate-evidence.sh MODE
#   base-new     UPDATE_BASELINES=1 then one append pass of the default suite into a fresh
#                baseline dir; then the self-test against it. (first machine of a GPU model)
#   base-append  a gate run against the committed baselines of this GPU model (fresh-machine
#                evidence), then two append passes onto them. (further machines)
#   gate         a gate run against the committed baselines, then the self-test.
#   gate-only    the gate run alone.
# Returns under $OUT: log.txt, results-*.json, selftest.json, baselines.tar (base-* modes).
# SELFTEST=1 adds the self-test to the base-* modes; APPENDS=N append passes in base-append,
# APPEND_ENV="VAR=value ..." extra environment for them; GATE_ENV likewise for the gate pass.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
BIN=.devbin/kernels
KG=.devbin/kernelgate
export KERNELGATE_CACHE_DIR=/tmp/kgcache KERNELGATE_SUITE=${SUITE:-default}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$OUT/log.txt"
slug=$($KG gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
log "gpu slug $slug"
pass() {  # pass NAME [env...]: one run of the suite, results to $OUT/results-NAME.json
  local name=$1; shift
  local t0=$(date +%s)
  env "$@" KERNELGATE_RESULTS_DIR=/tmp/res-$name $BIN 2>&1 | tee -a "$OUT/log-$name.txt" \
    | grep -E "^test result|REGRESSION|WRONG|FAILED|panicked|^ambiguous|^verdicts|^smallest|^WARNING|^CUDA-graph|^host enqueue" | head -40 | tee -a "$OUT/log.txt"
  log "$name took $(( $(date +%s) - t0 )) s"
  cp "$(ls -t /tmp/res-$name/*.json | head -1)" "$OUT/results-$name.json" 2>/dev/null
}
selftest() {
  local t0=$(date +%s)
  timeout ${SELFTEST_S:-200} $KG selftest --runs ${RUNS:-5} --output "$OUT/selftest.json" 2>&1 | tee -a "$OUT/log.txt" | tail -20
  log "selftest took $(( $(date +%s) - t0 )) s"
}
case "${1:-gate}" in
  base-new)
    rm -rf /tmp/kgb && mkdir -p /tmp/kgb
    export KERNELGATE_BASELINE_DIR=/tmp/kgb
    pass update UPDATE_BASELINES=1
    pass append1 UPDATE_BASELINES=append
    tar -C /tmp/kgb -cf "$OUT/baselines.tar" .
    [ -n "${SELFTEST:-}" ] && selftest
    ;;
  base-append)
    rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
    export KERNELGATE_BASELINE_DIR=/tmp/kgb
    pass gate ${GATE_ENV:-}
    for i in $(seq 1 ${APPENDS:-1}); do pass append$i UPDATE_BASELINES=append ${APPEND_ENV:-}; done
    tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
    [ -n "${SELFTEST:-}" ] && selftest
    ;;
  gate-only)
    pass gate ${GATE_ENV:-}
    ;;
  gate)
    pass gate ${GATE_ENV:-}
    selftest
    ;;
esac
python3 - "$OUT"/results-*.json <<'PY' | tee -a "$OUT/log.txt"
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f)); c = d.get("ceilings") or {}
    print(f.split("/")[-1], "ceilings", {k: round(v, 3) for k, v in c.items()},
          "devices", [x.get("uuid") for x in d.get("devices", [])] or (d.get("gpu") or {}).get("uuid"))
    sh = [r["window_shift_ms"] * 1e3 for r in d["results"] if r.get("window_shift_ms") is not None]
    if sh: print(f"  window shift per launch: min {min(sh):+.2f} us, max {max(sh):+.2f} us over {len(sh)} cases")
PY
rm -f "$OUT"/log-*.txt.gz; for f in "$OUT"/log-*.txt; do [ -f "$f" ] && gzip -f "$f"; done
ls -la "$OUT"
