#!/usr/bin/env bash
# The Python package on a GPU machine (Python with PyTorch, CMake and Ninja;
# no MLIR needed): builds the runtime-only package there with nanobind from
# wheels in .whl/, runs the pytest suite (GPU tests against a prebuilt
# bundle) and one benchmark row next to torch's SDPA. Copy into the
# checkout: .whl/ (the nanobind and pytest wheels and their dependencies,
# for that machine's Python) and gpu-bundles/ (scripts/gpu/make-bundles.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python=$(python3 -c "import sys; print(sys.executable)")
cmake -S . -B build-python -G Ninja -DATTN_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE="$python" > /tmp/python-build.log 2>&1 &&
  ninja -C build-python >> /tmp/python-build.log 2>&1 || { tail -30 /tmp/python-build.log; exit 1; }
grep "attn:" /tmp/python-build.log
export PYTHONPATH=$PWD/build-python/python:/tmp/site
status=0
ATTN_TEST_BUNDLE=gpu-bundles/f16-d64-causal-bundle.json \
  ATTN_TEST_SOFTMAX_BUNDLE=gpu-bundles/softmax-f32-bundle.json \
  python3 -m pytest -q -rs -p no:cacheprovider python/tests || status=1
python3 bench/python_row.py gpu-bundles/bench-bf16-d128-causal-bundle.json --causal --batch=8 --heads=16 --n=2048 || status=1
exit $status
