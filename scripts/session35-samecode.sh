#!/usr/bin/env bash
# Session 35, one fresh machine (repo root, .devbin/ carried): the same-code verdict on a GPU.
# 1. LOAD: a background PyTorch process runs bf16 8192^3 matmuls on the same GPU (time-sliced
#    with ours, so this machine is slower for every case while no code changed) during
#    `kernelgate run` of scripts/suites/samecode35.json (10 default-suite cases) at a 1% tolerance: unchanged kernels slower beyond tolerance and noise get `same_code`, the
#    cuBLAS ones too once their entries name the library (before: `regression`); then the same
#    under KERNELGATE_STRICT=1, where they are regressions.
# 2. SELFTEST: `kernelgate selftest --runs 1 --levels 3,10`: an injected slowdown compiles other
#    code (-DKG_INJECT), so +10% is still called in both modes.
# 3. On an H200: the gemm gate of the skewed-tail kernel (scripts/session33-gate.sh, AB=0).
# Under $OUT: log.txt, load-*.json, selftest.json, selftest.txt, and on an H200 gate.tgz,
# gemm-table.md, bench-checks.txt.
set -u
. scripts/device-lib.sh
load() {
  python3 - "$1" <<'PY' &
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(8):
        a @ a
    torch.cuda.synchronize()
PY
  sleep 8
}
verdicts() {
  python3 - "$OUT/$1.json" <<'PY' | tee -a "$DEV_LOG"
import collections, json, sys
r = json.load(open(sys.argv[1]))["results"]
c = collections.Counter((x["backend"], x["verdict"]) for x in r)
print("  ", sys.argv[1].split("/")[-1], dict(sorted(c.items())))
for x in r:
    if x["backend"] == "cublas":
        print("   cublas source_hash:", x["source_hash"]); break
PY
}
for strict in 0 1; do
  load 45
  KERNELGATE_TOLERANCE_PCT=1 KERNELGATE_STRICT=$strict cli "load-strict$strict" \
    scripts/suites/samecode35.json --no-progress
  wait
  verdicts "load-strict$strict"
done
t0=$(date +%s)
$KG selftest --runs 1 --levels 3,10 --output "$OUT/selftest.json" > "$OUT/selftest.txt" 2>&1
log "selftest rc=$? in $(( $(date +%s) - t0 )) s: $(tail -2 "$OUT/selftest.txt" | tr '\n' ' ')"
if is_h200; then AB=0 bash scripts/session33-gate.sh; fi
log done
