#!/usr/bin/env bash
# Builds the release test binary and the kernelgate CLI and copies them (stripped, packed: see
# PACK below) to .devbin/ for the GPU machine (carry `.devbin`); NEXTEST=1 adds a nextest
# archive (see below).
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
# PACK=1 (the default): the two binaries travel as .devbin/bins.tar.xz (about a quarter of their
# size; the carry limit is 64 MiB with the tree), and .devbin/kernels and .devbin/kernelgate are
# small wrappers that unpack them into .devbin/bin/ on first use (atomically: a temporary
# directory renamed into place) and run them, so every device script calls them as before.
# PACK=0 carries the binaries as they are.
rm -rf .devbin/bins.tar.xz .devbin/bin
if [ "${PACK:-1}" = 1 ]; then
  tar -cJf .devbin/bins.tar.xz -C .devbin kernels kernelgate
  for b in kernels kernelgate; do
    cat > ".devbin/$b" <<EOF
#!/bin/sh
# Unpacks .devbin/bins.tar.xz into .devbin/bin/ once, then runs bin/$b (scripts/build-device.sh).
d=\$(cd "\$(dirname "\$0")" && pwd)
if [ ! -x "\$d/bin/$b" ]; then
  t=\$(mktemp -d "\$d/.unpack.XXXXXX") && tar -xJf "\$d/bins.tar.xz" -C "\$t" &&
    { mv -T "\$t" "\$d/bin" 2>/dev/null || rm -rf "\$t"; }
fi
exec "\$d/bin/$b" "\$@"
EOF
    chmod +x ".devbin/$b"
  done
fi
# NEXTEST=1: also a nextest archive of the kernels test binary and a stripped cargo-nextest, so
# the device can run `cargo-nextest nextest run --archive-file ...` without cargo.
if [ "${NEXTEST:-0}" = 1 ]; then
  cargo nextest archive --release --test kernels --archive-file .devbin/nextest.tar.zst 2>/dev/null
  cp "$(command -v cargo-nextest)" .devbin/cargo-nextest
  strip .devbin/cargo-nextest 2>/dev/null || true
fi
ls -la .devbin
# What a `run` with carry [".devbin"] sends: the tracked and untracked-but-not-ignored files plus
# .devbin, against the device's 64 MiB. Results files over 150 KB go into docs/ gzipped
# (`gzip -9 -n`); this warns before a run is refused.
tree=$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
dev=$(du -sb .devbin | cut -f1)
total=$(( tree + dev ))
echo "carry: working tree $(( tree / 1048576 )) MiB + .devbin $(( dev / 1048576 )) MiB = $(( total / 1048576 )) MiB of 64"
# The device counts more than these apparent sizes: session 38 had a call refused at 66.06 MB
# (63.0 MiB) by this count, and carried 62 MiB. Above 62 MiB, name the largest tracked files:
# move some out of the tree for the call (docs evidence the device does not read) and back after.
if [ "$total" -gt $(( 62 * 1048576 )) ]; then
  echo "WARNING: over 62 MiB by this count: the device may refuse it (64 MiB by its own count)." >&2
  echo "largest tracked files under docs/ (move a few out for the call, back after):" >&2
  git ls-files -z docs | xargs -0 du -b 2>/dev/null | sort -n | tail -6 >&2
elif [ "$total" -gt $(( 60 * 1048576 )) ]; then
  echo "WARNING: within 4 MiB of the device's 64 MiB carry limit: gzip or drop large files under docs/" >&2
fi
