//===- NvvmPipeline.cpp - attn-lower-to-nvvm ------------------------------===//
//
// attention -> grid of q-tiles (blocks) -> the block's flash loop on tiles
// -> buffers, the block's tiles (Q, K, V, scores, accumulator) in shared
// memory -> gpu.launch, each linalg op's parallel loops strided over the
// block's threads with a barrier after each -> outlined kernels -> NVVM ->
// PTX. One kernel serves every B, H, M and N: the grid is computed from the
// sizes at launch.
//
// The attention kernel is chosen by `strategy`: `auto` (the default) lowers
// f16/bf16 attention on sm_80 and newer to the tensor-core kernels of
// attn-attention-to-mma before tiling (wgmma-ws where sm_90a's wgmma serves
// the op, else mma-sync); `simt`, and under `auto` every op those kernels
// do not serve (f32, head dims of 8 mod 16), stages K/V tiles in shared
// memory and distributes the tile-level linalg ops over the block's
// threads. `mma-sync`, `wgmma` and `wgmma-ws` put every attention op on
// that kernel or fail naming the op.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Conversion/Passes.h"
#include "AttnDialect/GPU/Passes.h"
#include "AttnDialect/Pipelines/Pipelines.h"
#include "AttnDialect/Target/NVVM/Passes.h"
#include "AttnDialect/Target/NVVM/TargetInfo.h"
#include "AttnDialect/Transforms/Passes.h"
#include "Stages.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The options once checked, with the chip's limits looked up.
struct NvvmStageOptions {
  const NvvmPipelineOptions &pipeline;
  const nvvm::TargetInfo &target;
};

void addChooseStage(OpPassManager &pm, const NvvmStageOptions &options) {
  pm.addPass(createRecordShapeContract());
  if (options.pipeline.autoBlockMasks)
    pm.addPass(createDeriveBlockMasks());
  ChooseKernelOptions choose;
  choose.chip = options.target.chip.str();
  choose.strategy = options.pipeline.strategy;
  choose.qTile = options.pipeline.qTile;
  choose.kvTile = options.pipeline.kvTile;
  choose.warps = options.pipeline.warps;
  choose.stages = options.pipeline.stages;
  pm.addPass(createChooseKernel(choose));
}

void addTileStage(OpPassManager &pm, const NvvmStageOptions &options) {
  // The backward's block masks are built with the forward's.
  AttentionGradToMmaOptions grad;
  grad.boundsChecks = options.pipeline.boundsChecks;
  grad.blockMasks = options.pipeline.autoBlockMasks;
  pm.addPass(createAttentionGradToMma(grad));
  BlockMasksToGpuOptions lists;
  lists.boundsChecks = options.pipeline.boundsChecks;
  lists.boundBlocks = options.pipeline.boundBlocks;
  pm.addPass(createBlockMasksToGpu(lists));
  AttentionToMmaOptions mma;
  mma.boundsChecks = options.pipeline.boundsChecks;
  pm.addPass(createAttentionToMma(mma));
  // The SIMT ops' grid of q-tiles, by the tiles their kernel records.
  TileAttentionOptions tile;
  tile.gpuMapping = true;
  pm.addPass(createTileAttention(tile));
  pm.addPass(createTileElementwiseToGrid());
  pm.addPass(createStageCanonicalizer());
}

void addDecomposeStage(OpPassManager &pm, const NvvmStageOptions &options) {
  SoftmaxToGpuOptions softmax;
  softmax.sharedMemoryPerSm = options.target.sharedMemoryPerSm;
  softmax.asyncCopy = options.target.hasAsyncCopy();
  pm.addPass(createSoftmaxToGpu(softmax));
  DecomposeOptions decompose;
  // Each op's kernel records its kv-tile; this is the fallback.
  decompose.kvTile =
      options.pipeline.kvTile > 0 ? options.pipeline.kvTile.getValue() : 64;
  decompose.boundsChecks = options.pipeline.boundsChecks;
  addDecompositions(pm, decompose);
}

void addBufferizeStage(OpPassManager &pm, const NvvmStageOptions &) {
  // Kernels cannot allocate: bound every temporary (a block's go to shared
  // memory), bufferize, copy with linalg, and stage the global tiles the
  // block reads in shared memory.
  pm.addPass(createBoundTemporaries());
  pm.addPass(createStageCanonicalizer());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createStageCanonicalizer());
  pm.addPass(createCopiesToLinalg());
  pm.addPass(createStageInWorkgroup());
}

