#!/usr/bin/env bash
# Builds the release test binary and copies it (stripped) to .devbin/ for the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cargo test --release --test kernels --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import sys,json
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="kernels": print(m["executable"])' | tail -1)
mkdir -p .devbin
cp "$bin" .devbin/kernels
strip .devbin/kernels 2>/dev/null || true
ls -la .devbin
