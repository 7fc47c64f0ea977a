//===- CheckDecomposed.cpp - no attn op survives the decompositions -------===//

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/Passes.h"

namespace mlir::attn {
#define GEN_PASS_DEF_CHECKDECOMPOSED
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct CheckDecomposedPass
    : attn::impl::CheckDecomposedBase<CheckDecomposedPass> {
  void runOnOperation() override {
    // A field read is the reason its block mask is left: report the read.
    WalkResult fields = getOperation()->walk([](BlockMaskFieldOp field) {
      if (!field.getBlockMask().getDefiningOp<MakeBlockMaskOp>())
        return WalkResult::advance();
      // attn.make_block_mask carries the lists it was given, which
      // attn-lower-block-masks reads for it; nothing derives the others.
      field.emitOpError() << "reads "
                          << stringifyBlockMaskField(field.getField())
                          << " of an attn.make_block_mask that was not given "
                             "it";
      return WalkResult::interrupt();
    });
    if (fields.wasInterrupted())
      return signalPassFailure();
    WalkResult result =
        getOperation()->walk([](Operation *op) {
          // A region's terminator goes with its op, which is reported; the
          // runtime supplies the host-side values.
          if (!isa<AttnDialect>(op->getDialect()) ||
              isa<YieldOp, WorkspaceOp, MultiprocessorCountOp, TensorMapOp>(op))
            return WalkResult::advance();
          op->emitOpError()
              << "is left after the decompositions: the attn pipelines do not "
                 "lower it yet";
          return WalkResult::interrupt();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
