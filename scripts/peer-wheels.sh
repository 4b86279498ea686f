#!/usr/bin/env bash
# Wheels of the peer libraries (backends fla, liger, quack, flash-attn) for a GPU machine that
# has torch and triton but no network, carried there in device calls of at most 64 MiB each
# (the working tree counts too: ~13 MB).
#
#   scripts/peer-wheels.sh download      here (network): fetch into .whl/dl, then lay out
#                                        .whl/a .whl/b .whl/c (one folder per device call;
#                                        the 92 MB cu13 CuTe DSL wheel split into 40 MiB parts:
#                                        a 42 MB, b 45 MB, c 17 MB with fla and liger)
#   scripts/peer-wheels.sh stash         there, calls 1 and 2: keep the carried .whl/* parts in
#                                        /tmp/kg-wheels (outside the repo copy)
#   . scripts/peer-wheels.sh install     there, last call: stash, join the split wheel, check
#                                        its sha256, pip install every complete wheel into
#                                        /tmp/site and export PYTHONPATH (sourced, so the export
#                                        stays; scripts/peers-device.sh does this)
#
# Device calls (the machine must stay warm between them: send them back to back; if it was
# handed back in between, call 3 alone still installs fla and liger, and says what is missing):
#   1. carry [".whl/a"]             command: bash scripts/peer-wheels.sh stash
#   2. carry [".whl/b"]             command: bash scripts/peer-wheels.sh stash
#   3. carry [".whl/c", ".devbin"]  command: bash scripts/peers-device.sh
#
# Versions (the newest on PyPI on 2026-11-23), all --no-deps; the device already has torch 2.11,
# triton 3.6, cuda-bindings, protobuf, einops and typing-extensions:
#   fla-core 0.6.0            fla.ops.nsa (Triton); needs einops
#   liger-kernel 0.8.5        Triton kernels; needs torch, triton
#   quack-kernels 0.6.5       CuTe DSL kernels; needs nvidia-cutlass-dsl, apache-tvm-ffi,
#                             torch-c-dlpack-ext, einops
#   flash-attn-4 4.0.0b36     FlashAttention 4 (flash_attn.cute, CuTe DSL, has an SM90 path);
#                             needs quack-kernels, nvidia-cutlass-dsl, apache-tvm-ffi
#   nvidia-cutlass-dsl 4.8.1 + -libs-core, -libs-base, -libs-cu13 4.8.1 (the cu13 flavour,
#                             matching torch's CUDA 13; the default cu12 one is not fetched)
#   apache-tvm-ffi 0.1.15.post2, torch-c-dlpack-ext 0.1.5
# Not available as wheels: flash-attn 2 (PyPI has only its source; prebuilt wheels on GitHub
# exist for older torch/CUDA, none for torch 2.11 + CUDA 13) and FlashAttention 3
# (flash_attn_interface, built from source). Without FlashAttention 2, fla's sliding-window
# branch is missing, so fla declines nsa cases with w > 0.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

PART=40m
BIG=nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
# Call 1 carries only part 0 of the big wheel; fla and liger travel with the last call, so they
# install even when the machine was handed back between calls and the parts were lost.
A=""
B="quack_kernels-0.6.5-py3-none-any.whl flash_attn_4-4.0.0b36-py3-none-any.whl nvidia_cutlass_dsl-4.8.1-py3-none-any.whl nvidia_cutlass_dsl_libs_core-4.8.1-py3-none-any.whl"
C="fla_core-0.6.0-py3-none-any.whl liger_kernel-0.8.5-py3-none-any.whl nvidia_cutlass_dsl_libs_base-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl apache_tvm_ffi-0.1.15.post2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl torch_c_dlpack_ext-0.1.5-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
PINS="fla-core==0.6.0 liger-kernel==0.8.5 quack-kernels==0.6.5 flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5"
STASH=${KG_WHEEL_STASH:-/tmp/kg-wheels}
SITE=${KG_SITE:-/tmp/site}

