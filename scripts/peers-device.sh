#!/usr/bin/env bash
# Runs the peers suite (fixtures/peers.json: our kernels beside fla, Liger, Quack, FlashAttention
# and PyTorch) on the GPU machine, from the repo root, with .devbin/kernelgate carried
# (scripts/build-device.sh) and the peer wheels carried and stashed (scripts/peer-wheels.sh: this
# is device call 3 there). Writes results, Markdown/CSV reports and logs under $OUT and prints a
# short table.
#
#   PARTS="nsa mha norms"  which parts to run, in this order (each a `kernelgate run`); also
#                          `dtypes` (fp16/fp32 of every peer family) and `dsv3` (bf16 DeepSeek-V3
#                          shapes), both from fixtures/peers-wide.json; `wide:KERNELS:DTYPES`
#                          a selection of peers-wide (e.g. wide:rmsnorm_bwd,softmax_bwd:fp16,fp32);
#                          any other name runs that family of the peers suite
#   PART_S=<seconds>       time limit of every part (default: nsa 75, mha 90, norms 200, so the
#                          whole script stays well inside a 10-minute device call); a part that
#                          reaches it is stopped and keeps the records it has written
#   MAX_TIME=500ms         sampling cap per case (`kernelgate run --max-time`)
# The first case of each peer configuration includes its JIT compile or autotuning (Triton,
# CuTe DSL), recorded as the case's compilation_time: most of a part's time on a fresh machine.
# Peers are compared with each other and with our kernels in one run, not with stored
# baselines: the baseline directory is an empty one, so every timed case says `new`.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
BIN=.devbin/kernelgate
[ -x "$BIN" ] || { echo "no $BIN: build it with scripts/build-device.sh and carry .devbin" >&2; exit 2; }
export KERNELGATE_CACHE_DIR=/tmp/kgcache KERNELGATE_BASELINE_DIR=/tmp/kg-peers-nobaselines
mkdir -p "$KERNELGATE_BASELINE_DIR"

# shellcheck source=scripts/peer-wheels.sh
. scripts/peer-wheels.sh install > "$OUT/wheels.log" 2>&1
grep -v "Running pip as the 'root' user" "$OUT/wheels.log" | tail -5

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
python3 - <<'EOF' 2>&1 | tee "$OUT/versions.txt"
import importlib, sys
from importlib.metadata import version
for dist in ["torch", "triton", "fla-core", "liger-kernel", "quack-kernels", "flash-attn-4",
             "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13", "apache-tvm-ffi", "flash-attn"]:
    try:
        print(f"{dist:30s} {version(dist)}")
    except Exception:
        print(f"{dist:30s} -")
EOF

limit_of() {
  if [ -n "${PART_S:-}" ]; then echo "$PART_S"; return; fi
  case "$1" in nsa) echo 75 ;; mha) echo 90 ;; dtypes|dsv3) echo 280 ;; *) echo 200 ;; esac
}

args_of() {  # the `kernelgate run` selection of a part
  case "$1" in
    nsa) echo "--suite peers --kernels nsa" ;;
    mha) echo "--suite peers --kernels mha" ;;
    norms) echo "--suite peers --kernels rmsnorm,rmsnorm_bwd,layernorm,softmax,softmax_bwd,cross_entropy,cross_entropy_bwd" ;;
    dtypes) echo "--suite peers-wide --dtype fp16,fp32" ;;
    dsv3) echo "--suite peers-wide --dtype bf16" ;;
    wide:*) local k d; k=$(echo "$1" | cut -d: -f2); d=$(echo "$1" | cut -d: -f3)
            echo "--suite peers-wide --kernels $k${d:+ --dtype $d}" ;;
    *) echo "--suite peers --kernels $1" ;;
  esac
}

rm -f "$OUT"/peers-*.json
for part in ${PARTS:-nsa mha norms}; do
  echo "== $part"
  start=$(date +%s)
  # shellcheck disable=SC2046
  timeout "$(limit_of "$part")" "$BIN" run $(args_of "$part") \
    --max-time "${MAX_TIME:-500ms}" --no-progress --output "$OUT/peers-${part//[:,]/_}.json" \
    > "$OUT/peers-${part//[:,]/_}.log" 2>&1
  rc=$?
  echo "   exit $rc after $(( $(date +%s) - start )) s$([ $rc = 124 ] && echo " (stopped at its $(limit_of "$part") s limit)"); skipped and failed cases:"
  grep -E "SKIPPED|ERROR|WRONG|FAILED" "$OUT/peers-${part//[:,]/_}.log" | cut -c1-400 | head -40
  case $rc in 0|1|124) ;; *) tail -5 "$OUT/peers-${part//[:,]/_}.log" ;; esac
done

files=$(ls "$OUT"/peers-*.json 2>/dev/null)
[ -n "$files" ] || { echo "no results" >&2; exit 1; }
# shellcheck disable=SC2086
"$BIN" merge $files -o "$OUT/peers.json" >/dev/null &&
  "$BIN" report "$OUT/peers.json" --markdown "$OUT/peers.md" --csv "$OUT/peers.csv" >/dev/null
echo
echo "== median latency per case (peers.csv; speedup vs torch)"
python3 - "$OUT/peers.csv" <<'EOF'
import csv, sys
from collections import defaultdict
rows = defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    rows[(r["family"], r["problem"])][r["backend"]] = r
backends = ["cuda", "torch", "fla", "liger", "quack", "flash-attn"]
print(f"{'case':42s}" + "".join(f"{b:>17s}" for b in backends))
for (fam, prob), cells in sorted(rows.items()):
    line = f"{(fam + '::' + prob)[:42]:42s}"
    for b in backends:
        c = cells.get(b)
        if c is None:
            line += f"{'':>17s}"
        elif not c["median_ms"]:
            line += f"{'WRONG':>17s}"
        else:
            ms = float(c["median_ms"])
            t = f"{ms * 1e3:.1f}us" if ms < 1 else f"{ms:.3f}ms"
            sp = f" {float(c['speedup']):.2f}x" if c["speedup"] else ""
            line += f"{t + sp:>17s}"
    print(line)
EOF
echo
grep -A40 "^## Geomean speedups" "$OUT/peers.md" | head -40
