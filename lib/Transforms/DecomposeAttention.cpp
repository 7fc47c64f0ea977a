//===- DecomposeAttention.cpp - attn.attention to the flash loop ----------===//
//
// The attention part of attn-decompose on its own: each attn.attention
// becomes its flash loop (FlashLoop.h), leaving attn.online_softmax steps.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/FlashLoop.h"
#include "AttnDialect/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_DECOMPOSEATTENTION
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {
struct DecomposeAttentionPass
    : attn::impl::DecomposeAttentionBase<DecomposeAttentionPass> {
  using DecomposeAttentionBase::DecomposeAttentionBase;

  void runOnOperation() override {
    if (failed(decomposeAttentionOps(getOperation(), kvTile, boundsChecks,
                                     getArgument())))
      signalPassFailure();
  }
};
} // namespace
