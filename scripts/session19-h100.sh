#!/usr/bin/env bash
# Session 19, H100 (repo root, .devbin/ carried):
#   1. same-run A/B (`kernelgate run --base`) of kernels/gemm_gemv.cu on its M <= 4 shapes
#      (scripts/suites/gemv4.json): the working tree against .devbin/ab18 (session 18's file) and
#      against .devbin/abrow (the working tree with GV_ROWWISE_16=1: one row of B at a time);
#      two runs of each, the order swapped;
#   2. the SASS of the wgmma entries: MEMBAR / arrive counts per entry, and the lines around
#      each MEMBAR of gemm_wgmma_bf16_128x64_n2;
#   3. GEMM=1: the gemm, gemm_edges and default-suite gemm cases gated (session18-gemm.sh).
# Under $OUT: log.txt, ab.md, sass-wgmma.txt, gemm-table.md, runs.tar.gz.
set -u
DEV_TMP=/tmp/s19h
. scripts/device-lib.sh
for r in 1 2; do
  for v in ab18 abrow; do
    [ $r = 2 ] && v=$( [ $v = ab18 ] && echo abrow || echo ab18 )
    cli "ab-$v-$r" scripts/suites/gemv4.json --backends cuda --base ".devbin/$v"
  done
done
python3 - "$OUT" > "$OUT/ab.md" <<'PY'
import json, glob, sys, os
out = sys.argv[1]
print("| case | variant (base) | run | new / base (paired median) | verdict | ours µs |")
print("|---|---|---|---:|---|---:|")
for f in sorted(glob.glob(os.path.join(out, "ab-*.json"))):
    _, v, r = os.path.basename(f)[:-5].split("-")
    for x in json.load(open(f))["results"]:
        ab = x.get("ab") or {}
        p = ab.get("paired") or {}
        rat = f"{p['ratio']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}]" if p else ab.get("status", "n/a")
        print(f"| {x['case']} | {v} | {r} | {rat} | {x.get('verdict')} | {x['latency_ms']*1000:.2f} |")
PY
log "ab table: $(wc -l < "$OUT/ab.md") lines"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUOBJ=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
$NVCC -arch=sm_90a -Ikernels -cubin -o "$DEV_TMP/wg.cubin" kernels/gemm_wgmma.cu 2> "$DEV_TMP/nvcc.log"
$CUOBJ -sass "$DEV_TMP/wg.cubin" > "$DEV_TMP/wg.sass" 2>&1
{
  echo "# per entry: MEMBAR, SYNCS (mbarrier), FENCE lines"
  awk '/Function :/ {f=$3} /MEMBAR/ {m[f]++} /SYNCS/ {s[f]++} /FENCE/ {fe[f]++} END {for (k in m) print k, "MEMBAR", m[k], "SYNCS", s[k], "FENCE", fe[k]}' "$DEV_TMP/wg.sass" | sort
  echo "# gemm_wgmma_bf16_128x64_n2: 6 lines around each MEMBAR"
  awk '/Function :/ {on = ($3 == "gemm_wgmma_bf16_128x64_n2")} on' "$DEV_TMP/wg.sass" | grep -n -B4 -A2 MEMBAR | cut -c1-140 | head -120
} > "$OUT/sass-wgmma.txt" 2>&1
log "sass: $(wc -l < "$OUT/sass-wgmma.txt") lines; nvcc: $(head -2 "$DEV_TMP/nvcc.log")"
[ "${GEMM:-0}" = 1 ] && QUACK=0 DEFAULT=1 bash scripts/session18-gemm.sh
( cd "$OUT" && tar czf runs.tar.gz ./*.json && rm -f ./*.json )
ls "$OUT" | tee -a "$DEV_LOG"
