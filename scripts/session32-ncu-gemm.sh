#!/usr/bin/env bash
# Session 32: kernel durations under Nsight Compute at 2048^3 (bf16, fp16) through the CLI,
# ours with each epilogue (KERNELGATE_GEMM_EPILOGUE=tma, then regs) and the cuBLAS kernel the
# harness runs, with SM active / elapsed cycles (the CTAs' share of the kernel's time). Under
# $OUT: log.txt, ncu-<epilogue>.csv, kernels.txt.
set -u
. scripts/device-lib.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for e in tma regs; do
  KERNELGATE_GEMM_EPILOGUE=$e KERNELGATE_BASELINE_DIR=$DEV_TMP/bl timeout 200 "$NCU" -k 'regex:nvjet|cutlass|xmma|gemm_wgmma' -c 400 \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_active.avg,launch__grid_size --csv \
    $KG run --suite scripts/suites/gemm-2048.json --no-progress --warmup-ms 1 \
    --max-time 20ms --min-samples 3 -o "$DEV_TMP/ncu-$e.json" > "$OUT/ncu-$e.csv" 2>&1
  log "ncu $e rc=$?"
done
python3 - "$OUT"/ncu-tma.csv "$OUT"/ncu-regs.csv <<'PY' | tee "$OUT/kernels.txt" | tee -a "$DEV_LOG"
import csv, sys, collections
for path in sys.argv[1:]:
    rows = [l for l in open(path) if l.startswith('"')]
    agg = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in csv.DictReader(rows):
        agg[r["Kernel Name"]][r["Metric Name"]].append(float(r["Metric Value"].replace(",", "")))
    print(f"== {path.rsplit('/', 1)[-1]}")
    med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")
    for k, m in agg.items():
        d = m.get("gpu__time_duration.sum", [])
        el, ac = med(m.get("sm__cycles_elapsed.avg", [])), med(m.get("sm__cycles_active.avg", []))
        print(f"{k[:70]}: launches {len(d)}, median {med(d):.0f} ns, grid {m.get('launch__grid_size', ['?'])[0]:.0f}, "
              f"SM cycles elapsed {el:.0f}, active {ac:.0f} ({ac / el:.3f})")
PY
