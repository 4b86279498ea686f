#!/usr/bin/env bash
# Our kernels on a GPU machine, each against its same-run peer (run from the repo root with
# .devbin carried; scripts/build-device.sh). PARTS (default "mha gemm rows"):
#   mhabench  kernels/dev/run_mha_wgmma.sh (standalone correctness + TFLOP/s of the wgmma kernel)
#   mha       the mha_edges and attention_scaling suites through the harness (correctness,
#             TFLOP/s, the variant that ran)
#   bars      the attention_bars suite: our mha kernel vs torch SDPA in the same run
#   gemm      the gemm suite (ours vs cuBLAS per shape; scripts/gemm-table.py)
#   rows      dsv3 and the default suite's memory-bound families (fraction of copy bandwidth)
#   quack     the quack suite (cuda): pass count, wall time per case, skipped cases with reasons
#   nsa       the nsa suite (cuda): nominal TFLOP/s per case and the variant that ran
#   bench:S   a standalone dev bench script, e.g. bench:kernels/dev/run_rows_bench.sh (its own
#             correctness check and timing table; BENCH_S caps it, default 300 s)
# Returns under $OUT: log.txt and check.tgz (results files and logs).
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT"
W=/tmp/kgcheck; rm -rf "$W"; mkdir -p "$W" /tmp/kg-nobase
export KERNELGATE_CACHE_DIR=/tmp/kgcache KERNELGATE_BASELINE_DIR=/tmp/kg-nobase
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log.txt"
run() {  # run NAME ARGS...: kernelgate run, results to $W/NAME.json
  local name=$1; shift; local t0=$(date +%s)
  timeout ${PART_S:-240} $KG run "$@" --no-progress --output "$W/$name.json" > "$W/$name.log" 2>&1
  log "$name: exit $? after $(( $(date +%s) - t0 )) s; $(grep -cE 'WRONG|ERROR|FAILED' "$W/$name.log") WRONG/ERROR lines"
  grep -E "WRONG|ERROR|FAILED" "$W/$name.log" | cut -c1-300 | head -12 | tee -a "$OUT/log.txt"
}
for part in ${PARTS:-mha gemm rows}; do
  case $part in
    mhabench)
      t0=$(date +%s); OUT_DIR=$W/mwb timeout ${MHABENCH_S:-300} bash kernels/dev/run_mha_wgmma.sh > "$W/mhabench.txt" 2>&1
      log "mhabench: exit $? after $(( $(date +%s) - t0 )) s"
      grep -vE "^\s*$" "$W/mhabench.txt" | grep -E "FAIL|ERROR|error|==|TFLOP|ratio|x[0-9]|regs|spill|\|" | cut -c1-200 | head -90 | tee -a "$OUT/log.txt" ;;
    mha|bars)
      if [ $part = mha ]; then
        run mha_edges --suite mha_edges
        run attention_scaling --suite attention_scaling --max-time 500ms
        files="$W/mha_edges.json $W/attention_scaling.json"
      else
        run attention_bars --suite attention_bars --max-time 1s
        files="$W/attention_bars.json"
      fi
      # shellcheck disable=SC2086
      python3 - $files <<'PY' | tee -a "$OUT/log.txt"
import json, sys, math
for f in sys.argv[1:]:
    try: d = json.load(open(f))
    except Exception as e: print(f, "unreadable", e); continue
    rows = {}
    for r in d["results"]:
        rows.setdefault(r["case"].split("::", 2)[2], {})[r["backend"]] = r
    print(f.split("/")[-1])
    rat = []
    for k, b in sorted(rows.items()):
        o, t = b.get("cuda"), b.get("torch")
        ot = o.get("tflops") if o and o.get("latency_ms") else None
        tt = t.get("tflops") if t and t.get("latency_ms") else None
        if ot and tt: rat.append(ot / tt)
        print(f"  {k:52s} ours {o['verdict'] if o else '-':8s} {ot or 0:7.1f} TF/s  torch {tt or 0:7.1f}  "
              f"{(ot/tt if ot and tt else 0):.2f}x  {(o or {}).get('variant','')[:60]}")
    if rat: print(f"  geomean ours/torch {math.exp(sum(map(math.log, rat))/len(rat)):.3f} over {len(rat)}")
