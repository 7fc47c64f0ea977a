//===- Passes.td - dialect-level attn passes ---------------*- tablegen -*-===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RecordShapeContract
    : Pass<"attn-record-shape-contract", "::mlir::ModuleOp"> {
  let summary = "record which argument sizes each function's attn ops tie, "
                "and what they compute";
  let description = [{
    Attaches `attn.shape_contract` to every `func.func` whose arguments attn
    ops read or write directly: argument names by role (q, k, v, out, lse;
    input and out of a softmax) and the constraints between their sizes
    (equal batch, heads and lengths; Hq a multiple of Hkv; a captured tensor
    indexed by a region's position at least as long as that dimension).
    Runs first in both pipelines, while the attn ops still say what each
    argument is; the CPU runner and the kernel bundle's runtime check actual
    shapes against it before running anything, so mismatched buffers are an
    error naming both arguments, never an out-of-bounds access.

    A block mask must have been built for the attention that uses it, as in
    FlexAttention: its batch and heads 1 or the attention's, the q_len and
    kv_len of `attn.create_block_mask` the attention's M and N, the rows of
    `attn.make_block_mask`'s lists at least M's q-blocks; a
    `attn.block_mask_field` result's static sizes those of its mask. Sizes
    that are constants or static are checked here, with an error at the op;
    sizes that are dims of arguments become constraints of the contract;
    any other size is an error, since nothing could check it.

    Also attaches `attn.computes`: one dictionary per attn op with what it
    computes (`op`, `dtype`; for attention `head_dim`, `value_head_dim`,
    `scale`, `causal`, `logsumexp`, `block_mask`, and for each `mask_mod` or
    `score_mod` region the xxh3 digest of its IR and, when the op carries
    `attn.mask_mod_name` or `attn.score_mod_name`, the built-in's name).
    The kernel bundle copies it, so that a runner knows what a bundle
    computes without being told.
  }];
}

def Decompose : Pass<"attn-decompose"> {
  let summary = "every attn op but the tiles' loops to linalg on tensors";
  let description = [{
    Decomposes, in order: `attn.merge_splits`; `attn.attention` into its
    flash loop (as `attn-decompose-attention`, with `kv-tile` and
    `bounds-checks`); `attn.attention_grad` into its backward loop (per
    batch and query head, a kv-tile loop that recomputes P and feeds dQ, dK
    and dV; docs/Backward.md); `attn.softmax` into `attn.online_softmax` steps (as
    `attn-decompose-softmax`, with `row-tile`); and then every
    `attn.online_softmax`. The softmax ops and the merge decompose through
    their `AggregatedOpInterface` implementation, so
    `transform.structured.decompose_interface` decomposes them the same way
    (with the default row tile for `attn.softmax`); `attn.attention_grad`'s
    implementation builds the loops this pass builds with its default
    options. The per-op passes below run one of these steps alone.
  }];
  let options = [
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"64",
           "keys per step of the kv loop (an op's kernel's kv_tile wins)">,
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"4096",
           "elements of a softmax row handled at once">,
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"false",
           "check the regions' captured reads and integer divisions">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeOnlineSoftmax : Pass<"attn-decompose-online-softmax"> {
  let summary = "lower attn.online_softmax to linalg on tensors";
  let description = [{
    Rewrites each `attn.online_softmax` into `linalg.generic` reductions and
    elementwise maps on tensors, in base 2:

    ```
    new_max    = max(max, rowmax(scale * S))
    probs      = exp2((scale * S - new_max) * log2(e))  (0 where S is -inf)
    correction = exp2((max - new_max) * log2(e))        (1 where new_max is -inf)
    new_sum    = sum * correction + rowsum(probs)
    ```

    The difference is taken before the multiplication by log2(e): the row's
    max then gives exactly 1, and the probs summed are the probs returned.
    Folding log2(e) into one fused multiply-add with a rounded
    new_max * log2(e) would save an instruction but lose precision as |S|
    grows (the rounding of that product does not cancel: 2e-3 relative
    error at |S| = 1e5 in f32). Rows whose running max is still -inf (every
    score so far masked) get probs 0 and correction 1, never NaN from
    (-inf) - (-inf).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TileAttention : Pass<"attn-tile-attention"> {
  let summary = "grid of attention tiles over (batch, head, q-tile)";
  let description = [{
    Tiles every `attn.attention` through its `TilingInterface` into an
    `scf.forall` over (batch, query head, q-tile): each iteration is an
    `attn.attention` on one q-tile of one head, with `offsets` recording
    where the tile sits. With `gpu-mapping`, the loop is marked
    `#gpu.block<z/y/x>` (q-tiles on x) for `attn-map-forall-to-gpu`.

    With `thread-rows=R`, each tile is tiled once more into a nested
    `scf.forall` over groups of R query rows marked `#gpu.thread<x>`: one
    GPU thread per R rows of the q-tile.

    With `gpu-mapping`, an op's `kernel` (a `simt` `#attn.kernel`, as
    `attn-choose-kernel` records) sets its q-tile and kv-tile instead of
    the options; a tensor-core kernel is an error (`attn-attention-to-mma`
    builds those). The tile op records its kv-tile in its `kernel`
    (`simt`), which `attn-decompose-attention` follows. With a block mask,
    q-tiles are cut to divide its q-blocks.
  }];
  let options = [
    Option<"qTile", "q-tile", "int64_t", /*default=*/"64",
           "query rows per tile (an op's kernel wins with gpu-mapping)">,
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"0",
           "keys per kv step to record on the tiles' kernel (0: none; an "
           "op's kernel wins with gpu-mapping)">,
    Option<"gpuMapping", "gpu-mapping", "bool", /*default=*/"false",
           "mark the forall with #gpu.block mapping attributes">,
    Option<"threadRows", "thread-rows", "int64_t", /*default=*/"0",
           "query rows per thread in a nested #gpu.thread forall (0: none)">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TileElementwiseToGrid : Pass<"attn-tile-elementwise-to-grid"> {
  let summary = "elementwise linalg ops on tensors to a grid of GPU blocks";
  let description = [{
    Tiles every elementwise linalg op on tensors (all loops parallel, such
    as `linalg.copy` of a block mask's lists into a function's result, or
    `linalg.fill`) that is outside every `scf.forall` into an `scf.forall`
    marked `#gpu.block` over its innermost three dims: one block per
    `row-tile` elements of a row, and one per index of the two dims above
    (dims further out stay whole in each block). `attn-map-forall-to-gpu`
    makes the grid, and `attn-distribute-to-threads` spreads each tile
    over the block's threads.
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"1024",
           "elements of the innermost dim per block">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeAttention : Pass<"attn-decompose-attention"> {
  let summary = "attn.attention to a kv-tile loop over attn.online_softmax";
  let description = [{
    Rewrites each `attn.attention` (typically one q-tile, after
    `attn-tile-attention`) into the FlashAttention loop on tensors:

    ```
    for each (b, h) of the op:            (trip count 1 after tiling)
      acc = 0, max = -inf, sum = 0
      for kv0 in [0, N) step kv-tile:      carrying (acc, max, sum)
        S = Q_tile . K_tile^T              (linalg.generic contraction, f32)
        S = score_mod(scale * S, b, h, q, kv); -inf where masked
        P, max, sum, c = attn.online_softmax S, max, sum
        acc = acc * c + P . V_tile          (linalg.generic contraction)
      O = acc / sum (0 for fully masked rows); lse = max + log(sum)
    ```

    `score_mod` and `mask_mod` are inlined with whole-problem indices (the
    op's `offsets` added). The kv-tile of an op's `kernel` (what
    `attn-choose-kernel` chose for a GPU block) overrides `kv-tile`.
    Causal ops stop the loop at the diagonal and
    split it in two: kv-tiles wholly below the diagonal run without any mask
    arithmetic, only the tiles that cross it compare indices. Without a
    `score_mod` the scale is left to `attn.online_softmax`, which applies
    it with the max. A block mask is not needed for correctness (`mask_mod`
    decides every element) and is not read here.

    With `bounds-checks`, each `tensor.extract` in a region (nested ones
    included) is guarded (an index outside the tensor reads nothing and
    yields 0), and each integer division or remainder is checked for a zero
    divisor and for INT_MIN / -1 (it then divides by 1). Regions run on
    whole tiles, masked positions included, so checks see those too. A failed check is reported: on
    the host by calling `attnReportRegionError(error, region, argument, dim,
    index, size)`, which the CPU runner defines and turns into an error
    naming the argument and the index; in GPU kernels by printing the same
    and trapping, so the launch fails. Regions are only ever evaluated for
    positions inside the problem (q < M, kv < N).
  }];
  let options = [
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"64",
           "keys per step of the kv loop (an op's kernel's kv_tile wins)">,
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"false",
           "check the regions' captured reads and integer divisions">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeMergeSplits : Pass<"attn-decompose-merge-splits"> {
  let summary = "attn.merge_splits to linalg";
  let description = [{
    Lowers the merge of split-kv attention to linalg.generic ops on
    tensors, in f32 with exp2/log2:
    1. the row maximum of the splits' logsumexps (a reduction over S);
    2. the sum of exp(lse_s - max) over the splits (a reduction over S);
    3. the merged logsumexp, max + ln(sum), -inf where every split is -inf;
    4. the output, sum_s exp(lse_s - lse) * out_s (a reduction over S), 0
       on rows whose logsumexp is -inf;
    5. a rounding to the output type when it is not f32.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DecomposeSoftmax : Pass<"attn-decompose-softmax"> {
  let summary = "attn.softmax to attn.online_softmax steps";
  let description = [{
    Lowers `attn.softmax` by the row length N:
    - N static and at most `row-tile`: one `attn.online_softmax` over the
      whole row (started from max -inf, sum 0), then probs / sum: the row
      is read once.
    - otherwise (long or dynamic rows): the two-loop online form. The first
      loop folds chunks of `row-tile` elements into the running (max, sum)
      with `attn.online_softmax`; the second writes
      exp2((x - max) * log2(e)) / sum chunk by chunk.
    Rows that are all -inf (sum 0) give 0, not NaN. Inputs of f16/bf16 are
    widened to f32; the result is rounded to the output type.
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"4096",
           "elements of a row handled at once">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def DeriveBlockMasks : Pass<"attn-derive-block-masks"> {
  let summary = "a block mask for every attention with a mask_mod and none";
  let description = [{
    FlexAttention asks users to build a block mask from their mask_mod; here
    the pipeline does it. Every untiled `attn.attention` with a `mask_mod`
    and no `block_mask` gets an `attn.create_block_mask` of the same
    mask_mod over its (B, Hq, M, N), with blocks of `q-block` x `kv-block`;
    of a causal op, the mask_mod and kv <= q, so that blocks above the
    diagonal are not listed. When the mask_mod does not read its batch (or
    head) argument, the mask is built once for every batch (head): B (H)
    is 1. An explicit block mask is left as given.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"qBlock", "q-block", "int64_t", /*default=*/"128",
           "query rows per block (a power of two, 16 to 1024)">,
    Option<"kvBlock", "kv-block", "int64_t", /*default=*/"128",
           "keys per block (a power of two, 16 to 1024)">
  ];
}

def LowerBlockMasks : Pass<"attn-lower-block-masks", "::mlir::ModuleOp"> {
  let summary = "compute each attn.create_block_mask's block lists";
  let description = [{
    Replaces `attn.create_block_mask` by the code that computes its lists
    and an `attn.make_block_mask` of the kv-side ones, which the attention
    lowerings read; `attn.block_mask_field` reads become the lists. The
    q-side (transposed) lists are computed only when a field read asks for
    them. Memory is proportional to the number of blocks: the mask_mod is
    evaluated block by block, never stored as a matrix. Positions past
    Q_LEN or KV_LEN do not count: a block is full when the mask_mod keeps
    every position of it inside the problem, partial when it keeps some,
    and unlisted when it keeps none. Lists are in increasing block order,
    and entries past a count are 0.

    With `bound-blocks` (the default), a mask_mod made of integer
    arithmetic, comparisons, i1 logic and reads of captured integer
    tensors is first bounded by interval arithmetic over a box of positions
    (its ops evaluated on the box's bounds, a captured read on the elements
    its index bounds cover): when the bounds show the mask_mod true (false)
    on the whole box, the box is decided without evaluating it position by
    position. Only boxes that a mask's edge crosses, or whose bounds cannot
    tell, are scanned. Other mask_mods are scanned everywhere.

    The lists are computed by host loops over (b, h, q-block, kv-block)
    that decide each block and append it to the partial or the full list
    (buffers the host allocates); for the q side, the same over (b, h,
    kv-block, q-block). `attn-block-masks-to-gpu` computes them on the GPU
    instead.
  }];
  let options = [
    Option<"boundsChecks", "bounds-checks", "bool", /*default=*/"false",
           "check the mask_mod's captured reads and integer divisions, as "
           "attn-decompose-attention does">,
    Option<"boundBlocks", "bound-blocks", "bool", /*default=*/"true",
           "decide blocks by interval bounds of the mask_mod where they "
           "tell, before evaluating it position by position">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def CheckDecomposed : Pass<"attn-check-decomposed"> {
  let summary = "fail on attn ops that the decompositions left behind";
  let description = [{
    Runs after the decomposition passes of a pipeline: any `attn` op still
    there (a read of a block mask's q-side field, say, which nothing
    computes yet) gets an error naming it, instead of an opaque
    failure in bufferization or LLVM translation later.
  }];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
