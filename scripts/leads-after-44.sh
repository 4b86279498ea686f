#!/usr/bin/env bash
# The leads session 44 left, ready for a device call (repo root, .devbin/ carried):
# 1. The forced 192x192 tile (now with the overlapped epilogue and skewed tail) against the pick on
#    larger shapes (scripts/suites/t192_44.json), two interleaved rounds, every launch alone: session
#    44's run of it did not come back (the device returns at most 8 files). Where 192x192 wins by
#    more than the noise on both models, the pick could take it beyond 3072^3.
# 2. 2048x512x4096 on a second H200 (session 43's lead 1): the automatic tile against 128x64_n2,
#    three interleaved rounds (H200 20c38226: bf16 17.57 against 19.74 us, fp16 19.52 against 19.17).
# 3. NTC=1 (on an H200): 8192x8x8192 on each (R, H) configuration of the tensor-core skinny-N
#    kernel (KERNELGATE_SKINNY_NTC) against the pick, two interleaved rounds, every launch alone:
#    whether the H200's faster memory wants more bytes in flight than the H100-tuned pick gives.
# 4. NVD=1: scripts/nvrtc-determinism.sh kernels/gemm.cu with N=6 (about a minute): whether this
#    machine permits `setarch -R`, and its hashes without randomisation, to compare with another
#    fresh machine's and with session 44's here (docs/kernels/session44/nvrtc-determinism.txt).
# G512=0 / T192=0 leave parts 2 / 1 out (session 45: the H100 call skips part 2).
# SUITES (default: gemm gemm_edges) runs gate suites first: on an H100 this gives the cases the
# cluster change restarted (1000^3, 777x1000x136, 4096x1000x4096, 129x257x513, 777x999x135) their
# second machine.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm gemm_edges}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
( cd "$OUT" && gzip -9 -n results-*.json 2>/dev/null )
mode_env() {
  case $1 in
    pick) echo "KERNELGATE_BATCH=1" ;;
    t192) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=192x192" ;;
    auto) echo "" ;;
    n2) echo "KERNELGATE_GEMM_TILE=128x64_n2" ;;
    r1h4 | r1h8 | r2h2 | r2h4) echo "KERNELGATE_BATCH=1 KERNELGATE_SKINNY_NTC=$1" ;;
  esac
}
if [ "${T192:-1}" = 1 ]; then
  interleave t192 scripts/suites/t192_44.json pick t192
  archive_runs t192
fi
if [ "${G512:-1}" = 1 ]; then
  ROUNDS=3 interleave g512 scripts/suites/g2048x512_43.json auto n2
  archive_runs g512
fi
if [ "${NTC:-0}" = 1 ]; then
  interleave ntc scripts/suites/skinny8_44.json pick r1h4 r1h8 r2h2 r2h4
  archive_runs ntc
fi
if [ "${NVD:-0}" = 1 ]; then
  N=6 timeout 300 bash scripts/nvrtc-determinism.sh kernels/gemm.cu > "$OUT/nvrtc-determinism.txt" 2>&1
  log "nvrtc-determinism rc=$?"; tee -a "$DEV_LOG" < "$OUT/nvrtc-determinism.txt"
fi
log done
out_fit
