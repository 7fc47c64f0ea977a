#!/usr/bin/env bash
# Times every kernel of the masked benchmark bundles one by one with Nsight
# Compute (clocks left alone): the block mask's scan and compaction kernels
# next to the attention kernel. Needs what bench.sh needs.
# Usage: scripts/gpu/kernel-times.sh [N [BUNDLE ...]]
#   (default 8192, and the `bench.sh masks` bundles)
set -uo pipefail
cd "$(dirname "$0")/../.."
n=${1:-8192}
shift $(( $# > 0 ))
[ $# -gt 0 ] || set -- gpu-bundles/bench-bf16-d128-{window1024,document512}{,-given}-bundle.json
[ -d build-runtime/python/attn ] || { echo "no build-runtime/python/attn: run scripts/gpu/runtime.sh first"; exit 1; }
export PYTHONPATH=$PWD/build-runtime/python:$PWD/bench:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
for bundle in "$@"; do
  echo "$bundle, N = $n:"
  ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    python3 bench/kernel_times.py "$n" "$bundle" > /tmp/ncu.csv ||
    { tail -20 /tmp/ncu.csv; continue; }
  # attn's kernels (every kernel of a bundle has the function's name), by
  # their place in a call, in launch order: median microseconds of 5 calls.
  python3 - /tmp/ncu.csv <<'PY'
import csv, statistics, sys
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
times = []
for row in csv.DictReader(lines):
    if (row.get("Metric Name") == "gpu__time_duration.sum"
            and not row["Kernel Name"].startswith("void ")):
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1, "us": 1,
                 "msecond": 1e3, "ms": 1e3}[row["Metric Unit"]]
        times.append(float(row["Metric Value"].replace(",", "")) * scale)
per_call = len(times) // 5
print("| launch in the call | median us |")
print("|---|---|")
for i in range(per_call):
    print(f"| {i} | {statistics.median(times[i::per_call]):.1f} |")
print(f"| all | {sum(statistics.median(times[i::per_call]) for i in range(per_call)):.1f} |")
PY
done
