//===- AttnPlugin.cpp - attn as an mlir-opt plugin ------------------------===//
//
// Lets upstream mlir-opt use the dialect and passes:
//   mlir-opt --load-dialect-plugin=AttnPlugin.so
//   --load-pass-plugin=AttnPlugin.so
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "Attn", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            attn::registerAttnDialects(*registry);
            attn::registerAttnPassesAndPipelines();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "AttnPasses", LLVM_VERSION_STRING,
          []() { attn::registerAttnPassesAndPipelines(); }};
}
