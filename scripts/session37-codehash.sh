#!/usr/bin/env bash
# Session 37, one fresh machine (repo root, .devbin/ carried): per-case cubin hashes (`code_hash`,
# the machine code of the entry points a case runs) end to end, against a scratch copy of the
# committed baselines.
# 1. ch-1: the default suite's cuda and cublas cases gated from the checkout (a fresh machine's
#    gate; its records carry code_hash), imported into the scratch baselines.
# 2. ch-2: the gemm suite's cuda cases from a root whose gemm_wgmma.cu has one more comment line
#    (another source hash, every entry point's code the same).
# 3. ch-3: the same from a root with kernels/dev/gemm_skew_revert_patch.py applied (session 35's
#    skewed tail taken out: the code of the two 128x256_ts entry points changes, 36 others not).
# 4. ch-ab: that root A/B'd against the checkout (--base): `identical` wherever the case's entry
#    points kept their code, timed in alternation where they did not.
# Under $OUT: log.txt, ch-1.json, ch-2.json, ch-3.json, ch-ab.json, codehash.md.
set -u
. scripts/device-lib.sh
BL=$DEV_TMP/bl
rm -rf "$BL" && cp -r baselines "$BL"
export KERNELGATE_BASELINE_DIR=$BL
cli ch-1 default --backends cuda,cublas --no-progress
$KG import "$OUT/ch-1.json" 2>&1 | tee -a "$DEV_LOG"
root() {
  rm -rf "$1" && mkdir -p "$1" && cp -r kernels "$1/" && ln -s "$PWD/fixtures" "$1/fixtures"
}
C=$DEV_TMP/root-comment R=$DEV_TMP/root-revert
root "$C"
sed -i '1i // One more comment line: another source hash, the same machine code.' "$C/kernels/gemm_wgmma.cu"
root "$R"
python3 "$R/kernels/dev/gemm_skew_revert_patch.py" "$R/kernels/gemm_wgmma.cu" || log "revert patch failed"
$KG gpu-info > /dev/null
cli ch-0 gemm --backends cuda --no-progress
KERNELGATE_ROOT=$C cli ch-2 gemm --backends cuda --no-progress
KERNELGATE_ROOT=$R cli ch-3 gemm --backends cuda --no-progress
KERNELGATE_ROOT=$R cli ch-ab gemm --backends cuda --base "$PWD" --no-progress
python3 - "$OUT" <<'PY' | tee "$OUT/codehash.md" | tee -a "$DEV_LOG"
import json, os, sys, collections
o = sys.argv[1]
load = lambda n: {r["case"]: r for r in json.load(open(os.path.join(o, n + ".json")))["results"]}
base, com, rev, ab = load("ch-0"), load("ch-2"), load("ch-3"), load("ch-ab")
print("| run | entry point | same source hash | same code hash | A/B | cases |")
print("| --- | --- | --- | --- | --- | ---: |")
for name, run in (("comment", com), ("revert", rev)):
    rows = collections.Counter()
    for case, r in run.items():
        b = base.get(case)
        if not b or not r.get("verified"):
            continue
        ep = r["variant"].split()[0]
        tile = "128x256_ts" if ep.endswith("128x256_ts") else ("other gemm_wgmma" if ep.startswith("gemm_wgmma") else "other kernels")
        st = (ab.get(case, {}).get("ab") or {}).get("status", "–") if name == "revert" else "–"
        rows[(tile, b["source_hash"] == r["source_hash"], bool(b.get("code_hash")) and b.get("code_hash") == r.get("code_hash"), st)] += 1
    for k, n in sorted(rows.items(), key=str):
        print(f"| {name} | " + " | ".join(str(x) for x in k) + f" | {n} |")
print()
print("cuda records without a code hash:", sum(1 for r in base.values() if not r.get("code_hash")))
PY
ls -la "$OUT"
