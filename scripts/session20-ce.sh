#!/usr/bin/env bash
# Session 20 (repo root, .devbin/ carried, .devbin/base/kernels = HEAD's kernels before the fp32
# change). QUACK=1 first runs the quack suite whole (its largest cases need more than 78 GiB: the
# reason an H200 is asked for; also issue 13's wall-time check).
#  1. CE=1: scripts/suites/ce-3072.json, cross-entropy forward on 3072-wide rows, interleaved
#     ROUNDS times and ranked: auto (bulk-staged `_r` at 4096 x 3072) against the register rows
#     forced as cew_layout's w6 (rows) and as a warp per row (rows:12:2, rows:12:1), each with
#     and without the programmatic dependent launch (KERNELGATE_CE_PDL).
#  2. CEPDL=1: scripts/suites/ce-short.json (the `_w*` shapes M 4096/16384 x N 3072/6144/8192)
#     under auto with KERNELGATE_CE_PDL=0 and =1.
#  3. FP32=1: scripts/suites/gemm-fp32.json, ours (BK 16 / 2-stage 128x128) beside cuBLAS and
#     beside HEAD's kernels (--base .devbin/base, paired same-run ratios).
# Under $OUT: log.txt, quack.json, ce-rank.md, ce-runs.tar.gz, cepdl-rank.md, cepdl-runs.tar.gz,
# fp32.json.
set -u
DEV_TMP=/tmp/s20ce
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
if [ "${CE:-1}" = 1 ]; then
  mode_env() {
    case $1 in
      r) echo "KERNELGATE_CE_PDL=0" ;;
      w6) echo "KERNELGATE_CE_FWD=rows KERNELGATE_CE_PDL=0" ;;
      w6p) echo "KERNELGATE_CE_FWD=rows KERNELGATE_CE_PDL=1" ;;
      w12) echo "KERNELGATE_CE_FWD=rows:12:2 KERNELGATE_CE_PDL=0" ;;
      w12p) echo "KERNELGATE_CE_FWD=rows:12:2 KERNELGATE_CE_PDL=1" ;;
      w12r1p) echo "KERNELGATE_CE_FWD=rows:12:1 KERNELGATE_CE_PDL=1" ;;
    esac
  }
  ROUNDS=${ROUNDS:-3} interleave ce scripts/suites/ce-3072.json r w6 w6p w12 w12p w12r1p
  archive_runs ce
fi
if [ "${CEPDL:-1}" = 1 ]; then
  mode_env() { echo "KERNELGATE_CE_PDL=$1"; }
  ROUNDS=${ROUNDS:-3} interleave cepdl scripts/suites/ce-short.json 0 1
  archive_runs cepdl
fi
if [ "${FP32:-1}" = 1 ]; then
  cli fp32 scripts/suites/gemm-fp32.json --backends cublas,cuda --base .devbin/base
fi
ls "$OUT" | tee -a "$DEV_LOG"