PY
      ;;
    bench:*)
      script=${part#bench:}; name=$(basename "$script" .sh); t0=$(date +%s)
      OUT_DIR=$W/$name timeout ${BENCH_S:-300} bash "$script" > "$W/$name.txt" 2>&1
      log "$name: exit $? after $(( $(date +%s) - t0 )) s"
      grep -vE "^\s*$" "$W/$name.txt" | cut -c1-220 | tail -${BENCH_LINES:-80} | tee -a "$OUT/log.txt" ;;
    quack)
      PART_S=${QUACK_S:-400} run quack --suite quack --backends cuda
      python3 - "$W/quack.json" "$W/quack.log" <<'PY' | tee -a "$OUT/log.txt"
import json, sys, datetime as dt
def t(s): return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
try: d = json.load(open(sys.argv[1]))
except Exception as e: print("quack results unreadable", e); sys.exit()
prev = t(d["started"]); worst = (0, "")
print("| case | verdict | µs | GB/s | fraction of copy | case wall s |")
for r in d["results"]:
    w = t(r["date"]) - prev; prev = t(r["date"]); worst = max(worst, (w, r["case"]))
    print(f"| {r['case']} | {r['verdict']} | {1e3*(r.get('latency_ms') or 0):.1f} | {r.get('gbps') or 0:.0f} | "
          f"{r.get('roofline_frac') or 0:.2f} | {w:.0f} |")
print(f"records {len(d['results'])}; longest case wall {worst[0]:.0f} s ({worst[1]})")
PY
      grep -iE "skip|wall time|cases, all passed|FAILED" "$W/quack.log" | cut -c1-250 | head -30 | tee -a "$OUT/log.txt" ;;
    nsa)
      run nsa --suite nsa --backends cuda --max-time 500ms
      python3 - "$W/nsa.json" <<'PY' | tee -a "$OUT/log.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for r in sorted(d["results"], key=lambda r: r["case"]):
    print(f"  {r['case']:58s} {r['verdict']:8s} {1e3*(r.get('latency_ms') or 0):9.1f} µs {r.get('tflops') or 0:7.1f} TF/s  {r.get('variant','')[:60]}")
PY
      ;;
    gemm)
      t0=$(date +%s)
      KERNELGATE_SUITE=gemm KERNELGATE_RESULTS_DIR=$W/gemmres timeout 300 .devbin/kernels > "$W/gemm.log" 2>&1
      log "gemm: exit $? after $(( $(date +%s) - t0 )) s"
      grep -E "^test result|WRONG|panicked" "$W/gemm.log" | head -12 | tee -a "$OUT/log.txt"
      cp "$(ls -t $W/gemmres/*.json | head -1)" "$W/gemm.json"
      python3 scripts/gemm-table.py "$W/gemm.json" | tee -a "$OUT/log.txt" ;;
    rows)
      run dsv3 --suite dsv3 --backends cuda
      run rows-default --suite default --backends cuda,torch --kernels rmsnorm,rmsnorm_bwd,layernorm,softmax,softmax_bwd,cross_entropy,cross_entropy_bwd,fused_add_rmsnorm
      python3 - "$W/dsv3.json" "$W/rows-default.json" <<'PY' | tee -a "$OUT/log.txt"
import json, sys, math
for f in sys.argv[1:]:
    try: d = json.load(open(f))
    except Exception as e: print(f, "unreadable", e); continue
    print(f.split("/")[-1], "| case | backend | verdict | µs | GB/s | fraction of copy | variant |")
    fr = []
    for r in sorted(d["results"], key=lambda r: r["case"]):
        f_ = r.get("roofline_frac")
        if r["backend"] == "cuda" and f_: fr.append(f_)
        print(f"| {r['case'].split('::')[0]}::{r['case'].split('::',2)[2]} | {r['backend']} | {r['verdict']} | "
              f"{1e3*(r.get('latency_ms') or 0):.1f} | {r.get('gbps') or 0:.0f} | {f_ or 0:.2f} | {r.get('variant','')[:55]} |")
    if fr: print(f"geomean fraction (cuda) {math.exp(sum(map(math.log, fr))/len(fr)):.3f} over {len(fr)}")
PY
      ;;
  esac
done
tar czf "$OUT/check.tgz" -C "$W" --exclude='mwb/mwb*' . 2>/dev/null; ls -la "$OUT"
