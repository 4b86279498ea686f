#!/usr/bin/env bash
# Session 22 (repo root, .devbin/ carried): Nsight Compute of the NSA local kernel (G = 1) at
# b2 t2048 hq16 h16 d64 s4 bs32 bf16, one launch per configuration, through the CLI: stall
# reasons, occupancy, L2 traffic and the hottest SASS lines. LAUNCHES picks the R:NW[:ST] list.
# Under $OUT: ncu-nsa.tar.gz and the key lines in log-ncu.txt.
set -u
OUT=${OUT:-/tmp/kgout}
DEV_LOG=$OUT/log-ncu.txt
. scripts/device-lib.sh  # logs the GPU, sets the kernel cache
mkdir -p /tmp/ncu
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo '{"description":"ncu","groups":[{"kernel":"nsa","backends":["cuda"],"dtypes":["bf16"],"shapes":[{"b":2,"t":2048,"hq":16,"h":16,"d":64,"s":4,"bs":32,"w":0}]}]}' > /tmp/ncu/one.json
for l in ${LAUNCHES:-128:16 128:8:2}; do
  KERNELGATE_NSA_KERNEL=local KERNELGATE_NSA_LOCAL=$l timeout 150 $NCU_BIN -k regex:nsa_local -s 3 -c 1 --set full \
    --import-source yes --print-details all --page details \
    .devbin/kernelgate run --suite /tmp/ncu/one.json --backends cuda --output /tmp/ncu/r-$l.json > /tmp/ncu/ncu-$l.txt 2>&1
  echo "== ncu $l rc=$?" | tee -a "$OUT/log-ncu.txt"
  grep -E "Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Achieved Occupancy|Registers Per|Stall|stall|Theoretical Occ" /tmp/ncu/ncu-$l.txt | head -60 | tee -a "$OUT/log-ncu.txt"
  KERNELGATE_NSA_KERNEL=local KERNELGATE_NSA_LOCAL=$l timeout 150 $NCU_BIN -k regex:nsa_local -s 3 -c 1 --section SourceCounters --section WarpStateStats \
    --page source --csv --print-source sass \
    .devbin/kernelgate run --suite /tmp/ncu/one.json --backends cuda --output /tmp/ncu/r2-$l.json > /tmp/ncu/sass-$l.csv 2>&1
  echo "== ncu sass $l rc=$? $(wc -l < /tmp/ncu/sass-$l.csv) lines" | tee -a "$OUT/log-ncu.txt"
done
tar -C /tmp/ncu -czf "$OUT/ncu-nsa.tar.gz" .
