#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): forced K splits (KERNELGATE_GEMM_SPLITK) and tiles
# against the pick on the M <= 16 and few-tile GEMMs (scripts/suites/splitk.json), same binary, one run
# after another; cuBLAS once. Host-only knobs: no kernel source changes.
# Under $OUT: log-splitk.txt, splitk.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/spk
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-splitk.txt"
$KG run --suite scripts/suites/splitk.json --backends cuda,cublas -o /tmp/spk/pick.json > /tmp/spk/pick.log 2>&1
grep -E "gemm (cuda|cublas)" /tmp/spk/pick.log | sed -E 's/ \(tma.*//' | cut -c1-150 | tee -a "$OUT/log-splitk.txt"
for v in "SPLITK=2" "SPLITK=8" "SPLITK=12" "SPLITK=16" "TILE=64x256" "TILE=64x256 SPLITK=8" "TILE=64x128 SPLITK=8" "TILE=64x128 SPLITK=16"; do
  envs=""; for kv in $v; do envs="$envs KERNELGATE_GEMM_$kv"; done
  env $envs $KG run --suite scripts/suites/splitk.json --backends cuda -o "/tmp/spk/$v.json" > "/tmp/spk/$v.log" 2>&1
  echo "== $v" | tee -a "$OUT/log-splitk.txt"
  $KG compare /tmp/spk/pick.json "/tmp/spk/$v.json" | grep -E "gemm::cuda" | cut -c1-110 | tee -a "$OUT/log-splitk.txt"
done
tar -C /tmp/spk -czf "$OUT/splitk.tar.gz" .
