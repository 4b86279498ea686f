#!/usr/bin/env bash
# Session 21's first device run of kernels/nsa_local.cu (it ran in session 22:
# docs/kernels/session22/). It is now the check, rank and launch parts of
# scripts/session22-nsa.sh, which holds them; PARTS still picks among them.
exec env PARTS="${PARTS:-check rank launches}" bash "$(dirname "$0")/session22-nsa.sh" "$@"
