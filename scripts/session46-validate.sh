#!/usr/bin/env bash
# Session 46: held-out check of refitted pick constants (scripts/pick_refit.py). PAIRS lists
# SHAPE:TILE[,TILE] tokens (default: 30 shapes drawn from 3,000 seeded random ones, of the 163
# whose pick the refit changes, with the old and the new pick's tile); the dev bench on the
# checkout's kernels times those tiles at every split count it allows (the old pick's split is
# among them as the bench's own pick, the new one's by splits_for), DT (default bf16), L2
# read-flushed, each config checked first. Under $OUT: log.txt, validate-$DT.txt.
set -u
. scripts/device-lib.sh
bench_variant base || { log "build failed"; exit 1; }
b=$DEV_TMP/gx-base/gwb
DT=${DT:-bf16}
# shellcheck disable=SC2086 # the token list splits into tokens
bench_shapes "$b" "$OUT/validate-$DT.txt" "" ${PAIRS:-67x4352x8256:128x128,128x192 79x7432x2240:128x128 106x5304x13952:128x192,128x256 136x3776x7872:128x128,192x192 152x7296x7552:128x128,192x192 338x1792x3200:128x128,128x64 342x3384x4864:128x128,128x192 404x2560x1720:128x128,64x128 522x1280x12928:128x256,192x192 1032x336x3648:128x128,128x64 1071x512x12480:128x128,128x256 1936x2672x7504:128x256,192x192 1991x896x4960:128x128,128x256 2358x3840x13312:128x192,192x192 2518x2432x16320:128x128,128x192 3120x5824x6912:128x192,192x192 3420x2688x9792:128x192,192x192 3497x752x4400:128x192,128x256 3874x7680x3704:128x256,192x192 4005x7424x3976:128x256,192x192 4110x384x8128:128x128,128x192 4880x3712x384:128x192,128x256 4912x1024x10440:128x256 5314x4096x1600:128x192,192x192 5389x6784x2040:128x256,192x192 6537x5504x2424:128x256,192x192 6569x1920x10560:128x128,128x192 6769x656x7512:128x256,192x192 6882x1280x9472:128x192,192x192 7650x768x13184:128x128,128x192}
log done
