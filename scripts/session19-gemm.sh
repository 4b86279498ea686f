#!/usr/bin/env bash
# Session 19 (repo root, .devbin/ carried), one machine (H100 or H200):
#   1. QUACK=1: the quack suite whole (its largest cases need more than 78 GiB: the reason an H200
#      is asked for);
#   2. scripts/suites/gemv.json (M <= 8) with the GEMV kernels (`new`, now M <= 8, the M = 5-8
#      entry loading B 8 bytes at a time) against KERNELGATE_GEMV=0 (`old`: the wgmma tiles /
#      gemm_skinny.cu), interleaved ROUNDS times, cuBLAS in every run, ranked; the SASS of the
#      eight-row entry's loads;
#   3. PDL=1: scripts/suites/gemm-small.json with KERNELGATE_GEMM_PDL=inner against `all` (the
#      default since session 18, measured then on an H100 only), interleaved, ranked;
#   4. the gemm and gemm_edges suites and the default suite's gemm cases through the test binary,
#      gated against the committed baselines, and the table of ours vs cuBLAS.
# Under $OUT: log.txt, gemv-rank.md, pdl-rank.md, gemm-table.md, sass-bf16-8.txt, runs.tar.gz.
set -u
DEV_TMP=/tmp/s19
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
MODES="new old" SASS=1 bash scripts/session18-gemv.sh
mode_env() { echo "KERNELGATE_GEMM_PDL=$1"; }
[ "${PDL:-0}" = 1 ] && interleave pdl scripts/suites/gemm-small.json inner all
QUACK=0 DEFAULT=1 bash scripts/session18-gemm.sh
( cd "$OUT" && tar czf runs.tar.gz ./*.json && rm -f ./*.json gemv-table.md )
ls "$OUT" | tee -a "$DEV_LOG"
