#!/usr/bin/env bash
# Session 45 (repo root, .devbin/ carried): the pick against 192x192, 128x192 and 128x256 forced
# on scripts/suites/longk_45.json (bf16, every launch alone), ROUNDS (default 2) interleaved
# rounds, ranked: data for refitting the tile costs of src/backend/cuda/gemm_wgmma.rs, whose
# linear model picks 128x192 at 3072x3072x8192 where 192x192 ran 6% faster (session 45, H100
# 55b00862 and H200 d0dfb060). Under $OUT: log.txt, tiles-rank.md, tiles-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() { pick_or_forced "$1" KERNELGATE_GEMM_TILE; }
# MODES: the tiles forced beside the pick (default 192x192 128x192 128x256; the next session's
# refit wants 128x128 too, at 2304x2304xK where the model would move to it)
# shellcheck disable=SC2086 # mode words
ROUNDS=${ROUNDS:-2} interleave tiles scripts/suites/longk_45.json pick ${MODES:-192x192 128x192 128x256}
archive_runs tiles
log done
out_fit
