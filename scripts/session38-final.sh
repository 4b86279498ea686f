#!/usr/bin/env bash
# Session 38, last machine (repo root, .devbin/ carried with .devbin/old-kernels: the kernels of
# the commit before the NSA helpers' merge into mma_sync.cuh). With the final binaries:
# 1. `kernelgate rehash --since .devbin/old-kernels --dry-run` with this machine's NVRTC: whether
#    the merge left the four NSA mma.sync cubins as they were here too (machine-code.md).
# 2. nsa and nsa_irregular through the test binary against the moved entries.
# 3. The README's main command (scripts/session33-main.sh).
# Under $OUT: log.txt, machine-code.md, gate.tgz, results-main.json, main.log.
set -u
{ date -u; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader
  ls /usr/local/cuda/lib64/libnvrtc.so* 2>/dev/null
  time .devbin/kernelgate rehash --since .devbin/old-kernels --dry-run; } > "$OUT/machine-code.md" 2>&1
tail -4 "$OUT/machine-code.md"
( . scripts/device-lib.sh
  suite nsa KERNELGATE_SUITE=nsa .devbin/kernels
  suite nsa_irregular KERNELGATE_SUITE=nsa_irregular .devbin/kernels
  cd "$OUT" && tar czf gate.tgz results-*.json && rm -f results-*.json )
bash scripts/session33-main.sh
ls -la "$OUT"
