#!/usr/bin/env bash
# Installs, builds and runs every test: the fuzzing build first
# (scripts/fuzz.sh: clang with ASan and UBSan, the unit tests sanitized,
# each fuzzer for FUZZ_SECONDS, default 60; ATTN_FUZZ=0 skips it), then the
# whole suite (lit + FileCheck, unit tests, Python tests, the plugin in
# Debian's mlir-opt and the installed package) built with GCC and again
# built with clang when ATTN_CLANG=1 (as .ci/run does); ends with ctest's
# summary. ATTN_REQUIRE_PTXAS=1 makes a missing ptxas an error of the lit
# suite instead of skipped tests.
# Usage: scripts/test.sh [build-dir]
#   (the fuzzing build: <build-dir>-fuzz, the clang build: <build-dir>-clang)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/build.sh "$build"
if [ "${ATTN_FUZZ:-1}" != 0 ]; then
  scripts/fuzz.sh "$build-fuzz"
fi
builds=("$build")
if [ "${ATTN_CLANG:-0}" != 0 ]; then
  python=$(python3 -c "import sys; print(sys.executable)")
  CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B "$build-clang" \
    -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$python"
  cmake --build "$build-clang"
  builds+=("$build-clang")
fi
for dir in "${builds[@]}"; do
  echo "test: the suite of $dir ($(grep -m1 CMAKE_CXX_COMPILER: "$dir/CMakeCache.txt"))"
  (cd "$dir" && ctest --output-on-failure -j "$(nproc)")
done
