//===- SoftmaxOps.td - softmax and the online-softmax step -*- tablegen -*-===//

#ifndef ATTN_SOFTMAXOPS_TD
#define ATTN_SOFTMAXOPS_TD

include "AttnDialect/IR/AttnDialect.td"
include "AttnDialect/IR/AttnTypes.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"
include "mlir/IR/OpBase.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"

//===----------------------------------------------------------------------===//
// attn.online_softmax
//===----------------------------------------------------------------------===//

def Attn_OnlineSoftmaxOp : Attn_Op<"online_softmax", [
    Pure,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>,
    AllTypesMatch<["scores", "probs"]>,
    AllTypesMatch<["max", "sum", "new_max", "new_sum", "correction"]>]> {
  let summary = "one step of the online-normalizer softmax";
  let description = [{
    Folds a tile of scores S [..., R, C] into running row statistics
    `max` and `sum` [..., R] (all f32), the step that lets attention and
    long-row softmax make one pass over their input:

    ```
    new_max    = max(max, rowmax(scale * S))
    probs      = exp(scale * S - new_max)
    correction = exp(max - new_max)
    new_sum    = sum * correction + rowsum(probs)
    ```

    A running output accumulator is rescaled by `correction` before `probs`
    is accumulated into it. `-inf` scores contribute 0; a row whose scores
    and running max are all `-inf` keeps max -inf, sum 0 and correction 1,
    without NaN. The lowering evaluates the exponentials as
    exp2((scale * S - new_max) * log2(e)): the row's max gives exactly 1,
    and the sum adds the very probs returned. Start a row with max = -inf
    and sum = 0.

    Example:

    ```mlir
    %p, %m1, %l1, %c = attn.online_softmax %s, %m0, %l0 {scale = 0.125 : f32}
        : tensor<64x128xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$scores,
                       RankedTensorOf<[F32]>:$max,
                       RankedTensorOf<[F32]>:$sum,
                       DefaultValuedAttr<F32Attr, "1.0f">:$scale);
  let results = (outs RankedTensorOf<[F32]>:$probs,
                      RankedTensorOf<[F32]>:$new_max,
                      RankedTensorOf<[F32]>:$new_sum,
                      RankedTensorOf<[F32]>:$correction);
  let assemblyFormat = [{
    $scores `,` $max `,` $sum attr-dict `:` type($scores) `,` type($max)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.softmax
//===----------------------------------------------------------------------===//

def Attn_SoftmaxOp : Attn_Op<"softmax", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>,
    Pure]> {
  let summary = "numerically stable softmax over the last dimension";
  let description = [{
    `out[..., j] = exp(x[..., j] - max(x[...])) / sum_k exp(x[..., k] - max)`
    over the last dimension of a ranked tensor of any length, f16, bf16 or
    f32, computed in f32. -inf entries give 0; a row that is all -inf gives
    0 everywhere, not NaN. The lowering picks the strategy from the row
    length: one read of a row held on chip, or the two-pass online form
    built on `attn.online_softmax` when a row does not fit.

    ```mlir
    %y = attn.softmax ins(%x : tensor<?x4096xf16>) outs(%init : tensor<?x4096xf16>)
        -> tensor<?x4096xf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$output);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    attr-dict `->` type($result)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getOutputMutable(); }

    /// Elements of a row per online-softmax step when decomposing without
    /// a row tile (decomposeOperation).
    static constexpr int64_t kDefaultRowTile = 4096;

    /// The op as one attn.online_softmax per row when a row fits in
    /// `rowTile` elements, else a loop of them and a normalizing loop; the
    /// builder's insertion point is where the new ops go.
    SmallVector<Value> decompose(OpBuilder &b, int64_t rowTile);
  }];
  let hasVerifier = 1;
}

#endif // ATTN_SOFTMAXOPS_TD
