//===- TensorMapParams.cpp - tensor maps as by-value kernel parameters ----===//
//
// See the pass description in Passes.td: TMA reads a tensor map from the
// kernel's parameter space, so the parameter must hold the map itself.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Target/NVVM/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::attn {
#define GEN_PASS_DEF_TENSORMAPPARAMS
#include "AttnDialect/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// How many LLVM parameters an operand of this type becomes: a memref's
/// descriptor fields (two pointers, the offset, sizes and strides).
int64_t loweredParams(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return 3 + 2 * memref.getRank();
  if (isa<UnrankedMemRefType>(type))
    return 2;
  return 1;
}

struct TensorMapParamsPass
    : attn::impl::TensorMapParamsBase<TensorMapParamsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      SmallVector<int64_t> maps;
      int64_t position = 0;
      for (Value operand : launch.getKernelOperands()) {
        if (operand.getDefiningOp<attn::TensorMapOp>())
          maps.push_back(position);
        position += loweredParams(operand.getType());
      }
      if (maps.empty())
        return WalkResult::advance();
      auto kernel = SymbolTable::lookupNearestSymbolFrom<LLVM::LLVMFuncOp>(
          launch, launch.getKernel());
      if (!kernel) {
        launch.emitError() << "passes a tensor map to " << launch.getKernel()
                           << ", which is not an NVVM kernel (run "
                              "convert-gpu-to-nvvm first)";
        return WalkResult::interrupt();
      }
      if (static_cast<int64_t>(kernel.getNumArguments()) != position) {
        launch.emitError() << "the launch's operands lower to " << position
                           << " parameters, but " << launch.getKernel()
                           << " has " << kernel.getNumArguments();
        return WalkResult::interrupt();
      }
      Builder b(module.getContext());
      Type map = LLVM::LLVMArrayType::get(b.getI8Type(), 128);
      for (int64_t index : maps) {
        if (!isa<LLVM::LLVMPointerType>(kernel.getArgument(index).getType())) {
          launch.emitError()
              << "passes a tensor map as parameter " << index << " of "
              << launch.getKernel() << ", which is not a pointer";
          return WalkResult::interrupt();
        }
        kernel.setArgAttr(index, LLVM::LLVMDialect::getByValAttrName(),
                          TypeAttr::get(map));
        kernel.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                          b.getI64IntegerAttr(64));
        kernel.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                          b.getUnitAttr());
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
