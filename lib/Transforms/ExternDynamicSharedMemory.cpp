//===- ExternDynamicSharedMemory.cpp - dynamic shared memory as extern ----===//
//
// See the pass description in Passes.td: an internal zero-length shared
// global becomes a 1-byte static variable in PTX, overlapping the kernel's
// other static shared memory; an external one is the dynamic region.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_EXTERNDYNAMICSHAREDMEMORY
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct ExternDynamicSharedMemoryPass
    : attn::impl::ExternDynamicSharedMemoryBase<ExternDynamicSharedMemoryPass> {
  void runOnOperation() override {
    getOperation()->walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      bool shared = global.getAddrSpace() ==
                    static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);
      if (!shared || !array || array.getNumElements() != 0 ||
          global.getValueOrNull() || !global.getInitializerRegion().empty())
        return;
      global.setLinkage(LLVM::Linkage::External);
    });
  }
};

} // namespace
