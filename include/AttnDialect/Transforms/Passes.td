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

#endif // ATTN_TRANSFORMS_PASSES_TD
