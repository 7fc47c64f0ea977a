#!/usr/bin/env bash
# Profiles one kernel of a benchmark bundle's call with Nsight Compute's
# throughput, occupancy, stall and memory sections: what a kernel that
# kernel-times.sh shows slow spends its time on. Needs what bench.sh needs.
# Usage: scripts/gpu/kernel-profile.sh N LAUNCH BUNDLE
#   LAUNCH: the kernel's place in the call, as kernel-times.sh numbers it
#   (0 is the block mask's scan in a bundle that builds it in the call)
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 3 ] || { sed -n 5,7p "$0"; exit 2; }
n=$1 launch=$2 bundle=$3
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -d build-runtime/python/attn ] || { echo "no build-runtime/python/attn: run scripts/gpu/runtime.sh first"; exit 1; }
export PYTHONPATH=$PWD/build-runtime/python:$PWD/bench:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
# attn's kernels carry the function's name; PyTorch's (the inputs' fill)
# are C++ templates, which Nsight Compute names "void ...".
ncu --clock-control none --kernel-name-base demangled -k 'regex:^(?!void )' --launch-skip "$launch" --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section LaunchStats \
  --section WarpStateStats --section SchedulerStats \
  --section MemoryWorkloadAnalysis --section InstructionStats \
  python3 bench/kernel_times.py "$n" "$bundle"
