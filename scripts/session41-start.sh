#!/usr/bin/env bash
# For the next session's first fresh machine (repo root, .devbin/ carried), written in session 40
# after its device time ran out:
# 1. smoke and gemm_edges through the test binary; every cuda record must now name the entry
#    points its code hash covers (code_entries), checked below.
# 2. scripts/suites/wgsplit40.json with KERNELGATE_GEMM_SPLITK=1/2/3/4 (ROUNDS interleaved): the
#    H100 side of session 40's H200 sweep (16x8192x8192 ran 3 splits 18% faster than 1 there),
#    before the wgmma cost model for M <= 16 is touched.
# Under $OUT: log.txt, results-*.json, wgsplit-rank.md, wgsplit-runs.tar.gz.
set -u
. scripts/device-lib.sh
for n in ${SUITES-smoke gemm_edges}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
python3 - "$OUT" <<'PY' | tee -a "$DEV_LOG"
import json, sys, glob
n = bad = 0
for f in sorted(glob.glob(sys.argv[1] + "/results-*.json")):
    for r in json.load(open(f))["results"]:
        if r["backend"] == "cuda":
            n += 1
            if not r.get("code_entries"):
                bad += 1
                print("no code_entries:", r["case"])
print(f"code_entries: {n - bad} of {n} cuda records name their entry points")
PY
mode_env() { case $1 in k*) echo "KERNELGATE_GEMM_SPLITK=${1#k}";; esac; }
ROUNDS=${ROUNDS:-2} interleave wgsplit scripts/suites/wgsplit40.json k1 k2 k3 k4
archive_runs wgsplit
ls -la "$OUT"
