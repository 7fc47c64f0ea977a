#!/usr/bin/env bash
# Installs, builds and runs every test (lit + FileCheck, unit tests, the
# plugin in Debian's mlir-opt, the installed package); ends with ctest's
# summary. Usage: scripts/test.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/build.sh "$build"
cd "$build"
ctest --output-on-failure -j "$(nproc)"
