#!/usr/bin/env python3
"""Averages an nvidia-smi log (timestamp, clocks.sm, power.draw, temperature, throttle reasons;
CSV without header, from `-lms`) over the windows a dev-bench --sustain run printed ("== SHAPE
DTYPE" headers, "SUSTAIN name begin|end <ms since the epoch>" lines), leaving out each window's
first 300 ms. Prints a Markdown table: shape, dtype, window, launches' time, samples, SM MHz,
W, degrees C, throttle reasons seen.

clock-windows.py SUSTAIN_TXT SMI_CSV"""
import re
import sys
from datetime import datetime, timezone

samples = []
for line in open(sys.argv[2]):
    f = [x.strip() for x in line.split(",")]
    if len(f) < 5:
        continue
    try:
        # nvidia-smi prints local time; the device machines run in UTC
        t = datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
        mhz = float(f[1].split()[0])
        w = float(f[2].split()[0])
        temp = float(f[3])
    except ValueError:
        continue
    samples.append((t.timestamp() * 1000.0, mhz, w, temp, f[4]))

print("| shape | dtype | window | µs per flush + launch | samples | SM MHz | W | °C | throttle reasons |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
case, begin, k = "", {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"== (\d+x\d+x\d+) (\S+)$", line)
    if m:
        case = m.groups()
        continue
    m = re.match(r"SUSTAIN (\S+) begin (\d+)", line)
    if m:
        begin[m.group(1)] = int(m.group(2))
        continue
    m = re.match(r"SUSTAIN (\S+) end (\d+) launches (\d+) \(([\d.]+) us", line)
    if m:
        name, end = m.group(1), int(m.group(2))
        k[name] = k.get(name, 0) + 1
        b = begin[name] + 300
        sel = [s for s in samples if b <= s[0] <= end]
        if not sel:
            print(f"| {case[0]} | {case[1]} | {name} {k[name]} | {m.group(4)} | 0 | | | | |")
            continue
        avg = lambda i: sum(s[i] for s in sel) / len(sel)
        reasons = sorted({s[4] for s in sel})
        print(f"| {case[0]} | {case[1]} | {name} {k[name]} | {m.group(4)} | {len(sel)} | "
              f"{avg(1):.0f} | {avg(2):.0f} | {avg(3):.0f} | {' '.join(reasons)} |")
