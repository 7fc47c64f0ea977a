#!/usr/bin/env bash
# Installs the dependencies, configures and builds attn.
# Usage: scripts/build.sh [build-dir]   (default: build; BUILD_TYPE=Release)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install-deps.sh
cmake -G Ninja -S . -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}"
cmake --build "$build"
