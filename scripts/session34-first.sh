#!/usr/bin/env bash
# Session 34, first call (repo root, .devbin/ carried, nvcc + cuBLAS). Nothing in the product
# changes unless the numbers say so.
# 0. On an H200 only (fresh machine): session 33's gate of the shipped gemm_wgmma kernel
#    (AB=0 scripts/session33-gate.sh): the second H200 machine its entries are owed.
# 1. The dev bench, base against rlx (kernels/dev/gemm_cluster_relaxed_patch.py: the kernel-start
#    cluster barrier arrives .relaxed instead of .release), scripts/session33-last.sh with
#    NCU_RUN=0: 2048^3 on 128x256 and 128x256_c2, 4096^3, 3072^3, 1024^3.
# 2. Through the harness with the patch applied to this machine's copy of kernels/ (never
#    brought back): scripts/suites/sq-2048-4096.json, pick (128x256_ts) against
#    KERNELGATE_GEMM_TILE=128x256_c2, ROUNDS interleaved rounds, ranked.
# Under $OUT: log.txt, (gate.tgz, gemm-table.md, bench-checks.txt), rlx-checks.txt,
# rlx-bench.txt, rlx-table.md, c2r-rank.md, c2r-runs.tar.gz.
set -u
. scripts/device-lib.sh
if is_h200; then
  AB=0 bash scripts/session33-gate.sh
  rounds=2
else
  rounds=3
fi
ROUNDS=$rounds VARIANT=rlx PATCH=kernels/dev/gemm_cluster_relaxed_patch.py NCU_RUN=0 bash scripts/session33-last.sh
python3 kernels/dev/gemm_cluster_relaxed_patch.py kernels/gemm_wgmma.cu && log "patched this machine's kernels/gemm_wgmma.cu (rlx)"
mode_env() { [ "$1" = c2 ] && echo "KERNELGATE_GEMM_TILE=128x256_c2"; true; }
ROUNDS=$rounds interleave c2r scripts/suites/sq-2048-4096.json pick c2
archive_runs c2r
grep -E "gemm::cuda" "$OUT/c2r-rank.md" | cut -c1-200 | tee -a "$DEV_LOG"
log "first done"
