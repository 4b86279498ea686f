#!/usr/bin/env bash
# What NVRTC's output depends on (session 44): N compiles (default 12) of FILE (default
# kernels/gemm.cu) each in a fresh process, in three modes, and how many distinct PTX / cubin
# hashes each gave:
#   aslr     as every process runs (address-space layout randomised);
#   fixed    without randomisation (`setarch -R`), the same environment every time;
#   fixed+env without randomisation, the environment grown by a different amount each time.
# No GPU needed (NVRTC and the CUDA headers: LD_LIBRARY_PATH / CUDA_HOME). Prints one line per mode.
set -u
cd "$(dirname "$0")/.."
f=${1:-kernels/gemm.cu}
n=${N:-12}
py=scripts/nvrtc-determinism.py
summary() { sort | uniq -c | sort -rn | awk -v m="$1" '{c[NR]=$1; h[NR]=$3 "/" $5} END {s=""; for (i=1;i<=NR;i++) s=s " " c[i] "x" h[i]; print m ": " NR " distinct (ptx/cubin):" s}'; }
for i in $(seq 1 "$n"); do python3 $py "$f"; done | summary aslr
if setarch "$(uname -m)" -R true 2>/dev/null; then
  for i in $(seq 1 "$n"); do setarch "$(uname -m)" -R python3 $py "$f"; done | summary fixed
  for i in $(seq 1 "$n"); do
    PAD=$(head -c $((i * 997)) /dev/zero | tr '\0' x) setarch "$(uname -m)" -R python3 $py "$f"
  done | summary fixed+env
else
  echo "fixed: setarch -R is not permitted here (personality(ADDR_NO_RANDOMIZE) refused)"
fi
