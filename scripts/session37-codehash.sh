#!/usr/bin/env bash
# Session 37, one fresh machine (repo root, .devbin/ carried): cubin hashes (`code_hash`) end to
# end, against a scratch copy of the committed baselines.
# 1. ch-1: the default suite's cuda and cublas cases gated from the checkout (a fresh machine's
#    gate; its records carry code_hash) and imported into the scratch baselines, whose entries
#    then store the cubin hashes.
# 2. ch-2: the same suite's cuda cases from a root whose gemm_wgmma.cu has one more comment line
#    (another source hash, the same cubin): the gemm_wgmma records must name the new source hash
#    and the old cubin hash, pass without `baseline_source_hash`, and import without restarting.
# 3. ch-ab: that root against the checkout (--base): the gemm_wgmma cases are `identical`.
# Under $OUT: log.txt, ch-1.json, ch-2.json, ch-ab.json, codehash.md.
set -u
. scripts/device-lib.sh
BL=$DEV_TMP/bl
rm -rf "$BL" && cp -r baselines "$BL"
export KERNELGATE_BASELINE_DIR=$BL
cli ch-1 default --backends cuda,cublas --no-progress
$KG import "$OUT/ch-1.json" 2>&1 | tee -a "$DEV_LOG"
R=$DEV_TMP/root-comment
rm -rf "$R" && mkdir -p "$R" && cp -r kernels "$R/" && ln -s "$PWD/fixtures" "$R/fixtures"
sed -i '1i // One more comment line: another source hash, the same machine code.' "$R/kernels/gemm_wgmma.cu"
KERNELGATE_ROOT=$R cli ch-2 default --backends cuda --no-progress
$KG import "$OUT/ch-2.json" 2>&1 | tee -a "$DEV_LOG"
KERNELGATE_ROOT=$R cli ch-ab default --backends cuda --base "$PWD" --no-progress
python3 - "$OUT" <<'PY' | tee "$OUT/codehash.md" | tee -a "$DEV_LOG"
import json, os, sys, collections
o = sys.argv[1]
load = lambda n: {r["case"]: r for r in json.load(open(os.path.join(o, n + ".json")))["results"]}
a, b, ab = load("ch-1"), load("ch-2"), load("ch-ab")
rows = collections.Counter()
for case, r2 in sorted(b.items()):
    r1 = a.get(case)
    if not r1 or "::cuda::" not in case:
        continue
    same_src = r1["source_hash"] == r2["source_hash"]
    same_code = bool(r1.get("code_hash")) and r1.get("code_hash") == r2.get("code_hash")
    abst = (ab.get(case, {}).get("ab") or {}).get("status")
    rows[(same_src, same_code, r2["verdict"], r2.get("baseline_source_hash") is not None, abst)] += 1
print("| same source hash | same code hash | ch-2 verdict | baseline_source_hash set | A/B status | cases |")
print("| --- | --- | --- | --- | --- | ---: |")
for k, n in sorted(rows.items(), key=str):
    print("| " + " | ".join(str(x) for x in k) + f" | {n} |")
print()
print("records without a code hash (cuda):", sum(1 for r in a.values() if "::cuda::" in r["case"] and not r.get("code_hash")))
PY
ls -la "$OUT"
