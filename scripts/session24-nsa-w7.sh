#!/usr/bin/env bash
# Next session: the 7-warp grouped NSA experiment (docs/kernels/session23/nsa-grouped-w7.patch),
# on an H200 with fla's wheel carried (.whl/c) and .devbin/ built from the patched tree.
#   1. the nsa suite with KERNELGATE_NSA_GROUPED_WARPS=7 through the test binary: every case
#      checked against the float64 reference (only the grouped, G >= 8, cases change kernel);
#   2. the peers' nsa cases (ours and fla), 6 and 7 warps interleaved over ROUNDS rounds, ranked.
# Under $OUT: log.txt and w7.tgz (results files, logs, rank).
set -u
DEV_TMP=/tmp/s24w7
. scripts/device-lib.sh
if ! grep -q "nsa_fwd_bf16_d128_w7" kernels/nsa.cu; then
  log "kernels/nsa.cu has no _w7 entries: apply docs/kernels/session23/nsa-grouped-w7.patch and rebuild .devbin first"
  exit 2
fi
. scripts/peer-wheels.sh install > "$OUT/wheels.log" 2>&1
suite nsa-w7 KERNELGATE_SUITE=nsa KERNELGATE_NSA_GROUPED_WARPS=7 .devbin/kernels
export KERNELGATE_BASELINE_DIR=/tmp/s24-nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
mode_env() { [ "$1" = w7 ] && echo "KERNELGATE_NSA_GROUPED_WARPS=7"; }
ROUNDS=${ROUNDS:-2}
for r in $(seq 1 "$ROUNDS"); do
  for m in w6 w7; do
    ( env_=$(mode_env "$m"); [ -n "$env_" ] && export $env_
      cli "fla-$m-$r" peers --kernels nsa --backends cuda,fla --no-progress )
  done
done
args=()
for m in w6 w7; do for f in "$OUT"/fla-"$m"-*.json; do args+=("$m=$f"); done; done
$KG rank "${args[@]}" > "$OUT/fla-rank.md" 2>&1
log "ranked: $(tail -3 "$OUT/fla-rank.md" | tr '\n' ' ')"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf w7.tgz results-*.json fla-*.json *.log fla-rank.md && rm -f results-*.json fla-*.json *.log )
