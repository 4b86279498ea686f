#!/usr/bin/env bash
# Session 17: the cross-entropy forward kernels through the harness, same machine, interleaved
# rounds (repo root, .devbin/ carried). QUACK=1 first runs the quack suite whole (its largest cases
# need more than 78 GiB: the reason an H200 is asked for). Then scripts/suites/ce-fwd.json under
# KERNELGATE_CE_FWD = off (rows_p.cu's rule: `_r` or `_p`), regs (`_g`), rows (`_w`) and auto,
# in the order given by MODES, ROUNDS times (each round reversed from the last).
# Under $OUT: log.txt, ce-<mode>-<round>.json, ce-rank.md (`kernelgate rank` of them; plus quack.json).
set -u
DEV_TMP=/tmp/ce
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
read -r -a modes <<< "${MODES:-off regs rows}"
# Every mode's rounds ranked case by case (kernelgate rank: the winner by the gate's rule).
mode_env() { echo "KERNELGATE_CE_FWD=$1"; }
interleave ce scripts/suites/ce-fwd.json "${modes[@]}"
