#!/usr/bin/env bash
# Several-GPU evidence on a machine with 2+ GPUs (run from the repo root with .devbin/ carried:
# .devbin/kernels is the `cargo test --release --test kernels` binary, .devbin/kernelgate the CLI;
# scripts/build-device.sh makes both). Fits one 600 s call on 2×H200.
#
# Steps (STEPS="warm a1 a2 c b" by default, in that order; each has a time cap and is skipped
# when the time left, DEADLINE_S=570 from the start, is too short):
#   warm  the default suite once on all devices with minimal timing, so NVRTC's cubin cache and
#         torch's caches are warm for the timed steps (not a measurement)
#   a1    kernelgate run, default suite, one device (no --devices: device 0, as before): wall time
#   a2    kernelgate run, default suite, --devices all: wall time, cases per device
#   c     contention: a fixed set of latency-gated cases timed on device 0 alone, while a second
#         kernelgate process runs the default suite in a loop on device 1, alone again (run-to-run
#         noise), and with neighbours under KERNELGATE_EXCLUSIVE_TIMING=1 (both processes); a
#         table of medians alone vs with neighbours
#   b     the test binary, KERNELGATE_DEVICES=all: wall time
#   fault (not in the default STEPS) calibration suite with one faulting case on --devices all
#   cwarm, c1, c2 (not in the default STEPS) the `comprehensive` suite, shard $COMP_SHARD (1/4
#         by default: 619 of its 2,476 cases, every family) with $COMP_TIMING (shorter sampling
#         than the default so a shard fits a call): cwarm compiles and runs each case once on all
#         devices (NVRTC cache, not a measurement), c1 times it on one device, c2 on all; no
#         baselines (KERNELGATE_BASELINE_DIR points at an empty folder), so only wall time counts
#   nextest (not in the default STEPS) the default suite through cargo-nextest from an archive
#         (.devbin/cargo-nextest, .devbin/nextest.tar.zst: `NEXTEST=1 scripts/build-device.sh`),
#         one process per case, KERNELGATE_DEVICES=all, -j $NEXTEST_J (4 by default: more
#         processes than GPUs, so the host-wide device locks must queue them)
# A step skipped for lack of time can be run alone in a second call: STEPS="warm b" ...
# Returns under $OUT (at most 8 files come back from a device call): log.txt (the summary),
# logs.tgz (log-<step>.txt, full output), results.tgz (results-<step>.json), contention.txt (the
# table), contention-suite.json.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
BIN=.devbin/kernels
KG=.devbin/kernelgate
export KERNELGATE_CACHE_DIR=/tmp/kgcache
T0=$(date +%s)
DEADLINE_S=${DEADLINE_S:-570}
log() { echo "== $(date -u +%H:%M:%S) +$(( $(date +%s) - T0 ))s $*" | tee -a "$OUT/log.txt"; }
left() { echo $(( DEADLINE_S - ($(date +%s) - T0) )); }
# cap WANT: the seconds a step may take: WANT, or what is left before the deadline.
cap() { local l; l=$(left); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
keep() { grep -E "^GPU [0-9]|^suite |cases, all passed|cases FAILED|REGRESSION|WRONG|ERROR|^devices:|^  gpu[0-9]|^wall time|^test result|panicked|cannot be used"; }

nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$OUT/log.txt"
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
log "GPUs: $NGPU; steps: ${STEPS:=warm a1 a2 c b}"
[ "$NGPU" -ge 2 ] || log "WARNING: fewer than 2 GPUs; --devices all uses $NGPU"

# Which processes use which GPU (the torch workers must sit on their case's device).
apps() { echo "-- compute processes ($1):"; nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader; }

# run_cli NAME CAP ARGS...: one kernelgate run of the default suite, results to $OUT/results-NAME.json
run_cli() {
  local name=$1 c; c=$(cap "$2"); shift 2
  if [ "$c" -lt 30 ]; then log "$name SKIPPED (only $(left) s left)"; return; fi
  local t; t=$(now)
  (sleep 45; apps "$name at 45 s" >> "$OUT/log.txt") &
  local sampler=$!
  timeout "$c" $KG run --suite default --no-progress --output "$OUT/results-$name.json" "$@" \
    > "$OUT/log-$name.txt" 2>&1
  local rc=$?
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  keep < "$OUT/log-$name.txt" | tail -20 | tee -a "$OUT/log.txt"
  log "$name: exit $rc, wall $(since "$t") s (cap $c s)$([ $rc = 124 ] && echo ' TIMED OUT')"
}

warm() {
  local c; c=$(cap 100)
  local t; t=$(now)
  timeout "$c" $KG run --suite default --devices all --no-progress --skip-verify --warmup-ms 0 \
    --min-samples 1 --max-time 1ms --output /tmp/kg-warm.json > "$OUT/log-warm.txt" 2>&1
  local rc=$?
  keep < "$OUT/log-warm.txt" | grep -vE "REGRESSION|cases FAILED" | tail -8 | tee -a "$OUT/log.txt"
  log "warm: exit $rc, wall $(since "$t") s (cap $c s; not a measurement: minimal timing, so verdicts mean nothing)"
}

b() {
  local c; c=$(cap 200)
  if [ "$c" -lt 30 ]; then log "b SKIPPED (only $(left) s left)"; return; fi
  rm -rf /tmp/res-b
  local t; t=$(now)
  KERNELGATE_DEVICES=all KERNELGATE_RESULTS_DIR=/tmp/res-b timeout "$c" $BIN > "$OUT/log-b.txt" 2>&1
  local rc=$?
  keep < "$OUT/log-b.txt" | tail -12 | tee -a "$OUT/log.txt"
  grep -E "^test .* FAILED|^failures:" "$OUT/log-b.txt" | head -10 | tee -a "$OUT/log.txt"
  log "b (test binary, KERNELGATE_DEVICES=all): exit $rc, wall $(since "$t") s (cap $c s)$([ $rc = 124 ] && echo ' TIMED OUT')"
  cp "$(ls -t /tmp/res-b/*.json 2>/dev/null | head -1)" "$OUT/results-b.json" 2>/dev/null
}

# The contention set: latency-gated cases of the default suite (GEMM 4096³ cuBLAS and ours,
# GEMM 8192³, RMSNorm/LayerNorm 65536×4096, GELU, a few-µs GEMM and softmax, MHA, a torch GEMM,
# and a spin kernel as a control that only waits on the clock).
CONTENTION_CASES="gemm::cublas::m4096_n4096_k4096_bf16 gemm::cuda::m4096_n4096_k4096_bf16
gemm::cublas::m8192_n8192_k8192_bf16 rmsnorm::cuda::m65536_n4096_w32_bf16
layernorm::cuda::m65536_n4096_w32_bf16 gelu::cuda::m65536_n4096_bf16
gemm::cuda::m1000_n1000_k100_bf16 softmax::cuda::m4096_n1000_bf16
mha::cuda::b2_h32_hkv8_sq1000_sk1000_d64_causal1_bf16 gemm::torch::m4096_n4096_k4096_bf16
spin::cuda::us100_fp32"

contention_suite() {
  python3 - "$OUT/contention-suite.json" $CONTENTION_CASES <<'EOF'
import json, re, sys
groups = []
for name in sys.argv[2:]:
    kernel, backend, rest = name.split("::")
    *dims, dtype = rest.split("_")
    shape = {}
    for d in dims:
        k, v = re.fullmatch(r"([a-z]+?)(\d+)", d).groups()
        shape[k] = int(v)
    g = {"kernel": kernel, "backends": [backend], "dtypes": [dtype], "shapes": [shape]}
    if kernel == "spin":
        g["flush_l2"] = False          # as in the default suite
    groups.append(g)
json.dump({"description": "multi-gpu-evidence contention set", "tolerance_pct": 5, "groups": groups},
          open(sys.argv[1], "w"), indent=1)
EOF
}

# neighbour_start [env...]: a second process looping over the default suite on device 1.
# It runs in its own session; its process group id (written by the loop itself) is what
# neighbour_stop kills, so the kernelgate process and its torch worker go with it.
NB_PID=
neighbour_start() {
  rm -f /tmp/kg-neighbour.pgid
  setsid bash -c 'echo $$ > /tmp/kg-neighbour.pgid; while :; do env "$@" KERNELGATE_DEVICE=1 '"$KG"' run --suite default --no-progress --output /tmp/kg-neighbour.json >> '"$OUT"'/log-neighbour.txt 2>&1; done' _ "$@" &
  NB_PID=$!
  sleep "${NEIGHBOUR_WARM_S:-8}"
  apps "neighbour running" >> "$OUT/log.txt"
  log "neighbour on device 1 started (pgid $(cat /tmp/kg-neighbour.pgid 2>/dev/null)): $(grep -c '^\[' "$OUT/log-neighbour.txt" 2>/dev/null) cases so far"
}
neighbour_stop() {
  [ -n "$NB_PID" ] || return
  log "neighbour: $(grep -c '^\[' "$OUT/log-neighbour.txt" 2>/dev/null) cases ran on device 1 in all"
  local g; g=$(cat /tmp/kg-neighbour.pgid 2>/dev/null)
  [ -n "$g" ] && kill -- -"$g" 2>/dev/null
  wait "$NB_PID" 2>/dev/null; NB_PID=
}
trap neighbour_stop EXIT

c() {
  if [ "$NGPU" -lt 2 ]; then log "c SKIPPED (needs 2 GPUs)"; return; fi
  contention_suite
  $KG list --suite "$OUT/contention-suite.json" | tee -a "$OUT/log.txt" >/dev/null
  local runs="alone neighbours alone2 exclusive"
  for r in $runs; do
    local c; c=$(cap 60)
    if [ "$c" -lt 20 ]; then log "c/$r SKIPPED (only $(left) s left)"; continue; fi
    local extra=(KERNELGATE_DEVICE=0)
    case $r in
      neighbours) neighbour_start ;;
      exclusive) extra+=(KERNELGATE_EXCLUSIVE_TIMING=1); neighbour_start KERNELGATE_EXCLUSIVE_TIMING=1 ;;
    esac
    local t; t=$(now)
    env "${extra[@]}" timeout "$c" $KG run --suite "$OUT/contention-suite.json" \
      --no-progress --output "$OUT/results-c-$r.json" > "$OUT/log-c-$r.txt" 2>&1
    log "c/$r: exit $?, wall $(since "$t") s"
    neighbour_stop
  done
  python3 - "$OUT" $runs <<'EOF' | tee "$OUT/contention.txt" | tee -a "$OUT/log.txt"
