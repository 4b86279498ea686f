#!/usr/bin/env bash
# Next session: two leads for NSA at G >= 16 against fla (issue 11, item 4), on an H200 with fla's
# wheel carried (.whl/c) and .devbin/ built (carry both):
#   grouped (default) one warp per token, 6 warps a CTA at d128: each warp loads its own blocks,
#             about 7 TB/s of L2 reads at the bar case (b32 t1024 hq16 h1 d128 s16 bs32);
#   tiled     KERNELGATE_NSA_KERNEL=tiled: 4 tokens a CTA share one K/V ring over the union of
#             their blocks (about half the L2 reads at G = 16, each warp idle on the blocks its
#             token did not select); never measured at G >= 8;
#   w7        KERNELGATE_NSA_GROUPED_WARPS=7, only where docs/kernels/session23/nsa-grouped-w7.patch
#             is applied (7 warps a CTA at d128).
# Steps: the nsa suite under each non-default mode through the test binary (every case checked
# against the float64 reference; the verdicts against baselines are not the point), then the
# peers' nsa cases (ours and fla) in every mode, interleaved over ROUNDS rounds and ranked.
# Under $OUT: log.txt and g16.tgz (results files, logs, rank).
set -u
DEV_TMP=/tmp/s24g16
. scripts/device-lib.sh
MODES="grouped tiled"
if grep -q "nsa_fwd_bf16_d128_w7" kernels/nsa.cu; then MODES="$MODES w7"; else
  log "no _w7 entries in kernels/nsa.cu (the patch is not applied): grouped and tiled only"; fi
mode_env() {
  case "$1" in
    tiled) echo "KERNELGATE_NSA_KERNEL=tiled" ;;
    w7) echo "KERNELGATE_NSA_GROUPED_WARPS=7" ;;
  esac
}
. scripts/peer-wheels.sh install > "$OUT/wheels.log" 2>&1
for m in $MODES; do
  [ "$m" = grouped ] && continue
  # shellcheck disable=SC2046 # one VAR=VALUE word
  suite "nsa-$m" KERNELGATE_SUITE=nsa $(mode_env "$m") .devbin/kernels
done
export KERNELGATE_BASELINE_DIR=/tmp/s24-nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
ROUNDS=${ROUNDS:-2}
for r in $(seq 1 "$ROUNDS"); do
  for m in $MODES; do
    ( env_=$(mode_env "$m"); [ -n "$env_" ] && export "$env_"
      cli "fla-$m-$r" peers --kernels nsa --backends cuda,fla --no-progress )
  done
done
args=()
for m in $MODES; do for f in "$OUT"/fla-"$m"-*.json; do args+=("$m=$f"); done; done
$KG rank "${args[@]}" > "$OUT/fla-rank.md" 2>&1
log "ranked: $(tail -4 "$OUT/fla-rank.md" | tr '\n' ' ')"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf g16.tgz results-*.json fla-*.json *.log fla-rank.md && rm -f results-*.json fla-*.json *.log )
