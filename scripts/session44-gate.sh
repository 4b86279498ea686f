#!/usr/bin/env bash
# Session 44's gate calls (repo root, .devbin/ carried), each on a fresh machine:
# 1. the gate suites (SUITES, default gemm gemm_edges smoke) with the committed baselines;
# 2. AB=1: same-run A/B at 3072^3 (sq3072_44) against the checkout: an A/A control, the checkout
#    without the ring store (ring: GW_LASTSTAGE=0) and session 43's kernel (old: GW_OVL3=0 too),
#    ROUNDS (default 3) rounds;
# 3. G512=1: session 43's lead 1, 2048x512x4096 on the automatic tile against 128x64_n2, three
#    interleaved rounds (scripts/leads-after-43.sh's first part);
# 4. SQ=1: issue 12's squares (sq44), ours and cuBLAS as the gate times them, three runs.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
( cd "$OUT" && gzip -9 -n results-*.json 2>/dev/null )
if [ "${AB:-0}" = 1 ]; then
  ROUNDS=${ROUNDS:-3} PATCH_FILE=gemm_wgmma.cuh SUITE=scripts/suites/sq3072_44.json \
    VARIANTS="aa:- ring:kernels/dev/gemm_define_patch.py+GW_LASTSTAGE=0 old:kernels/dev/gemm_define_patch.py+GW_OVL3=0+GW_LASTSTAGE=0" \
    timeout 200 bash scripts/ab-variants.sh > /dev/null
fi
if [ "${G512:-0}" = 1 ]; then
  mode_env() { case $1 in pick) echo "" ;; n2) echo "KERNELGATE_GEMM_TILE=128x64_n2" ;; esac; }
  ROUNDS=3 interleave g512 scripts/suites/g2048x512_43.json pick n2
  archive_runs g512
fi
if [ "${SQ:-0}" = 1 ]; then
  for r in 1 2 3; do cli "sq-$r" scripts/suites/sq44.json; done
  ( cd "$OUT" && tar czf sq-runs.tar.gz sq-*.json && rm -f sq-[0-9]*.json )
fi
log done
out_fit
