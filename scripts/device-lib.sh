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
# (With scripts/build-device.sh's PACK=1, .devbin/kernelgate and .devbin/kernels are wrappers that
# unpack the binaries on first use.)

# A timestamped line, printed and kept in $DEV_LOG.
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$DEV_LOG"; }

nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$DEV_LOG"

# The CUDA toolkit the dev benches build with.
CUDA=${CUDA_HOME:-/usr/local/cuda}

# The dev GEMM bench (kernels/dev/gemm_wgmma_bench.cu) built against the kernels in DIR (the
# checkout's `kernels`, or a bench_copy): bench_build BIN LOG DIR [NVCC ARGS...] writes ptxas's
# report and a last line "build rc=N" to LOG and returns nvcc's status.
bench_build() {
  local bin=$1 blog=$2 dir=$3 rc
  shift 3
  "$CUDA/bin/nvcc" "$@" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$dir" -Xptxas -v \
    -o "$bin" "$dir/dev/gemm_wgmma_bench.cu" -L"$CUDA/lib64" -lcuda -lcublas > "$blog" 2>&1
  rc=$?
  echo "build rc=$rc" >> "$blog"
  return $rc
}

# bench_copy NAME: the checkout's kernels and the dev GEMM bench copied to $DEV_TMP/gx-NAME/kernels
# (printed), for a variant to edit before bench_build; nothing in the checkout changes.
# The copy's gemm_wgmma.cu has gemm_wgmma.cuh inlined where it includes it (the device code moved
# there in session 39), so the dev patches (kernels/dev/gemm_*_patch.py) find the body's text in
# the one file they edit.
bench_copy() {
  local d=$DEV_TMP/gx-$1/kernels
  mkdir -p "$d/dev"
  cp kernels/*.cu kernels/*.cuh "$d/"
  cp kernels/dev/gemm_wgmma_bench.cu "$d/dev/"
  gw_inlined kernels > "$d/gemm_wgmma.cu"
  echo "$d"
}

# gw_inlined DIR: DIR/gemm_wgmma.cu with its #include "gemm_wgmma.cuh" replaced by that file.
gw_inlined() {
  python3 - "$1" <<'PY'
import sys, pathlib
d = pathlib.Path(sys.argv[1])
cu = (d / "gemm_wgmma.cu").read_text()
inc = '#include "gemm_wgmma.cuh"\n'
if inc in cu:
    cu = cu.replace(inc, (d / "gemm_wgmma.cuh").read_text().replace("#pragma once\n", ""), 1)
sys.stdout.write(cu)
PY
}

# bench_variant NAME [PATCH [ARGS...]]: a bench_copy named NAME, with `python3 PATCH
# <copy>/gemm_wgmma.cu ARGS...` applied when a patch is given, built into $DEV_TMP/gx-NAME/gwb
# (bench_build, log beside it) and noted in $DEV_LOG (bench_note). A patch that fails stops it
# there (logged, status 1): nothing is built unpatched under the variant's name.
bench_variant() {
  local n=$1 d
  shift
  d=$(bench_copy "$n")
  if [ $# -gt 0 ] && ! python3 "$1" "$d/gemm_wgmma.cu" "${@:2}"; then
    log "variant $n: patch $* failed, not built"
    return 1
  fi
  bench_build "$DEV_TMP/gx-$n/gwb" "$DEV_TMP/gx-$n/build.log" "$d"
  bench_note "$n" "$d" "$DEV_TMP/gx-$n/build.log" >> "$DEV_LOG"
}

# bench_note WHAT DIR LOG: one line on a variant's build: its status, how many lines its
# gemm_wgmma.cu changed against the checkout's, and how many entries spill.
bench_note() {
  echo "== variant $1: $(tail -1 "$3") edits=$(diff <(gw_inlined kernels) "$2/gemm_wgmma.cu" | grep -c '^>') nonzero spills=$(grep -cE '[1-9][0-9]* bytes spill stores' "$3")"
}

# bench_checks NAME BIN FILE: the dev bench BIN's checks of every tile on every bench shape, both
# dtypes (--no-perf), into FILE, and one line "NAME checks rc=N: F FAIL lines, S shapes pass".
bench_checks() {
  LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}" timeout 300 "$2" --no-perf > "$3" 2>&1
  log "$1 checks rc=$?: $(grep -cE '^  FAIL' "$3") FAIL lines, $(grep -c 'all configs x splits PASS' "$3") shapes pass"
}

# bench_shapes BIN FILE TILES TOKEN...: the dev bench BIN (L2 read-flushed, dtype $DT, default
# bf16, $REPS launches, default 10) on each TOKEN's shape, MxNxK, timing TILES, or MxNxK:T1,T2 for
# that shape's own tiles; the output appended to FILE, one log line per shape, then how many
# shapes passed their checks and the first FAIL lines.
bench_shapes() {
  local b=$1 f=$2 tiles=$3 tok st tl
  shift 3
  for tok in "$@"; do
    st=${tok%%:*}
    tl=$tiles
    [ "$tok" != "$st" ] && tl=${tok#*:}
    LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}" timeout 120 "$b" --read-flush --shape "$st" \
      "--${DT:-bf16}" --reps "${REPS:-10}" --tiles "$tl" >> "$f" 2>&1
    log "bench $tok ${DT:-bf16} rc=$?"
  done
  grep -c "checks: all configs x splits PASS" "$f" | sed 's/^/shapes passing: /' | tee -a "$DEV_LOG"
  grep -E "FAIL" "$f" | head | tee -a "$DEV_LOG"
}

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

# A mode_env body for interleave: `pick_or_forced MODE VAR` prints KERNELGATE_BATCH=1 (every launch
# alone) for the mode `pick`, and that with VAR=MODE for any other (a forced configuration).
pick_or_forced() {
  case $1 in
    pick) echo "KERNELGATE_BATCH=1" ;;
    *) echo "KERNELGATE_BATCH=1 $2=$1" ;;
  esac
}

# Interleaved rounds of several configurations of one suite, ranked: interleave PREFIX SUITE
# MODE... runs `cli PREFIX-MODE-ROUND SUITE` for every MODE, ROUNDS times (default 2), the order
# reversed each round, each under the VAR=VALUE words the caller's `mode_env MODE` prints, then
# writes `kernelgate rank` of all of them to $OUT/PREFIX-rank.md.
interleave() {
  local prefix=$1 suite=$2 r v f env
  shift 2
  local modes=("$@") args=()
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in "${modes[@]}"; do
      env=$(mode_env "$v")
      # shellcheck disable=SC2086 # several VAR=VALUE words
      ( [ -n "$env" ] && export $env; cli "$prefix-$v-$r" "$suite" )
    done
    modes=($(printf '%s\n' "${modes[@]}" | tac))
  done
  for v in "${modes[@]}"; do
    for f in "$OUT/$prefix-$v"-*.json; do [ -f "$f" ] && args+=("$v=$f"); done
  done
  $KG rank "${args[@]}" > "$OUT/$prefix-rank.md" 2>&1
  log "$prefix ranked: rc=$?"
}

# out_fit: the device returns at most 8 files from $OUT (device/README.md, Limits); where more are
# there, everything but log.txt and the six newest files goes into $OUT/rest.tar.gz (logged), so
# that nothing is dropped unseen. Call it last.
out_fit() {
  local n keep rest
  n=$(find "$OUT" -maxdepth 1 -type f | wc -l)
  [ "$n" -le 8 ] && return 0
  # plain files only, newest first (folders under $OUT stay as they are)
  keep=$(find "$OUT" -maxdepth 1 -type f ! -name log.txt -printf '%T@ %f\n' | sort -rn | head -6 | cut -d' ' -f2)
  rest=$(find "$OUT" -maxdepth 1 -type f ! -name log.txt ! -name rest.tar.gz -printf '%f\n' | grep -vxF "$keep")
  # shellcheck disable=SC2086 # file names without spaces
  ( cd "$OUT" && tar czf rest.tar.gz $rest && rm -f $rest )
  log "out_fit: $n files in \$OUT; $(echo $rest | wc -w) of them packed into rest.tar.gz"
}

# archive_runs PREFIX: one $OUT/PREFIX-runs.tar.gz of interleave's runs in place of the files
# (the device returns only a few files).
archive_runs() {
  ( cd "$OUT" && tar czf "$1-runs.tar.gz" "$1"-*-*.json && rm -f "$1"-*-*.json )
}
