#!/usr/bin/env bash
# The fuzzing build: attn compiled with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, plus the libFuzzer targets in fuzz/. Runs the
# unit tests under the sanitizers, then each fuzzer for FUZZ_SECONDS
# (default 60) from its seed corpus: attn-bundle-fuzzer from
# fuzz/corpus/bundle, attn-ir-fuzzer from every module of the lit tests.
# A crash, leak, hang or sanitizer report fails the run and leaves the input
# in <build-dir>/fuzz-artifacts/; fix it and add it as a regression test.
# Usage: scripts/fuzz.sh [build-dir]   (default: build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
scripts/install-deps.sh
CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B "$build" \
  -DCMAKE_BUILD_TYPE=Release -DATTN_RUNTIME_ONLY=OFF -DATTN_FUZZERS=ON
cmake --build "$build"

# Seeds for the IR fuzzer: each `// -----` piece of each lit test module.
corpus="$build/corpus/ir"
rm -rf "$corpus" && mkdir -p "$corpus"
python3 - "$corpus" <<'PY'
import pathlib, sys
out = pathlib.Path(sys.argv[1])
count = 0
for path in sorted(pathlib.Path("test").rglob("*.mlir")):
    if "Inputs" in path.parts and "bundles" in path.parts:
        continue
    for piece in path.read_text().split("\n// -----\n"):
        if "func.func" in piece or "module" in piece:
            count += 1
            (out / f"{count:04d}.mlir").write_text(piece)
print(f"fuzz: {count} IR seeds from test/")
PY

artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts" "$build/corpus/bundle-run" "$build/corpus/ir-run"
# LLVM's BumpPtrAllocator poisons the slabs it carves when compiled for
# ASan: our sanitized code and Debian's unsanitized libMLIR share MLIR's type
# uniquer, so memory our code's inlined allocator poisoned is then handed
# out by libMLIR's, which does not unpoison it (a false use-after-poison in
# MemRefType::get once attn types filled a slab). Heap, stack and global
# checks do not depend on user poisoning.
export ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1
run() {
  local fuzzer=$1 work=$2 seeds=$3 status=0
  shift 3
  local log="$artifacts/$fuzzer.log"
  echo "fuzz: $fuzzer for ${seconds}s"
  "$build/bin/$fuzzer" -max_total_time="$seconds" -timeout=30 \
    -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$fuzzer-" "$@" "$work" "$seeds" \
    > "$log" 2>&1 || status=$?
  grep -E "^stat::(number_of_executed_units|new_units_added|peak_rss_mb)" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log"
    echo "fuzz: $fuzzer failed (exit $status); the input is in $artifacts"
  fi
  return "$status"
}
run attn-bundle-fuzzer "$build/corpus/bundle-run" fuzz/corpus/bundle \
  -dict=fuzz/bundle.dict -max_len=70000
run attn-ir-fuzzer "$build/corpus/ir-run" "$corpus" -max_len=16384

cd "$build"
ctest --output-on-failure -j "$(nproc)"
