#!/usr/bin/env bash
# Session 31: which cuBLAS kernel the harness's cublasGemmEx runs at 2048^3 (bf16, fp16), and
# its duration under Nsight Compute (one pass per launch: gpu__time_duration only). Every nvjet
# launch is listed, the run's own roofline ceiling GEMM (8192^3) included, so the case's kernel
# is the one that is not the ceiling's. Under $OUT: log.txt, ncu-gemm-2048.csv, kernels.txt.
set -u
. scripts/device-lib.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
KERNELGATE_BASELINE_DIR=$DEV_TMP/bl timeout 200 "$NCU" -k 'regex:nvjet|cutlass|xmma|gemm_wgmma' -c 400 \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y --csv \
  $KG run --suite scripts/suites/gemm-2048.json --no-progress --warmup-ms 1 \
  --max-time 20ms --min-samples 3 -o "$DEV_TMP/ncu.json" > "$OUT/ncu-gemm-2048.csv" 2>&1
log "ncu rc=$?"
python3 - "$OUT/ncu-gemm-2048.csv" <<'PY' | tee "$OUT/kernels.txt" | tee -a "$DEV_LOG"
import csv, sys, collections
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
agg = collections.defaultdict(lambda: collections.defaultdict(list))
for r in csv.DictReader(rows):
    agg[r["Kernel Name"]][r["Metric Name"]].append(r["Metric Value"].replace(",", ""))
for k, m in agg.items():
    d = sorted(float(x) for x in m.get("gpu__time_duration.sum", []))
    med = d[len(d) // 2] if d else float("nan")
    print(f"{k[:90]}: launches {len(d)}, median {med:.0f} ns, grid {m.get('launch__grid_size', ['?'])[0]}, "
          f"block {m.get('launch__block_size', ['?'])[0]}, cluster {m.get('launch__cluster_dim_x', ['?'])[0]}x{m.get('launch__cluster_dim_y', ['?'])[0]}")
PY
