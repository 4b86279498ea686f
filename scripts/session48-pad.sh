#!/usr/bin/env bash
# Session 48, one machine (repo root; nvcc + cuBLAS there): does where the operands sit move our
# time, and cuBLAS's? The dev bench (read sweep) on SHAPES (default 4096^3 and 2048^3, both
# dtypes), the checkout's pick (128x256) and cuBLAS, once per process for each --pad-mb of PADS
# (default 0 2 4 ... 30: an unused allocation before A, B and C). Under $OUT: log.txt, pad.txt
# (every run's output) and pad-table.md (ours and cuBLAS per pad).
set -u
. scripts/device-lib.sh
bench_variant base || exit 1
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
for p in ${PADS:-0 2 4 6 8 10 12 14 16 18 20 22 24 26 28 30}; do
  for t in ${SHAPES:-4096x4096x4096:bf16 4096x4096x4096:f16 2048x2048x2048:bf16 2048x2048x2048:f16}; do
    echo "== pad $p $t" >> "$OUT/pad.txt"
    timeout 120 "$DEV_TMP/gx-base/gwb" --read-flush --pad-mb "$p" --shape "${t%%:*}" "--${t#*:}" \
      --reps "${REPS:-20}" --tiles 128x256 >> "$OUT/pad.txt" 2>&1
  done
  log "pad $p"
done
python3 - "$OUT/pad.txt" <<'PY' | tee "$OUT/pad-table.md" | tail -8 | tee -a "$DEV_LOG"
import re, statistics, sys
rows, cur, ours = {}, None, None
for line in open(sys.argv[1]):
    m = re.match(r"== pad (\d+) (\S+)", line)
    if m:
        cur = (int(m.group(1)), m.group(2))
    m = re.match(r"\s+\* 128x256 split 1\s+([\d.]+) us", line)
    if m and cur:
        ours = float(m.group(1))
    m = re.match(r"\s+cuBLAS\s+([\d.]+) us", line)
    if m and cur:
        rows.setdefault(cur[1], []).append((cur[0], ours, float(m.group(1))))
print("| shape | pad MiB | ours µs | cuBLAS µs | cuBLAS / ours |")
print("| --- | ---: | ---: | ---: | ---: |")
for s, xs in rows.items():
    for p, o, c in xs:
        print(f"| {s} | {p} | {o:.2f} | {c:.2f} | {c / o:.3f} |")
print()
print("| shape | pads | ours min / median / max | cuBLAS min / median / max | ratio min / median / max |")
print("| --- | ---: | --- | --- | --- |")
for s, xs in rows.items():
    f = lambda a: " / ".join(f"{v:.2f}" for v in (min(a), statistics.median(a), max(a)))
    g = lambda a: " / ".join(f"{v:.3f}" for v in (min(a), statistics.median(a), max(a)))
    print(f"| {s} | {len(xs)} | {f([o for _, o, _ in xs])} | {f([c for _, _, c in xs])} | {g([c / o for _, o, c in xs])} |")
PY
log done
out_fit
