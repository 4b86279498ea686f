#!/usr/bin/env bash
# Session 36, one fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS): the pick's
# 128x64_n2 for one long wave (gemm 2048x512x4096; n_pairs_in_pick in
# src/backend/cuda/gemm_wgmma.rs), and the gemm gate of the shipped kernel.
# 1. scripts/session36-modes.sh with MODES "auto 128x64 pdl0 p0x64" (the pick, now 128x64_n2;
#    the 128x64 it replaced; both under KERNELGATE_GEMM_PDL=0), ROUNDS 3.
# 2. scripts/session35-gate.sh with AB=0: the gemm cases of default, gemm and gemm_edges against
#    the committed baselines, the dev bench's checks, gemm-table.md; with MAIN=1 then the
#    README's main command.
# Under $OUT: log.txt, modes.txt, modes-rank.md, modes-runs.tar.gz, gate.tgz, gemm-table.md,
# bench-checks.txt (+ results-main.json, main.log).
set -u
MODES=${MODES:-auto 128x64 pdl0 p0x64} ROUNDS=${ROUNDS:-3} bash scripts/session36-modes.sh
AB=0 bash scripts/session35-gate.sh
