//===- CpuPipeline.cpp - attn-lower-to-cpu --------------------------------===//
//
// attention -> tiles -> flash loops -> linalg -> memrefs -> loops -> LLVM.
// Upstream passes do everything after our decompositions; they are listed
// in the textual syntax so the pipeline reads like the command a user would
// type, and so `until=` can stop at each stage.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Pipelines/Pipelines.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::attn;

LogicalResult mlir::attn::buildCpuPipeline(
    OpPassManager &pm, const CpuPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  int stop = llvm::StringSwitch<int>(options.until)
                 .Case("tile", 0)
                 .Case("decompose", 1)
                 .Case("bufferize", 2)
                 .Case("loops", 3)
                 .Case("llvm", 4)
                 .Default(-1);
  if (stop < 0)
    return errorHandler("attn-lower-to-cpu: unknown stage '" +
                        options.until.getValue() +
                        "' (expected tile, decompose, bufferize, loops or "
                        "llvm)");
  if (options.qTile <= 0 || options.kvTile <= 0 || options.rowTile <= 0)
    return errorHandler("attn-lower-to-cpu: q-tile, kv-tile and row-tile "
                        "must be positive");

  const std::string stages[] = {
      llvm::formatv("attn-tile-attention{{q-tile={0}},canonicalize",
                    options.qTile.getValue()),
      llvm::formatv("attn-decompose-attention{{kv-tile={0}},"
                    "attn-decompose-softmax{{row-tile={1}},"
                    "attn-decompose-online-softmax,canonicalize,cse,"
                    "attn-check-decomposed",
                    options.kvTile.getValue(), options.rowTile.getValue()),
      // Loop-carried softmax statistics are updated out of place; allowing
      // fresh buffers to be yielded from loops keeps that legal.
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map "
      "allow-return-allocs-from-loops},canonicalize,"
      "drop-equivalent-buffer-results,buffer-deallocation-pipeline,"
      "convert-bufferization-to-memref",
      "convert-linalg-to-loops,scf-forall-to-for,expand-strided-metadata,"
      "lower-affine,canonicalize,cse",
      // tanh and friends go to libm; exp2 and fma to LLVM intrinsics.
      "func.func(llvm-request-c-wrappers),convert-scf-to-cf,convert-math-to-"
      "llvm,"
      "convert-math-to-libm,finalize-memref-to-llvm,convert-to-llvm,"
      "reconcile-unrealized-casts"};
  for (int stage = 0; stage <= stop; ++stage)
    if (failed(parsePassPipeline(stages[stage], pm)))
      return failure();
  return success();
}

void mlir::attn::registerAttnPipelines() {
  registerPassPipeline(
      "attn-lower-to-cpu",
      "Lower attn ops to the LLVM dialect for the host CPU (stop early with "
      "until=tile|decompose|bufferize|loops)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CpuPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildCpuPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> optionHandler) {
        optionHandler(CpuPipelineOptions());
      });
  registerPassPipeline(
      "attn-lower-to-nvvm",
      "Lower attn.attention to a gpu.binary (PTX or cubin) for an NVIDIA "
      "GPU: chip=sm_80|sm_90 (stop early with "
      "until=tile|decompose|bufferize|gpu|nvvm)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        NvvmPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        return buildNvvmPipeline(pm, options, errorHandler);
      },
      [](function_ref<void(const detail::PassOptions &)> optionHandler) {
        optionHandler(NvvmPipelineOptions());
      });
}
