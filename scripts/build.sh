#!/usr/bin/env bash
# Installs the dependencies, configures and builds attn, and makes the
# Python package importable: `python3 -c "import attn"` (a .pth file in the
# interpreter's site-packages points at <build-dir>/python).
# Usage: scripts/build.sh [build-dir]   (default: build; BUILD_TYPE=Release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install-deps.sh
python=$(python3 -c "import sys; print(sys.executable)")
cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DPython_EXECUTABLE="$python"
cmake --build "$build"
if [ -d "$build/python/attn" ]; then
  site=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  echo "$(cd "$build/python" && pwd)" > "$site/attn-dev.pth" 2>/dev/null ||
    echo "build: cannot write $site/attn-dev.pth; set PYTHONPATH=$build/python"
fi
