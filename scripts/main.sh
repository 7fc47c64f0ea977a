#!/usr/bin/env bash
# The main job: install, build, then compile the example (causal GQA
# attention, and sliding-window attention with a block mask and a tanh
# soft-cap) with attn-opt and print the verified IR.
# Usage: scripts/main.sh [file.mlir]   (default: examples/causal_gqa.mlir)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build >/dev/null
input=${1:-examples/causal_gqa.mlir}
echo "== attn-opt $input (parsed, verified, printed)"
build/bin/attn-opt "$input"
