//===- Passes.td - attn transformation passes --------------*- tablegen -*-===//

#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposeOnlineSoftmax : Pass<"attn-decompose-online-softmax"> {
  let summary = "lower attn.online_softmax to linalg on tensors";
  let description = [{
    Rewrites each `attn.online_softmax` into `linalg.generic` reductions and
    elementwise maps on tensors, in base 2:

    ```
    c          = scale * log2(e)
    new_max    = max(max, rowmax(scale * S))
    probs      = exp2(c * S - new_max * log2(e))      (0 where S is -inf)
    correction = exp2((max - new_max) * log2(e))      (1 where new_max is -inf)
    new_sum    = sum * correction + rowsum(probs)
    ```

    log2(e) is folded into the one multiply by `scale`, so each element costs
    one fused multiply-add and one exp2. Rows whose running max is still
    -inf (every score so far masked) get probs 0 and correction 1, never
    NaN from (-inf) - (-inf).
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
    `#gpu.block<x/y/z>` (q-tiles on x) for the GPU mapping pass.
  }];
  let options = [
    Option<"qTile", "q-tile", "int64_t", /*default=*/"64",
           "query rows per tile">,
    Option<"gpuMapping", "gpu-mapping", "bool", /*default=*/"false",
           "mark the forall with #gpu.block mapping attributes">
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
    op's `offsets` added). Causal ops stop the loop at the diagonal and
    split it in two: kv-tiles wholly below the diagonal run without any mask
    arithmetic, only the tiles that cross it compare indices. Without a
    `score_mod` the scale is left to `attn.online_softmax`, which folds it
    into its exp2. A block mask is not needed for correctness (`mask_mod`
    decides every element) and is not read here.
  }];
  let options = [
    Option<"kvTile", "kv-tile", "int64_t", /*default=*/"64",
           "keys per step of the kv loop">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
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

#endif // ATTN_TRANSFORMS_PASSES_TD
