#!/usr/bin/env python3
"""A fake external backend for the protocol tests: behaviour chosen by argv[1]."""
import json
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "bye":
        break
    if req["op"] == "hello":
        if mode == "refuse":
            print(json.dumps({"ok": False, "error": "no CUDA device here"}), flush=True)
            break
        print(json.dumps({"ok": True, "name": "fake", "version": "0.1", "device": "none",
                          "families": {"gemm": ["bf16"]}}), flush=True)
        continue
    if mode == "garbage":
        print("this is not json", flush=True)
    elif mode == "crash":
        sys.exit(3)
    elif mode == "hang":
        time.sleep(30)
    elif mode == "error":
        print(json.dumps({"ok": False, "error": "op exploded"}), flush=True)
    elif mode == "unsupported":
        print(json.dumps({"ok": False, "unsupported": True, "error": "no such shape here"}), flush=True)
    elif mode == "nosamples":
        print(json.dumps({"ok": True, "samples_ms": [], "batch": 1}), flush=True)
    else:
        print(json.dumps({"ok": True, "samples_ms": [0.5, 0.25], "batch": 1, "variant": "fake-op",
                          "echo_case": req["case"]}), flush=True)
