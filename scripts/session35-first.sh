#!/usr/bin/env bash
# Session 35, a fresh machine (repo root, .devbin/ carried).
# - H200: the owed runs (scripts/session34-suites.sh: the gemm_wgmma gate against session 33's
#   entries, the dev bench's checks, the `masked` suite).
# - H100: the README's main command (scripts/session33-main.sh), the first GPU run of session 34's
#   host changes (epilogue names, the other-code verdict note).
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
  bash scripts/session34-suites.sh
else
  bash scripts/session33-main.sh
fi
