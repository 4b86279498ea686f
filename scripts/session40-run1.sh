#!/usr/bin/env bash
# Session 40, a fresh machine (repo root; .devbin/ and .whl/fla/ carried): SUITES (default
# "gemm_edges gemm") through the test binary, then NSA G >= 16 beside fla's parallel_nsa
# (scripts/suites/nsa-fla40.json, two CLI rounds) with fla-core installed from the carried wheel.
# Under $OUT: log.txt, results-*.json, nsa-fla-*.json.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm_edges gemm}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
if ls .whl/fla/*.whl > /dev/null 2>&1; then
  python3 -m pip install --no-deps --no-index --target /tmp/site -q .whl/fla/*.whl >> "$DEV_LOG" 2>&1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  python3 -c "import fla, fla.ops.nsa; print('fla', fla.__version__)" 2>&1 | tail -1 | tee -a "$DEV_LOG"
  for r in 1 2; do cli "nsa-fla-$r" scripts/suites/nsa-fla40.json; done
fi
ls -la "$OUT"
