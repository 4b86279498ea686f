#!/usr/bin/env python3
"""Summary of `kernelgate run` results files (the masked suite, gate runs): per file, the
verdicts, then every case that did not pass its checks (its kernel variant, first failing
tensor, non-finite count and reason) and every regression, ambiguous or throttled verdict with
its message. Usage: masked-summary.py FILE.json..."""
import json
import sys
from collections import Counter


def main(paths):
    for p in paths:
        try:
            d = json.load(open(p))
        except (OSError, ValueError) as e:
            print(f"## {p}: unreadable ({e})\n")
            continue
        recs = d.get("results", [])
        gpu = d.get("gpu", {})
        name = gpu.get("name", "?") if isinstance(gpu, dict) else gpu
        v = Counter(r.get("verdict", "?") for r in recs)
        print(f"## {p.split('/')[-1]}: {len(recs)} records on {name}: "
              + ", ".join(f"{k} {n}" for k, n in sorted(v.items())))
        bad = [r for r in recs if r.get("verdict") in ("wrong", "error", "skipped", "regression",
                                                       "ambiguous", "throttled")
               or any(not c.get("passed", True) for c in r.get("checks") or [])]
        for r in bad:
            fails = [c for c in r.get("checks") or [] if not c.get("passed", True)]
            c = fails[0] if fails else {}
            print(f"- {r['case']} [{r.get('variant', '')}] {r.get('verdict')}: "
                  f"{c.get('tensor', '')} non_finite {c.get('non_finite', '')}/{c.get('checked', '')} "
                  f"{(c.get('reason') or r.get('message') or '')[:200]}")
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
