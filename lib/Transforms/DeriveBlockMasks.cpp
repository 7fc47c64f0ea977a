//===- DeriveBlockMasks.cpp - a block mask from each mask_mod -------------===//
//
// Gives every attention with a mask_mod and no block mask the block mask of
// that mask_mod, so that kernels skip the blocks it removes. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/DeriveBlockMasks.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_DERIVEBLOCKMASKS
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct DeriveBlockMasksPass
    : attn::impl::DeriveBlockMasksBase<DeriveBlockMasksPass> {
  using DeriveBlockMasksBase::DeriveBlockMasksBase;

  void runOnOperation() override {
    auto blockSize = [](int64_t v) {
      return v >= 16 && v <= 1024 && llvm::isPowerOf2_64(v);
    };
    if (!blockSize(qBlock) || !blockSize(kvBlock)) {
      getOperation()->emitError()
          << "attn-derive-block-masks: q-block and kv-block must be powers "
             "of two from 16 to 1024, got "
          << qBlock.getValue() << " and " << kvBlock.getValue();
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation()->walk([&](AttentionOp op) {
      // Tiles (ops with offsets) belong to an op that was derived already.
      if (op.hasMaskMod() && !op.getBlockMask() && op.getOffsets().empty())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops)
      derive(rewriter, op);
  }

  void derive(RewriterBase &rewriter, AttentionOp op) {
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    auto create = deriveBlockMask(
        rewriter, loc, op.getMaskMod(), op.getCausal(),
        BlockMaskType::get(&getContext(), qBlock, kvBlock),
        [&](int64_t i) -> Value {
          return i < 3 ? tensor::DimOp::create(rewriter, loc, op.getQuery(), i)
                       : tensor::DimOp::create(rewriter, loc, op.getKey(), 2);
        });
    rewriter.modifyOpInPlace(
        op, [&] { op.getBlockMaskMutable().assign(create.getResult()); });
  }
};

} // namespace

CreateBlockMaskOp
mlir::attn::deriveBlockMask(RewriterBase &rewriter, Location loc,
                            Region &maskMod, bool causal, BlockMaskType type,
                            function_ref<Value(int64_t)> size) {
  Block &mask = maskMod.front();
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto extent = [&](int64_t i) -> Value {
    return mask.getArgument(i).use_empty() ? one : size(i);
  };
  // One op built per statement, for a compiler-independent order.
  Value batch = extent(0);
  Value heads = extent(1);
  Value qLen = size(2);
  Value kvLen = size(3);
  auto create =
      CreateBlockMaskOp::create(rewriter, loc, type, batch, heads, qLen, kvLen);
  IRMapping mapping;
  maskMod.cloneInto(&create.getMaskMod(), mapping);
  if (!causal)
    return create;
  // Causal too: blocks wholly above the diagonal are not listed.
  Block &region = create.getMaskMod().front();
  auto yield = cast<YieldOp>(region.getTerminator());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(yield);
  Value below =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge,
                            region.getArgument(2), region.getArgument(3));
  Value keep = arith::AndIOp::create(rewriter, loc, yield.getOperand(0), below);
  rewriter.modifyOpInPlace(yield,
                           [&] { yield.getValuesMutable().assign(keep); });
  return create;
}
