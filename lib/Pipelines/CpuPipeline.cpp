//===- CpuPipeline.cpp - attn-lower-to-cpu --------------------------------===//
//
// attention -> tiles -> flash loops -> linalg -> memrefs -> loops -> LLVM.
// Upstream passes do everything after our decompositions; `until=` stops
// after any stage.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Pipelines/Pipelines.h"
#include "AttnDialect/Transforms/Passes.h"
#include "Stages.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/Transforms/RequestCWrappers.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

void addTileStage(OpPassManager &pm, const CpuPipelineOptions &options) {
  pm.addPass(createRecordShapeContract());
  if (options.autoBlockMasks)
    pm.addPass(createDeriveBlockMasks());
  LowerBlockMasksOptions lists;
  lists.boundsChecks = options.boundsChecks;
  lists.boundBlocks = options.boundBlocks;
  pm.addPass(createLowerBlockMasks(lists));
  TileAttentionOptions tile;
  tile.qTile = options.qTile;
  pm.addPass(createTileAttention(tile));
  pm.addPass(createStageCanonicalizer());
}

void addDecomposeStage(OpPassManager &pm, const CpuPipelineOptions &options) {
  DecomposeOptions decompose;
  decompose.kvTile = options.kvTile;
  decompose.rowTile = options.rowTile;
  decompose.boundsChecks = options.boundsChecks;
  addDecompositions(pm, decompose);
}

void addBufferizeStage(OpPassManager &pm, const CpuPipelineOptions &) {
  // Loop-carried softmax statistics are updated out of place; allowing
  // fresh buffers to be yielded from loops keeps that legal.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createStageCanonicalizer());
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
}

void addLoopsStage(OpPassManager &pm, const CpuPipelineOptions &) {
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createForallToForLoopPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createStageCanonicalizer());
  pm.addPass(createCSEPass());
}

void addLlvmStage(OpPassManager &pm, const CpuPipelineOptions &) {
  pm.addNestedPass<func::FuncOp>(LLVM::createLLVMRequestCWrappersPass());
  pm.addPass(createSCFToControlFlowPass());
  // tanh and friends go to libm; exp2 and fma to LLVM intrinsics.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

} // namespace

LogicalResult mlir::attn::buildCpuPipeline(
    OpPassManager &pm, const CpuPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  using AddStage = void (*)(OpPassManager &, const CpuPipelineOptions &);
  const Stage<AddStage> stages[] = {{"tile", addTileStage},
                                    {"decompose", addDecomposeStage},
                                    {"bufferize", addBufferizeStage},
                                    {"loops", addLoopsStage},
                                    {"llvm", addLlvmStage}};
  FailureOr<int> stop = findStage<AddStage>("attn-lower-to-cpu", stages,
                                            options.until, errorHandler);
  if (failed(stop))
    return failure();
  if (options.qTile <= 0 || options.kvTile <= 0 || options.rowTile <= 0 ||
      options.qTile > kMaxTile || options.kvTile > kMaxTile ||
      options.rowTile > kMaxTile)
    return errorHandler("attn-lower-to-cpu: q-tile, kv-tile and row-tile "
                        "must be positive and at most " +
                        llvm::Twine(kMaxTile));
  for (int stage = 0; stage <= *stop; ++stage)
    stages[stage].add(pm, options);
  return success();
}
