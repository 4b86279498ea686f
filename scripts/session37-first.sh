#!/usr/bin/env bash
# Session 37, a fresh machine (repo root, .devbin/ carried with .devbin/old-kernels: the kernels
# of 6de6a6b, before gemm_wgmma.cu's two K-block loop bodies became one).
# - H200: the owed gate of the skewed GEMM tail (scripts/session35-gate.sh, AB=0: the gemm cases
#   of default, gemm and gemm_edges against the committed baselines, the dev bench's checks,
#   gemm-table.md), with MAIN=1 the README's main command (off by default since the device time
#   left late in session 37 would not cover both), then CODE below.
# - H100: with H100=gate the same gate (its gemm_wgmma entries were rehashed by
#   `rehash --since`: the gate must find them current) and CODE; with H100=code CODE alone;
#   with H100=nsa scripts/session37-nsa.sh (the diagonal-first NSA lists against .devbin/base);
#   with H100=verify CODE and the nsa and nsa_irregular suites through the test binary (the
#   refactored NSA kernels against their moved entries);
#   with H100=suites the suites named in SUITES (default "mha attention_bars") through the test
#   binary against the committed baselines (gate.tgz), to import;
#   with H100=codehash scripts/session37-codehash.sh (cubin hashes end to end); with H100=main
#   the README's main command (scripts/session33-main.sh);
#   otherwise stop at once (keep the device time for H200s).
# CODE: `kernelgate rehash --since .devbin/old-kernels --dry-run` with this machine's NVRTC:
# whether the merge left the cubin as it was here too (machine-code.md).
# Under $OUT: log.txt, gate.tgz, gemm-table.md, bench-checks.txt (+ results-main.json, main.log),
# machine-code.md.
set -u
code() {
  [ -d .devbin/old-kernels ] || { echo "no .devbin/old-kernels: machine-code check skipped"; return; }
  { date -u; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
    ls /usr/local/cuda/lib64/libnvrtc.so* 2>/dev/null
    time .devbin/kernelgate rehash --since .devbin/old-kernels --dry-run; } > "$OUT/machine-code.md" 2>&1
  tail -8 "$OUT/machine-code.md"
}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if echo "$gpu" | grep -q H200; then
  MAIN=${MAIN:-0} AB=0 bash scripts/session35-gate.sh
  code
elif [ "${H100:-}" = gate ]; then
  AB=0 bash scripts/session35-gate.sh
  code
elif [ "${H100:-}" = code ]; then
  code
elif [ "${H100:-}" = verify ]; then
  code
  ( . scripts/device-lib.sh
    suite nsa KERNELGATE_SUITE=nsa .devbin/kernels
    suite nsa_irregular KERNELGATE_SUITE=nsa_irregular .devbin/kernels
    cd "$OUT" && tar czf gate.tgz results-*.json && rm -f results-*.json )
elif [ "${H100:-}" = suites ]; then
  ( . scripts/device-lib.sh
    for n in ${SUITES:-mha attention_bars}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
    cd "$OUT" && tar czf gate.tgz results-*.json && rm -f results-*.json )
elif [ "${H100:-}" = main ]; then
  bash scripts/session33-main.sh
elif [ "${H100:-}" = codehash ]; then
  bash scripts/session37-codehash.sh
elif [ "${H100:-}" = nsa ]; then
  bash scripts/session37-nsa.sh
else
  nvidia-smi --query-gpu=name,uuid --format=csv,noheader; echo "not an H200: stopping"
fi