download() {
  mkdir -p .whl/dl || return 1
  local plat="" n
  for n in 28 27 17 24 31 34 35; do plat="$plat --platform manylinux_2_${n}_x86_64"; done
  # shellcheck disable=SC2086
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    $plat --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl/dl $PINS || return 1
  rm -rf .whl/a .whl/b .whl/c && mkdir -p .whl/a .whl/b .whl/c
  local w
  for w in $A; do cp .whl/dl/"$w" .whl/a/ || return 1; done
  for w in $B; do cp .whl/dl/"$w" .whl/b/ || return 1; done
  for w in $C; do cp .whl/dl/"$w" .whl/c/ || return 1; done
  split -b "$PART" -d -a 1 .whl/dl/"$BIG" ".whl/dl/$BIG.part" || return 1
  mv ".whl/dl/$BIG.part0" .whl/a/ && mv ".whl/dl/$BIG.part1" .whl/b/ && mv ".whl/dl/$BIG.part2" .whl/c/ || return 1
  if [ -e ".whl/dl/$BIG.part3" ]; then echo "the cu13 wheel needs more than 3 parts of $PART" >&2; return 1; fi
  # Checksums of every wheel (the joined one included), in each folder.
  (cd .whl/dl && sha256sum $A $B $C "$BIG") > .whl/SHA256SUMS || return 1
  for d in a b c; do cp .whl/SHA256SUMS .whl/$d/; done
  du -b .whl/a .whl/b .whl/c
  ls -l .whl/a .whl/b .whl/c
}

stash() {
  mkdir -p "$STASH" || return 1
  local d f n=0
  for d in .whl/a .whl/b .whl/c .whl; do
    [ -d "$d" ] || continue
    for f in "$d"/*.whl "$d"/*.part? "$d"/SHA256SUMS; do
      [ -f "$f" ] || continue
      cp -f "$f" "$STASH/" && n=$((n + 1))
    done
  done
  echo "stash: $n files now in $STASH ($(du -sh "$STASH" | cut -f1)):"
  ls -l "$STASH"
}

install() {
  stash >/dev/null || return 1
  if [ ! -f "$STASH/$BIG" ]; then
    if [ -f "$STASH/$BIG.part0" ] && [ -f "$STASH/$BIG.part1" ] && [ -f "$STASH/$BIG.part2" ]; then
      cat "$STASH/$BIG.part0" "$STASH/$BIG.part1" "$STASH/$BIG.part2" > "$STASH/$BIG.tmp" && mv "$STASH/$BIG.tmp" "$STASH/$BIG"
    else
      echo "peer wheels: $BIG is incomplete (parts: $(cd "$STASH" && ls "$BIG".part? 2>/dev/null | tr '\n' ' ')); quack and flash-attn will be unavailable" >&2
    fi
  fi
  local ok=() w
  for w in $A $B $C $BIG; do
    [ -f "$STASH/$w" ] || { echo "peer wheels: missing $w" >&2; continue; }
    if [ -f "$STASH/SHA256SUMS" ] && ! (cd "$STASH" && grep " $w\$" SHA256SUMS | sha256sum -c --quiet -); then
      echo "peer wheels: $w fails its sha256 check; skipped" >&2; continue
    fi
    ok+=("$STASH/$w")
  done
  if [ ${#ok[@]} -eq 0 ]; then echo "peer wheels: nothing to install" >&2; return 1; fi
  rm -rf "$SITE"
  # One pip run, into a fresh target: the cutlass wheels share the nvidia_cutlass_dsl folder.
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${ok[@]}" || return 1
  # nvidia-cutlass-dsl puts its `cutlass` package on sys.path from a .pth file, which
  # PYTHONPATH entries do not run: name the folder too (the workers also run such .pth files).
  export PYTHONPATH="$SITE:$SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
  echo "peer wheels: installed ${#ok[@]} wheels into $SITE; PYTHONPATH=$PYTHONPATH"
}

case "${1:-}" in
  download) download ;;
  stash) stash ;;
  install) install ;;
  *) echo "usage: scripts/peer-wheels.sh download | stash | install (source it for install)" >&2; false ;;
esac
