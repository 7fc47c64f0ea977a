//===- CpuPipeline.cpp - attn-lower-to-cpu --------------------------------===//
//
// attention -> tiles -> flash loops -> linalg -> memrefs -> loops -> LLVM.
// Upstream passes do everything after our decompositions; they are listed
// in the textual syntax so the pipeline reads like the command a user would
// type, and so `until=` can stop at each stage.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Pipelines/Pipelines.h"
#include "Stages.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::attn;

LogicalResult mlir::attn::buildCpuPipeline(
    OpPassManager &pm, const CpuPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  FailureOr<int> stop = findStage(
      "attn-lower-to-cpu", {"tile", "decompose", "bufferize", "loops", "llvm"},
      options.until, errorHandler);
  if (failed(stop))
    return failure();
  if (options.qTile <= 0 || options.kvTile <= 0 || options.rowTile <= 0 ||
      options.qTile > kMaxTile || options.kvTile > kMaxTile ||
      options.rowTile > kMaxTile)
    return errorHandler("attn-lower-to-cpu: q-tile, kv-tile and row-tile "
                        "must be positive and at most " +
                        llvm::Twine(kMaxTile));

  const std::string stages[] = {
      llvm::formatv("attn-record-shape-contract,"
                    "attn-tile-attention{{q-tile={0}},canonicalize",
                    options.qTile.getValue()),
      llvm::formatv(
          "attn-decompose-merge-splits,attn-decompose-attention{{kv-tile={0} "
          "bounds-checks={2}},"
          "attn-decompose-softmax{{row-tile={1}},"
          "attn-decompose-online-softmax,canonicalize,cse,"
          "attn-check-decomposed",
          options.kvTile.getValue(), options.rowTile.getValue(),
          options.boundsChecks.getValue()),
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
  return addStages(pm, stages, *stop);
}
