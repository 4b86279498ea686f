#!/usr/bin/env bash
# Session 34, one machine (repo root; nvcc + cuBLAS): the traces at 2048^3 put the plain tile's
# event time about 0.9 us further from its CTA span than the 2-CTA cluster tile's. Is the
# launch path the difference? 1. --overhead with the read flush: an empty kernel launched plain
# and with launch-time cluster dims 1 and 2. 2. The dev bench (read flush) on the squares'
# picks, plain launch against --cluster-launch 1 and 2 (the plain entries, unchanged code, with
# launch-time cluster dims), ROUNDS processes each, order turned each round.
# Under $OUT: log.txt, overhead.txt, cluster.txt, cluster-table.md.
set -u
. scripts/device-lib.sh
bench_build "$DEV_TMP/gwb" "$DEV_TMP/build.log" kernels
log "bench build: $(tail -1 "$DEV_TMP/build.log")"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
timeout 60 "$DEV_TMP/gwb" --overhead --read-flush --reps 50 > "$OUT/overhead.txt" 2>&1
grep "empty" "$OUT/overhead.txt" | grep -E " (0|231424) B" | tee -a "$DEV_LOG"
R=$OUT/cluster.txt
order="0 1 2"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for st in 2048x2048x2048:128x256 4096x4096x4096:128x256 3072x3072x3072:192x192 1024x1024x1024:128x64 2048x512x4096:128x64; do
    for dt in bf16 f16; do
      for c in $order; do
        echo "== round $r ${st%%:*} $dt cl$c" >> "$R"
        timeout 60 "$DEV_TMP/gwb" --read-flush --cluster-launch "$c" --shape "${st%%:*}" --$dt --reps 30 \
          --tiles "${st##*:}" >> "$R" 2>&1
      done
    done
  done
  order=$(echo $order | tr ' ' '\n' | tac | paste -sd' ')
done
python3 - "$R" <<'PY' | tee "$OUT/cluster-table.md" | tee -a "$DEV_LOG"
import re, sys, statistics as st
cur, ours, cub = None, {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"== round \d+ (\S+) (\S+) cl(\d)", line)
    if m:
        cur = m.groups()
        continue
    m = re.match(r"\s+\*?\s*\S+ split 1\s+([\d.]+) us", line)
    if m and cur:
        ours.setdefault(cur, []).append(float(m.group(1)))
    m = re.match(r"\s+cuBLAS\s+([\d.]+) us", line)
    if m and cur:
        cub.setdefault(cur, []).append(float(m.group(1)))
print("| shape | dtype | plain µs | cluster 1 µs | cluster 2 µs | cuBLAS µs (all runs) | cuBLAS / best |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for sh, dt in sorted({(k[0], k[1]) for k in ours}):
    v = [st.median(ours.get((sh, dt, c), [float("nan")])) for c in "012"]
    cb = st.median([x for c in "012" for x in cub.get((sh, dt, c), [])])
    print(f"| {sh} | {dt} | {v[0]:.2f} | {v[1]:.2f} | {v[2]:.2f} | {cb:.2f} | {cb / min(v):.3f} |")
PY
grep -c "FAIL" "$R" | sed 's/^/FAIL lines: /' | tee -a "$DEV_LOG"
