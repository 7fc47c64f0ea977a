#!/usr/bin/env bash
# The GPU round, run on a machine with an NVIDIA GPU, its CUDA driver, a C++
# compiler, CMake, Ninja, PyTorch and nvcc (for the float64 GPU reference
# kernel; no MLIR needed), with gpu-bundles/ made on the build machine by
# scripts/gpu/make-bundles.sh and .whl/ (the nanobind wheel, see
# scripts/gpu/python.sh) copied into the checkout:
#   1. builds the runtime there (no MLIR: -DATTN_RUNTIME_ONLY=ON) with its
#      Python package, and runs its unit tests against the real driver;
#   2. checks every bundle on the size matrix against PyTorch (Python,
#      bench/gpu_check.py through attn.Kernel), and one shape of each with
#      attn-bundle-run (C++ runtime, float64 reference, CUDA-event timing),
#      and the block masks built on the GPU (bench/block_masks.py), and
#      empty problems with a block mask built in the call
#      (bench/empty_problems.py), and given lists with out-of-range
#      block indices (bench/bad_block_lists.py), and calls from two
#      threads on several streams at once (bench/concurrent_calls.py);
#   3. checks that an oversized problem and a cubin for another chip are
#      refused with a clear error.
# Logs under ${OUT:-/tmp}; exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
out=${OUT:-/tmp}
status=0
log() { tee -a "$out/gpu-round.log"; }

bash scripts/gpu/runtime.sh || exit 1
export PYTHONPATH=$PWD/build-runtime/python:/tmp/site
(cd build-runtime && ctest --output-on-failure -E python/ 2>&1 | tail -3) | log

check() { python3 bench/gpu_check.py "$@" 2>&1 | log; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1; }
check gpu-bundles/f16-d64-causal-bundle.json --dtype=f16 --causal --bench=4,16,1024
check gpu-bundles/bf16-d128-lse-bundle.json --dtype=bf16 --lse
check gpu-bundles/f32-d16-causal-lse-bundle.json --dtype=f32 --causal --lse
check gpu-bundles/f16-d64-window32-bundle.json --dtype=f16 --window=32
# Block masks built on the GPU: all eight lists against PyTorch's.
python3 bench/block_masks.py gpu-bundles/block-masks.json 2>&1 | log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# Empty problems with a block mask built in the call: they run, output 0.
python3 bench/empty_problems.py gpu-bundles/bench-bf16-d128-document512-bundle.json 2>&1 | log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# Two threads calling bundles that use the workspace, at once: results
# identical to the calls one after another.
python3 bench/concurrent_calls.py gpu-bundles 2>&1 | log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# Given lists with out-of-range kv-block indices: skipped, nothing read
# outside K and V, on the default kernel, the block per q-tile (sm_90a)
# and mma.sync (kv-tile 32).
for variant in "" -wsoff -kv32; do
  bundle=gpu-bundles/bench-bf16-d128-window1024-given$variant-bundle.json
  [ -f "$bundle" ] || continue
  python3 bench/bad_block_lists.py "$bundle" 2>&1 | log
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
done

run() { build-runtime/bin/attn-bundle-run "$@" 2>&1 | log; [ "${PIPESTATUS[0]}" -eq 0 ] || status=1; }
run gpu-bundles/f16-d64-causal-bundle.json --causal --batch=2 --heads=8:2 --q-len=300 --kv-len=300
run gpu-bundles/bf16-d128-lse-bundle.json --batch=1 --heads=4:1 --q-len=257 --kv-len=513
run gpu-bundles/f16-d64-window32-bundle.json --window=32 --batch=2 --heads=4:4 --q-len=130 --kv-len=130
run gpu-bundles/f16-d64-causal-bundle.json --causal --batch=4 --heads=16:16 --q-len=1024 --kv-len=1024 --repeat=5
run gpu-bundles/f16-d64-causal-bundle.json --causal --batch=1 --heads=2:1 --q-len=64 --kv-len=64 --json
# Bundles with regions: the reference evaluates the ops each records, with
# its captures and given lists filled by attn-bundle-run.
for region in document document-given softcap alibi prefix jagged window-given; do
  run gpu-bundles/region-$region-bundle.json --batch=2 --heads=4:2 --q-len=300 --kv-len=257 --repeat=0
done
run gpu-bundles/region-natten-bundle.json --heads=2:1 --q-len=320 --kv-len=320 --repeat=0
# A backward with captured tensors' gradients.
run gpu-bundles/grad-learned-bias-bundle.json --batch=2 --heads=4:2 --q-len=300 --kv-len=257 --repeat=3
# The GPU reference kernel (float64, CUDA C built by nvcc there) agrees with
# the CPU reference on a shape both can do, and checks one the CPU cannot.
run gpu-bundles/bf16-d128-lse-bundle.json --batch=2 --heads=8:2 --q-len=300 --kv-len=513 --reference=cpu --repeat=0
run gpu-bundles/bf16-d128-lse-bundle.json --batch=2 --heads=8:2 --q-len=300 --kv-len=513 --reference=gpu --repeat=0
run gpu-bundles/f16-d64-window32-bundle.json --window=32 --batch=2 --heads=4:4 --q-len=130 --kv-len=130 --reference=gpu --repeat=0
run gpu-bundles/bench-bf16-d128-causal-bundle.json --causal --batch=1 --heads=16:16 --q-len=8192 --kv-len=8192 --repeat=3
# A problem larger than the GPU's memory: a clear error before any input is
# made, and a non-zero exit.
build-runtime/bin/attn-bundle-run gpu-bundles/f16-d64-causal-bundle.json --causal --batch=64 --heads=64:64 --q-len=131072 --kv-len=131072 2>&1 | log
[ "${PIPESTATUS[0]}" -ne 0 ] || { echo "expected the oversized problem to be refused"; status=1; }
# A cubin built for sm_80 cannot run on this GPU: a clear error, exit 2.
build-runtime/bin/attn-bundle-run gpu-bundles/sm80-cubin-bundle.json --causal 2>&1 | log
[ "${PIPESTATUS[0]}" -eq 2 ] || { echo "expected the sm_80 cubin to be refused"; status=1; }
exit $status
