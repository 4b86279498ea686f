#!/usr/bin/env bash
# Session 12, a fresh machine (repo root, .devbin/ carried): the default suite gated against the
# committed baselines (scripts/gate-evidence.sh gate-only), then scripts/session12-last.sh (two
# rmsnorm_bwd append rounds, the cross-entropy launch configurations).
# Under $OUT: log.txt, fresh.tar.gz (gate results and log), last.tar.gz, ce2.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/fr
export KERNELGATE_CACHE_DIR=/tmp/kgcache
OUT=/tmp/fr bash scripts/gate-evidence.sh gate-only > /dev/null 2>&1
cat /tmp/fr/log.txt >> "$OUT/log.txt"
tar -C /tmp/fr -czf "$OUT/fresh.tar.gz" .
bash scripts/session12-last.sh
