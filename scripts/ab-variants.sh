#!/usr/bin/env bash
# Same-run A/B of patched kernel trees against the checkout's kernels, through the harness
# (repo root, .devbin/ carried). For every NAME:PATCH word of VARIANTS: a project root under
# $DEV_TMP/root-NAME with fixtures/ and baselines/ linked and a copy of kernels/ with
# `python3 PATCH kernels/$PATCH_FILE ARGS` applied (PATCH_FILE: default gemm_wgmma.cu) (PATCH "-": an unpatched copy, the A/A control
# that shows the pairing's own bias), then ROUNDS rounds (order reversed each round) of
# `kernelgate run --suite SUITE --base <checkout>` from that root. Writes $OUT/ab-NAME-ROUND.json
# and $OUT/ab-table.md (per cuda case and run: our time, the paired ratio to the base with its
# interval, and ours/cuBLAS from the same run).
# A word NAME:PATCH+ARG1+ARG2 passes ARG1 ARG2 to the patch; NAME:P1+ARGS,P2+ARGS applies several
# patches in order.
# Usage: VARIANTS="aa:- pf:kernels/dev/gemm_prefetch_entry_patch.py" SUITE=... bash scripts/ab-variants.sh
set -u
. scripts/device-lib.sh
SUITE=$(realpath "${SUITE:-scripts/suites/sq-2048-4096.json}")
PF=${PATCH_FILE:-gemm_wgmma.cu}
names=()
for w in ${VARIANTS:?}; do
  n=${w%%:*} p=${w#*:} r=$DEV_TMP/root-$n
  rm -rf "$r" && mkdir -p "$r" && cp -r kernels "$r/" && ln -s "$PWD/fixtures" "$PWD/baselines" "$r/"
  if [ "$p" != - ]; then
    ok=1
    IFS=, read -r -a pl <<< "$p"
    for q in "${pl[@]}"; do
      IFS=+ read -r -a pa <<< "$q"
      python3 "${pa[0]}" "$r/kernels/$PF" "${pa[@]:1}" || { ok=0; break; }
    done
    [ $ok = 1 ] || { log "variant $n: patch $p failed, skipped"; continue; }
  fi
  log "variant $n: $(diff "kernels/$PF" "$r/kernels/$PF" | grep -c '^[<>]') changed lines"
  names+=("$n")
done
for rd in $(seq 1 "${ROUNDS:-2}"); do
  for n in "${names[@]}"; do
    KERNELGATE_ROOT=$DEV_TMP/root-$n cli "ab-$n-$rd" "$SUITE" --base "$PWD" --no-progress
  done
  names=($(printf '%s\n' "${names[@]}" | tac))
done
python3 - "$OUT" <<'PY' | tee "$OUT/ab-table.md" | tee -a "$DEV_LOG"
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ab-*-*.json"))):
    run = os.path.basename(f)[3:-5]
    res = json.load(open(f))["results"]
    cub = {r["case"].replace("::cublas::", "::cuda::"): r["latency_ms"] for r in res if "::cublas::" in r["case"]}
    for r in res:
        if "::cuda::" not in r["case"]:
            continue
        ab = r.get("ab") or {}
        p = ab.get("paired") or {}
        ratio = f"{p['ratio']:.4f} [{p['lo']:.4f}, {p['hi']:.4f}]" if p else ab.get("status", "-")
        c = cub.get(r["case"])
        vs = f"{c / r['latency_ms']:.3f}" if c else "-"
        rows.append(f"| {r['case']} | {run} | {r['latency_ms'] * 1000:.2f} | {ratio} | {vs} |")
print("| case | run | ours µs | paired ratio to base [interval] | cuBLAS / ours |")
print("| --- | --- | ---: | --- | ---: |")
print("\n".join(sorted(rows)))
PY
( cd "$OUT" && tar czf ab-runs.tar.gz ab-*-*.json && rm -f ab-*-*.json )
log "ab done"
