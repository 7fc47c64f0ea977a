//===- SkipLlvmVectorizers.cpp - noimplicitfloat on the kernels -----------===//
//
// See the pass description in Passes.td: on the tensor-core kernels the
// vectorizers cost the NVPTX compile most of its time and gain nothing.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Target/NVVM/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_SKIPLLVMVECTORIZERS
#include "AttnDialect/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

constexpr StringLiteral kNoImplicitFloat = "noimplicitfloat";

/// Whether `func` computes on tensor cores: its loads are vectorized where
/// it was built, where SLP only joins the SIMT and softmax kernels'
/// scalar loads into vector loads. A wgmma may be inline PTX, but PTX
/// requires a wgmma.fence before a kernel's first one.
bool usesTensorCores(LLVM::LLVMFuncOp func) {
  return func
      .walk([](Operation *op) {
        return isa<NVVM::MmaOp, NVVM::WgmmaMmaAsyncOp,
                   NVVM::WgmmaFenceAlignedOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

struct SkipLlvmVectorizersPass
    : attn::impl::SkipLlvmVectorizersBase<SkipLlvmVectorizersPass> {
  void runOnOperation() override {
    getOperation()->walk([](LLVM::LLVMFuncOp func) {
      if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
          !usesTensorCores(func))
        return;
      Builder b(func);
      SmallVector<Attribute> passthrough;
      if (ArrayAttr given = func.getPassthroughAttr())
        passthrough.assign(given.begin(), given.end());
      auto isNoImplicitFloat = [](Attribute attr) {
        auto name = dyn_cast<StringAttr>(attr);
        return name && name.getValue() == kNoImplicitFloat;
      };
      if (llvm::any_of(passthrough, isNoImplicitFloat))
        return;
      passthrough.push_back(b.getStringAttr(kNoImplicitFloat));
      func.setPassthroughAttr(b.getArrayAttr(passthrough));
    });
  }
};

} // namespace
