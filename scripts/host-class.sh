#!/usr/bin/env bash
# Why one host class fails the gate on few-µs kernels (run from the repo root, .devbin carried).
# A: the default suite gated against the committed baselines on device 0 (adaptive hold);
# B: the few-µs cases again with a 200 µs hold; C: (APPEND=1) one append pass on every GPU of
# the host into a copy of the baselines. Returns under $OUT: log.txt, runs.tgz (logs, results), baselines.tar.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT"
BIN=.devbin/kernels; KG=.devbin/kernelgate
export KERNELGATE_CACHE_DIR=/tmp/kgcache KERNELGATE_SUITE=default
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
{ lscpu | grep -E "Model name|^CPU\(s\)|MHz|Hypervisor"; nvidia-smi --query-gpu=name,uuid,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,persistence_mode --format=csv; nvidia-smi topo -m; } 2>&1 | tee -a "$OUT/log.txt"
$KG gpu-info 2>&1 | tee -a "$OUT/log.txt"
pass() {  # pass NAME FILTER [env...]
  local name=$1 filter=$2; shift 2
  local t0=$(date +%s)
  env "$@" KERNELGATE_RESULTS_DIR=/tmp/res-$name $BIN $filter 2>&1 > "$OUT/log-$name.txt"
  grep -E "^test result|REGRESSION|WRONG|FAILED|panicked|^ambiguous|^verdicts|^smallest|^WARNING|^CUDA-graph|^host enqueue" "$OUT/log-$name.txt" | head -40 | tee -a "$OUT/log.txt"
  log "$name took $(( $(date +%s) - t0 )) s"
  cp "$(ls -t /tmp/res-$name/*.json | head -1)" "$OUT/results-$name.json" 2>/dev/null
}
pass gate "" KERNELGATE_DEVICES=0
pass hold200-gemm m1024_n1024_k1024 KERNELGATE_DEVICES=0 KERNELGATE_HOLD_US=200
pass hold200-spin spin KERNELGATE_DEVICES=0 KERNELGATE_HOLD_US=200
if [ -n "${APPEND:-}" ]; then
  rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
  pass append "" KERNELGATE_DEVICES=all KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append
  tar -C /tmp/kgb -cf "$OUT/baselines.tar" nvidia-h200
fi
python3 - "$OUT"/results-*.json <<'PY' | tee -a "$OUT/log.txt"
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f)); c = d.get("ceilings") or {}
    print(f.split("/")[-1], "ceilings", {k: round(v, 3) for k, v in c.items()})
    bad = [r for r in d["results"] if r["verdict"] in ("regression", "ambiguous")]
    for r in sorted(d["results"], key=lambda r: r.get("latency_ms") or 0)[:25]:
        print(f"  {r['case']:60s} {1e3*(r.get('latency_ms') or 0):8.2f} us base {1e3*(r.get('baseline_ms') or 0):8.2f} "
              f"batch {r['batch']:3d} graph {int(r['graph'])} hold {r.get('hold_us',0):6.1f} enq {r.get('host_enqueue_us',0):6.1f} late {r.get('late_samples',0)} {r['verdict']}")
PY
(cd "$OUT" && tar czf runs.tgz log-*.txt results-*.json && rm -f log-*.txt results-*.json); ls -la "$OUT"
