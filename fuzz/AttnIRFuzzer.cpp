//===- AttnIRFuzzer.cpp - libFuzzer over attn IR and the pipelines --------===//
//
// Each input is MLIR text. It is parsed and verified with every dialect
// attn-opt knows; IR that verifies runs through attn-lower-to-cpu and
// attn-lower-to-nvvm for sm_90a and sm_90 (to NVVM, short of PTX, which
// would spend the run in LLVM's backend). Diagnostics are expected and dropped: only crashes,
// sanitizer reports, hangs and leaks are findings.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/InitAll.h"
#include "AttnDialect/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace mlir;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    attn::registerAllPassesAndAttn();
    DialectRegistry registry;
    attn::registerAllDialectsAndAttn(registry);
    auto *created = new MLIRContext(registry, MLIRContext::Threading::DISABLED);
    created->loadAllAvailableDialects();
    created->allowUnregisteredDialects(false);
    return created;
  }();
  return *ctx;
}

/// Runs a pipeline on a clone of `module`; failures are fine.
template <typename Options, typename Build>
void runPipeline(ModuleOp module, Options &options, Build build) {
  PassManager pm(module.getContext());
  if (failed(build(pm, options,
                   [](const Twine &) -> LogicalResult { return failure(); })))
    return;
  OwningOpRef<ModuleOp> copy = module.clone();
  (void)pm.run(*copy);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  // MLIR's lexer reads up to a terminating NUL, which a libFuzzer buffer
  // does not have: a std::string does.
  std::string text(reinterpret_cast<const char *>(data), size);
  ParserConfig config(&ctx, /*verifyAfterParse=*/true);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module)
    return 0;

  attn::CpuPipelineOptions cpu;
  cpu.boundsChecks = true;
  runPipeline(*module, cpu, attn::buildCpuPipeline);
  // sm_90a is the H100's default (wgmma, warp specialization, TMA); sm_90
  // takes the same IR to mma.sync.
  for (const char *chip : {"sm_90a", "sm_90"}) {
    attn::NvvmPipelineOptions nvvm;
    nvvm.chip = chip;
    nvvm.until = "nvvm";
    runPipeline(*module, nvvm, attn::buildNvvmPipeline);
  }
  return 0;
}
