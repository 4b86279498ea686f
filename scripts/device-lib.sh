# Helpers the device scripts share; source it from the repo root (`. scripts/device-lib.sh`).
# Set OUT (default /tmp/kgout: what comes back), DEV_TMP (scratch, default /tmp/kgdev) and
# DEV_LOG (default $OUT/log.txt) before sourcing to change them. Sets KG (the carried CLI,
# .devbin/kernelgate) and KERNELGATE_CACHE_DIR, and logs the GPU.
OUT=${OUT:-/tmp/kgout}
DEV_TMP=${DEV_TMP:-/tmp/kgdev}
DEV_LOG=${DEV_LOG:-$OUT/log.txt}
mkdir -p "$OUT" "$DEV_TMP"
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate

# A timestamped line, printed and kept in $DEV_LOG.
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$DEV_LOG"; }

nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$DEV_LOG"

# Whether this machine's GPU is an H200.
is_h200() { nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; }

# The GPU model's baselines directory name (as kernelgate writes it).
gpu_slug() {
  $KG gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))'
}

# `kernelgate run`: cli NAME SUITE [OPTIONS...] writes $OUT/NAME.json and logs its wall time,
# last line and any skip, wrong output or error.
cli() {
  local n=$1 s=$2; shift 2
  local t0; t0=$(date +%s)
  $KG run --suite "$s" "$@" --output "$OUT/$n.json" > "$DEV_TMP/$n.log" 2>&1
  log "$n ($s) rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 "$DEV_TMP/$n.log")"
  grep -iE "skip|WRONG|error" "$DEV_TMP/$n.log" | head -8 | cut -c1-220 | tee -a "$DEV_LOG"
}

# The test binary: suite NAME [VAR=VALUE...] COMMAND... logs its exit, test result, verdicts and
# regressions, and copies its results file to $OUT/results-NAME.json.
suite() {
  local n=$1; shift
  local t0; t0=$(date +%s)
  env KERNELGATE_RESULTS_DIR="$DEV_TMP/res-$n" "$@" > "$DEV_TMP/$n.log" 2>&1
  log "$n: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' "$DEV_TMP/$n.log")"
  grep -E "^verdicts|^ambiguous|REGRESSION:|WRONG|ERROR" "$DEV_TMP/$n.log" | head -12 | cut -c1-260 | tee -a "$DEV_LOG"
  cp "$(ls -t "$DEV_TMP/res-$n"/*.json | head -1)" "$OUT/results-$n.json" 2>/dev/null
}