void addGpuStage(OpPassManager &pm, const NvvmStageOptions &options) {
  MapForallToGpuOptions map;
  map.threads = options.pipeline.threads;
  map.sharedMemoryPerBlock = options.target.sharedMemoryPerBlock;
  pm.addPass(createMapForallToGpu(map));
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createDistributeToThreads());
  pm.addPass(createStageCanonicalizer());
  pm.addPass(createCSEPass());
  // Constants back into the kernel, where divisions by tile sizes fold into
  // shifts.
  pm.addPass(createSinkIntoLaunches());
  pm.addPass(createGpuKernelOutliningPass());
}

void addNvvmStage(OpPassManager &pm, const NvvmStageOptions &options) {
  GpuNVVMAttachTargetOptions attach;
  attach.chip = options.target.chip.str();
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  // Only the kernels are lowered: the host keeps its launch sizes as affine
  // expressions over memref.dim, which the kernel bundle records.
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createApproxMathToNVVM());
  kernels.addPass(createMinBlocksPerSm());
  kernels.addPass(createConvertNVGPUToNVVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createEnableSetMaxNReg());
  kernels.addPass(createSkipLlvmVectorizers());
  kernels.addPass(createExternDynamicSharedMemory());
  kernels.addPass(createConvertNVVMToLLVMPass());
  kernels.addPass(createStageCanonicalizer());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createTensorMapParams());
}

void addBinaryStage(OpPassManager &pm, const NvvmStageOptions &options) {
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.pipeline.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

} // namespace

LogicalResult mlir::attn::buildNvvmPipeline(
    OpPassManager &pm, const NvvmPipelineOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler) {
  using AddStage = void (*)(OpPassManager &, const NvvmStageOptions &);
  const Stage<AddStage> stages[] = {{"choose", addChooseStage},
                                    {"tile", addTileStage},
                                    {"decompose", addDecomposeStage},
                                    {"bufferize", addBufferizeStage},
                                    {"gpu", addGpuStage},
                                    {"nvvm", addNvvmStage},
                                    {"binary", addBinaryStage}};
  FailureOr<int> stop = findStage<AddStage>("attn-lower-to-nvvm", stages,
                                            options.until, errorHandler);
  if (failed(stop))
    return failure();
  if (options.chip.empty())
    return errorHandler("attn-lower-to-nvvm: missing target chip: pass "
                        "chip=sm_80 or chip=sm_90");
  const nvvm::TargetInfo *target = nvvm::lookupTarget(options.chip);
  if (!target)
    return errorHandler("attn-lower-to-nvvm: unsupported chip '" +
                        options.chip.getValue() +
                        "': the kernels need sm_75 or newer, one of " +
                        nvvm::knownTargetNames());
  StringRef strategy = stringifyKernelStrategy(options.strategy);
  if (options.strategy == KernelStrategy::MmaSync && !target->hasAsyncCopy())
    return errorHandler("attn-lower-to-nvvm: strategy mma-sync needs sm_80 "
                        "or newer, not " +
                        options.chip.getValue());
  if ((options.strategy == KernelStrategy::Wgmma ||
       options.strategy == KernelStrategy::WgmmaWs) &&
      !target->hasWarpgroupMma())
    return errorHandler("attn-lower-to-nvvm: strategy " + strategy +
                        " needs wgmma, which only sm_90a has, not " +
                        options.chip.getValue());
  if (options.qTile < 0 || options.kvTile < 0 || options.threads <= 0 ||
      options.threads > nvvm::kMaxThreadsPerBlock || options.qTile > kMaxTile ||
      options.kvTile > kMaxTile)
    return errorHandler(
        "attn-lower-to-nvvm: need 0 <= q-tile <= " + llvm::Twine(kMaxTile) +
        ", 0 <= kv-tile <= " + llvm::Twine(kMaxTile) +
        " (0: chosen to fit the chip) and 0 < threads <= " +
        llvm::Twine(nvvm::kMaxThreadsPerBlock));
  if (options.format != "isa" && options.format != "bin")
    return errorHandler("attn-lower-to-nvvm: format must be isa or bin, not '" +
                        options.format.getValue() + "'");

  NvvmStageOptions stageOptions{options, *target};
  for (int stage = 0; stage <= *stop; ++stage)
    stages[stage].add(pm, stageOptions);
  return success();
}
