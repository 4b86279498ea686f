#!/usr/bin/env bash
# Session 35, a fresh machine (repo root, .devbin/ carried).
# - H200: the owed runs (scripts/session34-suites.sh: the gemm_wgmma gate against session 33's
#   entries, the dev bench's checks, the `masked` suite); with MAIN=1 then the README's main
#   command as well (the second H200, gated against the first's imported entries).
# - H100: the README's main command (scripts/session33-main.sh), the first GPU run of session 34's
#   host changes (epilogue names, the other-code verdict note).
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
  bash scripts/session34-suites.sh
  [ "${MAIN:-0}" = 1 ] && bash scripts/session33-main.sh
else
  bash scripts/session33-main.sh
fi
