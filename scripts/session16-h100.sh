#!/usr/bin/env bash
# Session 16 on a fresh H100 (repo root, .devbin/ carried), under the duty-cycle hold:
#   1. the whole gemm suite (cuda + cuBLAS in the same run), dsv3 and attention_bars (with
#      torch SDPA): the tables of issues 11, 12 and 13 on this GPU;
#   2. the wgmma GEMM's tiles and split counts forced one by one over the few-tile shapes of
#      scripts/suites/tiles.json (which pick would have been fastest), with cuBLAS beside them;
#   3. the cuBLAS kernels torch.matmul launches for those shapes (names, grids, times), by ncu;
#   4. the default suite gated against the baselines in the tree (fresh-machine evidence; the
#      results are imported as a round afterwards).
# Under $OUT: log-h100.txt, results-*.json, *.json, sweep.tar.gz, ncu-cublas.csv, logs.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/h1 /tmp/h1/sweep
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-h100.txt"; }
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader | tee -a "$OUT/log-h100.txt"
cli() {  # name, suite, then args; writes $OUT/<name>.json
  local name=$1 s=$2; shift 2
  local t0; t0=$(date +%s)
  $KG run --suite "$s" "$@" --output "$OUT/$name.json" > /tmp/h1/$name.log 2>&1
  log "$name ($s) rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/h1/$name.log)"
  grep -iE "skip|WRONG|error" /tmp/h1/$name.log | head -8 | cut -c1-200 | tee -a "$OUT/log-h100.txt"
}
suite() {  # name, then the environment and arguments of the test binary
  local name=$1; shift
  local t0; t0=$(date +%s)
  env KERNELGATE_RESULTS_DIR=/tmp/h1/res-$name "$@" > /tmp/h1/$name.log 2>&1
  log "$name: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/h1/$name.log)"
  grep -E "^verdicts|^ambiguous|REGRESSION:|WRONG" /tmp/h1/$name.log | head -12 | cut -c1-260 | tee -a "$OUT/log-h100.txt"
  cp "$(ls -t /tmp/h1/res-$name/*.json | head -1)" "$OUT/results-$name.json" 2>/dev/null
}
suite gemmgate KERNELGATE_SUITE=gemm .devbin/kernels
python3 scripts/gemm-table.py "$OUT/results-gemmgate.json" | tail -3 | tee -a "$OUT/log-h100.txt"
cli dsv3 dsv3 --backends cuda
cli bars attention_bars --backends cuda,torch
python3 scripts/bars-table.py "$OUT/bars.json" | tail -3 | tee -a "$OUT/log-h100.txt"
# 2. forced tiles and splits (cuda only), then the pick with cuBLAS.
cli pick scripts/suites/tiles.json --backends cuda,cublas
for t in 128x256 128x192 128x128 64x256 64x128; do
  for s in 1 2 4; do
    KERNELGATE_GEMM_TILE=$t KERNELGATE_GEMM_SPLITK=$s $KG run --suite scripts/suites/tiles.json \
      --backends cuda --output /tmp/h1/sweep/$t-s$s.json > /tmp/h1/sweep/$t-s$s.log 2>&1
    echo "$t s$s rc=$? $(tail -1 /tmp/h1/sweep/$t-s$s.log)" >> "$OUT/log-h100.txt"
  done
done
mv "$OUT/pick.json" /tmp/h1/sweep/pick.json
tar -C /tmp/h1/sweep -czf "$OUT/sweep.tar.gz" .
# 3. cuBLAS's kernels for the same shapes (torch.matmul, bf16), one timed launch each.
cat > /tmp/h1/mm.py <<'PY'
import json, torch
shapes = [(g["m"], g["n"], g["k"]) for g in json.load(open("scripts/suites/tiles.json"))["groups"][0]["shapes"]]
for m, n, k in shapes:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        c = a @ b
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(f"m{m}_n{n}_k{k}")
    c = a @ b
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
PY
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 240 "$NCU" --csv --nvtx --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__shared_mem_per_block_dynamic \
  python3 /tmp/h1/mm.py > "$OUT/ncu-cublas.csv" 2> /tmp/h1/ncu.log
log "ncu rc=$? $(wc -l < "$OUT/ncu-cublas.csv") lines"
suite gate KERNELGATE_SUITE=default .devbin/kernels
tar -C /tmp/h1 -czf "$OUT/logs.tar.gz" $(cd /tmp/h1 && ls *.log) ncu.log
