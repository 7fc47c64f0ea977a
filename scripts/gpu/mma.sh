#!/usr/bin/env bash
# The tensor-core kernels' correctness matrix on a GPU machine, after
# scripts/gpu/round.sh has built the runtime-only Python package there:
#   1. every mma-* bundle of scripts/gpu/make-bundles.sh (f16/bf16, D 16 to
#      256, causal and not) on B in {1, 2}, GQA 8:2 and 8:1, and M, N in
#      {1, 17, 64, 130, 257, 1000, 4097} against PyTorch in float64;
#   2. with gpu-tools/attn-run.tar.xz (scripts/gpu/pack-attn-run.sh), every
#      mask and score_mod variant compiled there by attn-run for the GPU and
#      checked against attn-run's float64 reference, which interprets the
#      regions.
# Logs under ${OUT:-/tmp}; exits non-zero if anything failed. MMA_MATRIX=0
# runs part 2 alone.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
status=0
export PYTHONPATH=$PWD/build-runtime/python:/tmp/site
lens=1,17,64,130,257,1000,4097
# MMA_MATRIX=0 skips part 1.
matrix=()
[ "${MMA_MATRIX:-1}" = 0 ] || matrix=(gpu-bundles/mma-*-bundle.json)
for bundle in "${matrix[@]}"; do
  python3 bench/gpu_check.py "$bundle" --batch=1,2 --heads=8:2,8:1 --lens=$lens \
    > "$out/last.txt" 2>&1 || status=1
  cat "$out/last.txt" >> "$out/mma-matrix.log"
  echo "$(basename "$bundle"): $(tail -1 "$out/last.txt")"
done

[ -f gpu-tools/attn-run.tar.xz ] || { echo "no gpu-tools/attn-run.tar.xz: masks skipped"; exit $status; }
tar -xJf gpu-tools/attn-run.tar.xz -C /tmp || exit 1
export LD_LIBRARY_PATH=/tmp/attn-run/lib
sweep="--batch=1,2 --heads=8:2,8:1 --q-len=1,17,130,257 --kv-len=1,17,130,257"
go() {
  /tmp/attn-run/bin/attn-run --target=gpu "$@" > "$out/last.txt" 2>&1
  local rc=$?
  cat "$out/last.txt" >> "$out/mma-masks.log"
  echo "attn-run $*: $(grep -v '^  ' "$out/last.txt" | tail -1)"
  [ $rc -eq 0 ] || { echo "FAILED (exit $rc)"; status=1; }
}
for dtype in f16 bf16; do
  go --dtype=$dtype --head-dim=64 --mask=sliding-window:100 --lse $sweep
  go --dtype=$dtype --head-dim=128 --mask=document --lse $sweep
  go --dtype=$dtype --head-dim=64 --mask=prefix:20 $sweep
  go --dtype=$dtype --head-dim=128 --mask=jagged:0 --lse $sweep
  go --dtype=$dtype --head-dim=64 --mask=jagged:16 $sweep
  go --dtype=$dtype --head-dim=64 --mask=sasa:16:5 --lse $sweep
  go --dtype=$dtype --head-dim=128 --mask=natten:8:16:5 $sweep
  go --dtype=$dtype --head-dim=64 --score-mod=alibi --causal $sweep
  go --dtype=$dtype --head-dim=128 --score-mod=softcap:30 --causal $sweep
  go --dtype=$dtype --head-dim=32 --score-mod=relative --mask=sliding-window:50 $sweep
  go --dtype=$dtype --head-dim=64 --score-mod=checkerboard --value-dim=32 $sweep
  # wgmma's head dims: 256, 16 and 32 (the 32- and 64-byte swizzles), and
  # Dv != D.
  go --dtype=$dtype --head-dim=256 --mask=sliding-window:100 --lse $sweep
  go --dtype=$dtype --head-dim=256 --score-mod=softcap:30 --causal $sweep
  go --dtype=$dtype --head-dim=256 --causal --strategy=wgmma --lse $sweep
  go --dtype=$dtype --head-dim=128 --value-dim=64 --causal --lse $sweep
  go --dtype=$dtype --head-dim=64 --value-dim=256 --mask=document $sweep
  go --dtype=$dtype --head-dim=16 --mask=document --lse $sweep
  go --dtype=$dtype --head-dim=32 --value-dim=16 --causal --strategy=wgmma $sweep
done
# Long rows: the block mask's lines span several blocks of threads of its
# kernel (32 kv-blocks each).
go --dtype=bf16 --head-dim=128 --mask=document --lse --batch=1 --heads=2:1 --q-len=4500 --kv-len=4500
go --dtype=f16 --head-dim=64 --mask=sliding-window:1000 --batch=1 --heads=2:1 --q-len=300,4200 --kv-len=4400
# Rows with no unmasked key give 0 and a logsumexp of -inf.
go test/Integration/Inputs/fully-masked-bf16.mlir --heads=2:1 --q-len=1,7,70,300 --kv-len=3,70,300 --lse
exit $status
