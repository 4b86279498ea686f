#!/usr/bin/env bash
# Session 40, a fresh machine (repo root, .devbin/ carried):
# 1. The gemm suite's fp32 cases through the test binary three times, each with an empty kernel
#    cache (KERNELGATE_CACHE_DIR=/tmp/kgc1..3), so gemm.cu is compiled by NVRTC three times:
#    do the records' code hashes agree (H100 49cff9fc gave 1000x1000x100 fp32 a code hash that
#    no local build gives)? The first cache's gemm cubin comes back for the entry hashes.
# 2. SUITES (default "smoke") through the test binary.
# Under $OUT: log.txt, results-*.json, gemm-*.cubin.
set -u
. scripts/device-lib.sh
for i in 1 2 3; do
  rm -rf "/tmp/kgc$i"
  suite "fp32-$i" KERNELGATE_SUITE=gemm KERNELGATE_CACHE_DIR="/tmp/kgc$i" .devbin/kernels fp32
done
cp /tmp/kgc1/gemm-*.cubin "$OUT/" 2>/dev/null
python3 - "$OUT" <<'PY' | tee -a "$DEV_LOG"
import json, sys, glob
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/results-fp32-*.json")):
    for r in json.load(open(f))["results"]:
        if r["backend"] == "cuda":
            rows.setdefault(r["case"], []).append(r["code_hash"][:12])
for c, h in sorted(rows.items()):
    print(("same " if len(set(h)) == 1 else "DIFFER ") + c + " " + " ".join(h))
PY
for n in ${SUITES-smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
ls -la "$OUT"
