#!/usr/bin/env bash
# Session 34, second call (a fresh machine after give_back; repo root, .devbin/ carried).
# 0. On an H200 only: session 33's gate of the shipped gemm_wgmma kernel (AB=0
#    scripts/session33-gate.sh), the second H200 machine its entries are owed.
# 1. scripts/ab-variants.sh on scripts/suites/sq-2048-4096.json: aa (unpatched copy, the A/A
#    control) and pf (kernels/dev/gemm_prefetch_entry_patch.py: tensor maps prefetched at kernel
#    entry, before the PDL wait), each against the checkout's kernels in the same run.
set -u
. scripts/device-lib.sh
is_h200 && AB=0 bash scripts/session33-gate.sh
VARIANTS=${VARIANTS:-"aa:- pf:kernels/dev/gemm_prefetch_entry_patch.py"} ROUNDS=${ROUNDS:-2} bash scripts/ab-variants.sh
