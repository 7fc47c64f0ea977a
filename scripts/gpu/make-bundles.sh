#!/usr/bin/env bash
# Compiles the GPU correctness and benchmark sets into kernel bundles (PTX +
# bundle.json) under gpu-bundles/ (ignored by git), with build/bin/attn-opt
# and attn-run. Copy gpu-bundles/ into the GPU machine's checkout.
# Usage: scripts/gpu/make-bundles.sh [chip]   (default sm_90a: the H100 with
# wgmma; sm_90 gives the mma.sync kernels)
set -euo pipefail
cd "$(dirname "$0")/../.."
chip=${1:-sm_90a}
out=gpu-bundles
rm -rf "$out" && mkdir -p "$out"
compile_bundle() { # name: $out/name.mlir to its bundle ($options: more pipeline options)
  build/bin/attn-opt "$out/$1.mlir" --attn-lower-to-nvvm="chip=$chip ${options:-}" \
    --attn-write-kernel-bundle=prefix="$out/$1-" -o /dev/null
}
make_bundle() { # name, attn-run variant flags...
  local name=$1
  shift
  build/bin/attn-run --emit-variant "$@" > "$out/$name.mlir"
  compile_bundle "$name"
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
  # The 32-byte swizzle's rows under a mask.
  make_bundle "mma-$dtype-d16-window100" --dtype=$dtype --head-dim=16 \
    --mask=sliding-window:100 --lse
  # One K/V stage, and eight warps.
  options="stages=1" make_bundle "mma-$dtype-d128-stages1" --dtype=$dtype --head-dim=128 --causal --lse
  options="stages=1 warps=8" make_bundle "mma-$dtype-d64-stages1-warps8" --dtype=$dtype --head-dim=64 --lse
done
# Regions that attn-bundle-run's reference evaluates from the ops the
# bundle records (scripts/gpu/round.sh): captures, score mods, given lists.
for spec in "document:--mask=document" "document-given:--mask=document --given-block-mask=128" \
  "softcap:--score-mod=softcap:30 --causal" "alibi:--score-mod=alibi --lse" "prefix:--mask=prefix:100" \
  "jagged:--mask=jagged:0" "natten:--mask=natten:16:20:7" "window-given:--mask=sliding-window:100 --given-block-mask=64"; do
  make_bundle "region-${spec%%:*}" --dtype=bf16 --head-dim=128 ${spec#*:}
done
# The benchmark set (docs/Benchmarking.md): dtypes, head dims, causal and not.
for dtype in f16 bf16; do
  for d in 64 128; do
    make_bundle "bench-$dtype-d$d-full" --dtype=$dtype --head-dim=$d
    make_bundle "bench-$dtype-d$d-causal" --dtype=$dtype --head-dim=$d --causal
  done
done
# Head dims 16 and 32 (bf16), on the default kernel and on mma.sync:
# scripts/gpu/bench.sh small-d.
for d in 16 32; do
  for mask in full causal; do
    flags="--dtype=bf16 --head-dim=$d"
    [ $mask = full ] || flags+=" --causal"
    make_bundle "bench-bf16-d$d-$mask" $flags
    [ "$chip" != sm_90a ] ||
      options="strategy=mma-sync" make_bundle "bench-bf16-d$d-$mask-mma-sync" $flags
  done
done
# Head dim 256 (bf16), on the default kernel, on wgmma without warp
# specialization and on mma.sync: scripts/gpu/bench.sh d256.
for mask in full causal; do
  flags="--dtype=bf16 --head-dim=256"
  [ $mask = full ] || flags+=" --causal"
  make_bundle "bench-bf16-d256-$mask" $flags
  if [ "$chip" = sm_90a ]; then
    options="strategy=wgmma" make_bundle "bench-bf16-d256-$mask-wsoff" $flags
    options="strategy=mma-sync" make_bundle "bench-bf16-d256-$mask-mma-sync" $flags
  fi
done
# The same on mma.sync (sm_90), to compare with wgmma.
for mask in full causal; do
  chip=sm_90 make_bundle "bench-bf16-d128-$mask-mma-sync" --dtype=bf16 --head-dim=128 \
    $([ $mask = causal ] && echo --causal)
done
# Masks next to FlexAttention (bf16, D=128).
make_bundle bench-bf16-d128-window1024 --dtype=bf16 --head-dim=128 --mask=sliding-window:1024
make_bundle bench-bf16-d128-document512 --dtype=bf16 --head-dim=128 --mask=document
# The same taking their block masks as lists (FlexAttention's way), built
# by the @block_mask bundles below: bench_peers.py times the two apart.
make_bundle bench-bf16-d128-window1024-given --dtype=bf16 --head-dim=128 \
  --mask=sliding-window:1024 --given-block-mask=128
make_bundle bench-bf16-d128-document512-given --dtype=bf16 --head-dim=128 \
  --mask=document --given-block-mask=128
# Block masks built on the GPU (bench/block_masks.py checks all eight lists
# and times them), listed in block-masks.json: odd sizes and blocks, then
# the benchmark's masks at N = 2k and 8k.
block_mask_bundle() { # mask, batch, heads, q_len, kv_len, q_block, kv_block
  local name="block-mask-$(echo "$1" | tr -c 'a-z0-9\n' -)-$2x$3x$4x$5-$6x$7"
  PYTHONPATH=build/python python3 -c 'import attn, sys
a = sys.argv[1:]
print(attn.block_mask_module(a[0], *map(int, a[3:5]), *map(int, a[1:3]), *map(int, a[5:])))' \
    "$@" > "$out/$name.mlir"
  build/bin/attn-opt "$out/$name.mlir" --attn-lower-to-nvvm="chip=$chip" \
    --attn-write-kernel-bundle=prefix="$out/$name-" -o /dev/null
  manifest+=("{\"bundle\": \"$name-bundle.json\", \"mask\": \"$1\", \"batch\": $2, \"heads\": $3, \"q_len\": $4, \"kv_len\": $5, \"q_block\": $6, \"kv_block\": $7}")
}
manifest=()
block_mask_bundle sliding-window:100 1 2 300 500 16 32
block_mask_bundle document 2 1 1000 1000 64 128
block_mask_bundle natten:9:20:7 1 1 180 180 16 16
block_mask_bundle prefix:700 1 1 4097 3000 128 64
# Lines of three blocks of threads on the kv side, the last one partial.
block_mask_bundle document 1 2 3000 5000 32 64
for n in 2048 8192; do
  block_mask_bundle sliding-window:1024 1 1 $n $n 128 128
  block_mask_bundle document 1 1 $n $n 128 128
done
(IFS=,; echo "[${manifest[*]}]") > "$out/block-masks.json"
# Tiles of the masked kernels, timed apart from the build: one 16-row band
# per warp (8 warps, kv-tile 64; wgmma on sm_90a), two bands (4 warps,
# mma.sync) with kv-tiles of 32 and 16, 64-row blocks of 4 warps, and
# wgmma's 128 x 128 tiles.
for mask in window1024:sliding-window:1024 document512:document; do
  for tiles in "band1:warps=8 q-tile=128 kv-tile=64" "kv32:warps=4 q-tile=128 kv-tile=32" \
               "kv16:warps=4 q-tile=128 kv-tile=16" "q64:warps=4 q-tile=64 kv-tile=64" \
               "kv128:q-tile=128 kv-tile=128"; do
    options="${tiles#*:}" make_bundle "bench-bf16-d128-${mask%%:*}-given-${tiles%%:*}" \
      --dtype=bf16 --head-dim=128 --mask=${mask#*:} --given-block-mask=128
  done
done
# The wgmma kernel of one block per q-tile, every warp copying (sm_90a's
# default is the warp-specialized persistent one), dense and with the
# benchmark's masks: scripts/gpu/bench.sh warp-specialized.
if [ "$chip" = sm_90a ]; then
  for mask in full "causal:--causal" "window1024-given:--mask=sliding-window:1024 --given-block-mask=128" \
              "document512-given:--mask=document --given-block-mask=128"; do
    options="strategy=wgmma" make_bundle "bench-bf16-d128-${mask%%:*}-wsoff" \
      --dtype=bf16 --head-dim=128 $([ "$mask" = full ] || echo "${mask#*:}")
  done
fi
# The backward next to its peers (bench/backward_bench.py,
# scripts/gpu/bench.sh backward): each bundle holds the forward with its
# logsumexp, which makes the backward's inputs, and the backward.
make_grad_bundle() { # name, attn-run variant flags...
  local name=$1
  shift
  { build/bin/attn-run --emit-variant --lse "$@"
    build/bin/attn-run --emit-variant --backward "$@"; } > "$out/$name.mlir"
  compile_bundle "$name"
}
for dtype in f16 bf16; do
  for d in 64 128; do
    make_grad_bundle "grad-$dtype-d$d-full" --dtype=$dtype --head-dim=$d
    make_grad_bundle "grad-$dtype-d$d-causal" --dtype=$dtype --head-dim=$d --causal
  done
done
for d in 64 128; do
  make_grad_bundle "grad-bf16-d$d-window1024" --dtype=bf16 --head-dim=$d --mask=sliding-window:1024
  make_grad_bundle "grad-bf16-d$d-document512" --dtype=bf16 --head-dim=$d --mask=document
  # The mma.sync backward on sm_90a, next to wgmma (bench.sh backward-kernels).
  for mask in full causal; do
    flags="--dtype=bf16 --head-dim=$d"
    [ $mask = causal ] && flags="$flags --causal"
    options="strategy=mma-sync" make_grad_bundle "grad-bf16-d$d-$mask-mma-sync" $flags
  done
done
# The gradients of a learnt gain and relative-position bias, which
# attn-bundle-run checks too (scripts/gpu/round.sh).
cp test/Integration/Inputs/learned-bias-grad.mlir "$out/grad-learned-bias.mlir"
compile_bundle grad-learned-bias
# The same at bf16 and D = 64, timed next to Flex (scripts/gpu/bench.sh
# captures).
sed 's/x32x/x64x/g; s/xf16>/xbf16>/g' test/Integration/Inputs/learned-bias-grad.mlir \
  > "$out/grad-learned-bias-bf16-d64.mlir"
compile_bundle grad-learned-bias-bf16-d64
# Head dim 256 (bf16), whose gradients' columns the kernels split in two
# (bench.sh backward d256).
for mask in full causal; do
  make_grad_bundle "grad-bf16-d256-$mask" --dtype=bf16 --head-dim=256 \
    $([ $mask = causal ] && echo --causal)
done
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
# attn.torch's kernels for the GPU machine's runtime-only attn, in attn.cache
# directories: those python/tests/test_torch_frontend.py runs, and those
# bench/flex_frontend_bench.py times (scripts/gpu/bench.sh frontend).
ATTN_CACHE_DIR=$PWD/$out/flex-cache PYTHONPATH=build/python \
  python3 python/tests/flex_mods.py "$chip"
ATTN_CACHE_DIR=$PWD/$out/flex-bench-cache PYTHONPATH=build/python \
  python3 bench/flex_frontend_mods.py "$chip"
ls "$out"
