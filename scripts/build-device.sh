#!/usr/bin/env bash
# Builds the release test binary and the kernelgate CLI and copies them (stripped) to .devbin/
# for the GPU machine (carry `.devbin`).
set -euo pipefail
cd "$(dirname "$0")/.."
json=$(cargo test --release --test kernels --no-run --message-format=json 2>/dev/null)
bin=$(echo "$json" | python3 -c 'import sys,json
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="kernels": print(m["executable"])' | tail -1)
cargo build --release --bin kernelgate 2>/dev/null
mkdir -p .devbin
cp "$bin" .devbin/kernels
cp target/release/kernelgate .devbin/kernelgate
strip .devbin/kernels .devbin/kernelgate 2>/dev/null || true
ls -la .devbin
