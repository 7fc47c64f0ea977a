//===- RecordShapeContract.cpp - attn.shape_contract, attn.computes -------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/Computes.h"
#include "AttnDialect/Transforms/Passes.h"
#include "AttnDialect/Transforms/ShapeContract.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::attn {
#define GEN_PASS_DEF_RECORDSHAPECONTRACT
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

struct RecordShapeContractPass
    : attn::impl::RecordShapeContractBase<RecordShapeContractPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      bool hasAttnOps = false;
      func.walk([&](Operation *op) {
        if (isa<AttentionOp, AttentionGradOp, SoftmaxOp, BlockMaskFieldOp>(op))
          hasAttnOps = true;
      });
      if (!hasAttnOps)
        continue;
      FailureOr<attn_runtime::ShapeContract> contract =
          computeShapeContract(func);
      if (failed(contract))
        return signalPassFailure();
      // Only tensor arguments have shapes a runtime can check.
      if (failed(argumentDims(func)))
        continue;
      func->setAttr(kShapeContractAttrName,
                    shapeContractToAttr(&getContext(), *contract));
      if (ArrayAttr computes = computesAttr(func))
        func->setAttr(kComputesAttrName, computes);
    }
  }
};

} // namespace
