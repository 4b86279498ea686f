#!/usr/bin/env bash
# Session 33: `kernelgate run --base DIR` against a base whose kernels lack entry points the
# host asks for (host code of this session, not run on a GPU before):
#   gemm_wgmma.cu of 362582b (.s33ab/old, no 128x64_ts / 192x192_ts): 1024^3 (128x64) and
#   3072^3 (192x192) should time the base's register entry against ours, 2048^3 (128x256_ts in
#   both) the two TMA-store entries;
#   rows_p.cu with its register-resident softmax entries (kg_softmax_*_r, the suite shape's
#   kernel) renamed: the rows launcher should fall back to the older softmax kernel in the base
#   (its own fallback) and time it against ours;
#   gemm.cu with its vec4 SGEMM entries renamed: nothing falls back there, so the fp32 case's
#   A/B should be "unavailable: kernel module gemm.cu has no entry point ..." and the case pass
#   on its stored baseline.
# Under $OUT: log.txt, basecheck.json, basecheck-ab.txt.
set -u
. scripts/device-lib.sh
B=$DEV_TMP/base
mkdir -p "$B/kernels"
cp -r kernels/. "$B/kernels/"
cp .s33ab/old/gemm_wgmma.cu "$B/kernels/gemm_wgmma.cu"
sed -i 's/kg_softmax_##TN##_r(const T\* x/kg_softmaxX_##TN##_r(const T* x/' "$B/kernels/rows_p.cu"
sed -i 's/gemm_sgemm_##BM##x##BN##_vec4(const float/gemm_sgemmX_##BM##x##BN##_vec4(const float/' "$B/kernels/gemm.cu"
log "base entries renamed: softmax $(grep -c kg_softmaxX_ "$B/kernels/rows_p.cu"), sgemm $(grep -c gemm_sgemmX_ "$B/kernels/gemm.cu")"
cli basecheck scripts/suites/basecheck.json --base "$B" --no-progress
python3 - "$OUT/basecheck.json" <<'PY' | tee "$OUT/basecheck-ab.txt" | tee -a "$DEV_LOG"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    ab = r.get("ab") or {}
    print(r["case"], r["verdict"], f"{r['latency_ms'] * 1000:.2f} us", "|", r.get("variant", "")[:60], "|",
          json.dumps(ab)[:400])
PY
log done
