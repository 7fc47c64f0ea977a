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
    WalkResult result =
        getOperation()->walk([](Operation *op) {
          // A region's terminator goes with its op, which is reported; the
          // runtime supplies the host-side values.
          if (!isa<AttnDialect>(op->getDialect()) ||
              isa<YieldOp, WorkspaceOp, MultiprocessorCountOp>(op))
            return WalkResult::advance();
          op->emitOpError()
              << "is left after the decompositions: the attn pipelines do not "
                 "lower it yet (block masks are only consumed by "
                 "attn.attention, which evaluates mask_mod itself)";
          return WalkResult::interrupt();
        });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
