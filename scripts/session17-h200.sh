#!/usr/bin/env bash
# Session 17 on an H200 (repo root, .devbin/ carried). The quack suite first (its largest cases
# need more than 78 GiB, which is why this run asks for an H200), then the dsv3 suite (this
# machine's fractions for the cross-entropy forward kernels in the default rule), the CE probe
# (kernels/dev/ce_probe.cu), and a check of the baseline-variant note on the device.
# Under $OUT: log-h200.txt, quack.json, dsv3.json, ce-probe.txt, variant.txt.
set -u
DEV_TMP=/tmp/h2 DEV_LOG=${OUT:-/tmp/kgout}/log-h200.txt
. scripts/device-lib.sh
[ "${SKIP_QUACK:-0}" = 1 ] || cli quack quack --backends cuda
[ "${SKIP_DSV3:-0}" = 1 ] || cli dsv3 dsv3 --backends cuda
bash kernels/dev/run_ce_probe.sh > "$OUT/ce-probe.txt" 2>&1; log "ce probe rc=$?"
if [ "${SKIP_VARIANT:-0}" != 1 ]; then
  # The variant note: append one round (stores the configuration), then force another tile.
  rm -rf /tmp/kgv && cp -r baselines /tmp/kgv
  c=gemm::cuda::m2048_n2048_k2048_bf16
  { KERNELGATE_SUITE=gemm KERNELGATE_BASELINE_DIR=/tmp/kgv UPDATE_BASELINES=append .devbin/kernels "$c" --exact 2>&1 | tail -4
    KERNELGATE_SUITE=gemm KERNELGATE_BASELINE_DIR=/tmp/kgv KERNELGATE_GEMM_TILE=64x128 .devbin/kernels "$c" --exact 2>&1 | grep -iE "configuration|verdict|test result|$c" | cut -c1-400
  } > "$OUT/variant.txt" 2>&1
  log "variant check: $(grep -c 'another configuration' "$OUT/variant.txt") note line(s)"
fi
