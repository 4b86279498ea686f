#!/usr/bin/env bash
# Session 19 (repo root, .devbin/ carried): the 2-CTA cluster entries of kernels/gemm_wgmma.cu
# with a producer tail instead of the exit cluster barrier, against .devbin/abwg (the same
# kernels with session 18's gemm_wgmma.cu and gemm_gemv.cu) in same-run A/B
# (`kernelgate run --base`):
#   1. each cluster tile forced (KERNELGATE_GEMM_TILE) on scripts/suites/tiles.json, ours only,
#      and the automatic pick (plain tiles: same code, a null check of the A/B);
#   2. each cluster tile forced on fixtures/gemm_edges.json (odd M/N/K, partial tiles, pairs
#      past the last tile) for correctness;
#   3. scripts/suites/gemv.json once (M <= 8 under the session-19 rule);
#   4. GEMM=1: the gemm, gemm_edges and default-suite gemm cases gated (session18-gemm.sh).
# QUACK=1 first runs the quack suite whole (its largest cases need more than 78 GiB: the reason an
# H200 is asked for); TILES picks the forced tiles; EDGES=0 skips step 2.
# Under $OUT: log.txt, tiles-ab.md, gemv-table.md, gemm-table.md, runs.tar.gz.
set -u
DEV_TMP=/tmp/s19w
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
TILES=${TILES:-128x64_n2 128x128_n2 128x256_c2 128x128_c2}
for t in pick $TILES; do
  v=$t; [ $t = pick ] && v=
  ( export KERNELGATE_GEMM_TILE=$v; cli "tiles-$t" scripts/suites/tiles.json --backends cuda --base .devbin/abwg )
done
if [ "${EDGES:-1}" = 1 ]; then
  for t in $TILES; do
    ( export KERNELGATE_GEMM_TILE=$t; cli "edges-$t" fixtures/gemm_edges.json --backends cuda )
  done
fi
python3 - "$OUT" > "$OUT/tiles-ab.md" <<'PY'
import json, glob, sys, os
out = sys.argv[1]
print("| case | tile | µs (tail) | tail / exit barrier (paired median, 95%) | kernel |")
print("|---|---|---:|---:|---|")
for f in sorted(glob.glob(os.path.join(out, "tiles-*.json"))):
    t = os.path.basename(f)[6:-5]
    for x in json.load(open(f))["results"]:
        ab = x.get("ab") or {}
        p = ab.get("paired") or {}
        rat = f"{p['ratio']:.3f} [{p['lo']:.3f}, {p['hi']:.3f}]" if p else ab.get("status", "n/a")
        print(f"| {x['case']} | {t} | {x['latency_ms']*1000:.2f} | {rat} | {(x.get('variant') or '')[:40]} |")
PY
log "tiles-ab: $(wc -l < "$OUT/tiles-ab.md") lines"
cli gemv scripts/suites/gemv.json
python3 scripts/gemm-table.py "$OUT/gemv.json" > "$OUT/gemv-table.md" 2>&1
[ "${GEMM:-0}" = 1 ] && QUACK=0 DEFAULT=1 bash scripts/session18-gemm.sh
( cd "$OUT" && tar czf runs.tar.gz ./*.json && rm -f ./*.json )
ls "$OUT" | tee -a "$DEV_LOG"
