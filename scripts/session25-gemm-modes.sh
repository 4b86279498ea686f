#!/usr/bin/env bash
# Next session: why ~40% of the launches of gemm 2048x512x4096 on the 128x64 tile (128 CTAs on
# 132 SMs, 64 K blocks) take 6-7 us longer, sample by sample, on every H100 and H200 tried
# (docs/kernels/session24/README.md), while 128x64_n2 and cuBLAS run in one mode.
# (repo root, .devbin/ carried) Under $OUT: log.txt, modes.txt, ncu.txt, bundle.tgz.
#   1. the sample distribution under the read flush / the write flush / a 200 us hold
#      (KERNELGATE_L2_FLUSH, KERNELGATE_HOLD_US), ROUNDS interleaved rounds;
#      (MODES picks them; also pdl0 / pdlinner: KERNELGATE_GEMM_PDL=0 / inner, n2 / n2p0: the
#      128x64_n2 tile under the default PDL / PDL 0);
#   2. (NCU_RUN=1, the default) Nsight Compute on 120 launches of the 128x64 kernel with caches and clocks left alone
#      (--cache-control none --clock-control none): duration, SM activity spread, DRAM and L2
#      traffic per launch, to set the slow launches beside the fast ones.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s25g
. scripts/device-lib.sh
mode_env() {
  case "$1" in
    read) echo "" ;;
    write) echo "KERNELGATE_L2_FLUSH=write" ;;
    hold200) echo "KERNELGATE_HOLD_US=200" ;;
    pdl0) echo "KERNELGATE_GEMM_PDL=0" ;;
    pdlinner) echo "KERNELGATE_GEMM_PDL=inner" ;;
    n2) echo "KERNELGATE_GEMM_TILE=128x64_n2" ;;
    n2p0) echo "KERNELGATE_GEMM_TILE=128x64_n2 KERNELGATE_GEMM_PDL=0" ;;
  esac
}
export KERNELGATE_BASELINE_DIR=/tmp/s25g-nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
# shellcheck disable=SC2086 # MODES is a word list
ROUNDS=${ROUNDS:-2} interleave flush scripts/suites/gemm-2048x512.json ${MODES:-read write hold200}
args=(); for f in "$OUT"/flush-*-*.json; do m=$(basename "$f" .json); args+=("${m#flush-}=$f"); done
python3 scripts/modes-summary.py --filter m2048_n512 "${args[@]}" > "$OUT/modes.txt" 2>&1
tee -a "$DEV_LOG" < "$OUT/modes.txt"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ "${NCU_RUN:-1}" = 1 ] && timeout 240 "$NCU" --cache-control none --clock-control none -k regex:gemm_wgmma_bf16_128x64$ -c 120 \
  --metrics gpu__time_duration.sum,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_active.avg,dram__bytes_read.sum,lts__t_sectors_op_read.sum,lts__t_sector_op_read_hit_rate.pct,launch__grid_size \
  --csv $KG run --suite scripts/suites/gemm-2048x512.json --backends cuda --max-time 200ms --skip-verify \
  -o "$DEV_TMP/ncu-run.json" > "$OUT/ncu.txt" 2>&1
log "ncu rc=$?"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf bundle.tgz flush-*-*.json *.log 2>/dev/null; rm -f flush-*-*.json *.log )
ls -la "$OUT"
