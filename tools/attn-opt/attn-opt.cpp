//===- attn-opt.cpp - the attn optimizer driver ---------------------------===//
//
// mlir-opt with the attn dialect and passes, plus every upstream dialect,
// pass, extension and LLVM IR translation the lowering pipelines use (NVVM
// target attributes and gpu-module-to-binary included).
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/InitAll.h"
#include "AttnDialect/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::attn::registerAllPassesAndAttn();
  mlir::DialectRegistry registry;
  mlir::attn::registerAllDialectsAndAttn(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn optimizer driver\n", registry));
}
