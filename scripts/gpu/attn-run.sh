#!/usr/bin/env bash
# attn-run --target=gpu on a GPU machine that has no MLIR. On the build
# machine, scripts/gpu/pack-attn-run.sh writes gpu-tools/attn-run.tar.xz;
# copy it into the GPU machine's checkout and run this from there. Runs the
# README's example (what scripts/main.sh runs when a GPU is present), the
# correctness matrix with masks and score mods and the softmax cases, each
# compiled on that machine for its GPU, then timed runs. Prints the last
# lines of each run; full output in ${OUT:-/tmp}/gpu-attn-run.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
tar -xJf gpu-tools/attn-run.tar.xz -C /tmp || exit 1
export LD_LIBRARY_PATH=/tmp/attn-run/lib
run=/tmp/attn-run/bin/attn-run
out=${OUT:-/tmp}
status=0
sweep="--batch=1,2 --heads=4:4,8:2,8:1 --q-len=1,17,64,130,257 --kv-len=1,17,64,130,257"
go() {
  echo "\$ attn-run $*"
  "$run" "$@" > "$out/last.txt" 2>&1
  local rc=$?
  cat "$out/last.txt" >> "$out/gpu-attn-run.log"
  grep -v "^  " "$out/last.txt" | tail -3
  [ $rc -eq 0 ] || { echo "FAILED (exit $rc)"; status=1; }
}
go --target=gpu examples/causal_gqa.mlir --entry=causal_gqa --batch=2 --q-len=130 --kv-len=257
go --target=gpu examples/causal_gqa.mlir --entry=sliding_window_softcap --q-len=300 --kv-len=300
for dtype in f32 f16 bf16; do
  for d in 16 64 128; do
    go --target=gpu --dtype=$dtype --head-dim=$d $sweep
    go --target=gpu --dtype=$dtype --head-dim=$d --causal --lse $sweep
  done
done
go --target=gpu --dtype=f32 --mask=sliding-window:32 $sweep
go --target=gpu --dtype=bf16 --mask=sliding-window:100 --lse $sweep
go --target=gpu --dtype=f16 --mask=document $sweep
go --target=gpu --dtype=f32 --mask=prefix:20 $sweep
go --target=gpu --dtype=f16 --score-mod=alibi --causal $sweep
go --target=gpu --dtype=bf16 --score-mod=softcap:30 --causal $sweep
go --target=gpu --dtype=f32 --score-mod=relative $sweep
go --target=gpu --dtype=f32 --score-mod=checkerboard --mask=document $sweep
# NaN scores: the rows' outputs and logsumexps are NaN on every kernel.
for strategy in mma-sync wgmma wgmma-ws; do
  go --target=gpu test/Integration/Inputs/nan-score-mod.mlir --strategy=$strategy
done
# Programs the GPU fuzzer found (test/Integration/random-programs.test).
go --target=gpu test/Integration/Inputs/uniform-scores.mlir --chip=sm_80 \
  --seed=1407 --batch=1,3 --heads=4:4 --q-len=2,300 --kv-len=2,17
# The plain float64 reference kernel on the GPU: it agrees with the CPU's
# on the matrix, and checks shapes too large for the CPU.
go --target=gpu --dtype=bf16 --head-dim=128 --causal --lse --reference=gpu $sweep
go --target=gpu --dtype=f16 --head-dim=64 --batch=2 --heads=16:4 --q-len=4096 --kv-len=4096
go --target=gpu --dtype=bf16 --head-dim=128 --causal --lse --batch=1 --heads=16:16 --q-len=8192 --kv-len=8192 --repeat=3
# attn.softmax: rows in one block, split across blocks, swept twice
# (2^24), odd lengths, a row of -inf (the last of several), then timed.
for dtype in f32 f16 bf16; do
  go --target=gpu --op=softmax --dtype=$dtype --rows=1,3 --row-len=1,1000,4097,65539,100003,1048576
done
go --target=gpu --op=softmax --dtype=f16 --rows=2 --row-len=16777216
go --target=gpu --op=softmax --dtype=f16 --rows=64 --row-len=1048576 --repeat=20
# Timed: one warm-up (the checked run), median of 10.
go --target=gpu --dtype=bf16 --head-dim=128 --causal --batch=4 --heads=16:16 --q-len=1024 --repeat=10 --json
exit $status
