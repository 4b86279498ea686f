#!/usr/bin/env bash
# Session 31, one more fresh machine (repo root, .devbin/ carried): a third machine for the
# entries the -inf fix restarted (scripts/session31-gate.sh's gate of default, dsv3 and, on an
# H200, quack), then issue 12's 2048^3 GEMM under Nsight Compute through the CLI: which cuBLAS
# kernel the harness's cublasGemmEx runs, its launch configuration and speed of light, beside
# ours. Under $OUT: log.txt, summary.md, gate.tgz, ncu-gemm-2048.txt.
set -u
. scripts/device-lib.sh
if is_h200; then SUITES=${SUITES:-"default dsv3 quack"}; else SUITES=${SUITES:-"default dsv3"}; fi
export SUITES
bash scripts/session31-gate.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for b in cublas cuda; do
  echo "== $b" >> "$OUT/ncu-gemm-2048.txt"
  KERNELGATE_BASELINE_DIR=$DEV_TMP/bl timeout 120 "$NCU" -k 'regex:nvjet|gemm|sm90|cutlass|xmma' -c 1 \
    --section LaunchStats --section SpeedOfLight --section Occupancy \
    $KG run --suite scripts/suites/gemm-2048.json --backends $b --dtype bf16 --no-progress \
    --max-time 50ms --min-samples 3 -o "$DEV_TMP/ncu-$b.json" >> "$OUT/ncu-gemm-2048.txt" 2>&1
  log "ncu $b rc=$?"
done
grep -E "^  [a-zA-Z_].*\(|Duration|Grid Size|Block Size|Cluster|Registers|Shared Memory Config|Dynamic Shared|Compute \(SM\)|Memory Throughput|Waves" "$OUT/ncu-gemm-2048.txt" | head -40 | tee -a "$DEV_LOG"
