#!/usr/bin/env bash
# Builds the runtime on a GPU machine (no MLIR: -DATTN_RUNTIME_ONLY=ON) with
# its Python package (attn.Kernel) under build-runtime/, from .whl/ (the
# nanobind wheel, see scripts/gpu/python.sh); round.sh, bench.sh and
# kernel-times.sh use it. Log: ${OUT:-/tmp}/runtime-build.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
python=$(python3 -c "import sys; print(sys.executable)")
PYTHONPATH=/tmp/site cmake -S . -B build-runtime -G Ninja -DATTN_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DPython_EXECUTABLE="$python" > "$out/runtime-build.log" 2>&1 &&
  ninja -C build-runtime >> "$out/runtime-build.log" 2>&1 || { echo "runtime build failed"; tail -20 "$out/runtime-build.log"; exit 1; }
[ -d build-runtime/python/attn ] || { echo "no Python package built (nanobind?)"; grep "attn:" "$out/runtime-build.log"; exit 1; }
