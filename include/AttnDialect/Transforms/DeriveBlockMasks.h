//===- DeriveBlockMasks.h - a block mask from a mask_mod --------*- C++ -*-===//
//
// The one place a block mask is derived from a mask_mod: for the forward
// (attn-derive-block-masks) and for the backward's kernels
// (attn-attention-grad-to-mma).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_TRANSFORMS_DERIVEBLOCKMASKS_H
#define ATTNDIALECT_TRANSFORMS_DERIVEBLOCKMASKS_H

#include "AttnDialect/IR/AttnOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {

/// The attn.create_block_mask, in blocks of `type`, of `maskMod` (a copy)
/// and, with `causal`, of q >= kv too, over the problem's [B, Hq, M, N]:
/// `size(i)` builds the i-th of them. B (Hq) is 1 where the mask_mod
/// ignores b (h), as it is then the same for every batch (head).
CreateBlockMaskOp deriveBlockMask(RewriterBase &rewriter, Location loc,
                                  Region &maskMod, bool causal,
                                  BlockMaskType type,
                                  function_ref<Value(int64_t)> size);

} // namespace mlir::attn

#endif // ATTNDIALECT_TRANSFORMS_DERIVEBLOCKMASKS_H
