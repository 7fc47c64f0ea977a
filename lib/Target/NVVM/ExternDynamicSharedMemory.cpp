//===- ExternDynamicSharedMemory.cpp - dynamic shared memory as extern ----===//
//
// See the pass description in Passes.td: an internal zero-length shared
// global becomes a 1-byte static variable in PTX, overlapping the kernel's
// other static shared memory; an external one is the dynamic region.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Target/NVVM/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_EXTERNDYNAMICSHAREDMEMORY
#include "AttnDialect/Target/NVVM/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

bool isShared(LLVM::GlobalOp global) {
  return global.getAddrSpace() ==
         static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared);
}

/// The global convert-gpu-to-nvvm makes of gpu.dynamic_shared_memory.
bool isDynamicShared(LLVM::GlobalOp global) {
  auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
  return isShared(global) && array && array.getNumElements() == 0 &&
         !global.getValueOrNull() && global.getInitializerRegion().empty();
}

struct ExternDynamicSharedMemoryPass
    : attn::impl::ExternDynamicSharedMemoryBase<ExternDynamicSharedMemoryPass> {
  void runOnOperation() override {
    // Per module of kernels: only where static shared memory is there to
    // overlap. Alone, the demoted variable sits where the dynamic region
    // begins, and LLVM optimizes its accesses better than an external
    // array's.
    getOperation()->walk([](Operation *module) {
      if (!isa<gpu::GPUModuleOp, ModuleOp>(module))
        return;
      SmallVector<LLVM::GlobalOp> dynamic;
      bool staticShared = false;
      for (Region &region : module->getRegions())
        for (auto global : region.getOps<LLVM::GlobalOp>()) {
          if (isDynamicShared(global))
            dynamic.push_back(global);
          else if (isShared(global))
            staticShared = true;
        }
      if (!staticShared)
        return;
      for (LLVM::GlobalOp global : dynamic)
        global.setLinkage(LLVM::Linkage::External);
    });
  }
};

} // namespace
