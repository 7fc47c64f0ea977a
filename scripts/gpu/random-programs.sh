#!/usr/bin/env bash
# Differential fuzzing on the GPU: COUNT (default 2000) random attention
# programs from fuzz/random_programs.py, each compiled there by attn-run for
# sm_90a (wgmma, warp specialization, TMA) or sm_80 (mma.sync; programs
# alternate), run on random shapes and compared with attn-run's float64
# reference interpreter, JOBS (default: the cores less two) at a time, each
# under a 300 s watchdog. Needs gpu-tools/attn-run.tar.xz
# (scripts/gpu/pack-attn-run.sh). Programs that fail are kept with their
# logs under ${OUT:-/tmp}/random-programs; exits 1 if any.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
tar -xJf gpu-tools/attn-run.tar.xz -C /tmp || exit 1
# The packed libraries for the packed tools alone, not for Python.
for tool in attn-run attn-opt; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/attn-run/lib exec /tmp/attn-run/bin/%s "$@"\n' \
    "$tool" > "/tmp/attn-run/$tool.sh"
  chmod +x "/tmp/attn-run/$tool.sh"
done
jobs=${JOBS:-$(($(nproc) > 3 ? $(nproc) - 2 : 1))}
python3 fuzz/random_programs.py --target=gpu --chip=sm_90a,sm_80 \
  --count="${COUNT:-2000}" --seed="${SEED:-1}" --jobs="$jobs" --timeout=300 \
  --attn-run=/tmp/attn-run/attn-run.sh --attn-opt=/tmp/attn-run/attn-opt.sh \
  --out="$out/random-programs"
