#!/usr/bin/env bash
# Session 27 (repo root, .devbin/ carried): Nsight Compute of the Hopper nsa kernel
# (kernels/nsa_wgmma.cu, forced) at b2 t1024 hq16 h16 d64 s8 bs32 bf16 beside the mha kernel on
# the dense causal attention of the same size (b2 h16 s1024 d64 causal bf16): duration, stall
# reasons, issue activity, and per-SASS-line counters for both (scripts/ncu-opcodes.py).
# Under $OUT: ncu.tar.gz and the key lines in log-ncu.txt.
set -u
OUT=${OUT:-/tmp/kgout}
DEV_LOG=$OUT/log-ncu.txt
. scripts/device-lib.sh
mkdir -p /tmp/ncu
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo '{"description":"ncu nsa","groups":[{"kernel":"nsa","backends":["cuda"],"dtypes":["bf16"],"shapes":[{"b":2,"t":1024,"hq":16,"h":16,"d":64,"s":8,"bs":32,"w":0}]}]}' > /tmp/ncu/nsa.json
echo '{"description":"ncu mha","groups":[{"kernel":"mha","backends":["cuda"],"dtypes":["bf16"],"shapes":[{"b":2,"h":16,"hkv":16,"sq":1024,"sk":1024,"d":64,"causal":1}]}]}' > /tmp/ncu/mha.json
for k in nsa mha; do
  re=nsa_wgmma; [ $k = mha ] && re=mha_wgmma
  KERNELGATE_NSA_KERNEL=wgmma timeout 150 $NCU_BIN -k regex:$re -s 3 -c 1 --set full --import-source yes \
    --print-details all --page details -o /tmp/ncu/$k \
    .devbin/kernelgate run --suite /tmp/ncu/$k.json --backends cuda --output /tmp/ncu/r-$k.json > /tmp/ncu/ncu-$k.txt 2>&1
  echo "== ncu $k rc=$?" | tee -a "$DEV_LOG"
  grep -E "Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Achieved Occupancy|Registers Per|Stall|stall|Executed Ipc" /tmp/ncu/ncu-$k.txt | head -50 | tee -a "$DEV_LOG"
  $NCU_BIN --import /tmp/ncu/$k.ncu-rep --page source --csv --print-source sass > /tmp/ncu/sass-$k.csv 2>&1
  echo "== sass $k rc=$? $(wc -l < /tmp/ncu/sass-$k.csv) lines" | tee -a "$DEV_LOG"
done
python3 scripts/ncu-opcodes.py nsa=/tmp/ncu/sass-nsa.csv mha=/tmp/ncu/sass-mha.csv 2>&1 | head -80 | tee -a "$DEV_LOG"
rm -f /tmp/ncu/*.ncu-rep
tar -C /tmp/ncu -czf "$OUT/ncu.tar.gz" .
