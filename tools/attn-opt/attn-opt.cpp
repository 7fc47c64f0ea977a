//===- attn-opt.cpp - the attn optimizer driver ---------------------------===//
//
// mlir-opt with the attn dialect and passes, plus every upstream dialect,
// pass, extension and LLVM IR translation the lowering pipelines use (NVVM
// target attributes and gpu-module-to-binary included).
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/Pipelines/Pipelines.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn optimizer driver\n", registry));
}
