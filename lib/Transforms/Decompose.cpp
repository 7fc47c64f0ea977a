//===- Decompose.cpp - every attn op to linalg on tensors -----------------===//
//
// attn-decompose: attn.merge_splits, attn.attention (the flash loop),
// attn.attention_grad (BackwardLoops.h) and attn.softmax, then the
// attn.online_softmax steps they leave, each through its own decomposition
// (AggregatedOpInterface on the op). The per-op passes run one of these
// steps alone.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/BackwardLoops.h"
#include "AttnDialect/Transforms/FlashLoop.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_DECOMPOSE
#define GEN_PASS_DEF_DECOMPOSEMERGESPLITS
#define GEN_PASS_DEF_DECOMPOSESOFTMAX
#define GEN_PASS_DEF_DECOMPOSEONLINESOFTMAX
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Replaces every `OpTy` under `root` by its decomposition.
template <typename OpTy>
LogicalResult decomposeAll(
    Operation *root,
    function_ref<FailureOr<SmallVector<Value>>(OpBuilder &, OpTy)> decompose) {
  SmallVector<OpTy> ops;
  root->walk([&](OpTy op) { ops.push_back(op); });
  IRRewriter rewriter(root->getContext());
  for (OpTy op : ops) {
    rewriter.setInsertionPoint(op);
    FailureOr<SmallVector<Value>> results = decompose(rewriter, op);
    if (failed(results))
      return op.emitOpError() << "could not be decomposed";
    rewriter.replaceOp(op, *results);
  }
  return success();
}

template <typename OpTy> LogicalResult decomposeAll(Operation *root) {
  return decomposeAll<OpTy>(
      root, [](OpBuilder &b, OpTy op) { return op.decomposeOperation(b); });
}

LogicalResult decomposeSoftmaxOps(Operation *root, int64_t rowTile,
                                  StringRef passName) {
  if (rowTile <= 0)
    return root->emitError()
           << passName << ": row-tile must be positive, got " << rowTile;
  return decomposeAll<SoftmaxOp>(
      root, [&](OpBuilder &b, SoftmaxOp op) -> FailureOr<SmallVector<Value>> {
        return op.decompose(b, rowTile);
      });
}

// The op's own decomposition (AggregatedOpInterface) uses this pass's
// default kv-tile.
static_assert(DecomposeOptions().kvTile == kDefaultBackwardKvTile,
              "attn-decompose's kv-tile default and the backward's differ");

struct DecomposePass : attn::impl::DecomposeBase<DecomposePass> {
  using DecomposeBase::DecomposeBase;

  void runOnOperation() override {
    Operation *root = getOperation();
    if (failed(decomposeAll<MergeSplitsOp>(root)) ||
        failed(
            decomposeAttentionOps(root, kvTile, boundsChecks, getArgument())) ||
        failed(decomposeAttentionGradOps(root, kvTile, boundsChecks,
                                         getArgument())) ||
        failed(decomposeSoftmaxOps(root, rowTile, getArgument())) ||
        failed(decomposeAll<OnlineSoftmaxOp>(root)))
      signalPassFailure();
  }
};

struct DecomposeMergeSplitsPass
    : attn::impl::DecomposeMergeSplitsBase<DecomposeMergeSplitsPass> {
  void runOnOperation() override {
    if (failed(decomposeAll<MergeSplitsOp>(getOperation())))
      signalPassFailure();
  }
};

struct DecomposeSoftmaxPass
    : attn::impl::DecomposeSoftmaxBase<DecomposeSoftmaxPass> {
  using DecomposeSoftmaxBase::DecomposeSoftmaxBase;

  void runOnOperation() override {
    if (failed(decomposeSoftmaxOps(getOperation(), rowTile, getArgument())))
      signalPassFailure();
  }
};

struct DecomposeOnlineSoftmaxPass
    : attn::impl::DecomposeOnlineSoftmaxBase<DecomposeOnlineSoftmaxPass> {
  void runOnOperation() override {
    if (failed(decomposeAll<OnlineSoftmaxOp>(getOperation())))
      signalPassFailure();
  }
};

} // namespace