import json, os, sys
out, runs = sys.argv[1], sys.argv[2:]
med = {}
for r in runs:
    p = os.path.join(out, f"results-c-{r}.json")
    if not os.path.exists(p):
        continue
    for rec in json.load(open(p))["results"]:
        st = rec.get("stats") or {}
        if st.get("median_ms"):
            med.setdefault(rec["case"], {})[r] = (st["median_ms"], st.get("noise", 0.0), rec.get("device_ordinal"))
have = [r for r in runs if any(r in v for v in med.values())]
def cell(v, base):
    if v is None:
        return "-"
    s = f"{v[0]*1e3:10.2f} µs ±{v[1]*100:.2f}%"
    if base is not None and v is not base:
        s += f" ({(v[0]/base[0]-1)*100:+6.2f}%)"
    return s
print("median on device 0 (95% CI of the median); in brackets: change vs `alone`")
print(f"{'case':58s} " + " ".join(f"{r:>32s}" for r in have))
for case in sorted(med):
    v = med[case]
    base = v.get("alone")
    print(f"{case:58s} " + " ".join(f"{cell(v.get(r), base):>32s}" for r in have))
for r in have:
    if r == "alone":
        continue
    ch = [abs(v[r][0]/v['alone'][0]-1)*100 for v in med.values() if r in v and 'alone' in v]
    if ch:
        print(f"{r}: mean |change| vs alone {sum(ch)/len(ch):.2f}%, max {max(ch):.2f}% over {len(ch)} cases")
