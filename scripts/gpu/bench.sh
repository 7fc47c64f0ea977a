#!/usr/bin/env bash
# Benchmark round on a GPU machine: attn's kernels next to SDPA (flash,
# cuDNN) and FlexAttention on the benchmark shapes (docs/Benchmarking.md).
# Needs gpu-bundles/ from scripts/gpu/make-bundles.sh, copied into the
# checkout, and the Python package scripts/gpu/runtime.sh builds.
# Usage: scripts/gpu/bench.sh [f16|bf16 ...]
#   or scripts/gpu/bench.sh masks|mask-tiles|warp-specialized|d256|small-d
#   or scripts/gpu/bench.sh backward [f16|bf16|masks|kernels|d256 ...]
#      (the backward's bundles next to the peers' backward,
#      bench/backward_bench.py; `kernels`: bf16 on wgmma and on mma.sync;
#      `d256`: bf16 at head dim 256)
#   or scripts/gpu/bench.sh captures (the backward with a learnt gain and
#      relative-position bias next to Flex's, bench/capture_grad_bench.py)
#   or scripts/gpu/bench.sh frontend (attn.torch.flex_attention next to
#      compiled Flex, bench/flex_frontend_bench.py)
set -uo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# attn.Kernel: the runtime-only Python package scripts/gpu/round.sh builds.
[ -d build-runtime/python/attn ] || { echo "no build-runtime/python/attn: run scripts/gpu/round.sh first"; exit 1; }
export PYTHONPATH=$PWD/build-runtime/python${PYTHONPATH:+:$PYTHONPATH}
if [ "${1:-}" = frontend ]; then
  ATTN_CACHE_DIR=${ATTN_CACHE_DIR:-$PWD/gpu-bundles/flex-bench-cache} \
    PYTHONUNBUFFERED=1 exec python3 bench/flex_frontend_bench.py
fi
if [ "${1:-}" = captures ]; then
  PYTHONUNBUFFERED=1 exec python3 bench/capture_grad_bench.py \
    gpu-bundles/grad-learned-bias-bf16-d64-bundle.json gpu-bundles/grad-bf16-d64-causal-bundle.json
fi
if [ "${1:-}" = backward ]; then
  shift
  [ $# -gt 0 ] || set -- bf16 f16 masks
  bundles=()
  for what in "$@"; do
    case $what in
      masks) bundles+=(gpu-bundles/grad-bf16-d{64,128}-{window1024,document512}-bundle.json) ;;
      kernels) bundles+=(gpu-bundles/grad-bf16-d{64,128}-{full,causal}{,-mma-sync}-bundle.json) ;;
      d256) bundles+=(gpu-bundles/grad-bf16-d256-{full,causal}-bundle.json) ;;
      *) bundles+=(gpu-bundles/grad-$what-d{64,128}-{full,causal}-bundle.json) ;;
    esac
  done
  PYTHONUNBUFFERED=1 exec python3 bench/backward_bench.py "${bundles[@]}"
fi
[ $# -gt 0 ] || set -- bf16 f16
bundles=()
for dtype in "$@"; do
  for d in 64 128; do
    for mask in full causal; do
      bundles+=("gpu-bundles/bench-$dtype-d$d-$mask-bundle.json")
    done
  done
done
# `masks` times the sliding-window and document bundles next to Flex: the
# block mask derived and built in the call, and given (built apart);
# `mask-tiles` the given ones with other tiles.
if [ "$1" = masks ]; then
  bundles=(gpu-bundles/bench-bf16-d128-{window1024,document512}{,-given}-bundle.json)
elif [ "$1" = mask-tiles ]; then
  bundles=(gpu-bundles/bench-bf16-d128-{window1024,document512}-given-{band1,kv32,kv16,q64,kv128}-bundle.json)
elif [ "$1" = small-d ]; then
  bundles=(gpu-bundles/bench-bf16-d{16,32}-{full,causal}{,-mma-sync}-bundle.json)
elif [ "$1" = d256 ]; then
  bundles=(gpu-bundles/bench-bf16-d256-{full,causal}{,-wsoff,-mma-sync}-bundle.json)
elif [ "$1" = warp-specialized ]; then
  # Each bundle next to the kernel without warp specialization (-wsoff).
  bundles=(gpu-bundles/bench-bf16-d128-{full,causal,window1024-given,document512-given}{,-wsoff}-bundle.json)
fi
PYTHONUNBUFFERED=1 python3 bench/bench_peers.py "${bundles[@]}"
