#!/usr/bin/env bash
# Session 12 on an H200 (repo root, .devbin/ carried): the cross-entropy variants in the rows
# bench, the dsv3 suite with the new defaults (bulk rmsnorm_bwd), the dsv3 cross_entropy cases
# with KERNELGATE_CE_FWD=block, the quack suite (wall time, pass count), and an append round for
# the default suite's rmsnorm_bwd cases (their kernel changed). MODE=bench-only stops after the bench.
# Under $OUT: log.txt, s12.tar.gz (results, logs, baselines of this GPU model).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/s12
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv,noheader | tee -a "$OUT/log.txt"
for b in 0:"" 3:"-DKG_CEB_STAGES=3"; do
  k=${b%%:*}; f=${b#*:}
  ( OUT_DIR=/tmp/rb$k EXTRA_NVCC_FLAGS="$f" bash kernels/dev/run_rows_bench.sh --help > /tmp/s12/build$k.log 2>&1 ) &
done
wait
CEB_VPT=4 timeout 120 /tmp/rb0/rows_bench --check-only --fam cross_entropy > /tmp/s12/bench-check.log 2>&1
log "bench check (block kernel in _r, VPT 4): $(grep -E 'pass|FAIL' /tmp/s12/bench-check.log | tail -2 | tr '\n' ' ')"
for run in "0 -" "0 2" "0 4" "0 8" "3 4"; do
  set -- $run
  log "bench speed: build $1 (3: KG_CEB_STAGES=3), CEB_VPT=$2 (-: the warp-per-row _r)"
  if [ "$2" = - ]; then unset CEB_VPT; else export CEB_VPT=$2; fi
  timeout 150 /tmp/rb$1/rows_bench --speed-only --fam cross_entropy > /tmp/s12/bench-$1-$2.log 2>&1
  grep -E "^cross_entropy|copy bandwidth:|read-only" /tmp/s12/bench-$1-$2.log | cut -c1-200 | tee -a "$OUT/log.txt"
done
unset CEB_VPT
if [ "${MODE:-}" != bench-only ]; then
  t0=$(date +%s)
  $KG run --suite dsv3 --backends cuda --output /tmp/s12/dsv3.json > /tmp/s12/dsv3.log 2>&1
  log "dsv3 rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/s12/dsv3.log)"
  grep -E "WRONG|FAIL" /tmp/s12/dsv3.log | head -5 | tee -a "$OUT/log.txt"
  KERNELGATE_CE_FWD=block $KG run --suite dsv3 --kernels cross_entropy --backends cuda --output /tmp/s12/ce-dsv3-block.json > /tmp/s12/ce-b.log 2>&1
  $KG compare /tmp/s12/dsv3.json /tmp/s12/ce-dsv3-block.json | grep -E "cross_entropy::|FAST|SLOW|SAME" | tee -a "$OUT/log.txt"
  t0=$(date +%s)
  $KG run --suite quack --backends cuda --output /tmp/s12/quack.json > /tmp/s12/quack.log 2>&1
  log "quack rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/s12/quack.log)"
  grep -iE "skip|WRONG|FAIL" /tmp/s12/quack.log | head -5 | tee -a "$OUT/log.txt"
  rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
  slug=$($KG gpu-info --json | python3 -c 'import sys,json,re; n=json.load(sys.stdin)["name"]; print(re.sub(r"[^a-z0-9]+","-",n.lower()).strip("-"))')
  for i in 1 2; do
    KERNELGATE_BASELINE_DIR=/tmp/kgb KERNELGATE_RESULTS_DIR=/tmp/s12/res-rb$i UPDATE_BASELINES=append \
      .devbin/kernels rmsnorm_bwd > /tmp/s12/rb-append$i.log 2>&1
    log "rmsnorm_bwd append $i: $(grep -E '^test result|^verdicts' /tmp/s12/rb-append$i.log | tr '\n' ' ')"
  done
  tar -C /tmp/kgb -cf /tmp/s12/baselines.tar "$slug"
fi
tar -C /tmp/s12 -czf "$OUT/s12.tar.gz" .
