#!/usr/bin/env bash
# Compiles the GPU correctness and benchmark sets into kernel bundles (PTX +
# bundle.json) under gpu-bundles/ (ignored by git), with build/bin/attn-opt
# and attn-run. Copy gpu-bundles/ into the GPU machine's checkout.
# Usage: scripts/gpu/make-bundles.sh [chip]   (default sm_90)
set -euo pipefail
cd "$(dirname "$0")/../.."
chip=${1:-sm_90}
out=gpu-bundles
rm -rf "$out" && mkdir -p "$out"
make_bundle() { # name, attn-run variant flags... ($options: more pipeline options)
  local name=$1
  shift
  build/bin/attn-run --emit-variant "$@" > "$out/$name.mlir"
  build/bin/attn-opt "$out/$name.mlir" --attn-lower-to-nvvm="chip=$chip ${options:-}" \
    --attn-write-kernel-bundle=prefix="$out/$name-" -o /dev/null
}
make_bundle f16-d64-causal --dtype=f16 --head-dim=64 --causal
make_bundle bf16-d128-lse --dtype=bf16 --head-dim=128 --lse
make_bundle f32-d16-causal-lse --dtype=f32 --head-dim=16 --causal --lse
make_bundle f16-d64-window32 --dtype=f16 --head-dim=64 --mask=sliding-window:32
# A cubin for another architecture: the runtime must refuse it clearly.
build/bin/attn-opt "$out/f16-d64-causal.mlir" \
  --attn-lower-to-nvvm="chip=sm_80 format=bin" \
  --attn-write-kernel-bundle=prefix="$out/sm80-cubin-" -o /dev/null
# The tensor-core matrix (scripts/gpu/mma.sh): every head dim the mma
# kernel serves, causal and not, with the logsumexp.
for dtype in f16 bf16; do
  for d in 16 32 64 128 256; do
    make_bundle "mma-$dtype-d$d-full" --dtype=$dtype --head-dim=$d --lse
    make_bundle "mma-$dtype-d$d-causal" --dtype=$dtype --head-dim=$d --causal --lse
  done
  # One K/V stage, and eight warps.
  options="stages=1" make_bundle "mma-$dtype-d128-stages1" --dtype=$dtype --head-dim=128 --causal --lse
  options="stages=1 warps=8" make_bundle "mma-$dtype-d64-stages1-warps8" --dtype=$dtype --head-dim=64 --lse
done
# The benchmark set (docs/Benchmarking.md): dtypes, head dims, causal and not.
for dtype in f16 bf16; do
  for d in 64 128; do
    make_bundle "bench-$dtype-d$d-full" --dtype=$dtype --head-dim=$d
    make_bundle "bench-$dtype-d$d-causal" --dtype=$dtype --head-dim=$d --causal
  done
done
# Masks next to FlexAttention (bf16, D=128).
make_bundle bench-bf16-d128-window1024 --dtype=bf16 --head-dim=128 --mask=sliding-window:1024
make_bundle bench-bf16-d128-document512 --dtype=bf16 --head-dim=128 --mask=document
# attn.softmax on [rows, N] (dynamic sizes), for bench/softmax_bench.py:
# the pipeline's defaults, then variants with other attn-softmax-to-gpu
# options (run before the pipeline, which then finds no softmax left):
#   scripts/gpu/softmax.sh sv8 sv12  measures them next to the default.
softmax_variants=("sv8:split-vectors=8" "sv12:split-vectors=12")
for dtype in f32 f16 bf16; do
  build/bin/attn-run --op=softmax --emit-variant --dtype=$dtype > "$out/softmax-$dtype.mlir"
  build/bin/attn-opt "$out/softmax-$dtype.mlir" --attn-lower-to-nvvm="chip=$chip" \
    --attn-write-kernel-bundle=prefix="$out/softmax-$dtype-" -o /dev/null
  for v in "${softmax_variants[@]}"; do
    build/bin/attn-opt "$out/softmax-$dtype.mlir" --attn-softmax-to-gpu="${v#*:}" \
      --attn-lower-to-nvvm="chip=$chip" \
      --attn-write-kernel-bundle=prefix="$out/softmax-${v%%:*}-$dtype-" -o /dev/null
  done
done
ls "$out"
