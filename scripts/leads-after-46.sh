#!/usr/bin/env bash
# Session 46's lead, one device call (repo root, .devbin/ carried, nvcc + cuBLAS there): stream-K
# entries (kernels/dev/gemm_streamk_patch.py: 128x256_sk, 128x192_sk, 128x128_sk; compiled here
# with no spills and no serialization, its division and fix-up checked by
# kernels/dev/streamk_emu.py, never run). Why: on unseen mid-size shapes our best tile sits at
# 0.73-0.85 of cuBLAS, mostly shapes under one wave of tiles or ending on a partial wave
# (docs/kernels/session46/README.md section 3).
# 1. The dev bench on a patched copy: its checks of every tile (the _sk rows among them, each
#    launched twice and compared bitwise, which also checks that a launch leaves the flags at 0)
#    on every bench shape, both dtypes. A wrong fix-up fails there first.
# 2. SHAPES (default: the far-behind shapes of the session 46 sweeps and three full-wave
#    controls) with the plain tiles and the _sk rows, DT (default bf16), cuBLAS beside.
# 3. With PF=1 (default), the second lead: kernels/dev/gemm_l2pf_patch.py (the first unit's first
#    stages of A and B prefetched into L2 at kernel entry, before the PDL wait) against the
#    checkout's kernels, same-run pairs through the harness on 2048^3 and 4096^3 with an A/A
#    control, ROUNDS rounds (default 3; scripts/ab-variants.sh).
# If a _sk row wins where the waves are partial: a host rule for it (the workspace, the grid,
# the pick) and a gate on both models. If the prefetch pairs below 1 beyond the A/A control at
# 2048^3: ship it (gemm_wgmma.cuh) and gate. Under $OUT: log.txt, sk-checks.txt.gz,
# sk-bench-$DT.txt, ab-table.md, ab-runs.tar.gz.
set -u
. scripts/device-lib.sh
bench_variant sk kernels/dev/gemm_streamk_patch.py || { log "build failed"; exit 1; }
b=$DEV_TMP/gx-sk/gwb
bench_checks sk "$b" "$OUT/sk-checks.txt"
gzip -9 -n "$OUT/sk-checks.txt"
DT=${DT:-bf16}
# shellcheck disable=SC2086 # the shape list splits into tokens
bench_shapes "$b" "$OUT/sk-bench-$DT.txt" "128x256,128x192,128x128,64x128,128x64,192x192,128x256_sk,128x192_sk,128x128_sk" \
  ${SHAPES:-2304x640x2048 2304x640x4096 3000x768x3072 768x3072x1536 768x512x1536 512x384x1024 1792x3000x6144 768x3000x3072 1024x3000x2048 2304x3000x2048 4608x1024x12288 2048x2048x2048 4096x4096x4096 3072x3072x3072}
grep -E "^  [* ] |^    cuBLAS|^== " "$OUT/sk-bench-$DT.txt" | cut -c1-100 | tee -a "$DEV_LOG" > /dev/null
if [ "${PF:-1}" = 1 ]; then
  ROUNDS=${ROUNDS:-3} VARIANTS="pf:kernels/dev/gemm_l2pf_patch.py aa:-" PATCH_FILE=gemm_wgmma.cuh \
    SUITE=scripts/suites/sq-2048-4096.json bash scripts/ab-variants.sh
fi
log done
out_fit
