#!/usr/bin/env bash
# Session 29, one machine (repo root, .devbin/ carried, nvcc): why the harness times the
# cross-entropy forward at 4096 x 3072 at ~9.9 us on an H200 where kernels/dev/ce_probe.cu's
# emulation of the harness's sample (read flush, hold, events around a CUDA graph of 3 launches)
# times the same entry point (`product _r`) at ~8.6 us. Interleaves ROUNDS (default 2) of the
# probe and of `kernelgate run` on scripts/suites/ce-gap.json (default policy, then
# KERNELGATE_L2_FLUSH=write), then, where Nsight Systems is installed, traces one CLI run and one
# probe run (CUDA kernels on the GPU timeline) so that kernel durations and the gaps between
# them can be compared outside either tool's events.
# Under $OUT: log.txt, probe-*.txt, cli-*.json, nsys-*.csv.gz (when nsys exists).
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s29g
. scripts/device-lib.sh
OUT_DIR=/tmp/ce_probe bash kernels/dev/run_ce_probe.sh > "$OUT/probe-1.txt" 2>&1
log "probe 1 rc=$?"
P=/tmp/ce_probe/ce_probe
for r in $(seq 1 "${ROUNDS:-2}"); do
  cli "cli-$r" scripts/suites/ce-gap.json
  [ "$r" -gt 1 ] && { timeout 200 "$P" > "$OUT/probe-$r.txt" 2>&1; log "probe $r rc=$?"; }
  ( export KERNELGATE_L2_FLUSH=write; cli "cliw-$r" scripts/suites/ce-gap.json )
done
python3 - "$OUT" <<'PY' | tee -a "$DEV_LOG"
import glob, json, os, re, sys
out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, "cli*.json"))):
    d = json.load(open(f))
    for r in d["results"]:
        print(f"{os.path.basename(f)}: {r['case']} {r['latency_ms']*1e3:.2f} us batch {r['batch']} graph {r['graph']} hold {r['hold_us']:.1f} frac {r['roofline_frac']:.3f}")
for f in sorted(glob.glob(os.path.join(out, "probe-*.txt"))):
    for line in open(f):
        if line.startswith("==") or "product _r" in line or line.lstrip().startswith("read "):
            print(os.path.basename(f) + ": " + line.rstrip())
PY
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys /usr/local/cuda/nsight-systems*/bin/nsys 2>/dev/null | head -1)
log "nsys: ${NSYS:-none}"
if [ -n "$NSYS" ]; then
  cat > /tmp/ce1.json <<'J'
{"description": "one case", "groups": [{"kernel": "cross_entropy", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 4096, "n": 3072}]}]}
J
  timeout 150 "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none --force-overwrite=true -o /tmp/nsys-cli \
    $KG run --suite /tmp/ce1.json --output /tmp/nsys-cli.json > "$DEV_TMP/nsys-cli.log" 2>&1
  log "nsys cli rc=$?"
  timeout 200 "$NSYS" profile --trace=cuda --sample=none --cpuctxsw=none --force-overwrite=true -o /tmp/nsys-probe \
    "$P" > "$DEV_TMP/nsys-probe.log" 2>&1
  log "nsys probe rc=$?"
  for w in cli probe; do
    "$NSYS" stats --report cuda_gpu_trace --format csv --output /tmp/tr-$w /tmp/nsys-$w.nsys-rep > /dev/null 2>&1
    f=$(ls /tmp/tr-$w*.csv 2>/dev/null | head -1)
    [ -n "$f" ] && gzip -9 -c "$f" > "$OUT/nsys-$w.csv.gz"
    log "trace $w: ${f:-none} $(wc -l < "${f:-/dev/null}") lines"
  done
  tail -5 "$DEV_TMP/nsys-cli.log" "$DEV_TMP/nsys-probe.log" | cut -c1-200 | tee -a "$DEV_LOG"
fi
ls -la "$OUT"
