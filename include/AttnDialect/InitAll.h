//===- InitAll.h - register attn's dialect, passes and pipelines -*- C++
//-*-===//
//
// The one registration list every tool uses (attn-opt, attn-run, the Python
// bindings, the C API and the mlir-opt plugin), so they cannot drift apart.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNDIALECT_INITALL_H
#define ATTNDIALECT_INITALL_H

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/GPU/Passes.h"
#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/Pipelines/Pipelines.h"
#include "AttnDialect/Target/KernelBundle/Passes.h"
#include "AttnDialect/Target/NVVM/Passes.h"
#include "AttnDialect/Transforms/BackwardLoops.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace mlir::attn {

/// The attn dialect (the dialects its passes create are their dependent
/// dialects and load with them) and the interfaces other libraries attach.
inline void registerAttnDialects(DialectRegistry &registry) {
  registry.insert<AttnDialect>();
  registerAttentionGradDecomposition(registry);
}

/// Every attn pass, by stage, and the named pipelines.
inline void registerAttnPassesAndPipelines() {
  registerAttnTransformsPasses();
  registerAttnConversionPasses();
  registerAttnGPUPasses();
  registerAttnNVVMPasses();
  registerAttnKernelBundlePasses();
  registerAttnPipelines();
}

/// What a whole compiler registers (attn-opt, attn-run, the Python bindings,
/// the C API): every upstream dialect, extension and LLVM IR translation, the
/// NVVM target, and attn.
inline void registerAllDialectsAndAttn(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerAttnDialects(registry);
}

/// Every upstream pass and every attn pass and pipeline.
inline void registerAllPassesAndAttn() {
  registerAllPasses();
  registerAttnPassesAndPipelines();
}

} // namespace mlir::attn

#endif // ATTNDIALECT_INITALL_H
