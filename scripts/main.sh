#!/usr/bin/env bash
# The main job: install, build, then take the example (causal GQA attention
# with a logsumexp; sliding-window attention with a block mask and tanh
# soft-capping), compile it to PTX for sm_90 (kernel bundle in
# build/example-bundle/, ptxas-checked where CUDA is installed), and run it
# against a float64 reference, printing the error: on the GPU through the
# CUDA driver when there is one (attn-run --target=gpu), on the CPU
# otherwise (attn-run --target=cpu, the MLIR ExecutionEngine).
# Usage: scripts/main.sh [file.mlir]   (default: examples/causal_gqa.mlir)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build >/dev/null
input=${1:-examples/causal_gqa.mlir}
bundle=build/example-bundle
rm -rf "$bundle" && mkdir -p "$bundle"

echo "== compile $input to PTX (attn-lower-to-nvvm chip=sm_90)"
build/bin/attn-opt "$input" --attn-lower-to-nvvm=chip=sm_90 \
  --attn-write-kernel-bundle=prefix="$bundle/" -o /dev/null
ls -l "$bundle"
if [ -x /usr/local/cuda/bin/ptxas ]; then
  for ptx in "$bundle"/*.ptx; do
    /usr/local/cuda/bin/ptxas -arch=sm_90 "$ptx" -o "${ptx%.ptx}.cubin"
    echo "ptxas -arch=sm_90 accepts $(basename "$ptx")"
  done
fi

# On the GPU when the CUDA driver sees one, on the CPU otherwise.
target=cpu
if build/bin/attn-run --target=gpu --q-len=1 --kv-len=1 >/dev/null 2>&1; then
  target=gpu
  echo "== a GPU is present: run $input on it (attn-lower-to-nvvm for its chip, CUDA driver)"
else
  echo "== no GPU here: run $input on the CPU (attn-lower-to-cpu, MLIR ExecutionEngine)"
fi
if [ "$input" = examples/causal_gqa.mlir ]; then
  build/bin/attn-run --target=$target "$input" --entry=causal_gqa --batch=2 --q-len=130 --kv-len=257
  build/bin/attn-run --target=$target "$input" --entry=sliding_window_softcap --q-len=300 --kv-len=300
else
  build/bin/attn-run --target=$target "$input"
fi
