#!/usr/bin/env bash
# Softmax round on the lent GPU (issue 5): correctness of every softmax
# bundle (f32, f16, bf16; aligned and misaligned buffers; N from 1 to 2^24)
# and the bandwidth table next to torch.softmax, torch.compile and a copy.
# Carry gpu-bundles/ (scripts/make-gpu-bundles.sh). Usage:
#   scripts/gpu-softmax.sh [VARIANT ...]   (e.g. t1024 t256 e32)
# A kernel that hangs is killed after 540 s (the blocks of a split row wait
# for each other; the round must end either way).
set -uo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
PYTHONUNBUFFERED=1 timeout 540 python3 bench/softmax_bench.py gpu-bundles "$@"
