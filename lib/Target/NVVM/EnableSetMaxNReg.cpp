//===- EnableSetMaxNReg.cpp - one block per SM where setmaxnreg runs ------===//
//
// See the pass description in Passes.td: setmaxnreg only takes effect in a
// kernel with .maxntid and .minnctapersm 1.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Target/NVVM/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ENABLESETMAXNREG
#include "AttnDialect/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct EnableSetMaxNRegPass
    : attn::impl::EnableSetMaxNRegBase<EnableSetMaxNRegPass> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](LLVM::LLVMFuncOp func) {
      if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
        return WalkResult::advance();
      bool moves = func.walk([](NVVM::SetMaxRegisterOp) {
                         return WalkResult::interrupt();
                       })
                       .wasInterrupted();
      if (!moves)
        return WalkResult::advance();
      if (!func->hasAttr(NVVM::NVVMDialect::getMaxntidAttrName()) &&
          !func->hasAttr(NVVM::NVVMDialect::getReqntidAttrName())) {
        func.emitError() << "uses setmaxnreg but declares no block size "
                            "(nvvm.maxntid or nvvm.reqntid), without which "
                            "ptxas ignores it";
        return WalkResult::interrupt();
      }
      func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                    Builder(func).getI32IntegerAttr(1));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
