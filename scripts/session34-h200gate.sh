#!/usr/bin/env bash
# Session 34: the second H200 gate of session 33's gemm_wgmma kernel (AB=0
# scripts/session33-gate.sh on a fresh machine). On any other GPU it stops at once.
set -u
. scripts/device-lib.sh
if is_h200; then AB=0 bash scripts/session33-gate.sh; else log "not an H200: nothing run"; fi
