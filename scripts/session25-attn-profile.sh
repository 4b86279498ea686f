#!/usr/bin/env bash
# Session 25: where our non-causal d128 attention (0.98x torch SDPA at b4 h32 s4096, bf16) and
# cuDNN's kernel spend their cycles, side by side: Nsight Compute's full set (speed of light,
# pipe utilisation, warp states, scheduler, source counters) on one launch of each, from the
# repo root with .devbin/ carried. Under $OUT: log.txt, ours.txt.gz and sdpa.txt.gz (details
# pages), ours.ncu-rep.gz and sdpa.ncu-rep.gz, times.txt (the same shape timed by kernelgate).
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s25a
. scripts/device-lib.sh
SUITE=scripts/suites/attn-noncausal-s4096.json
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
export KERNELGATE_BASELINE_DIR=/tmp/s25a-nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
# Timed first (no profiler): both backends, one run.
cli times "$SUITE" --backends cuda,torch
grep -E "^mha" "$DEV_TMP/times.log" | cut -c1-200 > "$OUT/times.txt"
prof() {
  local name=$1 filter=$2; shift 2
  timeout 200 "$NCU" --target-processes all --set full --import-source no -k "regex:$filter" \
    --launch-skip 3 -c 1 -o "$DEV_TMP/$name" -f "$@" > "$DEV_TMP/$name-run.log" 2>&1
  log "$name ncu rc=$? ($(grep -c '==PROF==' "$DEV_TMP/$name-run.log") PROF lines)"
  "$NCU" --import "$DEV_TMP/$name.ncu-rep" --page details > "$DEV_TMP/$name.txt" 2>&1
  "$NCU" --import "$DEV_TMP/$name.ncu-rep" --page source --csv > "$DEV_TMP/$name-source.csv" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Registers Per Thread|Achieved Occupancy|Tensor" "$DEV_TMP/$name.txt" | head -20 | tee -a "$DEV_LOG"
  gzip -9 -c "$DEV_TMP/$name.txt" > "$OUT/$name.txt.gz"
  gzip -9 -c "$DEV_TMP/$name.ncu-rep" > "$OUT/$name.ncu-rep.gz"
  tail -3 "$DEV_TMP/$name-run.log" | tee -a "$DEV_LOG"
}
prof ours "mha_wgmma" $KG run --suite "$SUITE" --backends cuda --skip-verify --max-time 100ms -o "$DEV_TMP/ours.json"
cat > "$DEV_TMP/sdpa.py" <<'PY'
import torch, torch.nn.functional as F
q, k, v = (torch.randn(4, 32, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(8):
    F.scaled_dot_product_attention(q, k, v, is_causal=False)
torch.cuda.synchronize()
PY
prof sdpa "fmha|flash|cudnn|attn|sdpa|sm90" python3 "$DEV_TMP/sdpa.py"
( cd "$DEV_TMP" && tar czf "$OUT/source.tgz" ours-source.csv sdpa-source.csv *-run.log )
ls -la "$OUT"