EOF
}

fault() {
  local c; c=$(cap 120)
  local t; t=$(now)
  KERNELGATE_SUITE=calibration KERNELGATE_BASELINE_DIR=/tmp/nobase KERNELGATE_SPIN_FAULT=10 \
    KERNELGATE_DEVICES=all timeout "$c" $BIN > "$OUT/log-fault.txt" 2>&1
  log "fault: exit $?, wall $(since "$t") s"
  grep -E "^test |ILLEGAL|illegal|context|no device left|test result" "$OUT/log-fault.txt" | head -40 | tee -a "$OUT/log.txt"
}

COMP_SHARD=${COMP_SHARD:-1/4}
COMP_TIMING=${COMP_TIMING:---warmup-ms 20 --max-time 200ms}
# comp NAME CAP ARGS...: the comprehensive shard, results to $OUT/results-NAME.json
comp() {
  local name=$1 c; c=$(cap "$2"); shift 2
  if [ "$c" -lt 30 ]; then log "$name SKIPPED (only $(left) s left)"; return; fi
  local t; t=$(now)
  mkdir -p /tmp/nobase
  KERNELGATE_BASELINE_DIR=/tmp/nobase timeout "$c" $KG run --suite comprehensive --shard "$COMP_SHARD" \
    --no-progress --output "$OUT/results-$name.json" "$@" > "$OUT/log-$name.txt" 2>&1
  local rc=$?
  keep < "$OUT/log-$name.txt" | grep -v REGRESSION | tail -8 | tee -a "$OUT/log.txt"
  log "$name: exit $rc, wall $(since "$t") s (cap $c s)$([ $rc = 124 ] && echo ' TIMED OUT')"
}

