#!/usr/bin/env bash
# Every kernel family under compute-sanitizer's four tools (memcheck,
# racecheck, synccheck, initcheck), on small shapes that still have tails,
# GQA and several blocks per row. Run on a GPU machine with the CUDA
# toolkit (compute-sanitizer) and gpu-tools/attn-run.tar.xz
# (scripts/gpu/pack-attn-run.sh) in the checkout; the Python part needs
# the runtime's package (scripts/gpu/runtime.sh) and gpu-bundles/
# (scripts/gpu/make-bundles.sh).
#
#   scripts/gpu/sanitize.sh [attention|masks|backward|softmax|python|streams]...
#
# Parts: attention (SIMT, mma.sync, wgmma and the warp-specialized TMA
# kernel over head dims and dtypes), masks (every mask_mod and score_mod
# variant, captured buffers, block masks built in the call), backward (the
# dQ, dK/dV and zeroing launches of attn-run --backward: wgmma, mma.sync,
# column slices over D = 128, block lists and a score_mod), softmax (short
# and split rows), python (empty problems and given block-mask lists,
# through attn.Kernel), streams (calls from two threads on several streams
# at once, bench/concurrent_calls.py; no racecheck). Default: all. TOOLS
# overrides the tool list. Each case runs its own float64 or bit-exact
# check too. A finding (an error, a hazard, a failed check, a run past
# CASE_TIMEOUT seconds, default 600) fails the run. Logs under ${OUT:-/tmp}/sanitize.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "no compute-sanitizer"; exit 1; }
tools=${TOOLS:-memcheck racecheck synccheck initcheck}
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(attention masks backward softmax python streams)
status=0
cases=0
# Sanitizer options that pick the kernels to check (none: all).
only=()

# One program under every tool; the sanitizer's exit code 99 marks a
# finding, anything else non-zero a failed check or crash.
sanitize() { # label, command...
  local label=$1
  shift
  for tool in $tools; do
    cases=$((cases + 1))
    local flags=(--tool "$tool" --error-exitcode 99 --print-limit 20)
    [ "$tool" = racecheck ] && flags+=(--racecheck-report hazard)
    # initcheck must see every kernel's writes: with a filter, a result an
    # unchecked PyTorch kernel wrote reads as uninitialized.
    [ "$tool" = initcheck ] || flags+=("${only[@]}")
    timeout "${CASE_TIMEOUT:-600}" "$sanitizer" "${flags[@]}" "$@" > "$out/last.txt" 2>&1
    local rc=$?
    cat "$out/last.txt" >> "$out/sanitize.log"
    local summary
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/last.txt" | tail -1)
    if [ $rc -eq 0 ]; then
      echo "ok   $tool $label: $summary"
    else
      echo "FAIL $tool $label (exit $rc): $summary"
      grep -E "^=========" "$out/last.txt" | head -8
      grep -v "^  \|^=====" "$out/last.txt" | tail -2
      status=1
    fi
  done
}

# attn-run is unpacked only for the parts that run it, so that parts
# running at once in several processes do not unpack it over each other.
unpacked=0
unpack() {
  [ $unpacked -eq 1 ] && return
  tar -xJf gpu-tools/attn-run.tar.xz -C /tmp || exit 1
  unpacked=1
}
# attn-run's libraries only for attn-run: Python must keep the machine's.
run=(env LD_LIBRARY_PATH=/tmp/attn-run/lib /tmp/attn-run/bin/attn-run
  --target=gpu --repeat=0)
# Tails (1, 130, 257 rows), GQA 4:2, two batches, rows of several kv-blocks.
sweep=(--batch=1,2 --heads=4:2 --q-len=1,130,257 --kv-len=17,257)

attention() {
  sanitize "simt f32 d64 causal lse" "${run[@]}" --dtype=f32 --head-dim=64 --causal --lse "${sweep[@]}"
  sanitize "mma.sync f16 d64 causal" "${run[@]}" --dtype=f16 --head-dim=64 --causal --strategy=mma-sync "${sweep[@]}"
  sanitize "mma.sync bf16 d128 lse" "${run[@]}" --dtype=bf16 --head-dim=128 --lse --strategy=mma-sync "${sweep[@]}"
  sanitize "wgmma bf16 d128 causal lse" "${run[@]}" --dtype=bf16 --head-dim=128 --causal --lse --strategy=wgmma "${sweep[@]}"
  sanitize "wgmma-ws bf16 d128" "${run[@]}" --dtype=bf16 --head-dim=128 "${sweep[@]}"
  sanitize "wgmma-ws f16 d64 causal lse" "${run[@]}" --dtype=f16 --head-dim=64 --causal --lse "${sweep[@]}"
  sanitize "wgmma-ws bf16 d256 causal" "${run[@]}" --dtype=bf16 --head-dim=256 --causal "${sweep[@]}"
  sanitize "wgmma-ws bf16 d32" "${run[@]}" --dtype=bf16 --head-dim=32 "${sweep[@]}"
  sanitize "wgmma-ws f16 d16 causal" "${run[@]}" --dtype=f16 --head-dim=16 --causal "${sweep[@]}"
  sanitize "wgmma-ws bf16 d128 dv64 causal" "${run[@]}" --dtype=bf16 --head-dim=128 --value-dim=64 --causal "${sweep[@]}"
}

