//===- MinBlocksPerSm.cpp - the occupancy a kernel was built for ----------===//
//
// See the pass description in Passes.td: moves attn.min_blocks_per_sm from
// a kernel's gpu.dynamic_shared_memory op onto the kernel as nvvm.minctasm.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Target/NVVM/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_MINBLOCKSPERSM
#include "AttnDialect/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct MinBlocksPerSmPass : attn::impl::MinBlocksPerSmBase<MinBlocksPerSmPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](gpu::GPUFuncOp func) {
      IntegerAttr blocks;
      WalkResult marks = func.walk([&](gpu::DynamicSharedMemoryOp shared) {
        auto mark =
            shared->getAttrOfType<IntegerAttr>(attn::kMinBlocksPerSmAttrName);
        if (!mark)
          return WalkResult::advance();
        shared->removeAttr(attn::kMinBlocksPerSmAttrName);
        if (blocks && blocks.getInt() != mark.getInt()) {
          shared.emitError() << "asks for " << mark.getInt()
                             << " blocks per SM, but its kernel already "
                                "asked for "
                             << blocks.getInt();
          return WalkResult::interrupt();
        }
        blocks = mark;
        return WalkResult::advance();
      });
      if (marks.wasInterrupted())
        return WalkResult::interrupt();
      if (!blocks)
        return WalkResult::advance();
      if (!func.isKernel() || blocks.getInt() < 1) {
        func.emitError() << "has " << attn::kMinBlocksPerSmAttrName << " = "
                         << blocks.getInt()
                         << ", which needs a kernel and a positive count";
        return WalkResult::interrupt();
      }
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    Builder(func).getI32IntegerAttr(blocks.getInt()));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
