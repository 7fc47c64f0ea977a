//===- SinkIntoLaunches.cpp - index computations and views into kernels ---===//
//
// What a kernel can compute from its operands moves into its gpu.launch, so
// that outlining passes the kernel only what a kernel bundle can describe:
// argument buffers, the workspace and integers. See the pass description in
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/GPU/Passes.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SINKINTOLAUNCHES
#include "AttnDialect/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Whether `value` is the workspace or a view of it.
bool viewsWorkspace(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<WorkspaceOp>(def))
      return true;
    if (!isa<memref::ReinterpretCastOp, memref::CastOp>(def))
      return false;
    value = def->getOperand(0);
  }
  return false;
}

/// Upstream's choice: constants, dims, selects and compares.
bool sinks(Operation *op) {
  return isa<memref::DimOp, arith::SelectOp, arith::CmpIOp>(op) ||
         matchPattern(op, m_Constant());
}

/// Clones the views of the workspace that `launch` uses into its body, so
/// that the kernel captures the workspace and the views' sizes instead.
void sinkWorkspaceViews(gpu::LaunchOp launch) {
  llvm::SetVector<Value> used;
  getUsedValuesDefinedAbove(launch.getBody(), used);
  OpBuilder b(launch.getContext());
  b.setInsertionPointToStart(&launch.getBody().front());
  IRMapping mapping;
  std::function<Value(Value)> clone = [&](Value view) -> Value {
    Operation *def = view.getDefiningOp();
    if (isa<WorkspaceOp>(def))
      return view;
    if (Value cloned = mapping.lookupOrNull(view))
      return cloned;
    clone(def->getOperand(0));
    return b.clone(*def, mapping)->getResult(0);
  };
  for (Value value : used) {
    if (!value.getDefiningOp() || value.getDefiningOp<WorkspaceOp>() ||
        !viewsWorkspace(value))
      continue;
    Value inside = clone(value);
    replaceAllUsesInRegionWith(value, inside, launch.getBody());
  }
}

struct SinkIntoLaunchesPass
    : attn::impl::SinkIntoLaunchesBase<SinkIntoLaunchesPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](gpu::LaunchOp launch) {
      sinkWorkspaceViews(launch);
      return failed(sinkOperationsIntoLaunchOp(launch, sinks))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
