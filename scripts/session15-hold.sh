#!/usr/bin/env bash
# Session 15 (repo root, .devbin/ carried): does the hold in front of each sample bias the
# same-run ratio of long, power-bound kernels? The large GEMMs (scripts/suites/squares.json),
# ours and cuBLAS, with the default hold policy (the hold follows each backend's host enqueue
# time: cuBLAS's is longer) and with one hold for every backend (KERNELGATE_HOLD_US=H), while
# nvidia-smi logs SM clock and power every 50 ms. Under $OUT: log-hold.txt, hold.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/hd
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-hold.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-hold.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 50 > /tmp/hd/smi.csv 2>&1 &
smi=$!
for h in ${HOLDS:-default 1000 default2}; do
  if [ "${h#default}" != "$h" ]; then e=""; else e="KERNELGATE_HOLD_US=$h"; fi
  log "start hold=$h"
  env $e $KG run --suite scripts/suites/squares.json --backends cuda,cublas -o /tmp/hd/sq-$h.json > /tmp/hd/sq-$h.log 2>&1
  log "hold=$h: $(tail -1 /tmp/hd/sq-$h.log)"
  python3 - /tmp/hd/sq-$h.json <<'PY' | tee -a "$OUT/log-hold.txt"
import json, sys, math
rows = {}
for r in json.load(open(sys.argv[1]))["results"]:
    p = r["problem_size"]
    rows.setdefault((p["m"], p["n"], p["k"], r["dtype"]), {})[r["backend"]] = r
lg = []
for k, b in sorted(rows.items()):
    if "cuda" in b and "cublas" in b:
        o, c = b["cuda"], b["cublas"]
        ratio = c["latency_ms"] / o["latency_ms"]
        lg.append(math.log(ratio))
        print(f"{k[0]}x{k[1]}x{k[2]} {k[3]}: ours {o['latency_ms']*1e3:.1f} us (hold {o['hold_us']:.0f}, {o['date'][11:19]}) "
              f"cuBLAS {c['latency_ms']*1e3:.1f} us (hold {c['hold_us']:.0f}, {c['date'][11:19]}) ratio {ratio:.3f}")
print(f"geomean ours/cuBLAS {math.exp(sum(lg)/len(lg)):.3f}")
PY
done
kill $smi
tar -C /tmp/hd -czf "$OUT/hold.tar.gz" .
