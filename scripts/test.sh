#!/usr/bin/env bash
# Installs, builds and runs every test: the fuzzing build first
# (scripts/fuzz.sh: clang with ASan and UBSan, the unit tests sanitized,
# each fuzzer for FUZZ_SECONDS, default 60; ATTN_FUZZ=0 skips it), then the
# main build's lit + FileCheck suite, unit tests, Python tests, the plugin
# in Debian's mlir-opt and the installed package; ends with ctest's summary.
# Usage: scripts/test.sh [build-dir]   (the fuzzing build: <build-dir>-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/build.sh "$build"
if [ "${ATTN_FUZZ:-1}" != 0 ]; then
  scripts/fuzz.sh "$build-fuzz"
fi
cd "$build"
ctest --output-on-failure -j "$(nproc)"
