#!/usr/bin/env bash
# The GPU round, run on the lent GPU machine (device tool) from the repo
# root, with gpu-bundles/ made here by scripts/make-gpu-bundles.sh and
# carried: checks every bundle on the size matrix against PyTorch.
set -uo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
out=${OUT:-/tmp}
status=0
run() { python3 bench/gpu_check.py "$@" 2>&1 | tee -a "$out/gpu-check.log" || status=1; }
run gpu-bundles/f16-d64-causal-bundle.json --dtype=f16 --causal --bench=4,16,1024
run gpu-bundles/bf16-d128-lse-bundle.json --dtype=bf16 --lse
run gpu-bundles/f32-d16-causal-lse-bundle.json --dtype=f32 --causal --lse
run gpu-bundles/f16-d64-window32-bundle.json --dtype=f16 --window=32
exit $status