nextest() {
  local c; c=$(cap 240)
  if [ ! -x .devbin/cargo-nextest ] || [ ! -f .devbin/nextest.tar.zst ]; then
    log "nextest SKIPPED (no .devbin/cargo-nextest or .devbin/nextest.tar.zst)"; return
  fi
  if [ "$c" -lt 30 ]; then log "nextest SKIPPED (only $(left) s left)"; return; fi
  rm -rf /tmp/res-nextest
  local t; t=$(now)
  KERNELGATE_DEVICES=all KERNELGATE_RESULTS_DIR=/tmp/res-nextest timeout "$c" \
    .devbin/cargo-nextest nextest run --archive-file .devbin/nextest.tar.zst --workspace-remap "$PWD" \
    -j "${NEXTEST_J:-4}" --no-fail-fast --success-output final > "$OUT/log-nextest.txt" 2>&1
  local rc=$?
  grep -E "Summary|FAIL|TIMEOUT|SIGSEGV|error" "$OUT/log-nextest.txt" | tail -15 | tee -a "$OUT/log.txt"
  log "nextest (-j ${NEXTEST_J:-4}, KERNELGATE_DEVICES=all): exit $rc, wall $(since "$t") s (cap $c s)$([ $rc = 124 ] && echo ' TIMED OUT')"
  # Processes that found every GPU held by another process and waited on the host-wide locks.
  log "nextest: $(grep -c 'waiting for a device' "$OUT/log-nextest.txt") processes waited for a device lock"
  # One results file per process: merge them; cases per device and verdicts.
  $KG merge /tmp/res-nextest/*.json -o "$OUT/results-nextest.json" >> "$OUT/log.txt" 2>&1
  python3 - "$OUT/results-nextest.json" <<'PY' | tee -a "$OUT/log.txt"
import collections, json, sys
recs = json.load(open(sys.argv[1]))["results"]
by_dev = collections.Counter(r.get("device_uuid") or str(r.get("device_ordinal")) for r in recs)
verdicts = collections.Counter(str(r.get("verdict")).split(":")[0][:20] for r in recs)
print(f"nextest records: {len(recs)}; per device: {dict(by_dev)}; verdicts: {dict(verdicts)}")
PY
}

for s in $STEPS; do
  case $s in
    warm) warm ;;
    a1) run_cli a1 220 ;;
    a2) run_cli a2 200 --devices all ;;
    b) b ;;
    c) c ;;
    fault) fault ;;
    cwarm) comp cwarm 150 --devices all --skip-verify --warmup-ms 0 --min-samples 1 --max-time 1ms ;;
    c1) comp c1 ${C1_CAP_S:-450} $COMP_TIMING ;;   # the whole suite took > 300 s on one H200
    c2) comp c2 200 $COMP_TIMING --devices all ;;
    nextest) nextest ;;
    *) log "unknown step $s" ;;
  esac
done
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv | tee -a "$OUT/log.txt"
log "done"
# The device returns at most 8 files: pack the per-step logs and results into two archives.
(cd "$OUT" && tar czf logs.tgz log-*.txt 2>/dev/null && rm -f log-*.txt)
(cd "$OUT" && tar czf results.tgz results-*.json 2>/dev/null && rm -f results-*.json)
ls -la "$OUT"
