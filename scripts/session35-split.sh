#!/usr/bin/env bash
# Session 35, one machine (repo root, .devbin/ carried, nvcc + cuBLAS): patched tails of the
# 128x256_ts overlapped path against the checkout's kernel.
# 1. Through the harness: scripts/ab-variants.sh with VARIANTS (NAME:PATCH+ARGS words), each
#    paired with the checkout in the same runs, ROUNDS rounds, on scripts/suites/st35.json.
#    Session 35 ran it twice against session 34's kernel, with patches since removed (each
#    refuses the kernel that shipped the skew): VARIANTS="pairs:P+pairs st:P+tail" with
#    P=`git show 43abfe1:kernels/dev/gemm_split_tail_patch.py` (H200 f3aff4cf), and
#    VARIANTS="skew:S skew2:S+2" with S=`git show 9d21fce:kernels/dev/gemm_wg_skew_patch.py`
#    (H200 53a7ac6e). Against today's kernel: VARIANTS="old:kernels/dev/gemm_skew_revert_patch.py".
# 2. The dev bench's checks of every tile on every bench shape, both dtypes, for every variant
#    (built in the background during 1).
# Under $OUT: log.txt, ab-table.md, ab-runs.tar.gz, NAME-checks.txt per variant.
set -u
. scripts/device-lib.sh
VARIANTS=${VARIANTS:?VARIANTS="NAME:PATCH[+ARG...] ...": the variants to time}
(
  for w in $VARIANTS; do
    IFS=+ read -r -a pa <<< "${w#*:}"
    bench_variant "${w%%:*}" "${pa[@]}"
  done
) > /dev/null 2>&1 &
VARIANTS=$VARIANTS SUITE=scripts/suites/st35.json ROUNDS=${ROUNDS:-2} bash scripts/ab-variants.sh > /dev/null
wait
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
for w in $VARIANTS; do
  v=${w%%:*}
  [ -x "$DEV_TMP/gx-$v/gwb" ] && bench_checks "$v" "$DEV_TMP/gx-$v/gwb" "$OUT/$v-checks.txt"
done
log done
