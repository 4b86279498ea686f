#!/usr/bin/env bash
# Does a soak before sampling make compute-bound timings repeat from process to process?
# Runs the heavy compute-bound cases of the default suite in alternating processes without and
# with KERNELGATE_SOAK_MS (gated against the committed baselines, so the pinned batch applies),
# then prints per case the median of every process and the spread (max-min)/median per setting.
# Usage (GPU machine, repo root, .devbin carried): SOAK=300 RUNS=3 bash scripts/soak-ab.sh
# Writes $OUT/soak-ab.txt and $OUT/soak-ab.tar (the results files).
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT"
SOAK=${SOAK:-300}; RUNS=${RUNS:-3}
FILTERS=${FILTERS:-"k4096_ m8192 m2048_n2048 sq4096 sq1000"}
export KERNELGATE_CACHE_DIR=/tmp/kgcache
rm -rf /tmp/soak && mkdir -p /tmp/soak
for i in $(seq 1 "$RUNS"); do
  for s in 0 "$SOAK"; do
    t0=$(date +%s)
    for f in $FILTERS; do  # libtest takes one filter: one process per filter
      KERNELGATE_SOAK_MS=$s KERNELGATE_RESULTS_DIR=/tmp/soak/s$s-r$i .devbin/kernels "$f" >> /tmp/soak/log-s$s-r$i.txt 2>&1
    done
    echo "soak $s run $i: $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/soak/log-s$s-r$i.txt | awk '{print $4,$5,$6,$7}' | tr '\n' ' ')" | tee -a "$OUT/soak-ab.txt"
  done
done
python3 - "$SOAK" <<'PY' | tee -a "$OUT/soak-ab.txt"
import glob, json, sys, statistics as st
soak = sys.argv[1]
runs = {}
for d in sorted(glob.glob("/tmp/soak/s*-r*")):
    runs[d.split("/")[-1]] = {r["case"]: r for f in sorted(glob.glob(d + "/*.json"))
                              for r in json.load(open(f))["results"] if r.get("latency_ms")}
cases = sorted(set().union(*[set(v) for v in runs.values()]))
print(f"{'case':58s} {'soak 0 (us per process)':34s} spread | {'soak '+soak:34s} spread | verdicts")
agg = {"0": [], soak: []}
for c in cases:
    line = f"{c[:58]:58s}"
    for s in ["0", soak]:
        v = [runs[k][c]["latency_ms"] * 1e3 for k in sorted(runs) if k.startswith(f"s{s}-") and c in runs[k]]
        sp = (max(v) - min(v)) / st.median(v) if v else float("nan")
        agg[s].append(sp)
        line += " " + " ".join(f"{x:9.2f}" for x in v).ljust(34) + f" {sp:6.2%} |"
    verd = [runs[k][c]["verdict"][:4] for k in sorted(runs) if c in runs[k]]
    print(line, " ".join(verd))
for s in agg:
    a = [x for x in agg[s] if x == x]
    print(f"soak {s}: mean process-to-process spread {st.mean(a):.2%}, median {st.median(a):.2%}, max {max(a):.2%} over {len(a)} cases")
PY
tar -C /tmp/soak -cf "$OUT/soak-ab.tar" .
