#!/usr/bin/env bash
# Softmax round on a GPU machine: correctness of every softmax bundle (f32,
# f16, bf16; aligned and misaligned buffers; N from 1 to 2^24) and the
# bandwidth table next to torch.softmax, torch.compile and a copy.
# Needs gpu-bundles/ from scripts/gpu/make-bundles.sh, copied into the
# checkout, and the Python package scripts/gpu/round.sh builds. Usage:
#   scripts/gpu/softmax.sh [VARIANT ...]   (e.g. sv8 sv12)
# A kernel that hangs is killed after 540 s (the blocks of a split row wait
# for each other; the round must end either way).
set -uo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# attn.Kernel: the runtime-only Python package scripts/gpu/round.sh builds.
[ -d build-runtime/python/attn ] || { echo "no build-runtime/python/attn: run scripts/gpu/round.sh first"; exit 1; }
export PYTHONPATH=$PWD/build-runtime/python${PYTHONPATH:+:$PYTHONPATH}
PYTHONUNBUFFERED=1 timeout 540 python3 bench/softmax_bench.py gpu-bundles "$@"
