#!/usr/bin/env bash
# Prepared in session 20 for the next device session (not yet run). Repo root, .devbin/ carried.
# QUACK=1 first runs the quack suite whole (its largest cases need more than 78 GiB: the reason
# an H200 is asked for). Then:
#   1. CEPROBE=1: kernels/dev/run_ce_probe.sh on this GPU. Its new fourth mode replays the
#      harness's batch from a CUDA graph beside the same batch launched on the stream, for every
#      layout at 4096 x 3072 bf16: does graph replay explain why the harness times the warp-per-row
#      layout at 10.2 us where the probe read 8.7 (H200, issue 13's last shape)?
#   2. NSA=1: the nsa suite through the test binary, gated (the 63-64 entries per model that
#      session 20 restarted hold one round: this machine's results are their second round).
# Under $OUT: log.txt, ce-probe.txt, results-nsa.json (+ quack.json).
set -u
DEV_TMP=/tmp/s21
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
if [ "${CEPROBE:-1}" = 1 ]; then
  bash kernels/dev/run_ce_probe.sh > "$OUT/ce-probe.txt" 2>&1
  log "ce probe rc=$?: $(grep -c 'graph-' "$OUT/ce-probe.txt") timed kernels"
fi
[ "${NSA:-1}" = 1 ] && suite nsa KERNELGATE_SUITE=nsa .devbin/kernels
ls "$OUT" | tee -a "$DEV_LOG"