masks() {
  sanitize "window" "${run[@]}" --dtype=bf16 --head-dim=128 --mask=sliding-window:100 --lse "${sweep[@]}"
  sanitize "document (captured ids)" "${run[@]}" --dtype=bf16 --head-dim=128 --mask=document "${sweep[@]}"
  sanitize "document mma.sync" "${run[@]}" --dtype=f16 --head-dim=64 --mask=document --strategy=mma-sync "${sweep[@]}"
  sanitize "prefix" "${run[@]}" --dtype=f16 --head-dim=64 --mask=prefix:20 "${sweep[@]}"
  sanitize "jagged (captured starts)" "${run[@]}" --dtype=bf16 --head-dim=64 --mask=jagged:16 --lse "${sweep[@]}"
  sanitize "sasa" "${run[@]}" --dtype=bf16 --head-dim=64 --mask=sasa:16:5 "${sweep[@]}"
  sanitize "natten" "${run[@]}" --dtype=f16 --head-dim=128 --mask=natten:8:16:5 "${sweep[@]}"
  sanitize "alibi (captured slopes) causal" "${run[@]}" --dtype=f16 --head-dim=64 --score-mod=alibi --causal "${sweep[@]}"
  sanitize "softcap causal" "${run[@]}" --dtype=bf16 --head-dim=128 --score-mod=softcap:30 --causal "${sweep[@]}"
  sanitize "relative + window d32" "${run[@]}" --dtype=bf16 --head-dim=32 --score-mod=relative --mask=sliding-window:50 "${sweep[@]}"
  sanitize "checkerboard + document f32" "${run[@]}" --dtype=f32 --score-mod=checkerboard --mask=document "${sweep[@]}"
  sanitize "window d256" "${run[@]}" --dtype=bf16 --head-dim=256 --mask=sliding-window:100 "${sweep[@]}"
}

backward() {
  sanitize "backward wgmma bf16 d128 causal" "${run[@]}" --backward --dtype=bf16 --head-dim=128 --causal "${sweep[@]}"
  sanitize "backward wgmma f16 d64" "${run[@]}" --backward --dtype=f16 --head-dim=64 "${sweep[@]}"
  sanitize "backward mma.sync bf16 d128" "${run[@]}" --backward --dtype=bf16 --head-dim=128 --strategy=mma-sync "${sweep[@]}"
  sanitize "backward slices bf16 d256 causal" "${run[@]}" --backward --dtype=bf16 --head-dim=256 --causal "${sweep[@]}"
  sanitize "backward slices f16 d64 dv256" "${run[@]}" --backward --dtype=f16 --head-dim=64 --value-dim=256 "${sweep[@]}"
  sanitize "backward document + alibi" "${run[@]}" --backward --dtype=bf16 --head-dim=64 --mask=document --score-mod=alibi "${sweep[@]}"
}

softmax() {
  for dtype in f32 bf16; do
    sanitize "softmax $dtype short and split rows" "${run[@]}" --op=softmax --dtype=$dtype \
      --rows=1,3 --row-len=1,1000,4097,65539
  done
}

python_part() {
  [ -d build-runtime/python ] || { echo "python: no build-runtime (scripts/gpu/runtime.sh)"; status=1; return; }
  export PYTHONPATH=$PWD/build-runtime/python:/tmp/site
  # Only attn's kernels are checked (but by initcheck): PyTorch's own run
  # unchecked.
  only=(--kernel-name kns=attention_kernel --kernel-name kns=block_mask_kernel)
  sanitize "empty problems, block mask built in the call" \
    python3 bench/empty_problems.py gpu-bundles/bench-bf16-d128-document512-bundle.json
  sanitize "given lists, out-of-range indices" \
    python3 bench/bad_block_lists.py gpu-bundles/bench-bf16-d128-window1024-given-bundle.json
  only=()
}

streams_part() {
  [ -d build-runtime/python ] || { echo "streams: no build-runtime (scripts/gpu/runtime.sh)"; status=1; return; }
  export PYTHONPATH=$PWD/build-runtime/python:/tmp/site
  only=(--kernel-name kns=attention_kernel --kernel-name kns=block_mask_kernel
    --kernel-name kns=softmax_kernel)
  # No racecheck: it checks shared memory within a block, which calls on
  # other streams cannot touch (the attention and softmax parts race-check
  # these kernels), and it takes more than 20 minutes here.
  local all=$tools
  tools=$(echo "$tools" | sed 's/racecheck//')
  sanitize "two threads, several streams, a workspace growing" \
    python3 bench/concurrent_calls.py gpu-bundles 1 --small
  tools=$all
  only=()
}

for part in "${parts[@]}"; do
  case $part in
  attention) unpack; attention ;;
  masks) unpack; masks ;;
  backward) unpack; backward ;;
  softmax) unpack; softmax ;;
  python) python_part ;;
  streams) streams_part ;;
  *) echo "unknown part '$part'"; exit 2 ;;
  esac
done
echo "sanitize: $cases runs, $([ $status -eq 0 ] && echo "no findings" || echo "FINDINGS (see above)")"
exit $status
