#!/usr/bin/env bash
# The backward's GPU correctness matrix: attn-run --backward --target=gpu
# (compiled on the GPU machine for its GPU, checked against the float64
# backward on the CPU and for the same bits on a second run) for f16 and
# bf16, head dims 16 to 256, causal or not, every built-in mask and score
# mod, gradients of captured tensors, GQA 8:2 and 8:1, odd lengths, and a
# few long rows, on wgmma, on mma.sync and on the 32 x 32 tiles of chips
# with 99 KB a block. ONLY (an extended regex) keeps the checks whose
# arguments match it. Needs
# gpu-tools/attn-run.tar.xz from scripts/gpu/pack-attn-run.sh. Runs JOBS
# (default 8) checks at once; prints each check's summary line; full output
# in ${OUT:-/tmp}/backward/.
set -uo pipefail
cd "$(dirname "$0")/../.."
tar -xJf gpu-tools/attn-run.tar.xz -C /tmp || exit 1
export LD_LIBRARY_PATH=/tmp/attn-run/lib
out=${OUT:-/tmp}/backward
mkdir -p "$out"
sweep="--batch=1,2 --heads=8:2,8:1 --q-len=1,17,130,257 --kv-len=1,17,130,257"
{
  for dtype in f16 bf16; do
    for d in 16 32 64 128 256; do
      echo "--dtype=$dtype --head-dim=$d $sweep"
      echo "--dtype=$dtype --head-dim=$d --causal $sweep"
    done
  done
  for mask in sliding-window:100 document prefix:20 jagged:0 sasa:16:5 natten:8:16:5; do
    echo "--dtype=bf16 --mask=$mask $sweep"
  done
  echo "--dtype=f16 --mask=document --causal $sweep"
  for mod in alibi softcap:30 relative checkerboard; do
    echo "--dtype=f16 --score-mod=$mod $sweep"
    echo "--dtype=bf16 --score-mod=$mod --causal $sweep"
  done
  # Gradients of captured tensors: ALiBi's slopes (one element a block),
  # a per-head gain and a relative-position bias (an element per distance).
  echo "--dtype=f16 --score-mod=alibi --capture-grads $sweep"
  echo "--dtype=bf16 --score-mod=alibi --capture-grads --causal --head-dim=128 $sweep"
  echo "--dtype=bf16 --score-mod=alibi --capture-grads --mask=document --strategy=mma-sync $sweep"
  echo "--dtype=f16 --score-mod=alibi --capture-grads --head-dim=256 --causal --heads=4:1 --q-len=1000 --kv-len=1000"
  echo "test/Integration/Inputs/learned-bias-grad.mlir $sweep"
  echo "test/Integration/Inputs/learned-bias-grad.mlir --strategy=mma-sync --heads=4:2 --q-len=1000 --kv-len=1000"
  sed 's/x32x/x128x/g; s/xf16>/xbf16>/g' test/Integration/Inputs/learned-bias-grad.mlir \
    > "$out/learned-bias-grad-bf16-d128.mlir"
  echo "$out/learned-bias-grad-bf16-d128.mlir $sweep"
  # The mma.sync kernels where wgmma would be chosen (sm_90a).
  echo "--dtype=bf16 --head-dim=64 --strategy=mma-sync $sweep"
  echo "--dtype=f16 --head-dim=128 --causal --strategy=mma-sync $sweep"
  # Head dims over 128: column slices of dQ, dK and dV.
  echo "--dtype=bf16 --head-dim=192 $sweep"
  echo "--dtype=f16 --head-dim=160 --causal $sweep"
  echo "--dtype=bf16 --head-dim=144 --causal $sweep"
  echo "--dtype=f16 --head-dim=176 --heads=2:1 --q-len=300 --kv-len=1000"
  echo "--dtype=bf16 --head-dim=256 --mask=document --score-mod=alibi $sweep"
  echo "--dtype=f16 --head-dim=256 --mask=sliding-window:100 --score-mod=softcap:30 $sweep"
  echo "--dtype=bf16 --head-dim=256 --causal --heads=4:1 --q-len=1000 --kv-len=1000"
  # The 32 x 32 tiles of chips with 99 KB a block: PTX for sm_86, which the
  # driver compiles for this GPU.
  echo "--chip=sm_86 --dtype=bf16 --head-dim=256 --mask=document --score-mod=alibi $sweep"
  echo "--chip=sm_86 --dtype=f16 --head-dim=192 --causal $sweep"
  echo "--dtype=bf16 --head-dim=128 --causal --heads=4:1 --q-len=1000 --kv-len=1000"
  echo "--dtype=f16 --head-dim=64 --heads=2:1 --q-len=4097 --kv-len=4097"
  echo "--dtype=bf16 --head-dim=64 --causal --heads=2:2 --q-len=1000,4097 --kv-len=4097"
  # Through a given 128 x 128 block mask (a per-head window): 64-row tiles
  # walk each listed block in two steps; D = 128 and f16 by substitution.
  blocks="--batch=1,2 --heads=4:2,4:1 --q-len=1,130,300,1000 --kv-len=17,130,300,1000"
  echo "test/Integration/Inputs/block-mask-grad.mlir $blocks"
  echo "test/Integration/Inputs/block-mask-grad.mlir --strategy=mma-sync $blocks"
  echo "test/Integration/Inputs/block-mask-grad-causal.mlir $blocks"
  sed 's/x64xbf16>/x128xf16>/g' test/Integration/Inputs/block-mask-grad.mlir \
    > "$out/block-mask-grad-f16-d128.mlir"
  echo "$out/block-mask-grad-f16-d128.mlir $blocks"
  # A NaN score: its row's gradients, and the keys' it reaches, are NaN.
  sed 's/x16xf32>/x16xbf16>/g' test/Integration/Inputs/nan-score-mod-grad.mlir \
    > "$out/nan-score-mod-grad-bf16.mlir"
  echo "$out/nan-score-mod-grad-bf16.mlir"
} | grep -E -- "${ONLY:-.}" > "$out/cases.txt"
run() {
  local name
  name=$(echo "$*" | tr -c 'A-Za-z0-9.\n-' '_' | cut -c1-120)
  /tmp/attn-run/bin/attn-run --target=gpu --backward $* > "$out/$name.log" 2>&1
  local rc=$?
  echo "[$rc] $* :: $(tail -1 "$out/$name.log")"
}
export -f run
export out
xargs -P "${JOBS:-8}" -I{} bash -c 'run {}' < "$out/cases.txt" | tee "$out/summary.txt"
! grep -q '^\[[1-9]' "$out/summary.txt"
